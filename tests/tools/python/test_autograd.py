"""Autograd from Python against PyTorch 1.13: values and gradients of every differentiable op
family on random float64 inputs (broadcasting, views, indexing included), hooks, no_grad and
errors (tests tools/python/src/tensor.cpp's autograd surface over the C++ engine)."""
import numpy as np
import pytest
import torch

import genesis
import genesis.nn.functional as F
from conftest import close, from_torch, to_torch

TF = torch.nn.functional
_COS, _SIN = torch.rand(3, 4, dtype=torch.float64), torch.rand(3, 4, dtype=torch.float64)

# name: (genesis fn, torch fn, input shapes, positive inputs)
CASES = {
    "add_broadcast": (lambda a, b: a + b, lambda a, b: a + b, [(3, 4), (4,)], False),
    "sub_scalar": (lambda a: 2.5 - a, lambda a: 2.5 - a, [(5,)], False),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [(2, 3), (2, 1)], False),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [(3,), (3,)], True),
    "pow_scalar": (lambda a: a ** 3, lambda a: a ** 3, [(4,)], False),
    "pow_tensor": (lambda a, b: a.pow(b), lambda a, b: a.pow(b), [(4,), (4,)], True),
    "neg_abs": (lambda a: (-a).abs(), lambda a: (-a).abs(), [(6,)], False),
    "exp_log": (lambda a: a.exp() + a.log(), lambda a: a.exp() + a.log(), [(5,)], True),
    "log1p_expm1": (lambda a: a.log1p() * a.expm1(), lambda a: a.log1p() * a.expm1(), [(5,)], True),
    "sqrt_rsqrt": (lambda a: a.sqrt() + a.rsqrt(), lambda a: a.sqrt() + a.rsqrt(), [(5,)], True),
    "sin_cos": (lambda a: a.sin() * a.cos(), lambda a: a.sin() * a.cos(), [(5,)], False),
    "tanh_sigmoid": (lambda a: a.tanh() + a.sigmoid(), lambda a: a.tanh() + a.sigmoid(), [(5,)], False),
    "relu_silu": (lambda a: a.relu() + a.silu(), lambda a: a.relu() + TF.silu(a), [(7,)], False),
    "gelu": (lambda a: a.gelu(), lambda a: TF.gelu(a), [(7,)], False),
    "gelu_tanh": (lambda a: a.gelu("tanh"), lambda a: TF.gelu(a, approximate="tanh"), [(7,)], False),
    "reciprocal_square": (lambda a: a.reciprocal() + a.square(), lambda a: a.reciprocal() + a.square(), [(4,)], True),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [(9,)], False),
    "maximum": (lambda a, b: genesis.maximum(a, b), lambda a, b: torch.maximum(a, b), [(6,), (6,)], False),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 5)], False),
    "matmul_batched": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4, 2)], False),
    "bmm": (lambda a, b: genesis.bmm(a, b), lambda a, b: torch.bmm(a, b), [(2, 3, 4), (2, 4, 2)], False),
    "sum_dim": (lambda a: a.sum(1), lambda a: a.sum(1), [(3, 4)], False),
    "mean_keepdim": (lambda a: a.mean((0, 2), keepdim=True), lambda a: a.mean((0, 2), keepdim=True),
                     [(2, 3, 4)], False),
    "prod": (lambda a: a.prod(1), lambda a: a.prod(1), [(3, 4)], True),
    "amax": (lambda a: a.amax(1), lambda a: a.amax(1), [(3, 4)], False),
    "var_std": (lambda a: a.var(1).sum() + a.std(0).sum(), lambda a: a.var(1).sum() + a.std(0).sum(), [(3, 4)], False),
    "logsumexp": (lambda a: a.logsumexp(1), lambda a: a.logsumexp(1), [(3, 4)], False),
    "norm": (lambda a: a.norm(), lambda a: a.norm(), [(3, 4)], False),
    "softmax": (lambda a: a.softmax(-1), lambda a: a.softmax(-1), [(3, 5)], False),
    "log_softmax": (lambda a: a.log_softmax(0), lambda a: a.log_softmax(0), [(3, 5)], False),
    "views": (lambda a: a.reshape(4, 3).t().unsqueeze(0).permute(2, 0, 1).flatten(),
              lambda a: a.reshape(4, 3).t().unsqueeze(0).permute(2, 0, 1).flatten(), [(3, 4)], False),
    "expand_squeeze": (lambda a: a.expand(3, 4).squeeze(), lambda a: a.expand(3, 4).squeeze(), [(1, 4)], False),
    "slicing": (lambda a: a[1:, ::2] * 2 + a[0, None, ::2], lambda a: a[1:, ::2] * 2 + a[0, None, ::2], [(3, 4)], False),
    "index_tensor": (lambda a: a[:, genesis.tensor([2, 0, 2])], lambda a: a[:, torch.tensor([2, 0, 2])],
                     [(3, 4)], False),
    "cat_stack": (lambda a, b: genesis.cat([a, b], 0).sum(0) + genesis.stack([a, b]).sum(0),
                  lambda a, b: torch.cat([a, b], 0).sum(0) + torch.stack([a, b]).sum(0), [(2, 3), (2, 3)], False),
    "where": (lambda a, b: genesis.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b), [(5,), (5,)], False),
    "masked_fill": (lambda a: a.masked_fill(a > 0, 0.0), lambda a: a.masked_fill(a > 0, 0.0), [(6,)], False),
    "gather": (lambda a: a.gather(1, genesis.tensor([[0, 0], [1, 0], [2, 1]])),
               lambda a: a.gather(1, torch.tensor([[0, 0], [1, 0], [2, 1]])), [(3, 4)], False),
    "split_chunk": (lambda a: a.split(2, 1)[1] * a.chunk(2, 1)[0], lambda a: a.split(2, 1)[1] * a.chunk(2, 1)[0],
                    [(3, 4)], False),
    "tril_triu": (lambda a: a.tril() + 2 * a.triu(1), lambda a: a.tril() + 2 * a.triu(1), [(4, 4)], False),
    "to_float32": (lambda a: a.to(genesis.float32).to(genesis.float64) * 3, lambda a: a.float().double() * 3,
                   [(4,)], False),
    "layer_norm": (lambda a, w, b: F.layer_norm(a, (4,), w, b), lambda a, w, b: TF.layer_norm(a, (4,), w, b),
                   [(3, 4), (4,), (4,)], False),
    "linear": (lambda x, w, b: F.linear(x, w, b), lambda x, w, b: TF.linear(x, w, b), [(2, 3, 4), (5, 4), (5,)],
               False),
    "rms_norm": (lambda a, w: F.rms_norm(a, (4,), w, 1e-6),
                 lambda a, w: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * w, [(3, 4), (4,)], False),
    "swiglu": (lambda g, u: F.swiglu(g, u), lambda g, u: TF.silu(g) * u, [(3, 4), (3, 4)], False),
    # rope's cos/sin are tables (no gradient): fixed here
    "rope": (lambda x: F.rope(x, from_torch(_COS), from_torch(_SIN)),
             lambda x: x * _COS + torch.cat([-x[..., 2:], x[..., :2]], -1) * _SIN, [(2, 3, 4)], False),
    "topk_sort_values": (lambda a: a.topk(2, 1).values.sum(1) + a.sort(0, descending=True).values[0],
                         lambda a: a.topk(2, 1).values.sum(1) + a.sort(0, descending=True).values[0], [(4, 4)], False),
    "min_dim": (lambda a: a.min(1).values, lambda a: a.min(1).values, [(3, 5)], False),
    "scatter_add": (lambda a, s: a.scatter_add(0, genesis.tensor([[0, 1, 2], [2, 0, 1]]), s),
                    lambda a, s: a.scatter_add(0, torch.tensor([[0, 1, 2], [2, 0, 1]]), s), [(3, 3), (2, 3)], False),
    "index_add": (lambda a, s: a.index_add(0, genesis.tensor([2, 0]), s),
                  lambda a, s: a.index_add(0, torch.tensor([2, 0]), s), [(3, 2), (2, 2)], False),
    "embedding": (lambda w: F.embedding(genesis.tensor([[1, 3], [3, 0]]), w),
                  lambda w: TF.embedding(torch.tensor([[1, 3], [3, 0]]), w), [(4, 3)], False),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1),
               lambda x, w, b: TF.conv2d(x, w, b, stride=1, padding=1), [(1, 2, 5, 5), (3, 2, 3, 3), (3,)], False),
    "max_avg_pool": (lambda x: F.max_pool2d(x, 2) + F.avg_pool2d(x, 2),
                     lambda x: TF.max_pool2d(x, 2) + TF.avg_pool2d(x, 2), [(1, 2, 4, 4)], False),
    "cross_entropy": (lambda x: F.cross_entropy(x, genesis.tensor([1, 0, 3]), label_smoothing=0.1),
                      lambda x: TF.cross_entropy(x, torch.tensor([1, 0, 3]), label_smoothing=0.1), [(3, 4)], False),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True)
                    if hasattr(TF, "scaled_dot_product_attention") else _sdpa(q, k, v),
                    [(2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)], False),
}


