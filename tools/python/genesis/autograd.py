"""genesis.autograd: torch.autograd's names over the C++ engine (frontend/src/autograd).

``grad`` and ``backward`` run the engine: ``grad`` returns the gradients of its inputs instead of
accumulating them and runs only the part of the graph that leads to them; ``create_graph=True``
records the backward pass itself, so its gradients can be differentiated again (double backward).
Every rule made of differentiable ops is differentiable again; the rules that call a backward kernel
have a differentiable form for matmul / linear / bmm, softmax / log_softmax, cross_entropy, gather,
index_select and embedding.  The others (layer_norm, rms_norm, conv2d, the pools, attention, rope,
swiglu) raise when a second backward reaches them.

``Function`` is subclassed as in torch: static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``,
``ctx.save_for_backward`` / ``ctx.saved_tensors``, ``ctx.needs_input_grad``,
``ctx.mark_non_differentiable``, ``ctx.mark_dirty``, ``ctx.set_materialize_grads``, ``Function.apply``.
``gradcheck`` / ``gradgradcheck`` compare full Jacobians with central differences;
``functional`` has ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp`` and ``hvp``.
"""
import sys as _sys
import types as _types
import warnings as _warnings

from genesis import _C
from genesis._C import Tensor

Variable = Tensor  # torch.autograd.Variable: tensors are variables


# ------------------------------------------------------------------------------------------------ grad mode

def _grad_mode():
    import genesis
    return genesis.no_grad, genesis.enable_grad


class set_grad_enabled:
    """Context manager (or plain call) that turns recording on or off, as torch.set_grad_enabled."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self._mode = bool(mode)
        _C.set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False


def __getattr__(name):
    # no_grad / enable_grad live in the genesis package (imported after this module)
    if name in ("no_grad", "enable_grad", "inference_mode"):
        import genesis
        return getattr(genesis, name)
    raise AttributeError(f"module 'genesis.autograd' has no attribute '{name}'")


class detect_anomaly:
    """Accepted for torch programs; genesis keeps no forward traces, so it only runs the block."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


def set_detect_anomaly(mode, check_nan=True):
    """Accepted for torch programs (see detect_anomaly)."""
    return detect_anomaly(check_nan)


# ------------------------------------------------------------------------------------------------ grad, backward

def _tensor_tuple(x, what):
    if isinstance(x, Tensor):
        return (x,)
    try:
        out = tuple(x)
    except TypeError:
        raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, not {type(x).__name__}") from None
    for t in out:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, but got {type(t).__name__}")
    return out


def _grad_tuple(grads, n, what):
    if grads is None:
        return [None] * n
    grads = (grads,) if isinstance(grads, Tensor) else tuple(grads)
    if len(grads) != n:
        raise RuntimeError(f"{what} should be a sequence of length {n}, but got {len(grads)}")
    for g in grads:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"{what} can only contain Tensors or None, but got {type(g).__name__}")
    return list(grads)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, is_grads_batched=False):
    """The gradients of outputs (weighted by grad_outputs) with respect to inputs, as a tuple (torch.autograd.grad)."""
    if is_grads_batched:
        raise NotImplementedError("grad(is_grads_batched=True) is not supported; call grad once per batch element")
    outputs = _tensor_tuple(outputs, "outputs")
    inputs = _tensor_tuple(inputs, "inputs")
    grad_outputs = _grad_tuple(grad_outputs, len(outputs), "grad_outputs")
    return _C.autograd.grad(list(outputs), list(inputs), grad_outputs, retain_graph, bool(create_graph),
                            bool(allow_unused))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Sums the gradients of tensors into the leaves' .grad (only into inputs' .grad when given)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _tensor_tuple(tensors, "tensors")
    grad_tensors = _grad_tuple(grad_tensors, len(tensors), "grad_tensors")
    if inputs is not None:
        inputs = list(_tensor_tuple(inputs, "inputs"))
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _C.autograd.backward(list(tensors), grad_tensors, retain_graph, bool(create_graph), inputs or [])


