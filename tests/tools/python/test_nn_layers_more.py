"""genesis.nn's convolutions (Conv1d, Conv3d, ConvTranspose1d/2d/3d), pooling (MaxPool1d, AvgPool1d/2d, adaptive
pools), pad / interpolate / pixel shuffle, recurrent layers and cells, MultiheadAttention and the Transformer family
against torch 1.13 in float64: weights copied from the torch module through load_state_dict of its state_dict,
outputs to 1e-10, input and parameter gradients to 1e-7, finite-difference gradchecks, and errors raised as torch
raises them (tests tools/python/genesis/nn/{conv,pooling,sampling,rnn,transformer}.py and layers.py)."""
import copy
import math
import pickle

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from conftest import close, from_torch

TNN = torch.nn
TF = torch.nn.functional
GRAD = dict(rtol=1e-7, atol=1e-7)


def _load(g_mod, t_mod):
    """float64 genesis module with torch's names, order and values (through load_state_dict)."""
    g_mod.to(genesis.float64)
    t_mod.double()
    assert [n for n, _ in g_mod.named_parameters()] == [n for n, _ in t_mod.named_parameters()]
    sd = t_mod.state_dict()
    assert list(g_mod.state_dict()) == list(sd)
    g_mod.load_state_dict({k: from_torch(v) for k, v in sd.items()})
    return g_mod, t_mod


def _rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _outputs(y):
    """Flattens nested tuples of outputs into a list (None dropped)."""
    if y is None:
        return []
    if isinstance(y, (tuple, list)):
        return [t for e in y for t in _outputs(e)]
    return [y]


def _compare(g_fn, t_fn, inputs, g_mod=None, t_mod=None, grad_inputs=None):
    """Runs both on copies of the torch inputs, compares every output, then backward of a random weighting of
    the floating outputs and every input and parameter gradient."""
    t_in = [x.clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs]
    g_in = [from_torch(x, requires_grad=x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs]
    t_out, g_out = _outputs(t_fn(*t_in)), _outputs(g_fn(*g_in))
    assert len(t_out) == len(g_out)
    t_loss, g_loss = 0, None
    for g, t in zip(g_out, t_out):
        if not t.is_floating_point():
            assert tuple(g.shape) == tuple(t.shape) and g.tolist() == t.tolist()
            continue
        close(g, t)
        w = _rand(*t.shape)
        t_loss = t_loss + (t * w).sum()
        term = (g * from_torch(w)).sum()
        g_loss = term if g_loss is None else g_loss + term
    t_loss.backward()
    g_loss.backward()
    for i, (g, t) in enumerate(zip(g_in, t_in)):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and (grad_inputs is None or i in grad_inputs):
            close(g.grad, t.grad, **GRAD)
    if g_mod is not None:
        t_params = dict(t_mod.named_parameters())
        for name, p in g_mod.named_parameters():
            close(p.grad, t_params[name].grad, **GRAD)
    return g_out, t_out


def _module_case(g_mod, t_mod, *inputs, call=None):
    g_mod, t_mod = _load(g_mod, t_mod)
    call = call or (lambda m, *xs: m(*xs))
    return _compare(lambda *xs: call(g_mod, *xs), lambda *xs: call(t_mod, *xs), list(inputs), g_mod, t_mod)


def _raises_like(g_call, t_call):
    """Both raise; genesis raises torch's exception type."""
    with pytest.raises(Exception) as t_err:
        t_call()
    with pytest.raises(t_err.type):
        g_call()


# ---------------------------------------------------------------- convolution

CONV1D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=3, padding=2, dilation=2),
    dict(groups=2, padding=1, bias=False),
    dict(groups=4, dilation=3),
    dict(padding="same", dilation=2),
    dict(padding="same", kernel_size=4),
    dict(padding="valid", stride=2),
    dict(padding=2, padding_mode="reflect"),
    dict(padding=1, padding_mode="replicate", stride=2),
    dict(padding=3, padding_mode="circular"),
    dict(padding="same", padding_mode="reflect", kernel_size=4),
]


@pytest.mark.parametrize("kw", CONV1D, ids=range(len(CONV1D)))
def test_conv1d_matches_torch(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    _module_case(nn.Conv1d(4, 8, k, **kw), TNN.Conv1d(4, 8, k, **kw), _rand(2, 4, 13))


CONV3D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(1, 2, 3), padding=(2, 0, 1), dilation=(2, 1, 2)),
    dict(groups=2, bias=False, padding=1),
    dict(padding="same", kernel_size=(2, 3, 4)),
    dict(padding=1, padding_mode="replicate"),
    dict(padding=(1, 2, 1), padding_mode="circular", stride=2),
]


@pytest.mark.parametrize("kw", CONV3D, ids=range(len(CONV3D)))
def test_conv3d_matches_torch(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    _module_case(nn.Conv3d(4, 6, k, **kw), TNN.Conv3d(4, 6, k, **kw), _rand(2, 4, 6, 7, 8))


CONVT = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=3, padding=2, output_padding=2, bias=False),
    dict(groups=2, stride=2, dilation=2, output_padding=1),
    dict(dilation=3, padding=4),
    dict(groups=4, padding=1),
]


@pytest.mark.parametrize("kw", CONVT, ids=range(len(CONVT)))
def test_conv_transpose1d_matches_torch(kw):
    _module_case(nn.ConvTranspose1d(4, 8, 3, **kw), TNN.ConvTranspose1d(4, 8, 3, **kw), _rand(2, 4, 7))


@pytest.mark.parametrize("kw", CONVT + [dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2))],
                         ids=range(len(CONVT) + 1))
