// backends/cuda/ops/optim.cu - fused optimizer steps (sgd_step, adamw_step)
// and the multi-tensor helpers of grad clipping and AMP (multi_sum_sq,
// multi_scale_, multi_unscale_check_).
//
// Steps: one elementwise pass per parameter, in place, the update rule of
// backends/reference/optim.cpp (torch.optim single-tensor code) in f32 (f64
// for f64 params).  The
// grad has the param's dtype (inference casts it); state buffers (momentum_buf, exp_avg, exp_avg_sq) may have any
// float dtype (e.g. f32 state for bf16 params): they are read and written
// through AnyFloat, a dtype switch that is uniform across the grid.
//
// Multi-tensor helpers: tensors travel in a TensorList passed by value (up to
// kMaxTensors per launch); every block owns a chunk of kChunk elements of one
// tensor (block -> tensor by a prefix of block counts).  multi_sum_sq writes
// one double partial per block, then a single block adds the partials in
// block order: deterministic, no host sync, ceil(n_tensors/64) + 1 launches.
// The scale factors are read on the device (no host sync either).
#include <cmath>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

// A float element of a runtime dtype.
struct AnyFloat {
  void* p;
  int32_t dtype;
  __device__ __forceinline__ double load(int64_t i) const {
    switch (dtype) {
      case GN_F32: return static_cast<const float*>(p)[i];
      case GN_F16: return (double)__half2float(static_cast<const __half*>(p)[i]);
      case GN_BF16: return (double)__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
      default: return static_cast<const double*>(p)[i];
    }
  }
  __device__ __forceinline__ float loadf(int64_t i) const {
    switch (dtype) {
      case GN_F32: return static_cast<const float*>(p)[i];
      case GN_F16: return __half2float(static_cast<const __half*>(p)[i]);
      case GN_BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
      default: return (float)static_cast<const double*>(p)[i];
    }
  }
  template <class A>
  __device__ __forceinline__ A get(int64_t i) const {
    if constexpr (std::is_same_v<A, double>)
      return load(i);
    else
      return loadf(i);
  }
  template <class A>
  __device__ __forceinline__ void set(int64_t i, A v) const {
    switch (dtype) {
      case GN_F32: static_cast<float*>(p)[i] = (float)v; break;
      case GN_F16: static_cast<__half*>(p)[i] = __float2half_rn((float)v); break;  // through float, as gn::sdk::store
      case GN_BF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn((float)v); break;
      default: static_cast<double*>(p)[i] = (double)v; break;
    }
  }
};

AnyFloat any_float(const char* op, const char* what, const gn_tensor_view& v) {
  if (!gn_dtype_is_float(v.dtype))
    fail_op(GN_ERR_DTYPE, op, std::string(what) + " must be floating point, got " + gn_dtype_name(v.dtype));
  return AnyFloat{gn_view_ptr(&v), v.dtype};
}

void same_shape(const char* op, const char* what, const gn_tensor_view& v, const gn_tensor_view& p) {
  bool ok = v.ndim == p.ndim;
  for (int32_t d = 0; ok && d < v.ndim; ++d) ok = v.shape[d] == p.shape[d];
  if (!ok)
    fail_op(GN_ERR_SHAPE, op, std::string(what) + " " + shape_str(v) + " must have the param's shape " + shape_str(p));
}

// ----------------------------------------------------------------------------
// sgd_step
//   d = (maximize ? -grad : grad) + wd*param
//   momentum: buf = (step == 1) ? d : momentum*buf + (1-dampening)*d
//             d = nesterov ? d + momentum*buf : buf
//   param -= lr*d
// Step math: f32 for f32 params (within ~2 ulp of the reference's double
// result, inside the suite's 4-ulp bound for cuda; double made the 64M-element
// f32 AdamW step compute-bound), f64 for f64 and the 16-bit types, where the
// suite wants the reference's bits: every operation rounded separately in the
// reference's order (no FMA contraction: the _rn intrinsics), and 16-bit
// results stored through float as gn::sdk::store does.
template <class T>
using step_t = std::conditional_t<std::is_same_v<T, float>, float, double>;

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// A step result into the param's dtype (16-bit through float, as the reference).
template <class T, class A>
__device__ __forceinline__ T to_param(A v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return convert<T>((float)v);
  else
    return (T)v;
}

template <class T>
struct SgdArgs {
  step_t<T> lr, momentum, one_minus_damp, wd;
  bool nesterov, maximize, first, use_buf;
};

