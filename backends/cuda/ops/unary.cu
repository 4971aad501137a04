// backends/cuda/ops/unary.cu - elementwise unary ops, clamp and the bool
// predicates (logical_not isnan isinf isfinite).
//
// x (any strides) -> y (x's shape).  Floats compute in float (f16/bf16/f32)
// or double (f64) and round once on store; integers use exact int64 forms
// (two's complement wrap for neg/abs/square, as torch).  One kernel per
// (dtype, path) serves every op: the op is a run-time code in the functor
// (a uniform branch, free next to the memory traffic), which keeps the number
// of template instances and the build time small.
#include <cmath>

#include "common.cuh"
#include "loops.cuh"

namespace gn::cuda {
namespace {

enum UnaryOp : int {
  kNeg, kAbs, kSign, kExp, kLog, kLog1p, kSqrt, kRsqrt, kSin, kCos, kTanh, kSigmoid, kRelu, kSilu,
  kReciprocal, kSquare, kFloor, kCeil, kRound, kGeluErf, kGeluTanh, kClamp
};

struct OpName {
  const char* name;
  int op;
};
constexpr OpName kOps[] = {
    {"neg", kNeg},     {"abs", kAbs},         {"sign", kSign},     {"exp", kExp},       {"log", kLog},
    {"log1p", kLog1p}, {"sqrt", kSqrt},       {"rsqrt", kRsqrt},   {"sin", kSin},       {"cos", kCos},
    {"tanh", kTanh},   {"sigmoid", kSigmoid}, {"relu", kRelu},     {"silu", kSilu},     {"reciprocal", kReciprocal},
    {"square", kSquare}, {"floor", kFloor},   {"ceil", kCeil},     {"round", kRound},
};

int op_code(const char* name) {
  for (const OpName& o : kOps)
    if (std::string(o.name) == name) return o.op;
  fail(GN_ERR_INTERNAL, std::string("[cuda] unknown unary op ") + name);
}

// Float math in A (float or double).
template <class A>
__device__ __forceinline__ A unary_float(int op, A x, A lo, A hi, bool exact_gelu = true) {
  switch (op) {
    case kNeg: return -x;
    case kAbs: return fabs(x);
    case kSign: return (A)((A(0) < x) - (x < A(0)));  // sign(NaN) = 0 as torch
    case kExp: return exp(x);
    case kLog: return log(x);
    case kLog1p: return log1p(x);
    case kSqrt: return sqrt(x);
    case kRsqrt: return A(1) / sqrt(x);
    case kSin: return sin(x);
    case kCos: return cos(x);
    case kTanh: return tanh(x);
    case kSigmoid: return A(1) / (A(1) + exp(-x));
    case kRelu: return isnan(x) ? x : (x > A(0) ? x : A(0));
    case kSilu: return x / (A(1) + exp(-x));
    case kReciprocal: return A(1) / x;
    case kSquare: return x * x;
    case kFloor: return floor(x);
    case kCeil: return ceil(x);
    case kRound: return rint(x);  // half to even
    // 0.5*x*(1+erf(x/sqrt2)) = 0.5*x*erfc(-x/sqrt2): no cancellation for
    // x << 0 (double, and the f16/bf16 float path, whose result must be within
    // round_checked's window).  f32 uses the erf form, as torch does: cheaper,
    // and its absolute error near x = -5 (~1e-13) is far inside f32 tolerances.
    case kGeluErf:
      if constexpr (std::is_same_v<A, float>) {
        if (!exact_gelu) return A(0.5) * x * (A(1) + erf(x * A(0.70710678118654752440)));
      }
      return A(0.5) * x * erfc(-x * A(0.70710678118654752440));
    case kGeluTanh: {
      // 0.5*x*(1+tanh(u)) = x / (1 + exp(-2u)): no cancellation for u << 0.
      const A k = A(0.79788456080286535588);  // sqrt(2/pi)
      const A u = k * (x + A(0.044715) * x * x * x);
      return x / (A(1) + exp(A(-2) * u));
    }
    case kClamp: {
      if (isnan(lo) || isnan(hi)) return lo + hi;  // NaN bound -> NaN
      if (isnan(x)) return x;
      return x < lo ? lo : (x > hi ? hi : x);
    }
    default: return x;
  }
}

// Math: double for f64; float for f32 (libdevice within 1-2 ulp), except
// rsqrt, whose reference value (1/sqrt in double, rounded once) is reproduced
// exactly; f16/bf16 in float with round_checked (common.cuh), which falls
// back to double near a rounding midpoint, so the stored bits equal the
// reference's (double math, one rounding).
template <class T>
using math_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
struct FloatUnaryF {
  int op;
  double lo, hi;
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, double>) {
      return unary_float<double>(op, x, lo, hi);
    } else if constexpr (std::is_same_v<T, float>) {
      if (op == kRsqrt) return (float)(1.0 / sqrt((double)x));
      return unary_float<float>(op, x, (float)lo, (float)hi, false);
    } else {
      // f16/bf16: float math, double only near a rounding midpoint (round_checked).
      const float xf = (float)x;
      if (op == kClamp) return convert<T>(unary_float<double>(op, (double)xf, lo, hi));
      const float r = unary_float<float>(op, xf, (float)lo, (float)hi);
      return round_checked<T>(r, [&] { return unary_float<double>(op, (double)xf, lo, hi); });
    }
  }
};

