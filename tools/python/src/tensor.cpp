// tools/python/src/tensor.cpp - dtype, device, the argument conversions of
// bind.h, and the Tensor class: metadata, conversion, autograd, printing.
// Operators and math methods are in tensor_math.cpp, indexing in indexing.cpp.
#include <sstream>

#include "bind.h"
#include "genesis/autograd.hpp"

namespace genesis::python {

// ------------------------------------------------------------ conversions

bool is_number(py::handle o) {
  if (PyBool_Check(o.ptr()) || PyLong_Check(o.ptr()) || PyFloat_Check(o.ptr())) return true;
  // NumPy scalars: integers have __index__, floats __float__ (but not our Tensor, checked first by callers).
  return py::hasattr(o, "dtype") && py::hasattr(o, "item") && !py::isinstance<Tensor>(o) &&
         py::len(o.attr("shape")) == 0;
}

Scalar to_scalar(py::handle o) {
  if (PyBool_Check(o.ptr())) return Scalar(o.ptr() == Py_True);
  if (PyLong_Check(o.ptr())) return Scalar(static_cast<int64_t>(PyLong_AsLongLong(o.ptr())));
  if (PyFloat_Check(o.ptr())) return Scalar(PyFloat_AsDouble(o.ptr()));
  if (is_number(o)) return to_scalar(o.attr("item")());
  throw py::type_error(std::string("expected a number, got ") +
                       std::string(py::str(py::type::handle_of(o).attr("__name__"))));
}

Shape shape_from_object(py::handle o) {
  if (PyLong_Check(o.ptr())) return {o.cast<int64_t>()};
  Shape s;
  for (py::handle d : py::iter(o)) s.push_back(d.cast<int64_t>());
  return s;
}

Shape shape_from_args(const py::args& args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return shape_from_object(args[0]);
  Shape s;
  for (py::handle d : args) s.push_back(d.cast<int64_t>());
  return s;
}

Dims dims_from_object(py::handle o) {
  if (o.is_none()) return Dims();
  if (PyLong_Check(o.ptr())) return Dims(o.cast<int64_t>());
  return Dims(shape_from_object(o));
}

Device to_device(py::handle o) {
  if (py::isinstance<Device>(o)) return o.cast<Device>();
  if (PyLong_Check(o.ptr())) return Device("cuda:" + std::to_string(o.cast<int64_t>()));
  if (py::isinstance<py::str>(o)) return Device(o.cast<std::string>());
  throw py::type_error("expected a device (genesis.device, a string such as 'cuda:0', or an int)");
}

Options make_options(py::handle dtype, py::handle device, bool requires_grad) {
  Options o;
  if (!dtype.is_none()) o.dtype = dtype.cast<DType>();
  if (!device.is_none()) o.device = to_device(device);
  o.requires_grad = requires_grad;
  return o;
}

Tensor as_tensor_like(py::handle o, const Tensor& like) {
  if (py::isinstance<Tensor>(o)) return o.cast<Tensor>();
  return wrap_scalar(to_scalar(o), like.device());
}

py::object item_object(const Tensor& t) {
  const double v = t.item_double();
  switch (t.dtype()) {
    case DType::boolean: return py::bool_(v != 0);
    case DType::i8:
    case DType::u8:
    case DType::i32:
    case DType::i64: return py::int_(static_cast<int64_t>(v));
    default: return py::float_(v);
  }
}

std::shared_ptr<py::function> keep_callable(py::function f) {
  return std::shared_ptr<py::function>(new py::function(std::move(f)), [](py::function* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

namespace {

// Nested Python lists of t's values (row-major doubles reshaped).
py::object nested_list(const std::vector<double>& v, const Shape& shape, size_t dim, size_t& pos, DType dt) {
  if (dim == shape.size()) {
    const double x = v[pos++];
    if (dt == DType::boolean) return py::bool_(x != 0);
    if (!is_floating(dt)) return py::int_(static_cast<int64_t>(x));
    return py::float_(x);
  }
  py::list out;
  for (int64_t i = 0; i < shape[dim]; ++i) out.append(nested_list(v, shape, dim + 1, pos, dt));
  return out;
}

// The target of .to(): positional device / dtype / tensor, or keywords device=, dtype=.
Tensor convert(const Tensor& t, const py::args& args, const py::kwargs& kwargs) {
  std::optional<Device> dev;
  std::optional<DType> dt;
  auto take = [&](py::handle a) {
    if (a.is_none()) return;
    if (py::isinstance<DType>(a)) {
      dt = a.cast<DType>();
    } else if (py::isinstance<Tensor>(a)) {
      const Tensor& o = a.cast<const Tensor&>();
      dev = o.device();
      dt = o.dtype();
    } else {
      dev = to_device(a);
    }
  };
  for (py::handle a : args) take(a);
  if (kwargs.contains("device")) take(kwargs["device"]);
  if (kwargs.contains("dtype")) take(kwargs["dtype"]);
  Tensor y = t;
  if (dev && !(y.device() == *dev)) y = y.to(*dev);
  if (dt && y.dtype() != *dt) y = y.to(*dt);
  return y;
}

}  // namespace

// ------------------------------------------------------------ dtype, device

void bind_dtype_device(py::module_& m) {
  py::enum_<DType> dt(m, "dtype");
  dt.value("float32", DType::f32)
      .value("float16", DType::f16)
      .value("bfloat16", DType::bf16)
      .value("float64", DType::f64)
      .value("int8", DType::i8)
      .value("uint8", DType::u8)
      .value("int32", DType::i32)
      .value("int64", DType::i64)
      .value("bool", DType::boolean)
      .def_property_readonly("is_floating_point", [](DType d) { return is_floating(d); })
      .def_property_readonly("itemsize", [](DType d) { return gn_dtype_size(static_cast<int32_t>(d)); })
      .def_property_readonly("name", [](DType d) { return std::string(dtype_name(d)); });
  // Replaces enum_'s own "dtype.float32" (a .def would only add an overload after it).
  auto dtype_repr = [](DType d) { return std::string("genesis.") + dtype_name(d); };
  dt.attr("__repr__") = py::cpp_function(dtype_repr, py::is_method(dt));
  dt.attr("__str__") = py::cpp_function(dtype_repr, py::is_method(dt));

  py::class_<Device>(m, "device")
      .def(py::init([](py::handle spec, std::optional<int64_t> index) {
             if (index && py::isinstance<py::str>(spec))
               return Device(spec.cast<std::string>() + ":" + std::to_string(*index));
             return to_device(spec);
           }),
           py::arg("type"), py::arg("index") = py::none())
      .def_property_readonly("type", &Device::type)
      .def_property_readonly("index", &Device::index)
      .def("__str__",
           [](const Device& d) { return d.index() == 0 && d.type() == "cpu" ? std::string("cpu") : d.str(); })
      .def("__repr__",
           [](const Device& d) { return "device(type='" + d.type() + "', index=" + std::to_string(d.index()) + ")"; })
      .def("__eq__",
           [](const Device& a, py::handle b) {
             if (py::isinstance<Device>(b)) return a == b.cast<Device>();
             if (py::isinstance<py::str>(b)) {
               try {
                 return a == Device(b.cast<std::string>());
               } catch (const Error&) {
                 return false;
               }
             }
             return false;
           })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.str())); });
  py::implicitly_convertible<py::str, Device>();
  m.def("cuda_available", &cuda_available, "True when a CUDA device is usable");
}

