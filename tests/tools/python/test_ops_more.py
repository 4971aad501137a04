"""Scanning, ordering, counting, searching and linear-algebra ops against PyTorch 1.13: cumsum, cumprod,
logcumsumexp, cummax, cummin, stable sort, kthvalue, median, nanmedian, mode, unique, unique_consecutive,
bincount, histc, searchsorted, bucketize, scatter_reduce, and genesis.linalg (solve, inv, det, slogdet, cholesky,
qr, svd, svdvals, eigh, eigvalsh, solve_triangular, lu_factor, lu_solve).  Values in float64 to 1e-10,
gradients through backward to 1e-7 (and central differences where useful), integer results exactly, and the
exception types and messages torch gives for bad input."""
import math

import numpy as np
import pytest
import torch

import genesis
from conftest import close

GL = genesis.linalg
TL = torch.linalg


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn_g, fn_t, arrays, grad=True, seed=0, rtol=1e-10, atol=1e-10, grad_tol=1e-7, weight=None):
    """fn_g on genesis copies of `arrays` equals fn_t on torch copies (values), and so do the gradients of
    a random weighting of the outputs (or of `weight(outputs)`, a gauge-invariant loss) through backward."""
    rng = np.random.default_rng(seed + 1)
    arrays = [np.asarray(a) for a in arrays]
    gs = [genesis.tensor(a, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    outs_g, outs_t = _outputs(fn_g(*gs)), _outputs(fn_t(*ts))
    assert len(outs_g) == len(outs_t)
    if weight is None:
        for g, t in zip(outs_g, outs_t):
            close(g, t, rtol=rtol, atol=atol)
    if not grad:
        return outs_g, outs_t
    if weight is None:
        ws = [rng.standard_normal(tuple(t.shape)) for t in outs_t]
        loss_g = sum((g * genesis.tensor(w)).sum() for g, w in zip(outs_g, ws))
        loss_t = sum((t * torch.tensor(w)).sum() for t, w in zip(outs_t, ws))
    else:
        loss_g, loss_t = weight(outs_g, genesis, rng), weight(outs_t, torch, np.random.default_rng(seed + 1))
    loss_g.backward()
    loss_t.backward()
    for g, t in zip(gs, ts):
        assert t.grad is not None and g.grad is not None
        close(g.grad, t.grad, rtol=grad_tol, atol=grad_tol)
    return outs_g, outs_t


def exact(g, t):
    """Integer/bool results: same shape, dtype name and values."""
    a, b = g.numpy(), t.numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (g.dtype, t.dtype)
    np.testing.assert_array_equal(a, b)


def raises_like(fn_g, fn_t, exc=RuntimeError):
    """Both raise `exc` (genesis a subclass of it) with the same message."""
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as eg:
        fn_g()
    assert str(eg.value) == str(et.value), (str(eg.value), str(et.value))


RNG = np.random.default_rng(7)


# ---------------------------------------------------------------- cumulative


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 4, 5), 1), ((3, 4, 5), -1), ((3, 4, 5), 0), ((), 0)])
def test_cumsum_cumprod_logcumsumexp(shape, dim):
    a = RNG.standard_normal(shape)
    check(lambda x: x.cumsum(dim), lambda x: x.cumsum(dim), [a])
    check(lambda x: genesis.cumprod(x, dim), lambda x: torch.cumprod(x, dim), [a])
    check(lambda x: x.logcumsumexp(dim), lambda x: x.logcumsumexp(dim), [a * 30])


def test_cumsum_dtypes():
    for dt, tdt in [(genesis.int32, torch.int32), (genesis.int8, torch.int8), (genesis.bool, torch.bool),
                    (genesis.uint8, torch.uint8)]:
        a = RNG.integers(0, 3, (4, 6))
        g, t = genesis.tensor(a).to(dt), torch.tensor(a).to(tdt)
        exact(g.cumsum(1), t.cumsum(1))
        exact(g.cumprod(0), t.cumprod(0))
    a = RNG.integers(-5, 5, (9,))
    exact(genesis.tensor(a).cumsum(0, dtype=genesis.int32), torch.tensor(a).cumsum(0, dtype=torch.int32))
    g = genesis.tensor(a).to(genesis.float32).cumsum(0, dtype=genesis.float64)
    assert g.dtype == genesis.float64
    close(g, torch.tensor(a).float().cumsum(0, dtype=torch.float64))
    # float32 accumulates in double, as torch's CPU kernel: the same bits
    f = RNG.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(genesis.tensor(f).cumsum(0).numpy(), torch.tensor(f).cumsum(0).numpy())


@pytest.mark.parametrize("vals", [[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0], [1.5, 0.0, 2.0, 0.0, 3.0],
                                  [0.0, 0.0, 2.0], [3.0, -2.0, 0.5]])
def test_cumprod_gradient_with_zeros(vals):
    a = np.array(vals)
    check(lambda x: x.cumprod(0), lambda x: x.cumprod(0), [a])
    b = np.stack([a * (i + 1) for i in range(3)])  # along dim 1, several lines, and along dim 0
    check(lambda x: x.cumprod(1), lambda x: x.cumprod(1), [b])
    check(lambda x: x.cumprod(0), lambda x: x.cumprod(0), [b.T.copy()])
    x = genesis.tensor(a, requires_grad=True)
    genesis.gradcheck(lambda t: t.cumprod(0), (x,))