def _sdpa(q, k, v):  # torch 1.13 has no fused attention: the formula, causal
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(-1) @ v


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    g_fn, t_fn, shapes, positive = CASES[name]
    raw = [torch.rand(s, dtype=torch.float64) + 0.5 if positive else torch.randn(s, dtype=torch.float64)
           for s in shapes]
    g_in = [from_torch(r, requires_grad=True) for r in raw]
    t_in = [r.clone().requires_grad_(True) for r in raw]
    g_out, t_out = g_fn(*g_in), t_fn(*t_in)
    close(g_out.reshape(-1), t_out.reshape(-1))
    w = torch.randn(t_out.shape, dtype=torch.float64)  # a random upstream gradient
    (g_out * from_torch(w)).sum().backward()
    (t_out * w).sum().backward()
    for g, t in zip(g_in, t_in):
        # 1e-7: std and norm's rules divide by a clamped norm (2e-8 relative from torch's)
        close(g.grad, t.grad, rtol=1e-7, atol=1e-9)


def test_graph_bookkeeping_follows_torch():
    x = genesis.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    assert not y.is_leaf and repr(y.grad_fn) == "<MulBackward0>"
    y.retain_grad()
    z = (y * y).sum()
    z.backward()
    assert y.grad.tolist() == [4.0, 8.0, 12.0]
    assert x.grad.tolist() == [8.0, 16.0, 24.0]
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()
    x.grad = None
    assert x.grad is None
    with genesis.no_grad():
        assert not (x * 2).requires_grad

    @genesis.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    assert genesis.is_grad_enabled()