def test_conv_transpose2d_matches_torch(kw):
    _module_case(nn.ConvTranspose2d(4, 8, (3, 2), **kw), TNN.ConvTranspose2d(4, 8, (3, 2), **kw), _rand(2, 4, 5, 6))


def test_conv_transpose_output_size_and_3d_match_torch():
    _module_case(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), TNN.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
                 _rand(2, 3, 4, 5), call=lambda m, x: m(x, output_size=[8, 10]))
    _module_case(nn.ConvTranspose1d(3, 2, 3, stride=3), TNN.ConvTranspose1d(3, 2, 3, stride=3), _rand(3, 4),
                 call=lambda m, x: m(x, output_size=(2, 14)))  # unbatched, (C, L) given
    _module_case(nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                                    groups=2),
                 TNN.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                                     groups=2), _rand(2, 4, 3, 4, 3))


def test_conv_functional_forms_and_unbatched_inputs_match_torch():
    _compare(lambda x, w, b: F.conv1d(x, w, b, 2, 1), lambda x, w, b: TF.conv1d(x, w, b, 2, 1),
             [_rand(3, 11), _rand(5, 3, 3), _rand(5)])
    _compare(lambda x, w: F.conv3d(x, w, None, 1, "same", 2), lambda x, w: TF.conv3d(x, w, None, 1, "same", 2),
             [_rand(2, 4, 5, 6), _rand(3, 2, 2, 3, 3)])
    _compare(lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 3, 1),
             lambda x, w: TF.conv_transpose2d(x, w, None, 2, 1, 1, 3, 1), [_rand(6, 4, 3), _rand(6, 2, 3, 3)])
    _compare(lambda x, w, b: F.conv_transpose1d(x, w, b, 1, 5, 0, 1, 2),
             lambda x, w, b: TF.conv_transpose1d(x, w, b, 1, 5, 0, 1, 2), [_rand(2, 3, 9), _rand(3, 2, 4), _rand(2)])


def test_conv_initialisation_and_names_follow_torch():
    genesis.manual_seed(3)
    for g, t in ((nn.Conv1d(6, 4, 5, groups=2), TNN.Conv1d(6, 4, 5, groups=2)),
                 (nn.Conv3d(3, 4, (2, 3, 1)), TNN.Conv3d(3, 4, (2, 3, 1))),
                 (nn.ConvTranspose2d(6, 9, 3, groups=3), TNN.ConvTranspose2d(6, 9, 3, groups=3))):
        shapes = {k: tuple(v.shape) for k, v in g.state_dict().items()}
        assert shapes == {k: tuple(v.shape) for k, v in t.state_dict().items()}
        fan_in = t.weight.shape[1] * math.prod(t.weight.shape[2:])
        bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and the bias share it
        for p in (g.weight, g.bias):
            a = np.abs(p.detach().numpy())
            assert a.max() <= bound and a.max() > 0.5 * bound
    assert repr(nn.Conv1d(2, 4, 3, stride=2, padding=1, bias=False)) == repr(
        TNN.Conv1d(2, 4, 3, stride=2, padding=1, bias=False))


def test_conv_errors_like_torch():
    for kw in (dict(groups=3), dict(padding="same", stride=2), dict(padding="full"), dict(padding_mode="mirror"),
               dict(groups=0)):
        _raises_like(lambda: nn.Conv1d(4, 6, 3, **kw), lambda: TNN.Conv1d(4, 6, 3, **kw))
    _raises_like(lambda: nn.ConvTranspose1d(4, 6, 3, padding_mode="reflect"),
                 lambda: TNN.ConvTranspose1d(4, 6, 3, padding_mode="reflect"))
    x, w = _rand(2, 5, 10), _rand(4, 3, 3)
    cases = [
        ("conv1d", (x, w)),  # channel mismatch
        ("conv1d", (x.unsqueeze(0), _rand(4, 5, 3))),  # 4-D input
        ("conv1d", (x, _rand(4, 5, 11))),  # kernel larger than the input
        ("conv1d", (x, _rand(4, 5, 3), _rand(3))),  # bias size
        ("conv1d", (x, _rand(3, 1, 3), None, 1, 0, 1, 5)),  # fewer filters than groups
        ("conv3d", (_rand(1, 2, 3, 4, 5), _rand(4, 2, 4, 3, 3))),
        ("conv_transpose2d", (_rand(1, 5, 4, 4), _rand(3, 2, 3, 3))),
        ("conv_transpose2d", (_rand(1, 3, 4, 4), _rand(3, 2, 3, 3), None, 2, 0, 2)),  # output_padding >= stride
        ("conv_transpose1d", (_rand(1, 3, 4), _rand(3, 2, 3), None, 1, 5)),  # output too small
    ]
    for name, args in cases:
        _raises_like(lambda: getattr(F, name)(*[from_torch(a) if isinstance(a, torch.Tensor) else a for a in args]),
                     lambda: getattr(TF, name)(*args))
    g, t = nn.ConvTranspose2d(3, 2, 3, stride=2), TNN.ConvTranspose2d(3, 2, 3, stride=2)
    _raises_like(lambda: g(genesis.randn(1, 3, 4, 4), output_size=[20, 20]),
                 lambda: t(torch.randn(1, 3, 4, 4), output_size=[20, 20]))


# ---------------------------------------------------------------- pooling

POOL1D = [
    (3, None, 0, 1, False), (2, 1, 1, 1, False), (3, 2, 1, 2, True), (4, 3, 2, 1, True), (2, 2, 0, 3, False),
]


