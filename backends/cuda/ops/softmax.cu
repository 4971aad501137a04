// backends/cuda/ops/softmax.cu - softmax, log_softmax and their backward ops
// along any dim.
//
// Lines along `dim`: x is seen as rows of L elements.  Paths:
// - rows (dim is the last, dense, 16-byte aligned when vectorised): each row
//   is read once into registers (up to kMaxVec vectors per thread), max and
//   sum are block (or warp, for short rows: 32 threads x several rows per
//   block) reductions, then y is written: one read and one write of memory;
//   rows too long for the registers take a streaming kernel (an online
//   max/sum pass, then a writing pass);
// - lines (any other layout): one thread per line, three passes over it,
//   coalesced when the dim after `dim` is the contiguous one.
// Math in float (f16/bf16/f32) or double (f64); NaN in a row makes the row
// NaN, as the reference.
#include <cmath>

#include "common.cuh"

namespace gn::cuda {
namespace {

constexpr int kMaxVec = 8;  // vectors cached per thread

template <class A>
__device__ __forceinline__ A nan_max(A a, A b) {
  return (isnan(a) || b > a) ? (isnan(a) ? a : b) : a;
}

// Reduce across the blockDim.x threads of this row (warp-only when blockDim.x == 32).
template <class A, bool MAX>
__device__ __forceinline__ A row_reduce(A v, A* shm) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    A o = __shfl_xor_sync(0xffffffffu, v, d);
    v = MAX ? nan_max(v, o) : v + o;
  }
  if (blockDim.x == 32) return v;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  __syncthreads();  // shm may still be read by a previous reduction
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  v = shm[0];
  for (int k = 1; k < nw; ++k) v = MAX ? nan_max(v, shm[k]) : v + shm[k];
  return v;
}

template <class T, int VEC>
__global__ void __launch_bounds__(512)
    softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t L, bool log) {
  using A = acc_t<T>;
  __shared__ A shm[32];
  const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;  // whole rows of threads leave together (blockDim.y > 1 only when blockDim.x == 32)
  const T* xr = x + row * L;
  T* yr = y + row * L;
  const int64_t nvec = L / VEC;
  A v[kMaxVec][VEC];
  A m = -(A)INFINITY;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int64_t idx = threadIdx.x + (int64_t)k * blockDim.x;
    if (idx < nvec) {
      const Vec<T, VEC> t = load_vec<T, VEC>(xr + idx * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        v[k][j] = convert<A>(t.v[j]);
        m = nan_max(m, v[k][j]);
      }
    }
  }
  m = row_reduce<A, true>(m, shm);
  A s = 0;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int64_t idx = threadIdx.x + (int64_t)k * blockDim.x;
    if (idx < nvec) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) s += exp(v[k][j] - m);
    }
  }
  s = row_reduce<A, false>(s, shm);
  const A inv = A(1) / s, ls = log ? ::log(s) : A(0);
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int64_t idx = threadIdx.x + (int64_t)k * blockDim.x;
    if (idx < nvec) {
      Vec<T, VEC> t;
#pragma unroll
      for (int j = 0; j < VEC; ++j) t.v[j] = convert<T>(log ? v[k][j] - m - ls : exp(v[k][j] - m) * inv);
      store_vec<T, VEC>(yr + idx * VEC, t);
    }
  }
}

// Rows longer than the register cache: online (max, sum), then write.
template <class T>
__global__ void __launch_bounds__(1024)
    softmax_stream_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t L, bool log) {
  using A = acc_t<T>;
  __shared__ A shm[32];
  const T* xr = x + (int64_t)blockIdx.x * L;
  T* yr = y + (int64_t)blockIdx.x * L;
  A m = -(A)INFINITY, s = 0;
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
    const A v = convert<A>(xr[j]);
    const A nm = nan_max(m, v);
    s = s * exp(m - nm) + exp(v - nm);
    if (isinf(nm) && nm < 0) s = 0;
    m = nm;
  }
  const A gm = row_reduce<A, true>(m, shm);
  s = (isinf(m) && m < 0) ? A(0) : s * exp(m - gm);
  s = row_reduce<A, false>(s, shm);
  const A inv = A(1) / s, ls = log ? ::log(s) : A(0);
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
    const A v = convert<A>(xr[j]);
    yr[j] = convert<T>(log ? v - gm - ls : exp(v - gm) * inv);
  }
}

