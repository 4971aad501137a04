// tools/python/src/algorithms.cpp - the scanning, ordering, counting and searching ops of
// genesis/tensor_algorithms.hpp as Tensor methods and genesis._C functions, with torch's names,
// keywords, named tuples and exception types (RuntimeError where torch raises it, IndexError for
// dims).
#include "bind.h"
#include "genesis/tensor_algorithms.hpp"

namespace genesis::python {
namespace {

// A named tuple type of torch.return_types (values, indices).
py::object tuple_type(const char* name, const char* fields) {
  return py::module_::import("collections").attr("namedtuple")(name, fields);
}

py::object values_indices(const char* name, const std::pair<Tensor, Tensor>& p) {
  static std::map<std::string, py::object> types;
  py::object& t = types[name];
  if (!t) t = tuple_type(name, "values indices");
  return t(p.first, p.second);
}

// Runs f, turning genesis errors into the RuntimeError torch raises for bad values, shapes and
// dtypes (an IndexError, for dims, stays one).
template <class F>
auto torch_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.code() == GN_ERR_INDEX || e.code() == GN_ERR_OUT_OF_MEMORY || e.code() == GN_ERR_IO) throw;
    throw std::runtime_error(e.what());
  }
}

std::optional<DType> dtype_of(py::handle d) {
  if (d.is_none()) return std::nullopt;
  return d.cast<DType>();
}

// unique's return value: the values alone, or a tuple with the parts asked for.
py::object unique_result(const UniqueResult& u, bool inverse, bool counts) {
  if (!inverse && !counts) return py::cast(u.values);
  py::list parts;
  parts.append(u.values);
  if (inverse) parts.append(u.inverse);
  if (counts) parts.append(u.counts);
  return py::tuple(parts);
}

void no_dim(const char* fn, py::handle dim) {
  if (!dim.is_none())
    throw py::type_error(std::string(fn) +
                         ": dim is not supported by genesis (only dim=None, over the flattened tensor)");
}

// A Tensor, or a Python number as a 0-d tensor on `like`'s device (searchsorted's values).
Tensor values_arg(py::handle v, const Tensor& like) {
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>();
  Tensor t = as_tensor_like(v, like);
  return t;
}