template <class T>
__global__ void sgd_kernel(T* __restrict__ param, const T* __restrict__ grad, AnyFloat buf, int64_t n, SgdArgs<T> a) {
  using A = step_t<T>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const A p = convert<A>(param[i]);
    A d = convert<A>(grad[i]);
    if (a.maximize) d = -d;
    if (a.wd != A(0)) d = add_rn(d, mul_rn(a.wd, p));
    if (a.use_buf) {
      const A b = a.first ? d : add_rn(mul_rn(a.momentum, buf.get<A>(i)), mul_rn(a.one_minus_damp, d));
      buf.set(i, b);
      d = a.nesterov ? add_rn(d, mul_rn(a.momentum, b)) : b;
    }
    param[i] = to_param<T>(sub_rn(p, mul_rn(a.lr, d)));
  }
}

// in: param, grad, [momentum_buf] (in place); attrs: lr, momentum, dampening,
// weight_decay, nesterov, maximize, step
GN_SDK_KERNEL(sgd_step_kernel) {
  const char* op = "sgd_step";
  need_io(op, n_in, 2, n_out, 0);
  DeviceGuard dg(ctx);
  const double lr = attr_float(op, attrs, n_attrs, 0), momentum = attr_float(op, attrs, n_attrs, 1);
  const double dampening = attr_float(op, attrs, n_attrs, 2), wd = attr_float(op, attrs, n_attrs, 3);
  const bool nesterov = attr_int(op, attrs, n_attrs, 4) != 0, maximize = attr_int(op, attrs, n_attrs, 5) != 0;
  const int64_t step = attr_int(op, attrs, n_attrs, 6);
  if (step < 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "step counts from 1, got " + std::to_string(step));
  if (nesterov && (momentum <= 0.0 || dampening != 0.0))
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "nesterov needs momentum > 0 and dampening 0");
  const bool use_buf = momentum != 0.0;
  if (use_buf && n_in < 3) fail_op(GN_ERR_INVALID_ARGUMENT, op, "momentum needs a momentum_buf input");
  const gn_tensor_view& p = in[0];
  same_shape(op, "grad", in[1], p);
  if (in[1].dtype != p.dtype) fail_op(GN_ERR_DTYPE, op, "grad must have the param's dtype");
  AnyFloat buf{nullptr, GN_F32};
  if (use_buf) {
    same_shape(op, "momentum_buf", in[2], p);
    buf = any_float(op, "momentum_buf", in[2]);
  }
  const int64_t n = numel(p);
  if (n == 0) return;
  dispatch_float(p.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = step_t<T>;
    SgdArgs<T> a{(A)lr, (A)momentum, (A)(1.0 - dampening), (A)wd, nesterov, maximize, step == 1, use_buf};
    sgd_kernel<T>
        <<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<T>(p), data_ptr<const T>(in[1]), buf, n, a);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// adamw_step
//   g = maximize ? -grad : grad
//   decoupled (AdamW): param *= 1 - lr*wd;  else (Adam): g += wd*param
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
//   param -= lr/(1-b1^step) * m / (sqrt(v)/sqrt(1-b2^step) + eps)
template <class T>
struct AdamArgs {
  step_t<T> beta1, one_minus_b1, beta2, one_minus_b2, eps, wd, decay, step_size, bc2_sqrt;
  bool decoupled, maximize;
};

template <class T>
__global__ void adamw_kernel(T* __restrict__ param, const T* __restrict__ grad, AnyFloat m_, AnyFloat v_, int64_t n,
                             AdamArgs<T> a) {
  using A = step_t<T>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    A p = convert<A>(param[i]);
    A g = convert<A>(grad[i]);
    if (a.maximize) g = -g;
    if (a.decoupled)
      p = mul_rn(p, a.decay);
    else if (a.wd != A(0))
      g = add_rn(g, mul_rn(a.wd, p));
    const A m = add_rn(mul_rn(a.beta1, m_.get<A>(i)), mul_rn(a.one_minus_b1, g));
    const A v = add_rn(mul_rn(a.beta2, v_.get<A>(i)), mul_rn(mul_rn(a.one_minus_b2, g), g));
    m_.set(i, m);
    v_.set(i, v);
    p = sub_rn(p, div_rn(mul_rn(a.step_size, m), add_rn(div_rn(sqrt_rn(v), a.bc2_sqrt), a.eps)));
    param[i] = to_param<T>(p);
  }
}

