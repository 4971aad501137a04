// plugins/reference/unary.cpp - elementwise unary ops, cast, copy, fill, clamp.
//
// x (any shape, any strides) -> y (x's shape, contiguous).  Every element is
// loaded as double, computed in double and stored in y's dtype; when both x
// and y are integer-like and the op has an integer form, the int64 path is
// used instead so that int64 values beyond 2^53 stay exact.
#include <cmath>
#include <cstdint>

#include "families.h"
#include "util.h"

namespace ref {
namespace {

using gn::sdk::load;
using gn::sdk::store;

// ----------------------------------------------------------------------------
// the table: one row per op

struct UnaryDef {
  const char* name;
  double (*f)(double);
  int64_t (*fi)(int64_t);  // nullptr: no exact integer form
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// torch.sign: (0 < x) - (x < 0), so sign(NaN) = 0 (pytorch/pytorch#41245).
double sign_f(double x) { return (double)((0.0 < x) - (x < 0.0)); }
int64_t sign_i(int64_t x) { return (0 < x) - (x < 0); }

// relu propagates NaN (torch: clamp_min(x, 0)).
double relu_f(double x) { return std::isnan(x) ? x : (x > 0.0 ? x : 0.0); }
int64_t relu_i(int64_t x) { return x > 0 ? x : 0; }

int64_t identity_i(int64_t x) { return x; }

// double -> int64 clamped to the int64 range (for clamp's bounds).
int64_t saturate_i64(double v) {
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

const UnaryDef kUnary[] = {
    {"neg", [](double x) { return -x; }, [](int64_t x) { return wrap_sub(0, x); }},
    {"abs", [](double x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? wrap_sub(0, x) : x; }},
    {"sign", sign_f, sign_i},
    {"exp", [](double x) { return std::exp(x); }, nullptr},
    {"log", [](double x) { return std::log(x); }, nullptr},
    {"log1p", [](double x) { return std::log1p(x); }, nullptr},
    {"sqrt", [](double x) { return std::sqrt(x); }, nullptr},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, nullptr},
    {"sin", [](double x) { return std::sin(x); }, nullptr},
    {"cos", [](double x) { return std::cos(x); }, nullptr},
    {"tanh", [](double x) { return std::tanh(x); }, nullptr},
    {"sigmoid", sigmoid, nullptr},
    {"relu", relu_f, relu_i},
    {"silu", [](double x) { return x * sigmoid(x); }, nullptr},
    {"reciprocal", [](double x) { return 1.0 / x; }, nullptr},
    {"square", [](double x) { return x * x; }, [](int64_t x) { return wrap_mul(x, x); }},
    {"floor", [](double x) { return std::floor(x); }, identity_i},
    {"ceil", [](double x) { return std::ceil(x); }, identity_i},
    // nearbyint under the default rounding mode: half to even, like torch.round.
    {"round", [](double x) { return std::nearbyint(x); }, identity_i},
    {"logical_not", [](double x) { return x == 0.0 ? 1.0 : 0.0; }, [](int64_t x) -> int64_t { return x == 0; }},
    {"isnan", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, nullptr},
    {"isinf", [](double x) { return std::isinf(x) ? 1.0 : 0.0; }, nullptr},
    {"isfinite", [](double x) { return std::isfinite(x) ? 1.0 : 0.0; }, nullptr},
};

const UnaryDef* find_unary(const char* name) {
  for (const UnaryDef& d : kUnary)
    if (std::string(d.name) == name) return &d;
  return nullptr;
}

// ----------------------------------------------------------------------------
// kernels

// x (*) -> y (*): y = f(x); the op comes from ctx->kernel_data (a UnaryDef).
GN_SDK_KERNEL(unary_kernel) {
  const UnaryDef& def = *(const UnaryDef*)ctx->kernel_data;
  need_io(def.name, n_in, 1, n_out, 1);
  const gn_tensor_view& x = in[0];
  const gn_tensor_view& y = out[0];
  const gn_tensor_view* ins[] = {&x};
  if (def.fi && is_intlike(x.dtype) && is_intlike(y.dtype)) {
    for_each_bcast(def.name, y, ins, [&](char* o, const char* const* p) {
      gn::sdk::store_int(o, y.dtype, def.fi(gn::sdk::load_int(p[0], x.dtype)));
    });
  } else {
    for_each_bcast(def.name, y, ins, [&](char* o, const char* const* p) { store(o, y.dtype, def.f(load(p[0], x.dtype))); });
  }
}

// gelu(x; approximate): 0 = x*Phi(x) with erf, 1 = tanh form.
GN_SDK_KERNEL(gelu_kernel) {
  need_io("gelu", n_in, 1, n_out, 1);
  const int64_t approximate = attr_int("gelu", attrs, n_attrs, 0);
  const gn_tensor_view& x = in[0];
  const gn_tensor_view& y = out[0];
  const gn_tensor_view* ins[] = {&x};
  for_each_bcast("gelu", y, ins, [&](char* o, const char* const* p) {
    double v = load(p[0], x.dtype), r;
    if (approximate) {
      const double k = std::sqrt(2.0 / M_PI);
      r = 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    } else {
      r = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    }
    store(o, y.dtype, r);
  });
}

// cast(x; dtype) -> y in dtype (float->int truncates, ->bool is x != 0) and
// copy(x) -> y (x broadcast to y's shape and converted to y's dtype).
GN_SDK_KERNEL(convert_kernel) {
  need_io(ctx->op_name ? ctx->op_name : "cast", n_in, 1, n_out, 1);
  copy_convert(ctx->op_name ? ctx->op_name : "cast", out[0], in[0]);
}

// fill(x; value): every element of x (in place) = value.
GN_SDK_KERNEL(fill_kernel) {
  need_io("fill", n_in, 1, n_out, 0);
  const double value = attr_float("fill", attrs, n_attrs, 0);
  const gn_tensor_view& x = in[0];
  const int64_t n = numel(x);
  for (int64_t i = 0; i < n; ++i) store(gn::sdk::elem_ptr(x, i), x.dtype, value);
}

// clamp(x; min, max) = min(max(x, min), max); NaN in x or a bound propagates.
GN_SDK_KERNEL(clamp_kernel) {
  need_io("clamp", n_in, 1, n_out, 1);
  const double lo = attr_float("clamp", attrs, n_attrs, 0);
  const double hi = attr_float("clamp", attrs, n_attrs, 1);
  const gn_tensor_view& x = in[0];
  const gn_tensor_view& y = out[0];
  const gn_tensor_view* ins[] = {&x};
  const bool exact = is_intlike(x.dtype) && is_intlike(y.dtype) && !std::isnan(lo) && !std::isnan(hi);
  for_each_bcast("clamp", y, ins, [&](char* o, const char* const* p) {
    if (exact) {
      // Integer values stay exact; the float bounds are applied by comparison.
      int64_t v = gn::sdk::load_int(p[0], x.dtype);
      if ((double)v < lo) v = saturate_i64(std::ceil(lo));
      if ((double)v > hi) v = saturate_i64(std::floor(hi));
      gn::sdk::store_int(o, y.dtype, v);
      return;
    }
    double v = load(p[0], x.dtype);
    if (std::isnan(lo) || std::isnan(hi)) v = NAN;
    if (!std::isnan(v)) {
      if (v < lo) v = lo;
      if (v > hi) v = hi;
    }
    store(o, y.dtype, v);
  });
}

}  // namespace

// ----------------------------------------------------------------------------
// registration

void register_unary(const gn::sdk::Registrar& r) {
  auto reg = [&](const char* name, auto& dtypes) {
    r.kernel(name, dtypes, unary_kernel, 0, (void*)find_unary(name));
  };
  reg("neg", kNumericDtypes);
  reg("abs", kNumericDtypes);
  reg("sign", kAllDtypes);
  // Float math: int/bool inputs are computed in double and stored in y's dtype.
  for (const char* name : {"exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "silu",
                           "reciprocal"})
    reg(name, kAllDtypes);
  reg("relu", kNumericDtypes);
  reg("square", kAllDtypes);
  reg("floor", kNumericDtypes);
  reg("ceil", kNumericDtypes);
  reg("round", kNumericDtypes);
  for (const char* name : {"logical_not", "isnan", "isinf", "isfinite"}) reg(name, kAllDtypes);
  r.kernel("gelu", kAllDtypes, gelu_kernel);
  r.kernel("cast", kAllDtypes, convert_kernel);
  r.kernel("copy", kAllDtypes, convert_kernel);
  r.kernel("fill", kAllDtypes, fill_kernel);
  r.kernel("clamp", kNumericDtypes, clamp_kernel);
}

}  // namespace ref
