"""genesis.nn against torch.nn 1.13: every layer and loss on random float64 inputs (outputs, input
gradients, parameter gradients), plus Module's registration, state dicts, modes and to()
(tests tools/python/genesis/nn/)."""
import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from conftest import close, from_torch, to_torch

TNN = torch.nn


def _copy_params(g_layer, t_layer):
    sd = {k: to_torch(v) for k, v in g_layer.state_dict().items()}
    missing, unexpected = t_layer.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    return missing


def _rms_norm_torch(d, eps=None):  # torch 1.13 has no RMSNorm
    class RMSNorm(TNN.Module):
        def __init__(self):
            super().__init__()
            self.weight = TNN.Parameter(torch.ones(d, dtype=torch.float64))

        def forward(self, x):
            e = torch.finfo(x.dtype).eps if eps is None else eps
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + e) * self.weight
    return RMSNorm()


# name: (genesis layer, torch layer, input shape, integer input range or None)
LAYERS = {
    "Linear": (lambda: nn.Linear(5, 3), lambda: TNN.Linear(5, 3), (4, 5), None),
    "Linear_nobias": (lambda: nn.Linear(5, 3, bias=False), lambda: TNN.Linear(5, 3, bias=False), (2, 4, 5), None),
    "Embedding": (lambda: nn.Embedding(10, 4), lambda: TNN.Embedding(10, 4), (3, 5), 10),
    "Embedding_padding": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: TNN.Embedding(10, 4, padding_idx=0),
                          (3, 5), 10),
    "LayerNorm": (lambda: nn.LayerNorm(6), lambda: TNN.LayerNorm(6), (3, 6), None),
    "LayerNorm_2d": (lambda: nn.LayerNorm((2, 3)), lambda: TNN.LayerNorm((2, 3)), (4, 2, 3), None),
    "RMSNorm": (lambda: nn.RMSNorm(6, eps=1e-6), lambda: _rms_norm_torch(6, 1e-6), (3, 6), None),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda: TNN.BatchNorm1d(4), (8, 4), None),
    "BatchNorm1d_3d": (lambda: nn.BatchNorm1d(4, momentum=None), lambda: TNN.BatchNorm1d(4, momentum=None),
                       (5, 4, 3), None),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), lambda: TNN.BatchNorm2d(3), (2, 3, 4, 5), None),
    "BatchNorm2d_eval": (lambda: nn.BatchNorm2d(3).eval(), lambda: TNN.BatchNorm2d(3).eval(), (2, 3, 4, 5), None),
    "BatchNorm1d_no_affine": (lambda: nn.BatchNorm1d(4, affine=False), lambda: TNN.BatchNorm1d(4, affine=False),
                              (6, 4), None),
    "ReLU": (lambda: nn.ReLU(), lambda: TNN.ReLU(), (3, 4), None),
    "GELU": (lambda: nn.GELU(), lambda: TNN.GELU(), (3, 4), None),
    "GELU_tanh": (lambda: nn.GELU("tanh"), lambda: TNN.GELU("tanh"), (3, 4), None),
    "SiLU": (lambda: nn.SiLU(), lambda: TNN.SiLU(), (3, 4), None),
    "Tanh": (lambda: nn.Tanh(), lambda: TNN.Tanh(), (3, 4), None),
    "Sigmoid": (lambda: nn.Sigmoid(), lambda: TNN.Sigmoid(), (3, 4), None),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda: TNN.Softmax(dim=1), (3, 4), None),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), lambda: TNN.LogSoftmax(dim=-1), (3, 4), None),
    "Flatten": (lambda: nn.Flatten(), lambda: TNN.Flatten(), (2, 3, 4), None),
    "Identity": (lambda: nn.Identity(), lambda: TNN.Identity(), (2, 3), None),
    "Dropout_eval": (lambda: nn.Dropout(0.5).eval(), lambda: TNN.Dropout(0.5).eval(), (3, 4), None),
    "Conv2d": (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: TNN.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6), None),
    "Conv2d_strided_groups": (lambda: nn.Conv2d(4, 6, (3, 2), stride=2, groups=2, bias=False),
                              lambda: TNN.Conv2d(4, 6, (3, 2), stride=2, groups=2, bias=False), (2, 4, 7, 6), None),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), lambda: TNN.MaxPool2d(2), (2, 3, 6, 6), None),
    "MaxPool2d_padded": (lambda: nn.MaxPool2d(3, stride=2, padding=1), lambda: TNN.MaxPool2d(3, stride=2, padding=1),
                         (1, 2, 7, 7), None),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, stride=1), lambda: TNN.AvgPool2d(2, stride=1), (2, 3, 5, 5), None),
    "Sequential": (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
                   lambda: TNN.Sequential(TNN.Linear(4, 8), TNN.ReLU(), TNN.Linear(8, 2)), (5, 4), None),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name):
    make_g, make_t, shape, int_range = LAYERS[name]
    g_layer = make_g().to(genesis.float64)
    t_layer = make_t().double()
    t_layer.train(g_layer.training)
    _copy_params(g_layer, t_layer)
    if int_range:
        raw = torch.randint(0, int_range, shape)
        g_x, t_x = genesis.tensor(raw.numpy()), raw
    else:
        raw = torch.randn(shape, dtype=torch.float64)
        g_x, t_x = from_torch(raw, requires_grad=True), raw.clone().requires_grad_(True)
    g_y, t_y = g_layer(g_x), t_layer(t_x)
    close(g_y, t_y)
    w = torch.randn(t_y.shape, dtype=torch.float64)
    (g_y * from_torch(w)).sum().backward()
    (t_y * w).sum().backward()
    if not int_range:
        close(g_x.grad, t_x.grad)
    t_params = dict(t_layer.named_parameters())
    g_params = dict(g_layer.named_parameters())
    assert sorted(g_params) == sorted(t_params)
    for k, p in g_params.items():
        close(p.grad, t_params[k].grad)
    for k, b in g_layer.named_buffers():  # running statistics after one training step
        close(b, dict(t_layer.named_buffers())[k])


