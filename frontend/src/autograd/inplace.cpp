// inplace.cpp - in-place writes under autograd, as torch does them.
//
// Version counters: every storage has one (looked up by storage identity, so every view, detached
// alias and saved copy of a tensor sees the same count), bumped by each in-place write.  A node
// remembers the version of each tensor it saves, and backward refuses a tensor written since.
//
// History: an in-place op on a tensor that is not a leaf requiring grad is recorded like any op,
// with the tensor as it was for input and the tensor itself for output, so the tensor's grad_fn
// becomes the op's node.  A write into a view of a base is the base's history too: the base gets a
// CopySlices node (its old value outside the view's elements, the written value inside) and the
// view an as_strided node of the base; the base's other views follow lazily (sync_view).  Both
// nodes' rules are made of these two differentiable functions, so double backward goes through.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "../internal.h"
#include "inplace.h"
#include "rules.h"

namespace genesis::autograd {

namespace {

// Storage identity -> its counter, for as long as some tensor or saved tensor holds the counter.
struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, std::weak_ptr<VersionCounter>> counters;
  size_t sweep_at = 4096;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: tensors may die after static destructors ran
  return *r;
}

std::shared_ptr<VersionCounter> lookup(const void* storage) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::weak_ptr<VersionCounter>& w = r.counters[storage];
  std::shared_ptr<VersionCounter> c = w.lock();
  if (!c) {
    c = std::make_shared<VersionCounter>();
    w = c;
  }
  if (r.counters.size() >= r.sweep_at) {  // forget the storages nobody counts any more
    for (auto it = r.counters.begin(); it != r.counters.end();) it = it->second.expired() ? r.counters.erase(it) : ++it;
    r.sweep_at = std::max<size_t>(4096, 2 * r.counters.size());
  }
  return c;
}

Error runtime_error(const std::string& msg) { return Error(GN_ERR_UNSUPPORTED, msg); }

// Where a view's elements lie in its base's storage: shape, strides, offset from the base's first element.
struct Geometry {
  Shape size, stride;
  int64_t offset = 0;
};

Geometry geometry_of(const gn_tensor* view, const gn_tensor* base) {
  const int32_t nd = gn_tensor_ndim(view);
  return {Shape(gn_tensor_shape(view), gn_tensor_shape(view) + nd),
          Shape(gn_tensor_strides(view), gn_tensor_strides(view) + nd),
          gn_tensor_storage_offset(view) - gn_tensor_storage_offset(base)};
}

void keep_geometry(Node& n, const Geometry& g) {
  n.keep_attr("size", gn_attr_ints(g.size.data(), g.size.size()));
  n.keep_attr("stride", gn_attr_ints(g.stride.data(), g.stride.size()));
  n.keep_attr("offset", gn_attr_int(g.offset));
}

Geometry kept_geometry(const Node& n) { return {n.attr_ints("size"), n.attr_ints("stride"), n.attr_int("offset")}; }

// The view of contiguous t with geometry g (no autograd).
Tensor raw_view(const Tensor& t, const Geometry& g) {
  gn_tensor* out = nullptr;
  check(gn_tensor_as_strided(t.handle(), g.size.data(), g.stride.data(), static_cast<int32_t>(g.size.size()),
                             gn_tensor_storage_offset(t.handle()) + g.offset, &out),
        "as_strided");
  return Tensor::adopt(out);
}

std::vector<Tensor> as_strided_rule(Node& n, const Tensor& g);
std::vector<Tensor> copy_slices_rule(Node& n, const Tensor& g);

// t's elements at geometry g (t is read as a contiguous tensor of the base's shape), recorded.
Tensor strided_view(const Tensor& t, const Geometry& g) {
  Tensor tc = t.contiguous();
  Tensor y = raw_view(tc, g);
  if (auto n = record("as_strided", as_strided_rule, {tc}, y)) keep_geometry(*n, g);
  return y;
}

// A copy of base with the elements at geometry g replaced by src, recorded.
Tensor strided_scatter(const Tensor& base, const Tensor& src, const Geometry& g) {
  Tensor b = base;
  Tensor out = ::genesis::detail::call1(GN_OP_HANDLE("copy"), {&b});  // a dense copy
  Tensor s = src.dtype() == out.dtype() ? src : src.to(out.dtype());
  check(gn_tensor_copy_(raw_view(out, g).handle(), s.handle()), "copy_slices");
  if (auto n = record("copy_slices", copy_slices_rule, {base, s}, out)) keep_geometry(*n, g);
  return out;
}

