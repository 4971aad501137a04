// rules_scan.cpp - the gradient rules of cumsum, cumprod, logcumsumexp, scatter_reduce and of
// median() / nanmedian() over everything (torch's formulas, FunctionsManual.cpp), written
// with other ops like the rules in rules.cpp.  cummax/cummin use take_along (rules.cpp).
#include <limits>

#include "../internal.h"
#include "genesis/nn/functional.hpp"
#include "rules.h"

namespace genesis::autograd::rules {

using V = std::vector<Tensor>;

namespace {

bool needs(const Node& n, size_t i) { return i < n.next.size() && n.next[i] != nullptr; }

// cumsum / cumprod / logcumsumexp of t along dim (reverse: from the end), not recorded.
Tensor scan(const char* op, const Tensor& t, int64_t dim, bool reverse) {
  return detail::call1(detail::find_op(op), {&t}, {gn_attr_int(dim), gn_attr_int(GN_DIM_NONE), gn_attr_int(reverse)});
}

Tensor zero_like_scalar(const Tensor& t) { return zeros({}, {.dtype = t.dtype(), .device = t.device()}); }
Tensor one_like_scalar(const Tensor& t) { return ones({}, {.dtype = t.dtype(), .device = t.device()}); }

Tensor logical_and(const Tensor& a, const Tensor& b) { return detail::call1(GN_OP_HANDLE("logical_and"), {&a, &b}); }

// scatter_reduce of the op (attributes as the node kept them), not recorded.
Tensor scatter_reduce_op(const Node& n, const Tensor& x, const Tensor& index, const Tensor& src) {
  return detail::call1(
      GN_OP_HANDLE("scatter_reduce"), {&x, &index, &src},
      {gn_attr_int(n.attr_int("dim")), gn_attr_int(n.attr_int("reduce")), gn_attr_int(n.attr_int("include_self"))});
}

}  // namespace

// The gradient of a running sum is the running sum from the other end.
V cumsum(Node& n, const Tensor& g) { return {scan("cumsum", g, n.attr_int("dim"), n.attr_int("reverse") == 0)}; }

// torch's cumprod_backward (its first-order path): before the first zero of a line,
// sum_{j>=k} g_j y_j / x_k; at the first zero z, y_{z-1} sum over [z, next zero) of g_k times the
// product of x over (z, k]; 0 after it.
V cumprod(Node& n, const Tensor& g) {
  const Tensor& y = n.saved("out");
  const Tensor x = n.saved("x").to(y.dtype());
  const int64_t dim = n.attr_int("dim");
  if (n.attr_int("reverse")) throw Error(GN_ERR_UNSUPPORTED, "[cumprod] no gradient with reverse=1");
  if (x.dim() == 0 || x.size(dim) <= 1) return {g};
  const int64_t d = detail::wrap_dim(dim, x.dim()), L = x.size(d);
  const Tensor zero = zero_like_scalar(y), one = one_like_scalar(y);
  const Tensor is_zero = x == Scalar(0);
  const Tensor zeros_so_far = scan("cumsum", is_zero, d, false);  // int64
  const Tensor before = zeros_so_far == Scalar(0);
  Tensor grad = where(before, scan("cumsum", where(before, y * g, zero), d, true) / where(before, x, one), zero);
  const Tensor one_zero = zeros_so_far == Scalar(1);
  const Tensor first = logical_and(is_zero, one_zero);
  const Tensor after_first = logical_and(one_zero, first.logical_not());
  const Tensor prods = scan("cumprod", where(after_first, x, one), d, false);
  const Tensor s = (prods * where(one_zero, g, zero)).sum(d, true);
  const Tensor shifted = nn::functional::cat({ones_like(y.slice(d, 0, 1)), y.slice(d, 0, L - 1)}, d);
  return {grad + where(first, s * shifted, zero)};
}

// torch's logcumsumexp_backward: the positive and negative parts of g through a reversed
// logcumsumexp in log space.
V logcumsumexp(Node& n, const Tensor& g) {
  const Tensor &x = n.saved("x"), &y = n.saved("out");
  const int64_t dim = n.attr_int("dim");
  const bool back = n.attr_int("reverse") == 0;
  double lowest = -std::numeric_limits<double>::max();
  if (g.dtype() == DType::f32) lowest = -std::numeric_limits<float>::max();
  if (g.dtype() == DType::f16) lowest = -65504.0;
  if (g.dtype() == DType::bf16) lowest = -3.3895313892515355e38;
  const Tensor low = full({}, lowest, {.dtype = g.dtype(), .device = g.device()});
  const Tensor log_abs = g.abs().log();
  const Tensor pos = where(g > Scalar(0), log_abs, low), neg = where(g < Scalar(0), log_abs, low);
  return {(scan("logcumsumexp", pos - y, dim, back) + x).exp() - (scan("logcumsumexp", neg - y, dim, back) + x).exp()};
}

// torch's scatter_reduce_backward: inputs (x, index, src).
V scatter_reduce(Node& n, const Tensor& g) {
  const Tensor &x = n.saved("x"), &idx = n.saved("index"), &src = n.saved("src"), &out = n.saved("out");
  const int64_t dim = n.attr_int("dim"), reduce = n.attr_int("reduce");
  const bool include_self = n.attr_int("include_self") != 0;
  const Tensor zero = zero_like_scalar(g);
  Tensor gx, gs;
  if (reduce == 0) {  // sum
    gx = g;
    gs = g.gather(dim, idx);
  } else if (reduce == 1) {  // prod: the products without each factor, zeros handled one at a time
    const Tensor x1 = x.masked_fill(x == Scalar(0), 1);
    gx = g * scatter_reduce_op(n, x1, idx, src) / x1;
    const Tensor src_zero = src == Scalar(0);
    const Tensor zeros_at = scatter_add(zeros_like(x), dim, idx, src_zero.to(x.dtype())).gather(dim, idx);
    const Tensor single = logical_and(src_zero, zeros_at == Scalar(1));
    const Tensor without = scatter_reduce_op(n, x, idx, src.masked_fill(single, 1));
    gs = where(single, (g * without).gather(dim, idx), (g * out).gather(dim, idx) / src.masked_fill(src_zero, 1));
  } else if (reduce == 2) {  // mean
    Tensor count = include_self ? ones_like(g) : zeros_like(g);
    count = scatter_add(count, dim, idx, ones_like(src));
    count = count.masked_fill(count == Scalar(0), 1);
    gx = g / count;
    gs = g.gather(dim, idx) / count.gather(dim, idx);
  } else {  // amax / amin: split evenly among the elements equal to the result
    const Tensor value = out.gather(dim, idx);
    const Tensor x_hit = (x == out).to(g.dtype()), src_hit = (src == value).to(g.dtype());
    const Tensor share = g / scatter_add(x_hit, dim, idx, src_hit);
    gx = x_hit * share;
    gs = src_hit * share.gather(dim, idx);
  }
  if (!include_self)
    gx = genesis::scatter(gx, dim, idx, zeros(idx.shape(), {.dtype = gx.dtype(), .device = gx.device()}));
  return {needs(n, 0) ? gx : Tensor(), Tensor(), needs(n, 2) ? gs : Tensor()};
}

// median() and nanmedian() over everything: the gradient split evenly among the elements equal
// to the result (all the nans when it is nan), as torch's evenly_distribute_backward.
V median_all(Node& n, const Tensor& g) {
  const Tensor &x = n.saved("x"), &out = n.saved("out");
  const Tensor hit = where(out.isnan(), x.isnan(), x == out).to(g.dtype());
  return {hit * (g / hit.sum())};
}

}  // namespace genesis::autograd::rules
