// backends/cuda/ops/llm.cu - the LLM inference ops of a decode/prefill step.
//
// kv_cache_write_(cache (B,H,S,D) dense, src (B,H,T,D) any strides, pos (B) int64):
//   one thread per 16-byte chunk of a (b, h, t) row (per element when src's
//   last dim is strided or rows are not 16-byte aligned), grid-stride over
//   all B*H*T rows.  pos is read on the device, so the launch depends on no
//   host value but the shapes: a captured CUDA graph replays with whatever
//   positions pos holds then.  Rows whose target pos[b]+t lies outside [0, S)
//   are skipped: a kernel cannot raise an error without a host sync.  No
//   allocation, no sync: safe under stream capture.  Elements are copied as
//   raw bits.  Registered without GN_KERNEL_CONTIGUOUS: a strided cache is an
//   error (the core would otherwise write a dense copy, not the cache), and
//   src is read through its strides (usually a permuted (B,T,H,D) projection).
//
// add_rms_norm(x (R,N), residual (R,N), weight (N)) -> (y, h), dense:
//   one block per row, h = x + residual in acc_t (f32 for 16-bit: the sum of
//   two f16/bf16 values rounded to f32 then to the dtype is the correctly
//   rounded sum, as add gives), stored and cached in shared memory; then
//   norm.cu's rms_norm forward on h, with the same block size, the same
//   element-to-thread assignment (groups of V elements) and the same
//   arithmetic, so y equals rms_norm(h, weight).y bit for bit.  For 16-bit
//   rows of up to 1024 elements (512 for f32) that block is a single warp when
//   rows are many, one thread per 16 bytes when they are few (nn::row_threads_for).
//
// linear(x (*, K), weight (N, K), [bias (N)]) and linear_swiglu(x, weight
// (2I, K)), dense: linalg.cu's matmul path (matmul.cuh) with the weight
// transposed.  The few-rows path (bf16/f16 decode) applies the bias or the
// SwiGLU activation in its epilogue (one rounding); otherwise cuBLASLt's
// product is followed by a bias / activation kernel.
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"
#include "matmul.cuh"

namespace gn::cuda {
namespace {

using nn::block_sum;

// ----------------------------------------------------------------------------
// kv_cache_write_

struct SrcStrides {
  int64_t b, h, t, d;  // elements
};

// n = B*H*T*(D/V) chunks of V elements; chunk i is element group j of row
// (b, h, t) = i / (D/V).
template <class E, int V>
__global__ void kv_cache_write_kernel(E* cache, const E* src, const int64_t* __restrict__ pos, int64_t pos_stride,
                                      int64_t H, int64_t S, int64_t T, int64_t D, SrcStrides ss, int64_t n) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t nv = D / V;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = i % nv, row = i / nv;
    const int64_t t = row % T, bh = row / T;
    const int64_t h = bh % H, b = bh / H;
    const int64_t p = pos[b * pos_stride];
    if (p < 0 || p >= S - t) continue;  // p + t >= S, without overflow
    E* o = cache + (bh * S + p + t) * D + j * V;
    const E* s = src + b * ss.b + h * ss.h + t * ss.t + j * V * ss.d;
    if constexpr (V > 1)
      store_vec<E, V>(o, load_vec<E, V>(s));
    else
      *o = *s;
  }
}

std::string strides_str(const gn_tensor_view& v) {
  std::string r = "(";
  for (int32_t d = 0; d < v.ndim; ++d) r += (d ? ", " : "") + std::to_string(v.strides[d]);
  return r + (v.ndim == 1 ? ",)" : ")");
}

