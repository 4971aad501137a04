"""The Python-level composites (functional, linalg, nn layers written in Python over genesis ops) on a
CUDA device: each case runs forward and backward in float64 on the device and on the CPU (whose results
the other suites check against PyTorch) and must agree to 1e-9. Skips without a CUDA device.

GENESIS_TEST_DEVICE names the device under test (default cuda): `cpu` runs the same cases against
themselves, which checks the cases, not a backend."""
import os

import numpy as np
import pytest

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

DEVICE = os.environ.get("GENESIS_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not genesis.cuda.is_available(), reason="no CUDA device")
F64 = genesis.float64


def spd(a):
    """A symmetric positive definite matrix from any square one (for cholesky and eigh)."""
    return a @ a.transpose(-1, -2) + 4 * genesis.eye(a.shape[-1], dtype=F64, device=a.device)


# name: (function of the inputs, input shapes). Every function returns a tensor or a tuple of
# tensors; all float outputs are compared and their sum of squares is back-propagated.
FUNCTIONS = {
    "einsum": (lambda a, b: genesis.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_trace": (lambda a: genesis.einsum("ii->", a), [(4, 4)]),
    "repeat": (lambda a: a.repeat(2, 1, 3), [(3, 2)]),
    "repeat_interleave": (lambda a: genesis.repeat_interleave(a, 2, dim=1), [(3, 2)]),
    "roll_flip": (lambda a: genesis.flip(genesis.roll(a, 1, 0), [1]), [(4, 3)]),
    "cumsum": (lambda a: genesis.cumsum(a, 1), [(3, 5)]),
    "cumprod": (lambda a: genesis.cumprod(a, 0), [(4, 3)]),
    "logcumsumexp": (lambda a: genesis.logcumsumexp(a, 1), [(3, 6)]),
    "cummax": (lambda a: genesis.cummax(a, 1)[0], [(3, 6)]),
    "floor_divide_remainder": (lambda a, b: (a // (b.abs() + 0.5), a % (b.abs() + 0.5)), [(5,), (5,)]),
    "pad_reflect": (lambda a: F.pad(a, (1, 2), mode="reflect"), [(2, 3, 6)]),
    "pad_constant": (lambda a: F.pad(a, (1, 1, 2, 0), value=0.5), [(2, 3, 4)]),
    "interpolate_bilinear": (lambda a: F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=False),
                             [(1, 2, 3, 4)]),
    "interpolate_nearest": (lambda a: F.interpolate(a, size=(5, 7), mode="nearest"), [(1, 2, 3, 4)]),
    "cdist": (lambda a, b: genesis.cdist(a, b), [(4, 3), (5, 3)]),
    "addmm_outer": (lambda a, b, c: genesis.addmm(a, b, c) + genesis.outer(a[0], a[:, 0]), [(3, 3), (3, 2), (2, 3)]),
    "std_var_mean": (lambda a: genesis.std_mean(a, 1) + genesis.var_mean(a, 0), [(4, 5)]),
    "norm": (lambda a: genesis.linalg.vector_norm(a, 3, dim=1) + genesis.linalg.matrix_norm(a), [(3, 3)]),
    "atan2_hypot": (lambda a, b: genesis.atan2(a, b) + genesis.hypot(a, b), [(6,), (6,)]),
    "asinh_acosh_atanh": (lambda a: genesis.asinh(a) + genesis.acosh(a.abs() + 1.5) + genesis.atanh(a.tanh() * 0.9),
                          [(7,)]),
    "solve": (lambda a, b: genesis.linalg.solve(a + 3 * genesis.eye(3, dtype=F64, device=a.device), b),
              [(3, 3), (3, 2)]),
    "inv_det": (lambda a: (genesis.linalg.inv(spd(a)), genesis.linalg.det(spd(a))), [(3, 3)]),
    "slogdet": (lambda a: genesis.linalg.slogdet(spd(a))[1], [(4, 4)]),
    "cholesky": (lambda a: genesis.linalg.cholesky(spd(a)), [(4, 4)]),
    "qr": (lambda a: genesis.linalg.qr(a), [(5, 3)]),
    "eigh_values": (lambda a: genesis.linalg.eigh(spd(a))[0], [(4, 4)]),
    "svd_values": (lambda a: genesis.linalg.svdvals(a), [(5, 3)]),
    "kthvalue_median": (lambda a: (genesis.kthvalue(a, 2, 1)[0], genesis.median(a, 1)[0]), [(3, 5)]),
    "scatter_reduce": (lambda a, s: a.scatter_reduce(0, genesis.tensor([0, 1, 0, 2, 1], device=a.device), s,
                                                     reduce="sum"), [(3,), (5,)]),
    "leaky_relu_elu_mish": (lambda a: F.leaky_relu(a, 0.1) + F.elu(a) + F.mish(a) + F.hardswish(a), [(9,)]),
    "group_norm": (lambda a: F.group_norm(a, 2), [(2, 4, 3)]),
    "adaptive_avg_pool2d": (lambda a: F.adaptive_avg_pool2d(a, (2, 3)), [(1, 2, 5, 7)]),
    "pixel_shuffle": (lambda a: F.pixel_shuffle(a, 2), [(1, 8, 2, 3)]),
    "smooth_l1_kl": (lambda a, b: F.smooth_l1_loss(a, b) + F.kl_div(a.log_softmax(-1), b.softmax(-1),
                                                                     reduction="batchmean"), [(4, 5), (4, 5)]),
}


def run_function(fn, inputs, device):
    xs = [x.to(device).detach().requires_grad_() for x in inputs]
    out = fn(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    floats = [o for o in outs if o.dtype == F64]
    sum(((o * o).sum() for o in floats), genesis.zeros((), dtype=F64, device=device)).backward()
    return [o.detach().to("cpu").numpy() for o in outs], [x.grad.to("cpu").numpy() for x in xs if x.grad is not None]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_matches_the_cpu(name):
    fn, shapes = FUNCTIONS[name]
    genesis.manual_seed(1)
    inputs = [genesis.randn(s, dtype=F64) for s in shapes]
    got_out, got_grad = run_function(fn, inputs, DEVICE)
    want_out, want_grad = run_function(fn, inputs, "cpu")
    assert len(got_grad) == len(want_grad) > 0
    for g, w in zip(got_out + got_grad, want_out + want_grad):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


# name: (module factory, input shape). The module is built twice from one seed, once per device.
MODULES = {
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1, stride=2), (2, 3, 9)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), (1, 2, 4, 4)),
    "lstm": (lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True), (2, 6, 4)),
    "gru": (lambda: nn.GRU(4, 3, bidirectional=True), (5, 2, 4)),
    "group_norm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "instance_norm": (lambda: nn.InstanceNorm1d(3, affine=True), (2, 3, 7)),
    "adaptive_max_pool": (lambda: nn.AdaptiveMaxPool2d((2, 2)), (1, 3, 5, 6)),
    "upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 3, 3)),
    "transformer_encoder": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                               batch_first=True), (2, 5, 8)),
    "prelu_softplus": (lambda: nn.Sequential(nn.Linear(6, 6), nn.PReLU(), nn.Softplus(beta=2)), (4, 6)),
}


def run_module(factory, x, device):
    genesis.manual_seed(7)
    m = factory().to(F64).to(device)
    xd = x.to(device).detach().requires_grad_()
    out = m(xd)
    out = out[0] if isinstance(out, tuple) else out
    (out * out).sum().backward()
    grads = [p.grad.to("cpu").numpy() for p in m.parameters()]
    return [out.detach().to("cpu").numpy(), xd.grad.to("cpu").numpy()] + grads


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_the_cpu(name):
    factory, shape = MODULES[name]
    genesis.manual_seed(2)
    x = genesis.randn(shape, dtype=F64)
    got, want = run_module(factory, x, DEVICE), run_module(factory, x, "cpu")
    assert len(got) == len(want) >= 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)