def test_logcumsumexp_infinities():
    a = np.array([[-math.inf, -math.inf, 1.0, 2.0], [3.0, -math.inf, 700.0, -700.0]])
    check(lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1), [a], grad=False)
    check(lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1), [np.array([[1.0, -3.0, 2.0, 800.0]])])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name):
    a = RNG.standard_normal((4, 6))
    check(lambda x: getattr(x, name)(1).values, lambda x: getattr(x, name)(1).values, [a])
    check(lambda x: getattr(genesis, name)(x, 0).values, lambda x: getattr(torch, name)(x, 0).values, [a])
    ties = np.array([1.0, 3.0, 3.0, 2.0, math.nan, 5.0, math.nan, 0.0])
    for d in ([1.0, 3.0, 3.0, 2.0, 3.0, 1.0, 1.0], ties):
        g, t = getattr(genesis.tensor(d), name)(0), getattr(torch.tensor(d), name)(0)
        close(g.values, t.values)
        exact(g.indices, t.indices)
    i = RNG.integers(-3, 3, (3, 8))
    g, t = getattr(genesis.tensor(i), name)(1), getattr(torch.tensor(i), name)(1)
    exact(g.values, t.values)
    exact(g.indices, t.indices)


# ---------------------------------------------------------------- sorting and order statistics


def test_sort_is_stable():
    a = RNG.integers(0, 4, (5, 40)).astype(np.float64)
    for desc in (False, True):
        g = genesis.tensor(a).sort(dim=-1, descending=desc, stable=True)
        t = torch.tensor(a).sort(dim=-1, descending=desc, stable=True)
        exact(g.indices, t.indices)
        close(g.values, t.values)
        exact(genesis.tensor(a).argsort(0, descending=desc, stable=True),
              torch.tensor(a).argsort(dim=0, descending=desc, stable=True))
        exact(genesis.sort(genesis.tensor(a), 1, desc).indices,
              torch.sort(torch.tensor(a), dim=1, descending=desc, stable=True).indices)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_median_mode_values_and_gradients(keepdim):
    a = RNG.standard_normal((3, 7, 5))
    for dim in (0, 1, -1):
        for k in (1, 3):
            g, t = genesis.tensor(a).kthvalue(k, dim, keepdim), torch.tensor(a).kthvalue(k, dim, keepdim)
            close(g.values, t.values)
            exact(g.indices, t.indices)
            check(lambda x: x.kthvalue(k, dim, keepdim).values, lambda x: x.kthvalue(k, dim, keepdim).values, [a])
        g, t = genesis.tensor(a).median(dim, keepdim), torch.tensor(a).median(dim, keepdim)
        close(g.values, t.values)
        exact(g.indices, t.indices)
        check(lambda x: x.median(dim, keepdim).values, lambda x: x.median(dim, keepdim).values, [a])
        check(lambda x: genesis.nanmedian(x, dim, keepdim).values, lambda x: torch.nanmedian(x, dim, keepdim).values,
              [a])
    check(lambda x: x.median(), lambda x: x.median(), [a])
    check(lambda x: x.nanmedian(), lambda x: x.nanmedian(), [RNG.standard_normal(8)])


def test_mode():
    a = RNG.integers(0, 4, (6, 9)).astype(np.float64)
    for dim in (0, 1):
        g, t = genesis.tensor(a).mode(dim), torch.tensor(a).mode(dim)
        close(g.values, t.values)
        exact(g.indices, t.indices)
        check(lambda x: x.mode(dim, True).values, lambda x: x.mode(dim, True).values, [a])
    i = RNG.integers(-2, 3, (4, 11))
    g, t = genesis.mode(genesis.tensor(i)), torch.mode(torch.tensor(i))
    exact(g.values, t.values)
    exact(g.indices, t.indices)
    g, t = genesis.tensor(5.0).mode(), torch.tensor(5.0).mode()
    close(g.values, t.values)
    exact(g.indices, t.indices)


def test_median_ties_nans_and_edge_cases():
    a = np.array([[1.0, 2.0, 2.0, 3.0, 2.0, 1.0], [4.0, math.nan, 1.0, 0.0, math.nan, 2.0]])
    g, t = genesis.tensor(a).median(1), torch.tensor(a).median(1)
    close(g.values, t.values)
    assert g.indices.numpy()[1] == t.indices.numpy()[1]  # the first nan
    first = g.indices.numpy()[0]
    assert a[0, first] == 2.0
    g, t = genesis.tensor(a).nanmedian(1), torch.tensor(a).nanmedian(1)
    close(g.values, t.values)
    exact(g.indices, t.indices)
    close(genesis.tensor(a).median(), torch.tensor(a).median())
    close(genesis.tensor(a).nanmedian(), torch.tensor(a).nanmedian())
    allnan = np.array([math.nan, math.nan])
    g, t = genesis.tensor(allnan).nanmedian(0), torch.tensor(allnan).nanmedian(0)
    close(g.values, t.values)
    exact(g.indices, t.indices)
    # the gradient of median() over everything is shared by the elements equal to it, as torch
    check(lambda x: x.median(), lambda x: x.median(), [np.array([3.0, 1.0, 2.0, 2.0, 5.0, 2.0])])
    check(lambda x: x.nanmedian(), lambda x: x.nanmedian(), [np.array([3.0, math.nan, 2.0, 1.0, 2.0])])
    g, t = genesis.tensor(3.0).median(0), torch.tensor(3.0).median(0)
    close(g.values, t.values)
    exact(g.indices, t.indices)
    g, t = genesis.tensor(3.0).kthvalue(1), torch.tensor(3.0).kthvalue(1)
    close(g.values, t.values)
    exact(g.indices, t.indices)
    close(genesis.tensor(np.zeros(0)).median(), torch.tensor(np.zeros(0)).median())
    exact(genesis.tensor([5, 1, 4, 2]).median(), torch.tensor([5, 1, 4, 2]).median())


