"""genesis.nn's activations, distances, extra losses (CTC included), GroupNorm / InstanceNorm,
ParameterList / ParameterDict / Unflatten and the added nn.init functions against torch 1.13 in
float64: values to 1e-10, input and parameter gradients to 1e-7, state_dict names, error types
(tests tools/python/genesis/nn/{activation,loss,normalization,modules,init}.py)."""
import math
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from conftest import close, from_torch, to_torch

TF = torch.nn.functional
TNN = torch.nn
GTOL = 1e-7


def _inputs(arrays):
    """(genesis, torch) copies of each (array, requires_grad) pair."""
    gs, ts = [], []
    for a, rg in arrays:
        a = np.asarray(a)
        gs.append(genesis.tensor(a, requires_grad=rg))
        ts.append(torch.tensor(a, requires_grad=rg))
    return gs, ts


def _check(g_fn, t_fn, arrays, g_params=(), t_params=()):
    """Runs both sides on the same inputs: values to 1e-10, then every gradient (inputs that require grad and
    the given parameters) to 1e-7 through a random upstream gradient."""
    gs, ts = _inputs(arrays)
    g_out, t_out = g_fn(*gs), t_fn(*ts)
    close(g_out, t_out)
    w = np.random.randn(*t_out.shape)
    (g_out * genesis.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    checked = 0
    for g, t in list(zip(gs, ts)) + list(zip(g_params, t_params)):
        if t.requires_grad:
            if t.grad is None:  # torch records no gradient (a zero one, e.g. the 0-"norm")
                assert g.grad is None or float(g.grad.abs().max()) == 0.0
            else:
                close(g.grad, t.grad, rtol=GTOL, atol=GTOL)
            checked += 1
    assert checked, "no gradient compared"
    return g_out, t_out


def _act_input(shape, specials):
    """Normal values times 4 with the kinks of the function written into the first places."""
    a = np.random.randn(*shape) * 4
    flat = a.reshape(-1)
    n = min(len(specials), flat.size)
    flat[:n] = specials[:n]
    return a


SPECIALS = [0.0, 3.0, -3.0, 1.0, -1.0, 0.5, -0.5, 6.0, 2.5, -2.0, 20.0, -20.0, 40.0]

# name: (genesis function, torch function, input shape)
ACTIVATIONS = {
    "leaky_relu": (F.leaky_relu, TF.leaky_relu, (4, 5)),
    "leaky_relu_0.2": (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), (4, 5)),
    "elu": (F.elu, TF.elu, (4, 5)),
    "elu_alpha": (lambda x: F.elu(x, alpha=0.7), lambda x: TF.elu(x, alpha=0.7), (2, 3, 4)),
    "selu": (F.selu, TF.selu, (4, 5)),
    "celu": (F.celu, TF.celu, (4, 5)),
    "celu_alpha": (lambda x: F.celu(x, 2.5), lambda x: TF.celu(x, 2.5), (4, 5)),
    "softplus": (F.softplus, TF.softplus, (4, 5)),
    "softplus_beta_threshold": (lambda x: F.softplus(x, beta=2, threshold=5),
                                lambda x: TF.softplus(x, beta=2, threshold=5), (4, 5)),
    "softplus_beta_half": (lambda x: F.softplus(x, 0.5, 3), lambda x: TF.softplus(x, 0.5, 3), (4, 5)),
    "hardswish": (F.hardswish, TF.hardswish, (4, 5)),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, (4, 5)),
    "hardtanh": (F.hardtanh, TF.hardtanh, (4, 5)),
    "hardtanh_range": (lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: TF.hardtanh(x, -2.0, 3.0), (4, 5)),
    "relu6": (F.relu6, TF.relu6, (4, 5)),
    "mish": (F.mish, TF.mish, (4, 5)),
    "glu": (F.glu, TF.glu, (3, 6)),
    "glu_dim0": (lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), (4, 3)),
    "glu_dim1": (lambda x: F.glu(x, dim=1), lambda x: TF.glu(x, dim=1), (2, 4, 3)),
    "softsign": (F.softsign, TF.softsign, (4, 5)),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, (4, 5)),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, (4, 5)),
    "softshrink": (F.softshrink, TF.softshrink, (4, 5)),
    "softshrink_1": (lambda x: F.softshrink(x, 1.0), lambda x: TF.softshrink(x, 1.0), (4, 5)),
    "hardshrink": (F.hardshrink, TF.hardshrink, (4, 5)),
    "hardshrink_3": (lambda x: F.hardshrink(x, 3.0), lambda x: TF.hardshrink(x, 3.0), (4, 5)),
    "threshold": (lambda x: F.threshold(x, 1.0, -7.0), lambda x: TF.threshold(x, 1.0, -7.0), (4, 5)),
    "softmin": (lambda x: F.softmin(x, dim=1), lambda x: TF.softmin(x, dim=1), (4, 5)),
    "softmin_dim0": (lambda x: F.softmin(x, 0), lambda x: TF.softmin(x, 0), (4, 5)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_torch(name):
    g_fn, t_fn, shape = ACTIVATIONS[name]
    _check(g_fn, t_fn, [(_act_input(shape, SPECIALS), True)])


def test_activations_at_large_magnitudes_stay_finite():
    x = np.array([-800.0, -100.0, -30.0, 30.0, 100.0, 800.0])
    for g_fn, t_fn in ((F.elu, TF.elu), (F.celu, TF.celu), (F.selu, TF.selu), (F.softplus, TF.softplus),
                       (F.mish, TF.mish), (F.logsigmoid, TF.logsigmoid)):
        _check(g_fn, t_fn, [(x, True)])


# name: (genesis module, torch module, input shape)
ACTIVATION_MODULES = {
    "LeakyReLU": (lambda: nn.LeakyReLU(0.1), lambda: TNN.LeakyReLU(0.1), (3, 4)),
    "PReLU": (lambda: nn.PReLU(), lambda: TNN.PReLU(), (3, 4, 2)),
    "PReLU_channels": (lambda: nn.PReLU(4, init=0.1), lambda: TNN.PReLU(4, init=0.1), (3, 4, 2, 2)),
    "PReLU_channels_2d": (lambda: nn.PReLU(4), lambda: TNN.PReLU(4), (5, 4)),
    "PReLU_scalar_1d": (lambda: nn.PReLU(), lambda: TNN.PReLU(), (5,)),
    "ELU": (lambda: nn.ELU(0.5), lambda: TNN.ELU(0.5), (3, 4)),
    "SELU": (lambda: nn.SELU(), lambda: TNN.SELU(), (3, 4)),
    "CELU": (lambda: nn.CELU(0.8), lambda: TNN.CELU(0.8), (3, 4)),
    "Softplus": (lambda: nn.Softplus(beta=3, threshold=4), lambda: TNN.Softplus(beta=3, threshold=4), (3, 4)),
    "Hardswish": (lambda: nn.Hardswish(), lambda: TNN.Hardswish(), (3, 4)),
    "Hardsigmoid": (lambda: nn.Hardsigmoid(), lambda: TNN.Hardsigmoid(), (3, 4)),
    "Hardtanh": (lambda: nn.Hardtanh(-0.5, 2.0), lambda: TNN.Hardtanh(-0.5, 2.0), (3, 4)),
    "ReLU6": (lambda: nn.ReLU6(), lambda: TNN.ReLU6(), (3, 4)),
    "Mish": (lambda: nn.Mish(), lambda: TNN.Mish(), (3, 4)),
    "GLU": (lambda: nn.GLU(), lambda: TNN.GLU(), (3, 4)),
    "Softsign": (lambda: nn.Softsign(), lambda: TNN.Softsign(), (3, 4)),
    "Tanhshrink": (lambda: nn.Tanhshrink(), lambda: TNN.Tanhshrink(), (3, 4)),
    "LogSigmoid": (lambda: nn.LogSigmoid(), lambda: TNN.LogSigmoid(), (3, 4)),
    "Softshrink": (lambda: nn.Softshrink(0.3), lambda: TNN.Softshrink(0.3), (3, 4)),
    "Hardshrink": (lambda: nn.Hardshrink(0.3), lambda: TNN.Hardshrink(0.3), (3, 4)),
    "Threshold": (lambda: nn.Threshold(0.1, 20.0), lambda: TNN.Threshold(0.1, 20.0), (3, 4)),
    "Softmin": (lambda: nn.Softmin(dim=-1), lambda: TNN.Softmin(dim=-1), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATION_MODULES))
def test_activation_module_matches_torch(name):
    make_g, make_t, shape = ACTIVATION_MODULES[name]
    g, t = make_g().to(genesis.float64), make_t().double()
    assert list(g.state_dict()) == list(t.state_dict())
    assert repr(g) == repr(t)
    gp, tp = [p for _, p in g.named_parameters()], [p for _, p in t.named_parameters()]
    _check(g, t, [(_act_input(shape, SPECIALS), True)], gp, tp)


@pytest.mark.parametrize("fn, args", [("elu", ()), ("leaky_relu", (0.3,)), ("selu", ()), ("celu", (1.5,)),
                                      ("hardtanh", (-0.5, 0.5)), ("threshold", (0.2, 9.0))])
def test_inplace_forms_match_torch(fn, args):
    a = np.random.randn(3, 4)
    g, t = genesis.tensor(a.copy()), torch.tensor(a.copy())
    out = getattr(F, fn + "_")(g, *args)
    getattr(TF, fn + "_")(t, *args)
    assert out is g
    close(g, t)
    # inplace=True on a tensor inside a graph: the same values and gradients as torch
    gx, tx = genesis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    gy = getattr(F, fn)(gx * 2.0, *args, inplace=True)
    ty = getattr(TF, fn)(tx * 2.0, *args, inplace=True)
    close(gy, ty)
    gy.sum().backward()
    ty.sum().backward()
    close(gx.grad, tx.grad, rtol=GTOL, atol=GTOL)
    # a leaf that requires grad is refused, as torch does
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(TF, fn)(torch.tensor(a, requires_grad=True), *args, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(F, fn)(genesis.tensor(a, requires_grad=True), *args, inplace=True)


def test_inplace_modules_write_into_their_input():
    for g_mod, t_mod in ((nn.ReLU6(inplace=True), TNN.ReLU6(inplace=True)),
                         (nn.Hardswish(inplace=True), TNN.Hardswish(inplace=True)),
                         (nn.Mish(inplace=True), TNN.Mish(inplace=True)),
                         (nn.LeakyReLU(inplace=True), TNN.LeakyReLU(inplace=True))):
        a = np.random.randn(2, 5) * 4
        g, t = genesis.tensor(a.copy()), torch.tensor(a.copy())
        assert g_mod(g) is g
        t_mod(t)
        close(g, t)
        assert repr(g_mod) == repr(t_mod)


def test_activation_errors_match_torch():
    cases = [
        (lambda m: m.glu(m_x(m, (2, 5)), 1), RuntimeError, "Halving dimension must be even"),
        (lambda m: m.glu(m_x(m, ()), 0), RuntimeError, "does not support scalars"),
        (lambda m: m.glu(m_x(m, (2, 4)), 2), IndexError, "Dimension out of range"),
        (lambda m: m.prelu(m_x(m, (2, 4)), m_x(m, (3,))), RuntimeError, "Mismatch of parameter numbers"),
        (lambda m: m.prelu(m_x(m, (4,)), m_x(m, (4,))), RuntimeError, "channel size = 1"),
        (lambda m: m.prelu(m_x(m, (2, 4)), m_x(m, (2, 2))), RuntimeError, "scalar or 1D tensor"),
        (lambda m: m.celu(m_x(m, (2, 4)), 0.0), RuntimeError, "alpha cannot be 0"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn(TF)
        with pytest.raises(exc, match=msg):
            fn(F)
    with pytest.raises(AssertionError):
        TNN.Hardtanh(1.0, -1.0)
    with pytest.raises(AssertionError):
        nn.Hardtanh(1.0, -1.0)


def m_x(m, shape):
    """A float64 random tensor of the library m belongs to."""
    a = np.random.randn(*shape)
    return torch.tensor(a) if m is TF else genesis.tensor(a)


# ---------------------------------------------------------------- distances and normalize

@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, 0.0, float("inf"), -float("inf")])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 1, 5), (3, 5)), ((5,), (5,))])
def test_pairwise_distance_matches_torch(p, shapes):
    a, b = np.random.randn(*shapes[0]), np.random.randn(*shapes[1])
    for keepdim in (False, True):
        _check(lambda x, y: F.pairwise_distance(x, y, p, 1e-6, keepdim),
               lambda x, y: TF.pairwise_distance(x, y, p, 1e-6, keepdim), [(a, True), (b, True)])
    _check(lambda x, y: nn.PairwiseDistance(p, eps=0.1)(x, y), lambda x, y: TNN.PairwiseDistance(p, eps=0.1)(x, y),
           [(a, True), (b, True)])


