// tensor_ops.cpp - differentiable forward ops: call the C op, then record a node
// (autograd::record) with what its rule in autograd/rules.cpp reads.
#include <algorithm>

#include "autograd/inplace.h"
#include "autograd/rules.h"
#include "internal.h"

namespace genesis {

using autograd::record;
using detail::call;
using detail::call1;
namespace R = autograd::rules;

namespace {

// y = op(x) recorded with `rule`; saves x and/or y for the rule (as "x", "out").
Tensor unary(const gn_op* op, Tensor x, autograd::Rule rule, bool save_x, bool save_y,
             std::initializer_list<gn_attr_value> attrs = {}) {
  GN_AUTOCAST(gn_op_name(op), &x);  // AMP hook
  Tensor y = call1(op, {&x}, attrs);
  if (rule) {
    if (auto n = record(gn_op_name(op), rule, {x}, y)) {
      if (save_x) n->save("x", x.detach());
      if (save_y) n->save("out", y.detach());
    }
  }
  return y;
}

// What a binary rule reads, saved as "a", "b", "out" (only those: add/sub need
// none, and every detach() costs an allocation).
enum Save : unsigned { kNone = 0, kA = 1, kB = 2, kOut = 4, kAB = kA | kB };

// out = op(a, b); saves what `save` names for the rule, and keeps the op's attributes when given.
Tensor binary(const gn_op* op, Tensor a, Tensor b, autograd::Rule rule, unsigned save,
              std::initializer_list<gn_attr_value> attrs = {}) {
  GN_AUTOCAST(gn_op_name(op), &a, &b);  // AMP hook
  Tensor y = call1(op, {&a, &b}, attrs);
  if (rule) {
    if (auto n = record(gn_op_name(op), rule, {a, b}, y)) {
      if (save & kA) n->save("a", a.detach());
      if (save & kB) n->save("b", b.detach());
      if (save & kOut) n->save("out", y.detach());
      if (attrs.size()) n->keep_attrs(op, attrs);
    }
  }
  return y;
}

// A reduction: keeps the op's attributes ("dims", ...) for the rule; saves x and y
// as "x" and "out" where the rule reads them (sum and mean read neither).
Tensor reduce(const gn_op* op, Tensor x, autograd::Rule rule, std::initializer_list<gn_attr_value> attrs,
              bool save_x = true, bool save_out = true) {
  GN_AUTOCAST(gn_op_name(op), &x);  // AMP hook
  Tensor y = call1(op, {&x}, attrs);
  if (rule) {
    if (auto n = record(gn_op_name(op), rule, {x}, y)) {
      n->keep_attrs(op, attrs);
      if (save_x) n->save("x", x.detach());
      if (save_out) n->save("out", y.detach());
    }
  }
  return y;
}

gn_attr_value dims_attr(const Dims& d) { return gn_attr_ints(d.v.data(), d.v.size()); }

// A named integer attribute of a view (views have no op schema to name them).
struct ViewAttr {
  const char* name;
  int64_t value;
};

// A view op result recorded with `rule` and its attributes.  `out` is taken
// by reference: it is read after the C call (argument order is unspecified).
Tensor view_result(gn_status* st, gn_tensor* const& out, const char* name, const Tensor& x, autograd::Rule rule,
                   std::initializer_list<ViewAttr> attrs = {}) {
  check(st, name);
  Tensor y = Tensor::adopt(out);
  if (auto n = record(name, rule, {x}, y))
    for (const ViewAttr& a : attrs) n->keep_attr(a.name, gn_attr_int(a.value));
  autograd::detail::mark_view(y, x);  // a view: writes into y rewrite x's history
  return y;
}

}  // namespace

namespace {
// y = op(x) recorded with its GN_UNARY_GRAD row of derivatives.def (not recorded without one).
Tensor unary_by_row(const gn_op* op, const Tensor& x, const autograd::rules::UnaryGrad* row) {
  return row ? unary(op, x, row->rule, row->save_x, row->save_out) : unary(op, x, nullptr, false, false);
}
}  // namespace

Tensor call_unary(const std::string& op, const Tensor& x) {
  return unary_by_row(detail::find_op(op.c_str()), x, autograd::rules::find_unary_grad(op));
}

// The Tensor methods of the one-input ops: handle and row found once per method.
#define GN_UNARY(fn)                                                                      \
  Tensor Tensor::fn() const {                                                             \
    static const autograd::rules::UnaryGrad* row = autograd::rules::find_unary_grad(#fn); \
    return unary_by_row(GN_OP_HANDLE(#fn), *this, row);                                   \
  }
GN_UNARY(neg)
GN_UNARY(abs)
GN_UNARY(exp)
GN_UNARY(log)
GN_UNARY(log1p)
GN_UNARY(sqrt)
GN_UNARY(rsqrt)
GN_UNARY(sin)
GN_UNARY(cos)
GN_UNARY(tanh)
GN_UNARY(sigmoid)
GN_UNARY(relu)
GN_UNARY(reciprocal)
GN_UNARY(square)
Tensor Tensor::silu() const { return unary(GN_OP_HANDLE("silu"), *this, R::silu, true, false); }
// Piecewise-constant and bool ops: no GN_UNARY_GRAD row, not recorded.
GN_UNARY(sign)
GN_UNARY(floor)
GN_UNARY(ceil)
GN_UNARY(round)
GN_UNARY(logical_not)
GN_UNARY(isnan)
GN_UNARY(isinf)
GN_UNARY(isfinite)
#undef GN_UNARY

Tensor Tensor::gelu(bool tanh_approx) const {
  const gn_op* op = GN_OP_HANDLE("gelu");
  const auto attrs = {gn_attr_int(tanh_approx ? 1 : 0)};
  Tensor y = unary(op, *this, R::gelu, true, true, attrs);
  if (auto& n = y.impl()->grad_fn) n->keep_attrs(op, attrs);
  return y;
}

Tensor Tensor::clamp(double lo, double hi) const {
  Tensor y = call1(GN_OP_HANDLE("clamp"), {this}, {gn_attr_float(lo), gn_attr_float(hi)});
  if (auto n = record("clamp", R::clamp, {*this}, y)) {
    n->save("x", detach());
    n->save("lo", wrap_scalar(lo, device()));
    n->save("hi", wrap_scalar(hi, device()));
  }
  return y;
}

Tensor Tensor::pow(const Scalar& p) const {
  Tensor x = *this;
  GN_AUTOCAST("pow", &x);  // AMP hook
  Tensor e = wrap_scalar(p, device());
  Tensor y = call1(GN_OP_HANDLE("pow"), {&x, &e});
  if (auto n = record("pow", R::pow_scalar, {x}, y)) {
    n->save("a", x.detach());  // the base, as pow saves it
    n->keep_attr("exponent", gn_attr_float(p.value));
  }
  return y;
}
Tensor Tensor::pow(const Tensor& p) const { return binary(GN_OP_HANDLE("pow"), *this, p, R::pow, kA | kB | kOut); }

Tensor Tensor::add(const Tensor& o, double alpha) const {
  return binary(GN_OP_HANDLE("add"), *this, o, R::add, kNone, {gn_attr_float(alpha)});
}
Tensor Tensor::sub(const Tensor& o, double alpha) const {
  return binary(GN_OP_HANDLE("sub"), *this, o, R::sub, kNone, {gn_attr_float(alpha)});
}
Tensor Tensor::mul(const Tensor& o) const { return binary(GN_OP_HANDLE("mul"), *this, o, R::mul, kAB); }
Tensor Tensor::div(const Tensor& o) const { return binary(GN_OP_HANDLE("div"), *this, o, R::div, kB | kOut); }
Tensor Tensor::maximum(const Tensor& o) const { return binary(GN_OP_HANDLE("maximum"), *this, o, R::maximum, kAB); }
Tensor Tensor::minimum(const Tensor& o) const { return binary(GN_OP_HANDLE("minimum"), *this, o, R::minimum, kAB); }
Tensor Tensor::matmul(const Tensor& o) const { return binary(GN_OP_HANDLE("matmul"), *this, o, R::matmul, kAB); }

#define GN_COMPARE(fn) \
  Tensor Tensor::fn(const Tensor& o) const { return call1(GN_OP_HANDLE(#fn), {this, &o}); }
GN_COMPARE(eq)
GN_COMPARE(ne)
GN_COMPARE(lt)
GN_COMPARE(le)
GN_COMPARE(gt)
GN_COMPARE(ge)
#undef GN_COMPARE

Tensor where(const Tensor& cond, const Tensor& a_, const Tensor& b_) {
  Tensor a = a_, b = b_;
  GN_AUTOCAST("where", &a, &b);  // AMP hook
  Tensor y = call1(GN_OP_HANDLE("where"), {&cond, &a, &b});
  if (auto n = record("where", R::where, {cond, a, b}, y)) n->save("cond", cond.detach());
  return y;
}

// ------------------------------------------------------------ reductions

Tensor Tensor::sum(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("sum"), *this, R::sum, {dims_attr(d), gn_attr_int(keepdim), gn_attr_int(GN_DIM_NONE)},
                false, false);
}
Tensor Tensor::mean(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("mean"), *this, R::mean, {dims_attr(d), gn_attr_int(keepdim), gn_attr_int(GN_DIM_NONE)},
                false, false);
}
Tensor Tensor::prod(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("prod"), *this, R::prod, {dims_attr(d), gn_attr_int(keepdim), gn_attr_int(GN_DIM_NONE)});
}
Tensor Tensor::max(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("max"), *this, R::amax, {dims_attr(d), gn_attr_int(keepdim)});
}
Tensor Tensor::min(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("min"), *this, R::amax, {dims_attr(d), gn_attr_int(keepdim)});
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return call1(GN_OP_HANDLE("argmax"), {this}, {gn_attr_int(dim.value_or(GN_DIM_NONE)), gn_attr_int(keepdim)});
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return call1(GN_OP_HANDLE("argmin"), {this}, {gn_attr_int(dim.value_or(GN_DIM_NONE)), gn_attr_int(keepdim)});
}
Tensor Tensor::var(Dims d, double correction, bool keepdim) const {
  return reduce(GN_OP_HANDLE("var"), *this, R::var, {dims_attr(d), gn_attr_float(correction), gn_attr_int(keepdim)},
                true, false);
}
Tensor Tensor::std(Dims d, double correction, bool keepdim) const {
  return reduce(GN_OP_HANDLE("std"), *this, R::std, {dims_attr(d), gn_attr_float(correction), gn_attr_int(keepdim)});
}
Tensor Tensor::logsumexp(Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("logsumexp"), *this, R::logsumexp, {dims_attr(d), gn_attr_int(keepdim)});
}
Tensor Tensor::norm(double p, Dims d, bool keepdim) const {
  return reduce(GN_OP_HANDLE("norm"), *this, R::norm, {gn_attr_float(p), dims_attr(d), gn_attr_int(keepdim)});
}

Tensor Tensor::softmax(int64_t dim) const {
  const gn_op* op = GN_OP_HANDLE("softmax");
  Tensor y = unary(op, *this, R::softmax, false, true, {gn_attr_int(dim)});
  if (auto n = y.grad_fn()) n->keep_attrs(op, {gn_attr_int(dim)});
  return y;
}
Tensor Tensor::log_softmax(int64_t dim) const {
  const gn_op* op = GN_OP_HANDLE("log_softmax");
  Tensor y = unary(op, *this, R::log_softmax, false, true, {gn_attr_int(dim)});
  if (auto n = y.grad_fn()) n->keep_attrs(op, {gn_attr_int(dim)});
  return y;
}
Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }
Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }

