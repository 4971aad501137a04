// genesis/sdk/scalar_ops.h - the scalar formula of every elementwise unary,
// binary and comparison op and the per-element and finishing steps of the
// reductions, written once for every backend (host and device: GN_HD).
//
// A functor's `operator()(A x)` is the floating form, A = float or double
// (the reference and the cpu generic paths use double; the cuda kernels
// float or double); `exact(int64_t)` is the integer form where the op has
// one (kExact), wrapping like torch's integer kernels.  The lists
// GN_SCALAR_UNARY_OPS / GN_SCALAR_BINARY_OPS / GN_SCALAR_COMPARE_OPS give
// (op name of core/ops/ops.def, functor) pairs that backends expand into
// their tables and registrations, so a new elementwise op is one functor and
// one list entry; GN_SCALAR_REDUCE_OPS lists the reductions the same way.
#pragma once

#include <cmath>
#include <cstdint>

#include "genesis/sdk/convert.h"

namespace gn::sdk {

// ---- integer helpers: two's complement wrap through uint64, saturation

GN_HD int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
GN_HD int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
GN_HD int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
GN_HD int64_t wrap_neg(int64_t a) { return (int64_t)(0ull - (uint64_t)a); }

// double -> int64 clamped to the int64 range (clamp's bounds on integers); NaN -> 0.
GN_HD int64_t saturate_i64(double v) {
  if (!(v == v)) return 0;
  if (v >= kInt64Bound) return INT64_MAX;
  if (v <= -kInt64Bound) return INT64_MIN;
  return (int64_t)v;
}

namespace scalar {

// std:: math on the host; nvcc gives the same names float and double device overloads.
namespace m {
using std::ceil;
using std::copysign;
using std::cos;
using std::erf;
using std::erfc;
using std::exp;
using std::expm1;
using std::fabs;
using std::floor;
using std::fmod;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::log;
using std::log1p;
using std::nearbyint;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;
using std::trunc;
}  // namespace m

// ---- unary

// Traits every unary functor has, which decide the kernels backends register:
//   kExact      an exact int64 form `exact` exists (integer in, integer out);
//   kBool       bool inputs are served (else inference refuses or casts them);
//   kPredicate  the output is bool (isnan ...): 1 or 0 from operator().
// Float math (no exact form) takes every dtype: integers are computed in floating point.
struct NoExact {
  static constexpr bool kExact = false, kBool = true, kPredicate = false;
  GN_HD int64_t exact(int64_t x) const { return x; }
};
struct ExactForm {
  static constexpr bool kExact = true, kBool = false, kPredicate = false;
};
struct ExactBoolForm {
  static constexpr bool kExact = true, kBool = true, kPredicate = false;
};
struct PredicateForm {
  static constexpr bool kExact = true, kBool = true, kPredicate = true;
};
// Identity integer form (floor, ceil, round of an integer).
struct IntIdentity : ExactForm {
  GN_HD int64_t exact(int64_t x) const { return x; }
};

struct Neg : ExactForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return -x;
  }
  GN_HD int64_t exact(int64_t x) const { return wrap_neg(x); }
};
struct Abs : ExactForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::fabs(x);
  }
  GN_HD int64_t exact(int64_t x) const { return x < 0 ? wrap_neg(x) : x; }
};
// torch.sign: (0 < x) - (x < 0), so sign(NaN) = 0.
struct Sign : ExactBoolForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return (A)((A(0) < x) - (x < A(0)));
  }
  GN_HD int64_t exact(int64_t x) const { return (0 < x) - (x < 0); }
};
struct Exp : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::exp(x);
  }
};
struct Log : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::log(x);
  }
};
struct Log1p : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::log1p(x);
  }
};
struct Sqrt : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::sqrt(x);
  }
};
struct Rsqrt : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return A(1) / m::sqrt(x);
  }
};
struct Sin : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::sin(x);
  }
};
struct Cos : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::cos(x);
  }
};
struct Tanh : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::tanh(x);
  }
};
struct Sigmoid : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return A(1) / (A(1) + m::exp(-x));
  }
};
// relu propagates NaN (torch: clamp_min(x, 0)).
struct Relu : ExactForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::isnan(x) ? x : (x > A(0) ? x : A(0));
  }
  GN_HD int64_t exact(int64_t x) const { return x > 0 ? x : 0; }
};
// x * sigmoid(x), written x / (1 + exp(-x)): one rounding fewer.
struct Silu : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return x / (A(1) + m::exp(-x));
  }
};
struct Reciprocal : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return A(1) / x;
  }
};
struct Square : ExactBoolForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return x * x;
  }
  GN_HD int64_t exact(int64_t x) const { return wrap_mul(x, x); }
};
struct Floor : IntIdentity {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::floor(x);
  }
};
struct Ceil : IntIdentity {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::ceil(x);
  }
};
// nearbyint under the default rounding mode: half to even, like torch.round.
struct Round : IntIdentity {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::nearbyint(x);
  }
};
// The predicates give 1 or 0 in A (the bool output stores x != 0).
struct LogicalNot : PredicateForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return x == A(0) ? A(1) : A(0);
  }
  GN_HD int64_t exact(int64_t x) const { return x == 0; }
};
struct IsNan : PredicateForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::isnan(x) ? A(1) : A(0);
  }
  GN_HD int64_t exact(int64_t) const { return 0; }
};
struct IsInf : PredicateForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::isinf(x) ? A(1) : A(0);
  }
  GN_HD int64_t exact(int64_t) const { return 0; }
};
struct IsFinite : PredicateForm {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::isfinite(x) ? A(1) : A(0);
  }
  GN_HD int64_t exact(int64_t) const { return 1; }
};

