// backends/cuda/ops/norm.cu - layer_norm and rms_norm, forward and backward.
//
// x is dense (GN_KERNEL_CONTIGUOUS) and seen as (R, N): R rows of N
// normalized elements.  Weight/bias arrive in x's dtype (inference casts).
// Statistics (mean, rstd: R values) are stored as float32, float64 for f64
// inputs.  Sums and the backward are computed in opmath_t (double for f32, as
// the reference; float for the 16-bit types); the forward's elementwise output
// pass is in f32 (f64 for f64).
//
// Forward: one block per row; 16-byte vector loads when N is a multiple of
// the vector width; the row is cached in shared memory (when it fits) so x is
// read from DRAM once; two-pass variance on the cached row.
// Backward: grad_x one block per row (two block sums, then the closed form);
// grad_weight/grad_bias deterministic in two stages: column tiles x row
// chunks write partial sums (fixed order in each), then one pass adds the
// chunks in chunk order.  No float atomics anywhere.
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

using nn::block_sum;
using nn::block_sum2;

constexpr int kSmemRowBytes = 48 * 1024;  // row cache limit (default dynamic smem)

// Vector width (elements) usable for rows of n elements of T.
template <class T>
int vec_for(int64_t n, const void* const* ptrs, int n_ptrs) {
  constexpr int V = vec_width<T>();
  if (n % V != 0) return 1;
  for (int i = 0; i < n_ptrs; ++i)
    if (ptrs[i] && !aligned16(ptrs[i])) return 1;
  return V;
}

// ----------------------------------------------------------------------------
// forward kernels

// layer_norm: y = (x - mean) * rstd * w + b, rstd = 1/sqrt(var_biased + eps).
// RMS (kRms): y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps); no mean, no bias.
template <class T, int V, bool kSmem, bool kRms>
__global__ void norm_fwd_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                T* __restrict__ y, acc_t<T>* __restrict__ mean_out, acc_t<T>* __restrict__ rstd_out,
                                int64_t R, int64_t N, double eps) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  using A = acc_t<T>;         // output pass: f32 (f64 for f64)
  using M = nn::opmath_t<T>;  // statistics: f64 for f32/f64, f32 for 16-bit
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* cache = reinterpret_cast<T*>(smem_raw);
  __shared__ M red[32];
  const int64_t nv = N / V;
  for (int64_t row = blockIdx.x; row < R; row += gridDim.x) {
    const T* xr = x + row * N;
    T* yr = y + row * N;
    M s = M(0);
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      Vec<T, V> v = load_vec<T, V>(xr + i * V);
      if constexpr (kSmem) store_vec<T, V>(cache + i * V, v);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const M a = convert<M>(v.v[k]);
        s += kRms ? a * a : a;
      }
    }
    s = block_sum(s, red);
    M mean = M(0), rstd;
    if constexpr (kRms) {
      rstd = M(1) / sqrt(s / M(N) + M(eps));
    } else {
      mean = s / M(N);
      M q = M(0);
      for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
        Vec<T, V> v = kSmem ? load_vec<T, V>(cache + i * V) : load_vec<T, V>(xr + i * V);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const M d = convert<M>(v.v[k]) - mean;
          q += d * d;
        }
      }
      q = block_sum(q, red);
      rstd = M(1) / sqrt(q / M(N) + M(eps));
    }
    const A mean_a = (A)mean, rstd_a = (A)rstd;
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      Vec<T, V> v = kSmem ? load_vec<T, V>(cache + i * V) : load_vec<T, V>(xr + i * V);
      Vec<T, V> wv, bv, o;
      if (w) wv = load_vec<T, V>(w + i * V);
      if (!kRms && b) bv = load_vec<T, V>(b + i * V);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        A r = (convert<A>(v.v[k]) - mean_a) * rstd_a;
        if (w) r *= convert<A>(wv.v[k]);
        if (!kRms && b) r += convert<A>(bv.v[k]);
        o.v[k] = convert<T>(r);
      }
      store_vec<T, V>(yr + i * V, o);
    }
    if (threadIdx.x == 0) {
      if (!kRms && mean_out) mean_out[row] = (A)mean;
      if (rstd_out) rstd_out[row] = (A)rstd;
    }
  }
}