def test_hooks_see_and_replace_gradients():
    x = genesis.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 3
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[30.0, 30.0]]
    assert x.grad.tolist() == [30.0, 30.0]


def test_gradients_accumulate_and_detach_cuts():
    x = genesis.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    assert not x.detach().requires_grad
    y = x.detach() * x
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_gradcheck_from_python():
    x = genesis.randn(3, 4, dtype=genesis.float64, requires_grad=True)
    assert genesis.gradcheck(lambda a: (a.tanh() * a).sum(1), [x])


def test_checkpoint_recomputes_with_the_same_gradients():
    w = genesis.randn(4, 4, dtype=genesis.float64, requires_grad=True)
    x = genesis.randn(2, 4, dtype=genesis.float64, requires_grad=True)
    ((x @ w).tanh() @ w).sum().backward()
    want_w, want_x = w.grad.numpy().copy(), x.grad.numpy().copy()
    w.grad, x.grad = None, None
    genesis.checkpoint(lambda a: (a @ w).tanh() @ w, x).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), want_w, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-12)


def test_to_torch_helper_round_trips():
    t = genesis.randn(2, 3, dtype=genesis.float64)
    close(t, to_torch(t), rtol=0, atol=0)


def test_in_place_returns_self_and_augmented_assignment_records():
    x = genesis.zeros(3)
    assert x.add_(1) is x and x.mul_(2) is x and x.zero_() is x
    w = genesis.ones(2, requires_grad=True)
    h = w * 2
    h += w  # recorded: rebinds h to h + w, as the graph needs
    h *= 3
    h.sum().backward()
    assert w.grad.tolist() == [9.0, 9.0]
    with genesis.no_grad():
        w -= 0.5 * w.grad  # a manual SGD step, in place
    assert w.tolist() == [-3.5, -3.5] and w.is_leaf


def test_gradient_flow_example():
    a = genesis.Tensor([1, 2, 3], requires_grad=True)
    b = genesis.Tensor([4, 5, 6], requires_grad=True)
    c = a + b
    c.backward(genesis.Tensor([1, 1, 1]))
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.tolist() == [1.0, 1.0, 1.0]
