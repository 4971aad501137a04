// tools/python/src/tensor_math.cpp - Tensor operators (+ - * / @ ** and
// comparisons, with Python numbers on either side) and the math, reduction,
// view and in-place methods, with torch's names and keywords.
#include <cmath>
#include <limits>

#include "bind.h"
#include "genesis/autograd.hpp"

namespace genesis::python {
namespace {

// Runs op on (a, other): other may be a Tensor or a Python number; anything else -> NotImplemented.
template <class FT, class FS>
py::object binary(const Tensor& a, py::handle other, FT with_tensor, FS with_scalar) {
  if (py::isinstance<Tensor>(other)) return py::cast(with_tensor(a, other.cast<const Tensor&>()));
  if (PyBool_Check(other.ptr()) || PyLong_Check(other.ptr()) || PyFloat_Check(other.ptr()) || is_number(other))
    return py::cast(with_scalar(a, to_scalar(other)));
  return py::reinterpret_borrow<py::object>(Py_NotImplemented);
}

// Non-differentiable op by name through the C API (logical_and, logical_or).
Tensor call_plain(const char* name, const Tensor& a, const Tensor& b) {
  const gn_op* op = nullptr;
  check(gn_op_find(runtime(), name, &op));
  gn_tensor* in[2] = {a.handle(), b.handle()};
  gn_tensor* out[1] = {nullptr};
  check(gn_op_call(runtime(), op, in, 2, nullptr, 0, out, 1));
  return Tensor::adopt(out[0]);
}

py::object values_indices(std::pair<Tensor, Tensor> p) {
  static py::object type = py::module_::import("collections").attr("namedtuple")("values_indices", "values indices");
  return type(p.first, p.second);
}

// x.max()/x.min(): the value over everything; with a dim, (values, indices) as torch; with a tensor, the elementwise
// maximum/minimum.
py::object max_or_min(const Tensor& x, py::handle dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return py::cast(is_max ? x.max() : x.min());
  if (py::isinstance<Tensor>(dim)) {
    const Tensor& other = dim.cast<const Tensor&>();
    return py::cast(is_max ? x.maximum(other) : x.minimum(other));
  }
  const int64_t d = dim.cast<int64_t>();
  if (is_max) return values_indices({x.max(d, keepdim), x.argmax(d, keepdim)});
  return values_indices({x.min(d, keepdim), x.argmin(d, keepdim)});
}

// In-place updates return the Python object they were called on (x.add_(y) is x).
py::object add_(py::object self, py::handle o, double alpha) {
  Tensor& x = self.cast<Tensor&>();
  if (!py::isinstance<Tensor>(o) && alpha == 1.0)
    x.add_(to_scalar(o));
  else
    x.add_(as_tensor_like(o, x), alpha);
  return self;
}

py::object sub_(py::object self, py::handle o, double alpha) {
  Tensor& x = self.cast<Tensor&>();
  x.sub_(as_tensor_like(o, x), alpha);
  return self;
}

py::object mul_(py::object self, py::handle o) {
  Tensor& x = self.cast<Tensor&>();
  if (py::isinstance<Tensor>(o))
    x.mul_(o.cast<const Tensor&>());
  else
    x.mul_(to_scalar(o));
  return self;
}

py::object div_(py::object self, py::handle o) {
  Tensor& x = self.cast<Tensor&>();
  if (py::isinstance<Tensor>(o))
    x.div_(o.cast<const Tensor&>());
  else
    x.mul_(Scalar(1.0 / to_scalar(o).value));
  return self;
}

// ---- Tensor's operators (+ - * / ** @, comparisons, x += y)
void bind_operators(py::class_<Tensor>& t) {
  // x op y with a Tensor or a Python number on the other side (NotImplemented for anything else)
#define GN_PY_BINARY(py_name, with_tensor, with_scalar)                         \
  t.def(                                                                        \
      py_name,                                                                  \
      [](const Tensor& a, py::handle o) {                                       \
        return binary(                                                          \
            a, o, [](const Tensor& x, const Tensor& y) { return with_tensor; }, \
            [](const Tensor& x, const Scalar& s) { return with_scalar; });      \
      },                                                                        \
      py::is_operator());
  GN_PY_BINARY("__add__", x + y, x + s)
  GN_PY_BINARY("__radd__", y + x, s + x)
  GN_PY_BINARY("__sub__", x - y, x - s)
  GN_PY_BINARY("__rsub__", y - x, s - x)
  GN_PY_BINARY("__mul__", x * y, x * s)
  GN_PY_BINARY("__rmul__", y * x, s * x)
  GN_PY_BINARY("__truediv__", x / y, x / s)
  GN_PY_BINARY("__rtruediv__", y / x, s / x)
  GN_PY_BINARY("__pow__", x.pow(y), x.pow(s))
  GN_PY_BINARY("__rpow__", y.pow(x), wrap_scalar(s, x.device()).pow(x))
  t.def(
       "__matmul__", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, py::is_operator())
      .def(
          "__rmatmul__", [](const Tensor& a, const Tensor& b) { return b.matmul(a); }, py::is_operator())
      .def("__neg__", [](const Tensor& a) { return -a; })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return a.abs(); })
      .def("__invert__", [](const Tensor& a) { return a.logical_not(); })
      .def(
          "__and__", [](const Tensor& a, py::handle o) { return call_plain("logical_and", a, as_tensor_like(o, a)); },
          py::is_operator())
      .def(
          "__or__", [](const Tensor& a, py::handle o) { return call_plain("logical_or", a, as_tensor_like(o, a)); },
          py::is_operator());
  // comparisons: always a bool tensor (never NotImplemented for numbers)
  GN_PY_BINARY("__eq__", x == y, x == s)
  GN_PY_BINARY("__ne__", x != y, x != s)
  GN_PY_BINARY("__lt__", x < y, x < s)
  GN_PY_BINARY("__le__", x <= y, x <= s)
  GN_PY_BINARY("__gt__", x > y, x > s)
  GN_PY_BINARY("__ge__", x >= y, x >= s)
#undef GN_PY_BINARY
  // x += y and friends: in place, as torch (the same Python object comes back; autograd records the write).
  t.def("__iadd__", [](py::object self, py::handle o) { return add_(self, o, 1.0); })
      .def("__isub__", [](py::object self, py::handle o) { return sub_(self, o, 1.0); })
      .def("__imul__", [](py::object self, py::handle o) { return mul_(self, o); })
      .def("__itruediv__", [](py::object self, py::handle o) { return div_(self, o); });
}

