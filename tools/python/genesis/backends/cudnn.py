"""genesis.backends.cudnn: torch.backends.cudnn's flags.  Genesis does not use cuDNN (its CUDA backend has its own
convolution and attention kernels), so is_available() is False and version() None, as torch reports without cuDNN;
enabled, benchmark, deterministic, allow_tf32 and benchmark_limit are stored and read back with torch's defaults
but have no effect.  The CUDA backend's convolutions add partial results in a fixed order and use no TF32, so
they are reproducible whatever deterministic says."""
import contextlib as _contextlib
import sys as _sys

from genesis.backends._flags import FlagModule as _FlagModule
from genesis.backends._flags import bool_flag as _bool_flag

_flags = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
benchmark_limit = None  # torch's value when cuDNN is not available


def is_available():
    """False: genesis does not use cuDNN."""
    return False


def version():
    """None (no cuDNN), as torch.backends.cudnn.version() without it."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never in genesis."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None):
    """Sets the flags that are not None; returns the previous (enabled, benchmark, benchmark_limit, deterministic,
    allow_tf32)."""
    mod = _sys.modules[__name__]
    orig = (mod.enabled, mod.benchmark, mod.benchmark_limit, mod.deterministic, mod.allow_tf32)
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark), ("deterministic", _deterministic),
                        ("allow_tf32", _allow_tf32)):
        if value is not None:
            setattr(mod, name, value)
    return orig


@_contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Context manager: the flags set inside, the previous ones restored on exit (torch's defaults)."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*orig)


class _CudnnModule(_FlagModule):
    enabled = _bool_flag("enabled", "set_enabled_cudnn")
    benchmark = _bool_flag("benchmark", "set_benchmark_cudnn")
    deterministic = _bool_flag("deterministic", "set_deterministic_cudnn")
    allow_tf32 = _bool_flag("allow_tf32", "set_allow_tf32_cudnn")


_sys.modules[__name__].__class__ = _CudnnModule
