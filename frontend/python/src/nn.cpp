#include "bind.h"
namespace genesis::python {
void bind_nn(py::module_& m) { (void)m; }
}  // namespace genesis::python
