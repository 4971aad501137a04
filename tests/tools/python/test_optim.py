"""genesis.optim against torch.optim 1.13: parameters after five steps of SGD, Adam and AdamW
(parameter groups, momentum, Nesterov, weight decay), the LR schedulers' sequences, live
param_groups and state dicts (tests tools/python/src/optim.cpp)."""
import pytest
import torch

import genesis
import genesis.optim as optim
from conftest import close, from_torch

CONFIGS = {
    "SGD": (optim.SGD, torch.optim.SGD, {"lr": 0.1}),
    "SGD_momentum_nesterov_wd": (optim.SGD, torch.optim.SGD,
                                 {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    "SGD_dampening": (optim.SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    "Adam": (optim.Adam, torch.optim.Adam, {"lr": 0.01}),
    "Adam_wd_betas": (optim.Adam, torch.optim.Adam, {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    "AdamW": (optim.AdamW, torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.05, "eps": 1e-6}),
    # beta2 = 0.5 lets exp_avg_sq fall below its running max within five steps
    "Adam_amsgrad_wd": (optim.Adam, torch.optim.Adam,
                        {"lr": 0.05, "betas": (0.8, 0.5), "weight_decay": 0.1, "amsgrad": True}),
    "Adam_amsgrad_maximize": (optim.Adam, torch.optim.Adam,
                              {"lr": 0.05, "betas": (0.9, 0.5), "amsgrad": True, "maximize": True}),
    "AdamW_amsgrad": (optim.AdamW, torch.optim.AdamW,
                      {"lr": 0.05, "betas": (0.9, 0.5), "weight_decay": 0.05, "amsgrad": True}),
}


def _problem():
    raw = [torch.randn(4, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)]
    x = torch.randn(5, 4, dtype=torch.float64)
    return raw, x


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_five_steps_match_torch_with_param_groups(name):
    g_cls, t_cls, kw = CONFIGS[name]
    raw, x = _problem()
    gp = [from_torch(r, requires_grad=True) for r in raw]
    tp = [r.clone().requires_grad_(True) for r in raw]
    # two groups: the second with its own learning rate
    g_opt = g_cls([{"params": [gp[0]]}, {"params": [gp[1]], "lr": kw["lr"] / 2}], **kw)
    t_opt = t_cls([{"params": [tp[0]]}, {"params": [tp[1]], "lr": kw["lr"] / 2}], **kw)
    gx = from_torch(x)
    for _ in range(5):
        g_opt.zero_grad()
        t_opt.zero_grad()
        ((gx @ gp[0] + gp[1]).tanh() ** 2).sum().backward()
        ((x @ tp[0] + tp[1]).tanh() ** 2).sum().backward()
        g_opt.step()
        t_opt.step()
    for g, t in zip(gp, tp):
        close(g, t, rtol=1e-12, atol=1e-12)


def test_param_groups_are_live_views():
    p = genesis.zeros(2, requires_grad=True)
    opt = optim.AdamW([p], lr=0.1, betas=(0.8, 0.9))
    g = opt.param_groups[0]
    assert g["lr"] == 0.1 and g["betas"] == (0.8, 0.9) and g["weight_decay"] == 0.01
    g["lr"] = 0.5
    assert opt.param_groups[0]["lr"] == 0.5
    assert opt.param_groups[0]["params"][0].data_ptr() == p.data_ptr()
    opt.add_param_group({"params": [genesis.ones(1, requires_grad=True)], "lr": 0.2})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["lr"] == 0.2


def test_state_dict_round_trip_continues_identically():
    raw, x = _problem()
    gx = from_torch(x)

    def run(steps, p, opt):
        for _ in range(steps):
            opt.zero_grad()
            ((gx @ p[0] + p[1]) ** 2).sum().backward()
            opt.step()

    a = [from_torch(r, requires_grad=True) for r in raw]
    opt_a = optim.Adam(a, lr=0.01)
    run(3, a, opt_a)
    sd = opt_a.state_dict()
    assert sd["state"][0]["step"] == 3 and sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    b = [from_torch(to, requires_grad=True) for to in (torch.from_numpy(t.detach().numpy().copy()) for t in a)]
    opt_b = optim.Adam(b, lr=0.01)
    opt_b.load_state_dict(sd)
    run(2, a, opt_a)
    run(2, b, opt_b)
    for pa, pb in zip(a, b):
        assert pa.tolist() == pb.tolist()


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_amsgrad_state_matches_torch_and_round_trips(cls):
    raw, x = _problem()
    gx = from_torch(x)
    kw = {"lr": 0.05, "betas": (0.9, 0.5), "amsgrad": True}

    def loss_g(p):
        return ((gx @ p[0] + p[1]).tanh() ** 2).sum()

    def run(steps, p, opt, loss):
        for _ in range(steps):
            opt.zero_grad()
            loss(p).backward()
            opt.step()

    a = [from_torch(r, requires_grad=True) for r in raw]
    t = [r.clone().requires_grad_(True) for r in raw]
    opt_a, opt_t = getattr(optim, cls)(a, **kw), getattr(torch.optim, cls)(t, **kw)
    assert opt_a.param_groups[0]["amsgrad"] is True
    run(4, a, opt_a, loss_g)
    run(4, t, opt_t, lambda p: ((x @ p[0] + p[1]).tanh() ** 2).sum())
    sd, sd_t = opt_a.state_dict(), opt_t.state_dict()
    assert sorted(sd["state"][0]) == sorted(sd_t["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    for i in range(2):
        for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            close(sd["state"][i][k], sd_t["state"][i][k], rtol=1e-12, atol=1e-12)
    # The running max matters here: somewhere it exceeds the current second moment.
    assert (sd["state"][0]["max_exp_avg_sq"] > sd["state"][0]["exp_avg_sq"]).any().item()
    b = [from_torch(torch.from_numpy(p.detach().numpy().copy()), requires_grad=True) for p in a]
    opt_b = getattr(optim, cls)(b, **kw)
    opt_b.load_state_dict(sd)
    run(2, a, opt_a, loss_g)
    run(2, b, opt_b, loss_g)
    for pa, pb in zip(a, b):
        assert pa.tolist() == pb.tolist()


SCHEDULERS = {
    "StepLR": (lambda o: optim.lr_scheduler.StepLR(o, 3, 0.5), lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5)),
    "MultiStepLR": (lambda o: optim.lr_scheduler.MultiStepLR(o, [2, 5, 5], 0.1),
                    lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5], 0.1)),
    "ExponentialLR": (lambda o: optim.lr_scheduler.ExponentialLR(o, 0.9),
                      lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    "CosineAnnealingLR": (lambda o: optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.001),
                          lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.001)),
    "LinearLR": (lambda o: optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 4),
                 lambda o: torch.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 4)),
    "LambdaLR": (lambda o: optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)),
                 lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1))),
    "OneCycleLR": (lambda o: optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=12),
                   lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=12)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_matches_torch(name):
    make_g, make_t = SCHEDULERS[name]
    g_opt = optim.SGD([genesis.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    gs, ts = make_g(g_opt), make_t(t_opt)
    for _ in range(11):
        assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert g_opt.param_groups[0]["momentum"] == pytest.approx(t_opt.param_groups[0]["momentum"], rel=1e-12)
        g_opt.step()
        t_opt.step()
        gs.step()
        ts.step()


def test_cosine_schedule_with_warmup():
    o = optim.SGD([genesis.zeros(1, requires_grad=True)], lr=1.0)
    s = optim.lr_scheduler.get_cosine_schedule_with_warmup(o, 2, 10)
    lrs = []
    for _ in range(4):
        lrs.append(s.get_last_lr()[0])
        s.step()
    assert lrs[:3] == [0.0, 0.5, 1.0] and lrs[3] < 1.0
