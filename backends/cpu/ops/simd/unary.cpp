// backends/cpu/ops/simd/unary.cpp - the elementwise unary ops oneDNN lacks or
// gets wrong, and cast, copy and fill, in C++.
//
// The unary ops: loops over dense x -> y (registered GN_KERNEL_CONTIGUOUS),
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
// generic/unary.cpp.
//
// cast, copy and fill (OpenMP over rows), every dtype: cast(x; dtype) -> y
// and copy(x) -> y (x broadcast to y's shape, converted to y's dtype): any
// strides on both sides (copy is what the core uses to make views contiguous,
// so it must take every layout).  Conversions follow the
// reference exactly: float -> int truncates through int64 (NaN/out of range ->
// 0, then wraps to the narrow type), int -> int wraps, -> bool is x != 0,
// -> f16/bf16 rounds to nearest even from f32 (f64 goes through f32 first, as
// the reference's store does), i64 -> f32 goes through f64 like the reference.
// The inner loop is one dense row with typed pointers, so same-dtype and
// f32<->f64 rows vectorise; a fully dense same-dtype copy is a memcpy.
#include <cstring>

#include "loops.h"
#include "tiers.h"

namespace gn::cpu::simd {
namespace {

// ----------------------------------------------------------------------------
// the f32/f64 loops

enum class U { log, log1p, sin, cos, rsqrt, reciprocal, floor, ceil, round, sign, lnot, isnan, isinf, isfinite };

struct UnaryDef {
  const char* name;
  U op;
  bool to_bool;
};

const UnaryDef kUnary[] = {
    {"log", U::log, false},     {"log1p", U::log1p, false},      {"sin", U::sin, false},
    {"cos", U::cos, false},     {"rsqrt", U::rsqrt, false},      {"reciprocal", U::reciprocal, false},
    {"floor", U::floor, false}, {"ceil", U::ceil, false},        {"round", U::round, false},
    {"sign", U::sign, false},   {"logical_not", U::lnot, true},  {"isnan", U::isnan, true},
    {"isinf", U::isinf, true},  {"isfinite", U::isfinite, true},
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
    return generic::unary(def.name, x, y, attrs, n_attrs);
  const int64_t n = gn_view_numel(&x);
  if (gn_view_numel(&y) != n) fail_op(GN_ERR_SHAPE, def.name, "x and y sizes differ");
  if (x.dtype == GN_F32)
    run_op<float>(def.op, (const float*)data_of(x), data_of(y), n);
  else
    run_op<double>(def.op, (const double*)data_of(x), data_of(y), n);
}

// ----------------------------------------------------------------------------
// cast, copy, fill

// Source element -> the value the reference would hold (double or int64).
template <int32_t SD>
inline auto load_val(typename Storage<SD>::T s) {
  if constexpr (SD == GN_F16 || SD == GN_BF16)
    return (double)to_f32(s);
  else if constexpr (SD == GN_F32 || SD == GN_F64)
    return (double)s;
  else if constexpr (SD == GN_BOOL)
    return (int64_t)(s != 0);
  else
    return (int64_t)s;
}

template <int32_t SD, int32_t DD>
inline typename Storage<DD>::T conv(typename Storage<SD>::T s) {
  using D = typename Storage<DD>::T;
  if constexpr (SD == DD) {
    return s;
  } else if constexpr (SD == GN_F32 && DD == GN_F64) {
    return (double)s;
  } else if constexpr (SD == GN_F64 && DD == GN_F32) {
    return (float)s;
  } else {
    const auto v = load_val<SD>(s);
    if constexpr (DD == GN_BOOL)
      return (uint8_t)(v != 0);
    else if constexpr (DD == GN_F32)
      return (float)(double)v;
    else if constexpr (DD == GN_F64)
      return (double)v;
    else if constexpr (DD == GN_BF16)
      return bf16_t{gn::sdk::float_to_bf16((float)(double)v)};
    else if constexpr (DD == GN_F16)
      return f16_t{gn::sdk::float_to_half((float)(double)v)};
    else if constexpr (std::is_same_v<decltype(v), int64_t>)
      return (D)(uint64_t)v;
    else
      return (D)(uint64_t)gn::sdk::to_int64(v);
  }
}

// y = convert(x broadcast to y's shape).
template <int32_t SD, int32_t DD>
void convert_views(const gn_tensor_view& x, const gn_tensor_view& y) {
  using S = typename Storage<SD>::T;
  using D = typename Storage<DD>::T;
  const S* px = (const S*)data_of(x);
  D* py = (D*)data_of(y);
  const int64_t n = gn_view_numel(&y);
  if (n == 0) return;
  if (gn_view_numel(&x) == n && is_dense(x) && is_dense(y)) {
    if constexpr (SD == DD) {
      if (n * (int64_t)sizeof(S) < (int64_t(4) << 20)) {
        copy_bytes(py, px, (size_t)n * sizeof(S));
        return;
      }
    }
    parallel_range(n, [&](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) py[i] = conv<SD, DD>(px[i]);
    });
    return;
  }
  // Broadcast x's strides to y's rank (0 where x has size 1 or lacks the dim).
  const int32_t R = y.ndim;
  std::vector<int64_t> xs((size_t)R, 0);
  for (int32_t d = 0; d < R; ++d) {
    const int32_t xd = d - (R - x.ndim);
    if (xd >= 0 && x.shape[xd] != 1) xs[(size_t)d] = x.strides[xd];
  }
  const int64_t inner = y.shape[R - 1];
  const int64_t ix = xs[(size_t)R - 1], iy = y.strides[R - 1];
  const int64_t rows = n / inner;
  parallel_for(rows, inner, [&](int64_t r) {
    int64_t ox = 0, oy = 0, rem = r;
    for (int32_t d = R - 2; d >= 0; --d) {
      const int64_t i = rem % y.shape[d];
      rem /= y.shape[d];
      ox += i * xs[(size_t)d];
      oy += i * y.strides[d];
    }
    const S* a = px + ox;
    D* o = py + oy;
    if (ix == 1 && iy == 1) {
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j) o[j] = conv<SD, DD>(a[j]);
    } else if (ix == 0 && iy == 1) {
      const D v = conv<SD, DD>(a[0]);
      for (int64_t j = 0; j < inner; ++j) o[j] = v;
    } else {
      for (int64_t j = 0; j < inner; ++j) o[j * iy] = conv<SD, DD>(a[j * ix]);
    }
  });
}