template <class E>
void launch_kv_cache_write(const gn_kernel_ctx* ctx, const gn_tensor_view& cache, const gn_tensor_view& src,
                           const gn_tensor_view& pos) {
  const int64_t B = cache.shape[0], H = cache.shape[1], S = cache.shape[2], D = cache.shape[3], T = src.shape[2];
  const SrcStrides ss{src.strides[0], src.strides[1], src.strides[2], src.strides[3]};
  E* c = data_ptr<E>(cache);
  const E* s = data_ptr<const E>(src);
  const int64_t* p = data_ptr<const int64_t>(pos);
  constexpr int VW = 16 / (int)sizeof(E);
  // 16-byte chunks: src's last dim dense, every row start of both 16-byte aligned.
  const bool vec =
      ss.d == 1 && D % VW == 0 && ss.b % VW == 0 && ss.h % VW == 0 && ss.t % VW == 0 && aligned16(c) && aligned16(s);
  const int64_t rows = B * H * T;
  if (rows == 0 || D == 0) return;
  if (vec) {
    const int64_t n = rows * (D / VW);
    launch_pdl<kv_cache_write_kernel<E, VW>>(blocks_for(n), kThreads, 0, stream(ctx), c, s, p, pos.strides[0], H, S, T,
                                             D, ss, n);
  } else {
    const int64_t n = rows * D;
    launch_pdl<kv_cache_write_kernel<E, 1>>(blocks_for(n), kThreads, 0, stream(ctx), c, s, p, pos.strides[0], H, S, T,
                                            D, ss, n);
  }
  GN_CUDA_CHECK_LAUNCH();
}

// in: cache, src, pos; no outputs.  Shapes and dtypes were checked by inference.
GN_SDK_KERNEL(kv_cache_write_op) {
  const char* op = "kv_cache_write_";
  need_io(op, n_in, 3, n_out, 0);
  DeviceGuard dg(ctx);
  const gn_tensor_view &cache = in[0], &src = in[1], &pos = in[2];
  if (cache.ndim != 4 || src.ndim != 4 || pos.ndim != 1)
    fail_op(GN_ERR_SHAPE, op,
            "expected cache (B,H,S,D), src (B,H,T,D) and pos (B), got " + shape_str(cache) + ", " + shape_str(src) +
                " and " + shape_str(pos));
  if (!is_contiguous(cache))
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "cache must be contiguous (it is written in place), got shape " + shape_str(cache) + " with strides " +
                strides_str(cache));
  if (pos.dtype != GN_I64 || src.dtype != cache.dtype)
    fail_op(GN_ERR_DTYPE, op,
            std::string("expected int64 pos and src of the cache's dtype, got ") + gn_dtype_name(pos.dtype) + " and " +
                gn_dtype_name(src.dtype));
  switch (gn_dtype_size(cache.dtype)) {
    case 2: launch_kv_cache_write<nn::RawOf<2>::type>(ctx, cache, src, pos); break;
    case 4: launch_kv_cache_write<nn::RawOf<4>::type>(ctx, cache, src, pos); break;
    case 8: launch_kv_cache_write<nn::RawOf<8>::type>(ctx, cache, src, pos); break;
    default:
      fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(cache.dtype) + " is not supported on cuda");
  }
}

// ----------------------------------------------------------------------------
// add_rms_norm

constexpr int kSmemRowBytes = 48 * 1024;  // h row cache limit (default dynamic smem), as norm.cu

