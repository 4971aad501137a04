#include "bind.h"
namespace genesis::python {
void bind_functional(py::module_& m) { (void)m; }
}  // namespace genesis::python
