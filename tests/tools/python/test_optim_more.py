"""genesis.optim's RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS against torch.optim 1.13
in float64 (parameters and state after every step, parameter groups, state dict round trips), and the schedulers
ReduceLROnPlateau, SequentialLR, ChainedScheduler, CyclicLR, CosineAnnealingWarmRestarts, PolynomialLR, ConstantLR,
MultiplicativeLR and LambdaLR (Python callables) against torch's lr sequences (tests tools/python/src/optim.cpp and
frontend/src/optim)."""
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.optim as optim
from conftest import close, from_torch

GS, TS = optim.lr_scheduler, torch.optim.lr_scheduler


@pytest.fixture(autouse=True)
def _float64_default():
    # torch 1.13 keeps NAdam's mu_product in the default dtype: float64 here, as genesis keeps it for float64 params.
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(prev)


# ------------------------------------------------------------------ optimizers

CONFIGS = {
    "RMSprop": ("RMSprop", {}),
    "RMSprop_centered_momentum_wd": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    "RMSprop_alpha_eps_maximize": ("RMSprop", {"lr": 0.02, "alpha": 0.9, "eps": 1e-6, "maximize": True}),
    "RMSprop_momentum": ("RMSprop", {"lr": 0.01, "momentum": 0.5}),
    "Adagrad": ("Adagrad", {}),
    "Adagrad_decay_wd_init": ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1,
                                          "initial_accumulator_value": 0.2}),
    "Adagrad_eps_maximize": ("Adagrad", {"lr": 0.05, "eps": 1e-3, "maximize": True}),
    "Adamax": ("Adamax", {}),
    "Adamax_betas_wd_maximize": ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    "NAdam": ("NAdam", {}),
    "NAdam_wd_momentum_decay": ("NAdam", {"lr": 0.01, "betas": (0.85, 0.99), "weight_decay": 0.1,
                                          "momentum_decay": 0.02, "eps": 1e-6}),
    # beta2 = 0.9: the rectified branch (rho_t > 5) starts at step 6 of the 10
    "RAdam": ("RAdam", {}),
    "RAdam_beta2_wd": ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9), "weight_decay": 0.1}),
    "Adadelta": ("Adadelta", {}),
    "Adadelta_rho_eps_wd_maximize": ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1,
                                                  "maximize": True}),
    "Rprop": ("Rprop", {}),
    "Rprop_etas_step_sizes_maximize": ("Rprop", {"lr": 0.02, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05),
                                                 "maximize": True}),
    # t0 = 3: the average of the iterates starts moving from step 4
    "ASGD": ("ASGD", {}),
    "ASGD_t0_wd": ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
}

STEPS = 10


def _problem():
    raw = [torch.randn(4, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)]
    x = torch.randn(5, 4, dtype=torch.float64)
    return raw, x


def _loss(x, p):
    return ((x @ p[0] + p[1]).tanh() ** 2).sum()


def _make(name, lib, params, kw):
    lr = kw.get("lr", getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)]).defaults["lr"])
    return getattr(lib, name)([{"params": [params[0]]}, {"params": [params[1]], "lr": lr / 2}], **kw)

def _steps_match(g_opt, gp, gx, t_opt, tp, x, steps):
    """Runs steps of both optimizers on the problem; genesis's parameters equal torch's after each."""
    for _ in range(steps):
        g_opt.zero_grad()
        t_opt.zero_grad()
        _loss(gx, gp).backward()
        _loss(x, tp).backward()
        g_opt.step()
        t_opt.step()
        for g, t in zip(gp, tp):
            close(g, t, rtol=0, atol=1e-10)