def test_multihead_attention_matches_torch():
    g = nn.MultiheadAttention(8, 2, batch_first=True).to(genesis.float64)
    assert "(out_proj): Linear()" in repr(g)
    t = TNN.MultiheadAttention(8, 2, batch_first=True).double()
    _copy_params(g, t)
    raw = torch.randn(2, 5, 8, dtype=torch.float64)
    gx, tx = from_torch(raw, requires_grad=True), raw.clone().requires_grad_(True)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)  # True = not allowed, as torch
    gy, _ = g(gx, gx, gx, attn_mask=genesis.tensor(mask.numpy()))
    ty, _ = t(tx, tx, tx, attn_mask=mask, need_weights=False)
    close(gy, ty)
    gy.sum().backward()
    ty.sum().backward()
    close(gx.grad, tx.grad)
    tp = dict(t.named_parameters())
    for k, p in g.named_parameters():
        close(p.grad, tp[k].grad)


# name: (genesis loss, torch loss, input shape, target maker)
LOSSES = {
    "CrossEntropy": (lambda: nn.CrossEntropyLoss(), lambda: TNN.CrossEntropyLoss(), (6, 5),
                     lambda: torch.randint(0, 5, (6,))),
    "CrossEntropy_ignore_smooth": (lambda: nn.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1),
                                   lambda: TNN.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1), (6, 5),
                                   lambda: torch.tensor([0, 1, 2, 3, 4, 1])),
    "CrossEntropy_probs_sum": (lambda: nn.CrossEntropyLoss(reduction="sum"),
                               lambda: TNN.CrossEntropyLoss(reduction="sum"), (4, 3),
                               lambda: torch.rand(4, 3, dtype=torch.float64).softmax(1)),
    "CrossEntropy_spatial": (lambda: nn.CrossEntropyLoss(reduction="none"),
                             lambda: TNN.CrossEntropyLoss(reduction="none"), (2, 4, 3),
                             lambda: torch.randint(0, 4, (2, 3))),
    "NLLLoss": (lambda: nn.NLLLoss(), lambda: TNN.NLLLoss(), (6, 5), lambda: torch.randint(0, 5, (6,))),
    "MSELoss": (lambda: nn.MSELoss(), lambda: TNN.MSELoss(), (3, 4), lambda: torch.randn(3, 4, dtype=torch.float64)),
    "L1Loss_sum": (lambda: nn.L1Loss(reduction="sum"), lambda: TNN.L1Loss(reduction="sum"), (3, 4),
                   lambda: torch.randn(3, 4, dtype=torch.float64)),
    "BCELoss": (lambda: nn.BCELoss(), lambda: TNN.BCELoss(), (5,), lambda: torch.rand(5, dtype=torch.float64)),
    "BCEWithLogits": (lambda: nn.BCEWithLogitsLoss(), lambda: TNN.BCEWithLogitsLoss(), (5, 2),
                      lambda: torch.rand(5, 2, dtype=torch.float64)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name):
    make_g, make_t, shape, make_target = LOSSES[name]
    raw = torch.randn(shape, dtype=torch.float64)
    if name == "BCELoss":
        raw = torch.rand(shape, dtype=torch.float64) * 0.9 + 0.05
    if name == "NLLLoss":
        raw = raw.log_softmax(1)
    target = make_target()
    gx, tx = from_torch(raw, requires_grad=True), raw.clone().requires_grad_(True)
    gl, tl = make_g()(gx, genesis.tensor(target.numpy())), make_t()(tx, target)
    close(gl, tl)
    w = torch.randn(tl.shape, dtype=torch.float64)
    (gl * from_torch(w)).sum().backward()
    (tl * w).sum().backward()
    close(gx.grad, tx.grad)


