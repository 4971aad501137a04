#!/usr/bin/env python3
"""Coverage of PyTorch's public Python API by the genesis package.

Introspects PyTorch (the reference list: Debian's 1.13) and genesis side by side and marks every
public PyTorch name supported when genesis has the same name at the corresponding place:

    torch                     -> genesis                 torch.nn.init             -> genesis.nn.init
    torch.Tensor              -> genesis.Tensor          torch.optim               -> genesis.optim
    torch.nn                  -> genesis.nn              torch.optim.lr_scheduler  -> genesis.optim.lr_scheduler
    torch.nn.Module           -> genesis.nn.Module       torch.utils.data          -> genesis.utils.data or genesis.data
    torch.nn.functional       -> genesis.nn.functional   torch.linalg / autograd   -> genesis.linalg / autograd

A name counts as present when genesis has it there and, where PyTorch's object is callable, genesis's is
callable too (a Tensor operator such as __floordiv__ must not be the one every object inherits). The names
PyTorch users reach for first (the "everyday" list below) are checked more strictly: a layer must be a
genesis.nn.Module subclass, an optimizer a genesis.optim.Optimizer subclass, any other class a class; and a
few behaviours that have no name of their own (in-place ops on non-leaf tensors, DataLoader over any
dataset, double backward) are probed by running a few lines in a child process.

    PYTHONPATH=build/python /usr/bin/python3 scripts/python_coverage.py            # the summary
    PYTHONPATH=build/python /usr/bin/python3 scripts/python_coverage.py --markdown # the full table
    PYTHONPATH=build/python /usr/bin/python3 scripts/python_coverage.py --write    # refresh the docs
    PYTHONPATH=build/python /usr/bin/python3 scripts/python_coverage.py --check    # fail if they are stale

--write rewrites the block between the coverage markers in docs/python.md (the summary) and all of
docs/python-coverage.md (the per-name table); --check exits with 1 when either differs from a fresh run.
--json prints every row and count for other tools.
"""
import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- coverage:begin -->"
END = "<!-- coverage:end -->"
SUMMARY_DOC = os.path.join("docs", "python.md")
TABLE_DOC = os.path.join("docs", "python-coverage.md")

# (PyTorch namespace, genesis places searched in order, scope).  Scopes: "api" = every public name left after
# the filters below; "classes" = classes only; "methods" = callables of a class; "all" = the module's __all__;
# "init" = nn.init without its deprecated aliases; "tensor" = Tensor's public names and operators.
NAMESPACES = [
    ("torch", ["genesis"], "api"),
    ("torch.Tensor", ["genesis.Tensor"], "tensor"),
    ("torch.nn", ["genesis.nn"], "classes"),
    ("torch.nn.Module", ["genesis.nn.Module"], "methods"),
    ("torch.nn.functional", ["genesis.nn.functional"], "api"),
    ("torch.nn.init", ["genesis.nn.init"], "init"),
    ("torch.optim", ["genesis.optim"], "classes"),
    ("torch.optim.lr_scheduler", ["genesis.optim.lr_scheduler"], "all"),
    ("torch.utils.data", ["genesis.utils.data", "genesis.data"], "all"),
    ("torch.linalg", ["genesis.linalg"], "api"),
    ("torch.autograd", ["genesis.autograd"], "api"),
]

# Tensor's operator and protocol methods (Python 2 spellings such as __div__ and __nonzero__, pickling and
# __torch_function__ internals are left out).
TENSOR_DUNDERS = """
__abs__ __add__ __and__ __array__ __bool__ __complex__ __contains__ __deepcopy__ __dlpack__ __dlpack_device__ __eq__
__float__ __floordiv__ __format__ __ge__ __getitem__ __gt__ __iadd__ __iand__ __ifloordiv__ __ilshift__ __imod__
__imul__ __index__ __int__ __invert__ __ior__ __ipow__ __irshift__ __isub__ __iter__ __itruediv__ __ixor__ __le__
__len__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __or__ __pos__ __pow__ __radd__ __rand__
__repr__ __reversed__ __rfloordiv__ __rlshift__ __rmatmul__ __rmod__ __rmul__ __ror__ __rpow__ __rrshift__
__rshift__ __rsub__ __rtruediv__ __rxor__ __setitem__ __sub__ __truediv__ __xor__
""".split()

