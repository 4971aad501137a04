"""genesis.nn.Module, Parameter and the containers (torch.nn's names and behaviour).

A Module keeps its parameters, buffers and submodules in ordered dicts filled by attribute
assignment, so a Python subclass registers ``self.fc = nn.Linear(...)`` and
``self.w = nn.Parameter(...)`` just by setting them.  ``to()`` converts every tensor in place
(``p.data = ...``), so optimizers built before keep seeing the same parameters.
"""
import importlib
import math
import operator
import types
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Iterable, Mapping

from genesis import _C
from genesis._C import Tensor
from genesis._grad_mode import no_grad as _no_grad

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter (requires_grad=True by default)."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        # A leaf keeps its identity (C++ layers and the Python wrapper share it); a non-leaf is cut.
        Tensor.__init__(self, data if data.is_leaf else data.detach())
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


class RemovableHandle:
    """What register_forward_hook and register_forward_pre_hook return: remove() unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = weakref.ref(hooks)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _BoundFunction:
    """A C++-bound function (genesis._C.functional.relu, ...) in a pickle: its module and name, looked up again."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def resolve(self):
        return getattr(importlib.import_module(self.module), self.name)


def _is_bound_function(v):
    """A function of the C++ extension (pickle cannot store it: its __self__ is a capsule)."""
    return isinstance(v, types.BuiltinFunctionType) and type(getattr(v, "__self__", None)).__name__ == "PyCapsule" \
        and isinstance(getattr(v, "__module__", None), str)


def _encode_attr(v):
    return _BoundFunction(v.__module__, v.__name__) if _is_bound_function(v) else v


def _decode_attr(v):
    return v.resolve() if isinstance(v, _BoundFunction) else v


def _hook_grads(result, grads, hook_kind, what):
    """The gradients a backward hook hands on: its result (a tensor, or a tuple or list as long as grads) or, for
    None, grads unchanged."""
    if result is None:
        return grads
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != len(grads):
        raise RuntimeError(f"{hook_kind} returned an invalid number of {what}, got {len(result)}, but expected "
                           f"{len(grads)}")
    return result


class _BackwardHookState:
    """One call of a module with full backward hooks: its tensor inputs and outputs pass through identity autograd
    Functions, whose backwards see grad_output (outputs) and grad_input (inputs) and call the hooks, as torch's
    BackwardHook does."""

    def __init__(self, module, args):
        self.module = module
        self.n_args = len(args)
        self.positions = []
        self.grad_outputs = None

    def _hooks(self, table):
        hooks = self.module.__dict__.get(table)
        return list(hooks.values()) if hooks else []

    def wrap_inputs(self, args):
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in positions):
            return args
        self.positions = positions
        wrapped = _hook_functions()[0].apply(self, *[args[i] for i in positions])
        args = list(args)
        for i, t in zip(positions, wrapped):
            args[i] = t
        return tuple(args)

    def wrap_outputs(self, out):
        single = isinstance(out, Tensor)
        outs = (out,) if single else out
        if not isinstance(outs, (tuple, list)):
            return out
        positions = [j for j, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not positions:
            return out
        wrapped = _hook_functions()[1].apply(self, *[outs[j] for j in positions])
        new = list(outs)
        for j, t in zip(positions, wrapped):
            new[j] = t
        return new[0] if single else type(outs)(new)

    def outputs_backward(self, grads):
        for hook in self._hooks("_backward_pre_hooks"):
            grads = _hook_grads(hook(self.module, grads), grads, "Backward pre hook", "grad_output")
        self.grad_outputs = grads
        if not self.positions:  # no input needs a gradient: the hooks run now, with grad_input all None
            grad_input = (None,) * self.n_args
            for hook in self._hooks("_backward_hooks"):
                result = hook(self.module, grad_input, grads)
                if result is not None and not all(r is None for r in result):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
        return grads

    def inputs_backward(self, grads):
        grad_input = [None] * self.n_args
        for i, g in zip(self.positions, grads):
            grad_input[i] = g
        grad_input = tuple(grad_input)
        for hook in self._hooks("_backward_hooks"):
            grad_input = _hook_grads(hook(self.module, grad_input, self.grad_outputs), grad_input, "Backward hook",
                                     "grad_input")
        return tuple(grad_input[i] for i in self.positions)


_HOOK_FUNCTIONS = []


def _hook_functions():
    """The identity Functions of _BackwardHookState (made on first use: genesis.autograd imports genesis)."""
    if not _HOOK_FUNCTIONS:
        from genesis.autograd import Function

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx, state, *tensors):
                ctx.state = state
                ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
                return tensors

            @staticmethod
            def backward(ctx, *grads):
                return (None,) + tuple(ctx.state.inputs_backward(grads))

        class BackwardHookOutputFunction(Function):
            @staticmethod
            def forward(ctx, state, *tensors):
                ctx.state = state
                ctx.set_materialize_grads(False)
                return tensors

            @staticmethod
            def backward(ctx, *grads):
                return (None,) + tuple(ctx.state.outputs_backward(grads))

        _HOOK_FUNCTIONS.extend([BackwardHookFunction, BackwardHookOutputFunction])
    return _HOOK_FUNCTIONS


