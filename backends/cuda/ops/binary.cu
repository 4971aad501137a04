// backends/cuda/ops/binary.cu - elementwise binary ops (add sub mul div pow
// maximum minimum), comparisons, logical_and/or and where.
//
// a, b broadcast to out's shape (the core promoted both to one dtype; compare
// and logical ops write bool).  A scalar operand (one element, e.g. a wrapped
// Python number) stays on the dense 16-byte path; other broadcasts take the
// strided path of loops.cuh without materialising anything.  Floats compute
// in float (f16/bf16/f32) or double; integers are exact int64 with torch's
// wrapping.  Integer division by zero and negative integer powers raise as
// in the reference (checked with one synchronisation, see check_int_operand).
#include <cmath>

#include "common.cuh"
#include "loops.cuh"

namespace gn::cuda {
namespace {

namespace sc = gn::sdk::scalar;

// Op codes: gn::sdk::scalar::BinaryOp (the shared formulas' order).
enum BinOp : int {
  kAdd = sc::kBin_add,
  kSub = sc::kBin_sub,
  kMul = sc::kBin_mul,
  kDiv = sc::kBin_div,
  kPow = sc::kBin_pow,
  kMax = sc::kBin_maximum,
  kMin = sc::kBin_minimum,
  kEq = sc::kBin_eq
};

// Math: double for f64; float for f32 except pow (double, rounded once like
// the reference); f16/bf16 in float with round_checked (double near a
// rounding midpoint); the rounding divisions (trunc/floor) always from the
// double quotient, which is what decides them in the reference.

template <class A>
__device__ __forceinline__ A arith(int op, int mode, A a, A b, A alpha) {
  return sc::binary<A>(op, a, b, alpha, mode);
}

// round_checked for one correctly rounded float operation (add, sub, mul,
// div, max, min: the float result is within half an ulp of the exact one):
// a window of 2 float ulps around T's rounding midpoints, instead of the
// 128 that round_checked allows for libdevice functions, keeps the double
// fallback (and the warp divergence it costs) to ~1e-4 of the elements.
template <class T, class Slow>
__device__ __forceinline__ T round_arith(float r, Slow&& slow) {
  const uint32_t u = __float_as_uint(r);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const int low = (int)(u & 0xffffu);
    if (abs(low - 0x8000) <= 2 && (u & 0x7f800000u) != 0x7f800000u) return convert<T>(slow());
    return convert<T>(r);
  } else {
    const float a = fabsf(r);
    if (a >= 6.103515625e-05f && a < 65504.0f) {
      const int low = (int)(u & 0x1fffu);
      if (abs(low - 0x1000) > 2) return convert<T>(r);
    } else if (!(a < 65520.0f * 4.0f) || a == 0.0f) {
      return convert<T>(r);
    }
    return convert<T>(slow());
  }
}

// HEAVY: pow and the rounding divisions (double math); the plain arithmetic
// ops get a kernel of their own so that double pow's registers do not lower
// the occupancy of add/mul (memory-bound: occupancy is bandwidth).
template <class T, bool HEAVY>
struct FloatBinF {
  int op;
  int mode;  // div rounding mode
  double alpha;
  __device__ __forceinline__ T operator()(T av, T bv) const {
    if constexpr (std::is_same_v<T, double>) {
      return arith<double>(op, mode, av, bv, alpha);
    } else if constexpr (HEAVY) {
      if (op == kDiv)  // the double quotient decides trunc/floor
        return convert<T>(arith<double>(op, mode, convert<double>(av), convert<double>(bv), alpha));
      if constexpr (std::is_same_v<T, float>) {
        return (float)pow((double)av, (double)bv);
      } else {
        const float a = (float)av, b = (float)bv;
        return round_checked<T>(powf(a, b), [&] { return pow((double)a, (double)b); });
      }
    } else if constexpr (std::is_same_v<T, float>) {
      return arith<float>(op, mode, av, bv, (float)alpha);
    } else {
      // f16/bf16: float math, rounded like the reference's double result.
      const float a = (float)av, b = (float)bv;
      const float r = arith<float>(op, mode, a, b, (float)alpha);
      if (alpha != 1.0 && (op == kAdd || op == kSub))  // a + alpha*b: two float roundings
        return round_checked<T>(r, [&] { return arith<double>(op, mode, (double)a, (double)b, alpha); });
      return round_arith<T>(r, [&] { return arith<double>(op, mode, (double)a, (double)b, alpha); });
    }
  }
};

// Exact integer arithmetic (uint64 wrap), bool through int64 (!= 0 on store).
template <class T>
struct IntBinF {
  int op;
  int mode;
  int64_t alpha;
  __device__ __forceinline__ T operator()(T av, T bv) const {
    const int64_t a = (int64_t)av, b = (int64_t)bv;
    // Division by zero is an error raised beforehand (check_int_operand);
    // under graph capture, where it cannot be, 0 stands.
    if (op == kDiv && b == 0) return convert<T>((int64_t)0);
    return convert<T>(sc::binary_exact(op, a, b, alpha, mode));
  }
};

template <class T>
struct CompareF {
  int op;
  __device__ __forceinline__ bool operator()(T av, T bv) const {
    using A = std::conditional_t<is_float_v<T>, acc_t<T>, int64_t>;
    return sc::compare<A>(op, convert<A>(av), convert<A>(bv));
  }
};

// Integer division by zero and negative integer powers are errors (the
// reference's rule).  Raising one needs the values on the host: a one-word
// flag is reduced on the device and read back (a synchronisation, on these
// integer ops only; skipped while a graph is being captured, where it would
// be illegal, and then the kernel's fallback values stand).
// v < 0, spelled so that unsigned types (never negative) raise no "pointless comparison" warning.
template <class T>
__device__ __forceinline__ bool is_negative(T v) {
  if constexpr (std::is_signed_v<T>)
    return v < T(0);
  else
    return false;
}

template <class T>
__global__ void any_bad_kernel(const T* b, int64_t n, OffsetCalc<1> oc, bool neg, int* flag) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[1];
    oc.get(i, off);
    const T v = b[off[0]];
    if (neg ? is_negative(v) : (v == T(0))) atomicOr(flag, 1);
  }
}

