"""Genesis: a deep-learning framework with a C++ core, used from Python."""
from genesis._C import Tensor  # noqa: F401