// ------------------------------------------------------- fused NN ops

Tensor layer_norm(const Tensor& x_, const Tensor& weight_, const Tensor& bias_, int64_t normalized_ndim, double eps) {
  Tensor x = x_, weight = weight_, bias = bias_;
  GN_AUTOCAST("layer_norm", &x, &weight, &bias);  // AMP hook
  if (bias.defined() && !weight.defined()) throw Error(GN_ERR_INVALID_ARGUMENT, "[layer_norm] bias without weight");
  std::vector<Tensor> in = {x};
  if (weight.defined()) in.push_back(weight);
  if (bias.defined()) in.push_back(bias);
  const gn_op* op = GN_OP_HANDLE("layer_norm");
  const auto attrs = {gn_attr_int(normalized_ndim), gn_attr_float(eps)};
  auto out = call(op, in, attrs, 3);
  if (auto n = record("layer_norm", R::layer_norm, in, out[0])) {
    n->save("x", x.detach());
    n->save("mean", out[1]);
    n->save("rstd", out[2]);
    if (weight.defined()) n->save("weight", weight.detach());
    n->keep_attrs(op, attrs);
  }
  return out[0];
}

Tensor rms_norm(const Tensor& x_, const Tensor& weight_, double eps) {
  Tensor x = x_, weight = weight_;
  GN_AUTOCAST("rms_norm", &x, &weight);  // AMP hook
  std::vector<Tensor> in = {x};
  if (weight.defined()) in.push_back(weight);
  auto out = call(GN_OP_HANDLE("rms_norm"), in, {gn_attr_float(eps)}, 2);
  if (auto n = record("rms_norm", R::rms_norm, in, out[0])) {
    n->save("x", x.detach());
    n->save("rstd", out[1]);
    if (weight.defined()) n->save("weight", weight.detach());
  }
  return out[0];
}

