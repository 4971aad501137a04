// tools/python/src/errors.cpp - the errors Python users see: genesis::Error
// becomes the exception torch raises for the same mistake (with torch's
// wording, the gn_code as `.code`), and a call pybind11 cannot match or convert
// raises a TypeError that names the argument and the types, as torch's do.
//
// The wording lives in Python (genesis/_errors.py); this file routes errors to
// it.  genesis::Error goes through an exception translator.  pybind11 reports
// bad calls itself ("incompatible function arguments" with the arguments
// printed, "Unable to cast Python instance to C++ type"), so every function of
// the extension is called through `dispatch`, which runs pybind11's dispatcher
// and hands a failure, with the call's arguments and signatures, to
// genesis._errors.call_error; a successful call costs one extra indirect call.
#include "bind.h"

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include "genesis/amp.hpp"

namespace genesis::python {
namespace {

// pybind11's dispatcher is a protected static member of cpp_function. Its calling convention changed in
// pybind11 3.0.2 from METH_VARARGS (self, args tuple, kwargs dict) to METH_FASTCALL (self, argument array, count,
// keyword names); the replacement dispatchers below take whichever one it has.
struct DispatcherOf : py::cpp_function {
  using Type = decltype(&cpp_function::dispatcher);
  static Type get() { return &cpp_function::dispatcher; }
};
using VarargsDispatcher = PyObject* (*)(PyObject*, PyObject*, PyObject*);
using FastcallDispatcher = PyObject* (*)(PyObject*, PyObject* const*, size_t, PyObject*);
constexpr bool kFastcall = std::is_same_v<DispatcherOf::Type, FastcallDispatcher>;
static_assert(kFastcall || std::is_same_v<DispatcherOf::Type, VarargsDispatcher>,
              "unknown pybind11 dispatcher signature");

DispatcherOf::Type g_pybind_dispatch = nullptr;

// The arguments of one call, in either convention: positional argv[0, nargs); keyword values follow them in argv
// with their names in the tuple kwnames (fastcall), or sit in the dict kwargs (varargs, with the tuple `tuple`).
struct Call {
  PyObject* self = nullptr;
  PyObject* const* argv = nullptr;
  Py_ssize_t nargs = 0;
  size_t nargsf = 0;
  PyObject* kwnames = nullptr;
  PyObject* tuple = nullptr;
  PyObject* kwargs = nullptr;

  PyObject* arg(Py_ssize_t i) const { return i < nargs ? argv[i] : nullptr; }
  // The keyword argument `name` (borrowed), or null.
  PyObject* kwarg(const char* name) const {
    if (kwargs) return PyDict_GetItemString(kwargs, name);
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); ++i)
      if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0) return argv[nargs + i];
    return nullptr;
  }
  // Calls f(value) for every keyword argument.
  template <class F>
  void each_kwarg(F&& f) const {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) f(value);
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); ++i) f(argv[nargs + i]);
  }
  // The positional arguments as a tuple and the keyword ones as a dict (or None), for genesis._errors.
  py::object args_tuple() const {
    if (tuple) return py::reinterpret_borrow<py::object>(tuple);
    py::tuple t(nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i) t[static_cast<size_t>(i)] = py::reinterpret_borrow<py::object>(argv[i]);
    return t;
  }
  py::object kwargs_dict() const {
    if (kwargs) return py::reinterpret_borrow<py::object>(kwargs);
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) return py::none();
    py::dict d;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i)
      d[py::handle(PyTuple_GET_ITEM(kwnames, i))] = py::handle(argv[nargs + i]);
    return d;
  }
  // pybind11's own dispatch of this call.
  PyObject* forward() const { return forward_with(g_pybind_dispatch); }
  // (A template, so that only the branch of pybind11's convention is instantiated.)
  template <class D>
  PyObject* forward_with(D dispatcher) const {
    if constexpr (std::is_same_v<D, FastcallDispatcher>)
      return dispatcher(self, argv, nargsf, kwnames);
    else
      return dispatcher(self, tuple, kwargs);
  }
};

// The function record behind a pybind11 function's `self`, or null.
const py::detail::function_record* record_of(PyObject* self) {
#if PYBIND11_VERSION_MAJOR >= 3
  return py::detail::function_record_ptr_from_PyObject(self);
#else
  if (!PyCapsule_CheckExact(self)) return nullptr;
  auto* rec = static_cast<const py::detail::function_record*>(
      PyCapsule_GetPointer(self, py::detail::get_function_record_capsule_name()));
  if (!rec) PyErr_Clear();
  return rec;
#endif
}

