#include "bind.h"
namespace genesis::python {
void bind_optim(py::module_& m) { (void)m; }
}  // namespace genesis::python