def test_bce_with_logits_pos_weight_matches_torch():
    raw, target, pw = torch.randn(4, 3, dtype=torch.float64), torch.rand(4, 3, dtype=torch.float64), torch.rand(3,
                                                                                                               dtype=torch.float64)
    g = F.binary_cross_entropy_with_logits(from_torch(raw), from_torch(target), pos_weight=from_torch(pw))
    t = torch.nn.functional.binary_cross_entropy_with_logits(raw, target, pos_weight=pw)
    close(g, t)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.scale = nn.Parameter(genesis.ones(4))
        self.register_buffer("steps", genesis.zeros(1))
        self.register_buffer("scratch", genesis.zeros(1), persistent=False)
        self.plain = 3  # not registered

    def forward(self, x):
        h = self.fc(x)
        for b in self.blocks:
            h = b(h).relu()
        return h * self.scale


def test_python_subclass_registers_attributes():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    # torch's order: a module's own entries first, then its children's
    assert names == ["scale", "fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "blocks.1.bias"]
    assert list(m.state_dict()) == ["scale", "steps"] + names[1:]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "blocks", "blocks.0", "blocks.1"]
    assert m.plain == 3 and isinstance(m.scale, nn.Parameter)
    out = m(genesis.randn(2, 3))
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert not m.eval().blocks[0].training and m.train().blocks[1].training
    assert "Linear(in_features=3, out_features=4, bias=True)" in repr(m)


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert x.tolist() == y.tolist(), k
    sd = a.state_dict()
    sd["fc.weight"] = genesis.zeros(5, 5)
    del sd["scale"]
    before = b.fc.weight.tolist()
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight") as e:
        b.load_state_dict(sd)
    assert "Missing key(s) in state_dict: \"scale\"" in str(e.value)
    assert b.fc.weight.tolist() == before  # nothing half-loaded
    r = b.load_state_dict({"fc.bias": genesis.ones(4)}, strict=False)
    assert "scale" in r.missing_keys and b.fc.bias.tolist() == [1.0] * 4


def test_to_converts_in_place_so_optimizers_keep_their_tensors():
    m = Net()
    opt = genesis.optim.SGD(m.parameters(), lr=0.1)
    w = m.fc.weight
    m.to(genesis.float64)
    assert w.dtype == genesis.float64 and m.fc.weight.dtype == genesis.float64
    assert m.steps.dtype == genesis.float64
    m(genesis.randn(2, 3, dtype=genesis.float64)).sum().backward()
    before = w.tolist()
    opt.step()
    assert w.tolist() != before


def test_init_functions_draw_from_the_default_generator():
    genesis.manual_seed(3)
    a = nn.init.kaiming_uniform_(genesis.empty(4, 5), a=5 ** 0.5)
    genesis.manual_seed(3)
    b = nn.Linear(5, 4).weight
    assert a.tolist() == b.tolist()
    bound = 1 / 5 ** 0.5
    assert float(b.abs().max()) <= bound
    x = nn.init.xavier_uniform_(genesis.empty(30, 40))
    assert float(x.abs().max()) <= (6 / 70) ** 0.5
    assert nn.init.zeros_(genesis.ones(3)).tolist() == [0.0, 0.0, 0.0]


def test_dropout_scales_kept_elements():
    x = genesis.ones(1000)
    y = nn.Dropout(0.25)(x)
    kept = y.numpy()[y.numpy() != 0]
    np.testing.assert_allclose(kept, 1 / 0.75, rtol=1e-6)
    assert 0.6 < len(kept) / 1000 < 0.9


def test_clip_grad_norm_matches_torch():
    ps = [genesis.randn(3, 4, dtype=genesis.float64, requires_grad=True) for _ in range(2)]
    ts = [to_torch(p, requires_grad=True) for p in ps]
    for p in ps:
        (p * p).sum().backward()
    for t in ts:
        (t * t).sum().backward()
    gn = nn.utils.clip_grad_norm_(ps, 1.0)
    tn = torch.nn.utils.clip_grad_norm_(ts, 1.0)
    close(gn, tn)
    for p, t in zip(ps, ts):
        close(p.grad, t.grad)