bool side_right(py::handle side, bool right) {
  if (side.is_none()) return right;
  const std::string s = side.cast<std::string>();
  if (s != "left" && s != "right")
    throw std::runtime_error("torch.searchsorted(): side can only be 'left' or 'right' but got " + s);
  if (s == "left" && right)
    throw std::runtime_error(
        "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
  return s == "right";
}

void bind_methods(py::class_<Tensor>& t) {
  t.def(
       "cumsum",
       [](const Tensor& x, int64_t dim, py::handle dtype) {
         return torch_errors([&] { return cumsum(x, dim, dtype_of(dtype)); });
       },
       py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none())
      .def(
          "cumprod",
          [](const Tensor& x, int64_t dim, py::handle dtype) {
            return torch_errors([&] { return cumprod(x, dim, dtype_of(dtype)); });
          },
          py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none())
      .def(
          "logcumsumexp",
          [](const Tensor& x, int64_t dim) { return torch_errors([&] { return logcumsumexp(x, dim); }); },
          py::arg("dim"))
      .def(
          "cummax",
          [](const Tensor& x, int64_t dim) {
            return values_indices("cummax", torch_errors([&] { return cummax(x, dim); }));
          },
          py::arg("dim"))
      .def(
          "cummin",
          [](const Tensor& x, int64_t dim) {
            return values_indices("cummin", torch_errors([&] { return cummin(x, dim); }));
          },
          py::arg("dim"))
      .def(
          "kthvalue",
          [](const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
            return values_indices("kthvalue", torch_errors([&] { return kthvalue(x, k, dim, keepdim); }));
          },
          py::arg("k"), py::arg("dim") = -1, py::arg("keepdim") = false)
      .def(
          "median",
          [](const Tensor& x, py::handle dim, bool keepdim) -> py::object {
            if (dim.is_none()) return py::cast(torch_errors([&] { return median(x); }));
            const int64_t d = dim.cast<int64_t>();
            return values_indices("median", torch_errors([&] { return median(x, d, keepdim); }));
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "nanmedian",
          [](const Tensor& x, py::handle dim, bool keepdim) -> py::object {
            if (dim.is_none()) return py::cast(torch_errors([&] { return nanmedian(x); }));
            const int64_t d = dim.cast<int64_t>();
            return values_indices("nanmedian", torch_errors([&] { return nanmedian(x, d, keepdim); }));
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "mode",
          [](const Tensor& x, int64_t dim, bool keepdim) {
            return values_indices("mode", torch_errors([&] { return mode(x, dim, keepdim); }));
          },
          py::arg("dim") = -1, py::arg("keepdim") = false)
      .def(
          "unique",
          [](const Tensor& x, bool sorted, bool inverse, bool counts, py::handle dim) {
            no_dim("unique", dim);
            return unique_result(torch_errors([&] { return unique(x, sorted, inverse, counts); }), inverse, counts);
          },
          py::arg("sorted") = true, py::arg("return_inverse") = false, py::arg("return_counts") = false,
          py::arg("dim") = py::none())
      .def(
          "unique_consecutive",
          [](const Tensor& x, bool inverse, bool counts, py::handle dim) {
            no_dim("unique_consecutive", dim);
            return unique_result(torch_errors([&] { return unique_consecutive(x, inverse, counts); }), inverse, counts);
          },
          py::arg("return_inverse") = false, py::arg("return_counts") = false, py::arg("dim") = py::none())
      .def(
          "bincount",
          [](const Tensor& x, py::handle weights, int64_t minlength) {
            const Tensor w = weights.is_none() ? Tensor() : weights.cast<Tensor>();
            return torch_errors([&] { return bincount(x, w, minlength); });
          },
          py::arg("weights") = py::none(), py::arg("minlength") = 0)
      .def(
          "histc",
          [](const Tensor& x, int64_t bins, double min, double max) {
            return torch_errors([&] { return histc(x, bins, min, max); });
          },
          py::arg("bins") = 100, py::arg("min") = 0, py::arg("max") = 0)
      .def(
          "scatter_reduce",
          [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
             bool include_self) {
            return torch_errors([&] { return scatter_reduce(x, dim, index, src, reduce, include_self); });
          },
          py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce"), py::kw_only(),
          py::arg("include_self") = true);
}

void bind_functions(py::module_& m) {
  m.def(
       "searchsorted",
       [](const Tensor& seq, py::handle values, bool out_int32, bool right, py::handle side, py::handle sorter) {
         const bool r = side_right(side, right);
         const Tensor s = sorter.is_none() ? Tensor() : sorter.cast<Tensor>();
         return torch_errors([&] { return searchsorted(seq, values_arg(values, seq), r, out_int32, s); });
       },
       py::arg("sorted_sequence"), py::arg("input"), py::kw_only(), py::arg("out_int32") = false,
       py::arg("right") = false, py::arg("side") = py::none(), py::arg("sorter") = py::none(),
       "Indices where input would be inserted into the last dim of sorted_sequence to keep it sorted.")
      .def(
          "bucketize",
          [](py::handle x, const Tensor& boundaries, bool out_int32, bool right) {
            return torch_errors([&] { return bucketize(values_arg(x, boundaries), boundaries, right, out_int32); });
          },
          py::arg("input"), py::arg("boundaries"), py::kw_only(), py::arg("out_int32") = false,
          py::arg("right") = false, "The bucket of each element of input among the 1-D sorted boundaries.");
}

}  // namespace

void bind_algorithms(py::module_& m) {
  py::class_<Tensor> t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_methods(t);
  bind_functions(m);
}

}  // namespace genesis::python