Tensor cross_entropy(const Tensor& logits_, const Tensor& target, int64_t ignore_index, double label_smoothing,
                     int64_t reduction) {
  Tensor logits = logits_;
  GN_AUTOCAST("cross_entropy", &logits);  // AMP hook
  const gn_op* op = GN_OP_HANDLE("cross_entropy");
  const auto attrs = {gn_attr_int(ignore_index), gn_attr_float(label_smoothing), gn_attr_int(reduction)};
  auto out = call(op, {&logits, &target}, attrs, 2);
  if (auto n = record("cross_entropy", R::cross_entropy, {logits, target}, out[0])) {
    n->save("logits", logits.detach());
    n->save("target", target.detach());
    n->save("lse", out[1]);
    n->keep_attrs(op, attrs);
  }
  return out[0];
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  Tensor y = call1(GN_OP_HANDLE("embedding"), {&weight, &ids});
  if (auto n = record("embedding", R::embedding, {weight, ids}, y)) n->save("ids", ids.detach());
  return y;
}

// ----------------------------------------------------------- conversions

Tensor Tensor::to(const Device& d) const {
  if (d == device()) return *this;
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_to_device(handle(), d.c(), &out), out, "to", *this, R::to_device);
}
Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_to_dtype(handle(), static_cast<int32_t>(t), &out), out, "to", *this, R::identity);
}
Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_contiguous(handle(), &out), out, "contiguous", *this, R::identity);
}
Tensor Tensor::clone() const {
  Tensor y = call1(GN_OP_HANDLE("copy"), {this});
  record("clone", R::identity, {*this}, y);
  return y;
}

