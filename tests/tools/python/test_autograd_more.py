"""genesis.autograd against PyTorch 1.13 in float64: in-place ops on non-leaf tensors (values, gradients, version
counters, the errors torch raises), autograd.grad and double backward (create_graph) of the common ops, module
backward hooks, custom autograd.Function, gradcheck / gradgradcheck and autograd.functional.

Each program runs unchanged on both frameworks (``lib`` is genesis or torch); gradients agree to 1e-7, values to
1e-10, and the errors have torch's type and message (torch's type names read ``genesis.`` here)."""
import re

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as gnn
import genesis.nn.functional as GF
from conftest import close, from_torch

TF = torch.nn.functional
F = {genesis: GF, torch: TF}
NN = {genesis: gnn, torch: torch.nn}


def _inputs(shapes, positive=False):
    raw = [torch.rand(s, dtype=torch.float64) + 0.5 if positive else torch.randn(s, dtype=torch.float64)
           for s in shapes]
    return [from_torch(r, requires_grad=True) for r in raw], [r.clone().requires_grad_(True) for r in raw]


def _both(program, shapes, positive=False):
    """Runs program(lib, *inputs) on genesis and torch; compares the outputs and the leaves' gradients."""
    g_in, t_in = _inputs(shapes, positive)
    g_out, t_out = program(genesis, *g_in), program(torch, *t_in)
    close(g_out, t_out)
    w = torch.randn(t_out.shape, dtype=torch.float64)
    (g_out * from_torch(w)).sum().backward()
    (t_out * w).sum().backward()
    for g, t in zip(g_in, t_in):
        if t.grad is None:
            assert g.grad is None
        else:
            close(g.grad, t.grad, rtol=1e-7, atol=1e-9)
    return g_out, t_out


# ------------------------------------------------------------------------------------------------ in-place ops

def _arith(lib, x, w):
    y = x * 2
    y.add_(1)
    y.sub_(w, alpha=0.5)
    y.div_(w.abs() + 1)
    y += w
    y *= 2
    y.mul_(w)
    return y


def _unary(lib, x):
    # ops that save their input first (the old value is kept aside), each saving its result last on its tensor
    y = x * 1
    y.sin_().cos_().abs_().log1p_().square_().neg_().add_(3).log_()
    outs = []
    for op in ("tanh_", "sigmoid_", "exp_", "sqrt_", "rsqrt_", "reciprocal_", "relu_", "expm1_"):
        z = y * 1
        getattr(z, op)()
        outs.append(z)
    return sum(outs[1:], outs[0]) * y


def _setitem(lib, x, w):
    y = x * 2
    y[0] = w.sum()
    y[:, 1] = 0
    y[1:, 2:] = w[:2, :2] * 3
    y[y > 1] = -1.0
    return y


def _views(lib, x, w):
    y = x.exp()
    z = y * 1
    z[1].mul_(3)
    z.view(-1)[::2].add_(w.reshape(-1)[:6])
    z.t()[0].copy_(w[:, 0][:3] * w[0, 0])
    z.select(1, 3).masked_fill_(z.select(1, 3) > 2, 0.5)
    z.clamp_(-1.0, 4.0)
    return z + y


def _buffer(lib, x):
    out = lib.zeros(4, 3, dtype=lib.float64)
    h = x[0]
    for i in range(4):
        h = (h * x[i]).tanh()
        out[i] = h
    out[2].zero_()
    out[3].fill_(1.5)
    return out


def _copy_fill(lib, x, w):
    y = x * 1
    y.copy_(w[0] * w[1])
    z = x * 3
    z.fill_(2)
    return y + z + x


@pytest.mark.parametrize("program, shapes, positive", [
    (_arith, [(3, 4), (3, 4)], False),
    (_unary, [(3, 4)], True),
    (_setitem, [(3, 4), (3, 4)], False),
    (_views, [(3, 4), (4, 3)], False),
    (_buffer, [(4, 3)], False),
    (_copy_fill, [(4,), (2, 4)], False),
], ids=["arith", "unary", "setitem", "views", "buffer", "copy_fill"])
def test_inplace_on_non_leaf_values_and_gradients(program, shapes, positive):
    _both(program, shapes, positive)