// Lines of any layout: line l's element j is at line_off(l) + j*stride.
template <class T>
__global__ void softmax_lines_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t lines, int64_t L,
                                     OffsetCalc<2> oc, int64_t sx, int64_t sy, bool log) {
  using A = acc_t<T>;
  for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    oc.get(l, off);
    const T* xr = x + off[0];
    T* yr = y + off[1];
    A m = -(A)INFINITY;
    for (int64_t j = 0; j < L; ++j) m = nan_max(m, convert<A>(xr[j * sx]));
    A s = 0;
    for (int64_t j = 0; j < L; ++j) s += exp(convert<A>(xr[j * sx]) - m);
    const A inv = A(1) / s, ls = log ? ::log(s) : A(0);
    for (int64_t j = 0; j < L; ++j) {
      const A v = convert<A>(xr[j * sx]);
      yr[j * sy] = convert<T>(log ? v - m - ls : exp(v - m) * inv);
    }
  }
}

// Backward math in double for f32 too: g - sum(g*y) cancels, and the
// reference's double sum is met within its f32 tolerance only that way (one
// DP FMA per element, free next to the memory traffic).
template <class T>
using bwd_acc_t = std::conditional_t<std::is_same_v<T, float>, double, acc_t<T>>;

// Backward rows: gx = y*(g - sum(g*y))  or  g - exp(y)*sum(g)  (log).
template <class T>
__global__ void __launch_bounds__(1024) softmax_bwd_rows_kernel(const T* __restrict__ g, const T* __restrict__ y,
                                                                T* __restrict__ gx, int64_t rows, int64_t L, bool log) {
  using A = bwd_acc_t<T>;
  __shared__ A shm[32];
  const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  const T *gr = g + row * L, *yr = y + row * L;
  T* o = gx + row * L;
  A s = 0;
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x)
    s += log ? convert<A>(gr[j]) : convert<A>(gr[j]) * convert<A>(yr[j]);
  s = row_reduce<A, false>(s, shm);
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
    const A gv = convert<A>(gr[j]), yv = convert<A>(yr[j]);
    o[j] = convert<T>(log ? gv - exp(yv) * s : yv * (gv - s));
  }
}

template <class T>
__global__ void softmax_bwd_lines_kernel(const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ gx,
                                         int64_t lines, int64_t L, OffsetCalc<3> oc, int64_t sg, int64_t sy, int64_t so,
                                         bool log) {
  using A = bwd_acc_t<T>;
  for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    oc.get(l, off);
    const T *gr = g + off[0], *yr = y + off[1];
    T* o = gx + off[2];
    A s = 0;
    for (int64_t j = 0; j < L; ++j) s += log ? convert<A>(gr[j * sg]) : convert<A>(gr[j * sg]) * convert<A>(yr[j * sy]);
    for (int64_t j = 0; j < L; ++j) {
      const A gv = convert<A>(gr[j * sg]), yv = convert<A>(yr[j * sy]);
      o[j * so] = convert<T>(log ? gv - exp(yv) * s : yv * (gv - s));
    }
  }
}

void check_same_shape(const char* op, const gn_tensor_view& a, const gn_tensor_view& b) {
  bool ok = a.ndim == b.ndim;
  for (int d = 0; ok && d < a.ndim; ++d) ok = a.shape[d] == b.shape[d];
  if (!ok) fail_op(GN_ERR_SHAPE, op, "shapes " + shape_str(a) + " and " + shape_str(b) + " differ");
}

int wrap_dim(const char* op, int64_t dim, int ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n) fail_op(GN_ERR_INDEX, op, "dim " + std::to_string(dim) + " out of range");
  return ndim > 0 ? (int)(dim < 0 ? dim + n : dim) : 0;
}

// Views with `dim` removed (the lines' index space), for an OffsetCalc.
struct LineViews {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
};