# Kernels of one backend or aten-internal entry points exposed without an underscore.
BACKEND_PREFIXES = ("cudnn_", "miopen_", "mkldnn_", "fbgemm_", "native_")
TORCH_FUNCTION_HELPERS = {"handle_torch_function", "has_torch_function", "has_torch_function_unary",
                          "has_torch_function_variadic", "is_tensor_like"}
# Names that are not API in one namespace, with the reason.
EXPLICIT = {
    "torch": {"obj": "leftover of a module-level loop", "candidate": "leftover of a module-level loop",
              "DisableTorchFunction": "__torch_function__ machinery", "StorageBase": "internal base class",
              "FatalError": "TorchScript, profiler or mobile-optimizer binding internals",
              "JITException": "TorchScript, profiler or mobile-optimizer binding internals"},
    "torch.nn.functional": {"assert_int_or_pair": "argument-checking helper"},
    "torch.autograd": {"variable": "deprecated alias of Variable", "kineto_available": "profiler query"},
}

# ---- the everyday list: names PyTorch users reach for first, each looked up wherever PyTorch has it among
# torch, torch.Tensor and torch.linalg ("linalg.x": torch.linalg only; "Tensor.x": the method only).
EVERYDAY_TENSOR = """
einsum repeat repeat_interleave expand_as cumsum cumprod flip roll tril triu diag outer bmm baddbmm scatter scatter_
scatter_add scatter_add_ scatter_reduce index_add index_add_ masked_fill masked_fill_ unique bincount histc
searchsorted sort kthvalue median mode std_mean norm linalg.norm linalg.vector_norm linalg.solve linalg.inv
linalg.det linalg.cholesky linalg.qr linalg.svd allclose isclose equal count_nonzero nan_to_num clamp_
floor_divide remainder Tensor.__floordiv__ Tensor.__rfloordiv__ Tensor.__ifloordiv__ Tensor.__mod__
Tensor.__rmod__ Tensor.__imod__ from_numpy new_zeros new_ones new_full Tensor.type get_default_dtype
set_default_dtype
""".split()
EVERYDAY_NN = """
Conv1d Conv3d ConvTranspose1d ConvTranspose2d MaxPool1d AvgPool1d AvgPool2d AdaptiveAvgPool1d AdaptiveAvgPool2d
AdaptiveMaxPool2d Upsample PixelShuffle GroupNorm InstanceNorm2d LeakyReLU PReLU ELU SELU Softplus Hardswish Mish
GLU RNN LSTM GRU RNNCell LSTMCell GRUCell TransformerEncoderLayer TransformerDecoderLayer Transformer
MultiheadAttention Unflatten ParameterList ParameterDict SmoothL1Loss HuberLoss KLDivLoss CosineEmbeddingLoss
MarginRankingLoss TripletMarginLoss CTCLoss
""".split()
EVERYDAY_OTHER = [
    ("torch.nn.functional", "interpolate pad normalize cosine_similarity"),
    ("torch.nn.init", "trunc_normal_"),
    ("torch.nn.Module", "register_full_backward_hook"),
    ("torch.optim", "RMSprop Adagrad Adamax NAdam RAdam LBFGS"),
    ("torch.optim.lr_scheduler", "ReduceLROnPlateau SequentialLR ChainedScheduler CyclicLR OneCycleLR LambdaLR "
                                 "PolynomialLR"),
    ("torch.autograd", "grad Function"),
    ("torch.utils.data", "DataLoader Dataset IterableDataset random_split Subset ConcatDataset"),
]


def resolve(path):
    """The object at a dotted path ("genesis.nn.Module"), importing submodules on the way; None if absent."""
    parts = path.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i + 1]))
            except ImportError:
                return None
    return obj


