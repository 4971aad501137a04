#include "bind.h"
namespace genesis::python {
void bind_models(py::module_& m) { (void)m; }
}  // namespace genesis::python