class Module:
    """Base class of every layer; subclasses define forward()."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        pre, post = d.get("_forward_pre_hooks"), d.get("_forward_hooks")
        backward_hooks = d.get("_backward_hooks") or d.get("_backward_pre_hooks")
        if not pre and not post and not backward_hooks:
            return self.forward(*args, **kwargs)
        # torch's order: pre-hooks see (module, args) and may return new args (a tuple or one value);
        # forward hooks see (module, args, output) and may return a new output.
        for hook in list(pre.values()) if pre else ():
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        state = _BackwardHookState(self, args) if backward_hooks and _C.is_grad_enabled() else None
        if state is not None:
            args = state.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        for hook in list(post.values()) if post else ():
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out if state is None else state.wrap_outputs(out)

    def _add_hook(self, table, hook):
        hooks = self.__dict__.get(table)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, table, hooks)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        """hook(module, args) runs before forward(); a non-None result replaces args. Returns a handle."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_hook(self, hook):
        """hook(module, args, output) runs after forward(); a non-None result replaces output. Returns a handle."""
        return self._add_hook("_forward_hooks", hook)

    def register_full_backward_hook(self, hook):
        """hook(module, grad_input, grad_output) runs when the gradients of the module's inputs are computed; a
        non-None result replaces grad_input. Returns a handle."""
        return self._add_hook("_backward_hooks", hook)

    def register_full_backward_pre_hook(self, hook):
        """hook(module, grad_output) runs when the gradients of the module's outputs are known; a non-None result
        replaces grad_output. Returns a handle."""
        return self._add_hook("_backward_pre_hooks", hook)

    # ---- registration through attributes
    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("cannot assign attributes before Module.__init__() call")
        params, bufs, mods = d["_parameters"], d["_buffers"], d["_modules"]
        if isinstance(value, Parameter):
            bufs.pop(name, None)
            mods.pop(name, None)
            d.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            bufs.pop(name, None)
            d.pop(name, None)
            mods[name] = value
        elif name in params:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}'")
            params[name] = value if value is None else Parameter(value)
        elif name in bufs:
            bufs[name] = value
        elif name in mods:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}'")
            mods[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            table = d.get(key)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            param = Parameter(param)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        self._modules[name] = module

    register_module = add_module

    # ---- traversal
    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named(self, table, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, t in getattr(m, table).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True):
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes, placement, gradients
    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def _apply_in_place(self, fn, floating_only):
        with _no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if floating_only and not t.is_floating_point():
                    continue
                t.data = fn(t.data)
                g = t.grad
                if g is not None:
                    g.data = fn(g.data)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype): converts every parameter and buffer in place."""
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            else:
                device = a
        if device is not None:
            self._apply_in_place(lambda t: t.to(device), False)
        if dtype is not None:
            self._apply_in_place(lambda t: t.to(dtype), True)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self):
        return self.to(_C.dtype.float32)

    def double(self):
        return self.to(_C.dtype.float64)

    def half(self):
        return self.to(_C.dtype.float16)

    def bfloat16(self):
        return self.to(_C.dtype.bfloat16)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def share_memory(self):
        """Moves the CPU parameters and buffers into shared memory in place (see genesis.multiprocessing): processes
        started with the module then update the same data.  Returns self."""
        from genesis.multiprocessing import _share_tensors
        _share_tensors(list(self.parameters()) + list(self.buffers()))
        return self

    # ---- pickling and copy.deepcopy: the attributes, with C++-bound functions (F.relu) by name
    def __getstate__(self):
        return {k: _encode_attr(v) for k, v in self.__dict__.items()}

    def __setstate__(self, state):
        self.__dict__.update({k: _decode_attr(v) for k, v in state.items()})

    # ---- state
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        out = OrderedDict() if destination is None else destination
        for mprefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            dot = mprefix + ("." if mprefix else "")
            for name, p in m._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars else p.detach()
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent:
                    out[dot + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values in; checks every key, shape and dtype first and changes nothing on error."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = []
        for k, t in own.items():
            if k in state_dict:
                src = state_dict[k]
                if tuple(src.shape) != tuple(t.shape):
                    problems.append(f"size mismatch for {k}: copying a param with shape {tuple(src.shape)}, "
                                    f"the shape in the current model is {tuple(t.shape)}")
        if strict and (missing or unexpected):
            if missing:
                problems.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
            if unexpected:
                problems.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
        if problems:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(problems))
        with _no_grad():
            for k, t in own.items():
                if k in state_dict:
                    t.data.copy_(state_dict[k])
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing
    def extra_repr(self):
        return ""

    def _repr_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        extra = self.extra_repr()
        name = self._repr_name()
        if not lines:
            return f"{name}({extra})"
        head = f"{name}(" + (extra + "\n  " if extra else "\n  ")
        return head + "\n  ".join(lines) + "\n)"


_CPP_INTERNAL = ("_impl", "_parameters", "_buffers", "_modules", "_non_persistent", "_init_args")


def _rebuild_cpp_layer(cls, args, kwargs, state, requires_grad, training, attrs):
    """Unpickles (or deep-copies) a CppLayer subclass: built again from its constructor's arguments (the RNG left as
    it was), then every saved tensor put in place (its device and dtype too), flags and attributes restored."""
    with _C._RngFork(None, True):
        m = cls(*args, **kwargs)
    own = m.state_dict(keep_vars=True)
    with _no_grad():
        for name, t in state.items():
            if name in own and own[name] is not None:
                own[name].data = t
    params = dict(m.named_parameters())
    for name, flag in requires_grad.items():
        if name in params:
            params[name].requires_grad_(flag)
    m.train(training)
    for k, v in attrs.items():
        object.__setattr__(m, k, _decode_attr(v))
    return m


class CppLayer(Module):
    """A Python Module over a C++ layer: its parameters, buffers and children become attributes
    (the very same tensors), and forward runs the C++ code."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        object.__setattr__(self, "_init_args", (args, kwargs))  # for pickling and deepcopy: built again from these
        return self

    def __reduce_ex__(self, protocol):
        args, kwargs = self.__dict__.get("_init_args", ((), {}))
        for a in list(args) + list(kwargs.values()):
            if a is self._impl or (type(a).__module__.startswith("genesis._C") and hasattr(a, "named_parameters")):
                raise TypeError(f"cannot pickle a {type(self).__name__} built around a C++ object; save its "
                                "state_dict() instead")
        state = self.state_dict()
        requires_grad = {name: p.requires_grad for name, p in self.named_parameters()}
        attrs = {k: _encode_attr(v) for k, v in self.__dict__.items() if k not in _CPP_INTERNAL}
        return _rebuild_cpp_layer, (type(self), args, kwargs, state, requires_grad, self.training, attrs)

    def __init__(self, impl):
        super().__init__()
        object.__setattr__(self, "_impl", impl)
        for name, t in impl.named_parameters(recurse=False):
            self._parameters[name] = Parameter(t, requires_grad=t.requires_grad)
        for name, t in impl.named_buffers(recurse=False):
            self._buffers[name] = t
        for name, child in impl.named_children():
            self._modules[name] = CppLayer(child)

    def train(self, mode=True):
        self._impl.train(mode)
        return super().train(mode)

    def _repr_name(self):
        name = type(self).__name__
        return self._impl.name() if name == "CppLayer" else name

    def forward(self, x):
        return self._impl.forward(x)


