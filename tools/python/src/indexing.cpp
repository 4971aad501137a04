// tools/python/src/indexing.cpp - x[...] and x[...] = v with Python's
// index objects: ints select (drop the dim), slices are views, None inserts a
// dim, ... stands for the dims not named, and a 1-D integer tensor (or a list
// of ints) gathers along its dim (a copy, autograd-aware), as torch does.  A bool
// tensor (or NumPy bool array, or list of bools) is a mask: such keys go to the
// C++ Tensor::index / index_put_, which handle masks.  NumPy arrays index as the
// tensors they convert to.
#include <algorithm>

#include "bind.h"

namespace genesis::python {
namespace {

enum class Kind { integer, slice, none, ellipsis, tensor };
struct Entry {
  Kind kind = Kind::none;
  int64_t i = 0;
  py::slice s = py::slice(0, 0, 1);
  Tensor t;
};

std::vector<Entry> parse(py::handle key) {
  std::vector<Entry> out;
  auto one = [&](py::handle k) {
    Entry e;
    if (k.is_none()) {
      e.kind = Kind::none;
    } else if (k.ptr() == Py_Ellipsis) {
      e.kind = Kind::ellipsis;
    } else if (PySlice_Check(k.ptr())) {
      e.kind = Kind::slice;
      e.s = py::reinterpret_borrow<py::slice>(k);
    } else if (py::isinstance<Tensor>(k) || (!PyLong_Check(k.ptr()) && py::hasattr(k, "__array_interface__"))) {
      const Tensor t = py::isinstance<Tensor>(k) ? k.cast<Tensor>() : tensor_from_object(k, {});
      if (t.dim() == 0 && !is_floating(t.dtype()) && t.dtype() != DType::boolean) {
        e.kind = Kind::integer;
        e.i = static_cast<int64_t>(t.item_double());
      } else {
        e.kind = Kind::tensor;
        e.t = t;
      }
    } else if (PyList_Check(k.ptr()) && PyList_GET_SIZE(k.ptr()) > 0 &&
               std::all_of(k.begin(), k.end(), [](py::handle x) { return PyBool_Check(x.ptr()); })) {
      e.kind = Kind::tensor;  // a list of bools is a mask, as in torch
      e.t = tensor_from_object(k, {});
    } else if (PyList_Check(k.ptr())) {
      e.kind = Kind::tensor;
      std::vector<int64_t> v;
      for (py::handle x : k) v.push_back(x.cast<int64_t>());
      e.t = tensor(v, {static_cast<int64_t>(v.size())});
    } else if (PyBool_Check(k.ptr())) {
      throw py::index_error("[index] boolean indices are not supported");
    } else {
      e.kind = Kind::integer;
      e.i = py::reinterpret_borrow<py::object>(k).cast<int64_t>();  // ints and objects with __index__
    }
    out.push_back(std::move(e));
  };
  if (PyTuple_Check(key.ptr())) {
    for (py::handle k : key) one(k);
  } else {
    one(key);
  }
  return out;
}

bool has_mask(const std::vector<Entry>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [](const Entry& e) { return e.kind == Kind::tensor && e.t.dtype() == DType::boolean; });
}

std::optional<int64_t> slice_bound(py::handle b) {
  if (b.is_none()) return std::nullopt;
  return py::reinterpret_borrow<py::object>(b).cast<int64_t>();
}

// The entries as C++ TensorIndex values (for keys with a mask).
std::vector<TensorIndex> to_cpp(const std::vector<Entry>& entries) {
  std::vector<TensorIndex> out;
  for (const Entry& e : entries) {
    switch (e.kind) {
      case Kind::integer: out.emplace_back(e.i); break;
      case Kind::slice: {
        py::handle step = e.s.attr("step");
        out.emplace_back(indexing::Slice(slice_bound(e.s.attr("start")), slice_bound(e.s.attr("stop")),
                                         step.is_none() ? 1 : step.cast<int64_t>()));
        break;
      }
      case Kind::none: out.emplace_back(indexing::None); break;
      case Kind::ellipsis: out.emplace_back(indexing::Ellipsis); break;
      case Kind::tensor: out.emplace_back(e.t); break;
    }
  }
  return out;
}

// The view (or copy, for tensor entries) that `entries` pick out of x.
Tensor apply(const Tensor& x, const std::vector<Entry>& entries, bool allow_copy) {
  int64_t consumed = 0, ellipses = 0;
  for (const Entry& e : entries) {
    if (e.kind == Kind::integer || e.kind == Kind::slice || e.kind == Kind::tensor) ++consumed;
    if (e.kind == Kind::ellipsis) ++ellipses;
  }
  if (ellipses > 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[index] an index can only have a single ellipsis ('...')");
  if (consumed > x.dim())
    throw Error(GN_ERR_INDEX, "[index] too many indices for tensor of dimension " + std::to_string(x.dim()) + " (got " +
                                  std::to_string(consumed) + ")");
  Tensor y = x;
  int64_t d = 0;  // the dim of y the next entry applies to
  for (const Entry& e : entries) {
    switch (e.kind) {
      case Kind::integer: {
        const int64_t n = y.size(d);
        const int64_t k = e.i < 0 ? e.i + n : e.i;
        if (k < 0 || k >= n)
          throw Error(GN_ERR_INDEX, "[index] index " + std::to_string(e.i) + " is out of bounds for dimension " +
                                        std::to_string(d) + " with size " + std::to_string(n));
        y = y.select(d, k);
        break;
      }
      case Kind::slice: {
        Py_ssize_t start = 0, stop = 0, step = 1;
        if (PySlice_Unpack(e.s.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
        if (step <= 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[index] slice step must be positive");
        PySlice_AdjustIndices(static_cast<Py_ssize_t>(y.size(d)), &start, &stop, step);
        y = y.slice(d, start, std::max(start, stop), step);
        ++d;
        break;
      }
      case Kind::none:
        y = y.unsqueeze(d);
        ++d;
        break;
      case Kind::ellipsis: d += x.dim() - consumed; break;
      case Kind::tensor: {
        if (!allow_copy)
          throw Error(GN_ERR_INVALID_ARGUMENT,
                      "[index_put_] tensor indices are not supported in assignments (use index_add or scatter)");
        if (is_floating(e.t.dtype()) || e.t.dim() != 1)
          throw Error(GN_ERR_INVALID_ARGUMENT, "[index] tensor indices must be 1-D integer tensors");
        y = y.index_select(d, e.t);
        ++d;
        break;
      }
    }
  }
  return y;
}

}  // namespace

void bind_indexing(py::module_& m) {
  py::class_<Tensor> t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  t.def("__getitem__", [](const Tensor& x, py::handle key) {
    if (PyLong_Check(key.ptr())) {  // fast path: x[i]
      const int64_t i = key.cast<int64_t>();
      if (x.dim() == 0) throw Error(GN_ERR_INDEX, "[index] invalid index of a 0-dim tensor");
      const int64_t n = x.size(0);
      if (i < -n || i >= n)
        throw Error(GN_ERR_INDEX, "[index] index " + std::to_string(i) +
                                      " is out of bounds for dimension 0 with size " + std::to_string(n));
      return x.select(0, i);
    }
    const std::vector<Entry> entries = parse(key);
    if (has_mask(entries)) return x.index(to_cpp(entries));
    return apply(x, entries, true);
  });
  t.def("__setitem__", [](Tensor& x, py::handle key, py::handle value) {
    const std::vector<Entry> entries = parse(key);
    if (has_mask(entries)) {
      if (py::isinstance<Tensor>(value))
        x.index_put_(to_cpp(entries), value.cast<const Tensor&>());
      else
        x.index_put_(to_cpp(entries), to_scalar(value).value);
      return;
    }
    Tensor view = apply(x, entries, false);
    if (py::isinstance<Tensor>(value)) {
      view.copy_(value.cast<const Tensor&>());
    } else {
      view.fill_(to_scalar(value).value);
    }
  });
}

}  // namespace genesis::python
