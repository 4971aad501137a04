"""One rank of test_fsdp.py (started under `genesis launch`): genesis.distributed.fsdp against PyTorch.

    python3 fsdp_worker.py main | negative

Every rank builds the same oracle: torch.optim.AdamW with torch.nn.utils.clip_grad_norm_ in float64 on the
concatenation of every rank's batch, from rank 0's initial weights. "main" checks every strategy (5 steps),
no_sync and the bitwise equality of the ranks' parameters, and ends with "rank R done: N checks";
"negative" skips one unit's first reduction ($GENESIS_FSDP_SKIP_REDUCE) and must see the comparison fail.
"""
import os
import sys

import numpy as np
import torch

import genesis
import genesis.distributed as dist
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.distributed.fsdp import FullyShardedDataParallel as FSDP

CHECKS = []
WORST = [0.0]
B, LR, WD, CLIP = 5, 0.02, 0.1, 0.3


def ok(name):
    CHECKS.append(name)
    print(f"ok {name}", flush=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(7, 13)
        self.fc2 = nn.Linear(13, 13)
        self.fc3 = nn.Linear(13, 3)

    def forward(self, x):
        return self.fc3(self.fc2(self.fc1(x).tanh()).tanh())


def make(seed):
    genesis.manual_seed(seed)
    return Net().to(genesis.float64)


def batch(r, s):
    g = np.random.default_rng(1000 + 97 * r + 7919 * s)
    return g.standard_normal((B, 7)), g.standard_normal((B, 3))


def global_batch(world, s):
    xs, ys = zip(*(batch(r, s) for r in range(world)))
    return np.concatenate(xs), np.concatenate(ys)


def gt(a):
    return genesis.from_dlpack(np.ascontiguousarray(a)).clone()


def torch_net(ref):
    """A torch copy of a genesis Net (same weights, float64)."""
    t = torch.nn.Sequential(torch.nn.Linear(7, 13), torch.nn.Tanh(), torch.nn.Linear(13, 13), torch.nn.Tanh(),
                            torch.nn.Linear(13, 3)).double()
    names = {"fc1": t[0], "fc2": t[2], "fc3": t[4]}
    with torch.no_grad():
        for n, p in ref.named_parameters():
            mod, leaf = n.split(".")
            getattr(names[mod], leaf).copy_(torch.from_numpy(p.detach().numpy().copy()))
    return t, names


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def five_steps(strategy, per_layer, tol=1e-10):
    """5 AdamW steps with clipping against torch; returns the number of mismatches."""
    rank, world = dist.get_rank(), dist.get_world_size()
    what = f"{strategy}{', units fc1 fc2' if per_layer else ''}"
    model = make(100 + rank)  # rank-dependent: FSDP must broadcast rank 0's
    tnet, tmods = torch_net(make(100))
    fsdp = FSDP(model, sharding_strategy=strategy, units=[model.fc1, model.fc2] if per_layer else None, lr=LR,
                weight_decay=WD)
    topt = torch.optim.AdamW(tnet.parameters(), lr=LR, weight_decay=WD)
    bad = 0
    for s in range(5):
        fsdp.zero_grad()
        topt.zero_grad()
        x, y = batch(rank, s)
        loss = F.mse_loss(fsdp(gt(x)), gt(y))
        loss.backward()
        if strategy == "full":
            assert model.fc1.weight.numel() == 0, f"{what}: fc1.weight holds elements between uses"
        norm = fsdp.clip_grad_norm_(CLIP)
        fsdp.step()
        gx, gy = global_batch(world, s)
        tloss = torch.nn.functional.mse_loss(tnet(torch.from_numpy(gx)), torch.from_numpy(gy))
        tloss.backward()
        tnorm = float(torch.nn.utils.clip_grad_norm_(tnet.parameters(), CLIP))
        topt.step()
        e = abs(norm - tnorm) / tnorm
        WORST[0] = max(WORST[0], e)
        if not e <= tol:
            bad += 1
            print(f"mismatch: {what}, step {s}: gradient norm {norm} vs torch {tnorm}", flush=True)
    whole = fsdp.full_state_dict()
    for n, t in whole.items():
        mod, leaf = n.split(".")
        want = getattr(tmods[mod], leaf).detach().numpy()
        got = t.detach().numpy()
        e = rel(got, want)
        WORST[0] = max(WORST[0], e)
        if not e <= tol:
            bad += 1
            print(f"mismatch: {what}: {n} vs torch, relative error {e:.3e}", flush=True)
        parts = [None] * world
        dist.all_gather_object(parts, got.tobytes())
        assert all(p == parts[0] for p in parts), f"{what}: {n} differs between the ranks"
    return bad


def no_sync(strategy):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make(300 + rank)
    tnet, tmods = torch_net(make(300))
    fsdp = FSDP(model, sharding_strategy=strategy, units=[model.fc2], lr=LR, weight_decay=WD)
    topt = torch.optim.AdamW(tnet.parameters(), lr=LR, weight_decay=WD)
    for m in range(3):
        x, y = batch(rank, 10 + m)
        loss = F.mse_loss(fsdp(gt(x)), gt(y)) * (1.0 / 3)
        if m < 2:
            with fsdp.no_sync():
                loss.backward()
        else:
            loss.backward()
    fsdp.step()
    xs, ys = zip(*(global_batch(world, 10 + m) for m in range(3)))
    torch.nn.functional.mse_loss(tnet(torch.from_numpy(np.concatenate(xs))),
                                 torch.from_numpy(np.concatenate(ys))).backward()
    topt.step()
    for n, t in fsdp.full_state_dict().items():
        mod, leaf = n.split(".")
        e = rel(t.detach().numpy(), getattr(tmods[mod], leaf).detach().numpy())
        WORST[0] = max(WORST[0], e)
        assert e <= 1e-10, f"no_sync, {strategy}: {n} relative error {e:.3e}"


def main():
    dist.init_process_group("gloo")
    for strategy in ("optimizer", "grad_optimizer", "full"):
        for per_layer in (False, True):
            assert five_steps(strategy, per_layer) == 0, f"{strategy}: mismatches against torch (above)"
            ok(f"{strategy}{' per layer' if per_layer else ''}: 5 AdamW steps with clipping = torch, replicas equal")
        no_sync(strategy)
        ok(f"{strategy}: no_sync = one large batch")
    model = make(1)
    try:
        FSDP(model, sharding_strategy="zero4")
        raise AssertionError("an unknown strategy was accepted")
    except ValueError as e:
        assert "sharding_strategy" in str(e), e
    try:
        FSDP(model, units=[make(2).fc1])
        raise AssertionError("a unit outside the module was accepted")
    except ValueError as e:
        assert "not a submodule" in str(e), e
    ok("bad arguments raise ValueError")
    print(f"rank {dist.get_rank()} relative error vs torch float64: {WORST[0]:.3e}", flush=True)
    print(f"rank {dist.get_rank()} done: {len(CHECKS)} checks", flush=True)
    dist.destroy_process_group()


def negative():
    dist.init_process_group("gloo")
    os.environ["GENESIS_FSDP_SKIP_REDUCE"] = "0"
    bad = sum(five_steps(s, True) for s in ("optimizer", "grad_optimizer", "full"))
    dist.destroy_process_group()
    if bad < 3:
        print(f"rank {dist.get_rank()}: FAIL: the skipped reductions went unnoticed ({bad} mismatches)", flush=True)
        sys.exit(1)
    print(f"negative control caught: {bad} mismatches", flush=True)


def qwen():
    """The tiny Qwen2 fixture (tied embeddings), float64, one unit: 3 AdamW steps with clipping per strategy
    against a single-process genesis.optim.AdamW run on the concatenated batch."""
    from genesis.models import QwenForCausalLM
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(os.environ["GENESIS_SOURCE_DIR"], "tests", "fixtures", "qwen", "qwen2-tiny")

    def ids(r, s):
        return np.random.default_rng(50 + 31 * r + 977 * s).integers(0, 256, (2, 9))

    worst = 0.0
    for strategy in ("optimizer", "grad_optimizer", "full"):
        model = QwenForCausalLM.from_pretrained(path).to(genesis.float64)
        ref = QwenForCausalLM.from_pretrained(path).to(genesis.float64)
        fsdp = FSDP(model, sharding_strategy=strategy, lr=1e-3, weight_decay=0.1)
        opt = genesis.optim.AdamW(ref.parameters(), lr=1e-3, weight_decay=0.1)
        for s in range(3):
            fsdp.zero_grad()
            opt.zero_grad()
            x = ids(rank, s)
            loss = fsdp(gt(x[:, :-1]), gt(x[:, 1:]))
            loss.backward()
            norm = fsdp.clip_grad_norm_(0.5)
            fsdp.step()
            gx = np.concatenate([ids(r, s) for r in range(world)])
            ref(gt(gx[:, :-1]), gt(gx[:, 1:])).backward()
            rnorm = float(genesis.nn.utils.clip_grad_norm_(ref.parameters(), 0.5))
            opt.step()
            assert rnorm > 0.5, f"qwen: clipping did not act ({rnorm})"
            e = abs(norm - rnorm) / rnorm
            worst = max(worst, e)
            assert e <= 1e-10, f"qwen, {strategy}, step {s}: gradient norm {norm} vs {rnorm}"
        whole = fsdp.full_state_dict()
        for n, p in ref.named_parameters():
            e = rel(whole[n].detach().numpy(), p.detach().numpy())
            worst = max(worst, e)
            assert e <= 1e-10, f"qwen, {strategy}: {n} relative error {e:.3e}"
        ok(f"qwen2-tiny, {strategy}: 3 AdamW steps = the single-process run")
    print(f"rank {rank} qwen relative error vs single process: {worst:.3e}", flush=True)
    print(f"rank {rank} done: {len(CHECKS)} checks", flush=True)
    dist.destroy_process_group()


def qwen_ids(r, s):
    return np.random.default_rng(50 + 31 * r + 977 * s).integers(0, 256, (2, 9))


def qwen_model():
    from genesis.models import QwenForCausalLM
    path = os.path.join(os.environ["GENESIS_SOURCE_DIR"], "tests", "fixtures", "qwen", "qwen2-tiny")
    return QwenForCausalLM.from_pretrained(path).to(genesis.float64)


def next_step_losses(fsdp):
    """The mean loss of the 4-rank batch of step 7 before and after one step on it, split over the ranks."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = np.concatenate([qwen_ids(r, 7) for r in range(4)])
    per = len(x) // world
    mine = x[rank * per:(rank + 1) * per]
    losses = []
    for _ in range(2):
        fsdp.zero_grad()
        loss = fsdp(gt(mine[:, :-1]), gt(mine[:, 1:]))
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(float(mean.item()))
        loss.backward()
        fsdp.clip_grad_norm_(0.5)
        fsdp.step()
    return losses


def qwen_save(folder):
    """4 ranks: 2 steps, a sharded checkpoint, then the next step's losses written beside it."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    fsdp = FSDP(qwen_model(), sharding_strategy="full", lr=1e-3, weight_decay=0.1)
    for s in range(2):
        fsdp.zero_grad()
        x = qwen_ids(rank, s)
        fsdp(gt(x[:, :-1]), gt(x[:, 1:])).backward()
        fsdp.clip_grad_norm_(0.5)
        fsdp.step()
    fsdp.save_sharded(os.path.join(folder, "ckpt"))
    whole = {n: t.detach().numpy().copy() for n, t in fsdp.full_state_dict().items()}
    if rank == 0:
        np.savez(os.path.join(folder, "whole.npz"), **whole)
    losses = next_step_losses(fsdp)
    if rank == 0:
        with open(os.path.join(folder, "losses.txt"), "w") as f:
            f.write(" ".join(repr(v) for v in losses))
    dist.barrier()
    print(f"rank {rank} saved, next-step losses {losses}", flush=True)
    dist.destroy_process_group()


def qwen_resume(folder):
    """Any world size: the checkpoint loaded into a model with other weights gives the same losses."""
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = qwen_model()
    with genesis.no_grad():
        for p in model.parameters():
            p.mul_(0.5)  # other weights: everything must come from the checkpoint
    fsdp = FSDP(model, sharding_strategy="grad_optimizer" if world == 1 else "full", lr=1e-3, weight_decay=0.1)
    fsdp.load_sharded(os.path.join(folder, "ckpt"))
    saved = np.load(os.path.join(folder, "whole.npz"))
    for n, t in fsdp.full_state_dict().items():
        assert np.array_equal(t.detach().numpy(), saved[n]), f"resumed at {world}: {n} is not bitwise the saved one"
    with open(os.path.join(folder, "losses.txt")) as f:
        want = [float(v) for v in f.read().split()]
    got = next_step_losses(fsdp)
    errors = [abs(g - w) / abs(w) for g, w in zip(got, want)]
    # The model's loss is rounded to float32: the float64 parameters agree to ~1e-14 after the step.
    assert len(errors) == 2 and max(errors) <= 1e-6, f"resumed at {world}: losses {got} vs {want}"
    print(f"rank {rank} resumed at world size {world}: next-step losses {got}, relative error {max(errors):.3e}",
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    modes = {"main": main, "negative": negative, "qwen": qwen, "qwen_save": qwen_save, "qwen_resume": qwen_resume}
    modes[sys.argv[1]](*sys.argv[2:])
