// backends/reference/cumulative.cpp - cumsum, cumprod, logcumsumexp, cummax and cummin along
// one dim.
//
// Each line along `dim` is walked in order (from its end with reverse=1).  Floating sums and
// products accumulate in double and each output is rounded once (torch's CPU accumulation
// type); integer ones are exact int64 with two's complement wrapping.  logcumsumexp adds with
// torch's log-add-exp step (log1p(exp(min - max)) + max; equal infinities pass through).
// cummax/cummin keep the later index on ties, and a NaN wins and propagates (torch's rule).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

// Fail unless o has x's shape.
void check_same(const char* op, const gn_tensor_view& o, const gn_tensor_view& x) {
  bool ok = o.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d) ok = o.shape[d] == x.shape[d];
  if (!ok) fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match input " + shape_str(x));
}

// f(px, po, L) for every line of x along dim, with the matching line of o (and of o2 if given);
// pointers ordered along the line (reversed with reverse).
template <class F>
void for_each_line(const gn_tensor_view& x, const gn_tensor_view& o, const gn_tensor_view* o2, int32_t dim,
                   bool reverse, F&& f) {
  const Groups gx = line_groups(x, dim), go = line_groups(o, dim);
  Groups g2;
  if (o2) g2 = line_groups(*o2, dim);
  std::vector<const char*> px, po, p2;
  for (int64_t k = 0; k < gx.outer_n; ++k) {
    gx.pointers(k, px);
    go.pointers(k, po);
    if (o2) g2.pointers(k, p2);
    if (reverse) {
      std::reverse(px.begin(), px.end());
      std::reverse(po.begin(), po.end());
      std::reverse(p2.begin(), p2.end());
    }
    f(px, po, p2);
  }
}

// torch's _log_add_exp_helper: log(exp(x) + exp(y)), stable.
double log_add_exp(double x, double y) {
  const double lo = std::isnan(y) ? y : std::min(x, y), hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;  // both the same infinity
}

// cumsum (prod=false) / cumprod (prod=true) (x; dim, dtype, reverse) -> y of x's dtype (the
// dtype cast happened in inference).
void cum_sum_prod(const char* op, bool prod, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                  size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 1);
  const gn_tensor_view &x = in[0], &o = out[0];
  check_same(op, o, x);
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const bool reverse = attr_int(op, attrs, n_attrs, 2) != 0;
  const bool exact = is_intlike(x.dtype) && is_intlike(o.dtype);
  for_each_line(x, o, nullptr, dim, reverse, [&](const auto& px, const auto& po, const auto&) {
    int64_t iacc = prod ? 1 : 0;
    double acc = prod ? 1.0 : 0.0;
    for (size_t j = 0; j < px.size(); ++j) {
      if (exact) {
        const int64_t v = gn::sdk::load_int(px[j], x.dtype);
        iacc = prod ? wrap_mul(iacc, v) : wrap_add(iacc, v);
        gn::sdk::store_int((char*)po[j], o.dtype, iacc);
      } else {
        const double v = gn::sdk::load(px[j], x.dtype);
        acc = prod ? acc * v : acc + v;
        gn::sdk::store((char*)po[j], o.dtype, acc);
      }
    }
  });
}

GN_SDK_KERNEL(cumsum_kernel) { cum_sum_prod("cumsum", false, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cumprod_kernel) { cum_sum_prod("cumprod", true, in, n_in, out, n_out, attrs, n_attrs); }

// logcumsumexp(x; dim, dtype, reverse) -> y = log(cumsum(exp(x))).
GN_SDK_KERNEL(logcumsumexp_kernel) {
  const char* op = "logcumsumexp";
  need_io(op, n_in, 1, n_out, 1);
  const gn_tensor_view &x = in[0], &o = out[0];
  check_same(op, o, x);
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const bool reverse = attr_int(op, attrs, n_attrs, 2) != 0;
  for_each_line(x, o, nullptr, dim, reverse, [&](const auto& px, const auto& po, const auto&) {
    double acc = -INFINITY;
    for (size_t j = 0; j < px.size(); ++j) {
      acc = log_add_exp(gn::sdk::load(px[j], x.dtype), acc);
      gn::sdk::store((char*)po[j], o.dtype, acc);
    }
  });
}

// cummax (max=true) / cummin (x; dim) -> (values, int64 indices): the running extreme and the
// index where it was last reached; a NaN replaces the running value and stays.
void cum_extreme(const char* op, bool max, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                 size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 2);
  const gn_tensor_view &x = in[0], &v = out[0], &ix = out[1];
  check_same(op, v, x);
  check_same(op, ix, x);
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const bool exact = is_intlike(x.dtype);
  for_each_line(x, v, &ix, dim, false, [&](const auto& px, const auto& pv, const auto& pi) {
    int64_t best_i = 0, best_int = 0;
    double best = 0;
    for (size_t j = 0; j < px.size(); ++j) {
      bool take = j == 0;
      if (exact) {
        const int64_t cur = gn::sdk::load_int(px[j], x.dtype);
        take = take || (max ? cur >= best_int : cur <= best_int);
        if (take) best_int = cur;
      } else {
        const double cur = gn::sdk::load(px[j], x.dtype);
        take = take || std::isnan(cur) || (!std::isnan(best) && (max ? cur >= best : cur <= best));
        if (take) best = cur;
      }
      if (take) best_i = (int64_t)j;
      convert_elem((char*)pv[j], v.dtype, px[(size_t)best_i], x.dtype);
      gn::sdk::store_int((char*)pi[j], ix.dtype, best_i);
    }
  });
}

GN_SDK_KERNEL(cummax_kernel) { cum_extreme("cummax", true, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cummin_kernel) { cum_extreme("cummin", false, in, n_in, out, n_out, attrs, n_attrs); }

}  // namespace

void register_cumulative(const gn::sdk::Registrar& r) {
  r.kernel("cumsum", kNumericDtypes, cumsum_kernel);
  r.kernel("cumprod", kNumericDtypes, cumprod_kernel);
  r.kernel("logcumsumexp", kFloatingDtypes, logcumsumexp_kernel);
  r.kernel("cummax", kAllDtypes, cummax_kernel);
  r.kernel("cummin", kAllDtypes, cummin_kernel);
}

}  // namespace gn::reference