def test_inplace_history_and_versions_follow_torch():
    outs = {}
    for lib in (genesis, torch):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        y = x * 2
        v0 = y._version
        y.add_(1)
        name_add = type(y.grad_fn).__name__ if lib is torch else repr(y.grad_fn)[1:-1]
        row = y[0]
        row.mul_(2)
        names = [name_add] + [type(t.grad_fn).__name__ if lib is torch else repr(t.grad_fn)[1:-1] for t in (y, row)]
        d = y.detach()
        d.zero_()
        z = lib.zeros(3, dtype=lib.float64)
        z[1] = x[0, 0]
        outs[lib] = (v0, y._version, row._version, d._version, z._version, z.requires_grad, names)
    assert outs[genesis] == outs[torch]
    assert outs[torch][-1] == ["AddBackward0", "CopySlices", "AsStridedBackward0"]


# ------------------------------------------------------------------------------------------------ errors

def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None, None


def _core(msg):
    """The torch message without its closing hint, with torch's type names read as genesis's."""
    if msg is None:
        return None
    msg = msg.replace("torch.", "genesis.")
    return msg.split(" Hint:")[0]


def _saved_output(lib, x):
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _saved_input_rebased(lib, x):
    y = x * 2
    z = y.sin()
    y.add_(1)
    z.sum().backward()


def _saved_leaf_no_grad(lib, x):
    z = x.sin()
    with lib.no_grad():
        x.mul_(2)
    z.sum().backward()


def _relu_then_sin(lib, x):
    y = x * 1
    y.relu_()
    y.sin_()
    y.sum().backward()


def _setitem_after_save(lib, x):
    y = x.exp()
    y[0, 0] = 1
    y.sum().backward()


def _pow_base_written(lib, x):
    y = x + 1
    z = y.pow(3)
    y.mul_(2)
    (z + y).sum().backward()


def _mul_by_itself(lib, x):
    y = x * 2
    y.add_(1)
    y.mul_(y)  # saves y as the other operand, then writes it
    y.sum().backward()


def _detach_write(lib, x):
    y = x.tanh()
    y.detach().zero_()
    y.sum().backward()


def _data_write_is_allowed(lib, x):
    y = x.exp()
    y.data.zero_()
    y.sum().backward()


def _leaf_inplace(lib, x):
    x.add_(1)


def _view_of_leaf(lib, x):
    x[0].mul_(2)


def _backward_twice(lib, x):
    z = (x * x).sum()
    z.backward()
    z.backward()


def _not_scalar(lib, x):
    (x * 2).backward()


def _no_grad_output(lib, x):
    lib.autograd.grad(x.detach().sum(), x)


def _unused_input(lib, x):
    lib.autograd.grad((x * 2).sum(), [x, lib.ones(2, dtype=lib.float64, requires_grad=True)])


def _input_without_grad(lib, x):
    lib.autograd.grad((x * 2).sum(), [lib.ones(2, dtype=lib.float64)])


@pytest.mark.parametrize("program", [
    _saved_output, _saved_input_rebased, _saved_leaf_no_grad, _relu_then_sin, _setitem_after_save, _pow_base_written,
    _mul_by_itself, _detach_write, _data_write_is_allowed, _leaf_inplace, _view_of_leaf, _backward_twice, _not_scalar,
    _no_grad_output, _unused_input, _input_without_grad,
], ids=lambda f: f.__name__.strip("_"))
def test_errors_where_torch_raises_them(program):
    g_in, t_in = _inputs([(3, 4)])
    gt, gm = _error(lambda: program(genesis, g_in[0]))
    tt, tm = _error(lambda: program(torch, t_in[0]))
    assert gt is tt, (gm, tm)
    assert _core(gm) == _core(tm)


# ------------------------------------------------------------------------------------------------ grad, create_graph

