// tensor.cpp - Tensor handle, metadata, creation, conversion, in-place ops.
#include <cmath>
#include <cstring>

#include "autograd/inplace.h"
#include "internal.h"

namespace genesis {

using detail::call1;

Tensor Tensor::adopt(gn_tensor* h) {
  Tensor t;
  if (!h) return t;
  t.impl_ = std::make_shared<Impl>();
  t.impl_->h = h;
  return t;
}

Tensor Tensor::borrow(gn_tensor* h) {
  gn_tensor_retain(h);
  return adopt(h);
}

gn_tensor* Tensor::handle() const {
  if (!impl_) throw Error(GN_ERR_INVALID_ARGUMENT, "use of an undefined Tensor");
  return impl_->h;
}

// ------------------------------------------------------------- metadata

int64_t Tensor::dim() const { return gn_tensor_ndim(handle()); }
Shape Tensor::shape() const {
  gn_tensor* h = handle();
  return Shape(gn_tensor_shape(h), gn_tensor_shape(h) + gn_tensor_ndim(h));
}
int64_t Tensor::size(int64_t d) const {
  const int64_t n = dim();
  const int64_t w = detail::wrap_dim(d, n);
  if (w < 0 || w >= n)
    throw Error(GN_ERR_INDEX, "[size] dim " + std::to_string(d) + " out of range for rank " + std::to_string(n));
  return gn_tensor_shape(handle())[w];
}
Shape Tensor::strides() const {
  gn_tensor* h = handle();
  return Shape(gn_tensor_strides(h), gn_tensor_strides(h) + gn_tensor_ndim(h));
}
int64_t Tensor::numel() const { return gn_tensor_numel(handle()); }
DType Tensor::dtype() const { return static_cast<DType>(gn_tensor_dtype(handle())); }
Device Tensor::device() const { return Device(gn_tensor_device(handle())); }
bool Tensor::is_contiguous() const { return gn_tensor_is_contiguous(handle()) != 0; }

// ----------------------------------------------------------- conversion

double Tensor::item_double() const {
  if (numel() != 1)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[item] a tensor with " + std::to_string(numel()) + " elements cannot be converted to a number");
  return tolist()[0];
}

std::vector<double> Tensor::tolist() const {
  gn_tensor* h = handle();
  gn_tensor* f64 = nullptr;
  check(gn_tensor_to_dtype(h, GN_F64, &f64), "tolist");
  Tensor owned = adopt(f64);
  std::vector<double> out(static_cast<size_t>(numel()));
  check(gn_tensor_to_host(f64, out.data(), out.size() * sizeof(double)), "tolist");
  return out;
}

// ------------------------------------------------------------- autograd

bool Tensor::requires_grad() const {
  if (!impl_) return false;
  if (impl_->view_base) autograd::detail::sync_view(*impl_);
  return impl_->requires_grad;
}

Tensor& Tensor::requires_grad_(bool on) {
  if (!impl_) throw Error(GN_ERR_INVALID_ARGUMENT, "[requires_grad_] undefined tensor");
  if (impl_->grad_fn && !on)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[requires_grad_] only leaves can stop requiring grad (use detach())");
  if (on && !is_floating(dtype()))
    throw Error(GN_ERR_DTYPE,
                std::string("[requires_grad_] only floating tensors can require grad, got ") + dtype_name(dtype()));
  impl_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const {
  Tensor g;
  if (impl_) g.impl_ = impl_->grad;
  return g;
}

void Tensor::set_grad(const Tensor& g) const {
  handle();  // throws on an undefined tensor
  impl_->grad = g.impl_;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  if (!impl_) return nullptr;
  if (impl_->view_base) autograd::detail::sync_view(*impl_);
  return impl_->grad_fn;
}
bool Tensor::is_leaf() const { return !grad_fn(); }

void Tensor::retain_grad() const {
  if (!requires_grad()) throw Error(GN_ERR_INVALID_ARGUMENT, "[retain_grad] tensor does not require grad");
  if (is_leaf() || impl_->retains_grad) return;  // leaves keep .grad anyway
  impl_->retains_grad = true;
  // Weak: the node must not keep its own output alive (that would be a cycle).
  std::weak_ptr<Impl> weak = impl_;
  add_hook([weak](const Tensor& g) {
    if (auto self = weak.lock()) {
      Tensor cur;
      cur.impl_ = self->grad;
      self->grad = (cur.defined() ? cur + g : g.clone()).impl_;
    }
    return Tensor();
  });
}

void Tensor::add_hook(Hook h) const {
  if (!requires_grad()) throw Error(GN_ERR_INVALID_ARGUMENT, "[register_hook] tensor does not require grad");
  if (!impl_->grad_fn)
    impl_->hooks.push_back(std::move(h));
  else if (impl_->output_nr == 0)
    impl_->grad_fn->pre_hooks.push_back(std::move(h));
  else
    impl_->grad_fn->output_pre_hooks.emplace_back(impl_->output_nr, std::move(h));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward(*this, gradient, retain_graph);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

Tensor Tensor::detach() const {
  Tensor d = borrow(handle());
  d.impl_->version = impl_->version;  // the same storage, the same count
  d.impl_->version_storage = impl_->version_storage;
  return d;
}

// In-place ops are in autograd/inplace.cpp (they record themselves).

// ------------------------------------------------------------- creation

namespace {

// Applies requires_grad from the options to a fresh tensor.
Tensor finish(Tensor t, const Options& o) {
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}

template <class V>
Tensor from_host(const V* data, size_t n, Shape shape, DType host_dtype, const Options& o) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel != static_cast<int64_t>(n))
    throw Error(GN_ERR_SHAPE, "[tensor] " + std::to_string(n) + " values do not fill the shape (" +
                                  std::to_string(numel) + " elements)");
  gn_tensor* h = nullptr;
  check(gn_tensor_from_host(runtime(), data, shape.data(), static_cast<int32_t>(shape.size()),
                            static_cast<int32_t>(host_dtype), detail::device_of(o).c(), &h),
        "tensor");
  Tensor t = Tensor::adopt(h);
  if (o.dtype && *o.dtype != host_dtype) t = t.to(*o.dtype);
  return finish(t, o);
}

int32_t dt(const Options& o, DType def) { return static_cast<int32_t>(o.dtype.value_or(def)); }

}  // namespace

Tensor tensor(std::initializer_list<double> values, Options opts) {
  std::vector<float> v(values.begin(), values.end());
  if (!opts.dtype) opts.dtype = DType::f32;
  if (*opts.dtype == DType::f64) return tensor(std::vector<double>(values), {(int64_t)values.size()}, opts);
  return tensor(v, {static_cast<int64_t>(v.size())}, opts);
}

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, Options opts) {
  std::vector<double> v;
  const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != cols) throw Error(GN_ERR_SHAPE, "[tensor] rows have different lengths");
    v.insert(v.end(), r.begin(), r.end());
  }
  if (!opts.dtype) opts.dtype = DType::f32;
  return tensor(v, {static_cast<int64_t>(rows.size()), cols}, opts);
}