@pytest.mark.parametrize("k,s,p,d,ceil", POOL1D)
def test_max_pool1d_matches_torch(k, s, p, d, ceil):
    x = _rand(2, 3, 11)
    _module_case(nn.MaxPool1d(k, s, p, d, ceil_mode=ceil), TNN.MaxPool1d(k, s, p, d, ceil_mode=ceil), x)
    _module_case(nn.MaxPool1d(k, s, p, d, return_indices=True, ceil_mode=ceil),
                 TNN.MaxPool1d(k, s, p, d, return_indices=True, ceil_mode=ceil), x)
    _compare(lambda x: F.max_pool1d(x, k, s, p, d, ceil), lambda x: TF.max_pool1d(x, k, s, p, d, ceil), [x[0]])


@pytest.mark.parametrize("k,s,p,d,ceil", POOL1D + [((3, 2), (2, 1), (1, 0), (1, 2), True)])
def test_max_pool2d_with_indices_matches_torch(k, s, p, d, ceil):
    _compare(lambda x: F.max_pool2d_with_indices(x, k, s, p, d, ceil),
             lambda x: TF.max_pool2d(x, k, s, p, d, ceil, return_indices=True), [_rand(2, 3, 9, 10)])


@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("cip", [False, True])
@pytest.mark.parametrize("k,s,p", [(3, None, 1), (2, 3, 1), (4, 3, 2), (3, 2, 0)])
def test_avg_pool1d_and_2d_options_match_torch(k, s, p, ceil, cip):
    _module_case(nn.AvgPool1d(k, s, p, ceil, cip), TNN.AvgPool1d(k, s, p, ceil, cip), _rand(2, 3, 10))
    _module_case(nn.AvgPool2d(k, s, p, ceil, cip), TNN.AvgPool2d(k, s, p, ceil, cip), _rand(2, 3, 10, 9))
    _compare(lambda x: F.avg_pool1d(x, k, s, p, ceil, cip), lambda x: TF.avg_pool1d(x, k, s, p, ceil, cip),
             [_rand(3, 10)])


@pytest.mark.parametrize("out", [1, 3, 4, 7, 10, 13])
def test_adaptive_pool1d_matches_torch(out):
    x = _rand(2, 3, 10)
    _module_case(nn.AdaptiveAvgPool1d(out), TNN.AdaptiveAvgPool1d(out), x)
    _module_case(nn.AdaptiveMaxPool1d(out), TNN.AdaptiveMaxPool1d(out), x)
    _module_case(nn.AdaptiveMaxPool1d(out, return_indices=True), TNN.AdaptiveMaxPool1d(out, return_indices=True), x)


@pytest.mark.parametrize("out", [(1, 1), (3, 4), (4, 3), (5, 7), (10, 7), (13, 2), (None, 3), 6])
def test_adaptive_pool2d_matches_torch(out):
    x = _rand(2, 3, 10, 7)
    _module_case(nn.AdaptiveAvgPool2d(out), TNN.AdaptiveAvgPool2d(out), x)
    _module_case(nn.AdaptiveMaxPool2d(out), TNN.AdaptiveMaxPool2d(out), x)
    _module_case(nn.AdaptiveMaxPool2d(out, return_indices=True), TNN.AdaptiveMaxPool2d(out, return_indices=True), x)
    _compare(lambda x: F.adaptive_avg_pool2d(x, out), lambda x: TF.adaptive_avg_pool2d(x, out), [x[0]])
    _compare(lambda x: F.adaptive_max_pool2d(x, out, True), lambda x: TF.adaptive_max_pool2d(x, out, True), [x[1]])


def test_adaptive_avg_pool3d_matches_torch():
    _module_case(nn.AdaptiveAvgPool3d((2, 4, 3)), TNN.AdaptiveAvgPool3d((2, 4, 3)), _rand(2, 3, 5, 6, 7))


def test_pooling_errors_like_torch():
    x = torch.randn(2, 3, 10)
    cases = [
        (lambda m: m.max_pool1d(x, 3, 1, 2), lambda: F.max_pool1d(from_torch(x), 3, 1, 2)),
        (lambda m: m.max_pool1d(x, 0), lambda: F.max_pool1d(from_torch(x), 0)),
        (lambda m: m.max_pool1d(x, 3, 1, 2, return_indices=True),
         lambda: F.max_pool1d(from_torch(x), 3, 1, 2, return_indices=True)),
        (lambda m: m.avg_pool1d(x, 3, 1, 2), lambda: F.avg_pool1d(from_torch(x), 3, 1, 2)),
        (lambda m: m.avg_pool1d(x, 11), lambda: F.avg_pool1d(from_torch(x), 11)),
        (lambda m: m.max_pool1d(x, 11, return_indices=True), lambda: F.max_pool1d(from_torch(x), 11,
                                                                                  return_indices=True)),
        (lambda m: m.adaptive_avg_pool2d(x[0, 0], 2), lambda: F.adaptive_avg_pool2d(from_torch(x[0, 0]), 2)),
        (lambda m: m.adaptive_avg_pool2d(x, (2, 2, 2)), lambda: F.adaptive_avg_pool2d(from_torch(x), (2, 2, 2))),
        (lambda m: m.adaptive_max_pool2d(x[None], (2, 2, 2)),
         lambda: F.adaptive_max_pool2d(from_torch(x[None]), (2, 2, 2))),
        (lambda m: m.adaptive_max_pool1d(x, (2, 2)), lambda: F.adaptive_max_pool1d(from_torch(x), (2, 2))),
        (lambda m: m.adaptive_avg_pool1d(x[:, :, :0], 2), lambda: F.adaptive_avg_pool1d(from_torch(x[:, :, :0]), 2)),
        (lambda m: m.adaptive_max_pool2d(x[:, :0], 2), lambda: F.adaptive_max_pool2d(from_torch(x[:, :0]), 2)),
    ]
    for t_call, g_call in cases:
        _raises_like(g_call, lambda: t_call(TF))
    close(F.max_pool1d(from_torch(x), 11), TF.max_pool1d(x, 11))  # an empty result, as torch
    close(F.adaptive_avg_pool1d(from_torch(x[:, :0]), 2), TF.adaptive_avg_pool1d(x[:, :0], 2))


