// backends/cpu/ops/unary.cpp - elementwise unary ops oneDNN lacks or gets
// wrong, as C++ loops over dense x -> y (registered GN_KERNEL_CONTIGUOUS),
// f32 and f64, split over threads in 16K chunks above 32K elements.
//
//   log, log1p, sin, cos     libm per element (oneDNN 2.6's eltwise_log is
//                            ~3e-6 off near 1): f32 uses the float functions
//                            (glibc: < 1 ulp), f64 the double ones
//   rsqrt, reciprocal        1/sqrt(x) in double, 1/x (vectorised: vsqrtpd/vdivps)
//   floor, ceil, round       round is half to even (nearbyint, default mode)
//   sign                     (0 < x) - (x < 0): sign(NaN) = 0 like torch
//   logical_not, isnan, isinf, isfinite -> bool y
// Other dtypes (f16, bf16, integers, bool) are served by the generic path in
// elementwise.cpp.
#include "loops.h"

namespace gn::cpu {
namespace {

enum class U { log, log1p, sin, cos, rsqrt, reciprocal, floor, ceil, round, sign, lnot, isnan, isinf, isfinite };

struct UnaryDef {
  const char* name;
  U op;
  bool to_bool;
};

const UnaryDef kUnary[] = {
    {"log", U::log, false},         {"log1p", U::log1p, false},   {"sin", U::sin, false},
    {"cos", U::cos, false},         {"rsqrt", U::rsqrt, false},   {"reciprocal", U::reciprocal, false},
    {"floor", U::floor, false},     {"ceil", U::ceil, false},     {"round", U::round, false},
    {"sign", U::sign, false},       {"logical_not", U::lnot, true}, {"isnan", U::isnan, true},
    {"isinf", U::isinf, true},      {"isfinite", U::isfinite, true},
};

template <class T, U OP>
void run(const T* x, void* yv, int64_t n) {
  parallel_range(n, [&](int64_t b, int64_t e) {
    if constexpr (OP == U::lnot || OP == U::isnan || OP == U::isinf || OP == U::isfinite) {
      uint8_t* y = (uint8_t*)yv;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        const T v = x[i];
        if constexpr (OP == U::lnot) y[i] = v == T(0);
        if constexpr (OP == U::isnan) y[i] = v != v;
        if constexpr (OP == U::isinf) y[i] = std::fabs(v) == (T)INFINITY;
        if constexpr (OP == U::isfinite) y[i] = std::fabs(v) < (T)INFINITY;
      }
    } else {
      T* y = (T*)yv;
      if constexpr (OP == U::log || OP == U::log1p || OP == U::sin || OP == U::cos) {
        for (int64_t i = b; i < e; ++i) {
          if constexpr (OP == U::log) y[i] = std::log(x[i]);
          if constexpr (OP == U::log1p) y[i] = std::log1p(x[i]);
          if constexpr (OP == U::sin) y[i] = std::sin(x[i]);
          if constexpr (OP == U::cos) y[i] = std::cos(x[i]);
        }
      } else {
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const T v = x[i];
          if constexpr (OP == U::rsqrt) y[i] = (T)(1.0 / std::sqrt((double)v));  // one rounding, as the reference
          if constexpr (OP == U::reciprocal) y[i] = T(1) / v;
          if constexpr (OP == U::floor) y[i] = std::floor(v);
          if constexpr (OP == U::ceil) y[i] = std::ceil(v);
          if constexpr (OP == U::round) y[i] = std::nearbyint(v);
          if constexpr (OP == U::sign) y[i] = (T)((T(0) < v) - (v < T(0)));
        }
      }
    }
  });
}

template <class T>
void run_op(U op, const T* x, void* y, int64_t n) {
  switch (op) {
    case U::log: return run<T, U::log>(x, y, n);
    case U::log1p: return run<T, U::log1p>(x, y, n);
    case U::sin: return run<T, U::sin>(x, y, n);
    case U::cos: return run<T, U::cos>(x, y, n);
    case U::rsqrt: return run<T, U::rsqrt>(x, y, n);
    case U::reciprocal: return run<T, U::reciprocal>(x, y, n);
    case U::floor: return run<T, U::floor>(x, y, n);
    case U::ceil: return run<T, U::ceil>(x, y, n);
    case U::round: return run<T, U::round>(x, y, n);
    case U::sign: return run<T, U::sign>(x, y, n);
    case U::lnot: return run<T, U::lnot>(x, y, n);
    case U::isnan: return run<T, U::isnan>(x, y, n);
    case U::isinf: return run<T, U::isinf>(x, y, n);
    case U::isfinite: return run<T, U::isfinite>(x, y, n);
  }
}

GN_SDK_KERNEL(unary_kernel) {
  const UnaryDef& def = *(const UnaryDef*)ctx->kernel_data;
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, def.name, "expects 1 input and 1 output");
  const gn_tensor_view &x = in[0], &y = out[0];
  const int32_t want = def.to_bool ? GN_BOOL : x.dtype;
  if (y.dtype != want || (x.dtype != GN_F32 && x.dtype != GN_F64))
    return unary_generic(def.name, x, y, attrs, n_attrs);
  const int64_t n = gn_view_numel(&x);
  if (gn_view_numel(&y) != n) fail_op(GN_ERR_SHAPE, def.name, "x and y sizes differ");
  if (x.dtype == GN_F32) run_op<float>(def.op, (const float*)data_of(x), data_of(y), n);
  else run_op<double>(def.op, (const double*)data_of(x), data_of(y), n);
}

}  // namespace

void register_unary(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64};
  for (const UnaryDef& d : kUnary) r.kernel(d.name, dtypes, unary_kernel, GN_KERNEL_CONTIGUOUS, (void*)&d);
}

}  // namespace gn::cpu