struct Expm1 : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return m::expm1(x);
  }
};

// gelu, exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
struct GeluErf : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    return A(0.5) * x * (A(1) + m::erf(x * A(0.70710678118654752440)));
  }
  // The same as 0.5 x erfc(-x / sqrt 2): no cancellation for x << 0, where the
  // form above rounds to 0; cuda's f64 and f16/bf16 paths use it (a float result
  // must lie within round_checked's window of the exact one).
  template <class A>
  GN_HD A tail(A x) const {
    return A(0.5) * x * m::erfc(-x * A(0.70710678118654752440));
  }
};
// gelu, tanh form: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
struct GeluTanh : NoExact {
  template <class A>
  GN_HD A operator()(A x) const {
    const A u = A(0.79788456080286535588) * (x + A(0.044715) * x * x * x);
    return x / (A(1) + m::exp(A(-2) * u));
  }
};
// clamp(x; lo, hi) = min(max(x, lo), hi) (hi wins when lo > hi); a NaN bound or x gives NaN.
struct Clamp {
  template <class A>
  GN_HD A operator()(A x, A lo, A hi) const {
    if (m::isnan(lo) || m::isnan(hi)) return lo + hi;
    if (m::isnan(x)) return x;
    const A t = x < lo ? lo : x;
    return t > hi ? hi : t;
  }
  // Integer x, compared with the float bounds; ilo = saturate_i64(ceil(lo)), ihi = saturate_i64(floor(hi)).
  GN_HD int64_t exact(int64_t x, double lo, double hi, int64_t ilo, int64_t ihi) const {
    if ((double)x < lo) x = ilo;
    if ((double)x > hi) x = ihi;
    return x;
  }
};

// The plain unary ops (one input, no attributes): (ops.def name, functor).
// clang-format off
#define GN_SCALAR_UNARY_OPS(X)                                                                      \
  X(neg, Neg) X(abs, Abs) X(sign, Sign) X(exp, Exp) X(log, Log) X(log1p, Log1p) X(sqrt, Sqrt)       \
  X(rsqrt, Rsqrt) X(sin, Sin) X(cos, Cos) X(tanh, Tanh) X(sigmoid, Sigmoid) X(relu, Relu)           \
  X(silu, Silu) X(reciprocal, Reciprocal) X(square, Square) X(floor, Floor) X(ceil, Ceil)           \
  X(round, Round) X(logical_not, LogicalNot) X(isnan, IsNan) X(isinf, IsInf) X(isfinite, IsFinite)    \
  X(expm1, Expm1)
// clang-format on

// ---- binary arithmetic: a, b in one dtype; alpha (add, sub) and the div rounding mode are attributes

// The trait every binary and comparison functor has, which decides the dtypes backends register:
//   kBool  bool operands are served (add: or, mul: and; torch refuses bool sub and pow).
struct BoolOperands {
  static constexpr bool kBool = true;
};
struct NoBoolOperands {
  static constexpr bool kBool = false;
};