# ---------------------------------------------------------------- pad, interpolate, pixel shuffle

PADS = [
    ((2, 3, 7), (2, 3)), ((2, 3, 7), (-2, 3)), ((3, 7), (1, 0)), ((2, 3, 5, 6), (1, 2, 3, 0)),
    ((2, 3, 5, 6), (-1, 2, 3, -2)), ((2, 3, 4, 5, 6), (1, 2, 3, 0, 2, 1)), ((3, 4, 5, 6), (1, 2, 3, 1, 2, 0)),
    ((2, 3, 7), (6, -3)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pads", PADS)
def test_pad_matches_torch(mode, shape, pads):
    if mode == "circular" and len(shape) - 2 != len(pads) // 2:
        pytest.skip("torch pads circularly only the dims after (N, C)")
    if mode == "reflect" and max(pads) >= min(shape[-len(pads) // 2:]):
        pytest.skip("reflection needs padding smaller than the dim")
    if mode == "circular" and pads == (6, -3):  # torch wraps past the cropped dim into memory it never wrote
        with pytest.raises(RuntimeError, match="wrapping around more than once"):
            F.pad(genesis.randn(*shape), pads, mode)
        return
    _compare(lambda x: F.pad(x, pads, mode), lambda x: TF.pad(x, pads, mode), [_rand(*shape)])


def test_pad_constant_any_number_of_dims_and_modules_match_torch():
    _compare(lambda x: F.pad(x, (1, 1, 2, 0, -1, 1, 1, 2), value=2.5),
             lambda x: TF.pad(x, (1, 1, 2, 0, -1, 1, 1, 2), value=2.5), [_rand(2, 3, 4, 5)])
    x = _rand(2, 3, 4, 5, 6)
    for g, t in ((nn.ZeroPad2d((1, 2, 0, 3)), TNN.ZeroPad2d((1, 2, 0, 3))),
                 (nn.ConstantPad1d(2, -1.0), TNN.ConstantPad1d(2, -1.0)),
                 (nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5), TNN.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5)),
                 (nn.ReflectionPad2d(2), TNN.ReflectionPad2d(2)), (nn.ReflectionPad3d(1), TNN.ReflectionPad3d(1)),
                 (nn.ReplicationPad1d((3, 1)), TNN.ReplicationPad1d((3, 1))),
                 (nn.ReplicationPad3d(2), TNN.ReplicationPad3d(2))):
        inp = x if "3d" in type(t).__name__ else x[0] if "2d" in type(t).__name__ else x[0, 0]
        _compare(g, t, [inp])


def test_pad_errors_like_torch():
    x = torch.randn(2, 3, 4, 5)
    for args, kw in [(((1, 1, 1),), {}), (((1,) * 10,), {}), (((5, 1, 1, 1),), dict(mode="reflect")),
                     (((1, 1),), dict(mode="reflect")), (((1, 1),), dict(mode="wrap")),
                     (((1, 1),), dict(mode="reflect", value=1.0)), (((1, 1, 1, 1, 1, 1),), dict(mode="circular")),
                     (((6, 1, 1, 1),), dict(mode="circular")), (((-3, -3),), {})]:
        _raises_like(lambda: F.pad(from_torch(x), *args, **kw), lambda: TF.pad(x, *args, **kw))


INTERP = [
    ((2, 3, 7), "nearest"), ((2, 3, 5, 6), "nearest"), ((2, 1, 5, 6), "nearest"), ((2, 3, 4, 5, 3), "nearest"),
    ((2, 3, 5, 6), "nearest-exact"), ((2, 3, 7), "linear"), ((2, 3, 5, 6), "bilinear"), ((2, 3, 5, 6), "bicubic"),
    ((2, 3, 4, 5, 3), "trilinear"), ((2, 3, 9, 6), "area"), ((2, 3, 9), "area"),
]


@pytest.mark.parametrize("shape,mode", INTERP)
def test_interpolate_matches_torch(shape, mode):
    n = len(shape) - 2
    corners = [False, True] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
    x = _rand(*shape)
    for ac in corners:
        for size in (3, 8, 11, [4, 12, 7][:n], [2 * s for s in shape[2:]]):
            _compare(lambda x: F.interpolate(x, size=size, mode=mode, align_corners=ac),
                     lambda x: TF.interpolate(x, size=size, mode=mode, align_corners=ac), [x])
        for sf in (2, 0.5, 1.7, 3, [2.5, 0.6, 1.6][:n]):
            for rc in (None, True):
                kw = dict(scale_factor=sf, mode=mode, align_corners=ac, recompute_scale_factor=rc)
                _compare(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), [x])


def test_upsample_modules_match_torch():
    x = _rand(2, 3, 4, 5)
    for g, t in ((nn.Upsample(scale_factor=2), TNN.Upsample(scale_factor=2)),
                 (nn.Upsample(size=(7, 3), mode="bilinear"), TNN.Upsample(size=(7, 3), mode="bilinear")),
                 (nn.Upsample(scale_factor=(1.5, 2.5), mode="bicubic", align_corners=True),
                  TNN.Upsample(scale_factor=(1.5, 2.5), mode="bicubic", align_corners=True)),
                 (nn.UpsamplingNearest2d(size=9), TNN.UpsamplingNearest2d(size=9)),
                 (nn.UpsamplingBilinear2d(scale_factor=3), TNN.UpsamplingBilinear2d(scale_factor=3))):
        _compare(g, t, [x])


def test_interpolate_errors_like_torch():
    x = torch.randn(2, 3, 4, 5)
    for kw in (dict(), dict(size=3, scale_factor=2), dict(size=3, align_corners=True), dict(size=[3]),
               dict(scale_factor=[2, 2, 2]), dict(size=3, mode="linear"), dict(size=3, mode="trilinear"),
               dict(size=3, mode="bogus"), dict(size=3, scale_factor=None, recompute_scale_factor=True),
               dict(size=(0, 3))):
        _raises_like(lambda: F.interpolate(from_torch(x), **kw), lambda: TF.interpolate(x, **kw))
    _raises_like(lambda: F.interpolate(from_torch(x[0]), size=3, mode="bilinear"),
                 lambda: TF.interpolate(x[0], size=3, mode="bilinear"))


def test_pixel_shuffle_matches_torch():
    _module_case(nn.PixelShuffle(3), TNN.PixelShuffle(3), _rand(2, 18, 4, 5))
    _module_case(nn.PixelShuffle(2), TNN.PixelShuffle(2), _rand(2, 2, 8, 4, 5))
    _module_case(nn.PixelUnshuffle(2), TNN.PixelUnshuffle(2), _rand(2, 2, 8, 6))
    _module_case(nn.PixelUnshuffle(3), TNN.PixelUnshuffle(3), _rand(3, 6, 9))
    x = _rand(2, 3, 4, 6)
    y = F.pixel_unshuffle(F.pixel_shuffle(from_torch(x), 1), 2)
    close(F.pixel_shuffle(y, 2), x)
    for fn, args in (("pixel_shuffle", (_rand(5, 4), 2)), ("pixel_shuffle", (_rand(1, 5, 2, 2), 2)),
                     ("pixel_unshuffle", (_rand(1, 1, 5, 4), 2)), ("pixel_unshuffle", (_rand(1, 1, 4, 5), 2))):
        _raises_like(lambda: getattr(F, fn)(from_torch(args[0]), args[1]), lambda: getattr(TF, fn)(*args))


# ---------------------------------------------------------------- recurrent layers

RNNS = [
    ("RNN", dict()), ("RNN", dict(nonlinearity="relu", num_layers=2)), ("RNN", dict(bidirectional=True, bias=False)),
    ("LSTM", dict()), ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(num_layers=2, proj_size=3, bidirectional=True)), ("LSTM", dict(bias=False, batch_first=True)),
    ("GRU", dict()), ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(num_layers=3, bias=False)),
]


