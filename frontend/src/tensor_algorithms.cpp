// tensor_algorithms.cpp - cumsum, cumprod, logcumsumexp, cummax, cummin, searchsorted and
// scatter_reduce (ops of ops.def, recorded for autograd; rules in autograd/rules_scan.cpp), and
// the compositions kthvalue, median, nanmedian, mode, unique, unique_consecutive, bincount,
// histc and bucketize.
//
// The order statistics find their indices without recording (a stable sort, then positions
// computed with tensor ops, so every device runs them without a copy to the host), then gather
// the values from x: the gradient goes to the returned index, as torch's
// value_selecting_reduction_backward.  unique and bincount read sizes on the host (as torch).
#include <cmath>
#include <limits>

#include "autograd/rules.h"
#include "genesis/nn/functional.hpp"
#include "genesis/tensor_algorithms.hpp"
#include "internal.h"

namespace genesis {

using autograd::record;
using detail::call;
using detail::call1;
namespace R = autograd::rules;
namespace F = nn::functional;

namespace {

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

// dim wrapped against x's rank (a 0-d x takes 0 and -1), or IndexError as torch words it.
int64_t wrap_dim_or_throw(int64_t dim, int64_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n)
    throw Error(GN_ERR_INDEX, "Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                                  std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

gn_attr_value dtype_attr(std::optional<DType> d) { return gn_attr_int(d ? static_cast<int64_t>(*d) : GN_DIM_NONE); }

// cumsum / cumprod / logcumsumexp: the op, recorded with its attributes.
Tensor cumulative(const char* name, autograd::Rule rule, const Tensor& x, int64_t dim, std::optional<DType> dtype,
                  bool save) {
  const gn_op* op = detail::find_op(name);
  const auto attrs = {gn_attr_int(dim), dtype_attr(dtype), gn_attr_int(0)};
  Tensor y = call1(op, {&x}, attrs);
  if (auto n = record(name, rule, {x}, y)) {
    n->keep_attrs(op, attrs);
    if (save) {
      n->save("x", x.detach());
      n->save("out", y.detach());
    }
  }
  return y;
}

std::pair<Tensor, Tensor> cum_extreme(const char* name, const Tensor& x, int64_t dim) {
  const gn_op* op = detail::find_op(name);
  auto out = call(op, {&x}, {gn_attr_int(dim)}, 2);
  if (auto n = record(name, R::take_along, {x}, out[0])) {
    n->save("indices", out[1]);
    n->keep_attrs(op, {gn_attr_int(dim)});
  }
  return {out[0], out[1]};
}

// "[2, 3]" as torch prints sizes in messages.
std::string dims_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// x, or a 0-d x as a one-element 1-D view (recorded): the order statistics work on lines.
Tensor as_lines(const Tensor& x) { return x.dim() ? x : x.reshape({1}); }

// (values, indices) of x at int64 positions `idx` (keepdim shape, computed on as_lines(x))
// along d: values gathered from x (recorded: the gradient reaches idx), both squeezed unless
// keepdim; a 0-d x gives 0-d results.
std::pair<Tensor, Tensor> select_at(const Tensor& x, int64_t d, const Tensor& idx, bool keepdim) {
  Tensor v = as_lines(x).gather(d, idx);
  if (x.dim() == 0) return {v.reshape({}), idx.reshape({})};
  if (keepdim) return {v, idx};
  return {v.squeeze(d), idx.squeeze(d)};
}

// Positions 0..L-1 along dim d of a rank-r tensor, shaped to broadcast (1, ..., L, ..., 1).
Tensor positions(int64_t L, int64_t d, int64_t r, const Device& dev) {
  Shape s(static_cast<size_t>(std::max<int64_t>(r, 1)), 1);
  s[static_cast<size_t>(d)] = L;
  return arange(0, static_cast<double>(L), 1, {.dtype = DType::i64, .device = dev}).reshape(s);
}

// An int64 0-d tensor holding v on dev.
Tensor i64(int64_t v, const Device& dev) {
  return full({}, static_cast<double>(v), {.dtype = DType::i64, .device = dev});
}

// Floor division of non-negative integer tensors by a number.
Tensor floor_div(const Tensor& a, int64_t b) {
  Tensor bb = i64(b, a.device());
  return call1(GN_OP_HANDLE("div"), {&a, &bb}, {gn_attr_int(2)});
}

void need_reduction_dim(const char* op, const Tensor& x, int64_t d) {
  if (x.dim() > 0 && x.size(d) == 0)
    throw Error(GN_ERR_INDEX,
                std::string(op) + "(): Expected reduction dim " + std::to_string(d) + " to have non-zero size.");
}

// Values and ids of the runs of equal consecutive elements of a 1-D tensor.
struct Runs {
  Tensor is_start;  // bool (n): a run starts here
  Tensor starts;    // int64 (runs): positions of the starts
};
Runs runs_of(const Tensor& flat) {
  const int64_t n = flat.numel();
  Runs r;
  Tensor first = full({1}, 1, {.dtype = DType::boolean, .device = flat.device()});
  r.is_start = n > 1 ? F::cat({first, flat.slice(0, 1, n) != flat.slice(0, 0, n - 1)}, 0) : first;
  r.starts = r.is_start.nonzero().reshape({-1});
  return r;
}

// unique / unique_consecutive of a 1-D tensor `s` (sorted or as given); order maps positions of
// s to positions of the flattened input (empty: the identity).
UniqueResult unique_of(const Tensor& s, const Tensor& order, const Shape& shape, bool inverse, bool counts) {
  const int64_t n = s.numel();
  const Device dev = s.device();
  UniqueResult u;
  if (n == 0) {
    u.values = s;
    if (inverse) u.inverse = zeros(shape, {.dtype = DType::i64, .device = dev});
    if (counts) u.counts = zeros({0}, {.dtype = DType::i64, .device = dev});
    return u;
  }
  const Runs r = runs_of(s);
  u.values = s.index_select(0, r.starts);
  if (inverse) {
    Tensor gid = cumsum(r.is_start, 0) - Scalar(1);  // run id of each position of s
    if (order.defined()) gid = scatter(zeros({n}, {.dtype = DType::i64, .device = dev}), 0, order, gid);
    u.inverse = gid.reshape(shape);
  }
  if (counts) {
    const int64_t k = r.starts.numel();
    Tensor ends = F::cat({r.starts.slice(0, 1, k), i64(n, dev).reshape({1})}, 0);
    u.counts = ends - r.starts;
  }
  return u;
}

}  // namespace

// ---- ops of ops.def

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumulative("cumsum", R::cumsum, x, dim, dtype, false);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumulative("cumprod", R::cumprod, x, dim, dtype, true);
}
Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  return cumulative("logcumsumexp", R::logcumsumexp, x, dim, std::nullopt, true);
}
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) { return cum_extreme("cummax", x, dim); }
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) { return cum_extreme("cummin", x, dim); }

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right, bool out_int32,
                    const Tensor& sorter) {
  Tensor seq = sorted_sequence;
  if (sorter.defined()) {
    if (sorter.shape() != seq.shape())
      throw invalid("torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor " +
                    dims_str(seq.shape()) + " and got sorter tensor " + dims_str(sorter.shape()));
    seq = seq.gather(-1, sorter);
  }
  bool fits = seq.dim() == 1 || seq.dim() == values.dim();
  for (int64_t d = 0; fits && seq.dim() > 1 && d + 1 < seq.dim(); ++d) fits = seq.size(d) == values.size(d);
  if (!fits)
    throw invalid(
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
        "boundaries tensor and input value tensor must match, but we got boundaries tensor " +
        dims_str(seq.shape()) + " and input value tensor " + dims_str(values.shape()));
  NoGradGuard ng;
  return call1(GN_OP_HANDLE("searchsorted"), {&seq, &values}, {gn_attr_int(right), gn_attr_int(out_int32)});
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right, bool out_int32) {
  if (boundaries.dim() != 1)
    throw invalid("boundaries tensor must be 1 dimension, but got dim(" + std::to_string(boundaries.dim()) + ")");
  return searchsorted(boundaries, x, right, out_int32);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  static const char* const kNames[] = {"sum", "prod", "mean", "amax", "amin"};
  int64_t code = -1;
  for (int64_t i = 0; i < 5; ++i)
    if (reduce == kNames[i]) code = i;
  if (code < 0) throw invalid("reduce argument must be either sum, prod, mean, amax or amin.");
  const gn_op* op = GN_OP_HANDLE("scatter_reduce");
  const auto attrs = {gn_attr_int(dim), gn_attr_int(code), gn_attr_int(include_self ? 1 : 0)};
  Tensor y = call1(op, {&x, &index, &src}, attrs);
  if (auto n = record("scatter_reduce", R::scatter_reduce, {x, index, src}, y)) {
    n->save("x", x.detach());
    n->save("index", index.detach());
    n->save("src", src.detach());
    n->save("out", y.detach());
    n->keep_attrs(op, attrs);
  }
  return y;
}