DOUBLE = {
    "add_sub_mul_div": (lambda lib, a, b: (a + b) * (a - b) / (b * b + 1) * a, [(3, 4), (3, 4)], False),
    "neg_square": (lambda lib, a: -(a * a * a) + a.square() * a, [(5,)], False),
    "matmul": (lambda lib, a, b: (a @ b).sin(), [(3, 4), (4, 2)], False),
    "matmul_batched_vec": (lambda lib, a, b: (a @ b) * (a @ b), [(2, 3, 4), (4,)], False),
    "linear": (lambda lib, x, w, b: F[lib].linear(x, w, b).tanh(), [(2, 3), (4, 3), (4,)], False),
    "sum_mean": (lambda lib, a: a.sum(1, keepdim=True) * a.mean(0) * a, [(3, 4)], False),
    "pow": (lambda lib, a, b: a.pow(2.5) + a.pow(b), [(4,), (4,)], True),
    "exp_log": (lambda lib, a: a.exp() * a.log(), [(5,)], True),
    "tanh_sigmoid_relu": (lambda lib, a: a.tanh() * a.sigmoid() + a.relu() * a, [(6,)], False),
    "softmax": (lambda lib, a: a.softmax(-1) * a, [(3, 5)], False),
    "log_softmax": (lambda lib, a: a.log_softmax(0) * a.exp(), [(3, 5)], False),
    "mse_loss": (lambda lib, a, b: F[lib].mse_loss(a * a, b), [(3, 4), (3, 4)], False),
    "cross_entropy": (lambda lib, a: F[lib].cross_entropy(a * a, lib.tensor([1, 0, 4]), label_smoothing=0.2),
                      [(3, 5)], False),
    "cross_entropy_sum_ignore": (lambda lib, a: F[lib].cross_entropy(a.sin(), lib.tensor([1, -100, 2]),
                                                                     reduction="sum"), [(3, 5)], False),
    "nll_loss": (lambda lib, a: F[lib].nll_loss(a.log_softmax(1), lib.tensor([2, 0, 1])), [(3, 4)], False),
    "views_and_setitem": (lambda lib, a: _setitem_twice(lib, a), [(3, 4)], False),
    "reductions": (lambda lib, a: a.var(1) * a.std(0).sum() + a.logsumexp(1) * a.amax(1) + a.prod(1),
                   [(3, 4)], False),
    "gelu_silu": (lambda lib, a: F[lib].gelu(a) * F[lib].silu(a), [(7,)], False),
    "where_mask_cat": (lambda lib, a, b: lib.cat([lib.where(a > 0, a * b, b.exp()), a.masked_fill(b > 0, 0.5) * a,
                                                  lib.stack([a, b]).sum(0) * b], 0), [(3, 2), (3, 2)], False),
}


def _setitem_twice(lib, a):
    y = a * a
    y[1] = y[0].clone() * a[2]
    return y.t().reshape(-1)[2:9] * a.reshape(-1)[:7]


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_grad_and_double_backward_match_torch(name):
    fn, shapes, positive = DOUBLE[name]
    g_in, t_in = _inputs(shapes, positive)
    g_out, t_out = fn(genesis, *g_in), fn(torch, *t_in)
    close(g_out, t_out)
    u = torch.randn(t_out.shape, dtype=torch.float64)
    g1 = genesis.autograd.grad((g_out * from_torch(u)).sum(), g_in, create_graph=True)
    t1 = torch.autograd.grad((t_out * u).sum(), t_in, create_graph=True)
    for a, b in zip(g1, t1):
        close(a, b, rtol=1e-7, atol=1e-9)
    vs = [torch.randn(t.shape, dtype=torch.float64) for t in t1]
    g2 = genesis.autograd.grad(sum((a * from_torch(v)).sum() for a, v in zip(g1, vs)), g_in, allow_unused=True)
    t2 = torch.autograd.grad(sum((a * v).sum() for a, v in zip(t1, vs)), t_in, allow_unused=True)
    for a, b in zip(g2, t2):
        if b is None:
            assert a is None or np.allclose(a.numpy(), 0)
        else:
            close(a, b, rtol=1e-7, atol=1e-9)