template <class S>
__global__ void fill_nan_kernel(S* p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = S(NAN);
}

// ----------------------------------------------------------------------------
// backward: grad_x, one block per row
//
// layer_norm: xhat = (x-mean)*rstd, d = g*w;
//   dx = rstd * (d - mean(d) - xhat*mean(d*xhat))
// rms_norm:   dx = rstd*g*w - x * rstd^3/N * sum(g*w*x)
template <class T, int V, bool kRms>
__global__ void norm_bwd_dx_kernel(const T* __restrict__ g, const T* __restrict__ x, const acc_t<T>* __restrict__ mean,
                                   const acc_t<T>* __restrict__ rstd, const T* __restrict__ w, T* __restrict__ dx,
                                   int64_t R, int64_t N) {
  using A = nn::opmath_t<T>;  // f64 for f32: the suite holds f32 grads to ~1e-6
  __shared__ A red[64];
  const int64_t nv = N / V;
  for (int64_t row = blockIdx.x; row < R; row += gridDim.x) {
    const T* gr = g + row * N;
    const T* xr = x + row * N;
    const A m = kRms ? A(0) : mean[row], s = rstd[row];
    // d = g * w and x of the V elements of vector i
    auto terms = [&](int64_t i, A(&d)[V], A(&xa)[V]) {
      const Vec<T, V> gv = load_vec<T, V>(gr + i * V), xv = load_vec<T, V>(xr + i * V);
      Vec<T, V> wv;
      if (w) wv = load_vec<T, V>(w + i * V);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        d[k] = convert<A>(gv.v[k]);
        if (w) d[k] *= convert<A>(wv.v[k]);
        xa[k] = convert<A>(xv.v[k]);
      }
    };
    A sum_d = A(0), sum_dx = A(0);
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      A d[V], xa[V];
      terms(i, d, xa);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if constexpr (kRms) {
          sum_dx += d[k] * xa[k];
        } else {
          sum_d += d[k];
          sum_dx += d[k] * (xa[k] - m) * s;
        }
      }
    }
    if constexpr (kRms)
      sum_dx = block_sum(sum_dx, red);
    else
      block_sum2(sum_d, sum_dx, red);
    const A inv_n = A(1) / A(N);
    const A mean_d = sum_d * inv_n, mean_dx = sum_dx * inv_n;
    const A c = s * s * s * sum_dx * inv_n;  // rms
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      A d[V], xa[V];
      terms(i, d, xa);
      Vec<T, V> o;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        A r;
        if constexpr (kRms)
          r = s * d[k] - xa[k] * c;
        else
          r = s * (d[k] - mean_d - (xa[k] - m) * s * mean_dx);
        o.v[k] = convert<T>(r);
      }
      store_vec<T, V>(dx + row * N + i * V, o);
    }
  }
}