def test_order_statistics_errors():
    raises_like(lambda: genesis.tensor([1.0, 2.0]).kthvalue(3), lambda: torch.tensor([1.0, 2.0]).kthvalue(3))
    raises_like(lambda: genesis.zeros(2, 0).mode(1), lambda: torch.zeros(2, 0).mode(1), IndexError)
    raises_like(lambda: genesis.zeros(2, 0).median(1), lambda: torch.zeros(2, 0).median(1), IndexError)
    with pytest.raises(IndexError):
        genesis.zeros(2, 3).median(2)


# ---------------------------------------------------------------- unique, counting, histograms


@pytest.mark.parametrize("data", [[3, 1, 2, 3, 1, 1], [[2.5, -1.0], [2.5, 0.0]], [7], [True, False, True]])
def test_unique(data):
    g, t = genesis.tensor(data), torch.tensor(data)
    for inv in (False, True):
        for cnt in (False, True):
            og, ot = _outputs(genesis.unique(g, return_inverse=inv, return_counts=cnt)), _outputs(
                torch.unique(t, return_inverse=inv, return_counts=cnt))
            assert len(og) == len(ot)
            for a, b in zip(og, ot):
                exact(a, b)
    exact(g.unique(sorted=False), torch.unique(t, sorted=False).sort().values)
    for inv in (False, True):
        for cnt in (False, True):
            og = _outputs(genesis.unique_consecutive(g, return_inverse=inv, return_counts=cnt))
            ot = _outputs(torch.unique_consecutive(t, return_inverse=inv, return_counts=cnt))
            for a, b in zip(og, ot):
                exact(a, b)


def test_unique_more():
    a = RNG.integers(0, 5, (6, 7))
    for a_, b_ in zip(genesis.unique(genesis.tensor(a), return_inverse=True, return_counts=True),
                      torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)):
        exact(a_, b_)
    for a_, b_ in zip(genesis.tensor([1, 1, 2, 2, 3, 1, 1, 2]).unique_consecutive(True, True),
                      torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]).unique_consecutive(True, True)):
        exact(a_, b_)
    e = genesis.tensor(np.zeros(0))
    v, i, c = genesis.unique(e, return_inverse=True, return_counts=True)
    assert v.shape == (0,) and i.shape == (0,) and c.shape == (0,) and i.dtype == genesis.int64
    with pytest.raises(TypeError):
        genesis.unique(genesis.tensor([1, 2]), dim=0)


def test_bincount():
    x = RNG.integers(0, 6, 30)
    exact(genesis.bincount(genesis.tensor(x)), torch.bincount(torch.tensor(x)))
    exact(genesis.tensor(x).bincount(minlength=10), torch.tensor(x).bincount(minlength=10))
    exact(genesis.bincount(genesis.tensor(x).to(genesis.int32)), torch.bincount(torch.tensor(x).int()))
    for w in (RNG.standard_normal(30), RNG.standard_normal(30).astype(np.float32), RNG.integers(0, 9, 30)):
        g, t = genesis.bincount(genesis.tensor(x), genesis.tensor(w)), torch.bincount(torch.tensor(x), torch.tensor(w))
        assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        close(g, t)
    exact(genesis.bincount(genesis.tensor(np.zeros(0, np.int64)), minlength=3),
          torch.bincount(torch.tensor(np.zeros(0, np.int64)), minlength=3))
    raises_like(lambda: genesis.bincount(genesis.tensor([0, -1])), lambda: torch.bincount(torch.tensor([0, -1])))
    raises_like(lambda: genesis.bincount(genesis.tensor([[0, 1]])), lambda: torch.bincount(torch.tensor([[0, 1]])))
    raises_like(lambda: genesis.bincount(genesis.tensor([1, 2]), minlength=-1),
                lambda: torch.bincount(torch.tensor([1, 2]), minlength=-1))
    raises_like(lambda: genesis.bincount(genesis.tensor([1, 2]), genesis.tensor([1.0])),
                lambda: torch.bincount(torch.tensor([1, 2]), torch.tensor([1.0])))