@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_steps_match_torch_with_param_groups(config):
    name, kw = CONFIGS[config]
    raw, x = _problem()
    gp = [from_torch(r, requires_grad=True) for r in raw]
    tp = [r.clone().requires_grad_(True) for r in raw]
    g_opt, t_opt = _make(name, optim, gp, kw), _make(name, torch.optim, tp, kw)
    _steps_match(g_opt, gp, from_torch(x), t_opt, tp, x, STEPS)
    # The state: same names and values as torch's.
    g_sd, t_sd = g_opt.state_dict(), t_opt.state_dict()
    for i in range(2):
        gs, ts = g_sd["state"][i], t_sd["state"][i]
        assert sorted(gs) == sorted(ts)
        assert int(gs["step"]) == int(ts["step"]) == STEPS
        for k in ts:
            if k != "step":
                close(gs[k], ts[k].reshape(gs[k].shape), rtol=0, atol=1e-10)
    for gg, tg in zip(g_sd["param_groups"], t_sd["param_groups"]):
        for k, v in tg.items():
            if k not in ("params", "foreach", "differentiable"):
                assert gg[k] == v, k


def test_group_options_are_torch_defaults():
    p = genesis.zeros(2, requires_grad=True)
    t = torch.zeros(2, requires_grad=True)
    for name in ("RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS"):
        g, tt = getattr(optim, name)([p]).param_groups[0], getattr(torch.optim, name)([t]).param_groups[0]
        for k, v in tt.items():
            if k in ("params", "foreach", "differentiable"):
                continue
            assert g[k] == v and isinstance(g[k], bool) == isinstance(v, bool), (name, k, g[k], v)


@pytest.mark.parametrize("config", ["RMSprop_centered_momentum_wd", "Adagrad_decay_wd_init", "Adamax_betas_wd_maximize",
                                    "NAdam_wd_momentum_decay", "RAdam_beta2_wd", "Adadelta_rho_eps_wd_maximize",
                                    "Rprop_etas_step_sizes_maximize", "ASGD_t0_wd"])
def test_state_dict_round_trip_continues_identically(config):
    name, kw = CONFIGS[config]
    raw, x = _problem()
    gx = from_torch(x)

    def run(steps, p, opt):
        for _ in range(steps):
            opt.zero_grad()
            _loss(gx, p).backward()
            opt.step()

    a = [from_torch(r, requires_grad=True) for r in raw]
    opt_a = _make(name, optim, a, kw)
    run(4, a, opt_a)
    sd = opt_a.state_dict()
    b = [from_torch(torch.from_numpy(p.detach().numpy().copy()), requires_grad=True) for p in a]
    opt_b = _make(name, optim, b, kw)
    opt_b.load_state_dict(sd)
    run(3, a, opt_a)
    run(3, b, opt_b)
    for pa, pb in zip(a, b):
        assert pa.tolist() == pb.tolist()


def test_state_dict_from_torch_loads():
    # torch's NAdam state (tensor step, 0-d mu_product) drives genesis on to the same parameters.
    raw, x = _problem()
    gx = from_torch(x)
    tp = [r.clone().requires_grad_(True) for r in raw]
    t_opt = torch.optim.NAdam(tp, lr=0.01)
    for _ in range(3):
        t_opt.zero_grad()
        _loss(x, tp).backward()
        t_opt.step()
    sd = t_opt.state_dict()
    g_sd = {"state": {i: {k: (v if k == "step" else from_torch(v)) for k, v in s.items()}
                      for i, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}  # foreach=None as torch writes it
    gp = [from_torch(p.detach(), requires_grad=True) for p in tp]
    g_opt = optim.NAdam(gp, lr=0.01)
    g_opt.load_state_dict(g_sd)
    _steps_match(g_opt, gp, gx, t_opt, tp, x, 2)


def test_torch_group_flags():
    p = genesis.zeros(2, requires_grad=True)
    opt = optim.RMSprop([{"params": [p], "differentiable": False, "foreach": True}], lr=0.1)
    assert "differentiable" not in opt.param_groups[0]
    with pytest.raises(ValueError, match="differentiable=True"):
        optim.RMSprop([{"params": [p], "differentiable": True}])


def test_bad_state_dict_is_refused():
    p = genesis.zeros(3, requires_grad=True)
    opt = optim.NAdam([p])
    p.grad = genesis.ones(3)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["mu_product"] = genesis.ones(2)
    q = genesis.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="mu_product"):
        optim.NAdam([q]).load_state_dict(sd)
    sd["state"][0]["mu_product"] = "one"
    with pytest.raises(TypeError, match="mu_product"):
        optim.NAdam([q]).load_state_dict(sd)