@pytest.mark.parametrize("dim, shapes", [(1, ((4, 5), (4, 5))), (-1, ((3, 4, 5), (4, 5))), (0, ((6, 3), (6, 1))),
                                         (1, ((2, 3, 4), (2, 3, 4)))])
def test_cosine_similarity_matches_torch(dim, shapes):
    a, b = np.random.randn(*shapes[0]), np.random.randn(*shapes[1])
    _check(lambda x, y: F.cosine_similarity(x, y, dim), lambda x, y: TF.cosine_similarity(x, y, dim),
           [(a, True), (b, True)])
    _check(lambda x, y: nn.CosineSimilarity(dim, 1e-3)(x, y), lambda x, y: TNN.CosineSimilarity(dim, 1e-3)(x, y),
           [(a, True), (b, True)])


def test_cosine_similarity_of_tiny_and_zero_vectors_matches_torch():
    a = np.random.randn(4, 3)
    b = np.random.randn(4, 3)
    a[1] = 0.0
    a[2] *= 1e-10  # below eps: torch clamps the norm's value only
    _check(lambda x, y: F.cosine_similarity(x, y, eps=1e-8), lambda x, y: TF.cosine_similarity(x, y, eps=1e-8),
           [(a, True), (b, True)])


@pytest.mark.parametrize("p, dim", [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1), (0.0, 1)])
def test_normalize_matches_torch(p, dim):
    a = np.random.randn(3, 4, 2)
    a[1, :, 0] = 0.0  # a zero slice: gradient 1/eps, finite, as torch
    _check(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), [(a, True)])
    _check(lambda x: F.normalize(x, p, dim, eps=0.5), lambda x: TF.normalize(x, p, dim, eps=0.5), [(a, True)])


def test_distance_errors_match_torch():
    for fn in ("pairwise_distance", "cosine_similarity"):
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            getattr(TF, fn)(m_x(TF, (2, 5)), m_x(TF, (3, 5)))
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            getattr(F, fn)(m_x(F, (2, 5)), m_x(F, (3, 5)))


# ---------------------------------------------------------------- losses

REDUCTIONS = ["none", "mean", "sum"]


def _pm1(shape):
    return np.where(np.random.rand(*shape) < 0.5, -1.0, 1.0)