# ------------------------------------------------------------------------------------------------ Function

class FunctionCtx:
    """What forward() leaves for backward(): saved tensors and flags (the ctx argument of a Function)."""

    def __init__(self):
        self.to_save = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = []
        self._dirty = []
        self._unpack = None

    def save_for_backward(self, *tensors):
        """Keeps tensors for backward (read back through saved_tensors; checked for in-place writes)."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        """The tensors save_for_backward kept, with their history when the backward records itself."""
        if self._unpack is not None:
            return self._unpack()
        return tuple(self.to_save or ())

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (their requires_grad stays False)."""
        self._non_differentiable.extend(tensors)

    def mark_dirty(self, *tensors):
        """Inputs that forward() wrote in place (they are returned, and the function becomes their history)."""
        self._dirty.extend(tensors)

    def set_materialize_grads(self, value):
        """Whether backward() receives zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = bool(value)


def _expandable(src, dst):
    """Whether a gradient of shape src sums to dst (broadcasting), as the engine reduces it."""
    src, dst = tuple(src), tuple(dst)
    if len(src) < len(dst):
        return False
    tail = src[len(src) - len(dst):]
    return all(d == s or d == 1 for s, d in zip(tail, dst))


class Function:
    """Base class of differentiable operations written in Python: subclass it with static forward(ctx, *args)
    and backward(ctx, *grad_outputs), call it with Fn.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def vjp(cls, ctx, *grad_outputs):
        return cls.backward(ctx, *grad_outputs)

    def __init__(self, *args, **kwargs):
        _warnings.warn(f"{type(self).__name__} should not be instantiated. Methods on autograd functions are all "
                       "static, so you should invoke them on the class itself.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
                           "autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs forward() without recording and makes its outputs the results of one node whose backward is
        backward()."""
        no_grad, _ = _grad_mode()
        ctx = FunctionCtx()
        is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.needs_input_grad = tuple(t and a.requires_grad for a, t in zip(args, is_tensor))
        record = _C.is_grad_enabled() and any(ctx.needs_input_grad)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not record:
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        non_diff = {id(t) for t in ctx._non_differentiable}
        dirty = {id(t) for t in ctx._dirty}
        diff = [o if isinstance(o, Tensor) and o.is_floating_point() and id(o) not in non_diff else None for o in outs]
        metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs]
        dirty_flags = [isinstance(o, Tensor) and id(o) in dirty for o in outs]
        positions = [i for i, t in enumerate(is_tensor) if t]
        in_shapes = {i: tuple(args[i].shape) for i in positions}
        n_args = len(args)
        name = cls.__name__ + "Backward"
        needs = ctx.needs_input_grad

        def run_backward(grads, unpack):
            ctx._unpack = unpack
            try:
                grads = list(grads)
                if ctx.materialize_grads:
                    for j, (g, m) in enumerate(zip(grads, metas)):
                        if g is None and m is not None:
                            grads[j] = _C.zeros(m[0], dtype=m[1], device=m[2])
                result = cls.backward(ctx, *grads)
            finally:
                ctx._unpack = None
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < n_args or any(r is not None for r in result[n_args:]):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n_args}, "
                                   f"got {len(result)})")
            grads_in = []
            for i in positions:
                g = result[i]
                if g is not None:
                    if not isinstance(g, Tensor):
                        raise TypeError(f"function {name} returned a gradient of type {type(g).__name__} at index "
                                        f"{i}; expected a Tensor or None")
                    if tuple(g.shape) != in_shapes[i] and not _expandable(g.shape, in_shapes[i]):
                        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                                           f"{list(g.shape)} but expected shape compatible with {list(in_shapes[i])}")
                grads_in.append(g if needs[i] else None)
            return grads_in

        tensor_inputs = [args[i] for i in positions]
        _, new_outs = _C.autograd._record_function(name, tensor_inputs, diff, dirty_flags, list(ctx.to_save or ()),
                                                   run_backward)
        # The node holds the saved tensors now (checked for in-place writes when read); the marked tensors are
        # dropped, a dirty input's history being the node itself (the node holds ctx: no cycle through it).
        ctx.to_save = None
        ctx._non_differentiable, ctx._dirty = [], []
        result = tuple(o if (n is None or dirty_flags[j]) else n for j, (n, o) in enumerate(zip(new_outs, outs)))
        return result[0] if single else result


class InplaceFunction(Function):
    """A Function with an inplace flag (torch's)."""

    def __init__(self, inplace=False):
        self.inplace = inplace


def once_differentiable(fn):
    """Marks a backward() as not differentiable again (accepted; genesis records what backward() computes)."""
    return fn


# ------------------------------------------------------------------------------------------------ gradcheck

class GradcheckError(RuntimeError):
    """A Jacobian computed by autograd differs from the finite differences."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _values(t):
    import numpy as np
    return np.asarray(t.detach().to(_C.dtype.float64).cpu().reshape(-1).tolist(), dtype=np.float64)


def _numerical_jacobians(func, inputs, diff, out_idx, out_numel, eps):
    """J[i][j] (numel of input i, numel of output j) by central differences on copies of the inputs."""
    import numpy as np
    jac = {}
    for i in diff:
        x = inputs[i]
        base = _values(x)
        cols = []
        for k in range(base.size):
            vals = []
            for step in (eps, -eps):
                v = base.copy()
                v[k] += step
                xp = _C.tensor(v.reshape(tuple(x.shape)).tolist() if x.dim() else float(v[0]),
                               dtype=x.dtype, device=x.device)
                xp.requires_grad_(x.requires_grad)
                args = list(inputs)
                args[i] = xp
                outs = _as_tuple(func(*args))
                vals.append([_values(outs[j]) for j in out_idx])
            cols.append([(up - down) / (2 * eps) for up, down in zip(vals[0], vals[1])])
        for jj, j in enumerate(out_idx):
            jac[(i, j)] = np.stack([c[jj] for c in cols]) if cols else np.zeros((0, out_numel[j]))
    return jac


def _analytical_jacobians(outputs, inputs, diff, out_idx):
    """J[i][j] (numel of input i, numel of output j) row by row with grad (one backward per output element)."""
    import numpy as np
    jac = {}
    for j in out_idx:
        o = outputs[j]
        cols = {i: [] for i in diff}
        for m in range(o.numel()):
            if not o.requires_grad:
                for i in diff:
                    cols[i].append(np.zeros(inputs[i].numel()))
                continue
            e = [0.0] * o.numel()
            e[m] = 1.0
            go = _C.tensor(e, dtype=o.dtype, device=o.device).reshape(tuple(o.shape))
            gs = grad([o], [inputs[i] for i in diff], [go], retain_graph=True, allow_unused=True)
            for i, g in zip(diff, gs):
                cols[i].append(np.zeros(inputs[i].numel()) if g is None else _values(g))
        for i in diff:
            jac[(i, j)] = np.stack(cols[i], axis=1) if cols[i] else np.zeros((inputs[i].numel(), 0))
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, check_sparse_nnz=False,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False):
    """Checks autograd's Jacobians of func at inputs against central differences (torch.autograd.gradcheck):
    True, or GradcheckError (False with raise_exception=False)."""
    import numpy as np
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have "
                         "requires_grad=True.")
    for i in diff:
        if inputs[i].dtype != _C.dtype.float64:
            _warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                           "will likely fail if all the inputs are not of double precision floating point. ")
    outputs = _as_tuple(func(*inputs))
    out_idx = [j for j, o in enumerate(outputs) if isinstance(o, Tensor) and o.is_floating_point()]
    analytical = _analytical_jacobians(outputs, inputs, diff, out_idx)
    numerical = _numerical_jacobians(func, inputs, diff, out_idx, {j: outputs[j].numel() for j in out_idx}, eps)
    for j in out_idx:
        for i in diff:
            a, n = analytical[(i, j)], numerical[(i, j)]
            if a.shape != n.shape or not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {out_idx.index(j)} with respect to input "
                                     f"{diff.index(i)},\nnumerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False):
    """gradcheck of the gradients of func (computed with create_graph=True) with respect to the inputs and to
    random grad_outputs: second derivatives against central differences (torch.autograd.gradgradcheck)."""
    inputs = _as_tuple(inputs)
    outputs = _as_tuple(func(*inputs))
    diff_outputs = [o for o in outputs if isinstance(o, Tensor) and o.requires_grad]
    if grad_outputs is None:
        grad_outputs = tuple(_C.randn(tuple(o.shape), dtype=o.dtype, device=o.device).requires_grad_(True)
                             for o in diff_outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_grads = len(grad_outputs)

    def new_func(*args):
        input_args, grad_outs = args[:-n_grads], args[-n_grads:]
        outs = [o for o in _as_tuple(func(*input_args)) if isinstance(o, Tensor) and o.requires_grad]
        diff_inputs = [x for x in input_args if isinstance(x, Tensor) and x.requires_grad]
        grads = grad(outs, diff_inputs, list(grad_outs), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


# ------------------------------------------------------------------------------------------------ functional

def _prepare(inputs, create_graph):
    is_tuple = isinstance(inputs, (tuple, list))
    inputs = tuple(inputs) if is_tuple else (inputs,)
    for x in inputs:
        if not isinstance(x, Tensor):
            raise TypeError(f"The inputs given to the function must be Tensors, but got {type(x).__name__}")
    prepared = tuple(x.view_as(x) if (create_graph and x.requires_grad) else x.detach().requires_grad_(True)
                     for x in inputs)
    return is_tuple, prepared


def _call(func, inputs, what):
    _, enable_grad = _grad_mode()
    with enable_grad():
        out = func(*inputs)
    is_tuple = isinstance(out, (tuple, list))
    outs = tuple(out) if is_tuple else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"The outputs of the user-provided function given to {what} must be Tensors, but got "
                            f"{type(o).__name__}")
    return is_tuple, outs


def _fill(gs, like):
    return tuple(_C.zeros_like(x) if g is None else g for g, x in zip(gs, like))


def _detach(ts, create_graph):
    return ts if create_graph else tuple(t.detach() for t in ts)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: output shape + input shape, nested per output and input as torch's."""
    if strategy != "reverse-mode":
        raise NotImplementedError("jacobian: only strategy='reverse-mode' is supported")
    _, enable_grad = _grad_mode()
    in_tuple, inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _call(func, inputs, "jacobian")
    result = []
    with enable_grad():
        for o in outputs:
            rows = [[] for _ in inputs]
            flat = o.reshape(-1)
            for m in range(o.numel()):
                if o.requires_grad:
                    gs = grad(flat[m], inputs, retain_graph=True, create_graph=create_graph, allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                if strict and any(g is None for g in gs):
                    raise RuntimeError("Output of the function is independent of an input (strict=True)")
                for k, g in enumerate(_fill(gs, inputs)):
                    rows[k].append(g)
            per_input = []
            for k, x in enumerate(inputs):
                shape = tuple(o.shape) + tuple(x.shape)
                per_input.append(_C.stack(rows[k]).reshape(shape) if rows[k]
                                 else _C.zeros(shape, dtype=x.dtype, device=x.device))
            result.append(_detach(tuple(per_input), create_graph))
    if not out_tuple:
        return result[0] if in_tuple else result[0][0]
    return tuple(r if in_tuple else r[0] for r in result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func at inputs (input shape + input shape; nested per input pair for tuples)."""
    in_tuple, inputs = _prepare(inputs, True)

    def first(*xs):
        _, out = _call(func, xs, "hessian")
        if len(out) != 1 or out[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element.")
        gs = grad(out[0], xs, create_graph=True, allow_unused=True)
        return _fill(gs, xs)

    res = jacobian(first, inputs, create_graph=create_graph, strict=strict)
    return res if in_tuple else res[0][0]


def _grad_of_pairs(pairs, wrt, create_graph):
    """grad of the (output, grad_output) pairs with respect to wrt, unused ones None; all None for no pairs."""
    if not pairs:
        return (None,) * len(wrt)
    return grad([p[0] for p in pairs], wrt, [p[1] for p in pairs], create_graph=create_graph, allow_unused=True)


def _grad_of_differentiable(outputs, inputs, grad_outputs, create_graph):
    """grad of the outputs that require grad (each with its grad_outputs entry) with respect to inputs."""
    return _grad_of_pairs([(outputs[k], grad_outputs[k]) for k, o in enumerate(outputs) if o.requires_grad], inputs,
                          create_graph)


def _product_result(outputs, out_tuple, product, like, like_tuple, create_graph):
    """(outputs, product) detached unless create_graph, product's None entries zeros like `like`'s, each unwrapped
    where the function took or gave a single tensor."""
    out = _detach(outputs, create_graph)
    product = _detach(_fill(product, like), create_graph)
    return (out if out_tuple else out[0]), (product if like_tuple else product[0])


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    in_tuple, inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _call(func, inputs, "vjp")
    if v is None:
        if any(o.numel() != 1 for o in outputs):
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
        v = [None] * len(outputs)
    vs = list(_as_tuple(v))
    gs = _grad_of_differentiable(outputs, inputs, vs, create_graph)
    return _product_result(outputs, out_tuple, gs, inputs, in_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vector-Jacobian product."""
    in_tuple, inputs = _prepare(inputs, True)
    out_tuple, outputs = _call(func, inputs, "jvp")
    if v is None:
        if any(x.numel() != 1 for x in inputs):
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.")
        v = [_C.ones_like(x) for x in inputs]
    vs = list(_as_tuple(v))
    dummies = [_C.zeros_like(o).requires_grad_(True) for o in outputs]
    gi = _grad_of_differentiable(outputs, inputs, dummies, True)
    pairs = [(g, w) for g, w in zip(gi, vs) if g is not None and g.requires_grad]
    jv = _grad_of_pairs(pairs, dummies, create_graph)
    return _product_result(outputs, out_tuple, jv, outputs, out_tuple, create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    in_tuple, inputs = _prepare(inputs, True)
    _, outputs = _call(func, inputs, "vhp")
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise RuntimeError("The function given to vhp should return a single Tensor with a single element.")
    vs = list(_as_tuple(v)) if v is not None else [_C.ones_like(x) for x in inputs]
    g1 = _fill(grad(outputs[0], inputs, create_graph=True, allow_unused=True), inputs)
    pairs = [(g, w) for g, w in zip(g1, vs) if g.requires_grad]
    res = _grad_of_pairs(pairs, inputs, create_graph)
    res = _detach(_fill(res, inputs), create_graph)
    out = outputs[0] if create_graph else outputs[0].detach()
    return out, (res if in_tuple else res[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func (H is symmetric for twice-differentiable functions)."""
    return vhp(func, inputs, v, create_graph, strict)


functional = _types.ModuleType("genesis.autograd.functional",
                               "torch.autograd.functional: jacobian, hessian, vjp, jvp, vhp, hvp.")
for _name in ("jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"):
    setattr(functional, _name, globals()[_name])
_sys.modules["genesis.autograd.functional"] = functional
del _name

__all__ = ["Function", "FunctionCtx", "GradcheckError", "Variable", "backward", "detect_anomaly", "functional", "grad",
           "gradcheck", "gradgradcheck", "once_differentiable", "set_detect_anomaly", "set_grad_enabled"]