def test_histc():
    a = RNG.standard_normal(200)
    for bins, lo, hi in [(10, 0, 0), (7, -1, 1), (4, 0, 3), (1, -5, 5), (13, -0.5, 2.25)]:
        close(genesis.histc(genesis.tensor(a), bins, lo, hi), torch.histc(torch.tensor(a), bins, lo, hi))
        f = a.astype(np.float32)
        np.testing.assert_array_equal(genesis.tensor(f).histc(bins, lo, hi).numpy(),
                                      torch.tensor(f).histc(bins, lo, hi).numpy())
    edges = np.array([0.0, 0.75, 1.5, 2.25, 3.0, 3.5, -0.1, math.inf, -math.inf, 1.0 / 3, 2.0 / 3])
    for dt in (np.float64, np.float32):
        np.testing.assert_array_equal(genesis.tensor(edges.astype(dt)).histc(4, 0, 3).numpy(),
                                      torch.tensor(edges.astype(dt)).histc(4, 0, 3).numpy())
        np.testing.assert_array_equal(genesis.tensor(edges.astype(dt)).histc(3, 0, 1).numpy(),
                                      torch.tensor(edges.astype(dt)).histc(3, 0, 1).numpy())
    close(genesis.histc(genesis.tensor([1.0, 1.0]), 4), torch.histc(torch.tensor([1.0, 1.0]), 4))
    # nan is ignored like any element outside [min, max] (torch 1.13's CPU kernel counts it in the first bin)
    assert genesis.histc(genesis.tensor([math.nan, 1.0, 2.9]), 4, 0, 3).tolist() == [0.0, 1.0, 0.0, 1.0]
    raises_like(lambda: genesis.histc(genesis.tensor([1.0]), 4, 3, 1),
                lambda: torch.histc(torch.tensor([1.0]), 4, 3, 1))
    raises_like(lambda: genesis.histc(genesis.tensor([1.0]), 0), lambda: torch.histc(torch.tensor([1.0]), 0))
    raises_like(lambda: genesis.histc(genesis.tensor([1.0]), 3, math.inf),
                lambda: torch.histc(torch.tensor([1.0]), 3, math.inf))


# ---------------------------------------------------------------- searching


def test_searchsorted_and_bucketize():
    seq = np.sort(RNG.integers(0, 10, 12)).astype(np.float64)
    vals = np.concatenate([RNG.uniform(-1, 11, 20), seq[:5]])
    for right in (False, True):
        exact(genesis.searchsorted(genesis.tensor(seq), genesis.tensor(vals), right=right),
              torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right))
        exact(genesis.searchsorted(genesis.tensor(seq), genesis.tensor(vals), side="right" if right else "left"),
              torch.searchsorted(torch.tensor(seq), torch.tensor(vals), side="right" if right else "left"))
        exact(genesis.bucketize(genesis.tensor(vals.reshape(5, 5)), genesis.tensor(seq), right=right),
              torch.bucketize(torch.tensor(vals.reshape(5, 5)), torch.tensor(seq), right=right))
    nd = np.sort(RNG.standard_normal((2, 3, 8)), -1)
    v = RNG.standard_normal((2, 3, 5))
    exact(genesis.searchsorted(genesis.tensor(nd), genesis.tensor(v)), torch.searchsorted(torch.tensor(nd),
                                                                                          torch.tensor(v)))
    exact(genesis.searchsorted(genesis.tensor(nd), genesis.tensor(v), out_int32=True),
          torch.searchsorted(torch.tensor(nd), torch.tensor(v), out_int32=True))
    unsorted = RNG.standard_normal(9)
    sorter = np.argsort(unsorted)
    exact(genesis.searchsorted(genesis.tensor(unsorted), genesis.tensor(v[0, 0]), sorter=genesis.tensor(sorter)),
          torch.searchsorted(torch.tensor(unsorted), torch.tensor(v[0, 0]), sorter=torch.tensor(sorter)))
    exact(genesis.searchsorted(genesis.tensor([1, 2, 3]), 2), torch.searchsorted(torch.tensor([1, 2, 3]), 2))
    exact(genesis.searchsorted(genesis.tensor([1, 2, 3]), genesis.tensor([2.5])),
          torch.searchsorted(torch.tensor([1, 2, 3]), torch.tensor([2.5])))
    exact(genesis.bucketize(2.5, genesis.tensor([1.0, 2.0, 3.0])), torch.bucketize(2.5, torch.tensor([1.0, 2.0, 3.0])))
    raises_like(lambda: genesis.searchsorted(genesis.tensor([[1.0, 2, 3]]), genesis.tensor([2.0, 0.5, 4])),
                lambda: torch.searchsorted(torch.tensor([[1.0, 2, 3]]), torch.tensor([2.0, 0.5, 4])))
    raises_like(lambda: genesis.bucketize(genesis.tensor([1.0]), genesis.tensor([[1.0, 2]])),
                lambda: torch.bucketize(torch.tensor([1.0]), torch.tensor([[1.0, 2]])))
    raises_like(lambda: genesis.searchsorted(genesis.tensor([1.0]), genesis.tensor([1.0]), side="left", right=True),
                lambda: torch.searchsorted(torch.tensor([1.0]), torch.tensor([1.0]), side="left", right=True))


