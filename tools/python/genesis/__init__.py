"""Genesis: a deep-learning framework with a C++ core, used from Python.

    import genesis
    import genesis.nn as nn
    x = genesis.randn(32, 784, requires_grad=True)
    loss = nn.Linear(784, 10)(x).sum()
    loss.backward()

The package is a thin layer over the C++ frontend and LLM library (genesis._C, pybind11): tensors,
autograd, every op and the models run in C++; nn.Module, the layer classes and the context managers
are Python, with torch's names.
Devices come from plugins found at run time (GENESIS_PLUGIN_PATH, then the directory next to
libgenesis); genesis.init(plugins=...) chooses them before first use.
"""
import builtins as _builtins
import contextlib as _contextlib
import ctypes as _ctypes
import glob as _glob
import os as _os


def _preload_installed_libraries():
    """pip-installed layout: genesis/lib holds libgenesis, libgenesis_frontend and libgenesis_llm (plugins under
    genesis/lib/genesis/plugins).  Loading them by path first lets _C's dependencies resolve by
    soname wherever the package lands; the build tree's _C finds them by its RUNPATH instead."""
    lib = _os.path.join(_os.path.dirname(__file__), "lib")
    for pattern in ("libgenesis.so.*", "libgenesis_frontend.so.*", "libgenesis_llm.so.*"):
        for path in sorted(_glob.glob(_os.path.join(lib, pattern))):
            _ctypes.CDLL(path, mode=_ctypes.RTLD_GLOBAL)


_preload_installed_libraries()
from genesis import _C  # noqa: E402
from genesis._C import (  # noqa: F401
    Generator, GradScaler, RngState, Tensor, arange, as_tensor, bernoulli, bmm, cat, checkpoint, cuda_available, device,
    dtype, empty, empty_like, eye, from_dlpack, full, full_like, get_all_rng_states, get_num_threads, get_rng_state,
    gradcheck, init, is_grad_enabled, linspace, load_file, manual_seed, matmul, max_memory_allocated, memory_allocated,
    memory_reserved, memory_stats, memory_summary, ones, ones_like, rand, rand_like, randint, randint_like, randn,
    randn_like, randperm, save_file, scalar_tensor, set_all_rng_states, set_grad_enabled, set_num_threads,
    set_rng_state, stack, tensor, where, zeros, zeros_like,
)
from genesis import amp, cuda, data, distributed, models, nn, optim, peft, profiler  # noqa: F401,E402
from genesis.amp import autocast  # noqa: F401,E402
from genesis.serialization import load, save  # noqa: F401,E402
from genesis import autograd  # noqa: F401,E402
from genesis import backends, multiprocessing, onnx, utils  # noqa: F401,E402 (torch's submodules)

__version__ = "0.1.0"
Size = tuple
enable_autocast = False  # accepted for programs that set it; has no effect: autocast regions turn AMP on


# ---- grad mode
from genesis._grad_mode import enable_grad, no_grad  # noqa: E402

inference_mode = no_grad


# ---- RNG
@_contextlib.contextmanager
def fork_rng(devices=None, enabled=True):
    """Saves the default generators (of `devices`, all when None) and restores them on exit."""
    fork = _C._RngFork(devices, enabled)
    fork.__enter__()
    try:
        yield
    finally:
        fork.__exit__(None, None, None)


def seed():
    """Seeds every device from the OS entropy source; returns the seed."""
    import os
    s = _builtins.int.from_bytes(os.urandom(8), "little") >> 1
    manual_seed(s)
    return s


def initial_seed():
    return get_rng_state().seed


# ---- memory statistics on the device object: device.memory_allocated(), device.memory_cached(), ...
for _name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved",
              "memory_stats", "memory_summary", "empty_cache", "reset_peak_memory_stats"):
    setattr(device, _name, (lambda f: lambda self: f(self))(getattr(_C, _name)))
device.memory_cached = device.memory_reserved


# ---- tensor functions that are methods too: genesis.exp(x) == x.exp()
def _as_function(name):
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"genesis.{name}(input, ...) is input.{name}(...)"
    return fn