// in: param, grad, exp_avg, exp_avg_sq (in place); attrs: lr, beta1, beta2,
// eps, weight_decay, step, decoupled, maximize
GN_SDK_KERNEL(adamw_step_kernel) {
  const char* op = "adamw_step";
  need_io(op, n_in, 4, n_out, 0);
  DeviceGuard dg(ctx);
  const double lr = attr_float(op, attrs, n_attrs, 0), b1 = attr_float(op, attrs, n_attrs, 1);
  const double b2 = attr_float(op, attrs, n_attrs, 2), eps = attr_float(op, attrs, n_attrs, 3);
  const double wd = attr_float(op, attrs, n_attrs, 4);
  const int64_t step = attr_int(op, attrs, n_attrs, 5);
  const bool decoupled = attr_int(op, attrs, n_attrs, 6) != 0, maximize = attr_int(op, attrs, n_attrs, 7) != 0;
  if (step < 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "step counts from 1, got " + std::to_string(step));
  const gn_tensor_view& p = in[0];
  same_shape(op, "grad", in[1], p);
  if (in[1].dtype != p.dtype) fail_op(GN_ERR_DTYPE, op, "grad must have the param's dtype");
  same_shape(op, "exp_avg", in[2], p);
  same_shape(op, "exp_avg_sq", in[3], p);
  const AnyFloat m = any_float(op, "exp_avg", in[2]), v = any_float(op, "exp_avg_sq", in[3]);
  const int64_t n = numel(p);
  if (n == 0) return;
  // Bias corrections on the host in double (as the reference).
  const double bc1 = 1.0 - std::pow(b1, (double)step), bc2 = 1.0 - std::pow(b2, (double)step);
  dispatch_float(p.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = step_t<T>;
    AdamArgs<T> a{(A)b1,         (A)(1.0 - b1),     (A)b2,     (A)(1.0 - b2), (A)eps, (A)wd, (A)(1.0 - lr * wd),
                  (A)(lr / bc1), (A)std::sqrt(bc2), decoupled, maximize};
    adamw_kernel<T>
        <<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<T>(p), data_ptr<const T>(in[1]), m, v, n, a);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// multi-tensor helpers

constexpr int kMaxTensors = 64;
constexpr int64_t kChunk = 16384;  // elements per block

struct TensorList {
  void* p[kMaxTensors];
  int64_t n[kMaxTensors];
  int32_t dtype[kMaxTensors];
  int64_t block_start[kMaxTensors + 1];  // prefix of ceil(n/kChunk)
  int count;
};

// Tensor of block b (block_start is non-decreasing; empty tensors own no block).
__device__ __forceinline__ int tensor_of(const TensorList& tl, int64_t b) {
  int t = 0;
  while (t + 1 < tl.count && tl.block_start[t + 1] <= b) ++t;
  return t;
}

// One double partial per block: sum of squares of its chunk.
__global__ void sum_sq_partial_kernel(TensorList tl, double* __restrict__ partial) {
  __shared__ double red[32];
  const int64_t b = blockIdx.x;
  const int t = tensor_of(tl, b);
  const AnyFloat x{tl.p[t], tl.dtype[t]};
  const int64_t begin = (b - tl.block_start[t]) * kChunk;
  const int64_t end = min(tl.n[t], begin + kChunk);
  double s = 0.0;  // double even for f32: the reference's sum, ~1e-6 relative wanted
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = x.load(i);
    s += v * v;
  }
  s = nn::block_sum(s, red);
  if (threadIdx.x == 0) partial[b] = s;
}

// out = sum of partials in block order (one block).
template <class O>
__global__ void sum_partials_kernel(const double* __restrict__ partial, int64_t n, O* __restrict__ out) {
  __shared__ double red[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
  s = nn::block_sum(s, red);
  if (threadIdx.x == 0) *out = (O)s;
}

// In place x *= scale (scale read on the device); found_inf (may be null) = 1
// when an element is inf or NaN.
__global__ void scale_kernel(TensorList tl, AnyFloat scale, float* __restrict__ found_inf) {
  const int64_t b = blockIdx.x;
  const int t = tensor_of(tl, b);
  const AnyFloat x{tl.p[t], tl.dtype[t]};
  const int64_t begin = (b - tl.block_start[t]) * kChunk;
  const int64_t end = min(tl.n[t], begin + kChunk);
  bool bad = false;
  if (x.dtype == GN_F64) {
    const double s = scale.load(0);
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const double v = x.load(i);
      bad |= !isfinite(v);
      x.set(i, v * s);
    }
  } else {
    const double sd = scale.load(0);
    const float s = (float)sd;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const float v = x.loadf(i);
      bad |= !isfinite(v);
      if (scale.dtype == GN_F64)
        x.set(i, (double)v * sd);
      else
        x.set(i, v * s);
    }
  }
  if (found_inf && __syncthreads_or(bad) && threadIdx.x == 0) *found_inf = 1.0f;
}