# ---------------------------------------------------------------- scatter_reduce


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = RNG.standard_normal((5, 4))
    src = RNG.standard_normal((6, 3))
    idx = RNG.integers(0, 5, (6, 3))
    for dim, i, s_ in ((0, idx, src), (1, idx[:5] % 4, src[:5])):
        check(lambda a, s: a.scatter_reduce(dim, genesis.tensor(i), s, reduce, include_self=include_self),
              lambda a, s: a.scatter_reduce(dim, torch.tensor(i), s, reduce, include_self=include_self), [x, s_])
        check(lambda a, s: genesis.scatter_reduce(a, dim, genesis.tensor(i), s, reduce, include_self=include_self),
              lambda a, s: torch.scatter_reduce(a, dim, torch.tensor(i), s, reduce, include_self=include_self),
              [x, s_])
    xi, si = RNG.integers(-9, 9, (5, 4)), RNG.integers(-9, 9, (6, 3))
    exact(genesis.tensor(xi).scatter_reduce(0, genesis.tensor(idx), genesis.tensor(si), reduce,
                                            include_self=include_self),
          torch.tensor(xi).scatter_reduce(0, torch.tensor(idx), torch.tensor(si), reduce, include_self=include_self))


def test_scatter_reduce_prod_zero_and_errors():
    x = np.array([2.0, 3.0, 0.0, 5.0])
    src = np.array([1.5, 0.0, 2.0, -1.0, 4.0])
    idx = np.array([0, 0, 1, 1, 3])
    check(lambda a, s: a.scatter_reduce(0, genesis.tensor(idx), s, "prod"),
          lambda a, s: a.scatter_reduce(0, torch.tensor(idx), s, "prod"), [x, src])
    raises_like(lambda: genesis.tensor([1.0]).scatter_reduce(0, genesis.tensor([0]), genesis.tensor([1.0]), "foo"),
                lambda: torch.tensor([1.0]).scatter_reduce(0, torch.tensor([0]), torch.tensor([1.0]), "foo"))
    raises_like(lambda: genesis.tensor([1.0]).scatter_reduce(0, genesis.tensor([3]), genesis.tensor([1.0]), "sum"),
                lambda: torch.tensor([1.0]).scatter_reduce(0, torch.tensor([3]), torch.tensor([1.0]), "sum"))


# ---------------------------------------------------------------- linalg


def well_conditioned(*shape):
    a = RNG.standard_normal(shape)
    return a + 3 * np.eye(shape[-1]) if shape[-1] == shape[-2] else a


def spd(*shape):
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def hilbert(n):
    return 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)


def test_solve():
    for ashape, bshape in [((4, 4), (4, 3)), ((2, 4, 4), (2, 4, 2)), ((4, 4), (3, 4, 2)), ((2, 1, 3, 3), (4, 3, 1)),
                           ((3, 3), (3,)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3,))]:
        check(lambda a, b: GL.solve(a, b), lambda a, b: TL.solve(a, b), [well_conditioned(*ashape),
                                                                           RNG.standard_normal(bshape)])
    check(lambda a, b: GL.solve(a, b, left=False), lambda a, b: TL.solve(a, b, left=False),
          [well_conditioned(2, 4, 4), RNG.standard_normal((2, 3, 4))])
    h = hilbert(5)  # condition number ~5e5: still close to torch
    check(lambda a, b: GL.solve(a, b), lambda a, b: TL.solve(a, b), [h, np.ones((5, 2))], rtol=1e-8, atol=1e-8,
          grad_tol=1e-5)


def test_inv_det_slogdet():
    for shape in [(4, 4), (3, 2, 5, 5), (1, 1)]:
        a = well_conditioned(*shape)
        check(GL.inv, TL.inv, [a])
        check(GL.det, TL.det, [a])
        check(lambda x: GL.slogdet(x).logabsdet, lambda x: TL.slogdet(x).logabsdet, [a])
        close(GL.slogdet(genesis.tensor(a)).sign, TL.slogdet(torch.tensor(a)).sign)
        check(lambda x: x.inverse(), lambda x: x.inverse(), [a])
        check(lambda x: genesis.det(x), lambda x: torch.det(x), [a])
    neg = -np.eye(3) + 0.1 * RNG.standard_normal((3, 3))
    check(lambda x: x.logdet(), lambda x: x.logdet(), [spd(3, 3)])
    close(genesis.tensor(neg).logdet(), torch.tensor(neg).logdet())
    close(genesis.slogdet(genesis.tensor(neg)).sign, torch.slogdet(torch.tensor(neg)).sign)
    check(GL.inv, TL.inv, [hilbert(5)], rtol=1e-6, atol=1e-6, grad_tol=1e-3)
    check(GL.det, TL.det, [hilbert(4)], rtol=1e-9, atol=1e-16, grad_tol=1e-9)


