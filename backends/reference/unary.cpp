// backends/reference/unary.cpp - elementwise unary ops, cast, copy, fill, clamp.
//
// x (any shape, any strides) -> y (x's shape, contiguous).  Every element is
// loaded as double, computed in double and stored in y's dtype; when both x
// and y are integer-like and the op has an integer form, the int64 path is
// used instead so that int64 values beyond 2^53 stay exact.
#include <cmath>
#include <cstdint>

#include "families.h"
#include "genesis/sdk/scalar_tables.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::load;
using gn::sdk::store;

// ----------------------------------------------------------------------------
// the table: one row per op

// One row per op of GN_SCALAR_UNARY_OPS (genesis/sdk/scalar_ops.h).
using UnaryDef = gn::sdk::scalar::UnaryFormula;

// ----------------------------------------------------------------------------
// kernels

// x (*) -> y (*): y = f(x); the op comes from ctx->kernel_data (a UnaryDef).
GN_SDK_KERNEL(unary_kernel) {
  const UnaryDef& def = *(const UnaryDef*)ctx->kernel_data;
  need_io(def.name, n_in, 1, n_out, 1);
  const gn_tensor_view& x = in[0];
  const gn_tensor_view& y = out[0];
  const gn_tensor_view* ins[] = {&x};
  if (def.exact && is_intlike(x.dtype) && is_intlike(y.dtype)) {
    for_each_bcast(def.name, y, ins, [&](char* o, const char* const* p) {
      gn::sdk::store_int(o, y.dtype, def.exact(gn::sdk::load_int(p[0], x.dtype)));
    });
  } else {
    for_each_bcast(def.name, y, ins,
                   [&](char* o, const char* const* p) { store(o, y.dtype, def.f(load(p[0], x.dtype))); });
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
    const double v = load(p[0], x.dtype);
    store(o, y.dtype, approximate ? gn::sdk::scalar::GeluTanh{}(v) : gn::sdk::scalar::GeluErf{}(v));
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
  // Integer values stay exact; the float bounds become integral ones.
  const int64_t ilo = gn::sdk::saturate_i64(std::ceil(lo)), ihi = gn::sdk::saturate_i64(std::floor(hi));
  for_each_bcast("clamp", y, ins, [&](char* o, const char* const* p) {
    if (exact)
      gn::sdk::store_int(o, y.dtype,
                         gn::sdk::scalar::Clamp{}.exact(gn::sdk::load_int(p[0], x.dtype), lo, hi, ilo, ihi));
    else
      store(o, y.dtype, gn::sdk::scalar::Clamp{}(load(p[0], x.dtype), lo, hi));
  });
}

}  // namespace

// ----------------------------------------------------------------------------
// registration

void register_unary(const gn::sdk::Registrar& r) {
  // Every op of the shared list; float math takes int/bool inputs too (computed in double).
  for (const UnaryDef& d : gn::sdk::scalar::kUnaryFormulas) {
    if (d.takes_bool)
      r.kernel(d.name, kAllDtypes, unary_kernel, 0, (void*)&d);
    else
      r.kernel(d.name, kNumericDtypes, unary_kernel, 0, (void*)&d);
  }
  r.kernel("gelu", kAllDtypes, gelu_kernel);
  r.kernel("cast", kAllDtypes, convert_kernel);
  r.kernel("copy", kAllDtypes, convert_kernel);
  r.kernel("fill", kAllDtypes, fill_kernel);
  r.kernel("clamp", kNumericDtypes, clamp_kernel);
}

}  // namespace gn::reference
