# gen_expected.py - writes expected_data.h (PyTorch 1.13 reference values for
# optim_test.cpp).  Run: /usr/bin/python3 gen_expected.py > expected_data.h
import math
import warnings

import torch

warnings.filterwarnings("ignore", "The epoch parameter")  # torch's SequentialLR warns about its own step(0)

torch.set_default_dtype(torch.float64)
P0 = [[1.0, -2.0, 3.0, 0.5], [[0.3, -0.7, 1.1], [2.0, -0.1, 0.25]]]


def grad(k, j, n):  # gradient of param j at step k (1-based): cos(0.7*k + 1.3*i + j)
    return torch.tensor([math.cos(0.7 * k + 1.3 * i + j) for i in range(n)])


def run(cls, groups_kw, kw, steps=5):  # params after each step
    ps = [torch.tensor(P0[0], requires_grad=True), torch.tensor(P0[1], requires_grad=True)]
    if groups_kw is None:
        opt = cls(ps, **kw)
    else:
        opt = cls([dict(params=[ps[0]], **groups_kw[0]), dict(params=[ps[1]], **groups_kw[1])], **kw)
    out = []
    for k in range(1, steps + 1):
        for j, p in enumerate(ps):
            p.grad = grad(k, j, p.numel()).reshape(p.shape)
        opt.step()
        for p in ps:
            out += p.detach().flatten().tolist()
    return out


OPT_CASES = [
    ("sgd_plain", torch.optim.SGD, None, dict(lr=0.1)),
    ("sgd_momentum", torch.optim.SGD, None, dict(lr=0.1, momentum=0.9)),
    ("sgd_dampening", torch.optim.SGD, None, dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov", torch.optim.SGD, None, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd_maximize", torch.optim.SGD, None, dict(lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("adam_plain", torch.optim.Adam, None, dict(lr=0.01)),
    ("adam_wd", torch.optim.Adam, None, dict(lr=0.02, weight_decay=0.1)),
    ("adam_max", torch.optim.Adam, None, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, maximize=True)),
    ("adamw_plain", torch.optim.AdamW, None, dict(lr=0.01)),
    ("adamw_wd_max", torch.optim.AdamW, None, dict(lr=0.05, weight_decay=0.1, maximize=True)),
    # beta2 = 0.5: exp_avg_sq falls below its running max within the five steps
    ("adam_amsgrad", torch.optim.Adam, None, dict(lr=0.05, betas=(0.9, 0.5), weight_decay=0.1, amsgrad=True)),
    ("adamw_amsgrad_max", torch.optim.AdamW, None,
     dict(lr=0.05, betas=(0.8, 0.5), weight_decay=0.1, amsgrad=True, maximize=True)),
    ("sgd_groups", torch.optim.SGD, [dict(lr=0.1), dict(lr=0.01, momentum=0.5)], dict(lr=1.0, momentum=0.9)),
    ("adamw_groups", torch.optim.AdamW, [dict(), dict(lr=0.1, weight_decay=0.0)], dict(lr=0.01)),
    ("rmsprop_plain", torch.optim.RMSprop, None, dict(lr=0.01)),
    ("rmsprop_centered", torch.optim.RMSprop, None, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("rmsprop_max", torch.optim.RMSprop, None, dict(lr=0.02, alpha=0.9, eps=1e-6, maximize=True)),
    ("rmsprop_groups", torch.optim.RMSprop, [dict(), dict(lr=0.005, momentum=0.5, centered=True)], dict(lr=0.01)),
    ("adagrad_plain", torch.optim.Adagrad, None, dict(lr=0.1)),
    ("adagrad_decay", torch.optim.Adagrad, None,
     dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("adagrad_max", torch.optim.Adagrad, None, dict(lr=0.05, eps=1e-3, maximize=True)),
    ("adamax_plain", torch.optim.Adamax, None, dict(lr=0.01)),
    ("adamax_wd_max", torch.optim.Adamax, None, dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("nadam_plain", torch.optim.NAdam, None, dict(lr=0.01)),
    ("nadam_wd", torch.optim.NAdam, None, dict(lr=0.01, betas=(0.85, 0.99), weight_decay=0.1, momentum_decay=0.02)),
    ("radam_plain", torch.optim.RAdam, None, dict(lr=0.01)),
    # beta2 = 0.9 over 8 steps: the rectified update (rho_t > 5) from step 6
    ("radam_rect", torch.optim.RAdam, None, dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1), 8),
    ("adadelta_plain", torch.optim.Adadelta, None, dict()),
    ("adadelta_wd_max", torch.optim.Adadelta, None, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("rprop_plain", torch.optim.Rprop, None, dict()),
    ("rprop_etas_max", torch.optim.Rprop, None, dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
    # t0 = 2: the average of the iterates moves from step 3
    ("asgd_t0", torch.optim.ASGD, None, dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)),
]


def rosenbrock(v):  # a Rosenbrock valley with curvature 10 (the C++ test computes the same)
    return (10 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2).sum()


def lbfgs_run(kw, steps):  # per step: the loss returned, func_evals, n_iter, then both params
    ps = [torch.tensor([-1.2, 1.0, -0.5, 0.8], requires_grad=True),
          torch.tensor([[1.5, -0.3, 0.2], [2.0, 0.7, -0.4]], requires_grad=True)]
    opt = torch.optim.LBFGS(ps, **kw)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(ps[0]) + rosenbrock(ps[1].reshape(-1))
        loss.backward()
        return loss
    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        st = opt.state[ps[0]]
        out += [loss.item(), st["func_evals"], st["n_iter"]]
        for p in ps:
            out += p.detach().flatten().tolist()
    return out


LBFGS_CASES = [
    ("lbfgs_wolfe", lbfgs_run(dict(line_search_fn="strong_wolfe"), 3)),
    ("lbfgs_wolfe_history", lbfgs_run(dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7), 4)),
    ("lbfgs_fixed", lbfgs_run(dict(lr=0.3), 3)),
    ("lbfgs_fixed_history", lbfgs_run(dict(history_size=2, max_iter=10), 3)),
]


def sched_run(make, opt_cls=torch.optim.SGD, opt_kw=dict(lr=0.1, momentum=0.9), steps=20, mom=False):
    p = torch.zeros(2, requires_grad=True)
    opt = opt_cls([p], **opt_kw)
    s = make(opt)
    def m():
        g = opt.param_groups[0]
        return g['betas'][0] if 'betas' in g else g['momentum']
    lrs, moms = [s.get_last_lr()[0]], [m()]
    for _ in range(steps):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        moms.append(m())
    return lrs + (moms if mom else [])


def hf_cosine(opt, warm, total, cycles=0.5):  # transformers.get_cosine_schedule_with_warmup
    def f(step):
        if step < warm:
            return float(step) / float(max(1, warm))
        progress = float(step - warm) / float(max(1, total - warm))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(cycles) * 2.0 * progress)))
    return torch.optim.lr_scheduler.LambdaLR(opt, f)