// genesis._errors (a new reference kept for the life of the process), or null
// with no error set when the package cannot be imported (the extension loaded
// on its own).
PyObject* errors_module() {
  static PyObject* mod = nullptr;
  static bool tried = false;
  if (!tried) {
    tried = true;
    mod = PyImport_ImportModule("genesis._errors");
    if (!mod) PyErr_Clear();
  }
  return mod;
}

PyObject* fallback_type(int32_t code) {
  switch (code) {
    case GN_ERR_INVALID_ARGUMENT: return PyExc_ValueError;
    case GN_ERR_INDEX: return PyExc_IndexError;
    case GN_ERR_OUT_OF_MEMORY: return PyExc_MemoryError;
    case GN_ERR_IO: return PyExc_OSError;
    default: return PyExc_RuntimeError;
  }
}

// Sets the Python error for genesis::Error (code, msg): the exception
// genesis._errors.from_code builds, else the fallback type with the message.
void raise_error(int32_t code, const char* msg) {
  PyObject* exc = nullptr;
  if (PyObject* mod = errors_module()) {
    exc = PyObject_CallMethod(mod, "from_code", "is", static_cast<int>(code), msg);
    if (exc && !PyExceptionInstance_Check(exc)) Py_CLEAR(exc);
    if (!exc) PyErr_Clear();
  }
  if (!exc) {
    exc = PyObject_CallFunction(fallback_type(code), "s", msg);
    if (!exc) return;  // the call already set an error (e.g. MemoryError)
  }
  PyObject* c = PyLong_FromLong(code);
  if (c) {
    if (PyObject_SetAttrString(exc, "code", c) < 0) PyErr_Clear();
    Py_DECREF(c);
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
  Py_DECREF(exc);
}

// The overloads of the function whose record capsule is `self`, as a list of
// (name, signature, is_method, is_constructor), or null.
PyObject* overloads_of(PyObject* self) {
  const py::detail::function_record* rec = record_of(self);
  if (!rec) return nullptr;
  PyObject* list = PyList_New(0);
  if (!list) return nullptr;
  for (; rec; rec = rec->next) {
    PyObject* item = Py_BuildValue("(ssNN)", rec->name ? rec->name : "", rec->signature ? rec->signature : "",
                                   PyBool_FromLong(rec->is_method), PyBool_FromLong(rec->is_constructor));
    if (!item || PyList_Append(list, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return list;
}

// With an error set by a failed call: lets genesis._errors.call_error replace
// it by the error a Python user expects (it returns the new exception or None).
void rewrite_call_error(const Call& call) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject* mod = value && PyErr_GivenExceptionMatches(type, PyExc_Exception) ? errors_module() : nullptr;
  PyObject* overloads = mod ? overloads_of(call.self) : nullptr;
  PyObject* better = nullptr;
  if (overloads) {
    const py::object args = call.args_tuple(), kwargs = call.kwargs_dict();
    better = PyObject_CallMethod(mod, "call_error", "OOOO", overloads, args.ptr(), kwargs.ptr(), value);
    Py_DECREF(overloads);
  }
  if (!better || !PyExceptionInstance_Check(better)) {
    PyErr_Clear();
    Py_XDECREF(better);
    PyErr_Restore(type, value, tb);
    return;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  PyErr_Restore(reinterpret_cast<PyObject*>(Py_TYPE(better)), better, tb);
  Py_INCREF(Py_TYPE(better));
}

// A method called unbound with None for self (genesis.abs(None) is Tensor.abs(None)): pybind11 would pass a null
// `this` to a method bound from a member function pointer.  Sets torch's TypeError and returns true.
bool none_for_self(const Call& call) {
  if (call.arg(0) != Py_None) return false;
  const py::detail::function_record* rec = record_of(call.self);
  if (!rec) return false;
  if (!rec->is_method || rec->is_constructor) return false;
  std::string cls = "Tensor";
  if (rec->scope && PyType_Check(rec->scope.ptr())) {
    PyObject* name = PyObject_GetAttrString(rec->scope.ptr(), "__name__");
    if (name && PyUnicode_Check(name)) cls = PyUnicode_AsUTF8(name);
    Py_XDECREF(name);
    PyErr_Clear();
  }
  PyErr_Format(PyExc_TypeError, "%s(): argument 'input' (position 1) must be %s, not NoneType", rec->name, cls.c_str());
  return true;
}

PyObject* dispatch(const Call& call) {
  if (none_for_self(call)) return nullptr;
  PyObject* result = call.forward();
  if (!result && PyErr_Occurred()) rewrite_call_error(call);
  return result;
}

// ---- torch's rules where the C++ ops are more lenient (operand dtypes, target
// dtypes, a tensor given for a list): checked before the call (a type test per
// argument), worded by genesis._errors.precheck.

// With the call's arguments not as torch allows: sets the error and returns true.
bool precheck_failed(const Call& call) {
  PyObject* mod = errors_module();
  PyObject* overloads = mod ? overloads_of(call.self) : nullptr;
  if (!overloads) {
    PyErr_Clear();
    return false;
  }
  const py::object args = call.args_tuple(), kwargs = call.kwargs_dict();
  PyObject* exc = PyObject_CallMethod(mod, "precheck", "OOO", overloads, args.ptr(), kwargs.ptr());
  Py_DECREF(overloads);
  if (!exc || !PyExceptionInstance_Check(exc)) {
    PyErr_Clear();
    Py_XDECREF(exc);
    return false;
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
  Py_DECREF(exc);
  return true;
}

bool tensor_dtype(PyObject* o, DType* dtype) {
  if (!o || !py::isinstance<Tensor>(o)) return false;
  *dtype = py::handle(o).cast<const Tensor&>().dtype();
  return true;
}

bool autocasting() { return amp::is_autocast_enabled("cuda") || amp::is_autocast_enabled("cpu"); }

// matmul, bmm, linear, conv2d: the tensor operands (input, other or weight, bias) share one dtype.
PyObject* dispatch_same_dtype(const Call& call) {
  DType first{}, d{};
  int n = 0;
  bool mixed = false;
  auto visit = [&](PyObject* o) {
    if (n < 3 && tensor_dtype(o, &d)) {
      if (n++ == 0) first = d;
      mixed = mixed || d != first;
    }
  };
  for (Py_ssize_t i = 0; i < call.nargs; ++i) visit(call.argv[i]);
  call.each_kwarg(visit);
  if (mixed && !autocasting() && precheck_failed(call)) return nullptr;
  return dispatch(call);
}

// cross_entropy, nll_loss: a target that is not int64 is checked as torch checks it.
PyObject* dispatch_target(const Call& call) {
  PyObject* target = call.arg(1);
  if (!target) target = call.kwarg("target");  // borrowed
  DType d{};
  if (tensor_dtype(target, &d) && d != DType::i64 && precheck_failed(call)) return nullptr;
  return dispatch(call);
}

// cat, stack: a tensor is not a list of tensors (pybind11 would iterate over its rows).
PyObject* dispatch_tensor_list(const Call& call) {
  PyObject* tensors = call.arg(0);
  if (!tensors) tensors = call.kwarg("tensors");  // borrowed
  if (tensors && py::isinstance<Tensor>(tensors) && precheck_failed(call)) return nullptr;
  return dispatch(call);
}

// The entry points that replace pybind11's dispatcher, in its calling convention.
template <PyObject* (*Impl)(const Call&)>
PyObject* varargs_entry(PyObject* self, PyObject* args, PyObject* kwargs) {
  Call c;
  c.self = self;
  c.tuple = args;
  c.kwargs = kwargs;
  if (args) {
    c.argv = PySequence_Fast_ITEMS(args);
    c.nargs = PyTuple_GET_SIZE(args);
  }
  return Impl(c);
}
template <PyObject* (*Impl)(const Call&)>
PyObject* fastcall_entry(PyObject* self, PyObject* const* argv, size_t nargsf, PyObject* kwnames) {
  Call c;
  c.self = self;
  c.argv = argv;
  c.nargs = PyVectorcall_NARGS(nargsf);
  c.nargsf = nargsf;
  c.kwnames = kwnames;
  return Impl(c);
}
template <PyObject* (*Impl)(const Call&)>
PyCFunction entry() {
  if constexpr (kFastcall)
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fastcall_entry<Impl>));
  else
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&varargs_entry<Impl>));
}

PyCFunction dispatcher_for(const char* name) {
  const std::string_view n = name ? name : "";
  if (n == "matmul" || n == "__matmul__" || n == "bmm" || n == "linear" || n == "conv2d")
    return entry<&dispatch_same_dtype>();
  if (n == "cross_entropy" || n == "nll_loss") return entry<&dispatch_target>();
  if (n == "cat" || n == "stack") return entry<&dispatch_tensor_list>();
  return entry<&dispatch>();
}

bool is_ours(PyObject* o) {
  PyObject* mod = PyObject_GetAttrString(o, "__module__");
  if (!mod) {
    PyErr_Clear();
    return false;
  }
  bool ok = PyUnicode_Check(mod) && PyUnicode_CompareWithASCIIString(mod, "genesis._C") == 0;
  if (!ok && PyUnicode_Check(mod)) {
    PyObject* prefix = PyUnicode_FromString("genesis._C.");
    ok = prefix && PyUnicode_Tailmatch(mod, prefix, 0, PY_SSIZE_T_MAX, -1) == 1;
    Py_XDECREF(prefix);
  }
  Py_DECREF(mod);
  return ok;
}

// Routes every pybind11 function reachable from `o` (a module, a class, a
// function, a method, a property) through `dispatch`.
void route(PyObject* o, std::unordered_set<PyObject*>& seen) {
  if (!o || !seen.insert(o).second) return;
  if (PyCFunction_Check(o)) {
    auto* f = reinterpret_cast<PyCFunctionObject*>(o);
    PyMethodDef* def = f->m_ml;
    // pybind11's own methods (3.x gives every class _pybind11_conduit_v1_, which takes any object) stay as they are.
    if (def && (!def->ml_name || std::strncmp(def->ml_name, "_pybind11_", 10) != 0) &&
        reinterpret_cast<DispatcherOf::Type>(reinterpret_cast<void (*)()>(def->ml_meth)) == g_pybind_dispatch &&
        f->m_self && record_of(f->m_self))
      def->ml_meth = dispatcher_for(def->ml_name);
    return;
  }
  if (PyInstanceMethod_Check(o)) return route(PyInstanceMethod_GET_FUNCTION(o), seen);
  PyObject* dict = nullptr;
  if (PyModule_Check(o)) {
    const char* name = PyModule_GetName(o);
    if (!name || std::strncmp(name, "genesis._C", 10) != 0) {
      PyErr_Clear();
      return;
    }
    dict = PyModule_GetDict(o);  // borrowed
  } else if (PyType_Check(o)) {
    if (!is_ours(o)) return;
    dict = reinterpret_cast<PyTypeObject*>(o)->tp_dict;  // borrowed
  } else {
    // staticmethod, classmethod, property: route what they wrap.
    for (const char* attr : {"__func__", "fget", "fset", "fdel"}) {
      PyObject* inner = PyObject_GetAttrString(o, attr);
      if (!inner) {
        PyErr_Clear();
        continue;
      }
      route(inner, seen);
      Py_DECREF(inner);
    }
    return;
  }
  if (!dict) return;
  PyObject* values = PyDict_Values(dict);
  if (!values) {
    PyErr_Clear();
    return;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values); ++i) {
    PyObject* v = PyList_GET_ITEM(values, i);
    if (PyCFunction_Check(v) || PyInstanceMethod_Check(v) || PyModule_Check(v) || PyType_Check(v) ||
        PyObject_TypeCheck(v, &PyProperty_Type) || PyObject_TypeCheck(v, &PyStaticMethod_Type) ||
        PyObject_TypeCheck(v, &PyClassMethod_Type))
      route(v, seen);
  }
  Py_DECREF(values);
}