// ------------------------------------------------------------ Tensor

void bind_tensor(py::module_& m) {
  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node")
      .def("name", [](const autograd::Node& n) { return autograd::node_display_name(n); })
      .def("__repr__", [](const autograd::Node& n) { return "<" + autograd::node_display_name(n) + ">"; })
      .def_property_readonly("next_functions", [](const autograd::Node& n) {
        py::list out;
        for (const auto& x : n.next) out.append(x ? py::cast(x) : py::none());
        return out;
      });

  py::class_<Tensor> t(m, "Tensor");
  t.def(py::init([](const Tensor& other) { return other; }), py::arg("data"),
        "A tensor that shares `data` (same storage and autograd state)");
  t.def(py::init([](py::handle data, py::handle dtype, py::handle device, bool requires_grad) {
          Options o = make_options(dtype, device, requires_grad);
          if (!o.dtype) o.dtype = DType::f32;  // torch.Tensor(list) is float32
          return tensor_from_object(data, o);
        }),
        py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = false,
        "A tensor holding a copy of data (nested lists, numbers, arrays); float32 unless dtype is given");
  // ---- metadata
  t.def_property_readonly("shape", [](const Tensor& x) { return py::tuple(py::cast(x.shape())); })
      .def(
          "size",
          [](const Tensor& x, std::optional<int64_t> dim) -> py::object {
            if (dim) return py::int_(x.size(*dim));
            return py::tuple(py::cast(x.shape()));
          },
          py::arg("dim") = py::none())
      .def(
          "stride",
          [](const Tensor& x, std::optional<int64_t> dim) -> py::object {
            Shape s = x.strides();
            if (dim) return py::int_(s.at(static_cast<size_t>(*dim < 0 ? *dim + x.dim() : *dim)));
            return py::tuple(py::cast(s));
          },
          py::arg("dim") = py::none())
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("is_cuda", [](const Tensor& x) { return x.device().type() == "cuda"; })
      .def("element_size", [](const Tensor& x) { return gn_dtype_size(static_cast<int32_t>(x.dtype())); })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", [](const Tensor& x) { return is_floating(x.dtype()); })
      .def("data_ptr", [](const Tensor& x) { return reinterpret_cast<uintptr_t>(gn_tensor_data_ptr(x.handle())); })
      .def("__len__",
           [](const Tensor& x) {
             if (x.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return x.size(0);
           })
      .def("__hash__", [](const Tensor& x) { return reinterpret_cast<uintptr_t>(x.impl().get()); });
  // ---- conversion
  t.def("to", &convert, "to(device), to(dtype), to(other), to(device=, dtype=): a converted copy (autograd-aware)")
      .def("cpu", [](const Tensor& x) { return x.device().type() == "cpu" ? x : x.to(Device("cpu")); })
      .def(
          "cuda",
          [](const Tensor& x, std::optional<int64_t> i) {
            return x.to(Device("cuda:" + std::to_string(i.value_or(0))));
          },
          py::arg("device") = py::none())
      .def("float", [](const Tensor& x) { return x.dtype() == DType::f32 ? x : x.to(DType::f32); })
      .def("double", [](const Tensor& x) { return x.dtype() == DType::f64 ? x : x.to(DType::f64); })
      .def("half", [](const Tensor& x) { return x.dtype() == DType::f16 ? x : x.to(DType::f16); })
      .def("bfloat16", [](const Tensor& x) { return x.dtype() == DType::bf16 ? x : x.to(DType::bf16); })
      .def("long", [](const Tensor& x) { return x.dtype() == DType::i64 ? x : x.to(DType::i64); })
      .def("int", [](const Tensor& x) { return x.dtype() == DType::i32 ? x : x.to(DType::i32); })
      .def("bool", [](const Tensor& x) { return x.dtype() == DType::boolean ? x : x.to(DType::boolean); })
      .def("type_as", [](const Tensor& x, const Tensor& o) { return x.dtype() == o.dtype() ? x : x.to(o.dtype()); })
      .def("item", &item_object, "The value of a one-element tensor as a Python number")
      .def("tolist",
           [](const Tensor& x) {
             size_t pos = 0;
             return nested_list(x.tolist(), x.shape(), 0, pos, x.dtype());
           })
      .def("__float__", [](const Tensor& x) { return x.item_double(); })
      .def("__int__", [](const Tensor& x) { return static_cast<int64_t>(x.item_double()); })
      .def("__index__",
           [](const Tensor& x) {
             if (is_floating(x.dtype()) || x.dtype() == DType::boolean || x.numel() != 1)
               throw py::type_error("only integer tensors of a single element can be converted to an index");
             return static_cast<int64_t>(x.item_double());
           })
      .def("__bool__",
           [](const Tensor& x) {
             if (x.numel() != 1)
               throw py::value_error("the truth value of a tensor with more than one element is ambiguous");
             return x.item_double() != 0;
           })
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def("__repr__", [](const Tensor& x) { return to_string(x); })
      .def("__str__", [](const Tensor& x) { return to_string(x); });
  // ---- autograd
  t.def_property("requires_grad", &Tensor::requires_grad, [](Tensor& x, bool on) { x.requires_grad_(on); })
      .def(
          "requires_grad_",
          [](py::object self, bool on) {
            self.cast<Tensor&>().requires_grad_(on);
            return self;
          },
          py::arg("requires_grad") = true)
      .def_property(
          "grad",
          [](const Tensor& x) -> py::object {
            Tensor g = x.grad();
            if (!g.defined()) return py::none();
            return py::cast(g);
          },
          [](const Tensor& x, py::handle g) { x.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property(
          "data",
          [](const Tensor& x) {
            // torch's .data: the same storage with a version counter of its own, so that writes
            // through it (old-style optimizers) do not invalidate tensors saved for backward.
            Tensor d = Tensor::borrow(x.handle());
            d.impl()->version = std::make_shared<autograd::VersionCounter>();
            d.impl()->version_storage = gn_tensor_storage_id(d.handle());
            return d;
          },
          [](const Tensor& x, const Tensor& src) {
            // Points x at src's data in place (torch's `p.data = ...`): every holder of x sees it.
            gn_tensor* h = src.handle();
            gn_tensor_retain(h);
            gn_tensor_release(x.impl()->h);
            x.impl()->h = h;
          })
      .def_property_readonly("grad_fn",
                             [](const Tensor& x) -> py::object {
                               auto n = x.grad_fn();
                               if (!n) return py::none();
                               return py::cast(n);
                             })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("_version", &Tensor::version)
      .def_property_readonly("retains_grad", [](const Tensor& x) { return x.impl() && x.impl()->retains_grad; })
      .def("retain_grad", &Tensor::retain_grad)
      .def("detach", &Tensor::detach)
      .def("detach_",
           [](Tensor& x) {
             x.impl()->grad_fn.reset();
             x.impl()->requires_grad = false;
             return x;
           })
      .def(
          "backward",
          [](const Tensor& x, py::handle gradient, std::optional<bool> retain_graph, bool create_graph,
             py::handle inputs) {
            Tensor g = gradient.is_none() ? Tensor() : as_tensor_like(gradient, x);
            std::vector<Tensor> in;
            if (py::isinstance<Tensor>(inputs)) {
              in.push_back(inputs.cast<Tensor>());
            } else if (!inputs.is_none()) {
              for (py::handle t : inputs) in.push_back(t.cast<Tensor>());
              if (in.empty()) throw py::value_error("'inputs' argument to backward() cannot be empty.");
            }
            py::gil_scoped_release nogil;  // long call; hooks take the GIL back
            autograd::backward({x}, {g}, retain_graph, create_graph, in);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
          py::arg("inputs") = py::none(),
          "Gradients of this tensor summed into the leaves' .grad (only into inputs' .grad when given)")
      .def("register_hook", [](const Tensor& x, py::function fn) {
        auto f = keep_callable(std::move(fn));
        x.register_hook([f](const Tensor& g) -> Tensor {
          py::gil_scoped_acquire gil;
          py::object r = (*f)(g);
          return r.is_none() ? Tensor() : r.cast<Tensor>();
        });
      });
}

}  // namespace genesis::python