// ---- elementwise methods and comparison methods
void bind_elementwise(py::class_<Tensor>& t) {
// clang-format off
#define GN_PY_UNARY(name) t.def(#name, &Tensor::name);
  GN_PY_UNARY(neg) GN_PY_UNARY(abs) GN_PY_UNARY(sign) GN_PY_UNARY(exp) GN_PY_UNARY(log) GN_PY_UNARY(log1p)
  GN_PY_UNARY(sqrt) GN_PY_UNARY(rsqrt) GN_PY_UNARY(sin) GN_PY_UNARY(cos) GN_PY_UNARY(tanh) GN_PY_UNARY(sigmoid)
  GN_PY_UNARY(relu) GN_PY_UNARY(silu) GN_PY_UNARY(reciprocal) GN_PY_UNARY(square) GN_PY_UNARY(floor)
  GN_PY_UNARY(ceil) GN_PY_UNARY(round) GN_PY_UNARY(logical_not) GN_PY_UNARY(isnan) GN_PY_UNARY(isinf)
  GN_PY_UNARY(isfinite) GN_PY_UNARY(t)
// clang-format on
#undef GN_PY_UNARY
          t.def("expm1", [](const Tensor& x) { return call_unary("expm1", x); })
              .def("negative", &Tensor::neg)
              .def(
                  "gelu", [](const Tensor& x, const std::string& approximate) { return x.gelu(approximate == "tanh"); },
                  py::arg("approximate") = "none")
              .def(
                  "clamp",
                  [](const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
                    const double inf = std::numeric_limits<double>::infinity();
                    return x.clamp(lo.value_or(-inf), hi.value_or(inf));
                  },
                  py::arg("min") = py::none(), py::arg("max") = py::none())
              .def("pow",
                   [](const Tensor& x, py::handle p) {
                     if (py::isinstance<Tensor>(p)) return x.pow(p.cast<const Tensor&>());
                     return x.pow(to_scalar(p));
                   })
              .def(
                  "add", [](const Tensor& x, py::handle o, double alpha) { return x.add(as_tensor_like(o, x), alpha); },
                  py::arg("other"), py::arg("alpha") = 1.0)
              .def(
                  "sub", [](const Tensor& x, py::handle o, double alpha) { return x.sub(as_tensor_like(o, x), alpha); },
                  py::arg("other"), py::arg("alpha") = 1.0)
              .def("mul", [](const Tensor& x, py::handle o) { return x.mul(as_tensor_like(o, x)); })
              .def("div", [](const Tensor& x, py::handle o) { return x.div(as_tensor_like(o, x)); })
              .def("maximum", &Tensor::maximum)
              .def("minimum", &Tensor::minimum)
              .def("matmul", &Tensor::matmul)
              .def("logical_and", [](const Tensor& a, const Tensor& b) { return call_plain("logical_and", a, b); })
              .def("logical_or", [](const Tensor& a, const Tensor& b) { return call_plain("logical_or", a, b); })
              .def("masked_fill", [](const Tensor& x, const Tensor& mask, double v) { return x.masked_fill(mask, v); })
              .def("triu", &Tensor::triu, py::arg("diagonal") = 0)
              .def("tril", &Tensor::tril, py::arg("diagonal") = 0);
#define GN_PY_COMPARE_METHOD(name) \
  t.def(#name, [](const Tensor& a, py::handle o) { return a.name(as_tensor_like(o, a)); });
  GN_PY_COMPARE_METHOD(eq)
  GN_PY_COMPARE_METHOD(ne)
  GN_PY_COMPARE_METHOD(lt)
  GN_PY_COMPARE_METHOD(le)
  GN_PY_COMPARE_METHOD(gt)
  GN_PY_COMPARE_METHOD(ge)
#undef GN_PY_COMPARE_METHOD
}

// ---- reductions (dim None = all dims), sorting
void bind_reductions(py::class_<Tensor>& t) {
  t.def(
       "sum",
       [](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
         Tensor src = dtype.is_none() ? x : x.to(dtype.cast<DType>());
         return src.sum(dims_from_object(dim), keepdim);
       },
       py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none())
      .def(
          "mean",
          [](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
            Tensor src = dtype.is_none() ? x : x.to(dtype.cast<DType>());
            return src.mean(dims_from_object(dim), keepdim);
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none())
      .def(
          "prod", [](const Tensor& x, py::handle dim, bool keepdim) { return x.prod(dims_from_object(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "amax", [](const Tensor& x, py::handle dim, bool keepdim) { return x.max(dims_from_object(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "amin", [](const Tensor& x, py::handle dim, bool keepdim) { return x.min(dims_from_object(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      // max()/min(): the value over everything; max(dim)/min(dim): (values, indices) as torch
      .def(
          "max", [](const Tensor& x, py::handle dim, bool keepdim) { return max_or_min(x, dim, keepdim, true); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "min", [](const Tensor& x, py::handle dim, bool keepdim) { return max_or_min(x, dim, keepdim, false); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmax", &Tensor::argmax, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmin", &Tensor::argmin, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "var",
          [](const Tensor& x, py::handle dim, std::optional<bool> unbiased, bool keepdim,
             std::optional<double> correction) {
            const double c = correction ? *correction : (unbiased.value_or(true) ? 1.0 : 0.0);
            return x.var(dims_from_object(dim), c, keepdim);
          },
          py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
          py::arg("correction") = py::none())
      .def(
          "std",
          [](const Tensor& x, py::handle dim, std::optional<bool> unbiased, bool keepdim,
             std::optional<double> correction) {
            const double c = correction ? *correction : (unbiased.value_or(true) ? 1.0 : 0.0);
            return x.std(dims_from_object(dim), c, keepdim);
          },
          py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
          py::arg("correction") = py::none())
      .def(
          "logsumexp",
          [](const Tensor& x, py::handle dim, bool keepdim) { return x.logsumexp(dims_from_object(dim), keepdim); },
          py::arg("dim"), py::arg("keepdim") = false)
      .def(
          "norm",
          [](const Tensor& x, py::handle p, py::handle dim, bool keepdim) {
            double pv = 2;
            if (!p.is_none()) {
              if (py::isinstance<py::str>(p)) {
                if (p.cast<std::string>() != "fro") throw py::value_error("norm: p must be a number or 'fro'");
              } else {
                pv = p.cast<double>();
              }
            }
            return x.norm(pv, dims_from_object(dim), keepdim);
          },
          py::arg("p") = 2, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("all", [](const Tensor& x) { return (x != Scalar(0)).to(DType::i64).min().to(DType::boolean); })
      .def("any", [](const Tensor& x) { return (x != Scalar(0)).to(DType::i64).max().to(DType::boolean); })
      .def(
          "softmax", [](const Tensor& x, int64_t dim) { return x.softmax(dim); }, py::arg("dim"))
      .def(
          "log_softmax", [](const Tensor& x, int64_t dim) { return x.log_softmax(dim); }, py::arg("dim"))
      .def(
          "topk",
          [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
            return values_indices(x.topk(k, dim, largest, sorted));
          },
          py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true)
      .def(
          "sort",
          [](const Tensor& x, int64_t dim, bool descending, bool) { return values_indices(x.sort(dim, descending)); },
          py::arg("dim") = -1, py::arg("descending") = false, py::arg("stable") = false)  // always stable
      .def(
          "argsort", [](const Tensor& x, int64_t dim, bool descending, bool) { return x.argsort(dim, descending); },
          py::arg("dim") = -1, py::arg("descending") = false, py::arg("stable") = false);
}

// ---- views, joins, gathers and scatters
void bind_views(py::class_<Tensor>& t) {
  t.def("reshape", [](const Tensor& x, const py::args& s) { return x.reshape(shape_from_args(s)); })
      .def("view",
           [](const Tensor& x, const py::args& s) {
             if (s.size() == 1 && py::isinstance<DType>(s[0]))
               throw py::type_error("view(dtype) is not supported; use .to(dtype)");
             return x.view(shape_from_args(s));
           })
      .def("view_as", [](const Tensor& x, const Tensor& o) { return x.view(o.shape()); })
      .def("reshape_as", [](const Tensor& x, const Tensor& o) { return x.reshape(o.shape()); })
      .def("permute", [](const Tensor& x, const py::args& d) { return x.permute(shape_from_args(d)); })
      .def("transpose", &Tensor::transpose)
      .def("swapaxes", &Tensor::transpose)
      .def_property_readonly("T",
                             [](const Tensor& x) {
                               Shape d(static_cast<size_t>(x.dim()));
                               for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int64_t>(d.size() - 1 - i);
                               return x.permute(d);
                             })
      .def_property_readonly("mT", [](const Tensor& x) { return x.transpose(-2, -1); })
      .def("squeeze", &Tensor::squeeze, py::arg("dim") = py::none())
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"))
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("expand", [](const Tensor& x, const py::args& s) { return x.expand(shape_from_args(s)); })
      .def("expand_as", &Tensor::expand_as)
      .def("narrow", [](const Tensor& x, int64_t dim, int64_t start,
                        int64_t length) { return x.slice(dim, start, start + length); })
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"))
      .def(
          "split",
          [](const Tensor& x, py::handle size, int64_t dim) {
            if (PyLong_Check(size.ptr())) return x.split(size.cast<int64_t>(), dim);
            return x.split_with_sizes(shape_from_object(size), dim);
          },
          py::arg("split_size_or_sections"), py::arg("dim") = 0)
      .def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0)
      .def(
          "unbind",
          [](const Tensor& x, int64_t dim) {
            std::vector<Tensor> out;
            const int64_t n = x.size(dim);
            for (int64_t i = 0; i < n; ++i) out.push_back(x.select(dim, i));
            return py::tuple(py::cast(out));
          },
          py::arg("dim") = 0)
      .def("index_select", &Tensor::index_select, py::arg("dim"), py::arg("index"))
      .def("gather", &Tensor::gather, py::arg("dim"), py::arg("index"))
      .def("masked_select", &Tensor::masked_select, py::arg("mask"))
      .def("nonzero", &Tensor::nonzero)
      .def(
          "scatter",
          [](const Tensor& x, int64_t dim, const Tensor& index, py::handle src) {
            return scatter(x, dim, index, as_tensor_like(src, x).expand(index.shape()));
          },
          py::arg("dim"), py::arg("index"), py::arg("src"))
      .def(
          "scatter_add",
          [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
            return scatter_add(x, dim, index, src);
          },
          py::arg("dim"), py::arg("index"), py::arg("src"))
      .def(
          "index_add",
          [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
            return index_add(x, dim, index, src, alpha);
          },
          py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1.0);
}

// ---- in-place methods: recorded as torch records them (a leaf that requires grad is refused); they return self
void bind_inplace(py::class_<Tensor>& t) {
  // x.exp_() and the other one-input ops with a gradient rule (or a zero derivative): written in place.
  for (const char* op : {"neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
                         "sigmoid", "relu", "reciprocal", "square", "floor", "ceil", "round"}) {
    const std::string name = op;
    t.def((name + "_").c_str(), [name](py::object self) {
      self.cast<Tensor&>().unary_(name);
      return self;
    });
  }
  t.def("negative_", [](py::object self) {
    self.cast<Tensor&>().unary_("neg");
    return self;
  });
  t.def(
      "masked_fill_",
      [](py::object self, const Tensor& mask, py::handle value) {
        Tensor& x = self.cast<Tensor&>();
        x.masked_fill_(mask,
                       py::isinstance<Tensor>(value) ? value.cast<Tensor>().item_double() : to_scalar(value).value);
        return self;
      },
      py::arg("mask"), py::arg("value"));
  t.def("add_", &add_, py::arg("other"), py::arg("alpha") = 1.0)
      .def("sub_", &sub_, py::arg("other"), py::arg("alpha") = 1.0)
      .def("mul_", &mul_, py::arg("other"))
      .def("div_", &div_, py::arg("other"))
      .def("zero_",
           [](py::object self) {
             self.cast<Tensor&>().zero_();
             return self;
           })
      .def(
          "fill_",
          [](py::object self, py::handle v) {
            self.cast<Tensor&>().fill_(to_scalar(v).value);
            return self;
          },
          py::arg("value"))
      .def(
          "copy_",
          [](py::object self, const Tensor& src) {
            self.cast<Tensor&>().copy_(src);
            return self;
          },
          py::arg("src"))
      .def(
          "clamp_",
          [](py::object self, std::optional<double> lo, std::optional<double> hi) {
            const double inf = std::numeric_limits<double>::infinity();
            self.cast<Tensor&>().clamp_(lo.value_or(-inf), hi.value_or(inf));
            return self;
          },
          py::arg("min") = py::none(), py::arg("max") = py::none());
}

}  // namespace

void bind_tensor_math(py::module_& m) {
  py::class_<Tensor> t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_operators(t);
  bind_elementwise(t);
  bind_reductions(t);
  bind_views(t);
  bind_inplace(t);
}

}  // namespace genesis::python