// ----------------------------------------------------------------------------
// backward: grad_weight / grad_bias, deterministic two-stage column sums
//
// Stage 1: block (32, 8) owns 32 columns and one chunk of rows; thread (tx, ty)
// walks rows chunk_begin+ty, +8, ...; the 8 partials of a column are added in
// ty order and written to part_w/part_b[chunk][col].
// layer_norm: dw = sum_r g*xhat, db = sum_r g;  rms_norm: dw = sum_r g*x*rstd.
template <class T, bool kRms>
__global__ void norm_bwd_dw_partial_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                           const acc_t<T>* __restrict__ mean, const acc_t<T>* __restrict__ rstd,
                                           nn::opmath_t<T>* __restrict__ part_w, nn::opmath_t<T>* __restrict__ part_b,
                                           int64_t R, int64_t N, int64_t rows_per_chunk) {
  using A = nn::opmath_t<T>;
  __shared__ A sw[8][33], sb[8][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = (int64_t)blockIdx.x * 32 + tx;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk;
  const int64_t r1 = min(R, r0 + rows_per_chunk);
  A aw = A(0), ab = A(0);
  if (col < N) {
    for (int64_t r = r0 + ty; r < r1; r += 8) {
      const A gv = convert<A>(g[r * N + col]);
      const A xv = convert<A>(x[r * N + col]);
      if constexpr (kRms) {
        aw += gv * xv * rstd[r];
      } else {
        aw += gv * (xv - mean[r]) * rstd[r];
        ab += gv;
      }
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && col < N) {
    A tw = A(0), tb = A(0);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      tw += sw[k][tx];
      tb += sb[k][tx];
    }
    part_w[chunk * N + col] = tw;
    if (!kRms) part_b[chunk * N + col] = tb;
  }
}

// Stage 2: out[col] = sum over chunks in order.
template <class T>
__global__ void norm_bwd_dw_finish_kernel(const nn::opmath_t<T>* __restrict__ part_w,
                                          const nn::opmath_t<T>* __restrict__ part_b, T* __restrict__ dw,
                                          T* __restrict__ db, int64_t chunks, int64_t N) {
  using A = nn::opmath_t<T>;
  for (int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; col < N; col += (int64_t)gridDim.x * blockDim.x) {
    A tw = A(0), tb = A(0);
    for (int64_t c = 0; c < chunks; ++c) {
      tw += part_w[c * N + col];
      if (db) tb += part_b[c * N + col];
    }
    if (dw) dw[col] = convert<T>(tw);
    if (db) db[col] = convert<T>(tb);
  }
}

// ----------------------------------------------------------------------------
// host side

unsigned row_grid(int64_t R) { return (unsigned)std::min<int64_t>(R, (int64_t)1 << 30); }

template <class T, bool kRms>
void launch_fwd(const gn_kernel_ctx* ctx, const T* x, const T* w, const T* b, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                int64_t R, int64_t N, double eps) {
  const void* ptrs[] = {x, w, b, y};
  const int V = vec_for<T>(N, ptrs, 4);
  const int threads = nn::row_threads_for(N / V, R);
  const bool smem = (size_t)N * sizeof(T) <= (size_t)kSmemRowBytes;
  const size_t shm = smem ? (size_t)N * sizeof(T) : 0;
  const unsigned grid = row_grid(R);
  auto go = [&](auto kernel) {
    launch_pdl_ptr(kernel, grid, threads, shm, stream(ctx), x, w, b, y, mean, rstd, R, N, eps);
  };
  constexpr int VW = vec_width<T>();
  if (V == VW) {
    if (smem)
      go(norm_fwd_kernel<T, VW, true, kRms>);
    else
      go(norm_fwd_kernel<T, VW, false, kRms>);
  } else {
    if (smem)
      go(norm_fwd_kernel<T, 1, true, kRms>);
    else
      go(norm_fwd_kernel<T, 1, false, kRms>);
  }
  GN_CUDA_CHECK_LAUNCH();
}

template <class T, bool kRms>
void launch_bwd(const gn_kernel_ctx* ctx, const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd,
                const T* w, T* dx, T* dw, T* db, int64_t R, int64_t N) {
  using A = nn::opmath_t<T>;
  if (dx && R > 0) {
    const void* ptrs[] = {g, x, w, dx};
    const int V = vec_for<T>(N, ptrs, 4);
    const int threads = nn::row_threads(N / V);
    constexpr int VW = vec_width<T>();
    if (V == VW)
      norm_bwd_dx_kernel<T, VW, kRms><<<row_grid(R), threads, 0, stream(ctx)>>>(g, x, mean, rstd, w, dx, R, N);
    else
      norm_bwd_dx_kernel<T, 1, kRms><<<row_grid(R), threads, 0, stream(ctx)>>>(g, x, mean, rstd, w, dx, R, N);
    GN_CUDA_CHECK_LAUNCH();
  }
  if (!dw && !db) return;
  if (R == 0) {  // sums over no rows are zero
    if (dw) GN_CUDA_CHECK(cudaMemsetAsync(dw, 0, (size_t)N * sizeof(T), stream(ctx)));
    if (db) GN_CUDA_CHECK(cudaMemsetAsync(db, 0, (size_t)N * sizeof(T), stream(ctx)));
    return;
  }
  // Chunks: about 4 blocks per SM in stage 1, each chunk at least 32 rows.
  const int64_t col_tiles = (N + 31) / 32;
  int64_t chunks = std::max<int64_t>(1, (int64_t)sm_count(ctx) * 4 / col_tiles);
  chunks = std::min<int64_t>(chunks, std::max<int64_t>(1, R / 32));
  chunks = std::min<int64_t>(chunks, 65535);
  const int64_t rows_per_chunk = (R + chunks - 1) / chunks;
  chunks = (R + rows_per_chunk - 1) / rows_per_chunk;
  A* part = static_cast<A*>(workspace(ctx, (size_t)2 * chunks * N * sizeof(A)));
  A* part_w = part;
  A* part_b = part + chunks * N;
  dim3 grid1((unsigned)col_tiles, (unsigned)chunks), block1(32, 8);
  norm_bwd_dw_partial_kernel<T, kRms>
      <<<grid1, block1, 0, stream(ctx)>>>(g, x, mean, rstd, part_w, part_b, R, N, rows_per_chunk);
  GN_CUDA_CHECK_LAUNCH();
  norm_bwd_dw_finish_kernel<T><<<blocks_for(N), kThreads, 0, stream(ctx)>>>(part_w, kRms ? nullptr : part_b, dw,
                                                                            kRms ? nullptr : db, chunks, N);
  GN_CUDA_CHECK_LAUNCH();
}

// Elements per row: the product of the last nd dims of x.
int64_t trailing(const char* op, const gn_tensor_view& x, int64_t nd) {
  if (nd < 0 || nd > x.ndim)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "normalized_ndim " + std::to_string(nd) + " out of range for a " + std::to_string(x.ndim) + "-D input");
  int64_t n = 1;
  for (int32_t d = x.ndim - (int32_t)nd; d < x.ndim; ++d) n *= x.shape[d];
  return n;
}