@pytest.mark.parametrize("cls,kw", RNNS, ids=[f"{c}{i}" for i, (c, _) in enumerate(RNNS)])
def test_rnn_layers_match_torch(cls, kw):
    g, t = getattr(nn, cls)(4, 5, **kw), getattr(TNN, cls)(4, 5, **kw)
    bf = kw.get("batch_first", False)
    states = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h = kw.get("proj_size", 5)
    x = _rand(3, 6, 4) if bf else _rand(6, 3, 4)
    _module_case(g, t, x)  # zero initial states
    if cls == "LSTM":
        _module_case(g, t, x, _rand(states, 3, h), _rand(states, 3, 5), call=lambda m, x, h0, c0: m(x, (h0, c0)))
        _module_case(g, t, x[0], _rand(states, h), _rand(states, 5), call=lambda m, x, h0, c0: m(x, (h0, c0)))
    else:
        _module_case(g, t, x, _rand(states, 3, 5))
        _module_case(g, t, x[:, 0], _rand(states, 5))  # unbatched


def test_rnn_dropout_between_layers_like_torch():
    x = _rand(5, 2, 4)
    for cls in ("LSTM", "GRU", "RNN"):
        g, t = _load(getattr(nn, cls)(4, 3, num_layers=3, dropout=1.0), getattr(TNN, cls)(4, 3, num_layers=3,
                                                                                            dropout=1.0))
        # p = 1 zeroes every layer's output but the last one's: deterministic, and only right if it is between layers
        close(_outputs(g(from_torch(x)))[0], _outputs(t(x))[0])
        g.eval()
        t.eval()
        _compare(g, t, [x], g, t)
        g.train()
        a, b = _outputs(g(from_torch(x)))[0], _outputs(g.eval()(from_torch(x)))[0]
        assert np.abs(a.detach().numpy() - b.detach().numpy()).max() > 1e-3


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_rnn_cells_match_torch(cls):
    for kw in (dict(), dict(bias=False)) + ((dict(nonlinearity="relu"),) if cls == "RNNCell" else ()):
        g, t = getattr(nn, cls)(4, 5, **kw), getattr(TNN, cls)(4, 5, **kw)
        _module_case(g, t, _rand(3, 4))
        _module_case(g, t, _rand(4))
        if cls == "LSTMCell":
            _module_case(g, t, _rand(3, 4), _rand(3, 5), _rand(3, 5), call=lambda m, x, h, c: m(x, (h, c)))
        else:
            _module_case(g, t, _rand(3, 4), _rand(3, 5))
            _module_case(g, t, _rand(4), _rand(5))


def test_rnn_initialisation_and_names_follow_torch():
    genesis.manual_seed(1)
    for g, t in ((nn.LSTM(4, 6, 2, bidirectional=True, proj_size=2), TNN.LSTM(4, 6, 2, bidirectional=True,
                                                                             proj_size=2)),
                 (nn.GRU(3, 8, bias=False), TNN.GRU(3, 8, bias=False)), (nn.GRUCell(3, 5), TNN.GRUCell(3, 5))):
        assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == [
            (n, tuple(p.shape)) for n, p in t.named_parameters()]
        bound = 1 / math.sqrt(t.hidden_size)
        for p in g.parameters():
            a = np.abs(p.detach().numpy())
            assert a.max() <= bound and a.max() > 0.5 * bound
    assert repr(nn.LSTM(4, 6, 2, batch_first=True)) == repr(TNN.LSTM(4, 6, 2, batch_first=True))
    assert len(nn.GRU(3, 4, 2, bidirectional=True).all_weights) == 4