for _name in ("neg", "negative", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
              "sigmoid", "relu", "square", "floor", "ceil", "round", "clamp", "pow", "reciprocal", "logical_not",
              "logical_and", "logical_or", "isnan", "isinf", "isfinite", "add", "sub", "mul", "div", "maximum",
              "minimum", "eq", "ne", "lt", "le", "gt", "ge", "sum", "mean", "prod", "max", "min", "amax", "amin",
              "argmax", "argmin", "var", "std", "logsumexp", "norm", "softmax", "log_softmax", "topk", "sort",
              "argsort", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "split", "chunk",
              "unbind", "index_select", "gather", "scatter", "scatter_add", "index_add", "masked_fill",
              "masked_select", "nonzero", "triu", "tril", "t", "narrow", "all", "any", "clone", "detach", "numel", "gelu", "silu"):
    globals()[_name] = _as_function(_name)
clip = globals()["clamp"]
del _name

# ---- scanning, ordering, counting and searching ops, determinants (src/algorithms.cpp, src/linalg.cpp)
from genesis._C import bucketize, searchsorted  # noqa: F401,E402
for _name in ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "kthvalue", "median", "nanmedian", "mode",
              "unique", "unique_consecutive", "bincount", "histc", "scatter_reduce", "det", "inverse", "slogdet",
              "logdet"):
    globals()[_name] = _as_function(_name)
del _name


# ---- copy and pickle: a detached copy of the data (as a NumPy array in pickles), requires_grad kept
def _tensor_deepcopy(self, memo):
    out = type(self).__new__(type(self))
    Tensor.__init__(out, self.detach().clone())
    out.requires_grad_(self.requires_grad)
    if self.grad is not None:
        out.grad = self.grad.detach().clone()
    memo[id(self)] = out
    return out


def _rebuild_tensor(cls, array, dtype, device, requires_grad):
    t = _C.tensor(array).to(dtype).to(device)
    out = cls.__new__(cls)
    Tensor.__init__(out, t)
    return out.requires_grad_(requires_grad)


def _tensor_reduce(self):
    t = self.detach().cpu()
    array = (t.float() if t.dtype == dtype.bfloat16 else t).numpy().copy()
    return _rebuild_tensor, (type(self), array, self.dtype, str(self.device), self.requires_grad)


Tensor.__deepcopy__ = _tensor_deepcopy
Tensor.__reduce_ex__ = lambda self, protocol: _tensor_reduce(self)


# ---- small conveniences written with other ops
def _flip(self, dims):
    """Reverses the order along dims (a copy, autograd-aware)."""
    out = self
    for d in ([dims] if isinstance(dims, _builtins.int) else dims):
        n = out.shape[d]
        out = out.index_select(d, _C.arange(n - 1, -1, -1, device=out.device))
    return out


def _array(self, dtype=None):
    """np.asarray(t): the NumPy view of a CPU tensor (a copy for other devices or dtypes)."""
    a = self.detach().cpu().numpy() if self.dtype != globals()["bfloat16"] else self.detach().float().cpu().numpy()
    return a if dtype is None else a.astype(dtype)


def _format(self, spec):
    return format(self.item(), spec) if spec and self.numel() == 1 else Tensor.__str__(self)


Tensor.flip = _flip
Tensor.__array__ = _array
Tensor.__format__ = _format


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.is_floating_point()


# ---- dtypes (set last: `float`, `int` and `bool` shadow the builtins inside this module)
globals().update({
    "float32": dtype.float32, "float": dtype.float32, "float16": dtype.float16, "half": dtype.float16,
    "bfloat16": dtype.bfloat16, "float64": dtype.float64, "double": dtype.float64, "int8": dtype.int8,
    "uint8": dtype.uint8, "int32": dtype.int32, "int": dtype.int32, "int64": dtype.int64, "long": dtype.int64,
    "bool": dtype.bool,
})


# ---- tensor functions composed in Python (genesis/functional.py, genesis/linalg.py): einsum, repeat, roll, // and %,
# in-place forms, norms, the default dtype, ...; functional._install also puts them on Tensor as methods
from genesis import functional, linalg  # noqa: E402
functional._install(globals())
# ---- end of the composed tensor functions

# ---- errors: a non-tensor given to a function written in Python raises torch's TypeError (genesis/_errors.py)
from genesis import _errors  # noqa: E402
_errors.guard_python_functions()

# ---- offline batched generation over the serving engine, in vLLM's shape (genesis/serving.py)
from genesis.serving import LLM, CompletionOutput, Logprob, RequestOutput, SamplingParams  # noqa: F401,E402