void check_numel(const char* op, const char* what, const gn_tensor_view& v, int64_t n) {
  if (numel(v) != n)
    fail_op(GN_ERR_SHAPE, op,
            std::string(what) + " has " + std::to_string(numel(v)) + " elements, expected " + std::to_string(n));
}

// Statistics views must be float32 (float64 for f64 inputs), as inference makes them.
template <class T>
acc_t<T>* stat_ptr(const char* op, const char* what, const gn_tensor_view& v) {
  const int32_t want = std::is_same_v<acc_t<T>, double> ? GN_F64 : GN_F32;
  if (v.dtype != want)
    fail_op(GN_ERR_DTYPE, op,
            std::string(what) + " must be " + gn_dtype_name(want) + ", got " + gn_dtype_name(v.dtype));
  return data_ptr<acc_t<T>>(v);
}

template <class T>
void same_dtype(const char* op, const char* what, const gn_tensor_view& v) {
  if (v.dtype != nn::dtype_of<T>())
    fail_op(GN_ERR_DTYPE, op, std::string(what) + " has dtype " + gn_dtype_name(v.dtype) + ", expected the input's");
}

// views[i] when i < n, else null (an optional input or output).
const gn_tensor_view* optional(const gn_tensor_view* views, size_t n, size_t i) { return i < n ? &views[i] : nullptr; }

// layer_norm (kRms false) and rms_norm over rows of N elements of x; w, b, mean and rstd may be null.
template <bool kRms>
void norm_forward(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& x, int64_t N, double eps,
                  const gn_tensor_view& y, const gn_tensor_view* w, const gn_tensor_view* b, const gn_tensor_view* mean,
                  const gn_tensor_view* rstd) {
  const int64_t R = N ? numel(x) / N : 0;
  check_numel(op, "y", y, numel(x));
  if (w) check_numel(op, "weight", *w, N);
  if (b) check_numel(op, "bias", *b, N);
  if (mean) check_numel(op, "mean", *mean, R);
  if (rstd) check_numel(op, "rstd", *rstd, R);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (w) same_dtype<T>(op, "weight", *w);
    if (b) same_dtype<T>(op, "bias", *b);
    acc_t<T>* mean_p = mean ? stat_ptr<T>(op, "mean", *mean) : nullptr;
    acc_t<T>* rstd_p = rstd ? stat_ptr<T>(op, "rstd", *rstd) : nullptr;
    if (R == 0) return;
    if (N == 0) {  // statistics of nothing: NaN, as 0/0 in the reference
      for (acc_t<T>* p : {mean_p, rstd_p})
        if (p) fill_nan_kernel<<<blocks_for(R), kThreads, 0, stream(ctx)>>>(p, R);
      GN_CUDA_CHECK_LAUNCH();
      return;
    }
    launch_fwd<T, kRms>(ctx, data_ptr<const T>(x), w ? data_ptr<const T>(*w) : nullptr,
                        b ? data_ptr<const T>(*b) : nullptr, data_ptr<T>(y), mean_p, rstd_p, R, N, eps);
  });
}