def test_rnn_errors_like_torch():
    for make in (lambda m: m.RNN(4, 5, nonlinearity="sigmoid"), lambda m: m.LSTM(4, 5, dropout=1.5),
                 lambda m: m.LSTM(4, 5, proj_size=5), lambda m: m.GRU(4, 5, proj_size=2)):
        _raises_like(lambda: make(nn), lambda: make(TNN))
    for cls in ("RNN", "GRU", "LSTM"):
        g, t = getattr(nn, cls)(4, 5, 2), getattr(TNN, cls)(4, 5, 2)
        for args in ((torch.randn(2, 3, 4, 4),), (torch.randn(6, 3, 7),), (torch.randn(4),)):
            _raises_like(lambda: g(*[from_torch(a) for a in args]), lambda: t(*args))
        x = torch.randn(6, 3, 4)
        bad = (torch.randn(1, 3, 5), torch.randn(2, 3, 5)) if cls == "LSTM" else torch.randn(2, 2, 5)
        g_bad = tuple(from_torch(b) for b in bad) if cls == "LSTM" else from_torch(bad)
        _raises_like(lambda: g(from_torch(x), g_bad), lambda: t(x, bad))
        bad = (torch.randn(2, 5), torch.randn(2, 5)) if cls == "LSTM" else torch.randn(2, 5)
        g_bad = tuple(from_torch(b) for b in bad) if cls == "LSTM" else from_torch(bad)
        _raises_like(lambda: g(from_torch(x), g_bad), lambda: t(x, bad))
    for cls in ("RNNCell", "LSTMCell", "GRUCell"):
        g, t = getattr(nn, cls)(4, 5), getattr(TNN, cls)(4, 5)
        for x, h in ((torch.randn(3, 5), None), (torch.randn(3, 4), torch.randn(2, 5)),
                     (torch.randn(3, 4), torch.randn(3, 6)), (torch.randn(2, 3, 4), None)):
            hh = None if h is None else ((h, h) if cls == "LSTMCell" else h)
            gh = None if h is None else ((from_torch(h),) * 2 if cls == "LSTMCell" else from_torch(h))
            _raises_like(lambda: g(from_torch(x), gh), lambda: t(x, hh))


# ---------------------------------------------------------------- attention and transformers

def _masks(kind, n, heads, L, S):
    am = kpm = None
    if kind in ("bool2d", "both"):
        am = torch.rand(L, S) < 0.3
        am[:, 0] = False
    if kind == "float2d":
        am = _rand(L, S)
    if kind == "float3d":
        am = _rand(n * heads, L, S)
    if kind == "bool3d":
        am = torch.rand(n * heads, L, S) < 0.3
        am[..., 1] = False
    if kind in ("kpm", "both"):
        kpm = torch.zeros(n, S, dtype=torch.bool)
        kpm[0, -1] = kpm[n - 1, 1] = True
    return am, kpm


MHA = [
    dict(), dict(batch_first=True), dict(bias=False), dict(kdim=6, vdim=3), dict(add_bias_kv=True),
    dict(add_zero_attn=True), dict(add_bias_kv=True, add_zero_attn=True, batch_first=True, kdim=5, vdim=5),
]


@pytest.mark.parametrize("kw", MHA, ids=range(len(MHA)))
@pytest.mark.parametrize("masks", ["none", "bool2d", "float2d", "float3d", "bool3d", "kpm", "both"])
def test_multihead_attention_masks_and_weights_match_torch(kw, masks):
    E, H, L, S, N = 8, 2, 5, 4, 3
    bf = kw.get("batch_first", False)
    q = _rand(N, L, E) if bf else _rand(L, N, E)
    k = _rand(N, S, kw.get("kdim", E)) if bf else _rand(S, N, kw.get("kdim", E))
    v = _rand(N, S, kw.get("vdim", E)) if bf else _rand(S, N, kw.get("vdim", E))
    am, kpm = _masks(masks, N, H, L, S)
    g, t = nn.MultiheadAttention(E, H, **kw), TNN.MultiheadAttention(E, H, **kw)
    for need_weights, average in ((False, True), (True, True), (True, False)):
        def call(m, q, k, v):
            conv = (lambda a: a) if isinstance(m, TNN.Module) else (lambda a: None if a is None else from_torch(a))
            return m(q, k, v, key_padding_mask=conv(kpm), need_weights=need_weights, attn_mask=conv(am),
                     average_attn_weights=average)
        g.zero_grad()
        t.zero_grad()
        _module_case(g, t, q, k, v, call=call)
    if not kw or kw == dict(batch_first=True):  # the C++ layer on the fused op (what accelerators run) agrees too
        def fused(m, q, k, v):
            if isinstance(m, TNN.Module):
                return m(q, k, v, key_padding_mask=kpm, need_weights=False, attn_mask=am)[0]
            conv = (lambda a: None if a is None else from_torch(a))
            return m._impl.attend(q, k, v, conv(kpm), False, conv(am), False)
        g.zero_grad()
        t.zero_grad()
        _module_case(g, t, q, k, v, call=fused)