// A group of V consecutive elements: one 16-byte access when kVec, else V
// scalar accesses (same values, same thread; only the transactions differ).
template <class T, int V, bool kVec>
__device__ __forceinline__ Vec<T, V> load_group(const T* p) {
  if constexpr (kVec) {
    return load_vec<T, V>(p);
  } else {
    Vec<T, V> v;
#pragma unroll
    for (int k = 0; k < V; ++k) v.v[k] = p[k];
    return v;
  }
}
template <class T, int V, bool kVec>
__device__ __forceinline__ void store_group(T* p, const Vec<T, V>& v) {
  if constexpr (kVec) {
    store_vec<T, V>(p, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = v.v[k];
  }
}

// x, res, y, h (R,N), w (N).  Thread k of a row owns groups k, k+blockDim, ...
// of V elements, as norm_fwd_kernel does; the sum of squares is in opmath
// (f64 for f32, f32 for 16-bit), the output pass in acc_t, as there.
// x/res/h carry no __restrict__: h may be written over residual in place
// (every element is read and written by the same thread).
template <class T, int V, bool kVec, bool kSmem>
__global__ void add_rms_norm_kernel(const T* x, const T* res, const T* __restrict__ w, T* y, T* h, int64_t R, int64_t N,
                                    double eps) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  using A = acc_t<T>;
  using M = nn::opmath_t<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* cache = reinterpret_cast<T*>(smem_raw);
  __shared__ M red[32];
  const int64_t nv = N / V;
  for (int64_t row = blockIdx.x; row < R; row += gridDim.x) {
    const T* xr = x + row * N;
    const T* rr = res + row * N;
    T* hr = h + row * N;
    T* yr = y + row * N;
    M s = M(0);
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      const Vec<T, V> xv = load_group<T, V, kVec>(xr + i * V), rv = load_group<T, V, kVec>(rr + i * V);
      Vec<T, V> hv;
#pragma unroll
      for (int k = 0; k < V; ++k) hv.v[k] = convert<T>(convert<A>(xv.v[k]) + convert<A>(rv.v[k]));
      store_group<T, V, kVec>(hr + i * V, hv);
      if constexpr (kSmem) store_vec<T, V>(cache + i * V, hv);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const M a = convert<M>(hv.v[k]);
        s += a * a;
      }
    }
    s = block_sum(s, red);
    const M rstd = M(1) / sqrt(s / M(N) + M(eps));
    const A rstd_a = (A)rstd;
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
      const Vec<T, V> hv = kSmem ? load_vec<T, V>(cache + i * V) : load_group<T, V, kVec>(hr + i * V);
      const Vec<T, V> wv = load_group<T, V, kVec>(w + i * V);
      Vec<T, V> o;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        A r = convert<A>(hv.v[k]) * rstd_a;  // (h - 0) * rstd in norm_fwd_kernel: the same value
        r *= convert<A>(wv.v[k]);
        o.v[k] = convert<T>(r);
      }
      store_group<T, V, kVec>(yr + i * V, o);
    }
  }
}

template <class T>
void launch_add_rms_norm(const gn_kernel_ctx* ctx, const T* x, const T* res, const T* w, T* y, T* h, int64_t R,
                         int64_t N, double eps) {
  constexpr int VW = vec_width<T>();
  // rms_norm(h, w) groups by VW when N is a multiple and h, w, y are 16-byte
  // aligned (norm.cu's vec_for); there h and y are fresh allocations, so the
  // grouping depends on N and w alone.  The 16-byte accesses also need x,
  // residual, y and h aligned; otherwise the same groups are read element-wise.
  const bool group = N % VW == 0 && aligned16(w);
  const bool vec = group && aligned16(x) && aligned16(res) && aligned16(y) && aligned16(h);
  const int V = group ? VW : 1;
  const int threads = nn::row_threads_for(N / V, R);
  const bool smem = (size_t)N * sizeof(T) <= (size_t)kSmemRowBytes;
  const size_t shm = smem ? (size_t)N * sizeof(T) : 0;
  const unsigned grid = (unsigned)std::min<int64_t>(R, (int64_t)1 << 30);
  auto go = [&](auto kernel) { launch_pdl_ptr(kernel, grid, threads, shm, stream(ctx), x, res, w, y, h, R, N, eps); };
  if (vec) {
    if (smem)
      go(add_rms_norm_kernel<T, VW, true, true>);
    else
      go(add_rms_norm_kernel<T, VW, true, false>);
  } else if (group) {
    if (smem)
      go(add_rms_norm_kernel<T, VW, false, true>);
    else
      go(add_rms_norm_kernel<T, VW, false, false>);
  } else {
    if (smem)
      go(add_rms_norm_kernel<T, 1, false, true>);
    else
      go(add_rms_norm_kernel<T, 1, false, false>);
  }
  GN_CUDA_CHECK_LAUNCH();
}