# name: (genesis fn(reduction, *inputs), torch fn, inputs maker -> [(array, requires_grad)])
LOSSES = {
    "smooth_l1": (lambda r, x, y: F.smooth_l1_loss(x, y, reduction=r),
                  lambda r, x, y: TF.smooth_l1_loss(x, y, reduction=r),
                  lambda: [(np.random.randn(4, 5) * 2, True), (np.random.randn(4, 5), True)]),
    "smooth_l1_beta": (lambda r, x, y: F.smooth_l1_loss(x, y, reduction=r, beta=0.3),
                       lambda r, x, y: TF.smooth_l1_loss(x, y, reduction=r, beta=0.3),
                       lambda: [(np.random.randn(4, 5), True), (np.random.randn(4, 5), True)]),
    "smooth_l1_beta0": (lambda r, x, y: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
                        lambda r, x, y: TF.smooth_l1_loss(x, y, reduction=r, beta=0.0),
                        lambda: [(np.random.randn(4, 5), True), (np.random.randn(4, 5), True)]),
    "huber": (lambda r, x, y: F.huber_loss(x, y, reduction=r), lambda r, x, y: TF.huber_loss(x, y, reduction=r),
              lambda: [(np.random.randn(4, 5) * 2, True), (np.random.randn(4, 5), True)]),
    "huber_delta": (lambda r, x, y: F.huber_loss(x, y, r, 2.5), lambda r, x, y: TF.huber_loss(x, y, r, 2.5),
                    lambda: [(np.random.randn(3, 2, 5) * 3, True), (np.random.randn(3, 2, 5), False)]),
    "kl_div": (lambda r, x, y: F.kl_div(x, y, reduction=r), lambda r, x, y: TF.kl_div(x, y, reduction=r),
               lambda: [(np.log(np.random.dirichlet(np.ones(5), 4)), True),
                        (np.random.dirichlet(np.ones(5), 4), True)]),
    "kl_div_zero_targets": (lambda r, x, y: F.kl_div(x, y, reduction=r), lambda r, x, y: TF.kl_div(x, y, reduction=r),
                            lambda: [(np.random.randn(4, 5), True),
                                     (np.where(np.random.rand(4, 5) < 0.4, 0.0, np.random.rand(4, 5)), False)]),
    "kl_div_log_target": (lambda r, x, y: F.kl_div(x, y, reduction=r, log_target=True),
                          lambda r, x, y: TF.kl_div(x, y, reduction=r, log_target=True),
                          lambda: [(np.random.randn(4, 5), True), (np.random.randn(4, 5), True)]),
    "cosine_embedding": (lambda r, a, b, y: F.cosine_embedding_loss(a, b, y, reduction=r),
                         lambda r, a, b, y: TF.cosine_embedding_loss(a, b, y, reduction=r),
                         lambda: [(np.random.randn(6, 4), True), (np.random.randn(6, 4), True), (_pm1((6,)), False)]),
    "cosine_embedding_margin": (lambda r, a, b, y: F.cosine_embedding_loss(a, b, y, margin=-0.3, reduction=r),
                                lambda r, a, b, y: TF.cosine_embedding_loss(a, b, y, margin=-0.3, reduction=r),
                                lambda: [(np.random.randn(6, 4), True), (np.random.randn(6, 4), True),
                                         (np.array([1.0, -1.0, 0.0, 1.0, -1.0, -1.0]), False)]),
    "cosine_embedding_1d": (lambda r, a, b, y: F.cosine_embedding_loss(a, b, y, 0.2, reduction=r),
                            lambda r, a, b, y: TF.cosine_embedding_loss(a, b, y, 0.2, reduction=r),
                            lambda: [(np.random.randn(4), True), (np.random.randn(4), True),
                                     (np.array(-1.0), False)]),
    "margin_ranking": (lambda r, a, b, y: F.margin_ranking_loss(a, b, y, reduction=r),
                       lambda r, a, b, y: TF.margin_ranking_loss(a, b, y, reduction=r),
                       lambda: [(np.random.randn(7), True), (np.random.randn(7), True), (_pm1((7,)), False)]),
    "margin_ranking_margin": (lambda r, a, b, y: F.margin_ranking_loss(a, b, y, 0.5, reduction=r),
                              lambda r, a, b, y: TF.margin_ranking_loss(a, b, y, 0.5, reduction=r),
                              lambda: [(np.random.randn(3, 4), True), (np.random.randn(3, 4), True),
                                       (_pm1((3, 4)), True)]),
    "triplet": (lambda r, a, p, n: F.triplet_margin_loss(a, p, n, reduction=r),
                lambda r, a, p, n: TF.triplet_margin_loss(a, p, n, reduction=r),
                lambda: [(np.random.randn(5, 4), True), (np.random.randn(5, 4), True),
                         (np.random.randn(5, 4), True)]),
    "triplet_p1_swap": (lambda r, a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction=r),
                        lambda r, a, p, n: TF.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction=r),
                        lambda: [(np.random.randn(8, 3), True), (np.random.randn(8, 3), True),
                                 (np.random.randn(8, 3), True)]),
    "triplet_p3_eps_swap": (lambda r, a, p, n: F.triplet_margin_loss(a, p, n, 1.5, 3, 0.01, True, reduction=r),
                            lambda r, a, p, n: TF.triplet_margin_loss(a, p, n, 1.5, 3, 0.01, True, reduction=r),
                            lambda: [(np.random.randn(8, 3), True), (np.random.randn(8, 3), True),
                                     (np.random.randn(8, 3), True)]),
    "triplet_with_distance": (
        lambda r, a, p, n: F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda x, y: 1.0 - F.cosine_similarity(x, y), swap=True, reduction=r),
        lambda r, a, p, n: TF.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda x, y: 1.0 - TF.cosine_similarity(x, y), swap=True, reduction=r),
        lambda: [(np.random.randn(6, 3), True), (np.random.randn(6, 3), True), (np.random.randn(6, 3), True)]),
    "hinge_embedding": (lambda r, x, y: F.hinge_embedding_loss(x, y, 0.7, reduction=r),
                        lambda r, x, y: TF.hinge_embedding_loss(x, y, 0.7, reduction=r),
                        lambda: [(np.random.randn(4, 5), True), (_pm1((4, 5)), False)]),
    "soft_margin": (lambda r, x, y: F.soft_margin_loss(x, y, reduction=r),
                    lambda r, x, y: TF.soft_margin_loss(x, y, reduction=r),
                    lambda: [(np.random.randn(4, 5), True), (_pm1((4, 5)), False)]),
    "multilabel_soft_margin": (lambda r, x, y, w: F.multilabel_soft_margin_loss(x, y, w, reduction=r),
                               lambda r, x, y, w: TF.multilabel_soft_margin_loss(x, y, w, reduction=r),
                               lambda: [(np.random.randn(4, 5) * 5, True),
                                        ((np.random.rand(4, 5) < 0.5) * 1.0, False), (np.random.rand(5), True)]),
    "poisson_nll": (lambda r, x, y: F.poisson_nll_loss(x, y, reduction=r),
                    lambda r, x, y: TF.poisson_nll_loss(x, y, reduction=r),
                    lambda: [(np.random.randn(4, 5), True), (np.random.poisson(2.0, (4, 5)) * 1.0, True)]),
    "poisson_nll_full_linear": (lambda r, x, y: F.poisson_nll_loss(x, y, log_input=False, full=True, reduction=r),
                                lambda r, x, y: TF.poisson_nll_loss(x, y, log_input=False, full=True, reduction=r),
                                lambda: [(np.random.rand(4, 5) * 3 + 0.1, True),
                                         (np.random.poisson(2.0, (4, 5)) + 0.5, True)]),
    "gaussian_nll": (lambda r, x, y, v: F.gaussian_nll_loss(x, y, v, reduction=r),
                     lambda r, x, y, v: TF.gaussian_nll_loss(x, y, v, reduction=r),
                     lambda: [(np.random.randn(4, 3), True), (np.random.randn(4, 3), True),
                              (np.random.rand(4, 3) + 0.1, True)]),
    "gaussian_nll_full_homoscedastic": (
        lambda r, x, y, v: F.gaussian_nll_loss(x, y, v, full=True, eps=0.05, reduction=r),
        lambda r, x, y, v: TF.gaussian_nll_loss(x, y, v, full=True, eps=0.05, reduction=r),
        lambda: [(np.random.randn(4, 3), True), (np.random.randn(4, 3), False),
                 (np.array([0.01, 0.5, 1.0, 2.0]), True)]),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_function_matches_torch(name, reduction):
    g_fn, t_fn, make = LOSSES[name]
    arrays = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(lambda *xs: g_fn(reduction, *xs), lambda *xs: t_fn(reduction, *xs), arrays)


def test_kl_div_batchmean_and_mean_warning_match_torch():
    x, y = np.log(np.random.dirichlet(np.ones(5), 3)), np.random.dirichlet(np.ones(5), 3)
    for log_target in (False, True):
        yy = np.log(y) if log_target else y
        _check(lambda a, b: F.kl_div(a, b, reduction="batchmean", log_target=log_target),
               lambda a, b: TF.kl_div(a, b, reduction="batchmean", log_target=log_target), [(x, True), (yy, True)])
        _check(lambda a, b: nn.KLDivLoss(reduction="batchmean", log_target=log_target)(a, b),
               lambda a, b: TNN.KLDivLoss(reduction="batchmean", log_target=log_target)(a, b),
               [(x, True), (yy, True)])
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(genesis.tensor(x), genesis.tensor(y))