// Group tensors [first, n_in) into lists of at most kMaxTensors; f(list, blocks).
template <class F>
void for_each_list(const char* op, const gn_tensor_view* in, size_t first, size_t n_in, F&& f) {
  TensorList tl{};
  auto flush = [&] {
    if (tl.count > 0 && tl.block_start[tl.count] > 0) f(tl, tl.block_start[tl.count]);
    tl = TensorList{};
  };
  for (size_t i = first; i < n_in; ++i) {
    const gn_tensor_view& v = in[i];
    if (!gn_dtype_is_float(v.dtype))
      fail_op(GN_ERR_DTYPE, op,
              "input " + std::to_string(i) + " must be floating point, got " + gn_dtype_name(v.dtype));
    if (!is_contiguous(v)) fail_op(GN_ERR_INTERNAL, op, "input " + std::to_string(i) + " is not dense");
    const int c = tl.count;
    tl.p[c] = gn_view_ptr(&v);
    tl.n[c] = numel(v);
    tl.dtype[c] = v.dtype;
    tl.block_start[c + 1] = tl.block_start[c] + (tl.n[c] + kChunk - 1) / kChunk;
    tl.count = c + 1;
    if (tl.count == kMaxTensors) flush();
  }
  flush();
}

// in: t0, t1, ...; out: 0-d f32 (f64 if any input is f64)
GN_SDK_KERNEL(multi_sum_sq_kernel) {
  const char* op = "multi_sum_sq";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view& o = out[0];
  if (numel(o) != 1 || (o.dtype != GN_F32 && o.dtype != GN_F64))
    fail_op(GN_ERR_SHAPE, op, "output must be one float32/float64 element");
  int64_t total_blocks = 0;
  for_each_list(op, in, 0, n_in, [&](const TensorList&, int64_t nb) { total_blocks += nb; });
  double* partial = static_cast<double*>(workspace(ctx, (size_t)std::max<int64_t>(total_blocks, 1) * sizeof(double)));
  int64_t off = 0;
  for_each_list(op, in, 0, n_in, [&](const TensorList& tl, int64_t nb) {
    sum_sq_partial_kernel<<<(unsigned)nb, kThreads, 0, stream(ctx)>>>(tl, partial + off);
    GN_CUDA_CHECK_LAUNCH();
    off += nb;
  });
  if (o.dtype == GN_F64)
    sum_partials_kernel<double><<<1, 1024, 0, stream(ctx)>>>(partial, total_blocks, data_ptr<double>(o));
  else
    sum_partials_kernel<float><<<1, 1024, 0, stream(ctx)>>>(partial, total_blocks, data_ptr<float>(o));
  GN_CUDA_CHECK_LAUNCH();
}

// multi_scale_ (check_inf false) and multi_unscale_check_ (true).
// multi_scale_ in: scale (one element), t1, t2, ...: ti *= scale in place.
// multi_unscale_check_ in: inv_scale (one element), found_inf (one f32), t2, ...: ti *= inv_scale;
// found_inf = 1 when any element of any ti is inf/NaN (else unchanged).
void multi_scale(const gn_kernel_ctx* ctx, const char* op, bool check_inf, const gn_tensor_view* in, size_t n_in,
                 size_t n_out) {
  const size_t first = check_inf ? 2 : 1;  // the first scaled tensor
  need_io(op, n_in, first, n_out, 0);
  DeviceGuard dg(ctx);
  const char* scale_name = check_inf ? "inv_scale" : "scale";
  if (numel(in[0]) != 1)
    fail_op(GN_ERR_SHAPE, op, std::string(scale_name) + " must have one element, got " + shape_str(in[0]));
  if (check_inf && (numel(in[1]) != 1 || in[1].dtype != GN_F32))
    fail_op(GN_ERR_DTYPE, op, "found_inf must be one float32 element");
  const AnyFloat s = any_float(op, scale_name, in[0]);
  float* found = check_inf ? data_ptr<float>(in[1]) : nullptr;
  for_each_list(op, in, first, n_in, [&](const TensorList& tl, int64_t nb) {
    scale_kernel<<<(unsigned)nb, kThreads, 0, stream(ctx)>>>(tl, s, found);
    GN_CUDA_CHECK_LAUNCH();
  });
}

GN_SDK_KERNEL(multi_scale_kernel) { multi_scale(ctx, "multi_scale_", false, in, n_in, n_out); }
GN_SDK_KERNEL(multi_unscale_check_kernel) { multi_scale(ctx, "multi_unscale_check_", true, in, n_in, n_out); }

}  // namespace

GN_CUDA_FAMILY(optim) {
  r.kernel("sgd_step", kFloatDtypes, sgd_step_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("adamw_step", kFloatDtypes, adamw_step_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t sum_dtypes[] = {GN_F32, GN_F64};
  r.kernel("multi_sum_sq", sum_dtypes, multi_sum_sq_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("multi_scale_", kFloatDtypes, multi_scale_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("multi_unscale_check_", kFloatDtypes, multi_unscale_check_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