// The view's gradient scattered into zeros of the base's shape.
std::vector<Tensor> as_strided_rule(Node& n, const Tensor& g) {
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {strided_scatter(z, g, kept_geometry(n))};
}

// inputs (base as it was, the value written into the view): the base keeps g outside the view.
std::vector<Tensor> copy_slices_rule(Node& n, const Tensor& g) {
  const Geometry geo = kept_geometry(n);
  Tensor gb, gs;
  if (n.next[0]) gb = strided_scatter(g, zeros(geo.size, {.dtype = g.dtype(), .device = g.device()}), geo);
  if (n.next.size() > 1 && n.next[1]) gs = strided_view(g, geo);
  return {gb, gs};
}

// The view's grad_fn: an as_strided node of its base's current history.
void regenerate(Tensor::Impl& view) {
  Tensor::Impl& b = *view.view_base;
  Tensor base = Tensor::from_impl(view.view_base);
  Tensor out = Tensor::borrow(view.h);
  auto n = detail::record_always("as_strided", as_strided_rule, &base, 1, out);
  keep_geometry(*n, geometry_of(view.h, b.h));
  view.grad_fn = n;
  view.output_nr = 0;
  view.requires_grad = true;
  view.view_gen = b.history_gen;
}

bool overlaps(const Tensor& t) {
  const Shape s = t.shape(), st = t.strides();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] > 1 && st[i] == 0) return true;
  return false;
}

}  // namespace

// ----------------------------------------------------------------- versions

std::shared_ptr<VersionCounter> version_counter(const Tensor& t) {
  Tensor::Impl& impl = *t.impl();
  const void* storage = gn_tensor_storage_id(impl.h);
  if (impl.version && impl.version_storage == storage) return impl.version;
  std::shared_ptr<VersionCounter> c;
  Tensor::Impl* base = impl.view_base.get();
  if (base && base->version && base->version_storage == storage)
    c = base->version;  // a view of a tensor with a counter of its own (x.data) counts with it
  else
    c = lookup(storage);
  impl.version = c;
  impl.version_storage = storage;
  if (base && !base->version && gn_tensor_storage_id(base->h) == storage) {
    base->version = c;
    base->version_storage = storage;
  }
  return c;
}

void bump_version(const Tensor& t) { version_counter(t)->value.fetch_add(1, std::memory_order_relaxed); }

// ---------------------------------------------------------------- in place

void check_inplace(const Tensor& self, const char* op) {
  (void)op;
  if (!grad_enabled()) return;
  Tensor::Impl& s = *self.impl();
  if (s.view_base) {
    detail::sync_view(s);
    const Tensor::Impl& b = *s.view_base;
    if (b.requires_grad && !b.grad_fn)
      throw runtime_error("a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return;
  }
  if (s.requires_grad && !s.grad_fn)
    throw runtime_error("a leaf Variable that requires grad is being used in an in-place operation.");
}

std::shared_ptr<Node> record_inplace(const char* name, Rule rule, std::initializer_list<Tensor> inputs, Tensor& self) {
  bump_version(self);
  if (!grad_enabled()) return nullptr;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any || !is_floating(self.dtype())) return nullptr;
  Tensor::Impl& s = *self.impl();
  if (!s.view_base) {
    auto n = record(name, rule, inputs, self);
    ++s.history_gen;
    return n;
  }
  // A write into a view: the op's node gives the written value, CopySlices puts it into the base.
  Tensor base = Tensor::from_impl(s.view_base);
  if (!base.is_contiguous())
    throw runtime_error(
        "in-place write into a view of a non-contiguous tensor while recording: write into a "
        "contiguous tensor (x = x.contiguous()) or into a clone()");
  if (overlaps(self))
    throw runtime_error(
        "unsupported operation: more than one element of the written-to tensor refers to a single "
        "memory location. Please clone() the tensor before performing the operation.");
  Tensor written = Tensor::borrow(self.handle());
  auto n = record(name, rule, inputs, written);
  const Geometry geo = geometry_of(self.handle(), base.handle());
  Tensor operands[2] = {base, written};
  auto c = detail::record_always("copy_slices", copy_slices_rule, operands, 2, base);
  keep_geometry(*c, geo);
  ++s.view_base->history_gen;
  regenerate(s);
  return n;
}