def test_legacy_size_average_and_reduce_match_torch():
    x, y = np.random.randn(3, 4), np.random.randn(3, 4)
    for size_average, reduce in ((False, None), (None, False), (True, True), (False, True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _check(lambda a, b: F.smooth_l1_loss(a, b, size_average, reduce),
                   lambda a, b: TF.smooth_l1_loss(a, b, size_average, reduce), [(x, True), (y, True)])
            _check(lambda a, b: nn.SmoothL1Loss(size_average, reduce)(a, b),
                   lambda a, b: TNN.SmoothL1Loss(size_average, reduce)(a, b), [(x, True), (y, True)])


def test_target_size_warning_and_broadcast_match_torch():
    x, y = np.random.randn(3, 4), np.random.randn(4)
    with pytest.warns(UserWarning, match="Using a target size"):
        _check(lambda a, b: F.smooth_l1_loss(a, b), lambda a, b: TF.smooth_l1_loss(a, b), [(x, True), (y, True)])
    with pytest.warns(UserWarning, match="Using a target size"):
        _check(lambda a, b: F.huber_loss(a, b), lambda a, b: TF.huber_loss(a, b), [(x, True), (y, True)])


# name: (genesis module, torch module, inputs maker)
LOSS_MODULES = {
    "SmoothL1Loss": (lambda r: nn.SmoothL1Loss(reduction=r, beta=0.5),
                     lambda r: TNN.SmoothL1Loss(reduction=r, beta=0.5),
                     LOSSES["smooth_l1"][2]),
    "HuberLoss": (lambda r: nn.HuberLoss(reduction=r, delta=0.4), lambda r: TNN.HuberLoss(reduction=r, delta=0.4),
                  LOSSES["huber"][2]),
    "KLDivLoss": (lambda r: nn.KLDivLoss(reduction=r), lambda r: TNN.KLDivLoss(reduction=r), LOSSES["kl_div"][2]),
    "CosineEmbeddingLoss": (lambda r: nn.CosineEmbeddingLoss(0.1, reduction=r),
                            lambda r: TNN.CosineEmbeddingLoss(0.1, reduction=r), LOSSES["cosine_embedding"][2]),
    "MarginRankingLoss": (lambda r: nn.MarginRankingLoss(0.2, reduction=r),
                          lambda r: TNN.MarginRankingLoss(0.2, reduction=r), LOSSES["margin_ranking"][2]),
    "TripletMarginLoss": (lambda r: nn.TripletMarginLoss(0.5, p=1.5, swap=True, reduction=r),
                          lambda r: TNN.TripletMarginLoss(0.5, p=1.5, swap=True, reduction=r), LOSSES["triplet"][2]),
    "TripletMarginWithDistanceLoss": (lambda r: nn.TripletMarginWithDistanceLoss(margin=0.3, reduction=r),
                                      lambda r: TNN.TripletMarginWithDistanceLoss(margin=0.3, reduction=r),
                                      LOSSES["triplet"][2]),
    "HingeEmbeddingLoss": (lambda r: nn.HingeEmbeddingLoss(reduction=r), lambda r: TNN.HingeEmbeddingLoss(reduction=r),
                           LOSSES["hinge_embedding"][2]),
    "SoftMarginLoss": (lambda r: nn.SoftMarginLoss(reduction=r), lambda r: TNN.SoftMarginLoss(reduction=r),
                       LOSSES["soft_margin"][2]),
    "PoissonNLLLoss": (lambda r: nn.PoissonNLLLoss(full=True, reduction=r),
                       lambda r: TNN.PoissonNLLLoss(full=True, reduction=r),
                       # zero counts: torch's target gradient there is NaN (log(0) under masked_fill); none asked
                       lambda: [(np.random.randn(4, 5), True), (np.random.poisson(2.0, (4, 5)) * 1.0, False)]),
    "GaussianNLLLoss": (lambda r: nn.GaussianNLLLoss(reduction=r), lambda r: TNN.GaussianNLLLoss(reduction=r),
                        LOSSES["gaussian_nll"][2]),
    "MultiLabelSoftMarginLoss": (lambda r: nn.MultiLabelSoftMarginLoss(reduction=r),
                                 lambda r: TNN.MultiLabelSoftMarginLoss(reduction=r),
                                 lambda: LOSSES["multilabel_soft_margin"][2]()[:2]),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(LOSS_MODULES))
def test_loss_module_matches_torch(name, reduction):
    make_g, make_t, make = LOSS_MODULES[name]
    g, t = make_g(reduction), make_t(reduction)
    assert list(g.state_dict()) == list(t.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(g, t, make())


def test_multilabel_soft_margin_weight_is_a_buffer_as_torch():
    w = np.random.rand(5)
    g = nn.MultiLabelSoftMarginLoss(weight=genesis.tensor(w))
    t = TNN.MultiLabelSoftMarginLoss(weight=torch.tensor(w))
    assert list(g.state_dict()) == list(t.state_dict()) == ["weight"]
    _check(g, t, LOSSES["multilabel_soft_margin"][2]()[:2])


def test_loss_errors_match_torch():
    def both(fn, exc, msg):
        with pytest.raises(exc, match=msg):
            fn(TF)
        with pytest.raises(exc, match=msg):
            fn(F)

    for name in ("smooth_l1_loss", "huber_loss", "kl_div", "soft_margin_loss", "hinge_embedding_loss"):
        both(lambda m: getattr(m, name)(m_x(m, (2, 3)), m_x(m, (2, 3)), reduction="foo"), ValueError,
             "foo is not a valid value for reduction")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda m: m.smooth_l1_loss(m_x(m, (2, 5)), m_x(m, (3, 5))), RuntimeError,
             r"size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0")
        both(lambda m: m.huber_loss(m_x(m, (2, 5)), m_x(m, (3, 5))), RuntimeError, "must match the size")
    both(lambda m: m.smooth_l1_loss(m_x(m, (2,)), m_x(m, (2,)), beta=-1.0), RuntimeError, "negative values for beta")
    both(lambda m: m.huber_loss(m_x(m, (2,)), m_x(m, (2,)), delta=0.0), RuntimeError, "non-positive values for delta")
    both(lambda m: m.cosine_embedding_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), m_x(m, (2, 1))), RuntimeError,
         "0D or 1D target tensor expected")
    both(lambda m: m.cosine_embedding_loss(m_x(m, (5,)), m_x(m, (5,)), m_x(m, (2,))), RuntimeError,
         "1D target tensor expects 2D input tensors")
    both(lambda m: m.margin_ranking_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), m_x(m, (2,))), RuntimeError,
         "All input tensors should have same dimension")
    both(lambda m: m.triplet_margin_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), m_x(m, (5,))), RuntimeError,
         "All inputs should have same dimension but got 2D, 2D and 1D inputs")
    both(lambda m: m.triplet_margin_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), m_x(m, (3, 5))), RuntimeError,
         "must match the size")
    both(lambda m: m.gaussian_nll_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), m_x(m, (3,))), ValueError,
         "var is of incorrect size")
    both(lambda m: m.gaussian_nll_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), -m_x(m, (2, 5)).abs()), ValueError,
         "var has negative entry")
    both(lambda m: m.poisson_nll_loss(m_x(m, (2, 5)), m_x(m, (2, 5)), reduction="x"), ValueError, "x is not valid")


# ---------------------------------------------------------------- CTC

def _ctc_case(T, N, C, S, blank=0, seed=0, min_input=None):
    rng = np.random.RandomState(seed)
    logits = rng.randn(T, N, C)
    tl = rng.randint(0, S + 1, N)
    tl[0] = S
    il = rng.randint(min_input or min(2 * S, T), T + 1, N)  # 2 S frames always hold S labels
    il[-1] = T
    labels = [l for l in range(C) if l != blank]
    # repeated labels included: they need a blank between them
    targets = np.array([[labels[i] for i in rng.randint(0, len(labels), S)] for _ in range(N)])
    targets[0, 1:3] = targets[0, 0]
    return logits, targets, il, tl


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("blank", [0, 3])
def test_ctc_loss_matches_torch_through_log_softmax(reduction, blank):
    logits, targets, il, tl = _ctc_case(T=12, N=4, C=5, S=4, blank=blank)
    for tg in (targets, np.concatenate([targets[n, :tl[n]] for n in range(len(tl))])):  # padded, concatenated
        _check(lambda x: F.ctc_loss(x.log_softmax(2), genesis.tensor(tg), genesis.tensor(il), genesis.tensor(tl),
                                    blank, reduction),
               lambda x: TF.ctc_loss(x.log_softmax(2), torch.tensor(tg), torch.tensor(il), torch.tensor(tl), blank,
                                     reduction),
               [(logits, True)])
    # sequences as tuples, and the module
    _check(lambda x: nn.CTCLoss(blank, reduction)(x.log_softmax(2), genesis.tensor(targets), tuple(il), tuple(tl)),
           lambda x: TNN.CTCLoss(blank, reduction)(x.log_softmax(2), torch.tensor(targets), tuple(il), tuple(tl)),
           [(logits, True)])