// in: x, residual, weight; out: y, h; attrs: eps.
GN_SDK_KERNEL(add_rms_norm_op) {
  const char* op = "add_rms_norm";
  need_io(op, n_in, 3, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view& x = in[0];
  if (x.ndim < 1) fail_op(GN_ERR_SHAPE, op, "x must have at least 1 dim, got shape " + shape_str(x));
  const int64_t N = x.shape[x.ndim - 1], n = numel(x), R = N ? n / N : 0;
  const double eps = attr_float(op, attrs, n_attrs, 0);
  for (const gn_tensor_view* v : {&in[1], &out[0], &out[1]})
    if (numel(*v) != n || v->dtype != x.dtype)
      fail_op(GN_ERR_SHAPE, op, "residual, y and h must have x's shape " + shape_str(x) + " and dtype");
  if (numel(in[2]) != N || in[2].dtype != x.dtype)
    fail_op(GN_ERR_SHAPE, op,
            "weight must have " + std::to_string(N) + " elements of x's dtype, got shape " + shape_str(in[2]));
  if (R == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_add_rms_norm<T>(ctx, data_ptr<const T>(x), data_ptr<const T>(in[1]), data_ptr<const T>(in[2]),
                           data_ptr<T>(out[0]), data_ptr<T>(out[1]), R, N, eps);
  });
}

// ----------------------------------------------------------------------------
// linear, linear_swiglu: the matmul path of linalg.cu (matmul.cuh)

// out (R, N) dense += bias (N), in acc_t (rounded once more: matmul then add)
template <class T>
__global__ void bias_rows_kernel(T* __restrict__ o, const T* __restrict__ bias, int64_t n, int64_t N) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    o[i] = convert<T>(convert<acc_t<T>>(o[i]) + convert<acc_t<T>>(bias[i % N]));
}

// linear(x (*, K), weight (N, K), [bias (N)]) -> (*, N), dense operands: the
// few-rows path adds the bias in its epilogue (one rounding), otherwise
// cuBLASLt's product then bias_rows_kernel.
template <class T>
void linear_typed(const gn_kernel_ctx* ctx, const gn_tensor_view& x, const gn_tensor_view& w, const gn_tensor_view* b,
                  const gn_tensor_view& o) {
  const T* bias = b ? data_ptr<const T>(*b) : nullptr;
  bool done = false;
  matmul::matmul_typed<T>("linear", ctx, x, w, o, false, true, bias, &done);
  if (!bias || done) return;
  const int64_t n = numel(o), N = w.shape[0];
  if (n == 0) return;
  launch_pdl<bias_rows_kernel<T>>(blocks_for(n), kThreads, 0, stream(ctx), data_ptr<T>(o), bias, n, N);
}

// t (R, 2I) dense -> y (R, I) = silu(t[:, :I]) * t[:, I:], in acc_t
template <class T>
__global__ void swiglu_rows_kernel(const T* __restrict__ t, T* __restrict__ y, int64_t n, int64_t I) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  using A = acc_t<T>;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = e / I, i = e - r * I;
    const A g = convert<A>(t[r * 2 * I + i]), u = convert<A>(t[r * 2 * I + I + i]);
    y[e] = convert<T>(g / (A(1) + exp(-g)) * u);
  }
}