Tensor tensor(const std::vector<float>& values, Shape shape, Options opts) {
  return from_host(values.data(), values.size(), std::move(shape), DType::f32, opts);
}
Tensor tensor(const std::vector<double>& values, Shape shape, Options opts) {
  return from_host(values.data(), values.size(), std::move(shape), DType::f64, opts);
}
Tensor tensor(const std::vector<int64_t>& values, Shape shape, Options opts) {
  return from_host(values.data(), values.size(), std::move(shape), DType::i64, opts);
}

Tensor scalar_tensor(double v, Options opts) { return full({}, v, opts); }

Tensor empty(Shape shape, Options opts) {
  gn_tensor* h = nullptr;
  check(gn_tensor_empty(runtime(), shape.data(), static_cast<int32_t>(shape.size()), dt(opts, DType::f32),
                        detail::device_of(opts).c(), &h),
        "empty");
  return finish(Tensor::adopt(h), opts);
}

Tensor full(Shape shape, double value, Options opts) {
  Tensor t = call1(GN_OP_HANDLE("full"), {},
                   {gn_attr_ints(shape.data(), shape.size()), gn_attr_float(value), gn_attr_int(dt(opts, DType::f32)),
                    gn_attr_device(detail::device_of(opts).c())});
  return finish(t, opts);
}
Tensor zeros(Shape shape, Options opts) { return full(std::move(shape), 0, opts); }
Tensor ones(Shape shape, Options opts) { return full(std::move(shape), 1, opts); }

