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

namespace sc = gn::sdk::scalar;

// Op codes: the plain unary ops of GN_SCALAR_UNARY_OPS (genesis/sdk/scalar_ops.h), then the ones with attributes.
enum UnaryOp : int {
#define GN_CUDA_UNARY_ENUM(name, F) kUn_##name,
  GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_ENUM)
#undef GN_CUDA_UNARY_ENUM
  kGeluErf, kGeluTanh, kClamp
};

struct OpName {
  const char* name;
  int op;
};
constexpr OpName kOps[] = {
#define GN_CUDA_UNARY_NAME(name, F) {#name, kUn_##name},
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_NAME)
#undef GN_CUDA_UNARY_NAME
};

int op_code(const char* name) {
  for (const OpName& o : kOps)
    if (std::string(o.name) == name) return o.op;
  fail(GN_ERR_INTERNAL, std::string("[cuda] unknown unary op ") + name);
}

// Float math in A (float or double): the shared formulas.  gelu takes the
// erfc form (GeluErf::tail) except in f32 unless exact_gelu.
template <class A>
__device__ __forceinline__ A unary_float(int op, A x, A lo, A hi, bool exact_gelu = true) {
  switch (op) {
#define GN_CUDA_UNARY_CASE(name, F) \
  case kUn_##name: return sc::F{}(x);
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_CASE)
#undef GN_CUDA_UNARY_CASE
    case kGeluErf:
      if constexpr (std::is_same_v<A, float>) {
        if (!exact_gelu) return sc::GeluErf{}(x);  // f32: the erf form, as torch
      }
      return sc::GeluErf{}.tail(x);
    case kGeluTanh: return sc::GeluTanh{}(x);
    case kClamp: return sc::Clamp{}(x, lo, hi);
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
      if (op == kUn_rsqrt) return (float)(1.0 / sqrt((double)x));
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

// Exact integer forms of the shared formulas (int64 math, wrapping through uint64).
template <class T>
struct IntUnaryF {
  int op;
  double lo, hi;      // clamp's bounds
  int64_t ilo, ihi;   // the same, made integral and saturated
  __device__ __forceinline__ T operator()(T xv) const {
    const int64_t x = (int64_t)xv;
    int64_t r;
    switch (op) {
#define GN_CUDA_UNARY_EXACT(name, F) \
  case kUn_##name: r = sc::F{}.exact(x); break;
      GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_EXACT)
#undef GN_CUDA_UNARY_EXACT
      case kClamp: r = sc::Clamp{}.exact(x, lo, hi, ilo, ihi); break;
      default: r = x; break;
    }
    return (T)r;
  }
};

template <>
struct IntUnaryF<bool> {  // sign(bool) = x
  int op;
  double lo, hi;
  int64_t ilo, ihi;
  __device__ __forceinline__ bool operator()(bool x) const { return x; }
};

// logical_not isnan isinf isfinite: the shared predicates, bool out.
template <class T>
struct PredF {
  int op;
  __device__ __forceinline__ bool operator()(T xv) const {
    if constexpr (is_float_v<T>) {
      return unary_float<acc_t<T>>(op, convert<acc_t<T>>(xv), acc_t<T>(0), acc_t<T>(0)) != acc_t<T>(0);
    } else {
      const int64_t x = (int64_t)xv;
      switch (op) {
        case kUn_logical_not: return sc::LogicalNot{}.exact(x) != 0;
        case kUn_isnan: return sc::IsNan{}.exact(x) != 0;
        case kUn_isinf: return sc::IsInf{}.exact(x) != 0;
        default: return sc::IsFinite{}.exact(x) != 0;
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
    if (op != kUn_neg && op != kUn_abs && op != kUn_sign && op != kUn_relu && op != kUn_square && op != kUn_floor &&
        op != kUn_ceil && op != kUn_round && op != kClamp)
      fail_op(GN_ERR_DTYPE, name, std::string("dtype ") + gn_dtype_name(x.dtype) + " is not supported");
    // clamp bounds for integers: ceil(lo), floor(hi), saturated to int64.
    const int64_t ilo = gn::sdk::saturate_i64(std::ceil(lo)), ihi = gn::sdk::saturate_i64(std::floor(hi));
    if (x.dtype == GN_BOOL) {
      elementwise<bool, bool, 1>(ctx, y, ins, IntUnaryF<bool>{op, lo, hi, ilo, ihi});
      return;
    }
    dispatch_int(x.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, IntUnaryF<T>{op, lo, hi, ilo, ihi});
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
  const int op = (int)(intptr_t)ctx->kernel_data;  // op code from registration
  const gn_tensor_view* ins[1] = {&in[0]};
  if (out[0].dtype != GN_BOOL) fail_op(GN_ERR_DTYPE, name, "output must be bool");
  dispatch_all(in[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise<bool, T, 1>(ctx, out[0], ins, PredF<T>{op});
  });
}

}  // namespace

// Traits of each functor of the shared list: which kernel and dtypes serve it.
struct UnaryTraits {
  const char* name;
  bool exact, takes_bool, predicate;
};
constexpr UnaryTraits kTraits[] = {
#define GN_CUDA_UNARY_TRAITS(name, F) {#name, sc::F::kExact, sc::F::kBool, sc::F::kPredicate},
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_TRAITS)
#undef GN_CUDA_UNARY_TRAITS
};

GN_CUDA_FAMILY(unary) {
  for (const UnaryTraits& t : kTraits) {
    void* code = (void*)(intptr_t)op_code(t.name);
    if (t.predicate) r.kernel(t.name, kAllDtypes, pred_kernel, 0, code);  // bool out
    else if (!t.exact) r.kernel(t.name, kFloatDtypes, unary_kernel, 0, code);  // inference casts int/bool to f32
    else if (t.takes_bool) r.kernel(t.name, kAllDtypes, unary_kernel, 0, code);
    else r.kernel(t.name, kNumericDtypes, unary_kernel, 0, code);
  }
  r.kernel("gelu", kFloatDtypes, gelu_kernel);
  r.kernel("clamp", kNumericDtypes, clamp_kernel);
}

}  // namespace gn::cuda