template <class T>
void check_int_operand(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& b, bool neg) {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  GN_CUDA_CHECK(cudaStreamIsCapturing(stream(ctx), &cap));
  if (cap != cudaStreamCaptureStatusNone) return;
  const int64_t n = numel(b);
  if (!n) return;
  int* flag = static_cast<int*>(workspace(ctx, sizeof(int)));
  GN_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), stream(ctx)));
  const gn_tensor_view* v[1] = {&b};
  OffsetCalc<1> oc = make_offset_calc<1>(b.shape, b.ndim, v);
  if (oc.ndim == 0) {
    oc.ndim = 1;
    oc.shape[0] = 1;
    oc.strides[0][0] = 0;
  }
  unsigned blocks = blocks_for(n);
  if (blocks > 1024) blocks = 1024;
  any_bad_kernel<T><<<blocks, kThreads, 0, stream(ctx)>>>(data_ptr<const T>(b), n, oc, neg, flag);
  GN_CUDA_CHECK_LAUNCH();
  int host = 0;
  GN_CUDA_CHECK(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, stream(ctx)));
  GN_CUDA_CHECK(cudaStreamSynchronize(stream(ctx)));
  if (host) {
    if (neg) fail_op(GN_ERR_INVALID_ARGUMENT, op, "integers to negative integer powers are not allowed");
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "ZeroDivisionError: integer division by zero");
  }
}