// ---- order statistics

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim_or_throw(dim, x.dim()), L = x.dim() ? x.size(d) : 1;
  if (k < 1 || k > L) throw invalid("kthvalue(): selected number k out of range for dimension " + std::to_string(d));
  Tensor idx;
  {
    NoGradGuard ng;
    idx = as_lines(x).argsort(d).slice(d, k - 1, k);
  }
  return select_at(x, d, idx, keepdim);
}

std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim_or_throw(dim, x.dim());
  need_reduction_dim("median", x, d);
  const int64_t L = x.dim() ? x.size(d) : 1;
  Tensor idx;
  {
    NoGradGuard ng;
    const Tensor xs = as_lines(x);
    idx = xs.argsort(d).slice(d, (L - 1) / 2, (L - 1) / 2 + 1);
    if (is_floating(x.dtype())) {  // a line with a nan: its first nan
      Tensor nan = xs.isnan().to(DType::i64);
      idx = where(nan.max(d, true) > Scalar(0), nan.argmax(d, true), idx);
    }
  }
  return select_at(x, d, idx, keepdim);
}

std::pair<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  if (!is_floating(x.dtype())) return median(x, dim, keepdim);
  const int64_t d = wrap_dim_or_throw(dim, x.dim());
  need_reduction_dim("nanmedian", x, d);
  Tensor idx;
  {
    NoGradGuard ng;
    const Tensor xs = as_lines(x);
    Tensor order = xs.argsort(d);                                         // nans last
    Tensor count = xs.isnan().logical_not().to(DType::i64).sum(d, true);  // non-nan per line
    Tensor pos = where(count > Scalar(0), floor_div(count - Scalar(1), 2), zeros_like(count));
    idx = order.gather(d, pos);
  }
  return select_at(x, d, idx, keepdim);
}