def test_ctc_loss_gradient_wrt_log_probs_is_exact():
    """torch's kernel returns exp(lp) - gamma for frames inside each input; the exact gradient is -gamma, which
    genesis returns (the two agree through a log_softmax)."""
    logits, targets, il, tl = _ctc_case(T=9, N=3, C=4, S=3, seed=1)
    lp = torch.tensor(logits).log_softmax(2).numpy()
    glp, tlp = genesis.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
    gl = F.ctc_loss(glp, genesis.tensor(targets), genesis.tensor(il), genesis.tensor(tl), reduction="sum")
    tloss = TF.ctc_loss(tlp, torch.tensor(targets), torch.tensor(il), torch.tensor(tl), reduction="sum")
    close(gl, tloss)
    gl.backward()
    tloss.backward()
    inside = (np.arange(9)[:, None] < il[None, :])[:, :, None]
    np.testing.assert_allclose(glp.grad.numpy() + np.exp(lp) * inside, tlp.grad.numpy(), rtol=GTOL, atol=GTOL)
    x = genesis.tensor(lp[:, :2], requires_grad=True)
    genesis.gradcheck(lambda v: F.ctc_loss(v, genesis.tensor(targets[:2]), genesis.tensor(il[:2]),
                                           genesis.tensor(tl[:2]), reduction="sum"), [x], eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss_infeasible_and_zero_infinity_match_torch(reduction):
    logits, targets, il, tl = _ctc_case(T=6, N=3, C=4, S=3, seed=2)
    il = np.array([2, 6, 6])  # the first sequence cannot hold its 3 labels (one repeated): infinite loss
    tl[0] = 3
    if reduction == "none":
        g = F.ctc_loss(genesis.tensor(logits).log_softmax(2), genesis.tensor(targets), genesis.tensor(il),
                       genesis.tensor(tl), reduction="none")
        t = TF.ctc_loss(torch.tensor(logits).log_softmax(2), torch.tensor(targets), torch.tensor(il),
                        torch.tensor(tl), reduction="none")
        assert math.isinf(g.tolist()[0]) and math.isinf(t.tolist()[0])
        close(g[1:], t[1:])
    _check(lambda x: F.ctc_loss(x.log_softmax(2), genesis.tensor(targets), genesis.tensor(il), genesis.tensor(tl),
                                reduction=reduction, zero_infinity=True),
           lambda x: TF.ctc_loss(x.log_softmax(2), torch.tensor(targets), torch.tensor(il), torch.tensor(tl),
                                 reduction=reduction, zero_infinity=True), [(logits, True)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss_unbatched_and_long_sequences_match_torch(reduction):
    logits, targets, il, tl = _ctc_case(T=40, N=2, C=6, S=10, seed=3)
    _check(lambda x: F.ctc_loss(x.log_softmax(1), genesis.tensor(targets[0]), genesis.tensor(40),
                                genesis.tensor(10), reduction=reduction),
           lambda x: TF.ctc_loss(x.log_softmax(1), torch.tensor(targets[0]), torch.tensor(40), torch.tensor(10),
                                 reduction=reduction), [(logits[:, 0], True)])
    _check(lambda x: F.ctc_loss(x.log_softmax(2), genesis.tensor(targets), genesis.tensor(il), genesis.tensor(tl),
                                reduction=reduction),
           lambda x: TF.ctc_loss(x.log_softmax(2), torch.tensor(targets), torch.tensor(il), torch.tensor(tl),
                                 reduction=reduction), [(logits, True)])


def test_ctc_loss_errors_match_torch():
    lp = np.log(np.full((6, 2, 5), 0.2))
    tg = np.array([[1, 2, 3], [1, 1, 0]])

    def both(args, exc, msg, **kw):
        conv = [(lambda a: torch.tensor(a)), (lambda a: genesis.tensor(a))]
        for mod, c in zip((TF, F), conv):
            with pytest.raises(exc, match=msg):
                mod.ctc_loss(*[c(a) for a in args], **kw)

    both((lp, tg, [7, 6], [1, 2]), RuntimeError, "Expected input_lengths to have value at most 6, but got value 7")
    both((lp, tg, [6, 6], [4, 2]), RuntimeError,
         "Expected tensor to have size at least 4 at dimension 1, but got size 3")
    both((lp, np.array([1, 2, 3, 1, 1]), [6, 6], [4, 2]), RuntimeError,
         "Expected tensor to have size 6 at dimension 0, but got size 5")
    both((lp, tg[:1], [6, 6], [1, 2]), RuntimeError, "Expected tensor to have size 2 at dimension 0, but got size 1")
    both((lp, tg, [6], [1, 2]), RuntimeError, "input_lengths must be of size batch_size")
    both((lp, tg, [6, 6], [1]), RuntimeError, "target_lengths must be of size batch_size")
    both((lp, tg, [6, 6], [1, 2]), RuntimeError, "blank must be in label range", blank=5)
    both((lp, tg, np.array([6.0, 6.0]), [1, 2]), RuntimeError, "input_lengths must be integral")
    both((lp[None], tg, [6, 6], [1, 2]), RuntimeError, "Expected 3-dimensional tensor")
    both((lp, tg, [6, 6], [1, 2]), ValueError, "foo is not a valid value for reduction", reduction="foo")


# ---------------------------------------------------------------- normalization

@pytest.mark.parametrize("groups, shape, affine", [(2, (3, 4, 5), True), (1, (2, 6, 3, 2), True),
                                                   (3, (2, 6, 4), False), (6, (2, 6, 2, 3), True), (2, (4, 4), True),
                                                   (4, (2, 8, 2, 2, 2), True)])
def test_group_norm_matches_torch(groups, shape, affine):
    c = shape[1]
    g, t = nn.GroupNorm(groups, c, eps=1e-4, affine=affine).double(), TNN.GroupNorm(groups, c, eps=1e-4, affine=affine)
    t = t.double()
    assert list(g.state_dict()) == list(t.state_dict())
    assert repr(g) == repr(t)
    if affine:
        w, b = np.random.randn(c), np.random.randn(c)
        g.load_state_dict({"weight": genesis.tensor(w), "bias": genesis.tensor(b)})
        t.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b)})
    a = np.random.randn(*shape) * 2 + 1
    _check(g, t, [(a, True)], [g.weight, g.bias] if affine else [], [t.weight, t.bias] if affine else [])
    # functional, weight only
    w = np.random.randn(c)
    _check(lambda x, ww: F.group_norm(x, groups, ww), lambda x, ww: TF.group_norm(x, groups, ww),
           [(a, True), (w, True)])