BAD_ARGS = [
    ("RMSprop", {"lr": -0.1}), ("RMSprop", {"alpha": -0.5}), ("RMSprop", {"momentum": -1.0}),
    ("RMSprop", {"eps": -1e-08}), ("RMSprop", {"weight_decay": -2.0}),
    ("Adagrad", {"lr_decay": -0.1}), ("Adagrad", {"initial_accumulator_value": -1.0}), ("Adagrad", {"eps": -1.0}),
    ("Adamax", {"betas": (1.0, 0.9)}), ("Adamax", {"betas": (0.9, -0.1)}), ("Adamax", {"weight_decay": -0.1}),
    ("NAdam", {"momentum_decay": -0.004}), ("NAdam", {"lr": -1.0}), ("RAdam", {"eps": -0.1}),
    ("Adadelta", {"rho": 1.5}), ("Adadelta", {"eps": -1.0}), ("Rprop", {"etas": (1.2, 0.5)}),
    ("Rprop", {"etas": (0.5, 1.0)}), ("ASGD", {"weight_decay": -0.1}),
]


@pytest.mark.parametrize("name,kw", BAD_ARGS)
def test_bad_arguments_raise_as_torch(name, kw):
    with pytest.raises(ValueError) as t_err:
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kw)
    with pytest.raises(ValueError) as g_err:
        getattr(optim, name)([genesis.zeros(1, requires_grad=True)], **kw)
    assert str(g_err.value) == str(t_err.value)


def test_lbfgs_bad_arguments():
    p, q = genesis.zeros(1, requires_grad=True), genesis.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [q], "lr": 0.1}])
    with pytest.raises(TypeError):
        optim.LBFGS([p]).step()


# ------------------------------------------------------------------------ LBFGS

A0 = [[-1.2, 1.0, -0.5, 0.8], [[1.5, -0.3], [0.2, 2.0]]]


def _rosenbrock(v):
    # A Rosenbrock valley with curvature 10 (not 100) keeps torch's and genesis's rounding differences small.
    return (10 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2).sum()