namespace detail {

void mark_view(const Tensor& y, const Tensor& x) {
  if (!y.defined() || !x.defined() || y.is_same(x)) return;
  if (!gn_tensor_shares_storage(y.handle(), x.handle())) return;
  Tensor::Impl& v = *y.impl();
  const std::shared_ptr<Tensor::Impl>& xi = x.impl();
  v.view_base = xi->view_base ? xi->view_base : xi;
  v.view_gen = v.view_base->history_gen;
  if (xi->version) {  // the same counter (x.data's own one, for instance)
    v.version = xi->version;
    v.version_storage = xi->version_storage;
  }
}

std::vector<Tensor> no_gradient(Node& n, const Tensor&) { return std::vector<Tensor>(n.next.size()); }

void sync_view(Tensor::Impl& view) {
  Tensor::Impl& b = *view.view_base;
  if (view.view_gen == b.history_gen) return;
  view.view_gen = b.history_gen;
  if (!b.requires_grad || !gn_tensor_is_contiguous(b.h)) return;
  regenerate(view);
}

}  // namespace detail

// ------------------------------------------------------- Tensor's in-place ops

}  // namespace genesis::autograd

namespace genesis {

namespace R = autograd::rules;
using autograd::record_inplace;

namespace {

// copy_: inputs (self as it was, src): src gets the gradient (on its device), self none.
std::vector<Tensor> copy_rule(autograd::Node& n, const Tensor& g) {
  const Device& d = n.inputs[1].device;
  return {Tensor(), d == g.device() ? g : g.to(d)};
}

// div_: inputs (self as it was "a", divisor "b"); torch's formula, from the old value rather than the result
// (the result is self, which later writes may change).
std::vector<Tensor> div_rule(autograd::Node& n, const Tensor& g) {
  const Tensor& b = n.saved("b");
  Tensor ga, gb;
  if (n.next[0]) ga = g / b;
  if (n.next.size() > 1 && n.next[1]) gb = -g * n.saved("a") / (b * b);
  return {ga, gb};
}

// The float ops whose results an integer tensor cannot hold in place.
[[noreturn]] void cannot_cast(DType from, DType to) {
  auto name = [](DType d) {
    std::string s = dtype_name(d);
    if (s == "float32") return std::string("Float");
    if (s == "float64") return std::string("Double");
    if (s == "int64") return std::string("Long");
    if (s == "int32") return std::string("Int");
    if (s == "bool") return std::string("Bool");
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
  };
  throw Error(GN_ERR_DTYPE, "result type " + name(from) + " can't be cast to the desired output type " + name(to));
}

// The old value of self when a rule needs it after the write (recorded: it carries self's history).
Tensor before_write(const Tensor& self) { return self.clone(); }

}  // namespace

Tensor& Tensor::add_(const Tensor& o, double alpha) {
  autograd::check_inplace(*this, "add_");
  detail::call_into(GN_OP_HANDLE("add"), {this, &o}, {gn_attr_float(alpha)}, *this);
  if (auto n = record_inplace("add", R::add, {*this, o}, *this))
    n->keep_attrs(GN_OP_HANDLE("add"), {gn_attr_float(alpha)});
  return *this;
}
Tensor& Tensor::sub_(const Tensor& o, double alpha) { return add_(o, -alpha); }

namespace {

// An operand of an in-place op that is self (x.mul_(x)) is saved as it was before the write, as
// torch saves it: backward then finds it written and refuses it, as torch does.
void saved_before_write(autograd::Node& n, const Tensor& self, const Tensor& operand, uint32_t version) {
  if (operand.defined() && gn_tensor_shares_storage(operand.handle(), self.handle()))
    n.saved_info.back().version = version;
}

// What mul_ and div_ keep before writing self (after the in-place checks): self's old value
// when o needs a gradient, and self's version, both only when the op will be recorded.
struct BeforeWrite {
  Tensor old;
  uint32_t version;
};
BeforeWrite before_binary_write(Tensor& self, const Tensor& o, const char* name) {
  autograd::check_inplace(self, name);
  const bool rec = autograd::grad_enabled() && (self.requires_grad() || o.requires_grad());
  return {rec && o.requires_grad() ? before_write(self) : Tensor(), rec ? self.version() : 0};
}

}  // namespace

Tensor& Tensor::mul_(const Tensor& o) {
  const auto [old, v] = before_binary_write(*this, o, "mul_");
  detail::call_into(GN_OP_HANDLE("mul"), {this, &o}, {}, *this);
  if (auto n = record_inplace("mul", R::mul, {*this, o}, *this)) {
    if (old.defined()) n->save("a", old);
    if (n->next[0]) {
      n->save("b", o.detach());
      saved_before_write(*n, *this, o, v);
    }
  }
  return *this;
}

Tensor& Tensor::div_(const Tensor& o) {
  const auto [old, v] = before_binary_write(*this, o, "div_");
  detail::call_into(GN_OP_HANDLE("div"), {this, &o}, {}, *this);
  if (auto n = record_inplace("div", div_rule, {*this, o}, *this)) {
    if (old.defined()) n->save("a", old);
    n->save("b", o.detach());
    saved_before_write(*n, *this, o, v);
  }
  return *this;
}

Tensor& Tensor::mul_(const Scalar& s) { return mul_(wrap_scalar(s, device())); }
Tensor& Tensor::add_(const Scalar& s) { return add_(wrap_scalar(s, device())); }
Tensor& Tensor::zero_() { return fill_(0); }

Tensor& Tensor::fill_(double v) {
  autograd::check_inplace(*this, "fill_");
  gn_tensor* in[1] = {handle()};
  gn_attr_value a = gn_attr_float(v);
  check(gn_op_call(runtime(), GN_OP_HANDLE("fill"), in, 1, &a, 1, nullptr, 0), "fill_");
  record_inplace("fill_", &autograd::detail::no_gradient, {*this}, *this);
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  autograd::check_inplace(*this, "copy_");
  check(gn_tensor_copy_(handle(), src.handle()), "copy_");
  record_inplace("copy_", copy_rule, {*this, src}, *this);
  return *this;
}

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
  autograd::check_inplace(*this, "masked_fill_");
  Tensor filled;
  {
    autograd::NoGradGuard ng;
    filled = masked_fill(mask, value);
  }
  check(gn_tensor_copy_(handle(), filled.handle()), "masked_fill_");
  if (auto n = record_inplace("masked_fill", R::masked_fill, {*this, mask}, *this)) n->save("mask", mask.detach());
  return *this;
}