def test_modules_deepcopy_and_pickle():
    import copy
    import pickle
    m = Net()
    c = copy.deepcopy(m)
    assert isinstance(c.scale, nn.Parameter) and c.fc.weight.tolist() == m.fc.weight.tolist()
    with genesis.no_grad():
        c.fc.weight.fill_(0)
    assert m.fc.weight.abs().sum().item() > 0  # a copy, not a share
    p = pickle.loads(pickle.dumps(m))
    assert p.fc.bias.tolist() == m.fc.bias.tolist() and p.scale.requires_grad
    t = pickle.loads(pickle.dumps(genesis.ones(2, dtype=genesis.bfloat16)))
    assert t.dtype == genesis.bfloat16 and t.tolist() == [1.0, 1.0]


# name: (kwargs, input shape, target maker); class weights with every reduction, ignore_index, smoothing
WEIGHTED = {
    "ce_mean": ("cross_entropy", {}, (7, 5), lambda: torch.randint(0, 5, (7,))),
    "ce_sum": ("cross_entropy", {"reduction": "sum"}, (7, 5), lambda: torch.randint(0, 5, (7,))),
    "ce_none_spatial": ("cross_entropy", {"reduction": "none"}, (2, 4, 3), lambda: torch.randint(0, 4, (2, 3))),
    "ce_ignore": ("cross_entropy", {"ignore_index": 2}, (7, 5), lambda: torch.tensor([0, 2, 1, 2, 4, 3, 2])),
    "ce_ignore_smooth": ("cross_entropy", {"ignore_index": 2, "label_smoothing": 0.2}, (7, 5),
                         lambda: torch.tensor([0, 2, 1, 2, 4, 3, 2])),
    "ce_smooth_sum_spatial": ("cross_entropy", {"label_smoothing": 0.1, "reduction": "sum"}, (2, 4, 3),
                              lambda: torch.randint(0, 4, (2, 3))),
    "ce_smooth_none": ("cross_entropy", {"label_smoothing": 0.3, "reduction": "none", "ignore_index": 0}, (6, 4),
                       lambda: torch.tensor([0, 1, 2, 3, 0, 1])),
    "ce_probs": ("cross_entropy", {}, (4, 3), lambda: torch.rand(4, 3, dtype=torch.float64).softmax(1)),
    "ce_probs_smooth_none": ("cross_entropy", {"label_smoothing": 0.1, "reduction": "none"}, (4, 3),
                             lambda: torch.rand(4, 3, dtype=torch.float64).softmax(1)),
    "nll_mean": ("nll_loss", {}, (7, 5), lambda: torch.randint(0, 5, (7,))),
    "nll_ignore_sum": ("nll_loss", {"ignore_index": 1, "reduction": "sum"}, (6, 5),
                       lambda: torch.tensor([1, 0, 1, 4, 3, 2])),
    "nll_ignore_mean_spatial": ("nll_loss", {"ignore_index": 0}, (2, 4, 3), lambda: torch.randint(0, 4, (2, 3))),
    "nll_none": ("nll_loss", {"reduction": "none", "ignore_index": 3}, (6, 5),
                 lambda: torch.tensor([3, 0, 1, 4, 3, 2])),
}


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_class_weighted_losses_match_torch(name):
    fn, kw, shape, make_target = WEIGHTED[name]
    raw = torch.randn(shape, dtype=torch.float64)
    if fn == "nll_loss":
        raw = raw.log_softmax(1)
    target = make_target()
    weight = torch.rand(shape[1], dtype=torch.float64) + 0.1
    gx, tx = from_torch(raw, requires_grad=True), raw.clone().requires_grad_(True)
    gt = genesis.tensor(target.numpy())
    gl = getattr(F, fn)(gx, gt, weight=from_torch(weight), **kw)
    tl = getattr(torch.nn.functional, fn)(tx, target, weight=weight, **kw)
    close(gl, tl)
    w = torch.randn(tl.shape, dtype=torch.float64)
    (gl * from_torch(w)).sum().backward()
    (tl * w).sum().backward()
    close(gx.grad, tx.grad, rtol=1e-7, atol=1e-7)
    # The module form keeps the weight as a buffer, as torch's does.
    cls = {"cross_entropy": (nn.CrossEntropyLoss, TNN.CrossEntropyLoss), "nll_loss": (nn.NLLLoss, TNN.NLLLoss)}[fn]
    gm, tm = cls[0](weight=from_torch(weight), **kw), cls[1](weight=weight, **kw)
    close(gm(gx, gt), tm(tx, target))
    assert list(gm.state_dict()) == list(tm.state_dict()) == ["weight"]