S = torch.optim.lr_scheduler
SCHED_CASES = [
    ("lambda", sched_run(lambda o: S.LambdaLR(o, lambda e: 0.95 ** e))),
    ("step", sched_run(lambda o: S.StepLR(o, step_size=3, gamma=0.5))),
    ("multistep", sched_run(lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 11], gamma=0.1))),
    ("exponential", sched_run(lambda o: S.ExponentialLR(o, gamma=0.9))),
    ("cosine", sched_run(lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001))),
    ("linear", sched_run(lambda o: S.LinearLR(o, start_factor=0.25, total_iters=6))),
    ("warmup_cosine", sched_run(lambda o: hf_cosine(o, 4, 16))),
    ("onecycle", sched_run(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=21), mom=True)),
    ("onecycle3", sched_run(lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=25, three_phase=True,
                                                    anneal_strategy='linear'), mom=True)),
    ("onecycle_adam", sched_run(lambda o: S.OneCycleLR(o, max_lr=0.01, total_steps=20, pct_start=0.25),
                                torch.optim.Adam, dict(lr=0.001), steps=19, mom=True)),
    ("polynomial", sched_run(lambda o: S.PolynomialLR(o, total_iters=12, power=2.0))),
    ("constant", sched_run(lambda o: S.ConstantLR(o, factor=0.25, total_iters=7))),
    ("multiplicative", sched_run(lambda o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 3 else 1.05))),
    ("sequential", sched_run(lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=2),
                                                           S.ExponentialLR(o, gamma=0.9)], milestones=[5]))),
    ("sequential3", sched_run(lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.2, total_iters=4), S.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
            S.MultiStepLR(o, milestones=[3, 5], gamma=0.5)], milestones=[4, 12]))),
    ("chained", sched_run(lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=3),
                                                         S.ExponentialLR(o, gamma=0.9)]))),
    ("cyclic", sched_run(lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4), mom=True)),
    ("cyclic2", sched_run(lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5, mode="triangular2",
                                               base_momentum=0.7, max_momentum=0.95), mom=True)),
    ("warm_restarts", sched_run(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001))),
    ("cyclic_exp", sched_run(lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.9),
                             mom=True)),
]

METRICS = [1.0, 0.9, 0.95, 0.95, 0.9, 0.89995, 0.91, 0.92, 0.93, 0.7, 0.7, 0.71, 0.72, 0.72, 0.73, 0.74, 0.75,
           0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4, 0.41, 0.42, 0.43, 0.44, 0.45, 0.46, 0.47, 0.48, 0.49]


def plateau_run(**kw):  # the lr after each step(metric)
    opt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    s = S.ReduceLROnPlateau(opt, **kw)
    out = []
    for m in METRICS:
        s.step(m)
        out.append(opt.param_groups[0]["lr"])
    return out


PLATEAU_CASES = [
    ("plateau_patience", plateau_run(patience=2, factor=0.5)),
    ("plateau_max_abs", plateau_run(mode="max", threshold_mode="abs", threshold=0.02, patience=1, cooldown=2)),
    ("plateau_min_lr_eps", plateau_run(patience=0, factor=0.3, min_lr=0.005, eps=0.002)),
]


def emit(name, vals):
    print("static const std::vector<double> %s = {" % name)
    for i in range(0, len(vals), 4):
        print("    " + ", ".join(repr(float(v)) for v in vals[i:i + 4]) + ",")
    print("};")


print("// expected_data.h - generated by gen_expected.py with Debian's torch %s; do not edit." % torch.__version__)
print("#pragma once\n#include <vector>\nnamespace expected {")
for name, cls, gk, kw, *steps in OPT_CASES:
    emit(name, run(cls, gk, kw, *steps))
for name, vals in LBFGS_CASES:
    emit(name, vals)
for name, vals in SCHED_CASES + PLATEAU_CASES:
    emit("sched_" + name, vals)
print("}  // namespace expected")