def test_multihead_attention_unbatched_self_attention_and_copies():
    E, H = 6, 3
    g, t = _load(nn.MultiheadAttention(E, H), TNN.MultiheadAttention(E, H))
    x = _rand(5, E)
    kpm = torch.tensor([False, True, False, False, True])
    am = _rand(H, 5, 5)
    for nw in (False, True):
        _compare(lambda x: g(x, x, x, key_padding_mask=from_torch(kpm), need_weights=nw, attn_mask=from_torch(am)),
                 lambda x: t(x, x, x, key_padding_mask=kpm, need_weights=nw, attn_mask=am), [x], g, t)
    c = copy.deepcopy(g)
    assert c._impl is not g._impl and c.in_proj_weight.dtype == genesis.float64
    close(c(from_torch(x))[0], t(x, x, x)[0])
    with genesis.no_grad():
        c.in_proj_weight.fill_(0.0)
    assert g.in_proj_weight.abs().sum().item() > 0  # a copy, not a share
    p = pickle.loads(pickle.dumps(g))
    close(p(from_torch(x))[0], t(x, x, x)[0])


def test_multihead_attention_dropout_in_training():
    E, H = 4, 2
    g, t = _load(nn.MultiheadAttention(E, H, dropout=1.0), TNN.MultiheadAttention(E, H, dropout=1.0))
    x = _rand(3, 2, E)
    close(g(from_torch(x), from_torch(x), from_torch(x))[0], t(x, x, x)[0])  # every weight dropped: out_proj's bias
    g.eval()
    t.eval()
    close(g(from_torch(x), from_torch(x), from_torch(x), need_weights=False)[0], t(x, x, x)[0])


def test_multihead_attention_errors_like_torch():
    g, t = nn.MultiheadAttention(8, 2), TNN.MultiheadAttention(8, 2)
    x = torch.randn(5, 3, 8)
    for kw in (dict(attn_mask=torch.zeros(4, 5, dtype=torch.bool)), dict(attn_mask=torch.zeros(5, 5, 5)),
               dict(attn_mask=torch.zeros(1, 1, 5, 5)), dict(key_padding_mask=torch.zeros(3, 4, dtype=torch.bool)),
               dict(key_padding_mask=torch.zeros(3, 5, dtype=torch.int64)),
               dict(attn_mask=torch.zeros(5, 5, dtype=torch.int64))):
        for nw in (False, True):
            _raises_like(lambda: g(from_torch(x), from_torch(x), from_torch(x), need_weights=nw,
                                   **{k: from_torch(v) for k, v in kw.items()}),
                         lambda: t(x, x, x, need_weights=nw, **kw))
    y = torch.randn(5, 3, 6)
    _raises_like(lambda: g(from_torch(y), from_torch(y), from_torch(y)), lambda: t(y, y, y))
    _raises_like(lambda: g(from_torch(x), from_torch(x[:4]), from_torch(x)), lambda: t(x, x[:4], x))
    _raises_like(lambda: nn.MultiheadAttention(8, 3), lambda: TNN.MultiheadAttention(8, 3))


LAYER_CFG = [
    dict(), dict(batch_first=True), dict(norm_first=True), dict(activation="gelu", batch_first=True),
    dict(activation=lambda x: x.tanh(), norm_first=True, layer_norm_eps=1e-3),
]


def _activation(kw, torch_side):
    kw = dict(kw)
    if callable(kw.get("activation")):
        kw["activation"] = torch.tanh if torch_side else (lambda x: x.tanh())
    return kw


@pytest.mark.parametrize("kw", LAYER_CFG, ids=range(len(LAYER_CFG)))
def test_transformer_layers_with_masks_match_torch(kw):
    E, H, L, S, N = 8, 2, 5, 4, 3
    bf = kw.get("batch_first", False)
    src, tgt = (_rand(N, S, E), _rand(N, L, E)) if bf else (_rand(S, N, E), _rand(L, N, E))
    smask = torch.rand(S, S) < 0.3
    smask.fill_diagonal_(False)
    skpm = torch.zeros(N, S, dtype=torch.bool)
    skpm[1, -1] = True
    tmask = TNN.Transformer.generate_square_subsequent_mask(L).double()
    tkpm = torch.zeros(N, L, dtype=torch.bool)
    tkpm[0, -2:] = True
    mmask = _rand(L, S)
    gk, tk = _activation(kw, False), _activation(kw, True)
    g, t = nn.TransformerEncoderLayer(E, H, 16, 0.0, **gk), TNN.TransformerEncoderLayer(E, H, 16, 0.0, **tk)
    _module_case(g, t, src, call=lambda m, x: m(x, smask if isinstance(m, TNN.Module) else from_torch(smask),
                                                skpm if isinstance(m, TNN.Module) else from_torch(skpm)))
    _module_case(g, t, src[0] if bf else src[:, 0],  # unbatched
                 call=lambda m, x: m(x, smask if isinstance(m, TNN.Module) else from_torch(smask)))

    def dec(m, x, mem):
        c = (lambda a: a) if isinstance(m, TNN.Module) else from_torch
        return m(x, mem, tgt_mask=c(tmask), memory_mask=c(mmask), tgt_key_padding_mask=c(tkpm),
                 memory_key_padding_mask=c(skpm))
    g, t = nn.TransformerDecoderLayer(E, H, 16, 0.0, **gk), TNN.TransformerDecoderLayer(E, H, 16, 0.0, **tk)
    _module_case(g, t, tgt, src, call=dec)