def _cofactors(a):
    """The cofactor matrix of every matrix of a (the gradient of det), by minors."""
    c = np.zeros_like(a)
    n = a.shape[-1]
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            c[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


def test_det_of_singular_matrices_and_its_gradient():
    # torch 1.13 returns a zero gradient for singular matrices (its own gradcheck fails there); genesis returns
    # the cofactor matrix, the derivative central differences give
    for a in [np.ones((3, 3)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.diag([2.0, 0.0, 3.0]),
              np.stack([np.eye(3) * 2, np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 5]])])]:
        check(GL.det, TL.det, [a], grad=False)
        sg, st = GL.slogdet(genesis.tensor(a)), TL.slogdet(torch.tensor(a))
        close(sg.sign, st.sign)
        close(sg.logabsdet, st.logabsdet)
        x = genesis.tensor(a, requires_grad=True)
        GL.det(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), _cofactors(a), rtol=1e-10, atol=1e-10)
        genesis.gradcheck(GL.det, (genesis.tensor(a, requires_grad=True),))


def test_cholesky():
    for shape in [(4, 4), (2, 3, 5, 5)]:
        a = spd(*shape)
        check(GL.cholesky, TL.cholesky, [a])
        check(lambda x: GL.cholesky(x, upper=True), lambda x: TL.cholesky(x, upper=True), [a])
    g, t = GL.cholesky_ex(genesis.tensor(spd(3, 3))), TL.cholesky_ex(torch.tensor(spd(3, 3)))
    exact(g.info, t.info)
    ill = hilbert(6) + 1e-9 * np.eye(6)  # condition number ~1.5e7, still positive-definite
    check(GL.cholesky, TL.cholesky, [ill], rtol=1e-7, atol=1e-9, grad=False)


def test_qr():
    for shape in [(5, 3), (4, 4), (3, 5), (2, 6, 4), (2, 3, 6)]:
        a = RNG.standard_normal(shape)
        check(lambda x: GL.qr(x), lambda x: TL.qr(x), [a])
        check(lambda x: GL.qr(x, "complete"), lambda x: TL.qr(x, "complete"), [a], grad=shape[-2] <= shape[-1])
        close(GL.qr(genesis.tensor(a), "r").R, TL.qr(torch.tensor(a), "r").R)
        assert GL.qr(genesis.tensor(a), "r").Q.shape == (0,)
    with pytest.raises(RuntimeError):
        GL.qr(genesis.ones(3, 2), "full")


def _svd_loss(outs, lib, rng):
    """A gauge-invariant loss of (U, S, Vh): the signs of singular vector pairs drop out."""
    U, S, Vh = outs
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    w1, w2, w3 = (lib.tensor(rng.standard_normal(tuple(t.shape))) for t in (U, S, Vh))
    return (U * U * w1).sum() + (S * w2).sum() + (Vh * Vh * w3).sum() + (U @ Vh).sum()


def test_svd():
    for shape in [(5, 3), (4, 4), (3, 6), (2, 4, 3), (2, 3, 3)]:
        a = RNG.standard_normal(shape)
        for full in (False, True):
            g = GL.svd(genesis.tensor(a), full_matrices=full)
            t = TL.svd(torch.tensor(a), full_matrices=full)
            close(g.S, t.S)
            assert g.U.shape == tuple(t.U.shape) and g.Vh.shape == tuple(t.Vh.shape)
            m, n = shape[-2:]
            for u, size in ((g.U, m if full else min(m, n)), (g.Vh.mT, n if full else min(m, n))):
                np.testing.assert_allclose(u.mT.matmul(u).numpy(), np.broadcast_to(np.eye(size), u.mT.matmul(u).shape),
                                           atol=1e-12)
            k = min(m, n)
            rec = (g.U[..., :k] * g.S.unsqueeze(-2)).matmul(g.Vh[..., :k, :])
            close(rec, torch.tensor(a))
            check(lambda x: GL.svd(x, full_matrices=full), lambda x: TL.svd(x, full_matrices=full), [a],
                  weight=_svd_loss)
        check(GL.svdvals, TL.svdvals, [a])
    u0, _ = np.linalg.qr(RNG.standard_normal((6, 6)))
    v0, _ = np.linalg.qr(RNG.standard_normal((6, 6)))
    ill = u0 @ np.diag(np.logspace(0, -9, 6)) @ v0.T  # condition number 1e9
    close(GL.svdvals(genesis.tensor(ill)), TL.svdvals(torch.tensor(ill)), atol=1e-14, rtol=1e-6)


def _eigh_loss(outs, lib, rng):
    L, Q = outs
    w1, w2 = lib.tensor(rng.standard_normal(tuple(L.shape))), lib.tensor(rng.standard_normal(tuple(Q.shape)))
    return (L * w1).sum() + (Q * Q * w2).sum()


def test_eigh():
    for shape in [(4, 4), (2, 3, 5, 5), (1, 1)]:
        a = RNG.standard_normal(shape)
        sym = a + np.swapaxes(a, -1, -2)
        for uplo in ("L", "U"):
            g = GL.eigh(genesis.tensor(a), uplo)
            t = TL.eigh(torch.tensor(a), uplo)
            close(g.eigenvalues, t.eigenvalues)
            close((g.eigenvectors * g.eigenvectors), (t.eigenvectors * t.eigenvectors))
            close(GL.eigvalsh(genesis.tensor(a), uplo), TL.eigvalsh(torch.tensor(a), uplo))
        check(lambda x: GL.eigh(x), lambda x: TL.eigh(x), [sym], weight=_eigh_loss)
        check(GL.eigvalsh, TL.eigvalsh, [sym])


