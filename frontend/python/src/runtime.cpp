#include "bind.h"
namespace genesis::python {
void bind_runtime(py::module_& m) { (void)m; }
}  // namespace genesis::python