struct Add : BoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b, A alpha) const {
    return a + alpha * b;
  }
  GN_HD int64_t exact(int64_t a, int64_t b, int64_t alpha) const { return wrap_add(a, wrap_mul(alpha, b)); }
};
struct Sub : NoBoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b, A alpha) const {
    return a - alpha * b;
  }
  GN_HD int64_t exact(int64_t a, int64_t b, int64_t alpha) const { return wrap_sub(a, wrap_mul(alpha, b)); }
};
struct Mul : BoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b) const {
    return a * b;
  }
  GN_HD int64_t exact(int64_t a, int64_t b) const { return wrap_mul(a, b); }
};
// torch's div_floor_floating: floor(a/b) through fmod, the exact floor of the real quotient.
template <class A>
GN_HD A div_floor(A a, A b) {
  if (b == A(0)) return a / b;
  const A mod = m::fmod(a, b);
  A div = (a - mod) / b;
  if (mod != A(0) && (b < A(0)) != (mod < A(0))) div -= A(1);
  if (div == A(0)) return m::copysign(A(0), a / b);
  A fl = m::floor(div);
  if (div - fl > A(0.5)) fl += A(1);
  return fl;
}
// div rounding modes: 0 true, 1 trunc, 2 floor.
struct Div : BoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b, int mode) const {
    return mode == 0 ? a / b : (mode == 1 ? m::trunc(a / b) : div_floor(a, b));
  }
  // b != 0 (the caller raises ZeroDivisionError); INT64_MIN / -1 wraps.
  GN_HD int64_t exact(int64_t a, int64_t b, int mode) const {
    if (b == -1) return wrap_neg(a);
    int64_t q = a / b;
    if (mode == 2 && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
  }
};
struct Pow : NoBoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b) const {
    return m::pow(a, b);
  }
  // a**b by squaring with wrapping.  b < 0 is an error the caller raises; where
  // it cannot (a captured cuda graph) the integer truncation stands: 1, +-1 or 0.
  GN_HD int64_t exact(int64_t a, int64_t b) const {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    int64_t r = 1;
    while (b > 0) {
      if (b & 1) r = wrap_mul(r, a);
      a = wrap_mul(a, a);
      b >>= 1;
    }
    return r;
  }
};
// maximum/minimum propagate NaN (a + b is the NaN).
struct Maximum : BoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b) const {
    return (m::isnan(a) || m::isnan(b)) ? a + b : (a > b ? a : b);
  }
  GN_HD int64_t exact(int64_t a, int64_t b) const { return a > b ? a : b; }
};
struct Minimum : BoolOperands {
  template <class A>
  GN_HD A operator()(A a, A b) const {
    return (m::isnan(a) || m::isnan(b)) ? a + b : (a < b ? a : b);
  }
  GN_HD int64_t exact(int64_t a, int64_t b) const { return a < b ? a : b; }
};

// ---- comparisons and logical ops: bool results; V = double, float or int64 (exact)

struct Eq : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a == b;
  }
};
struct Ne : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a != b;
  }
};
struct Lt : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a < b;
  }
};
struct Le : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a <= b;
  }
};
struct Gt : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a > b;
  }
};
struct Ge : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a >= b;
  }
};
struct LogicalAnd : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a != V(0) && b != V(0);
  }
};
struct LogicalOr : BoolOperands {
  template <class V>
  GN_HD bool operator()(V a, V b) const {
    return a != V(0) || b != V(0);
  }
};

// The binary ops in the order of BinaryOp below: (ops.def name, functor).
// clang-format off
#define GN_SCALAR_BINARY_OPS(X) \
  X(add, Add) X(sub, Sub) X(mul, Mul) X(div, Div) X(pow, Pow) X(maximum, Maximum) X(minimum, Minimum)
// clang-format on
// clang-format off
#define GN_SCALAR_COMPARE_OPS(X) \
  X(eq, Eq) X(ne, Ne) X(lt, Lt) X(le, Le) X(gt, Gt) X(ge, Ge) X(logical_and, LogicalAnd) X(logical_or, LogicalOr)
// clang-format on