// The backward of norm_forward: grad_x from grad_y (gy); mean (layer_norm), w, dw and db may be null.
template <bool kRms>
void norm_backward(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& gy, const gn_tensor_view& x,
                   int64_t N, const gn_tensor_view* mean, const gn_tensor_view& rstd, const gn_tensor_view* w,
                   const gn_tensor_view& dx, const gn_tensor_view* dw, const gn_tensor_view* db) {
  const int64_t R = N ? numel(x) / N : 0;
  check_numel(op, "grad_y", gy, numel(x));
  if (mean) check_numel(op, "mean", *mean, R);
  check_numel(op, "rstd", rstd, R);
  check_numel(op, "grad_x", dx, numel(x));
  if (w) check_numel(op, "weight", *w, N);
  if (dw) check_numel(op, "grad_weight", *dw, N);
  if (db) check_numel(op, "grad_bias", *db, N);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    same_dtype<T>(op, "grad_y", gy);
    if (w) same_dtype<T>(op, "weight", *w);
    if (N == 0) return;
    launch_bwd<T, kRms>(ctx, data_ptr<const T>(gy), data_ptr<const T>(x),
                        mean ? stat_ptr<T>(op, "mean", *mean) : nullptr, stat_ptr<T>(op, "rstd", rstd),
                        w ? data_ptr<const T>(*w) : nullptr, data_ptr<T>(dx), dw ? data_ptr<T>(*dw) : nullptr,
                        db ? data_ptr<T>(*db) : nullptr, R, N);
  });
}

// in: x, [weight, [bias]]; out: y, mean, rstd; attrs: normalized_ndim, eps
GN_SDK_KERNEL(layer_norm_kernel) {
  const char* op = "layer_norm";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const int64_t N = trailing(op, in[0], attr_int(op, attrs, n_attrs, 0));
  const double eps = attr_float(op, attrs, n_attrs, 1);
  norm_forward<false>(ctx, op, in[0], N, eps, out[0], optional(in, n_in, 1), optional(in, n_in, 2),
                      optional(out, n_out, 1), optional(out, n_out, 2));
}

// in: grad_y, x, mean, rstd, [weight]; out: grad_x, grad_weight, grad_bias; attrs: normalized_ndim
GN_SDK_KERNEL(layer_norm_backward_kernel) {
  const char* op = "layer_norm_backward";
  need_io(op, n_in, 4, n_out, 1);
  DeviceGuard dg(ctx);
  const int64_t N = trailing(op, in[1], attr_int(op, attrs, n_attrs, 0));
  norm_backward<false>(ctx, op, in[0], in[1], N, &in[2], in[3], optional(in, n_in, 4), out[0], optional(out, n_out, 1),
                       optional(out, n_out, 2));
}

// in: x, [weight]; out: y, rstd; attrs: eps
GN_SDK_KERNEL(rms_norm_kernel) {
  const char* op = "rms_norm";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const int64_t N = trailing(op, in[0], 1);
  const double eps = attr_float(op, attrs, n_attrs, 0);
  norm_forward<true>(ctx, op, in[0], N, eps, out[0], optional(in, n_in, 1), nullptr, nullptr, optional(out, n_out, 1));
}

// in: grad_y, x, rstd, [weight]; out: grad_x, grad_weight
GN_SDK_KERNEL(rms_norm_backward_kernel) {
  const char* op = "rms_norm_backward";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const int64_t N = trailing(op, in[1], 1);
  norm_backward<true>(ctx, op, in[0], in[1], N, nullptr, in[2], optional(in, n_in, 3), out[0], optional(out, n_out, 1),
                      nullptr);
}

}  // namespace

GN_CUDA_FAMILY(norm) {
  r.kernel("layer_norm", kFloatDtypes, layer_norm_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("layer_norm_backward", kFloatDtypes, layer_norm_backward_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rms_norm", kFloatDtypes, rms_norm_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rms_norm_backward", kFloatDtypes, rms_norm_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