// Classes print as `Tensor`, not `genesis._C.Tensor`, in the messages Python
// itself writes ("unsupported operand type(s) for +: 'Tensor' and 'str'",
// "'Tensor' object has no attribute 'foo'"); __module__ and __qualname__ (what
// repr and pickle use) are unchanged.
void short_type_names(PyObject* o, std::unordered_set<PyObject*>& seen) {
  if (!seen.insert(o).second) return;
  PyObject* dict = nullptr;
  if (PyModule_Check(o)) {
    dict = PyModule_GetDict(o);
  } else if (PyType_Check(o) && is_ours(o)) {
    auto* t = reinterpret_cast<PyTypeObject*>(o);
    if (const char* dot = std::strrchr(t->tp_name, '.')) t->tp_name = dot + 1;  // pybind11 keeps the full name alive
    dict = t->tp_dict;
  }
  if (!dict) return;
  PyObject *key, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &key, &v)) {
    if (PyType_Check(v) || (PyModule_Check(v) && PyModule_GetDict(v) != dict)) {
      if (PyModule_Check(v)) {
        const char* name = PyModule_GetName(v);
        if (!name || std::strncmp(name, "genesis._C", 10) != 0) {
          PyErr_Clear();
          continue;
        }
      }
      short_type_names(v, seen);
    }
  }
}

}  // namespace

void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const genesis::Error& e) {
      raise_error(e.code(), e.what());
    }
  });
}

void bind_errors(py::module_& m) {
  g_pybind_dispatch = DispatcherOf::get();
  std::unordered_set<PyObject*> seen;
  route(m.ptr(), seen);
  seen.clear();
  short_type_names(m.ptr(), seen);
}

}  // namespace genesis::python
