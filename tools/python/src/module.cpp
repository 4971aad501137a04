// tools/python/src/module.cpp - the genesis._C extension module: error
// translation and the registration of every binding file.
//
// genesis::Error becomes the Python exception torch raises for the same
// mistake, with the code as `.code` (errors.cpp, genesis/_errors.py).
#include "bind.h"

PYBIND11_MODULE(_C, m) {
  using namespace genesis::python;
  m.doc() = "Genesis: the C++ frontend bound for Python (use the genesis package, not this module)";
  register_error_translator();
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
  bind_serving(m);
  bind_peft(m);
  bind_data(m);
  bind_distributed(m);
  bind_algorithms(m);
  bind_linalg(m);
  bind_errors(m);  // last: routes the errors of every function bound above
}