GN_SDK_KERNEL(binary_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "binary";
  need_io(name, n_in, 2, n_out, 1);
  DeviceGuard g(ctx);
  const int op = (int)(intptr_t)ctx->kernel_data;  // the BinOp, set at registration
  const gn_tensor_view &a = in[0], &b = in[1], &o = out[0];
  if (a.dtype != b.dtype) fail_op(GN_ERR_DTYPE, name, "inputs must have one dtype (the core promotes them)");
  const gn_tensor_view* ins[2] = {&a, &b};
  if (op >= kEq) {
    if (o.dtype != GN_BOOL) fail_op(GN_ERR_DTYPE, name, "output must be bool");
    dispatch_all(a.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<bool, T, 2>(ctx, o, ins, CompareF<T>{op});
    });
    return;
  }
  if (o.dtype != a.dtype) fail_op(GN_ERR_DTYPE, name, "output dtype must equal the inputs'");
  const double alpha = (op == kAdd || op == kSub) ? attr_float(name, attrs, n_attrs, 0) : 1.0;
  const int mode = op == kDiv ? (int)attr_int(name, attrs, n_attrs, 0) : 0;
  if (mode < 0 || mode > 2) fail_op(GN_ERR_INVALID_ARGUMENT, name, "rounding_mode must be 0, 1 or 2");
  if (gn_dtype_is_float(a.dtype)) {
    dispatch_float(a.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (op == kPow || (op == kDiv && mode != 0))
        elementwise<T, T, 2>(ctx, o, ins, FloatBinF<T, true>{op, mode, alpha});
      else
        elementwise<T, T, 2>(ctx, o, ins, FloatBinF<T, false>{op, mode, alpha});
    });
    return;
  }
  if (op == kDiv && mode == 0) fail_op(GN_ERR_DTYPE, name, "true division of integers (the core makes it float)");
  if (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18)
    fail_op(GN_ERR_INVALID_ARGUMENT, name, "alpha must be an integer for integer tensors");
  const int64_t ialpha = (int64_t)alpha;
  if (a.dtype == GN_BOOL) {
    elementwise<bool, bool, 2>(ctx, o, ins, IntBinF<bool>{op, mode, ialpha});
    return;
  }
  dispatch_int(a.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if ((op == kDiv || op == kPow) && numel(o) > 0) check_int_operand<T>(ctx, name, b, op == kPow);
    elementwise<T, T, 2>(ctx, o, ins, IntBinF<T>{op, mode, ialpha});
  });
}

// where(cond, a, b): three operands with two element types; a small kernel of
// its own over an OffsetCalc<4> (dense views coalesce to one dim).
template <class T, class Index>
__global__ void where_kernel_impl(int64_t n, T* out, const bool* c, const T* a, const T* b, OffsetCalc<4> oc) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[4];
    if (oc.ndim == 1) {
#pragma unroll
      for (int k = 0; k < 4; ++k) off[k] = i * oc.strides[0][k];
    } else {
      oc.get(i, off);
    }
    out[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  }
}

GN_SDK_KERNEL(where_kernel) {
  need_io("where", n_in, 3, n_out, 1);
  DeviceGuard g(ctx);
  const gn_tensor_view &c = in[0], &a = in[1], &b = in[2], &o = out[0];
  if (c.dtype != GN_BOOL) fail_op(GN_ERR_DTYPE, "where", "condition must be bool");
  if (a.dtype != o.dtype || b.dtype != o.dtype) fail_op(GN_ERR_DTYPE, "where", "a, b and out must share a dtype");
  const int64_t n = numel(o);
  if (!n) return;
  const gn_tensor_view* views[4] = {&o, &c, &a, &b};
  OffsetCalc<4> oc = make_offset_calc<4>(o.shape, o.ndim, views);
  if (oc.ndim == 0) {
    oc.ndim = 1;
    oc.shape[0] = 1;
    for (int k = 0; k < 4; ++k) oc.strides[0][k] = 0;
  }
  const unsigned blocks = blocks_for(n, 1) < (unsigned)sm_count(ctx) * 32 ? blocks_for(n, 1) : sm_count(ctx) * 32;
  dispatch_all(o.dtype, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    where_kernel_impl<T, int64_t><<<blocks, kThreads, 0, stream(ctx)>>>(n, data_ptr<T>(o), data_ptr<const bool>(c),
                                                                        data_ptr<const T>(a), data_ptr<const T>(b), oc);
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(binary) {
  // Every op of the shared lists (genesis/sdk/scalar_ops.h), bool operands where its
  // functor serves them; the op code travels as the kernel's user data (no name
  // lookup per call).
  auto reg = [&](const char* name, int code, bool takes_bool) {
    if (takes_bool)
      r.kernel(name, kAllDtypes, binary_kernel, 0, (void*)(intptr_t)code);
    else
      r.kernel(name, kNumericDtypes, binary_kernel, 0, (void*)(intptr_t)code);
  };
#define GN_CUDA_BIN_REG(name, F) reg(#name, sc::kBin_##name, sc::F::kBool);
  GN_SCALAR_BINARY_OPS(GN_CUDA_BIN_REG)
  GN_SCALAR_COMPARE_OPS(GN_CUDA_BIN_REG)
#undef GN_CUDA_BIN_REG
  r.kernel("where", kAllDtypes, where_kernel);
}

}  // namespace gn::cuda