LBFGS_CASES = {
    "strong_wolfe": ({"line_search_fn": "strong_wolfe"}, 3),
    "strong_wolfe_short_history": ({"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 7}, 5),
    "fixed_step": ({"lr": 0.3}, 4),
    "fixed_step_short_history": ({"lr": 1.0, "history_size": 2, "max_iter": 10}, 4),
    "max_eval_tolerances": ({"lr": 0.5, "max_eval": 6, "tolerance_change": 1e-4, "tolerance_grad": 1e-3}, 6),
}


@pytest.mark.parametrize("case", sorted(LBFGS_CASES))
def test_lbfgs_matches_torch_on_rosenbrock(case):
    kw, steps = LBFGS_CASES[case]
    ta, tb = (torch.tensor(a, requires_grad=True) for a in A0)
    ga, gb = (genesis.tensor(a, dtype=genesis.float64, requires_grad=True) for a in A0)
    t_opt, g_opt = torch.optim.LBFGS([ta, tb], **kw), optim.LBFGS([ga, gb], **kw)
    calls = []

    def t_closure():
        t_opt.zero_grad()
        loss = _rosenbrock(ta) + _rosenbrock(tb.reshape(-1))
        loss.backward()
        return loss

    def g_closure():
        calls.append(genesis.is_grad_enabled())
        g_opt.zero_grad()
        loss = _rosenbrock(ga) + _rosenbrock(gb.reshape(-1))
        loss.backward()
        return loss

    for _ in range(steps):
        t_loss, g_loss = t_opt.step(t_closure), g_opt.step(g_closure)
        assert isinstance(g_loss, genesis.Tensor)
        assert abs(g_loss.item() - t_loss.item()) <= 1e-10 * max(1.0, abs(t_loss.item()))
        close(ga, ta, rtol=0, atol=1e-10)
        close(gb, tb, rtol=0, atol=1e-10)
        t_state, g_state = t_opt.state[ta], g_opt.state_dict()["state"][0]
        assert (g_state["func_evals"], g_state["n_iter"]) == (t_state["func_evals"], t_state["n_iter"])
        assert g_state["t"] == pytest.approx(float(t_state["t"]), rel=1e-9)
        assert g_state["ro"].shape[0] == len(t_state["ro"]) <= g_opt.param_groups[0]["history_size"]
    assert all(calls)  # the closure always runs with gradients enabled
    assert len(calls) == t_state["func_evals"]


def test_lbfgs_state_dict_round_trip_and_optimum():
    def make():
        p = genesis.tensor(A0[0], dtype=genesis.float64, requires_grad=True)
        opt = optim.LBFGS([p], line_search_fn="strong_wolfe", history_size=4, max_iter=5)

        def closure():
            opt.zero_grad()
            loss = _rosenbrock(p)
            loss.backward()
            return loss
        return p, opt, closure

    p, opt, closure = make()
    for _ in range(2):
        opt.step(closure)
    sd = opt.state_dict()
    assert "step" not in sd["state"][0] and isinstance(sd["state"][0]["n_iter"], int)
    q, opt_q, closure_q = make()
    with genesis.no_grad():
        q.copy_(p)
    opt_q.load_state_dict(sd)
    for _ in range(3):
        opt.step(closure)
        opt_q.step(closure_q)
        assert p.tolist() == q.tolist()
    for _ in range(20):
        opt.step(closure)
    assert _rosenbrock(p).item() < 1e-9  # the minimum of the valley: all ones
    np.testing.assert_allclose(p.detach().numpy(), np.ones(4), atol=1e-4)
    bad = opt.state_dict()
    bad["state"][0]["d"] = genesis.zeros(3, dtype=genesis.float64)
    with pytest.raises(ValueError, match="'d'"):
        make()[1].load_state_dict(bad)


def test_lbfgs_closure_may_return_a_float():
    p = genesis.tensor([3.0], dtype=genesis.float64, requires_grad=True)
    opt = optim.LBFGS([p])

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss.item()
    assert opt.step(closure) == 4.0
    assert abs(p.item() - 1) < 1e-6


# -------------------------------------------------------------------- schedulers

def _pair(opt_name="SGD", opt_kw=None, groups=1):
    opt_kw = {"lr": 0.1, "momentum": 0.9} if opt_kw is None else opt_kw

    def params(lib):
        ps = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
        return [{"params": [p], "lr": opt_kw["lr"] * (i + 1)} for i, p in enumerate(ps)]
    return getattr(optim, opt_name)(params(genesis), **opt_kw), getattr(torch.optim, opt_name)(params(torch), **opt_kw)


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum", 0.0) for g in opt.param_groups]


def _compare(make_g, make_t, steps=30, **pair):
    g_opt, t_opt = _pair(**pair)
    gs, ts = make_g(g_opt), make_t(t_opt)
    seq = []
    for _ in range(steps + 1):
        assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
        assert [g["lr"] for g in g_opt.param_groups] == pytest.approx([g["lr"] for g in t_opt.param_groups],
                                                                       rel=1e-12, abs=1e-15)
        assert _momenta(g_opt) == pytest.approx(_momenta(t_opt), rel=1e-12)
        seq.append(ts.get_last_lr()[0])
        g_opt.step()
        t_opt.step()
        gs.step()
        ts.step()
    assert len(set(seq)) > 1  # the schedule moved
    return gs, ts


class Halve:
    """A callable object as lr_lambda (not a plain function)."""

    def __call__(self, epoch):
        return 0.5 ** (epoch // 4)


SCHEDULERS = {
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=12, power=2.0),
    "PolynomialLR_default": lambda L, o: L.PolynomialLR(o),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=7),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lambda e: 0.9 if e % 3 else 1.05),
    "LambdaLR_callable_object": lambda L, o: L.LambdaLR(o, Halve()),
    "LambdaLR_per_group": lambda L, o: L.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.97 ** e]),
    "SequentialLR_two": lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.1, total_iters=2), L.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "SequentialLR_three": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.2, total_iters=4), L.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
            L.MultiStepLR(o, milestones=[3, 5], gamma=0.5)], milestones=[4, 12]),
    "SequentialLR_step_poly": lambda L, o: L.SequentialLR(
        o, [L.StepLR(o, step_size=2, gamma=0.7), L.PolynomialLR(o, total_iters=9, power=1.5)], milestones=[7]),
    "ChainedScheduler": lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.1, total_iters=3), L.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler_three": lambda L, o: L.ChainedScheduler(
        [L.StepLR(o, step_size=4, gamma=0.5), L.MultiplicativeLR(o, lambda e: 0.98), L.LinearLR(o, 0.5, 1.0, 6)]),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.001),
    "CosineAnnealingWarmRestarts_T_mult": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "CyclicLR_triangular": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR_triangular2_down": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                         mode="triangular2"),
    "CyclicLR_exp_range": lambda L, o: L.CyclicLR(o, 0.01, [0.1, 0.3], step_size_up=5, mode="exp_range", gamma=0.9,
                                                  base_momentum=[0.7, 0.75], max_momentum=0.95),
    "CyclicLR_scale_fn_iterations": lambda L, o: L.CyclicLR(o, [0.02, 0.01], 0.2, step_size_up=3,
                                                            scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations"),
    "CyclicLR_scale_fn_cycle": lambda L, o: L.CyclicLR(o, 0.02, 0.2, step_size_up=2, step_size_down=4,
                                                       scale_fn=lambda c: [1.0, 0.8, 0.5, 0.3, 0.2, 0.1][c % 6]),
}