class Sequential(Module):
    """Modules called in order; Sequential(a, b) or Sequential(OrderedDict(name=module))."""

    def __init__(self, *mods):
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], OrderedDict):
            for name, m in mods[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(mods):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m):
        self.add_module(str(len(self)), m)
        return self


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ..."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def extend(self, ms):
        for m in ms:
            self.append(m)
        return self

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return ModuleList(mods[i])
        return mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of modules."""

    def __init__(self, modules=None):
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, m):
        self.add_module(k, m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()


def _param_line(p):
    """One entry of ParameterList/ParameterDict's repr, as torch prints it."""
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        size = "x".join(str(s) for s in p.shape)
        where = f" ({p.device})" if str(p.device) != "cpu" else ""
        return f"{kind} containing: [{p.dtype} of size {size}{where}]"
    return f"Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... (tensors become Parameters; other objects are kept as is)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx + len(self) if idx < 0 else idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._index(idx))

    def __setitem__(self, idx, param):
        name = self._index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, name, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")

    def append(self, value):
        """Adds value at the end; returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Appends every value of an iterable; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def __repr__(self):
        lines = [f"    ({i}): {_param_line(p)}" for i, p in enumerate(self)]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)" if lines else f"{type(self).__name__}()"


class ParameterDict(Module):
    """A dict of parameters under string keys, in insertion order (tensors become Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string "
                            f"(type is '{type(key).__name__}').")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key(key))

    def __setitem__(self, key, value):
        self._key(key)
        if "." in key:
            raise KeyError('parameter name can\'t contain "."')
        if key == "":
            raise KeyError('parameter name can\'t be empty string ""')
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

    def copy(self):
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """self[key], set to default first when key is missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        """Removes every entry."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        """Removes key and returns its value."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Removes and returns the last (key, value) pair."""
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key, default=None):
        """self[key], or default when key is missing."""
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with every key set to default."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Adds the entries of a mapping (a plain one in sorted key order, as torch) or of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got " +
                            type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for k, v in parameters.items():
                self[k] = v
        elif isinstance(parameters, Mapping):
            for k, v in sorted(parameters.items()):
                self[k] = v
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is "
                                    + type(p).__name__)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                self[p[0]] = p[1]

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def __repr__(self):
        lines = [f"    ({k}): {_param_line(v)}" for k, v in self.items()]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)" if lines else f"{type(self).__name__}()"


class Unflatten(Module):
    """Splits dim into unflattened_size (a tuple or list of ints; one may be -1): the inverse of Flatten."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dimensions are not supported")
        if not isinstance(dim, int):
            raise TypeError("invalid argument type for dim parameter")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(s).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        shape, n = list(input.shape), input.dim()
        d = self.dim + n if self.dim < 0 else self.dim
        if not 0 <= d < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                             f"but got {self.dim})")
        sizes = list(self.unflattened_size)
        if sizes.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        known = math.prod(s for s in sizes if s != -1)
        if -1 in sizes:
            if known == 0 or shape[d] % known:
                raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim "
                                   f"{self.dim} ({shape[d]}) in the input tensor")
            sizes[sizes.index(-1)] = shape[d] // known
        elif known != shape[d]:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {self.dim} "
                               f"({shape[d]}) in the input tensor")
        return input.reshape(*(shape[:d] + sizes + shape[d + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