def test_grad_outputs_retain_graph_and_backward_inputs():
    g_in, t_in = _inputs([(3,), (3,)])
    res = {}
    for lib, (x, w) in ((genesis, g_in), (torch, t_in)):
        h = x * w
        y = (h * h).sum()
        gh, gx = lib.autograd.grad([y], [h, x], retain_graph=True)
        y2 = h.exp()
        gw, = lib.autograd.grad(y2, w, grad_outputs=lib.ones(3, dtype=lib.float64) * 2, retain_graph=True)
        y2.backward(lib.ones(3, dtype=lib.float64), inputs=[w], retain_graph=True)
        assert x.grad is None
        lib.autograd.backward([y, y2.sum()], [None, None], inputs=[x])
        res[lib] = [gh, gx, gw, w.grad, x.grad]
    for a, b in zip(res[genesis], res[torch]):
        close(a, b, rtol=1e-7, atol=1e-9)


def test_backward_create_graph_and_hessian():
    g_in, t_in = _inputs([(4,)])
    for lib, x in ((genesis, g_in[0]), (torch, t_in[0])):
        (x.pow(3) * x.sin()).sum().backward(create_graph=True)
        gx = x.grad
        x.grad = None
        (gx * gx).sum().backward()
    close(g_in[0].grad, t_in[0].grad, rtol=1e-7, atol=1e-9)
    f = lambda lib: (lambda a, b: ((a * b).tanh() * a).sum())  # noqa: E731
    a, b = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    gh = genesis.autograd.functional.hessian(f(genesis), (from_torch(a), from_torch(b)))
    th = torch.autograd.functional.hessian(f(torch), (a, b))
    for gr, tr in zip(gh, th):
        for g, t in zip(gr, tr):
            close(g, t, rtol=1e-7, atol=1e-9)
    gj = genesis.autograd.functional.jacobian(lambda t: (t @ t.t()).exp(), from_torch(torch.randn(2, 3)).double())
    tj = torch.autograd.functional.jacobian(lambda t: (t @ t.t()).exp(), torch.randn(2, 3).double())
    assert tuple(gj.shape) == tuple(tj.shape) == (2, 2, 2, 3)


def test_functional_products_match_torch():
    f = {lib: (lambda t, lib=lib: (t * t).sin().sum(0)) for lib in (genesis, torch)}
    x, v, u = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64), torch.randn(2,
                                                                                                           dtype=torch.float64)
    for name, args in (("vjp", (u,)), ("jvp", (v,))):
        g = getattr(genesis.autograd.functional, name)(f[genesis], from_torch(x), *[from_torch(a) for a in args])
        t = getattr(torch.autograd.functional, name)(f[torch], x, *args)
        close(g[0], t[0])
        close(g[1], t[1], rtol=1e-7, atol=1e-9)
    s = {lib: (lambda t, lib=lib: (t.exp() * t).sum()) for lib in (genesis, torch)}
    for name in ("vhp", "hvp"):
        g = getattr(genesis.autograd.functional, name)(s[genesis], from_torch(x), from_torch(v))
        t = getattr(torch.autograd.functional, name)(s[torch], x, v)
        close(g[1], t[1], rtol=1e-7, atol=1e-9)