namespace {
// median() / nanmedian() over everything: the value at the lower-median position (nan rules
// of the op), recorded so that the gradient is split evenly among the elements equal to it.
Tensor median_all(const Tensor& x, bool ignore_nan) {
  Tensor out;
  {
    NoGradGuard ng;
    if (x.numel() == 0) {
      out = full({}, std::nan(""), {.dtype = x.dtype(), .device = x.device()});
    } else {
      Tensor flat = x.reshape({-1});
      out = (ignore_nan ? nanmedian(flat, 0) : median(flat, 0)).first;
    }
  }
  if (auto n = record(ignore_nan ? "nanmedian" : "median", R::median_all, {x}, out)) {
    n->save("x", x.detach());
    n->save("out", out.detach());
  }
  return out;
}
}  // namespace

Tensor median(const Tensor& x) { return median_all(x, false); }
Tensor nanmedian(const Tensor& x) { return median_all(x, is_floating(x.dtype())); }

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim_or_throw(dim, x.dim());
  need_reduction_dim("mode", x, d);
  Tensor idx;
  {
    NoGradGuard ng;
    const Tensor xs = as_lines(x);
    const int64_t L = xs.size(d);
    auto sorted = xs.sort(d);
    const Tensor &s = sorted.first, &order = sorted.second;
    // Run lengths along the sorted line: position - start of its run + 1; the mode is the run
    // that first reaches the longest length (the smallest value among the most frequent), and
    // the stable sort puts its last original index at that position.
    Tensor first = ones_like(s.slice(d, 0, 1), {.dtype = DType::boolean});
    Tensor is_start = L > 1 ? F::cat({first, s.slice(d, 1, L) != s.slice(d, 0, L - 1)}, d) : first;
    Tensor pos = positions(L, d, xs.dim(), xs.device()).expand(s.shape());
    Tensor start = cummax(where(is_start, pos, zeros_like(pos)), d).first;
    Tensor len = pos - start;
    Tensor at = (len == len.max(d, true)).to(DType::i64).argmax(d, true);
    idx = order.gather(d, at);
  }
  return select_at(x, d, idx, keepdim);
}