@pytest.mark.parametrize("cls, shape", [("InstanceNorm1d", (3, 4, 5)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                        ("InstanceNorm3d", (2, 3, 2, 3, 2)), ("InstanceNorm1d", (4, 6)),
                                        ("InstanceNorm2d", (3, 4, 5))])
@pytest.mark.parametrize("affine, track", [(False, False), (True, False), (False, True), (True, True)])
def test_instance_norm_matches_torch(cls, shape, affine, track):
    batched = len(shape) == {"InstanceNorm1d": 3, "InstanceNorm2d": 4, "InstanceNorm3d": 5}[cls]
    c = shape[1] if batched else shape[0]
    g = getattr(nn, cls)(c, eps=1e-3, momentum=0.3, affine=affine, track_running_stats=track).double()
    t = getattr(TNN, cls)(c, eps=1e-3, momentum=0.3, affine=affine, track_running_stats=track).double()
    assert list(g.state_dict()) == list(t.state_dict())
    assert repr(g) == repr(t)
    if affine:
        w, b = np.random.randn(c), np.random.randn(c)
        with genesis.no_grad():
            g.weight.copy_(genesis.tensor(w))
            g.bias.copy_(genesis.tensor(b))
        with torch.no_grad():
            t.weight.copy_(torch.tensor(w))
            t.bias.copy_(torch.tensor(b))
    gp = [g.weight, g.bias] if affine else []
    tp = [t.weight, t.bias] if affine else []
    for step in range(2):  # two training steps: the running statistics move
        _check(g, t, [(np.random.randn(*shape) * 3 + 2, True)], gp, tp)
        for (k, gb), (tk, tb) in zip(g.named_buffers(), t.named_buffers()):
            assert k == tk
            close(gb, tb)
        for p in gp + tp:
            p.grad = None
    g.eval()
    t.eval()
    _check(g, t, [(np.random.randn(*shape), True)], gp, tp)


def test_instance_norm_functional_matches_torch():
    a = np.random.randn(2, 3, 6)
    rm, rv = np.random.randn(3), np.random.rand(3) + 0.5
    w, b = np.random.randn(3), np.random.randn(3)
    _check(lambda x, ww, bb: F.instance_norm(x, weight=ww, bias=bb),
           lambda x, ww, bb: TF.instance_norm(x, weight=ww, bias=bb), [(a, True), (w, True), (b, True)])
    _check(lambda x: F.instance_norm(x, genesis.tensor(rm), genesis.tensor(rv), use_input_stats=False, eps=0.1),
           lambda x: TF.instance_norm(x, torch.tensor(rm), torch.tensor(rv), use_input_stats=False, eps=0.1),
           [(a, True)])
    grm, trm, grv, trv = genesis.tensor(rm), torch.tensor(rm), genesis.tensor(rv), torch.tensor(rv)
    _check(lambda x: F.instance_norm(x, grm, grv, momentum=0.5), lambda x: TF.instance_norm(x, trm, trv, momentum=0.5),
           [(a, True)])
    close(grm, trm)
    close(grv, trv)


def test_normalization_errors_match_torch():
    def both(g_fn, t_fn, exc, msg):
        with pytest.raises(exc, match=msg):
            t_fn()
        with pytest.raises(exc, match=msg):
            g_fn()

    both(lambda: F.group_norm(m_x(F, (2, 6, 4)), 4), lambda: TF.group_norm(m_x(TF, (2, 6, 4)), 4), RuntimeError,
         r"divisible by num_groups, but got input of shape \[2, 6, 4\] and num_groups=4")
    both(lambda: nn.GroupNorm(4, 6), lambda: TNN.GroupNorm(4, 6), ValueError, "num_channels must be divisible")
    both(lambda: F.group_norm(m_x(F, (2, 6, 4)), 3, m_x(F, (5,))),
         lambda: TF.group_norm(m_x(TF, (2, 6, 4)), 3, m_x(TF, (5,))), RuntimeError,
         r"Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape "
         r"\[5\]")
    both(lambda: F.group_norm(m_x(F, (1, 2)), 2), lambda: TF.group_norm(m_x(TF, (1, 2)), 2), ValueError,
         "Expected more than 1 value per channel when training")
    both(lambda: F.group_norm(m_x(F, (6,)), 3), lambda: TF.group_norm(m_x(TF, (6,)), 3), IndexError,
         "Dimension out of range")
    both(lambda: nn.InstanceNorm1d(3)(m_x(F, (2, 3, 4, 5))), lambda: TNN.InstanceNorm1d(3)(m_x(TF, (2, 3, 4, 5))),
         ValueError, r"expected 2D or 3D input \(got 4D input\)")
    both(lambda: nn.InstanceNorm2d(3)(m_x(F, (2, 3))), lambda: TNN.InstanceNorm2d(3)(m_x(TF, (2, 3))),
         ValueError, r"expected 3D or 4D input \(got 2D input\)")
    both(lambda: nn.InstanceNorm1d(3, affine=True)(m_x(F, (2, 4, 5))),
         lambda: TNN.InstanceNorm1d(3, affine=True)(m_x(TF, (2, 4, 5))), RuntimeError, "weight should contain")
    both(lambda: F.instance_norm(m_x(F, (2, 4, 1))), lambda: TF.instance_norm(m_x(TF, (2, 4, 1))), ValueError,
         "Expected more than 1 spatial element when training")


# ---------------------------------------------------------------- containers

def _container_net(lib, make):
    """The same net in genesis or torch (lib), parameters from make(shape): a ParameterList, a ParameterDict (keys
    out of order) and an Unflatten."""
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = lib.nn.ParameterList([lib.nn.Parameter(make((2, 3))), make((3,))])
            self.pdict = lib.nn.ParameterDict({"b": make((3,)), "a": lib.nn.Parameter(make((2,)))})
            self.unflat = lib.nn.Unflatten(1, (3, 1))

        def forward(self, x):  # x (N, 2)
            h = x.matmul(self.plist[0]) + self.plist[1] + self.pdict["b"]
            return self.unflat(h * (self.pdict["a"].sum()))
    return Net()


def _gnet():
    return _container_net(genesis, lambda shape: genesis.randn(*shape, dtype=genesis.float64))


def _tnet():
    return _container_net(torch, lambda shape: torch.zeros(*shape, dtype=torch.float64))


def test_parameter_containers_register_with_torchs_names():
    g, t = _gnet(), _tnet()
    assert list(g.state_dict()) == list(t.state_dict()) == ["plist.0", "plist.1", "pdict.a", "pdict.b"]
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert all(isinstance(p, nn.Parameter) for p in g.parameters()) and len(list(g.parameters())) == 4
    t.load_state_dict({k: to_torch(v) for k, v in g.state_dict().items()})
    gp, tp = list(g.parameters()), list(t.parameters())
    _check(g, t, [(np.random.randn(4, 2), True)], gp, tp)
    g2 = _gnet()
    g2.load_state_dict({k: from_torch(v) for k, v in t.state_dict().items()})
    close(g2.plist[0], t.plist[0])
    assert repr(nn.Unflatten(1, (2, 3))) == repr(TNN.Unflatten(1, (2, 3)))


def test_parameter_list_behaves_as_torchs():
    g = nn.ParameterList([genesis.ones(2), nn.Parameter(genesis.zeros(3)), 5])
    t = TNN.ParameterList([torch.ones(2), TNN.Parameter(torch.zeros(3)), 5])
    assert len(g) == len(t) == 3 and g[2] == 5 and g[-1] == 5
    assert type(g[0]) is nn.Parameter and list(g.state_dict()) == list(t.state_dict()) == ["0", "1"]
    assert [tuple(p.shape) for p in g.parameters()] == [tuple(p.shape) for p in t.parameters()]
    g.append(genesis.ones(4))
    g += [genesis.ones(5)]
    g.extend([genesis.ones(6)])
    assert len(g) == 6 and list(g.state_dict()) == ["0", "1", "3", "4", "5"]
    sl = g[3:5]
    assert isinstance(sl, nn.ParameterList) and [tuple(p.shape) for p in sl] == [(4,), (5,)]
    assert sl[0] is g[3]
    g[0] = genesis.zeros(7)
    assert tuple(g[0].shape) == (7,) and isinstance(g[0], nn.Parameter)
    with pytest.raises(IndexError, match="index 6 is out of range"):
        g[6]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        g.extend(genesis.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        g(1)
    assert repr(nn.ParameterList([genesis.ones(2, 3)])).splitlines()[1].startswith("    (0): Parameter containing: [")


def test_parameter_dict_behaves_as_torchs():
    g = nn.ParameterDict({"b": genesis.ones(2), "a": genesis.zeros(3)})
    t = TNN.ParameterDict({"b": torch.ones(2), "a": torch.zeros(3)})
    assert list(g.keys()) == list(t.keys()) == ["a", "b"]  # a plain dict is taken in sorted order, as torch
    g.update([("z", genesis.ones(1)), ("c", genesis.ones(2))])
    t.update([("z", torch.ones(1)), ("c", torch.ones(2))])
    assert list(g) == list(t) and list(g.state_dict()) == list(t.state_dict())
    from collections import OrderedDict
    g.update(OrderedDict([("y", genesis.ones(1)), ("x", genesis.ones(1))]))
    assert list(g)[-2:] == ["y", "x"]
    assert "y" in g and g.get("nope") is None and g.get("nope", 3) == 3
    popped = g.pop("y")
    assert tuple(popped.shape) == (1,) and "y" not in g and "y" not in dict(g.named_parameters())
    k, v = g.popitem()
    assert k == "x" and len(g) == 4
    assert g.setdefault("w", genesis.ones(2)) is g["w"] and isinstance(g["w"], nn.Parameter)
    merged = g | nn.ParameterDict({"q": genesis.ones(1)})
    assert list(merged)[-1] == "q" and "q" not in g
    del g["w"]
    assert "w" not in g and len(list(g.parameters())) == 4
    assert list(g.fromkeys(["m", "n"], genesis.ones(1)).keys()) == ["m", "n"]
    with pytest.raises(TypeError, match="not a string"):
        g[1]
    with pytest.raises(RuntimeError, match="ParameterDict should not be called"):
        g(1)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        g.update([("a", 1, 2)])
    g.clear()
    assert len(g) == 0 and not list(g.parameters())


def test_unflatten_matches_torch():
    a = np.random.randn(2, 12, 3)
    for dim, sizes in ((1, (3, 4)), (1, [2, -1, 3]), (-1, (3, 1)), (0, (1, 2))):
        _check(nn.Unflatten(dim, sizes), TNN.Unflatten(dim, sizes), [(a, True)])
    for make in (lambda m: m.Unflatten(1, (5, 2)), lambda m: m.Unflatten(1, (5, -1))):
        with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[5, "):
            make(TNN)(torch.tensor(a))
        with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[5, "):
            make(nn)(genesis.tensor(a))
    for mod in (TNN, nn):
        with pytest.raises(TypeError, match="must be tuple of ints, but found element of type float at pos 1"):
            mod.Unflatten(1, (2, 1.5))
        with pytest.raises(TypeError, match="must be a tuple of ints, but found type int"):
            mod.Unflatten(1, 6)
        with pytest.raises(IndexError, match="Dimension out of range"):
            mod.Unflatten(5, (2, 6))(torch.tensor(a) if mod is TNN else genesis.tensor(a))


# ---------------------------------------------------------------- nn.init

def _trunc_cdf(x, mean, std, a, b):
    phi = lambda v: 0.5 * (1 + math.erf((v - mean) / (std * math.sqrt(2))))  # noqa: E731
    return (phi(x) - phi(a)) / (phi(b) - phi(a))


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (1.0, 0.5, 0.0, 3.0), (0.0, 0.02, -0.04, 0.04),
                                             (0.0, 1.0, 2.5, 3.5), (0.0, 1.0, -4.0, -3.0)])
@pytest.mark.parametrize("dtype", [genesis.float64, genesis.float32])
def test_trunc_normal_draws_the_truncated_normal(mean, std, a, b, dtype):
    n = 40000
    t = genesis.empty(200, n // 200, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = nn.init.trunc_normal_(t, mean, std, a, b)
    assert out is t
    x = np.sort(t.numpy().astype(np.float64).ravel())
    assert x.min() >= a and x.max() <= b
    # Kolmogorov-Smirnov against the exact CDF (1.95 / sqrt(n): the 0.1% level)
    cdf = np.array([_trunc_cdf(v, mean, std, a, b) for v in x])
    ks = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert ks < 1.95 / math.sqrt(n), ks
    # reproducible from the default generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        genesis.manual_seed(5)
        first = nn.init.trunc_normal_(genesis.empty(50, dtype=dtype), mean, std, a, b).numpy().copy()
        genesis.manual_seed(5)
        again = nn.init.trunc_normal_(genesis.empty(50, dtype=dtype), mean, std, a, b).numpy()
    np.testing.assert_array_equal(first, again)


def test_trunc_normal_warnings_and_errors_match_torch():
    for mod, make in ((TNN.init, lambda: torch.empty(3)), (nn.init, lambda: genesis.empty(3))):
        with pytest.warns(UserWarning, match="mean is more than 2 std from"):
            mod.trunc_normal_(make(), mean=5.0)
        with pytest.raises(RuntimeError, match=r"from=0.9545 > to=-0.9545"):
            mod.trunc_normal_(make(), a=2.0, b=-2.0)
    p = nn.Parameter(genesis.zeros(4, 4))
    nn.init.trunc_normal_(p, std=0.02)  # on a parameter that requires grad: no autograd record
    assert p.requires_grad and p.grad_fn is None and float(p.abs().max()) <= 2.0


def test_orthogonal_matches_torchs_qr_and_is_orthogonal():
    from genesis.nn.init import _orthonormal_rows
    for rows, cols in ((7, 4), (70, 45)):  # the second crosses the blocks of rows
        m = np.random.randn(rows, cols)
        q, r = torch.linalg.qr(torch.tensor(m))
        expected = q * torch.sign(torch.diagonal(r))
        close(_orthonormal_rows(genesis.tensor(m.T.copy())).t(), expected)
    for shape, gain in (((6, 3), 1.0), ((3, 6), 2.0), ((4, 2, 3), 0.5), ((5, 5), 1.0)):
        t = nn.init.orthogonal_(genesis.empty(*shape, dtype=genesis.float64), gain=gain)
        flat = t.numpy().reshape(shape[0], -1)
        gram = flat @ flat.T if shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(gram, gain ** 2 * np.eye(gram.shape[0]), atol=1e-12)
    for mod, make in ((TNN.init, torch.empty), (nn.init, genesis.empty)):
        with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
            mod.orthogonal_(make(3))


def test_eye_and_dirac_match_torch():
    for shape in ((3, 5), (4, 2)):
        close(nn.init.eye_(genesis.empty(*shape, dtype=genesis.float64)),
              TNN.init.eye_(torch.empty(*shape, dtype=torch.float64)))
    for shape, groups in (((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 4, 1, 3, 2), 2), ((2, 5, 3), 1)):
        close(nn.init.dirac_(genesis.empty(*shape, dtype=genesis.float64), groups),
              TNN.init.dirac_(torch.empty(*shape, dtype=torch.float64), groups))
    for mod, make in ((TNN.init, torch.empty), (nn.init, genesis.empty)):
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            mod.eye_(make(3))
        with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
            mod.dirac_(make(3, 3))
        with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
            mod.dirac_(make(3, 3, 3), groups=2)
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            mod.sparse_(make(3), 0.5)


def test_sparse_zeroes_the_share_of_every_column():
    t = nn.init.sparse_(genesis.empty(40, 300, dtype=genesis.float64), sparsity=0.3, std=0.5)
    x = t.numpy()
    assert ((x == 0).sum(0) == 12).all()  # ceil(0.3 * 40) per column
    nz = x[x != 0]
    assert abs(nz.std() - 0.5) < 0.02 and abs(nz.mean()) < 0.02


def test_deprecated_init_aliases_warn_as_torch():
    t = genesis.empty(3, 4)
    with pytest.warns(UserWarning, match=r"nn.init.xavier_uniform is now deprecated in favor of "
                                         r"nn.init.xavier_uniform_"):
        assert nn.init.xavier_uniform(t) is not None
    with pytest.warns(UserWarning, match="nn.init.constant is now deprecated"):
        nn.init.constant(t, 0.5)
    assert float(t.sum()) == 6.0


# ---------------------------------------------------------------- finite differences

def _away_from_kinks(*shape):
    return np.random.choice([-1.0, 1.0], shape) * np.random.uniform(0.2, 2.7, shape)


GRADCHECKS = {
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [(3, 4)]),
    "prelu": (lambda x, w: F.prelu(x, w), [(2, 3, 4), (3,)]),
    "elu_selu_celu": (lambda x: F.elu(x, 0.7) + F.selu(x) + F.celu(x, 1.3), [(3, 4)]),
    "softplus_mish": (lambda x: F.softplus(x, 2, 3) + F.mish(x), [(3, 4)]),
    "hard_functions": (lambda x: F.hardswish(x * 1.5) + F.hardsigmoid(x) + F.hardtanh(x, -1.5, 2.0) + F.relu6(x * 3),
                       [(3, 4)]),
    "glu_softsign_tanhshrink_logsigmoid": (lambda x: F.glu(x, 1).sum(1, keepdim=True) + F.softsign(x)
                                           + F.tanhshrink(x) + F.logsigmoid(x), [(3, 4)]),
    "shrinks_threshold_softmin": (lambda x: F.softshrink(x, 0.1) + F.hardshrink(x, 0.1) + F.threshold(x, 0.1, 2.0)
                                  + F.softmin(x, 1), [(3, 4)]),
    "normalize_cosine_pairwise": (lambda a, b: F.normalize(a, 3.0, 1) + F.cosine_similarity(a, b).unsqueeze(1)
                                  + F.pairwise_distance(a, b, 1.5).unsqueeze(1), [(3, 4), (3, 4)]),
    "regression_losses": (lambda x, y: F.smooth_l1_loss(x, y, reduction="none", beta=0.7)
                          + F.huber_loss(x, y, reduction="none", delta=0.8)
                          + F.soft_margin_loss(x, y, reduction="none"), [(3, 4), (3, 4)]),
    "kl_div": (lambda x, y: F.kl_div(x, y.abs(), reduction="batchmean") + F.kl_div(x, y, reduction="sum",
                                                                                 log_target=True), [(3, 4), (3, 4)]),
    "embedding_losses": (lambda a, b, n: F.cosine_embedding_loss(a, b, genesis.tensor([1.0, -1.0, 1.0]), -0.9)
                         + F.margin_ranking_loss(a[:, 0], b[:, 0], genesis.tensor([1.0, -1.0, -1.0]), 5.0)
                         + F.triplet_margin_loss(a, b, n, margin=20.0, p=3, swap=True), [(3, 4), (3, 4), (3, 4)]),
    "nll_losses": (lambda x, y, v: F.poisson_nll_loss(x, y.abs() * 2, full=True)
                   + F.gaussian_nll_loss(x, y, v.abs()), [(3, 4), (3, 4), (3, 4)]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [(2, 3, 5), (3,), (3,)]),
    "rrelu_pdist_lrn": (lambda x: F.rrelu(x).sum(1) + F.pdist(x, 1.5)[:3] + F.local_response_norm(x.reshape(3, 4, 1), 3,
                                                                                          0.5).sum((1, 2)), [(3, 4)]),
    "margin_losses": (lambda x: F.multi_margin_loss(x, genesis.tensor([0, 3, 1]), 2, 5.0, reduction="none")
                      + F.multilabel_margin_loss(x * 0.1, genesis.tensor([[1, 2, -1, 0], [3, -1, 0, 0], [0, 1, 2, 3]]),
                                                 reduction="none"), [(3, 4)]),
    "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [(4, 3, 2), (3,), (3,)]),
    "ctc_loss": (lambda lp: F.ctc_loss(lp.log_softmax(2), genesis.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2],
                                       reduction="none"), [(6, 2, 4)]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradcheck_composites(name):
    fn, shapes = GRADCHECKS[name]
    inputs = [genesis.tensor(_away_from_kinks(*s), requires_grad=True) for s in shapes]
    assert genesis.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------- rrelu, softmax2d, pdist, margin losses, lrn,
# batch_norm

def test_rrelu_and_softmax2d_match_torch():
    a = _act_input((4, 5), SPECIALS)
    _check(lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3), [(a, True)])
    _check(nn.RReLU().eval(), TNN.RReLU().eval(), [(a, True)])
    assert repr(nn.RReLU(0.1, 0.3)) == repr(TNN.RReLU(0.1, 0.3))
    assert repr(nn.RReLU(inplace=True)) == repr(TNN.RReLU(inplace=True))
    # training: a slope in [lower, upper] per negative element, and that slope as the gradient
    x = genesis.tensor(a, requires_grad=True)
    y = nn.RReLU(0.1, 0.3)(x)
    y.sum().backward()
    with np.errstate(invalid="ignore"):
        ratio, grad = (y.detach().numpy() / a), x.grad.numpy()
    neg = a < 0
    assert ((ratio[neg] >= 0.1) & (ratio[neg] <= 0.3)).all() and np.unique(ratio[neg]).size == neg.sum()
    np.testing.assert_allclose(grad[neg], ratio[neg], rtol=1e-12)
    assert (grad[a > 0] == 1).all() and (y.detach().numpy()[a > 0] == a[a > 0]).all()
    g = genesis.tensor(a.copy())
    assert F.relu_(g) is g
    close(g, TF.relu_(torch.tensor(a.copy())))
    for shape in ((2, 3, 4, 5), (3, 4, 5)):
        _check(nn.Softmax2d(), TNN.Softmax2d(), [(np.random.randn(*shape), True)])
    for mod, m in ((TNN, TF), (nn, F)):
        with pytest.raises(AssertionError, match="Softmax2d requires a 3D or 4D tensor as input"):
            mod.Softmax2d()(m_x(m, (2, 3)))
        with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
            m.rrelu(m_x(m, (3,)), 0.3, 0.1, training=True)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_pdist_matches_torch(p):
    a = np.random.randn(6, 4)
    _check(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), [(a, True)])
    assert tuple(F.pdist(genesis.randn(1, 3)).shape) == tuple(TF.pdist(torch.randn(1, 3)).shape) == (0,)
    for m in (TF, F):
        with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
            m.pdist(m_x(m, (3,)))
        with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
            m.pdist(m_x(m, (3, 2)), -1.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_losses_match_torch(reduction):
    x, y = np.random.randn(5, 4), np.random.randint(0, 4, 5)
    w = np.random.rand(4) + 0.5
    for p, margin, weighted in ((1, 1.0, False), (2, 0.7, True), (1, 2.0, True)):
        def g_fn(a, ww):
            return F.multi_margin_loss(a, genesis.tensor(y), p, margin, ww if weighted else None, reduction=reduction)

        def t_fn(a, ww):
            return TF.multi_margin_loss(a, torch.tensor(y), p, margin, ww if weighted else None, reduction=reduction)

        _check(g_fn, t_fn, [(x, True), (w, False)])  # torch has no gradient for weight
    _check(lambda a: nn.MultiMarginLoss(2, reduction=reduction)(a, genesis.tensor(3)),
           lambda a: TNN.MultiMarginLoss(2, reduction=reduction)(a, torch.tensor(3)), [(x[0], True)])
    wg, wt = nn.MultiMarginLoss(weight=genesis.tensor(w)), TNN.MultiMarginLoss(weight=torch.tensor(w))
    assert list(wg.state_dict()) == list(wt.state_dict()) == ["weight"]
    # multilabel: targets up to the first -1, a repeated target counted twice, as torch
    t = np.array([[3, 0, -1, 1], [2, 2, 1, -1], [-1, 0, 1, 2], [0, 1, 2, 3], [1, -1, -1, -1]])
    _check(lambda a: F.multilabel_margin_loss(a, genesis.tensor(t), reduction=reduction),
           lambda a: TF.multilabel_margin_loss(a, torch.tensor(t), reduction=reduction), [(x, True)])
    _check(lambda a: nn.MultiLabelMarginLoss(reduction=reduction)(a, genesis.tensor(t[0])),
           lambda a: TNN.MultiLabelMarginLoss(reduction=reduction)(a, torch.tensor(t[0])), [(x[0], True)])


def test_multi_margin_loss_errors_match_torch():
    for m in (TF, F):
        with pytest.raises(RuntimeError, match="inconsistent target size"):
            m.multi_margin_loss(m_x(m, (2, 3)), (torch if m is TF else genesis).tensor([1]))
        with pytest.raises(RuntimeError, match="target out of range"):
            m.multi_margin_loss(m_x(m, (2, 3)), (torch if m is TF else genesis).tensor([1, 3]))
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            m.multi_margin_loss(m_x(m, (2, 3)), (torch if m is TF else genesis).tensor([1, 2]), p=3)
        with pytest.raises(RuntimeError, match="inconsistent size"):
            m.multilabel_margin_loss(m_x(m, (2, 3)), (torch if m is TF else genesis).tensor([1, -1, 0]))
        with pytest.raises(RuntimeError, match="out of range"):
            m.multilabel_margin_loss(m_x(m, (2, 3)), (torch if m is TF else genesis).tensor([[1, 5, 0], [0, 0, 0]]))


@pytest.mark.parametrize("size, shape", [(3, (2, 5, 4)), (2, (2, 6, 3, 3)), (5, (1, 4, 2, 2, 3)), (1, (2, 3, 4))])
def test_local_response_norm_matches_torch(size, shape):
    a = np.random.randn(*shape)
    _check(lambda x: F.local_response_norm(x, size), lambda x: TF.local_response_norm(x, size), [(a, True)])
    _check(nn.LocalResponseNorm(size, 0.1, 0.5, 2.0), TNN.LocalResponseNorm(size, 0.1, 0.5, 2.0), [(a, True)])
    assert repr(nn.LocalResponseNorm(size)) == repr(TNN.LocalResponseNorm(size))
    for m in (TF, F):
        with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
            m.local_response_norm(m_x(m, (2, 3)), 2)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 4)])