def test_solve_triangular():
    for upper in (True, False):
        for unit in (False, True):
            a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
            check(lambda x, b: GL.solve_triangular(x, b, upper=upper, unitriangular=unit),
                  lambda x, b: TL.solve_triangular(x, b, upper=upper, unitriangular=unit),
                  [a, RNG.standard_normal((2, 4, 3))])
            check(lambda x, b: GL.solve_triangular(x, b, upper=upper, left=False, unitriangular=unit),
                  lambda x, b: TL.solve_triangular(x, b, upper=upper, left=False, unitriangular=unit),
                  [a, RNG.standard_normal((3, 4))])


def test_lu_factor_and_lu_solve():
    for shape in [(4, 4), (2, 5, 5), (3, 5), (5, 3)]:
        a = RNG.standard_normal(shape)
        g, t = GL.lu_factor(genesis.tensor(a)), TL.lu_factor(torch.tensor(a))
        close(g.LU, t.LU)
        exact(g.pivots, t.pivots)
    a, b = RNG.standard_normal((2, 4, 4)), RNG.standard_normal((2, 4, 3))
    LU, piv = GL.lu_factor(genesis.tensor(a))
    tLU, tpiv = TL.lu_factor(torch.tensor(a))
    for left in (True, False):
        for adjoint in (False, True):
            bb = b if left else np.swapaxes(b, -1, -2).copy()
            close(GL.lu_solve(LU, piv, genesis.tensor(bb), left=left, adjoint=adjoint),
                  TL.lu_solve(tLU, tpiv, torch.tensor(bb), left=left, adjoint=adjoint))
    ex = GL.lu_factor_ex(genesis.tensor(np.ones((2, 3, 3))))
    tex = TL.lu_factor_ex(torch.tensor(np.ones((2, 3, 3))))
    exact(ex.info, tex.info)
    exact(ex.pivots, tex.pivots)