def kind_of(name, obj, scope):
    """A short word for what a PyTorch name is: class, function, method, operator, dtype, property, constant."""
    import torch
    if isinstance(obj, torch.dtype):
        return "dtype"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        if name.startswith("__"):
            return "operator"
        return "method" if scope in ("tensor", "methods") else "function"
    if isinstance(obj, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "property"
    if type(obj).__module__ == "torch":
        return type(obj).__name__.replace("_", " ")  # layout, memory_format, qscheme
    return "constant"


def left_out(namespace, scope, name, obj, torch_mod, tensor_cls):
    """Why a public-looking name is not part of the API (None when it is)."""
    if name.startswith("_") and not (scope == "tensor" and name in TENSOR_DUNDERS):
        return "private"
    if isinstance(obj, types.ModuleType):
        return "submodule"
    if name in EXPLICIT.get(namespace, {}):
        return EXPLICIT[namespace][name]
    if getattr(obj, "__module__", None) == "typing" or type(obj).__module__ == "typing" or name == "TYPE_CHECKING":
        return "typing helper"
    if isinstance(obj, type) and obj.__module__ == "builtins":
        return "Python builtin type alias"
    if obj is tensor_cls and namespace != "torch":
        return "re-export of torch.Tensor"
    if type(obj).__name__ == "pybind11_type" or type(type(obj)).__name__ == "pybind11_type" \
            or getattr(obj, "__module__", None) == "torch._jit_internal":
        return "TorchScript, profiler or mobile-optimizer binding internals"
    if name in TORCH_FUNCTION_HELPERS:
        return "__torch_function__ machinery"
    if isinstance(obj, (dict, str, tuple, list)):
        return "documentation text or lookup table"
    if isinstance(obj, bool):
        return "build-configuration flag"
    if name.startswith(BACKEND_PREFIXES):
        return "backend-specific or aten-internal kernel"
    if scope == "classes" and not isinstance(obj, type):
        return "helper function (only classes counted here)"
    if scope == "methods" and not callable(obj):
        return "attribute (only methods counted here)"
    if scope == "init" and not name.endswith("_") and hasattr(torch_mod, name + "_"):
        return "deprecated alias of " + name + "_"
    if scope == "all" and name not in getattr(torch_mod, "__all__", ()):
        return "import, not in __all__"
    return None


def torch_names(namespace, scope):
    """(names kept as {name: obj}, names left out as {name: reason}) for one PyTorch namespace."""
    import torch
    mod = resolve(namespace)
    names = set(dir(mod))
    if scope == "tensor":
        names = {n for n in names if not n.startswith("_")} | (set(TENSOR_DUNDERS) & names)
    kept, dropped = {}, {}
    for name in sorted(names):
        obj = getattr(mod, name)
        why = left_out(namespace, scope, name, obj, mod, torch.Tensor)
        if why is None:
            kept[name] = obj
        elif why != "private":
            dropped[name] = why
    return kept, dropped


def genesis_lookup(places, name):
    """Genesis's object for a name, searching the places in order; None if absent."""
    for place in places:
        if place is None:
            continue
        try:
            obj = getattr(place, name)
        except Exception:  # a lazy attribute that fails to import counts as absent
            continue
        if name.startswith("__") and obj is getattr(object, name, None):
            continue  # the default every object has, not an operator of genesis's own
        return obj
    return None


def status(places, name, torch_obj):
    """'yes', 'no' or 'no (not callable)' for a name at genesis's places."""
    g = genesis_lookup(places, name)
    if g is None:
        return "no"
    if callable(torch_obj) and not callable(g):
        return "no (not callable)"
    return "yes"


def strict_status(places, name, torch_obj):
    """status() plus kind checks: modules, optimizers and other classes must be classes of the right base."""
    import torch
    import genesis
    base = status(places, name, torch_obj)
    if base != "yes":
        return base
    g = genesis_lookup(places, name)
    if isinstance(torch_obj, type):
        if not isinstance(g, type):
            return "no (not a class)"
        if issubclass(torch_obj, torch.nn.Module) and not issubclass(g, genesis.nn.Module):
            return "no (not an nn.Module subclass)"
        if issubclass(torch_obj, torch.optim.Optimizer) and not issubclass(g, genesis.optim.Optimizer):
            return "no (not an optim.Optimizer subclass)"
        if issubclass(torch_obj, torch.autograd.Function) and not hasattr(g, "apply"):
            return "no (no apply)"
    return "yes"


def genesis_places(paths):
    return [resolve(p) for p in paths]


def unary_ops():
    """The ops of ops.def's unary section (elementwise, one input)."""
    path = os.path.join(ROOT, "core", "ops", "ops.def")
    ops, inside = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("/* ----"):
                inside = line.startswith("/* ---- unary:")
            m = re.match(r"GN_OP\((\w+),\s*\d+,\s*\d+,\s*\d+,\s*0,\s*unary_\w+", line)
            if inside and m:
                ops.append(m.group(1))
    return ops


def everyday_rows(spaces):
    """The everyday list: (qualified name, genesis place, status) rows."""
    import torch
    rows = []

    def add(namespace, name):
        torch_obj = getattr(resolve(namespace), name)
        space = spaces[namespace]
        paths = space["paths"]
        where = next((path for path, place in zip(paths, space["places"])
                      if place is not None and genesis_lookup([place], name) is not None), paths[-1])
        rows.append((namespace + "." + name, where + "." + name, strict_status(space["places"], name, torch_obj)))

    for entry in EVERYDAY_TENSOR:
        if entry.startswith("linalg."):
            add("torch.linalg", entry[len("linalg."):])
        elif entry.startswith("Tensor."):
            add("torch.Tensor", entry[len("Tensor."):])
        else:
            found = False
            for namespace in ("torch", "torch.Tensor"):
                if hasattr(resolve(namespace), entry):
                    add(namespace, entry)
                    found = True
            assert found, entry
    for op in unary_ops():
        if hasattr(torch.Tensor, op + "_"):
            add("torch.Tensor", op + "_")
    for name in EVERYDAY_NN:
        add("torch.nn", name)
    for namespace, names in EVERYDAY_OTHER:
        for name in names.split():
            add(namespace, name)
    return rows


# ---- probes: behaviours without a name of their own, each run in a child process (a crash marks it failed)
def _probe_inplace_nonleaf(g):
    x = g.ones(3, requires_grad=True)
    y = x * 2
    y.add_(1)
    y.sum().backward()
    assert float(x.grad.sum()) == 6.0, "wrong gradient"


def _probe_version_counter(g):
    x = g.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    try:
        y.sum().backward()
    except RuntimeError:
        return
    raise AssertionError("backward through a modified saved tensor did not raise RuntimeError")


def _probe_double_backward(g):
    x = g.tensor([2.0], requires_grad=True)
    (dx,) = g.autograd.grad((x * x * x).sum(), x, create_graph=True)
    (ddx,) = g.autograd.grad(dx.sum(), x)
    assert float(ddx.sum()) == 12.0, "wrong second derivative"


def _probe_function_subclass(g):
    class Cube(g.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    x = g.tensor([2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    assert float(x.grad.sum()) == 12.0, "wrong gradient"


def _probe_floordiv_mod(g):
    a = g.tensor([-7.0, 7.0])
    assert [float(v) for v in (a // 2)] == [-4.0, 3.0], "wrong a // 2"
    assert [float(v) for v in (a % 2)] == [1.0, 1.0], "wrong a % 2"


def _probe_sort_stable(g):
    _, idx = g.sort(g.tensor([1.0, 0.0, 1.0, 0.0]), stable=True)
    assert [int(v) for v in idx] == [1, 3, 0, 2], "not stable"


def _probe_loader_map_style(g):
    class Squares:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return g.tensor([float(i * i)]), i

    batches = list(g.data.DataLoader(Squares(), batch_size=2))
    assert len(batches) == 3, "wrong number of batches"
    x, y = batches[0]
    assert tuple(x.shape) == (2, 1) and [int(v) for v in y] == [0, 1], "wrong collation"


def _probe_loader_iterable(g):
    class Stream(g.data.IterableDataset):
        def __iter__(self):
            return iter([g.tensor([float(i)]) for i in range(5)])

    batches = list(g.data.DataLoader(Stream(), batch_size=2))
    assert [tuple(b.shape) for b in batches] == [(2, 1), (2, 1), (1, 1)], "wrong batches"


def _probe_loader_options(g):
    ds = g.data.TensorDataset(g.arange(10).float())
    loader = g.data.DataLoader(ds, batch_size=3, shuffle=False, sampler=None, drop_last=True, num_workers=0,
                               pin_memory=True, collate_fn=lambda items: len(items))
    assert list(loader) == [3, 3, 3], "collate_fn or drop_last ignored"
    loader = g.data.DataLoader(ds, batch_sampler=[[0, 1], [2]])
    assert [tuple(b[0].shape) for b in loader] == [(2,), (1,)], "batch_sampler ignored"


PROBES = [
    ("in-place op on a non-leaf tensor (`y = x * 2; y.add_(1)`), then backward", _probe_inplace_nonleaf),
    ("modifying a tensor saved for backward raises RuntimeError at backward", _probe_version_counter),
    ("`autograd.grad(..., create_graph=True)` then a second `grad` (double backward)", _probe_double_backward),
    ("`autograd.Function` subclassed in Python (`ctx.save_for_backward`, `apply`)", _probe_function_subclass),
    ("`//` and `%` on float tensors round toward minus infinity", _probe_floordiv_mod),
    ("`sort(x, stable=True)`", _probe_sort_stable),
    ("`DataLoader` over a map-style dataset (`__len__`/`__getitem__`), default collation", _probe_loader_map_style),
    ("`DataLoader` over an `IterableDataset`", _probe_loader_iterable),
    ("`DataLoader(collate_fn=, sampler=, batch_sampler=, drop_last=, pin_memory=)`", _probe_loader_options),
]


def _run_probes_child(start):
    """In the child: runs probes from index start, one JSON line each."""
    import genesis
    for i in range(start, len(PROBES)):
        try:
            PROBES[i][1](genesis)
            result = "yes"
        except Exception as e:  # the report wants the exception, whatever it is
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            msg = msg if len(msg) <= 90 else msg[:87] + "..."
            result = "no (%s%s)" % (type(e).__name__, ": " + msg if msg else "")
        print(json.dumps([i, result]), flush=True)


def run_probes():
    """Runs every probe in child processes; a probe that kills its process is marked so and the rest go on."""
    results, start = {}, 0
    while start < len(PROBES):
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe-child", str(start)],
                                  capture_output=True, text=True, timeout=120, env=dict(os.environ))
            out, rc = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc = "timeout"
        nxt = start
        for line in out.splitlines():
            if line.startswith("["):
                i, result = json.loads(line)
                results[i] = result
                nxt = i + 1
        if nxt >= len(PROBES):
            break
        # the child stopped inside probe nxt: mark it and go on with the next one
        results[nxt] = "no (the process died: %s)" % ("timed out" if rc == "timeout" else "exit status %s" % rc)
        start = nxt + 1
    return [(PROBES[i][0], results.get(i, "no (not run)")) for i in range(len(PROBES))]


# ---- the report
def collect(with_probes=True):
    """Every namespace's rows and counts, the everyday list and the probes."""
    import torch
    importlib.import_module("genesis")  # fails loudly rather than counting every name missing
    spaces = {}
    for namespace, paths, scope in NAMESPACES:
        kept, dropped = torch_names(namespace, scope)
        places = genesis_places(paths)
        rows = [(name, kind_of(name, obj, scope), status(places, name, obj)) for name, obj in kept.items()]
        spaces[namespace] = {"genesis": " or ".join(paths), "paths": paths, "places": places, "rows": rows,
                             "left_out": dropped,
                             "supported": sum(r[2] == "yes" for r in rows), "total": len(rows)}
    report = {"torch_version": torch.__version__, "namespaces": spaces, "everyday": everyday_rows(spaces)}
    report["probes"] = run_probes() if with_probes else []
    return report


def pct(a, b):
    return "%d%%" % round(100.0 * a / b) if b else "-"


def summary_text(report):
    lines = ["PyTorch %s names supported by genesis:" % report["torch_version"]]
    tot_s = tot_n = 0
    for namespace, s in report["namespaces"].items():
        share = pct(s["supported"], s["total"])
        lines.append("  %-26s %4d / %-4d (%s)" % (namespace, s["supported"], s["total"], share))
        tot_s += s["supported"]
        tot_n += s["total"]
    lines.append("  %-26s %4d / %-4d (%s)" % ("all", tot_s, tot_n, pct(tot_s, tot_n)))
    ev = report["everyday"]
    ev_s = sum(r[2] == "yes" for r in ev)
    lines.append("  %-26s %4d / %-4d (%s)" % ("everyday list (strict)", ev_s, len(ev), pct(ev_s, len(ev))))
    if report["probes"]:
        pr_s = sum(r[1] == "yes" for r in report["probes"])
        lines.append("  %-26s %4d / %-4d" % ("behaviour probes", pr_s, len(report["probes"])))
    return "\n".join(lines)


def summary_markdown(report, intro=True):
    out = ["Generated by `scripts/python_coverage.py --write` against PyTorch %s;" % report["torch_version"],
           "[python-coverage.md](python-coverage.md) lists every name.", ""] if intro else []
    out += ["| PyTorch | genesis | supported | of | share |", "|---|---|---:|---:|---:|"]
    tot_s = tot_n = 0
    for namespace, s in report["namespaces"].items():
        out.append("| `%s` | `%s` | %d | %d | %s |" % (namespace, s["genesis"].replace(" or ", "` or `"),
                                                      s["supported"], s["total"], pct(s["supported"], s["total"])))
        tot_s += s["supported"]
        tot_n += s["total"]
    out.append("| all of the above | | %d | %d | %s |" % (tot_s, tot_n, pct(tot_s, tot_n)))
    ev = report["everyday"]
    ev_s = sum(r[2] == "yes" for r in ev)
    out.append("| the everyday list (strict checks) | | %d | %d | %s |" % (ev_s, len(ev), pct(ev_s, len(ev))))
    if report["probes"]:
        pr_s = sum(r[1] == "yes" for r in report["probes"])
        out.append("| behaviour probes | | %d | %d | %s |" % (pr_s, len(report["probes"]),
                                                              pct(pr_s, len(report["probes"]))))
    return "\n".join(out)


def wrap(paragraph):
    """A prose paragraph wrapped at 100 columns, as the hand-written docs are."""
    return textwrap.fill(paragraph, 100, break_long_words=False, break_on_hyphens=False)


def full_markdown(report):
    out = ["# Coverage of PyTorch's API", "",
           "<!-- Generated by scripts/python_coverage.py --write; edit the script, not this file. -->", "",
           "Every public name of PyTorch %s's Python API in the namespaces below, and whether `import genesis` "
           "has it at the same place (`scripts/python_coverage.py`, which "
           "[python.md](python.md#coverage-of-pytorchs-api) summarises). *yes* means the name exists there "
           "and, where PyTorch's is callable, genesis's is callable too; it says nothing of every argument "
           "being accepted." % report["torch_version"], "",
           "Left out of the lists: names starting with `_`, submodules, typing helpers, PyTorch's re-exports of "
           "`torch.Tensor`, TorchScript/profiler/mobile binding internals (pybind11 classes such as `torch.Graph`), "
           "`__torch_function__` machinery, documentation strings and lookup tables, build-configuration flags "
           "(`torch.has_cuda`), backend-specific or aten-internal kernels (`cudnn_*`, `miopen_*`, `mkldnn_*`, "
           "`fbgemm_*`, `native_*`), Python 2 operator spellings (`__div__`), and per namespace: functions in "
           "`torch.nn` and `torch.optim` (classes only), `torch.nn.init`'s deprecated aliases without `_`, and "
           "imports outside `__all__` in `torch.optim.lr_scheduler` and `torch.utils.data`. Each namespace's "
           "section ends with the names it left out and why.", ""]
    out = [wrap(line) for line in out]
    out += ["## Summary", "", summary_markdown(report, intro=False), ""]
    out += ["## The everyday list", "",
            wrap("The names PyTorch users reach for first, each checked wherever PyTorch has it (function, Tensor "
            "method, `linalg`), with stricter checks: a layer must subclass `genesis.nn.Module`, an optimizer "
            "`genesis.optim.Optimizer`, any other class be a class. In-place forms are listed for every op of "
            "the unary section of `core/ops/ops.def` that has one in PyTorch."), "",
            "| PyTorch | genesis | supported |", "|---|---|---|"]
    for name, where, st in report["everyday"]:
        out.append("| `%s` | `%s` | %s |" % (name, where, st))
    out.append("")
    if report["probes"]:
        out += ["## Behaviour probes", "", "Behaviours with no name of their own, run in a child process.", "",
                "| behaviour | works |", "|---|---|"]
        for what, st in report["probes"]:
            out.append("| %s | %s |" % (what, st.replace("|", "\\|")))
        out.append("")
    for namespace, s in report["namespaces"].items():
        out += ["## `%s`" % namespace, "",
                "Looked up in `%s`: %d of %d supported (%s)." % (s["genesis"].replace(" or ", "` or `"),
                                                                s["supported"], s["total"],
                                                                pct(s["supported"], s["total"])), "",
                "| name | kind | supported |", "|---|---|---|"]
        for name, kind, st in s["rows"]:
            out.append("| `%s` | %s | %s |" % (name, kind, st))
        out.append("")
        if s["left_out"]:
            by_reason = {}
            for name, why in s["left_out"].items():
                by_reason.setdefault(why, []).append(name)
            out.append("Left out:")
            out.append("")
            for why in sorted(by_reason):
                out.append("- %s: %s" % (why, ", ".join("`%s`" % n for n in sorted(by_reason[why]))))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def replace_block(text, block):
    """text with the part between BEGIN and END replaced by block."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        raise SystemExit("%s has no %s ... %s block" % (SUMMARY_DOC, BEGIN, END))
    return text[:i + len(BEGIN)] + "\n" + block + "\n" + text[j:]


def expected_docs(report, root):
    with open(os.path.join(root, SUMMARY_DOC), encoding="utf-8") as f:
        summary = f.read()
    return {SUMMARY_DOC: (summary, replace_block(summary, summary_markdown(report))),
            TABLE_DOC: (_read(os.path.join(root, TABLE_DOC)), full_markdown(report))}


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print the full per-name table in Markdown")
    ap.add_argument("--json", action="store_true", help="print every row and count as JSON")
    ap.add_argument("--write", action="store_true", help="rewrite docs/python.md's coverage block and "
                                                         "docs/python-coverage.md")
    ap.add_argument("--check", action="store_true", help="exit with 1 if the docs differ from a fresh run")
    ap.add_argument("--no-probes", action="store_true", help="skip the behaviour probes")
    ap.add_argument("--root", default=ROOT, help="the repository whose docs --write/--check use")
    ap.add_argument("--probe-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probe_child is not None:
        _run_probes_child(args.probe_child)
        return 0
    report = collect(with_probes=not args.no_probes)
    if args.json:
        plain = {k: v for k, v in report.items() if k != "namespaces"}
        plain["namespaces"] = {n: {k: v for k, v in s.items() if k != "places"}
                               for n, s in report["namespaces"].items()}
        print(json.dumps(plain, indent=1))
    elif args.markdown:
        sys.stdout.write(full_markdown(report))
    else:
        print(summary_text(report))
    if args.write or args.check:
        stale = []
        for rel, (now, want) in expected_docs(report, args.root).items():
            if now != want:
                stale.append(rel)
                if args.write:
                    with open(os.path.join(args.root, rel), "w", encoding="utf-8") as f:
                        f.write(want)
        if args.check and stale:
            print("stale: %s (run scripts/python_coverage.py --write)" % ", ".join(stale), file=sys.stderr)
            return 1
        if args.write:
            print("wrote: %s" % (", ".join(stale) or "nothing, already current"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