@pytest.mark.filterwarnings("ignore:The epoch parameter")  # torch's SequentialLR warns about itself
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_matches_torch(name):
    make = SCHEDULERS[name]
    _compare(lambda o: make(GS, o), lambda o: make(TS, o), groups=2)


def test_cyclic_lr_without_momentum_on_adam():
    kw = {"opt_name": "Adam", "opt_kw": {"lr": 0.001}}
    _compare(lambda o: GS.CyclicLR(o, 0.001, 0.01, step_size_up=4, cycle_momentum=False),
             lambda o: TS.CyclicLR(o, 0.001, 0.01, step_size_up=4, cycle_momentum=False), **kw)
    g_opt, t_opt = _pair(**kw)
    with pytest.raises(ValueError) as t_err:
        TS.CyclicLR(t_opt, 0.001, 0.01)
    with pytest.raises(ValueError) as g_err:
        GS.CyclicLR(g_opt, 0.001, 0.01)
    assert str(g_err.value) == str(t_err.value)


def test_onecycle_cycles_rmsprop_momentum_and_nadam_beta1():
    _compare(lambda o: GS.OneCycleLR(o, max_lr=0.05, total_steps=31),
             lambda o: TS.OneCycleLR(o, max_lr=0.05, total_steps=31), opt_name="RMSprop",
             opt_kw={"lr": 0.01, "momentum": 0.9})
    _compare(lambda o: GS.OneCycleLR(o, max_lr=0.05, total_steps=31),
             lambda o: TS.OneCycleLR(o, max_lr=0.05, total_steps=31), opt_name="NAdam", opt_kw={"lr": 0.01})


def test_step_with_epoch_uses_the_closed_form():
    makes = [lambda L, o: L.StepLR(o, 3, 0.5), lambda L, o: L.MultiStepLR(o, [2, 5, 5], 0.1),
             lambda L, o: L.ExponentialLR(o, 0.9), lambda L, o: L.CosineAnnealingLR(o, 7, 0.001),
             lambda L, o: L.LinearLR(o, 0.25, 1.0, 4), lambda L, o: L.ConstantLR(o, 0.5, 3),
             lambda L, o: L.PolynomialLR(o, 6, 2.0)]
    for make in makes:
        g_opt, t_opt = _pair()
        gs, ts = make(GS, g_opt), make(TS, t_opt)
        for epoch in (4, 1, 9, 0, 2, 6):
            with pytest.warns(UserWarning, match="epoch parameter"):
                gs.step(epoch)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ts.step(epoch)
            assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
            assert gs.last_epoch == ts.last_epoch == epoch