def test_class_weights_change_the_loss():
    x, t = torch.randn(6, 4, dtype=torch.float64), torch.randint(0, 4, (6,))
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    plain = F.cross_entropy(from_torch(x), genesis.tensor(t.numpy()))
    weighted = F.cross_entropy(from_torch(x), genesis.tensor(t.numpy()), weight=from_torch(w))
    assert abs(plain.item() - weighted.item()) > 1e-6
    with pytest.raises(ValueError, match="one entry per class"):
        F.nll_loss(from_torch(x), genesis.tensor(t.numpy()), weight=genesis.ones(3, dtype=genesis.float64))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_weights_match_torch(reduction):
    x, t = torch.randn(5, 3, dtype=torch.float64), torch.rand(5, 3, dtype=torch.float64)
    w, pw = torch.rand(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    p = torch.rand(5, 3, dtype=torch.float64) * 0.9 + 0.05
    cases = [
        (lambda a, m: F.binary_cross_entropy_with_logits(a, from_torch(t), weight=from_torch(w),
                                                         pos_weight=from_torch(pw), reduction=reduction),
         lambda a: torch.nn.functional.binary_cross_entropy_with_logits(a, t, weight=w, pos_weight=pw,
                                                                        reduction=reduction), x),
        (lambda a, m: nn.BCEWithLogitsLoss(weight=from_torch(w), reduction=reduction)(a, from_torch(t)),
         lambda a: TNN.BCEWithLogitsLoss(weight=w, reduction=reduction)(a, t), x),
        (lambda a, m: nn.BCELoss(weight=from_torch(w), reduction=reduction)(a, from_torch(t)),
         lambda a: TNN.BCELoss(weight=w, reduction=reduction)(a, t), p),
    ]
    for g_fn, t_fn, raw in cases:
        gx, tx = from_torch(raw, requires_grad=True), raw.clone().requires_grad_(True)
        gl, tl = g_fn(gx, None), t_fn(tx)
        close(gl, tl)
        (gl.sum() if reduction == "none" else gl).backward()
        (tl.sum() if reduction == "none" else tl).backward()
        close(gx.grad, tx.grad, rtol=1e-7, atol=1e-7)


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x) * 2


@pytest.mark.parametrize("make", [lambda: _Scale(), lambda: nn.Linear(3, 2), lambda: nn.BatchNorm1d(3)])
def test_forward_hooks_run_replace_and_remove_like_torch(make):
    m = make()
    x = genesis.randn(4, 3)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", mod is m, len(args))))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(("post", args[0] is x, tuple(out.shape))))
    base = m(x)
    assert calls == [("pre", True, 1), ("post", True, tuple(base.shape))]
    # A pre-hook's result replaces the input (one value or a tuple); a forward hook's the output.
    h3 = m.register_forward_pre_hook(lambda mod, args: args[0] * 0)
    h4 = m.register_forward_hook(lambda mod, args, out: out + 1)
    assert m(x).tolist() == (m.forward(x * 0) + 1).tolist()
    for h in (h1, h2, h3, h4):
        h.remove()
    h.remove()  # twice is harmless
    calls.clear()
    assert m(x).tolist() == m.forward(x).tolist() and calls == []
    with m.register_forward_hook(lambda mod, args, out: out * 0):
        assert m(x).abs().sum().item() == 0
    assert m(x).abs().sum().item() > 0


def test_forward_hooks_match_torch_on_a_model():
    torch.manual_seed(1)
    t_model = TNN.Sequential(TNN.Linear(3, 4), TNN.ReLU(), TNN.Linear(4, 2)).double()
    g_model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    for g, t in zip(g_model.parameters(), t_model.parameters()):
        g.data = from_torch(t.detach())
    seen = {}
    for model, key in ((g_model, "g"), (t_model, "t")):
        model[0].register_forward_hook(lambda mod, args, out, key=key: seen.__setitem__(key, out))
        model[2].register_forward_pre_hook(lambda mod, args: (args[0] * 0.5,))
        model[2].register_forward_hook(lambda mod, args, out: out.tanh())
    x = torch.randn(5, 3, dtype=torch.float64)
    gx, tx = from_torch(x, requires_grad=True), x.clone().requires_grad_(True)
    gy, ty = g_model(gx), t_model(tx)
    close(gy, ty)
    close(seen["g"], seen["t"])
    gy.sum().backward()
    ty.sum().backward()
    close(gx.grad, tx.grad, rtol=1e-7, atol=1e-7)