GN_SDK_KERNEL(convert_kernel) {
  const char* op = ctx->op_name ? ctx->op_name : "cast";
  if (n_in < 1 || n_out < 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "expects 1 input and 1 output");
  const gn_tensor_view &x = in[0], &y = out[0];
  if (x.ndim > y.ndim) fail_op(GN_ERR_SHAPE, op, "input rank exceeds the output's");
  for (int32_t d = 0; d < x.ndim; ++d) {
    const int64_t s = x.shape[d], t = y.shape[d + y.ndim - x.ndim];
    if (s != t && s != 1) fail_op(GN_ERR_SHAPE, op, "input does not broadcast to the output");
  }
  for (int32_t d = 0; d < y.ndim; ++d)
    if (y.shape[d] > 1 && y.strides[d] <= 0) GN_UNSUPPORTED(std::string("[") + op + "] output layout");
  if (y.ndim == 0) {  // 0-d: one element
    bool ok = dispatch_dtype(x.dtype, [&](auto s) {
      dispatch_dtype(y.dtype, [&](auto d) {
        using S = typename Storage<decltype(s)::value>::T;
        using D = typename Storage<decltype(d)::value>::T;
        *(D*)data_of(y) = conv<decltype(s)::value, decltype(d)::value>(*(const S*)data_of(x));
      });
    });
    if (!ok) GN_UNSUPPORTED(std::string("[") + op + "] dtype");
    return;
  }
  bool ok = false;
  dispatch_dtype(x.dtype, [&](auto s) {
    ok = dispatch_dtype(y.dtype, [&](auto d) { convert_views<decltype(s)::value, decltype(d)::value>(x, y); });
  });
  if (!ok) GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(x.dtype) + " -> " + gn_dtype_name(y.dtype));
}

// fill(x; value) in place: value converted once to x's dtype as the reference
// stores it (through double), then written over every element.
template <int32_t DT>
void fill_view(const gn_tensor_view& x, double value) {
  using T = typename Storage<DT>::T;
  T v;
  gn::sdk::store(&v, DT, value);
  T* p = (T*)data_of(x);
  const int64_t n = gn_view_numel(&x);
  if (n == 0) return;
  if (is_dense(x)) {
    parallel_range(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = v;
    });
    return;
  }
  const int32_t R = x.ndim;
  const int64_t inner = x.shape[R - 1], is = x.strides[R - 1];
  parallel_for(n / inner, inner, [&](int64_t r) {
    int64_t off = 0, rem = r;
    for (int32_t d = R - 2; d >= 0; --d) {
      off += (rem % x.shape[d]) * x.strides[d];
      rem /= x.shape[d];
    }
    for (int64_t j = 0; j < inner; ++j) p[off + j * is] = v;
  });
}

GN_SDK_KERNEL(fill_kernel) {
  if (n_in < 1) fail_op(GN_ERR_INVALID_ARGUMENT, "fill", "expects 1 input");
  const double value = attr_d(attrs, n_attrs, 0, 0.0);
  const gn_tensor_view& x = in[0];
  if (x.ndim == 0) {
    gn::sdk::store(data_of(x), x.dtype, value);
    return;
  }
  for (int32_t d = 0; d < x.ndim; ++d)
    if (x.shape[d] > 1 && x.strides[d] <= 0) GN_UNSUPPORTED("[fill] layout");
  if (!dispatch_dtype(x.dtype, [&](auto d) { fill_view<decltype(d)::value>(x, value); }))
    GN_UNSUPPORTED("[fill] dtype");
}

}  // namespace

void register_unary(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64};
  for (const UnaryDef& d : kUnary) r.kernel(d.name, dtypes, unary_kernel, GN_KERNEL_CONTIGUOUS, (void*)&d);
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("cast", all, convert_kernel);
  r.kernel("copy", all, convert_kernel);
  r.kernel("fill", all, fill_kernel);
}

}  // namespace gn::cpu::simd