def test_double_backward_through_a_kernel_without_derivative_raises():
    x = genesis.randn(2, 3, dtype=genesis.float64, requires_grad=True)
    g, = genesis.autograd.grad(GF.layer_norm(x, (3,)).square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward through LayerNormBackward0 is not implemented"):
        genesis.autograd.grad(g.sum(), x)


# ------------------------------------------------------------------------------------------------ hooks

class _Two:
    """A module with a tensor, a number and a tensor that needs no grad as inputs, and two outputs."""

    @staticmethod
    def make(lib):
        class Two(NN[lib].Module):
            def forward(self, x, s, y):
                return x * s + y, x.sum()
        return Two()


def _record(store):
    def hook(module, grad_input, grad_output):
        store.append(("full", [None if g is None else g.detach().numpy().copy() for g in grad_input],
                      [None if g is None else g.detach().numpy().copy() for g in grad_output]))
        if grad_input[0] is not None:
            return (grad_input[0] * 10,) + tuple(grad_input[1:])
        return None
    return hook


def test_full_backward_hooks_see_torch_arguments():
    seen = {}
    grads = {}
    for lib in (genesis, torch):
        store = []
        m = _Two.make(lib)
        m.register_full_backward_hook(_record(store))
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([0.5, 0.5, 0.5], dtype=lib.float64)
        a, b = m(x, 2.0, y)
        (a * a).sum().backward()
        lin = NN[lib].Linear(3, 2).double()
        lin.register_full_backward_hook(_record(store))
        lin(y).sum().backward()  # no input needs grad: grad_input is (None,)
        seen[lib] = store
        grads[lib] = x.grad
    close(grads[genesis], grads[torch])
    assert len(seen[genesis]) == len(seen[torch]) == 2
    for (kg, gi_g, go_g), (kt, gi_t, go_t) in zip(seen[genesis], seen[torch]):
        for a, b in list(zip(gi_g, gi_t)) + list(zip(go_g, go_t)):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12)
        assert len(gi_g) == len(gi_t) and len(go_g) == len(go_t)


def test_full_backward_pre_hook_replaces_grad_output():
    m = gnn.Linear(3, 2).double()
    seen = []

    def pre(module, grad_output):
        seen.append(grad_output[0].tolist())
        return (grad_output[0] * 3,)
    handle = m.register_full_backward_pre_hook(pre)
    x = genesis.randn(4, 3, dtype=genesis.float64, requires_grad=True)
    m(x).sum().backward()
    assert seen == [[[1.0, 1.0]] * 4]
    expected = 3 * m.weight.detach().sum(0)
    close(x.grad[0], torch.from_numpy(expected.numpy()))
    handle.remove()
    x.grad = None
    m(x).sum().backward()
    assert len(seen) == 1


def test_tensor_hooks_and_retain_grad_follow_torch():
    out = {}
    for lib in (genesis, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(g.tolist()))
        h = x * x
        h.retain_grad()
        h.register_hook(lambda g: g * 2)
        y = h.exp()
        y.retain_grad()
        y.sum().backward()
        out[lib] = (seen, h.grad.tolist(), y.grad.tolist(), x.grad.tolist(), h.retains_grad, x.retains_grad)
    assert out[genesis] == out[torch]


# ------------------------------------------------------------------------------------------------ Function

def _clipped_exp(lib):
    class ClippedExp(lib.autograd.Function):
        """exp(min(x, clip)): the gradient stops above clip."""

        @staticmethod
        def forward(ctx, x, clip):
            y = x.clamp(max=clip).exp()
            ctx.save_for_backward(x, y)
            ctx.clip = clip
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * (x < ctx.clip).to(g.dtype), None
    return ClippedExp


def _split_scale(lib):
    class SplitScale(lib.autograd.Function):
        """(a * s, a + b, argmax of a): three outputs, the last not differentiable."""

        @staticmethod
        def forward(ctx, a, s, b):
            ctx.s = s
            idx = a.argmax()
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            return a * s, a + b, idx

        @staticmethod
        def backward(ctx, g1, g2, g3):
            assert g3 is None
            ga = (g1 * ctx.s if g1 is not None else 0) + (g2 if g2 is not None else 0)
            gb = g2 if ctx.needs_input_grad[2] else None
            return ga, None, gb
    return SplitScale