// ---- unique, counting, histograms

UniqueResult unique(const Tensor& x, bool /*sorted*/, bool return_inverse, bool return_counts) {
  NoGradGuard ng;
  const Tensor flat = x.detach().reshape({-1});
  if (flat.numel() == 0) return unique_of(flat, Tensor(), x.shape(), return_inverse, return_counts);
  auto sorted = flat.sort(0);
  return unique_of(sorted.first, sorted.second, x.shape(), return_inverse, return_counts);
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts) {
  NoGradGuard ng;
  return unique_of(x.detach().reshape({-1}), Tensor(), x.shape(), return_inverse, return_counts);
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  NoGradGuard ng;
  const DType dt = x.dtype();
  if (x.dim() != 1 || !(dt == DType::i8 || dt == DType::u8 || dt == DType::i32 || dt == DType::i64))
    throw invalid("bincount only supports 1-d non-negative integral inputs.");
  if (minlength < 0) throw invalid("minlength should be >= 0");
  if (weights.defined() && (weights.dim() != 1 || weights.size(0) != x.size(0)))
    throw invalid("weights should be 1-d and have the same length as input");
  int64_t size = minlength;
  if (x.numel() > 0) {
    if (x.min().item_double() < 0) throw invalid("bincount only supports 1-d non-negative integral inputs.");
    size = std::max<int64_t>(size, static_cast<int64_t>(x.max().item_double()) + 1);
  }
  const DType out = !weights.defined() ? DType::i64 : weights.dtype() == DType::f32 ? DType::f32 : DType::f64;
  Tensor w = weights.defined() ? weights.detach().to(out) : ones({x.size(0)}, {.dtype = out, .device = x.device()});
  return index_add(zeros({size}, {.dtype = out, .device = x.device()}), 0, x, w);
}

Tensor histc(const Tensor& x, int64_t bins, double min, double max) {
  NoGradGuard ng;
  if (!is_floating(x.dtype()))
    throw Error(GN_ERR_DTYPE,
                std::string("torch.histc: input must be a floating-point tensor, got ") + dtype_name(x.dtype()));
  if (bins <= 0)
    throw invalid("torch.histogram(): bins must be > 0, but got " + std::to_string(bins) + " for dimension 0");
  double lo = min, hi = max;
  if (lo == hi && x.numel() > 0) {
    lo = x.min().item_double();
    hi = x.max().item_double();
  }
  if (lo == hi) lo -= 1, hi += 1;
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "torch.histc: range of [%g, %g] is not finite", lo, hi);
    throw invalid(buf);
  }
  if (lo > hi) throw invalid("torch.histc: max must be larger than min");
  // torch's bin of an element: (x - left) * bins / (right - left) in x's dtype, the edges
  // rounded to it first; the right edge belongs to the last bin.
  const Options o{.dtype = x.dtype(), .device = x.device()};
  Tensor left = full({}, lo, o), right = full({}, hi, o);
  Tensor in = ((x >= left).to(DType::i64) * (x <= right).to(DType::i64)) > Scalar(0);
  Tensor pos = ((x - left) * Scalar(bins) / (right - left));
  Tensor b = where(in, pos, zeros_like(pos)).to(DType::i64).clamp(0, static_cast<double>(bins - 1));
  return index_add(zeros({bins}, o), 0, b.reshape({-1}), in.to(x.dtype()).reshape({-1}));
}

}  // namespace genesis