// linear_swiglu(x (*, K), weight (2I, K)) -> (*, I), dense operands: the
// few-rows path applies the activation in its epilogue (one rounding), else
// cuBLASLt's (R, 2I) product in workspace, then swiglu_rows_kernel.
template <class T>
void linear_swiglu_typed(const gn_kernel_ctx* ctx, const gn_tensor_view& x, const gn_tensor_view& w,
                         const gn_tensor_view& o) {
  const int64_t I = w.shape[0] / 2, n = numel(o), R = I ? n / I : 0;
  if (n == 0) return;
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    // x rows as one (R, K) matrix against the (2I, K) weight: the gemv's row list
    const int64_t K = w.shape[1];
    matmul::Mat a{}, b{};
    a.base = data_ptr<char>(x);
    a.rows = R;
    a.cols = K;
    a.rs = K;
    a.cs = 1;
    b.base = data_ptr<char>(w);
    b.rows = K;
    b.cols = 2 * I;
    b.rs = 1;
    b.cs = K;
    matmul::Batch bt{};
    bt.nb = 0;
    if (matmul::try_gemv<T>(ctx, a, b, data_ptr<T>(o), bt, 1, R, 2 * I, K, I, 1, nullptr, true)) return;
  }
  T* t = static_cast<T*>(workspace(ctx, (size_t)(R * 2 * I) * sizeof(T)));
  const int64_t tshape[2] = {R, 2 * I}, tstr[2] = {2 * I, 1}, xshape[2] = {R, w.shape[1]}, xstr[2] = {w.shape[1], 1};
  gn_tensor_view tv = o, xv = x;
  tv.data = t;
  tv.byte_offset = 0;
  tv.ndim = 2;
  tv.shape = tshape;
  tv.strides = tstr;
  xv.ndim = 2;
  xv.shape = xshape;
  xv.strides = xstr;  // dense x as (R, K)
  matmul::matmul_typed<T>("linear_swiglu", ctx, xv, w, tv, false, true);
  launch_pdl<swiglu_rows_kernel<T>>(blocks_for(n), kThreads, 0, stream(ctx), t, data_ptr<T>(o), n, I);
}

GN_SDK_KERNEL(linear_swiglu_kernel) {
  const char* op = "linear_swiglu";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard guard(ctx);
  if (in[1].ndim != 2 || in[1].shape[0] % 2 != 0)
    fail_op(GN_ERR_SHAPE, op, "weight must be 2-D with an even number of rows, got " + shape_str(in[1]));
  switch (out[0].dtype) {
    case GN_F32: linear_swiglu_typed<float>(ctx, in[0], in[1], out[0]); break;
    case GN_F16: linear_swiglu_typed<__half>(ctx, in[0], in[1], out[0]); break;
    case GN_BF16: linear_swiglu_typed<__nv_bfloat16>(ctx, in[0], in[1], out[0]); break;
    case GN_F64: linear_swiglu_typed<double>(ctx, in[0], in[1], out[0]); break;
    default: fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(out[0].dtype) + " is not supported");
  }
}

GN_SDK_KERNEL(linear_kernel) {
  const char* op = "linear";
  if (n_in < 2 || n_in > 3 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "expects 2 or 3 inputs and 1 output");
  DeviceGuard guard(ctx);
  if (in[1].ndim != 2) fail_op(GN_ERR_SHAPE, op, "weight must be 2-D, got " + shape_str(in[1]));
  const gn_tensor_view* b = n_in == 3 ? &in[2] : nullptr;
  if (b && (numel(*b) != in[1].shape[0] || b->dtype != out[0].dtype))
    fail_op(GN_ERR_SHAPE, op, "bias must have " + std::to_string(in[1].shape[0]) + " elements of the output dtype");
  switch (out[0].dtype) {
    case GN_F32: linear_typed<float>(ctx, in[0], in[1], b, out[0]); break;
    case GN_F16: linear_typed<__half>(ctx, in[0], in[1], b, out[0]); break;
    case GN_BF16: linear_typed<__nv_bfloat16>(ctx, in[0], in[1], b, out[0]); break;
    case GN_F64: linear_typed<double>(ctx, in[0], in[1], b, out[0]); break;
    default: fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(out[0].dtype) + " is not supported");
  }
}

}  // namespace

GN_CUDA_FAMILY(llm) {
  r.kernel("kv_cache_write_", kFloatDtypes, kv_cache_write_op);
  r.kernel("add_rms_norm", kFloatDtypes, add_rms_norm_op, GN_KERNEL_CONTIGUOUS);
  const int32_t float_dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("linear", float_dtypes, linear_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("linear_swiglu", float_dtypes, linear_swiglu_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