template <int N>
OffsetCalc<N> line_calc(const gn_tensor_view* const (&v)[N], int dim, int64_t* lines) {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> st(N);
  for (int d = 0; d < v[0]->ndim; ++d) {
    if (d == dim) continue;
    shape.push_back(v[0]->shape[d]);
    for (int a = 0; a < N; ++a) st[a].push_back(v[a]->strides[d]);
  }
  *lines = 1;
  for (int64_t s : shape) *lines *= s;
  gn_tensor_view tmp[N];
  const gn_tensor_view* ptrs[N];
  for (int a = 0; a < N; ++a) {
    tmp[a] = *v[a];
    tmp[a].ndim = (int32_t)shape.size();
    tmp[a].shape = shape.data();
    tmp[a].strides = st[a].data();
    ptrs[a] = &tmp[a];
  }
  const gn_tensor_view* const(&pr)[N] = ptrs;
  OffsetCalc<N> oc = make_offset_calc<N>(shape.data(), (int)shape.size(), pr);
  if (oc.ndim == 0) {
    oc.ndim = 1;
    oc.shape[0] = 1;
    for (int a = 0; a < N; ++a) oc.strides[0][a] = 0;
  }
  return oc;
}

// Threads per row and rows per block for a row length in vectors.
void row_geometry(int64_t nvec, int max_per_thread, dim3* block) {
  if (nvec <= 32LL * max_per_thread) {
    *block = dim3(32, 8);
    return;
  }
  int64_t t = (nvec + max_per_thread - 1) / max_per_thread;
  t = (t + 31) / 32 * 32;
  if (t < 128) t = 128;
  if (t > 512) t = 512;  // rows kernel: __launch_bounds__(512), 128 registers for the cache
  *block = dim3((unsigned)t, 1);
}

// The lines of v along dim: their length L and their count; false when v is empty.
bool line_shape(const gn_tensor_view& v, int dim, int64_t& L, int64_t& rows) {
  const int64_t n = numel(v);
  if (!n) return false;
  L = v.ndim ? v.shape[dim] : 1;
  rows = n / L;
  return true;
}

// Blocks for the strided (lines) kernels: one line per thread, at most 16 blocks per SM.
unsigned line_blocks(const gn_kernel_ctx* ctx, int64_t lines) {
  unsigned b = blocks_for(lines);
  if (b > (unsigned)sm_count(ctx) * 16) b = sm_count(ctx) * 16;
  return b;
}

void softmax_forward(const gn_kernel_ctx* ctx, const char* op, bool log, const gn_tensor_view& x,
                     const gn_tensor_view& y, int64_t dim_attr) {
  const int dim = wrap_dim(op, dim_attr, x.ndim);
  check_same_shape(op, y, x);
  if (x.dtype != y.dtype) fail_op(GN_ERR_DTYPE, op, "x and y must share a dtype (the core casts x)");
  int64_t L, rows;
  if (!line_shape(x, dim, L, rows)) return;
  cudaStream_t st = stream(ctx);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = data_ptr<const T>(x);
    T* yp = data_ptr<T>(y);
    const bool rows_ok = (x.ndim == 0 || dim == x.ndim - 1) && is_contiguous(x) && is_contiguous(y);
    if (rows_ok) {
      constexpr int V = vec_width<T>() > 8 ? 8 : vec_width<T>();
      const bool vec = L % V == 0 && aligned16(xp) && aligned16(yp);
      const int vw = vec ? V : 1;
      const int64_t nvec = L / vw;
      if (nvec <= 512LL * kMaxVec) {
        dim3 block;
        row_geometry(nvec, kMaxVec, &block);
        const unsigned grid = (unsigned)((rows + block.y - 1) / block.y);
        if (vec)
          softmax_rows_kernel<T, V><<<grid, block, 0, st>>>(xp, yp, rows, L, log);
        else
          softmax_rows_kernel<T, 1><<<grid, block, 0, st>>>(xp, yp, rows, L, log);
      } else {
        softmax_stream_kernel<T><<<(unsigned)rows, 1024, 0, st>>>(xp, yp, L, log);
      }
    } else {
      const gn_tensor_view* views[2] = {&x, &y};
      int64_t lines = 0;
      OffsetCalc<2> oc = line_calc<2>(views, dim, &lines);
      const int64_t sx = x.ndim ? x.strides[dim] : 0, sy = y.ndim ? y.strides[dim] : 0;
      softmax_lines_kernel<T><<<line_blocks(ctx, lines), kThreads, 0, st>>>(xp, yp, lines, L, oc, sx, sy, log);
    }
  });
  GN_CUDA_CHECK_LAUNCH();
}

