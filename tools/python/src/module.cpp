// tools/python/src/module.cpp - the genesis._C extension module: error
// translation and the registration of every binding file.
//
// genesis::Error becomes the Python exception that fits its gn_code, with the
// same message and the code as `.code` (the gn_code number):
//   SHAPE, INVALID_ARGUMENT -> ValueError      DTYPE -> TypeError
//   INDEX -> IndexError                        OUT_OF_MEMORY -> MemoryError
//   IO -> OSError                              anything else -> RuntimeError
#include "bind.h"

namespace genesis::python {
namespace {

PyObject* exception_type(int32_t code) {
  switch (code) {
    case GN_ERR_SHAPE:
    case GN_ERR_INVALID_ARGUMENT: return PyExc_ValueError;
    case GN_ERR_DTYPE: return PyExc_TypeError;
    case GN_ERR_INDEX: return PyExc_IndexError;
    case GN_ERR_OUT_OF_MEMORY: return PyExc_MemoryError;
    case GN_ERR_IO: return PyExc_OSError;
    default: return PyExc_RuntimeError;
  }
}

// Raises type(msg) with .code = code.
void raise_error(int32_t code, const char* msg) {
  PyObject* type = exception_type(code);
  PyObject* exc = PyObject_CallFunction(type, "s", msg);
  if (!exc) return;  // the call already set an error (e.g. MemoryError)
  PyObject* c = PyLong_FromLong(code);
  if (c) {
    PyObject_SetAttrString(exc, "code", c);
    Py_DECREF(c);
  }
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
}

}  // namespace
}  // namespace genesis::python

PYBIND11_MODULE(_C, m) {
  using namespace genesis::python;
  m.doc() = "Genesis: the C++ frontend bound for Python (use the genesis package, not this module)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const genesis::Error& e) {
      raise_error(e.code(), e.what());
    }
  });
  bind_dtype_device(m);
  bind_tensor(m);
  bind_tensor_math(m);
  bind_indexing(m);
  bind_creation(m);
  bind_dlpack(m);
  bind_functional(m);
  bind_nn(m);
  bind_optim(m);
  bind_runtime(m);
  bind_models(m);
  bind_data(m);
  bind_distributed(m);
  bind_algorithms(m);
  bind_linalg(m);
}