@pytest.mark.parametrize("t_mult", [1, 2, 3])
def test_warm_restarts_at_fractional_epochs(t_mult):
    g_opt, t_opt = _pair(groups=2)
    gs = GS.CosineAnnealingWarmRestarts(g_opt, T_0=3, T_mult=t_mult, eta_min=0.001)
    ts = TS.CosineAnnealingWarmRestarts(t_opt, T_0=3, T_mult=t_mult, eta_min=0.001)
    iters = 4
    for epoch in range(12):
        for i in range(iters):
            gs.step(epoch + i / iters)
            ts.step(epoch + i / iters)
            assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
            assert gs.last_epoch == ts.last_epoch
    gs.step(26)  # interleaved: an explicit epoch, then on from there
    ts.step(26)
    for _ in range(5):
        gs.step()
        ts.step()
        assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
    with pytest.raises(ValueError) as t_err:
        ts.step(-0.5)
    with pytest.raises(ValueError) as g_err:
        gs.step(-0.5)
    assert str(g_err.value) == str(t_err.value)


METRICS = [1.0, 0.9, 0.95, 0.95, 0.9, 0.89995, 0.91, 0.92, 0.93, 0.7, 0.7, 0.71, 0.72, 0.72, 0.73, 0.74, 0.75,
           0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4, 0.41, 0.42, 0.43, 0.44, 0.45, 0.46, 0.47, 0.48, 0.49,
           0.5, 0.5, 0.4, 0.39995, 0.45]

PLATEAU = {
    "default": {},
    "patience_factor": {"patience": 2, "factor": 0.5},
    "max_abs_cooldown": {"mode": "max", "threshold_mode": "abs", "threshold": 0.02, "patience": 1, "cooldown": 2},
    "min_lr_per_group": {"patience": 1, "factor": 0.3, "min_lr": [0.005, 0.05]},
    "eps": {"patience": 0, "factor": 0.5, "eps": 0.02},
    "rel_threshold": {"threshold": 0.1, "patience": 1, "cooldown": 1, "min_lr": 0.01},
}


@pytest.mark.parametrize("case", sorted(PLATEAU))
def test_reduce_lr_on_plateau_matches_torch(case):
    kw = PLATEAU[case]
    g_opt, t_opt = _pair(groups=2)
    gs, ts = GS.ReduceLROnPlateau(g_opt, **kw), TS.ReduceLROnPlateau(t_opt, **kw)
    lrs = set()
    for i, m in enumerate(METRICS):
        metric = genesis.tensor(m, dtype=genesis.float64) if i % 2 else m  # a 0-d tensor or a float
        gs.step(metric)
        ts.step(m)
        assert [g["lr"] for g in g_opt.param_groups] == pytest.approx([g["lr"] for g in t_opt.param_groups],
                                                                       rel=1e-12)
        assert gs.get_last_lr() == pytest.approx(ts._last_lr, rel=1e-12)
        assert (gs.best, gs.num_bad_epochs, gs.cooldown_counter, gs.last_epoch, gs.in_cooldown) == \
            (ts.best, ts.num_bad_epochs, ts.cooldown_counter, ts.last_epoch, ts.in_cooldown)
        lrs.add(g_opt.param_groups[0]["lr"])
    assert len(lrs) > 1


def test_reduce_lr_on_plateau_verbose_prints_as_torch(capsys):
    g_opt, t_opt = _pair()
    gs = GS.ReduceLROnPlateau(g_opt, patience=0, verbose=True)
    ts = TS.ReduceLROnPlateau(t_opt, patience=0, verbose=True)
    for m in (1.0, 2.0, 3.0):
        ts.step(m)
    t_out = capsys.readouterr().out
    for m in (1.0, 2.0, 3.0):
        gs.step(m)
    g_out = capsys.readouterr().out
    assert g_out == t_out and "reducing learning rate of group 0 to 1.0000e-03." in g_out


SCHED_ERRORS = [
    lambda L, o: L.ReduceLROnPlateau(o, factor=1.0),
    lambda L, o: L.ReduceLROnPlateau(o, mode="maximum"),
    lambda L, o: L.ReduceLROnPlateau(o, threshold_mode="relative"),
    lambda L, o: L.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]),
    lambda L, o: L.ConstantLR(o, factor=1.5),
    lambda L, o: L.CyclicLR(o, 0.01, 0.1, mode="sawtooth"),
    lambda L, o: L.CyclicLR(o, [0.01, 0.02], 0.1),
    lambda L, o: L.SequentialLR(o, [L.ConstantLR(o), L.ExponentialLR(o, 0.9)], milestones=[2, 4]),
    lambda L, o: L.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 0.8]),
]