// ----------------------------------------------------------------- views

Tensor Tensor::reshape(Shape s) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_reshape(handle(), s.data(), (int32_t)s.size(), &out), out, "reshape", *this, R::reshape);
}
Tensor Tensor::view(Shape s) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_view_as(handle(), s.data(), (int32_t)s.size(), &out), out, "view", *this, R::reshape);
}
Tensor Tensor::permute(Shape d) const {
  gn_tensor* out = nullptr;
  Tensor y =
      view_result(gn_tensor_permute(handle(), d.data(), (int32_t)d.size(), &out), out, "permute", *this, R::permute);
  if (auto& n = y.impl()->grad_fn) n->keep_attr("dims", gn_attr_ints(d.data(), d.size()));
  return y;
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_transpose(handle(), d0, d1, &out), out, "transpose", *this, R::transpose,
                     {{"dim0", d0}, {"dim1", d1}});
}
Tensor Tensor::t() const {
  if (dim() != 2) throw Error(GN_ERR_SHAPE, "[t] expects a 2-D tensor, got rank " + std::to_string(dim()));
  return transpose(0, 1);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t stop, int64_t step) const {
  const int64_t d = detail::wrap_dim(dim, this->dim());
  const int64_t n = (d >= 0 && d < this->dim()) ? shape()[d] : 0;
  // Python semantics: negatives count from the end, then clamp to [0, n].
  auto fix = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  start = fix(start);
  stop = fix(stop);
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_slice(handle(), d, start, stop, step, &out), out, "slice", *this, R::slice,
                     {{"dim", d}, {"start", start}, {"stop", stop}, {"step", step}});
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  const int64_t d = detail::wrap_dim(dim, this->dim());
  if (d >= 0 && d < this->dim() && index < 0) index += shape()[d];
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_select(handle(), d, index, &out), out, "select", *this, R::select,
                     {{"dim", d}, {"index", index}});
}
Tensor Tensor::expand(Shape s) const {
  gn_tensor* out = nullptr;
  // The rule is the identity: the engine sums the gradient back to the input shape.
  return view_result(gn_tensor_expand(handle(), s.data(), (int32_t)s.size(), &out), out, "expand", *this, R::identity);
}
Tensor Tensor::squeeze(std::optional<int64_t> dim) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_squeeze(handle(), dim.value_or(GN_DIM_NONE), &out), out, "squeeze", *this, R::reshape);
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_unsqueeze(handle(), dim, &out), out, "unsqueeze", *this, R::reshape);
}
Tensor Tensor::flatten(int64_t start, int64_t end) const {
  gn_tensor* out = nullptr;
  return view_result(gn_tensor_flatten(handle(), start, end, &out), out, "flatten", *this, R::reshape);
}

Tensor sum_to_size(const Tensor& g, const Shape& shape) {
  const Shape gs = g.shape();
  if (gs == shape) return g;
  // Leading extra dims are summed away; dims that are 1 in `shape` are summed with keepdim.
  const int64_t lead = static_cast<int64_t>(gs.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(gs.size()); ++i)
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) dims.push_back(i);
  Tensor s = dims.empty() ? g : g.sum(dims, true);
  return s.reshape(shape);
}

// -------------------------------------------------------------- operators

Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(wrap_scalar(b, a.device())); }
Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(wrap_scalar(b, a.device())); }
Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(wrap_scalar(b, a.device())); }
Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(wrap_scalar(b, a.device())); }
Tensor operator+(const Scalar& a, const Tensor& b) { return wrap_scalar(a, b.device()).add(b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return wrap_scalar(a, b.device()).sub(b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return wrap_scalar(a, b.device()).mul(b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return wrap_scalar(a, b.device()).div(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(wrap_scalar(b, a.device())); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(wrap_scalar(b, a.device())); }
Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(wrap_scalar(b, a.device())); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(wrap_scalar(b, a.device())); }
Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(wrap_scalar(b, a.device())); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(wrap_scalar(b, a.device())); }

}  // namespace genesis