void softmax_backward(const gn_kernel_ctx* ctx, const char* op, bool log, const gn_tensor_view& g,
                      const gn_tensor_view& y, const gn_tensor_view& gx, int64_t dim_attr) {
  const int dim = wrap_dim(op, dim_attr, y.ndim);
  check_same_shape(op, g, y);
  check_same_shape(op, gx, y);
  if (g.dtype != y.dtype || gx.dtype != y.dtype) fail_op(GN_ERR_DTYPE, op, "grad_y, y and grad_x must share a dtype");
  int64_t L, rows;
  if (!line_shape(y, dim, L, rows)) return;
  cudaStream_t st = stream(ctx);
  dispatch_float(y.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gp = data_ptr<const T>(g);
    const T* yp = data_ptr<const T>(y);
    T* op_ = data_ptr<T>(gx);
    const bool rows_ok =
        (y.ndim == 0 || dim == y.ndim - 1) && is_contiguous(g) && is_contiguous(y) && is_contiguous(gx);
    if (rows_ok) {
      dim3 block;
      row_geometry(L, 8, &block);
      const unsigned grid = (unsigned)((rows + block.y - 1) / block.y);
      softmax_bwd_rows_kernel<T><<<grid, block, 0, st>>>(gp, yp, op_, rows, L, log);
    } else {
      const gn_tensor_view* views[3] = {&g, &y, &gx};
      int64_t lines = 0;
      OffsetCalc<3> oc = line_calc<3>(views, dim, &lines);
      auto sd = [&](const gn_tensor_view& v) { return v.ndim ? v.strides[dim] : (int64_t)0; };
      softmax_bwd_lines_kernel<T>
          <<<line_blocks(ctx, lines), kThreads, 0, st>>>(gp, yp, op_, lines, L, oc, sd(g), sd(y), sd(gx), log);
    }
  });
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(softmax_kernel) {
  need_io("softmax", n_in, 1, n_out, 1);
  DeviceGuard gd(ctx);
  softmax_forward(ctx, "softmax", false, in[0], out[0], attr_int("softmax", attrs, n_attrs, 0));
}
GN_SDK_KERNEL(log_softmax_kernel) {
  need_io("log_softmax", n_in, 1, n_out, 1);
  DeviceGuard gd(ctx);
  softmax_forward(ctx, "log_softmax", true, in[0], out[0], attr_int("log_softmax", attrs, n_attrs, 0));
}
GN_SDK_KERNEL(softmax_backward_kernel) {
  need_io("softmax_backward", n_in, 2, n_out, 1);
  DeviceGuard gd(ctx);
  softmax_backward(ctx, "softmax_backward", false, in[0], in[1], out[0],
                   attr_int("softmax_backward", attrs, n_attrs, 0));
}
GN_SDK_KERNEL(log_softmax_backward_kernel) {
  need_io("log_softmax_backward", n_in, 2, n_out, 1);
  DeviceGuard gd(ctx);
  softmax_backward(ctx, "log_softmax_backward", true, in[0], in[1], out[0],
                   attr_int("log_softmax_backward", attrs, n_attrs, 0));
}

}  // namespace

GN_CUDA_FAMILY(softmax) {
  r.kernel("softmax", kFloatDtypes, softmax_kernel);
  r.kernel("log_softmax", kFloatDtypes, log_softmax_kernel);
  r.kernel("softmax_backward", kFloatDtypes, softmax_backward_kernel);
  r.kernel("log_softmax_backward", kFloatDtypes, log_softmax_backward_kernel);
}

}  // namespace gn::cuda