def test_batch_norm_functional_matches_torch(shape):
    a = np.random.randn(*shape) * 2 + 1
    rm, rv, w, b = np.random.randn(3), np.random.rand(3) + 0.5, np.random.randn(3), np.random.randn(3)
    grm, grv, trm, trv = genesis.tensor(rm), genesis.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    _check(lambda x, ww, bb: F.batch_norm(x, grm, grv, ww, bb, training=True, momentum=0.3),
           lambda x, ww, bb: TF.batch_norm(x, trm, trv, ww, bb, training=True, momentum=0.3),
           [(a, True), (w, True), (b, True)])
    close(grm, trm)
    close(grv, trv)
    _check(lambda x, ww: F.batch_norm(x, grm, grv, ww, eps=0.1), lambda x, ww: TF.batch_norm(x, trm, trv, ww, eps=0.1),
           [(a, True), (w, True)])
    _check(lambda x: F.batch_norm(x, None, None, training=True), lambda x: TF.batch_norm(x, None, None, training=True),
           [(a, True)])
    # the same as the C++ BatchNorm layers
    layer = (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(3).to(genesis.float64)
    x = genesis.tensor(a)
    close(F.batch_norm(x, None, None, layer.weight, layer.bias, training=True), to_torch(layer(x)))


def test_batch_norm_errors_match_torch():
    for m in (TF, F):
        lib = torch if m is TF else genesis
        with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
            m.batch_norm(m_x(m, (4, 3)), None, None)
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
            m.batch_norm(m_x(m, (1, 3)), None, None, training=True)
        with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 2"):
            m.batch_norm(m_x(m, (4, 3)), lib.zeros(2), lib.ones(2))
        with pytest.raises(RuntimeError, match="weight should contain 3 elements not 2"):
            m.batch_norm(m_x(m, (4, 3)), lib.zeros(3), lib.ones(3), weight=lib.ones(2))
