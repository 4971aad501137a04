"""genesis.backends.cuda: torch.backends.cuda's switches.

matmul.allow_tf32 maps to the CUDA backend's GENESIS_ALLOW_TF32 (TF32 tensor cores for float32 matmuls): its
value starts from that environment variable (off unless "1", torch's default) and setting it sets the variable,
which the backend reads once, at the first float32 matmul on a CUDA device; a change after that has no effect
until the next process.  matmul.allow_fp16_reduced_precision_reduction and the scaled-dot-product-attention
switches are stored and read back but have no effect (genesis picks its attention kernel itself)."""
import contextlib as _contextlib
import os as _os

from genesis import _C


def is_built():
    """True when genesis's CUDA backend is present and usable here (genesis finds its backends at run time, so
    "built" and "available" are the same question)."""
    return _C.cuda_available()


def _set_tf32_env(value):
    _os.environ["GENESIS_ALLOW_TF32"] = "1" if value else "0"


class cuBLASModule:
    """torch.backends.cuda.matmul: allow_tf32 and allow_fp16_reduced_precision_reduction (bools)."""

    _names = {"allow_tf32": "set_allow_tf32_cublas",
              "allow_fp16_reduced_precision_reduction": "set_allow_fp16_reduction_cublas"}

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_tf32": _os.environ.get("GENESIS_ALLOW_TF32", "")[:1] == "1",
                                             "allow_fp16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        raise AssertionError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name not in self._names:
            raise AssertionError("Unknown attribute " + name)
        if not isinstance(value, bool):
            raise RuntimeError(f"{self._names[name]} expects a bool, but got {type(value).__name__}")
        self._values[name] = value
        if name == "allow_tf32":
            _set_tf32_env(value)


matmul = cuBLASModule()

_sdp = {"flash": True, "math": True}


def flash_sdp_enabled():
    """Whether the flash scaled-dot-product-attention kernel may be used (stored; no effect in genesis)."""
    return _sdp["flash"]


def enable_flash_sdp(enabled):
    """Stores the flash attention switch (no effect in genesis)."""
    _sdp["flash"] = bool(enabled)


def math_sdp_enabled():
    """Whether the math scaled-dot-product-attention path may be used (stored; no effect in genesis)."""
    return _sdp["math"]


def enable_math_sdp(enabled):
    """Stores the math attention switch (no effect in genesis)."""
    _sdp["math"] = bool(enabled)


@_contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True):
    """Context manager setting the attention switches inside (stored; no effect in genesis)."""
    prev = dict(_sdp)
    enable_flash_sdp(enable_flash)
    enable_math_sdp(enable_math)
    try:
        yield {}
    finally:
        _sdp.update(prev)