Tensor& Tensor::clamp_(double lo, double hi) {
  autograd::check_inplace(*this, "clamp_");
  const bool rec = autograd::grad_enabled() && requires_grad();
  Tensor old = rec ? before_write(*this) : Tensor();
  detail::call_into(GN_OP_HANDLE("clamp"), {this}, {gn_attr_float(lo), gn_attr_float(hi)}, *this);
  if (auto n = record_inplace("clamp", R::clamp, {*this}, *this)) {
    n->save("x", old);
    n->save("lo", wrap_scalar(lo, device()));
    n->save("hi", wrap_scalar(hi, device()));
  }
  return *this;
}

Tensor& Tensor::unary_(const std::string& op) {
  autograd::check_inplace(*this, (op + "_").c_str());
  const gn_op* h = detail::find_op(op.c_str());
  const autograd::rules::UnaryGrad* row = autograd::rules::find_unary_grad(op);
  if (!row && !autograd::detail::zero_derivative_op(op))
    throw Error(GN_ERR_UNSUPPORTED, "[" + op + "_] has no in-place form (no gradient rule for " + op + ")");
  if (!is_floating(dtype())) {  // integers never need grad: the op, then the result converted back
    Tensor y = call_unary(op, *this);
    if (is_floating(y.dtype())) cannot_cast(y.dtype(), dtype());
    check(gn_tensor_copy_(handle(), y.handle()), (op + "_").c_str());
    autograd::bump_version(*this);
    return *this;
  }
  const bool rec = autograd::grad_enabled() && requires_grad();
  Tensor old = rec && row && row->save_x ? before_write(*this) : Tensor();
  detail::call_into(h, {this}, {}, *this);
  if (auto n = record_inplace(gn_op_name(h), row ? row->rule : &autograd::detail::no_gradient, {*this}, *this)) {
    if (row && row->save_x) n->save("x", old);
    if (row && row->save_out) n->save("out", detach());
  }
  return *this;
}

Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }

uint32_t Tensor::version() const { return autograd::version_counter(*this)->value.load(std::memory_order_relaxed); }

}  // namespace genesis