@pytest.mark.parametrize("bf,nf", [(False, False), (True, True)])
def test_transformer_stacks_match_torch(bf, nf):
    E, H, L, S, N = 8, 2, 5, 4, 3
    src, tgt = (_rand(N, S, E), _rand(N, L, E)) if bf else (_rand(S, N, E), _rand(L, N, E))
    skpm = torch.zeros(N, S, dtype=torch.bool)
    skpm[2, -2:] = True
    genesis_mask = nn.Transformer.generate_square_subsequent_mask(L, dtype=genesis.float64)
    torch_mask = TNN.Transformer.generate_square_subsequent_mask(L).double()
    close(genesis_mask, torch_mask)

    g = nn.Transformer(E, H, 2, 2, 16, 0.0, batch_first=bf, norm_first=nf)
    t = TNN.Transformer(E, H, 2, 2, 16, 0.0, batch_first=bf, norm_first=nf)

    def run(m, s, x):
        c = (lambda a: a) if isinstance(m, TNN.Module) else from_torch
        return m(s, x, tgt_mask=torch_mask if isinstance(m, TNN.Module) else genesis_mask,
                 src_key_padding_mask=c(skpm), memory_key_padding_mask=c(skpm))
    _module_case(g, t, src, tgt, call=run)

    layer = dict(d_model=E, nhead=H, dim_feedforward=12, dropout=0.0, batch_first=bf, norm_first=nf)
    g = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), 3, nn.LayerNorm(E))
    t = TNN.TransformerEncoder(TNN.TransformerEncoderLayer(**layer), 3, TNN.LayerNorm(E))
    _module_case(g, t, src, call=lambda m, s: m(s, src_key_padding_mask=skpm if isinstance(m, TNN.Module)
                                               else from_torch(skpm)))
    g = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer), 2)
    t = TNN.TransformerDecoder(TNN.TransformerDecoderLayer(**layer), 2)
    _module_case(g, t, tgt, src, call=lambda m, x, mem: m(x, mem, tgt_mask=torch_mask if isinstance(m, TNN.Module)
                                                          else genesis_mask))


def test_transformer_initialisation_and_clones():
    genesis.manual_seed(2)
    g = nn.Transformer(8, 2, 2, 1, 16)
    for name, p in g.named_parameters():
        if p.dim() > 1:  # xavier_uniform_
            bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            a = np.abs(p.detach().numpy())
            assert a.max() <= bound and a.max() > 0.5 * bound, name
    l0, l1 = g.encoder.layers[0], g.encoder.layers[1]
    assert l0.self_attn.in_proj_weight.tolist() != l1.self_attn.in_proj_weight.tolist()  # reset after cloning
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2)
    a, b = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert a.tolist() == b.tolist() and a is not b  # deep copies of one layer, as torch's clones


def test_transformer_errors_like_torch():
    g, t = nn.Transformer(8, 2, 1, 1, 16), TNN.Transformer(8, 2, 1, 1, 16)
    for s, x in ((torch.randn(4, 3, 8), torch.randn(5, 2, 8)), (torch.randn(4, 3, 6), torch.randn(5, 3, 6))):
        _raises_like(lambda: g(from_torch(s), from_torch(x)), lambda: t(s, x))
    _raises_like(lambda: nn.TransformerEncoderLayer(8, 2, activation="swish"),
                 lambda: TNN.TransformerEncoderLayer(8, 2, activation="swish"))
    layer, tl = nn.TransformerEncoderLayer(8, 2, 16), TNN.TransformerEncoderLayer(8, 2, 16)
    x = torch.randn(4, 3, 8)
    kpm = torch.zeros(3, 4, dtype=torch.int64)
    _raises_like(lambda: layer(from_torch(x), src_key_padding_mask=from_torch(kpm)),
                 lambda: tl(x, src_key_padding_mask=kpm))


# ---------------------------------------------------------------- finite differences

def test_gradcheck_composites():
    genesis.manual_seed(0)

    def r(*shape):
        return genesis.randn(*shape, dtype=genesis.float64, requires_grad=True)
    checks = [
        (lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2, 1), [r(1, 4, 3, 3), r(4, 1, 3, 2)]),
        (lambda x, w, b: F.conv3d(x, w, b, 2, 1, 1, 2), [r(1, 2, 3, 4, 3), r(4, 1, 2, 2, 2), r(4)]),
        (lambda x, w: F.conv1d(x, w, None, 1, "same", 2), [r(2, 2, 6), r(3, 2, 4)]),
        (lambda x: F.interpolate(x, size=(5, 3), mode="bicubic", align_corners=False), [r(1, 2, 3, 4)]),
        (lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True), [r(1, 2, 3, 4)]),
        (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [r(1, 2, 3, 4)]),
        (lambda x: F.pad(x, (2, -1, 3, 1), mode="circular"), [r(1, 2, 3, 4)]),
        (lambda x: F.adaptive_max_pool2d(x, (2, 3)), [r(1, 2, 5, 7)]),
        (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [r(1, 2, 5, 7)]),
        (lambda x: F.max_pool1d(x, 3, 2, 1, 1, True, True)[0], [r(2, 2, 8)]),
        (lambda x: F.pixel_shuffle(x, 2) * genesis.arange(16, dtype=genesis.float64).reshape(4, 4), [r(1, 4, 2, 2)]),
    ]
    gru = nn.GRU(3, 2, bidirectional=True).to(genesis.float64)
    lstm = nn.LSTM(3, 2, num_layers=2, proj_size=1).to(genesis.float64)
    mha = nn.MultiheadAttention(4, 2, add_bias_kv=True).to(genesis.float64)
    mask = genesis.tensor([[False, True, False], [False, False, True]])
    checks += [
        (lambda x, h: gru(x, h)[0], [r(3, 2, 3), r(2, 2, 2)]),
        (lambda x: lstm(x)[1][1], [r(4, 1, 3)]),
        (lambda q, k: mha(q, k, k, attn_mask=mask, need_weights=True)[1], [r(2, 1, 4), r(3, 1, 4)]),
    ]
    for fn, inputs in checks:
        assert genesis.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