def test_custom_function_matches_torch():
    g_in, t_in = _inputs([(3, 4)])
    fns = {genesis: _clipped_exp(genesis), torch: _clipped_exp(torch)}
    outs = {lib: fns[lib].apply(x * 2, 0.7) for lib, x in ((genesis, g_in[0]), (torch, t_in[0]))}
    close(outs[genesis], outs[torch])
    assert repr(outs[genesis].grad_fn) == "<ClippedExpBackward>"
    outs[genesis].sum().backward()
    outs[torch].sum().backward()
    close(g_in[0].grad, t_in[0].grad, rtol=1e-7, atol=1e-9)
    # several outputs, one non-differentiable, one gradient not materialized
    g_in, t_in = _inputs([(4,), (4,)])
    res = {}
    for lib, (a, b) in ((genesis, g_in), (torch, t_in)):
        p, q, idx = _split_scale(lib).apply(a, 3.0, b)
        assert not idx.requires_grad and p.requires_grad and q.requires_grad
        (p * p).sum().backward(retain_graph=True)
        q.sum().backward()
        res[lib] = (a.grad, b.grad)
    for x, y in zip(res[genesis], res[torch]):
        close(x, y, rtol=1e-7, atol=1e-9)


def test_custom_function_double_backward_dirty_and_saved_version():
    class Cube(genesis.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * g * x * x
    x = genesis.tensor([0.5, -1.5], dtype=genesis.float64, requires_grad=True)
    g1, = genesis.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    g2, = genesis.autograd.grad(g1.sum(), x)
    close(g2, torch.tensor([3.0, -9.0], dtype=torch.float64))
    assert genesis.autograd.gradcheck(Cube.apply, (x,))
    assert genesis.autograd.gradgradcheck(Cube.apply, (x,))

    class AddOne_(genesis.autograd.Function):
        @staticmethod
        def forward(ctx, y):
            y.add_(1)
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g
    y = x * 2
    out = AddOne_.apply(y)
    assert out is y and repr(y.grad_fn) == "<AddOne_Backward>"
    x.grad = None
    (out * out).sum().backward()
    close(x.grad, torch.tensor([4 * (1.0 + 1), 4 * (-3.0 + 1)], dtype=torch.float64))

    for lib in (genesis, torch):
        x = lib.tensor([0.5, -1.5], dtype=lib.float64, requires_grad=True)
        y = _clipped_exp(lib).apply(x * 1, 2.0)
        with lib.no_grad():
            y.mul_(2)
        kind, msg = _error(lambda: y.sum().backward())
        assert kind is RuntimeError and "modified by an inplace operation" in msg


def _doubling(lib, backward):
    """A lib.autograd.Function whose forward doubles its input and whose backward(ctx, g) is backward(g)."""
    class Doubling(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return backward(g)
    return Doubling


def test_custom_function_errors():
    class Wrong(genesis.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g
    a = genesis.ones(2, dtype=genesis.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("function WrongBackward returned an incorrect number of "
                                                     "gradients (expected 2, got 1)")):
        Wrong.apply(a, a).sum().backward()

    bad_shape = _doubling(genesis, lambda g: genesis.ones(3, dtype=genesis.float64))
    with pytest.raises(RuntimeError, match=re.escape("returned an invalid gradient at index 0 - got [3] but expected "
                                                     "shape compatible with [2]")):
        bad_shape.apply(a).sum().backward()


# ------------------------------------------------------------------------------------------------ gradcheck

def test_gradcheck_and_gradgradcheck_pass_and_fail_like_torch():
    x = genesis.randn(2, 3, dtype=genesis.float64, requires_grad=True)
    w = genesis.randn(3, 2, dtype=genesis.float64, requires_grad=True)
    assert genesis.autograd.gradcheck(lambda a, b: (a @ b).softmax(-1), (x, w))
    assert genesis.autograd.gradgradcheck(lambda a, b: (a @ b).log_softmax(-1) * a.sum(), (x, w))
    t = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = from_torch(t.detach(), requires_grad=True)
    for lib, inp in ((genesis, y), (torch, t)):
        off = _doubling(lib, lambda g: g * 2.5)  # a wrong derivative
        assert lib.autograd.gradcheck(off.apply, (inp,), raise_exception=False) is False
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
            lib.autograd.gradcheck(off.apply, (inp,))