@pytest.mark.parametrize("i", range(len(SCHED_ERRORS)))
def test_scheduler_errors_as_torch(i):
    g_opt, t_opt = _pair()
    with pytest.raises(ValueError) as t_err:
        SCHED_ERRORS[i](TS, t_opt)
    with pytest.raises(ValueError) as g_err:
        SCHED_ERRORS[i](GS, g_opt)
    assert str(g_err.value) == str(t_err.value)


def test_sequential_lr_needs_schedulers_of_its_optimizer():
    g_opt, _ = _pair()
    other, _ = _pair()
    with pytest.raises(ValueError, match="same optimizer"):
        GS.SequentialLR(g_opt, [GS.ConstantLR(g_opt), GS.ExponentialLR(other, 0.9)], milestones=[2])
    with pytest.raises(TypeError, match="learning-rate schedulers"):
        GS.ChainedScheduler([GS.ConstantLR(g_opt), GS.ReduceLROnPlateau(g_opt)])
    s = GS.ChainedScheduler([GS.ConstantLR(g_opt), GS.ExponentialLR(g_opt, 0.9)])
    assert len(s._schedulers) == 2 and s.optimizer is g_opt


@pytest.mark.parametrize("kind", ["SequentialLR", "ChainedScheduler", "CyclicLR", "ReduceLROnPlateau"])
def test_scheduler_state_dict_resumes(kind):
    def make(opt):
        if kind == "SequentialLR":
            return GS.SequentialLR(opt, [GS.LinearLR(opt, 0.2, 1.0, 3), GS.CosineAnnealingLR(opt, 5, 0.01)], [4])
        if kind == "ChainedScheduler":
            return GS.ChainedScheduler([GS.StepLR(opt, 3, 0.5), GS.ExponentialLR(opt, 0.95)])
        if kind == "CyclicLR":
            return GS.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
        return GS.ReduceLROnPlateau(opt, patience=1, cooldown=1)

    def advance(s):
        if kind == "ReduceLROnPlateau":
            s.step(1.0)
        else:
            s.step()

    oa, _ = _pair()
    sa = make(oa)
    for _ in range(7):
        advance(sa)
    ob, _ = _pair()
    ob.load_state_dict(oa.state_dict())
    sb = make(ob)
    sb.load_state_dict(sa.state_dict())
    ob.load_state_dict(oa.state_dict())  # the new scheduler's constructor moved the lr
    for _ in range(10):
        advance(sa)
        advance(sb)
        assert sa.get_last_lr() == sb.get_last_lr()
        assert [g["lr"] for g in oa.param_groups] == [g["lr"] for g in ob.param_groups]


def test_wrong_types_raise_type_errors_in_python_words():
    p = genesis.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="base_lr must be a number, not str"):
        GS.CyclicLR(optim.SGD([p], momentum=0.9), "a", 0.1)
    with pytest.raises(TypeError, match="the result of lr_lambda must be a number, not list"):
        GS.LambdaLR(optim.SGD([p]), lambda e: [1])
    with pytest.raises(TypeError, match="option 'lr' must be a number, not str"):
        optim.RMSprop([{"params": [p], "lr": "x"}])
    with pytest.raises(TypeError, match="lr_lambda must be callable"):
        GS.MultiplicativeLR(optim.SGD([p]), 0.9)
    # NumPy scalars and 0-d tensors are numbers.
    assert optim.Adagrad([{"params": [p], "lr": np.float32(0.5)}]).param_groups[0]["lr"] == 0.5
    s = GS.LambdaLR(optim.SGD([p], lr=1.0), lambda e: genesis.tensor(0.25))
    assert s.get_last_lr() == [0.25]


def test_step_closure_runs_with_gradients_enabled():
    p = genesis.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.RMSprop([p])
    seen = []

    def closure():
        seen.append(genesis.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    with genesis.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0 and genesis.is_grad_enabled()
    assert p.tolist() != [1.0, 2.0]
