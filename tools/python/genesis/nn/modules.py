"""genesis.nn.Module, Parameter and the containers (torch.nn's names and behaviour).

A Module keeps its parameters, buffers and submodules in ordered dicts filled by attribute
assignment, so a Python subclass registers ``self.fc = nn.Linear(...)`` and
``self.w = nn.Parameter(...)`` just by setting them.  ``to()`` converts every tensor in place
(``p.data = ...``), so optimizers built before keep seeing the same parameters.
"""
import weakref
from collections import OrderedDict, namedtuple

from genesis import _C
from genesis._C import Tensor

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
        if not pre and not post:
            return self.forward(*args, **kwargs)
        # torch's order: pre-hooks see (module, args) and may return new args (a tuple or one value);
        # forward hooks see (module, args, output) and may return a new output.
        for hook in list(pre.values()) if pre else ():
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(post.values()) if post else ():
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

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
        with _C_no_grad():
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
        with _C_no_grad():
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


class _C_no_grad:
    """Grad mode off inside (the same as genesis.no_grad, without importing the package)."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self.prev)
        return False


class CppLayer(Module):
    """A Python Module over a C++ layer: its parameters, buffers and children become attributes
    (the very same tensors), and forward runs the C++ code."""

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