// A run-time code for every binary and comparison op (kernels keep one
// instance per dtype and branch on the code: a uniform branch).
enum BinaryOp : int {
#define GN_SCALAR_ENUM(name, F) kBin_##name,
  GN_SCALAR_BINARY_OPS(GN_SCALAR_ENUM) GN_SCALAR_COMPARE_OPS(GN_SCALAR_ENUM)
#undef GN_SCALAR_ENUM
      kBinCount
};
GN_HD bool is_compare(int op) { return op >= kBin_eq; }

// Floating arithmetic for a code < kBin_eq; alpha for add/sub, mode for div.
template <class A>
GN_HD A binary(int op, A a, A b, A alpha, int mode) {
  switch (op) {
    case kBin_add: return Add{}(a, b, alpha);
    case kBin_sub: return Sub{}(a, b, alpha);
    case kBin_mul: return Mul{}(a, b);
    case kBin_div: return Div{}(a, b, mode);
    case kBin_pow: return Pow{}(a, b);
    case kBin_maximum: return Maximum{}(a, b);
    default: return Minimum{}(a, b);
  }
}
// Exact integer arithmetic for a code < kBin_eq (div: b != 0 checked by the caller).
GN_HD int64_t binary_exact(int op, int64_t a, int64_t b, int64_t alpha, int mode) {
  switch (op) {
    case kBin_add: return Add{}.exact(a, b, alpha);
    case kBin_sub: return Sub{}.exact(a, b, alpha);
    case kBin_mul: return Mul{}.exact(a, b);
    case kBin_div: return Div{}.exact(a, b, mode);
    case kBin_pow: return Pow{}.exact(a, b);
    case kBin_maximum: return Maximum{}.exact(a, b);
    default: return Minimum{}.exact(a, b);
  }
}
// A comparison or logical op for a code >= kBin_eq.
template <class V>
GN_HD bool compare(int op, V a, V b) {
  switch (op) {
#define GN_SCALAR_CASE(name, F) \
  case kBin_##name: return F{}(a, b);
    GN_SCALAR_COMPARE_OPS(GN_SCALAR_CASE)
#undef GN_SCALAR_CASE
    default: return false;
  }
}

// ---- reductions: the per-element and finishing steps every backend shares

// What a reduction's kernels must take (after inference): every dtype, every
// dtype but bool (argmax/argmin, as torch), or the float dtypes (inference
// casts or refuses the others).
enum class ReduceInputs { any, numeric, floating };
// The reductions of core/ops/ops.def: (name, inputs), one code each.
// clang-format off
#define GN_SCALAR_REDUCE_OPS(X)                                                                           \
  X(sum, any) X(mean, floating) X(prod, any) X(max, any) X(min, any) X(argmax, numeric) X(argmin, numeric) \
  X(var, floating) X(std, floating) X(logsumexp, floating) X(norm, floating)
// clang-format on
enum class Reduction {
#define GN_SCALAR_REDUCE_ENUM(name, inputs) name,
  GN_SCALAR_REDUCE_OPS(GN_SCALAR_REDUCE_ENUM)
#undef GN_SCALAR_REDUCE_ENUM
};

// argmax/argmin: does v replace the current extreme `best`?  Strictly better
// only (the first occurrence wins); a NaN is the extreme (torch), so the
// first NaN wins and nothing replaces it.
template <class V>
GN_HD bool beats(V v, V best, bool is_max) {
  if (v != v) return !(best != best);
  if (best != best) return false;
  return is_max ? v > best : v < best;
}
// var from the sum of squared deviations ss of n elements (correction: Bessel's 1).
GN_HD double var_finish(double ss, double n, double correction) {
  const double d = n - correction;
  return ss / (d > 0.0 ? d : 0.0);
}
// norm: one element's term of the p-norm's sum (|a| given), finite p.
GN_HD double norm_term(double a, double p) {
  if (p == 0.0) return a != 0.0 ? 1.0 : 0.0;  // NaN != 0 counts
  if (p == 1.0) return a;
  if (p == 2.0) return a * a;
  return m::pow(a, p);
}
// norm: the p-norm from the sum of its terms, finite p.
GN_HD double norm_finish(double acc, double p) {
  if (p == 0.0 || p == 1.0) return acc;
  if (p == 2.0) return m::sqrt(acc);
  return m::pow(acc, 1.0 / p);
}

}  // namespace scalar
}  // namespace gn::sdk
