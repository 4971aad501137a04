// tools/python/src/dlpack.cpp - zero-copy exchange: Tensor.__dlpack__,
// __dlpack_device__, genesis.from_dlpack, and Tensor.numpy().
//
// The C API speaks DLPack 1.0 (DLManagedTensorVersioned, capsule
// "dltensor_versioned").  NumPy 1.24 and PyTorch 1.13 speak the older
// unversioned DLManagedTensor (capsule "dltensor"), so both directions wrap
// one struct in the other; the data is never copied.  A consumed capsule is
// renamed "used_dltensor[_versioned]" as the protocol asks.
#include "bind.h"
#include <pybind11/numpy.h>

#include "genesis/dlpack.h"

namespace genesis::python {
namespace {

// The DLPack 0.x struct (what NumPy 1.24 and PyTorch 1.13 exchange).
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// ---- export

void versioned_capsule_destructor(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, "dltensor_versioned")) return;  // consumed: the consumer owns it
  auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
  if (v && v->deleter) v->deleter(v);
}

void legacy_capsule_destructor(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, "dltensor")) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

// A legacy struct over a versioned one (shape and strides stay the versioned one's).  The byte
// offset is folded into the data pointer: PyTorch 1.13's from_dlpack ignores byte_offset.
DLManagedTensor* to_legacy(DLManagedTensorVersioned* v) {
  auto* m = new DLManagedTensor{v->dl_tensor, v, nullptr};
  m->dl_tensor.data = static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
  m->dl_tensor.byte_offset = 0;
  m->deleter = [](DLManagedTensor* self) {
    auto* inner = static_cast<DLManagedTensorVersioned*>(self->manager_ctx);
    if (inner->deleter) inner->deleter(inner);
    delete self;
  };
  return m;
}

// The DLPack 2023 keywords: max_version (the consumer's newest version), dl_device (must be ours),
// copy (True: export a copy; False or None: never copy here).
py::object dlpack(const Tensor& x, py::handle stream, py::handle max_version, py::handle dl_device, py::handle copy) {
  (void)stream;  // CPU tensors need no stream; CUDA ops are ordered on the default stream
  if (x.requires_grad())
    throw py::value_error("__dlpack__: cannot export a tensor that requires grad; use tensor.detach()");
  const bool cuda = x.device().type() == "cuda";
  if (!dl_device.is_none() && (dl_device[py::int_(0)].cast<int>() != (cuda ? kDLCUDA : kDLCPU) ||
                               dl_device[py::int_(1)].cast<int>() != x.device().index()))
    throw py::buffer_error("__dlpack__: the tensor is on " + x.device().str() + ", not on the requested dl_device");
  const Tensor src = (!copy.is_none() && copy.cast<bool>()) ? x.clone() : x;
  DLManagedTensorVersioned* v = nullptr;
  check(gn_tensor_to_dlpack(src.handle(), &v));
  const bool versioned =
      !max_version.is_none() && py::len(max_version) > 0 && max_version[py::int_(0)].cast<int>() >= 1;
  if (versioned)
    return py::reinterpret_steal<py::object>(PyCapsule_New(v, "dltensor_versioned", versioned_capsule_destructor));
  DLManagedTensor* m = to_legacy(v);
  PyObject* cap = PyCapsule_New(m, "dltensor", legacy_capsule_destructor);
  if (!cap) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

// ---- import

// A versioned struct over a legacy one; its deleter runs the producer's under the GIL
// (NumPy's decrefs the array, and genesis may drop the storage without holding the GIL).
DLManagedTensorVersioned* from_legacy(DLManagedTensor* m) {
  auto* v = new DLManagedTensorVersioned{};
  v->version = {1, 0};
  v->manager_ctx = m;
  v->flags = 0;
  v->dl_tensor = m->dl_tensor;
  v->deleter = [](DLManagedTensorVersioned* self) {
    auto* inner = static_cast<DLManagedTensor*>(self->manager_ctx);
    if (inner->deleter && Py_IsInitialized()) {
      PyGILState_STATE st = PyGILState_Ensure();
      inner->deleter(inner);
      PyGILState_Release(st);
    }
    delete self;
  };
  return v;
}

Tensor from_capsule(py::handle cap) {
  DLManagedTensorVersioned* v = nullptr;
  if (PyCapsule_IsValid(cap.ptr(), "dltensor_versioned")) {
    v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), "dltensor_versioned"));
    PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned");
  } else if (PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    v = from_legacy(m);
  } else {
    throw py::value_error("from_dlpack: expected an unused DLPack capsule ('dltensor' or 'dltensor_versioned')");
  }
  gn_tensor* h = nullptr;
  check(gn_tensor_from_dlpack(runtime(), v, &h));  // on failure the deleter has run
  return Tensor::adopt(h);
}

Tensor from_dlpack(py::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj);
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (!py::hasattr(obj, "__dlpack__"))
    throw py::type_error("from_dlpack: expected an object with __dlpack__ (a NumPy array, a torch tensor, ...)");
  py::object cap;
  try {
    cap = obj.attr("__dlpack__")(py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    cap = obj.attr("__dlpack__")();  // a producer older than DLPack 1.0
  }
  return from_capsule(cap);
}

// ---- numpy()

const char* numpy_dtype(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
    default:
      throw py::type_error(std::string("numpy(): NumPy has no ") + dtype_name(d) +
                           " dtype; convert first, e.g. .float()");
  }
}

}  // namespace

void bind_dlpack(py::module_& m) {
  py::class_<Tensor> t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  t.def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
        py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
        "A DLPack capsule viewing this tensor's data (no copy unless copy=True)");
  t.def("__dlpack_device__", [](const Tensor& x) {
    const bool cuda = x.device().type() == "cuda";
    return py::make_tuple(cuda ? static_cast<int>(kDLCUDA) : static_cast<int>(kDLCPU), x.device().index());
  });
  t.def(
      "numpy",
      [](const Tensor& x, bool force) -> py::object {
        Tensor src = x;
        if (x.requires_grad()) {
          if (!force)
            throw py::value_error(
                "numpy(): cannot call numpy() on a tensor that requires grad; use tensor.detach().numpy()");
          src = x.detach();
        }
        if (src.device().type() != "cpu") {
          if (!force)
            throw py::type_error("numpy(): the tensor is on " + src.device().str() + "; use tensor.cpu() first");
          src = src.to(Device("cpu"));
        }
        py::dtype dt(numpy_dtype(src.dtype()));
        const Shape shape = src.shape();
        Shape strides = src.strides();
        const int64_t item = static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(src.dtype())));
        for (auto& s : strides) s *= item;
        auto* keep = new Tensor(src);
        py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
        return py::array(dt, shape, strides, gn_tensor_data_ptr(src.handle()), base);
      },
      py::kw_only(), py::arg("force") = false, "A NumPy array sharing this CPU tensor's memory");
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"),
        "A tensor sharing the memory of any DLPack producer (NumPy, PyTorch, capsules)");
}

}  // namespace genesis::python