// Exact integer forms (int64 math, wrapping through uint64).
template <class T>
struct IntUnaryF {
  int op;
  int64_t lo, hi;  // clamp bounds (already integral, saturated)
  __device__ __forceinline__ T operator()(T xv) const {
    const int64_t x = (int64_t)xv;
    int64_t r;
    switch (op) {
      case kNeg: r = (int64_t)(0ull - (uint64_t)x); break;
      case kAbs: r = x < 0 ? (int64_t)(0ull - (uint64_t)x) : x; break;
      case kSign: r = (0 < x) - (x < 0); break;
      case kRelu: r = x > 0 ? x : 0; break;
      case kSquare: r = (int64_t)((uint64_t)x * (uint64_t)x); break;
      case kClamp: r = x < lo ? lo : (x > hi ? hi : x); break;
      default: r = x; break;  // floor ceil round: identity
    }
    return (T)r;
  }
};

template <>
struct IntUnaryF<bool> {  // sign(bool) = x
  int op;
  int64_t lo, hi;
  __device__ __forceinline__ bool operator()(bool x) const { return x; }
};

enum PredOp : int { kLogicalNot, kIsNan, kIsInf, kIsFinite };

template <class T>
struct PredF {
  int op;
  __device__ __forceinline__ bool operator()(T xv) const {
    if constexpr (is_float_v<T>) {
      const acc_t<T> x = convert<acc_t<T>>(xv);
      switch (op) {
        case kLogicalNot: return x == acc_t<T>(0);
        case kIsNan: return isnan(x);
        case kIsInf: return isinf(x);
        default: return isfinite(x);
      }
    } else {
      switch (op) {
        case kLogicalNot: return xv == T(0);
        case kIsNan: return false;
        case kIsInf: return false;
        default: return true;
      }
    }
  }
};

void run_unary(const gn_kernel_ctx* ctx, const gn_tensor_view& x, const gn_tensor_view& y, int op, double lo,
               double hi) {
  const char* name = ctx->op_name ? ctx->op_name : "unary";
  if (x.dtype != y.dtype) fail_op(GN_ERR_DTYPE, name, "input and output dtypes differ");
  const gn_tensor_view* ins[1] = {&x};
  if (gn_dtype_is_float(x.dtype)) {
    dispatch_float(x.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, FloatUnaryF<T>{op, lo, hi});
    });
  } else {
    if (op != kNeg && op != kAbs && op != kSign && op != kRelu && op != kSquare && op != kFloor && op != kCeil &&
        op != kRound && op != kClamp)
      fail_op(GN_ERR_DTYPE, name, std::string("dtype ") + gn_dtype_name(x.dtype) + " is not supported");
    // clamp bounds for integers: ceil(lo), floor(hi), saturated to int64.
    auto sat = [](double v) -> int64_t {
      if (std::isnan(v)) return 0;
      if (v >= 9.2233720368547758e18) return INT64_MAX;
      if (v <= -9.2233720368547758e18) return INT64_MIN;
      return (int64_t)v;
    };
    const int64_t ilo = sat(std::ceil(lo)), ihi = sat(std::floor(hi));
    if (x.dtype == GN_BOOL) {
      elementwise<bool, bool, 1>(ctx, y, ins, IntUnaryF<bool>{op, ilo, ihi});
      return;
    }
    dispatch_int(x.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, IntUnaryF<T>{op, ilo, ihi});
    });
  }
}

GN_SDK_KERNEL(unary_kernel) {
  need_io(ctx->op_name, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  run_unary(ctx, in[0], out[0], (int)(intptr_t)ctx->kernel_data, 0.0, 0.0);  // op code from registration
}

GN_SDK_KERNEL(gelu_kernel) {
  need_io("gelu", n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const int64_t approx = attr_int("gelu", attrs, n_attrs, 0);
  if (!gn_dtype_is_float(in[0].dtype)) fail_op(GN_ERR_DTYPE, "gelu", "needs a float input");
  run_unary(ctx, in[0], out[0], approx ? kGeluTanh : kGeluErf, 0.0, 0.0);
}

GN_SDK_KERNEL(clamp_kernel) {
  need_io("clamp", n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const double lo = attr_float("clamp", attrs, n_attrs, 0), hi = attr_float("clamp", attrs, n_attrs, 1);
  if (!gn_dtype_is_float(in[0].dtype) && (std::isnan(lo) || std::isnan(hi)))
    fail_op(GN_ERR_UNSUPPORTED, "clamp", "NaN bounds on an integer tensor");
  run_unary(ctx, in[0], out[0], kClamp, lo, hi);
}

GN_SDK_KERNEL(pred_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "predicate";
  need_io(name, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const std::string n(name);
  const int op = n == "logical_not" ? kLogicalNot : n == "isnan" ? kIsNan : n == "isinf" ? kIsInf : kIsFinite;
  const gn_tensor_view* ins[1] = {&in[0]};
  if (out[0].dtype != GN_BOOL) fail_op(GN_ERR_DTYPE, name, "output must be bool");
  dispatch_all(in[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise<bool, T, 1>(ctx, out[0], ins, PredF<T>{op});
  });
}

}  // namespace

GN_CUDA_FAMILY(unary) {
  auto reg = [&](const char* name, auto& dtypes) {
    r.kernel(name, dtypes, unary_kernel, 0, (void*)(intptr_t)op_code(name));
  };
  for (const char* name : {"neg", "abs", "relu", "floor", "ceil", "round"}) reg(name, kNumericDtypes);
  reg("sign", kAllDtypes);
  reg("square", kNumericDtypes);  // bool is cast to int64 by inference
  // Float math: inference casts int/bool inputs to float32 first.
  for (const char* name : {"exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "silu", "reciprocal"})
    reg(name, kFloatDtypes);
  r.kernel("gelu", kFloatDtypes, gelu_kernel);
  r.kernel("clamp", kNumericDtypes, clamp_kernel);
  for (const char* name : {"logical_not", "isnan", "isinf", "isfinite"}) r.kernel(name, kAllDtypes, pred_kernel);
}

}  // namespace gn::cuda