def test_linalg_errors():
    sing = np.ones((2, 2))
    batch = np.stack([np.eye(2), sing])
    for fn_g, fn_t in [(lambda: GL.solve(genesis.tensor(sing), genesis.ones(2, dtype=genesis.float64)),
                        lambda: TL.solve(torch.tensor(sing), torch.ones(2, dtype=torch.float64))),
                       (lambda: GL.solve(genesis.tensor(batch), genesis.ones(2, 2, 1, dtype=genesis.float64)),
                        lambda: TL.solve(torch.tensor(batch), torch.ones(2, 2, 1, dtype=torch.float64))),
                       (lambda: GL.inv(genesis.tensor(sing)), lambda: TL.inv(torch.tensor(sing))),
                       (lambda: GL.inv(genesis.tensor(batch)), lambda: TL.inv(torch.tensor(batch))),
                       (lambda: GL.cholesky(genesis.tensor([[1.0, 2], [2, 1]])),
                        lambda: TL.cholesky(torch.tensor([[1.0, 2], [2, 1]]))),
                       (lambda: GL.cholesky(genesis.tensor(np.stack([np.eye(2), [[1.0, 2], [2, 1]]]))),
                        lambda: TL.cholesky(torch.tensor(np.stack([np.eye(2), [[1.0, 2], [2, 1]]]))))]:
        raises_like(fn_g, fn_t, RuntimeError)
        with pytest.raises(GL.LinAlgError):
            fn_g()
    assert issubclass(GL.LinAlgError, RuntimeError)
    for name in ("inv", "det", "slogdet", "cholesky", "eigh"):
        raises_like(lambda: getattr(GL, name)(genesis.ones(2, 3)), lambda: getattr(TL, name)(torch.ones(2, 3)))
        if name != "eigh":  # torch: '"linalg_eigh_cpu" not implemented for 'Long'', genesis: the others' words
            raises_like(lambda: getattr(GL, name)(genesis.ones(2, 2, dtype=genesis.int64)),
                        lambda: getattr(TL, name)(torch.ones(2, 2, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        GL.eigh(genesis.ones(2, 2, dtype=genesis.int64))
    raises_like(lambda: GL.inv(genesis.ones(3)), lambda: TL.inv(torch.ones(3)))
    raises_like(lambda: GL.solve(genesis.eye(3), genesis.ones(2)), lambda: TL.solve(torch.eye(3), torch.ones(2)))
    raises_like(lambda: GL.lu_factor(genesis.zeros(2, 2)), lambda: TL.lu_factor(torch.zeros(2, 2)))
    raises_like(lambda: GL.solve_triangular(genesis.eye(2), genesis.ones(2), upper=True),
                lambda: TL.solve_triangular(torch.eye(2), torch.ones(2), upper=True))


def test_linalg_float32_and_gradcheck():
    a = well_conditioned(3, 3)
    g = GL.inv(genesis.tensor(a.astype(np.float32)))
    assert g.dtype == genesis.float32
    close(g, TL.inv(torch.tensor(a.astype(np.float32))), rtol=1e-5, atol=1e-5)
    for fn in (GL.det, GL.inv, lambda x: GL.cholesky(x @ x.mT + genesis.eye(3, dtype=genesis.float64)),
               lambda x: GL.qr(x).R, lambda x: GL.svdvals(x), lambda x: GL.solve(x, x[..., :1] * 2 + 1)):
        genesis.gradcheck(fn, (genesis.tensor(a, requires_grad=True),))


# ---------------------------------------------------------------- the same ops on CUDA (the GPU machine)


@pytest.mark.skipif(not genesis.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_against_torch():
    """The ops' CUDA kernels (cuSOLVER for the factorizations) against torch on the CPU, float64."""
    def on_cuda(fn_g, fn_t, arrays, **kw):
        def fn(*xs):  # inputs moved to the GPU and results back, both recorded
            out = fn_g(*[x.to("cuda") for x in xs])
            return [o.cpu() for o in out] if isinstance(out, (tuple, list)) else out.cpu()
        check(fn, fn_t, arrays, **kw)

    a = RNG.standard_normal((3, 40, 5))
    for dim in (0, 1, -1):
        on_cuda(lambda x: x.cumsum(dim), lambda x: x.cumsum(dim), [a])
        on_cuda(lambda x: x.cumprod(dim), lambda x: x.cumprod(dim), [a])
        on_cuda(lambda x: x.logcumsumexp(dim), lambda x: x.logcumsumexp(dim), [a])
        on_cuda(lambda x: x.cummax(dim).values, lambda x: x.cummax(dim).values, [a])
        on_cuda(lambda x: x.median(dim).values, lambda x: x.median(dim).values, [a])
    ints = RNG.integers(-4, 4, (6, 50))
    g, t = genesis.tensor(ints).to("cuda").cummin(1), torch.tensor(ints).cummin(1)
    exact(g.indices.cpu(), t.indices)
    exact(genesis.tensor(ints).to("cuda").cumsum(1).cpu(), torch.tensor(ints).cumsum(1))
    for a_, b_ in zip(genesis.unique(genesis.tensor(ints).to("cuda"), return_inverse=True, return_counts=True),
                      torch.unique(torch.tensor(ints), return_inverse=True, return_counts=True)):
        exact(a_.cpu(), b_)
    g, t = genesis.tensor(ints).to("cuda").mode(1), torch.tensor(ints).mode(1)
    exact(g.values.cpu(), t.values)
    exact(g.indices.cpu(), t.indices)
    seq, vals = np.sort(RNG.standard_normal((4, 30)), -1), RNG.standard_normal((4, 9))
    for right in (False, True):
        exact(genesis.searchsorted(genesis.tensor(seq).to("cuda"), genesis.tensor(vals).to("cuda"), right=right).cpu(),
              torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right))
    x, src, idx = RNG.standard_normal((5, 4)), RNG.standard_normal((6, 4)), RNG.integers(0, 5, (6, 4))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for self in (True, False):
            on_cuda(lambda p, s: p.scatter_reduce(0, genesis.tensor(idx).to("cuda"), s, reduce, include_self=self),
                    lambda p, s: p.scatter_reduce(0, torch.tensor(idx), s, reduce, include_self=self), [x, src])
    close(genesis.bincount(genesis.tensor(ints[0] + 4).to("cuda")).cpu(), torch.bincount(torch.tensor(ints[0] + 4)))
    close(genesis.histc(genesis.tensor(a).to("cuda"), 7).cpu(), torch.histc(torch.tensor(a), 7))
    m, b = well_conditioned(3, 5, 5), RNG.standard_normal((3, 5, 2))
    on_cuda(GL.solve, TL.solve, [m, b])
    on_cuda(GL.inv, TL.inv, [m])
    on_cuda(GL.det, TL.det, [m])
    on_cuda(lambda z: GL.slogdet(z).logabsdet, lambda z: TL.slogdet(z).logabsdet, [m])
    on_cuda(GL.cholesky, TL.cholesky, [spd(2, 4, 4)])
    on_cuda(lambda z: GL.cholesky(z, upper=True), lambda z: TL.cholesky(z, upper=True), [spd(4, 4)])
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        r = RNG.standard_normal(shape)
        on_cuda(lambda z: GL.qr(z), lambda z: TL.qr(z), [r])
        on_cuda(lambda z: GL.qr(z, "complete"), lambda z: TL.qr(z, "complete"), [r], grad=False)
        for full in (False, True):
            on_cuda(lambda z: GL.svd(z, full_matrices=full), lambda z: TL.svd(z, full_matrices=full), [r],
                    weight=_svd_loss)
        on_cuda(GL.svdvals, TL.svdvals, [r])
    sym = RNG.standard_normal((2, 5, 5))
    for uplo in ("L", "U"):
        on_cuda(lambda z: GL.eigh(z, uplo), lambda z: TL.eigh(z, uplo), [sym], weight=_eigh_loss)
    for upper in (True, False):
        on_cuda(lambda p, q: GL.solve_triangular(p, q, upper=upper),
                lambda p, q: TL.solve_triangular(p, q, upper=upper), [m, b])
    g, t = GL.lu_factor(genesis.tensor(m).to("cuda")), TL.lu_factor(torch.tensor(m))
    close(g.LU.cpu(), t.LU)
    exact(g.pivots.cpu(), t.pivots)
    with pytest.raises(GL.LinAlgError):
        GL.inv(genesis.ones(2, 2, dtype=genesis.float64, device="cuda"))