Tensor arange(double end, Options opts) { return arange(0, end, 1, opts); }

Tensor arange(double start, double end, double step, Options opts) {
  const int64_t d = opts.dtype ? static_cast<int64_t>(*opts.dtype) : GN_DIM_NONE;
  Tensor t = call1(GN_OP_HANDLE("arange"), {},
                   {gn_attr_float(start), gn_attr_float(end), gn_attr_float(step), gn_attr_int(d),
                    gn_attr_device(detail::device_of(opts).c())});
  return finish(t, opts);
}

Tensor linspace(double start, double end, int64_t steps, Options opts) {
  // start + i*(end-start)/(steps-1), computed in float64 and converted once.
  const DType want = opts.dtype.value_or(DType::f32);
  Options f64 = opts;
  f64.dtype = DType::f64;
  f64.requires_grad = false;
  Tensor i = arange(0, static_cast<double>(steps), 1, f64);
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  Tensor t = (i * step + start).to(want);
  return finish(t, opts);
}

Tensor eye(int64_t n, int64_t m, Options opts) {
  if (m == 0) m = n;
  Options o = opts;
  o.requires_grad = false;
  Tensor t = zeros({n, m}, o);
  // The diagonal is a strided view with stride m+1.
  const int64_t k = std::min(n, m);
  gn_tensor* diag = nullptr;
  const int64_t shape[1] = {k}, stride[1] = {m + 1};
  check(gn_tensor_as_strided(t.handle(), shape, stride, 1, gn_tensor_storage_offset(t.handle()), &diag), "eye");
  Tensor::adopt(diag).fill_(1);
  return finish(t, opts);
}

Tensor rand(Shape shape, Options opts) {
  Tensor t = call1(GN_OP_HANDLE("rand"), {},
                   {gn_attr_ints(shape.data(), shape.size()), gn_attr_int(dt(opts, DType::f32)),
                    gn_attr_device(detail::device_of(opts).c())});
  return finish(t, opts);
}
Tensor randn(Shape shape, Options opts) {
  Tensor t = call1(GN_OP_HANDLE("randn"), {},
                   {gn_attr_ints(shape.data(), shape.size()), gn_attr_int(dt(opts, DType::f32)),
                    gn_attr_device(detail::device_of(opts).c())});
  return finish(t, opts);
}
Tensor randint(int64_t low, int64_t high, Shape shape, Options opts) {
  Tensor t = call1(GN_OP_HANDLE("randint"), {},
                   {gn_attr_int(low), gn_attr_int(high), gn_attr_ints(shape.data(), shape.size()),
                    gn_attr_int(dt(opts, DType::i64)), gn_attr_device(detail::device_of(opts).c())});
  return finish(t, opts);
}

namespace {
// t's dtype and device unless opts say otherwise.
Options like(const Tensor& t, Options o) {
  if (!o.dtype) o.dtype = t.dtype();
  if (!o.device) o.device = t.device();
  return o;
}
}  // namespace

Tensor zeros_like(const Tensor& t, Options o) { return zeros(t.shape(), like(t, o)); }
Tensor ones_like(const Tensor& t, Options o) { return ones(t.shape(), like(t, o)); }
Tensor full_like(const Tensor& t, double v, Options o) { return full(t.shape(), v, like(t, o)); }
Tensor rand_like(const Tensor& t, Options o) { return rand(t.shape(), like(t, o)); }
Tensor randn_like(const Tensor& t, Options o) { return randn(t.shape(), like(t, o)); }
Tensor empty_like(const Tensor& t, Options o) { return empty(t.shape(), like(t, o)); }
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, Options o) {
  if (!o.device) o.device = t.device();
  return randint(low, high, t.shape(), o);
}

Tensor wrap_scalar(const Scalar& s, const Device& d) {
  gn_tensor* h = nullptr;
  check(gn_tensor_scalar(runtime(), s.value, static_cast<int32_t>(s.kind), d.c(), &h), "scalar");
  return Tensor::adopt(h);
}

}  // namespace genesis
