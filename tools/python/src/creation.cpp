// tools/python/src/creation.cpp - creation functions: tensor() from nested
// lists, numbers, NumPy arrays (anything with the buffer protocol) or tensors,
// and zeros/ones/full/empty/arange/linspace/eye/rand/randn/randint/randperm and
// their *_like forms, with torch's keywords (dtype, device, requires_grad,
// generator).  Sizes are `*size` or one tuple, as in torch.
#include <cstring>

#include "bind.h"
#include "genesis/random.hpp"

namespace genesis::python {
namespace {

// ---- nested Python lists / numbers

struct Nested {
  std::vector<double> values;
  std::vector<int64_t> ints;  // exact integers (int64 beyond 2^53)
  Shape shape;
  bool any_float = false, all_bool = true;
};

void walk(py::handle o, size_t depth, Nested& n) {
  if (py::isinstance<Tensor>(o)) {
    const Tensor& t = o.cast<const Tensor&>();
    if (t.numel() != 1 || t.dim() != 0) throw py::type_error("tensor(): nested tensors must be 0-d (use stack)");
    walk(item_object(t), depth, n);
    return;
  }
  if (PyList_Check(o.ptr()) || PyTuple_Check(o.ptr())) {
    const int64_t len = static_cast<int64_t>(py::len(o));
    if (depth == n.shape.size()) {
      if (!n.values.empty()) throw py::value_error("tensor(): ragged nested sequence");
      n.shape.push_back(len);
    } else if (depth > n.shape.size() || n.shape[depth] != len) {
      throw py::value_error("tensor(): ragged nested sequence (expected length " +
                            std::to_string(depth < n.shape.size() ? n.shape[depth] : 0) + " at dim " +
                            std::to_string(depth) + ", got " + std::to_string(len) + ")");
    }
    for (py::handle x : o) walk(x, depth + 1, n);
    return;
  }
  if (depth != n.shape.size()) throw py::value_error("tensor(): ragged nested sequence");
  if (PyBool_Check(o.ptr())) {
    n.values.push_back(o.ptr() == Py_True ? 1 : 0);
    n.ints.push_back(o.ptr() == Py_True ? 1 : 0);
    return;
  }
  n.all_bool = false;
  if (PyLong_Check(o.ptr())) {
    const int64_t v = o.cast<int64_t>();
    n.values.push_back(static_cast<double>(v));
    n.ints.push_back(v);
    return;
  }
  if (is_number(o) || PyFloat_Check(o.ptr())) {
    py::object v = PyFloat_Check(o.ptr()) ? py::reinterpret_borrow<py::object>(o) : o.attr("item")();
    if (PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) {
      walk(v, depth, n);
      return;
    }
    n.any_float = true;
    n.values.push_back(v.cast<double>());
    n.ints.push_back(0);
    return;
  }
  throw py::type_error("tensor(): could not convert an object of type " +
                       std::string(py::str(py::type::handle_of(o).attr("__name__"))) + " to a number");
}

DType dtype_of_format(const py::buffer_info& b) {
  const std::string& f = b.format;
  const char c = f.empty() ? '?' : f.back();
  switch (c) {
    case 'f': return DType::f32;
    case 'd': return DType::f64;
    case 'e': return DType::f16;
    case 'b': return DType::i8;
    case 'B': return DType::u8;
    case '?': return DType::boolean;
    case 'i':
    case 'l':
    case 'q':
      if (b.itemsize == 4) return DType::i32;
      if (b.itemsize == 8) return DType::i64;
      break;
    default: break;
  }
  throw py::type_error("tensor(): unsupported buffer format '" + f + "'");
}

Tensor finish(Tensor t, const Options& o) {
  if (o.dtype && t.dtype() != *o.dtype) t = t.to(*o.dtype);
  if (o.device && !(t.device() == *o.device)) t = t.to(*o.device);
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor tensor_from_object(py::handle data, const Options& o) {
  if (py::isinstance<Tensor>(data)) {
    Options c = o;
    return finish(data.cast<const Tensor&>().detach().clone(), c);
  }
  if (!PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) && !PyFloat_Check(data.ptr()) &&
      !PyLong_Check(data.ptr()) && (py::hasattr(data, "__array_interface__") || PyObject_CheckBuffer(data.ptr()))) {
    // NumPy arrays (0-d ones too: their dtype is kept) and other buffers
    py::object arr = py::module_::import("numpy").attr("asarray")(data, py::arg("order") = "C");
    py::buffer_info b = py::reinterpret_borrow<py::buffer>(arr).request();
    const DType dt = dtype_of_format(b);
    Shape shape(b.shape.begin(), b.shape.end());
    gn_tensor* h = nullptr;
    check(gn_tensor_from_host(runtime(), b.ptr, shape.data(), static_cast<int32_t>(shape.size()),
                              static_cast<int32_t>(dt), Device("cpu").c(), &h));
    return finish(Tensor::adopt(h), o);
  }
  Nested n;
  walk(data, 0, n);
  Options c = o;
  c.requires_grad = false;
  DType dt = n.any_float ? DType::f32 : n.all_bool && !n.values.empty() ? DType::boolean : DType::i64;
  if (n.values.empty()) dt = DType::f32;
  if (!c.dtype) c.dtype = dt;
  Tensor t = (!n.any_float && !is_floating(*c.dtype)) ? tensor(n.ints, n.shape, c) : tensor(n.values, n.shape, c);
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}

void bind_creation(py::module_& m) {
  m.def(
      "tensor",
      [](py::handle data, py::handle dtype, py::handle device, bool requires_grad) {
        return tensor_from_object(data, make_options(dtype, device, requires_grad));
      },
      py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def(
      "as_tensor",
      [](py::handle data, py::handle dtype, py::handle device) -> Tensor {
        if (py::isinstance<Tensor>(data)) {
          Tensor t = data.cast<Tensor>();
          Options o = make_options(dtype, device, false);
          if (o.device && !(t.device() == *o.device)) t = t.to(*o.device);
          if (o.dtype && t.dtype() != *o.dtype) t = t.to(*o.dtype);
          return t;
        }
        return tensor_from_object(data, make_options(dtype, device, false));
      },
      py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = py::none());

#define GN_PY_SIZED(name, expr)                                                           \
  m.def(                                                                                  \
      #name,                                                                              \
      [](const py::args& size, py::handle dtype, py::handle device, bool requires_grad) { \
        Options o = make_options(dtype, device, requires_grad);                           \
        Shape s = shape_from_args(size);                                                  \
        return expr;                                                                      \
      },                                                                                  \
      py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  GN_PY_SIZED(zeros, zeros(s, o))
  GN_PY_SIZED(ones, ones(s, o))
  GN_PY_SIZED(empty, empty(s, o))
#undef GN_PY_SIZED
  // rand/randn take generator= as torch
#define GN_PY_RANDOM(name)                                                                                          \
  m.def(                                                                                                            \
      #name,                                                                                                        \
      [](const py::args& size, Generator* gen, py::handle dtype, py::handle device, bool requires_grad) {           \
        Options o = make_options(dtype, device, requires_grad);                                                     \
        return gen ? name(shape_from_args(size), *gen, o) : name(shape_from_args(size), o);                         \
      },                                                                                                            \
      py::kw_only(), py::arg("generator") = nullptr, py::arg("dtype") = py::none(), py::arg("device") = py::none(), \
      py::arg("requires_grad") = false);
  GN_PY_RANDOM(rand)
  GN_PY_RANDOM(randn)
#undef GN_PY_RANDOM
  m.def(
      "randint",
      [](int64_t a, py::handle b, py::handle size, Generator* gen, py::handle dtype, py::handle device) {
        // randint(high, size) or randint(low, high, size)
        int64_t low = 0, high = a;
        Shape s;
        if (size.is_none()) {
          s = shape_from_object(b);
        } else {
          low = a;
          high = b.cast<int64_t>();
          s = shape_from_object(size);
        }
        Options o = make_options(dtype, device, false);
        return gen ? randint(low, high, s, *gen, o) : randint(low, high, s, o);
      },
      py::arg("low"), py::arg("high"), py::arg("size") = py::none(), py::kw_only(), py::arg("generator") = nullptr,
      py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def(
      "randperm",
      [](int64_t n, Generator* gen, py::handle dtype, py::handle device) {
        return randperm(n, gen, make_options(dtype, device, false));
      },
      py::arg("n"), py::kw_only(), py::arg("generator") = nullptr, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  m.def(
      "bernoulli", [](const Tensor& p, Generator* gen) { return bernoulli(p, gen); }, py::arg("input"), py::kw_only(),
      py::arg("generator") = nullptr);
  m.def(
      "full",
      [](py::handle size, py::handle value, py::handle dtype, py::handle device, bool requires_grad) {
        Options o = make_options(dtype, device, requires_grad);
        const Scalar v = to_scalar(value);
        if (!o.dtype) o.dtype = v.kind == DType::f64 ? DType::f32 : v.kind;  // torch infers from the value
        return full(shape_from_object(size), v.value, o);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "arange",
      [](py::handle a, py::handle b, py::handle step, py::handle dtype, py::handle device, bool requires_grad) {
        Options o = make_options(dtype, device, requires_grad);
        const Scalar sa = to_scalar(a);
        if (b.is_none()) {
          if (!o.dtype) o.dtype = sa.kind == DType::f64 ? DType::f32 : DType::i64;
          return arange(sa.value, o);
        }
        const Scalar sb = to_scalar(b), ss = step.is_none() ? Scalar(int64_t{1}) : to_scalar(step);
        if (!o.dtype && (sa.kind == DType::f64 || sb.kind == DType::f64 || ss.kind == DType::f64)) o.dtype = DType::f32;
        return arange(sa.value, sb.value, ss.value, o);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = py::none(), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, py::handle dtype, py::handle device, bool requires_grad) {
        return linspace(start, end, steps, make_options(dtype, device, requires_grad));
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> mm, py::handle dtype, py::handle device, bool requires_grad) {
        return eye(n, mm.value_or(n), make_options(dtype, device, requires_grad));
      },
      py::arg("n"), py::arg("m") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "scalar_tensor",
      [](double v, py::handle dtype, py::handle device, bool requires_grad) {
        return scalar_tensor(v, make_options(dtype, device, requires_grad));
      },
      py::arg("s"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);

#define GN_PY_LIKE(name)                                                                              \
  m.def(                                                                                              \
      #name,                                                                                          \
      [](const Tensor& t, py::handle dtype, py::handle device, bool requires_grad) {                  \
        return name(t, make_options(dtype, device, requires_grad));                                   \
      },                                                                                              \
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(), \
      py::arg("requires_grad") = false);
  GN_PY_LIKE(zeros_like)
  GN_PY_LIKE(ones_like)
  GN_PY_LIKE(empty_like)
  GN_PY_LIKE(rand_like)
  GN_PY_LIKE(randn_like)
#undef GN_PY_LIKE
  m.def(
      "full_like",
      [](const Tensor& t, double v, py::handle dtype, py::handle device, bool requires_grad) {
        return full_like(t, v, make_options(dtype, device, requires_grad));
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "randint_like",
      [](const Tensor& t, int64_t low, std::optional<int64_t> high, py::handle dtype, py::handle device) {
        if (!high) return randint_like(t, 0, low, make_options(dtype, device, false));
        return randint_like(t, low, *high, make_options(dtype, device, false));
      },
      py::arg("input"), py::arg("low"), py::arg("high") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
}

}  // namespace genesis::python
