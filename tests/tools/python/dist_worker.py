"""One rank of the distributed tests (test_distributed.py starts it under `genesis launch`).

    python3 dist_worker.py collectives | ddp | sampler | fail

Every check compares with a single-process computation made here from the same seeds: the data
of every rank is generated on every rank. A failed check raises (the rank exits non-zero and the
launcher stops the job); each passed one prints "ok <name>", and the rank ends with
"rank R done: N checks".
"""
import sys

import numpy as np

import genesis
import genesis.distributed as dist
import genesis.nn as nn
import genesis.optim as optim
from genesis.nn.parallel import DistributedDataParallel as DDP

CHECKS = []


def ok(name):
    CHECKS.append(name)
    print(f"ok {name}", flush=True)


def arr(t):
    return np.array(t.detach().numpy())


def rank_data(r, n, dtype, salt=0):
    """Rank r's input: floats in [-2, 2), ints in [-50, 50) (u8: [0, 100))."""
    g = np.random.default_rng(1000 * salt + 17 * r + n)
    if dtype in ("float32", "float64"):
        return g.uniform(-2, 2, n).astype(dtype)
    lo = 0 if dtype == "uint8" else -50
    return g.integers(lo, lo + 100, n).astype(dtype)


def as_tensor(a):
    return genesis.from_dlpack(np.ascontiguousarray(a)).clone()


def same(got, want, dtype, what, rtol=None):
    got = arr(got) if not isinstance(got, np.ndarray) else got
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    if dtype.startswith("float"):
        tol = rtol if rtol is not None else (2e-6 if dtype == "float32" else 1e-13)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=what)
    else:
        assert np.array_equal(got, want), f"{what}: {got} vs {want}"


# ------------------------------------------------------------------ collectives

def collectives():
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "gloo"
    assert dist.get_rank(dist.group.WORLD) == rank and dist.get_world_size(dist.group.WORLD) == world
    ok("rank_and_size")
    dtypes = ["float32", "float64", "int32", "int64", "uint8"]
    sizes = [1, 13, 4099]
    reducers = {
        dist.ReduceOp.SUM: lambda xs: np.sum(xs, axis=0, dtype=xs[0].dtype),
        dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0, dtype=xs[0].dtype),
        dist.ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
        dist.ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
        dist.ReduceOp.AVG: lambda xs: np.mean(np.array(xs, dtype=np.float64), axis=0).astype(xs[0].dtype),
    }
    for dtype in dtypes:
        for n in sizes:
            xs = [rank_data(r, n, dtype) for r in range(world)]
            for op, fn in reducers.items():
                if op == dist.ReduceOp.AVG and not dtype.startswith("float"):
                    continue
                data = xs if op != dist.ReduceOp.PRODUCT else [
                    (x % 3 + 1).astype(dtype) if not dtype.startswith("float") else (1 + x / 8).astype(dtype) for x in xs]
                t = as_tensor(data[rank])
                assert dist.all_reduce(t, op=op) is None
                same(t, fn(np.array(data)), dtype, f"all_reduce {op} {dtype} n={n}")
            # async, waited after the next call was started
            a, b = as_tensor(xs[rank]), as_tensor(xs[rank])
            wa = dist.all_reduce(a, async_op=True)
            wb = dist.all_reduce(b, op=dist.ReduceOp.MAX, async_op=True)
            assert isinstance(wa, dist.Work)
            wb.wait()
            wa.wait()
            assert wa.is_completed() and wb.is_completed()
            same(a, reducers[dist.ReduceOp.SUM](np.array(xs)), dtype, "async all_reduce")
            same(b, np.max(xs, axis=0), dtype, "async all_reduce max")
            for src in range(world):
                t = as_tensor(xs[rank])
                w = dist.broadcast(t, src=src, async_op=(src % 2 == 1))
                if w is not None:
                    w.wait()
                same(t, xs[src], dtype, f"broadcast src={src}")
            outs = [genesis.zeros(n, dtype=getattr(genesis, dtype)) for _ in range(world)]
            dist.all_gather(outs, as_tensor(xs[rank]))
            for r in range(world):
                same(outs[r], xs[r], dtype, f"all_gather[{r}]")
            flat = genesis.zeros(world * n, dtype=getattr(genesis, dtype))
            dist.all_gather_into_tensor(flat, as_tensor(xs[rank]), async_op=True).wait()
            same(flat, np.concatenate(xs), dtype, "all_gather_into_tensor")
            big = [rank_data(r, world * n, dtype, salt=1) for r in range(world)]
            out = genesis.zeros(n, dtype=getattr(genesis, dtype))
            dist.reduce_scatter_tensor(out, as_tensor(big[rank]))
            want = np.sum(np.array(big), axis=0, dtype=big[0].dtype)[rank * n:(rank + 1) * n]
            same(out, want, dtype, "reduce_scatter_tensor sum")
            dist.reduce_scatter_tensor(out, as_tensor(big[rank]), op=dist.ReduceOp.MIN)
            same(out, np.min(big, axis=0)[rank * n:(rank + 1) * n], dtype, "reduce_scatter_tensor min")
            out = genesis.zeros(world * n, dtype=getattr(genesis, dtype))
            dist.all_to_all_single(out, as_tensor(big[rank]))
            want = np.concatenate([big[r][rank * n:(rank + 1) * n] for r in range(world)])
            same(out, want, dtype, "all_to_all_single")
            # send/recv around the ring: even ranks send first
            t = genesis.zeros(n, dtype=getattr(genesis, dtype))
            nxt, prv = (rank + 1) % world, (rank - 1) % world
            if rank % 2 == 0:
                dist.send(as_tensor(xs[rank]), dst=nxt)
                assert dist.recv(t, src=prv) == prv
            else:
                dist.recv(t, src=prv)
                dist.send(as_tensor(xs[rank]), dst=nxt)
            same(t, xs[prv], dtype, "send/recv")
        ok(f"collectives_{dtype}")
    # a transposed (non-contiguous) view is reduced in place
    m = [rank_data(r, 12, "float64").reshape(3, 4) for r in range(world)]
    t = as_tensor(m[rank]).t()
    dist.all_reduce(t)
    same(t, np.sum(m, axis=0).T, "float64", "transposed all_reduce")
    ok("non_contiguous")
    # equal split sizes are accepted, unequal ones refused
    rows = [rank_data(r, 2 * world, "float32").reshape(world, 2) for r in range(world)]
    out = genesis.zeros(world, 2)
    dist.all_to_all_single(out, as_tensor(rows[rank]), [1] * world, [1] * world)
    same(out, np.stack([rows[r][rank] for r in range(world)]), "float32", "all_to_all_single splits")
    if world > 1:
        try:
            dist.all_to_all_single(out, as_tensor(rows[rank]), [2] + [0] * (world - 1), None)
            raise AssertionError("unequal splits accepted")
        except ValueError:
            pass
    ok("all_to_all_splits")
    dist.barrier()
    dist.barrier(async_op=True).wait()
    ok("barrier")
    # reduce, and Python objects
    t = genesis.full((4,), float(rank + 1))
    dist.reduce(t, dst=world - 1)
    if rank == world - 1:
        same(t, np.full(4, world * (world + 1) / 2, "float32"), "float32", "reduce")
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "name": "r" * rank})
    assert objs == [{"rank": r, "name": "r" * r} for r in range(world)], objs
    box = [rank, "from"] if rank == 1 else [None, None]
    dist.broadcast_object_list(box, src=1)
    assert box == [1, "from"], box
    ok("reduce_and_objects")
    # sub-groups: global ranks in, NON_GROUP_MEMBER outside
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    last = dist.new_group([world - 1])
    if rank % 2 == 0:
        assert dist.get_rank(evens) == rank // 2
        assert dist.get_process_group_ranks(evens) == list(range(0, world, 2))
        xs = [rank_data(r, 5, "float32") for r in range(world)]
        t = as_tensor(xs[rank])
        dist.all_reduce(t, group=evens)
        same(t, np.sum([xs[r] for r in range(0, world, 2)], axis=0), "float32", "group all_reduce")
        src = 2 * ((world - 1) // 2)  # the last even rank, as a global rank
        t = as_tensor(xs[rank])
        dist.broadcast(t, src=src, group=evens)
        same(t, xs[src], "float32", "group broadcast")
    else:
        assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
        assert dist.all_reduce(genesis.ones(1), group=evens) is None
    if rank == world - 1:
        t = genesis.full((3,), 2.0)
        dist.all_reduce(t, group=last)
        same(t, np.full(3, 2.0, "float32"), "float32", "single-rank group")
    ok("new_group")
    # errors are Python exceptions and leave the group usable
    try:
        dist.all_reduce(genesis.ones(3, dtype=genesis.int32), op=dist.ReduceOp.AVG)
        raise AssertionError("AVG of int32 accepted")
    except RuntimeError as e:
        assert "avg" in str(e).lower() or "dtype" in str(e).lower(), e
    try:
        dist.broadcast(genesis.ones(1), src=world)
        raise AssertionError("broadcast from a rank outside the world accepted")
    except (ValueError, IndexError):
        pass
    t = genesis.ones(2)
    dist.all_reduce(t)
    same(t, np.full(2, world, "float32"), "float32", "after errors")
    ok("errors")
    dist.log0("collectives done")


# ------------------------------------------------------------------------- DDP

class MLP(nn.Module):
    """A small MLP written in Python, with a bare Parameter, a buffer and an optional branch."""

    def __init__(self, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(7, 16)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(16, 5)
        self.scale = nn.Parameter(genesis.ones(5))
        self.register_buffer("seen", genesis.zeros(1))
        if extra:
            self.extra = nn.Linear(7, 5)
        self.use_extra = False

    def forward(self, x):
        y = self.fc2(self.act(self.fc1(x))) * self.scale
        if self.use_extra:
            y = y + self.extra(x)
        return y


def batch(r, step, n=6, dtype=genesis.float32):
    """Rank r's inputs and targets at a step (any rank can make any rank's batch)."""
    g = np.random.default_rng(100 * step + r)
    x = g.standard_normal((n, 7)).astype(np.float32)  # float32 values: the oracle sees the same inputs
    y = g.standard_normal((n, 5)).astype(np.float32)
    return as_tensor(x).to(dtype), as_tensor(y).to(dtype)


def full_batch(world, step, dtype):
    xs, ys = zip(*[batch(r, step, dtype=dtype) for r in range(world)])
    return genesis.cat(list(xs)), genesis.cat(list(ys))


def oracle_model(model):
    """A float64 copy of model (the single-process reference)."""
    ref = MLP(extra=hasattr(model, "extra"))
    ref.load_state_dict(model.state_dict())
    return ref.to(genesis.float64)


def rel_err(a, b):
    a, b = arr(a).astype(np.float64), arr(b).astype(np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def params_equal_across_ranks(model, world):
    for name, p in model.named_parameters():
        outs = [genesis.zeros(p.shape) for _ in range(world)]
        dist.all_gather(outs, p.detach())
        for r in range(1, world):
            assert np.array_equal(arr(outs[r]), arr(outs[0])), f"{name} differs between rank 0 and rank {r}"


def ddp():
    rank, world = dist.get_rank(), dist.get_world_size()
    loss_fn = nn.MSELoss()
    worst = 0.0
    for view in (False, True):
        for cap in (25, 0.0004):  # one bucket; a bucket per parameter or two
            genesis.manual_seed(rank)  # different on every rank: DDP must copy rank 0's
            model = MLP()
            opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # made before wrapping
            model_ddp = DDP(model, bucket_cap_mb=cap, gradient_as_bucket_view=view)
            model.seen.fill_(float(rank))  # forward copies rank 0's buffers
            assert model_ddp.module is model
            if cap < 1:
                assert len(model_ddp.bucket_indices()) > 1, model_ddp.bucket_indices()
            params_equal_across_ranks(model, world)
            ref = oracle_model(model)
            ref_opt = optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
            # one step: the averaged gradients equal the single-process gradients of the whole batch
            x, y = batch(rank, 0)
            loss_fn(model_ddp(x), y).backward()
            assert arr(model.seen)[0] == 0.0, "buffers not broadcast from rank 0"
            X, Y = full_batch(world, 0, genesis.float64)
            loss_fn(ref(X), Y).backward()
            for (name, p), q in zip(model.named_parameters(), ref.parameters()):
                e = rel_err(p.grad, q.grad)
                worst = max(worst, e)
                assert e <= 1e-6, f"{name}: gradient relative error {e:.3g} (view={view}, cap={cap})"
            opt.step()
            ref_opt.step()
            # more steps: every rank's parameters stay bitwise equal and follow the reference
            for step in range(1, 6):
                opt.zero_grad()
                ref_opt.zero_grad()
                x, y = batch(rank, step)
                loss_fn(model_ddp(x), y).backward()
                opt.step()
                X, Y = full_batch(world, step, genesis.float64)
                loss_fn(ref(X), Y).backward()
                ref_opt.step()
            params_equal_across_ranks(model, world)
            drift = max(rel_err(p, q) for p, q in zip(model.parameters(), ref.parameters()))
            assert drift <= 1e-5, f"parameters drifted from the reference by {drift:.3g}"
            # no_sync: two micro-batches accumulate locally, the second backward reduces the sum
            opt.zero_grad()
            ref = oracle_model(model)
            local = oracle_model(model)
            with model_ddp.no_sync():
                x, y = batch(rank, 10)
                loss_fn(model_ddp(x), y).backward()
            loss_fn(local(x.to(genesis.float64)), y.to(genesis.float64)).backward()
            for (name, p), q in zip(model.named_parameters(), local.parameters()):
                e = rel_err(p.grad, q.grad)
                assert e <= 1e-6, f"no_sync {name}: the local gradient was changed (relative error {e:.3g})"
            x, y = batch(rank, 11)
            loss_fn(model_ddp(x), y).backward()
            for step in (10, 11):
                X, Y = full_batch(world, step, genesis.float64)
                loss_fn(ref(X), Y).backward()
            for (name, p), q in zip(model.named_parameters(), ref.parameters()):
                e = rel_err(p.grad, q.grad)
                worst = max(worst, e)
                assert e <= 1e-6, f"no_sync {name}: relative error {e:.3g}"
            ok(f"ddp_view{int(view)}_cap{cap}")
    print(f"ddp worst gradient relative error vs float64 oracle: {worst:.3g}", flush=True)

    # find_unused_parameters: a branch that only rank 0 uses, and one that no rank uses
    genesis.manual_seed(0)
    model = MLP(extra=True)
    model_ddp = DDP(model, find_unused_parameters=True)
    ref = oracle_model(model)
    model.use_extra = rank == 0
    x, y = batch(rank, 20)
    out = model_ddp(x)
    loss_fn(out, y).backward()
    assert model_ddp.unused_parameters() == []
    # the reference: rank 0's loss uses the branch, the others' do not; DDP averages the ranks' means
    total = None
    for r in range(world):
        ref.use_extra = r == 0
        xr, yr = batch(r, 20, dtype=genesis.float64)
        lr_ = loss_fn(ref(xr), yr) * (1.0 / world)
        total = lr_ if total is None else total + lr_
    total.backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        e = rel_err(p.grad, q.grad)
        assert e <= 1e-6, f"find_unused {name}: relative error {e:.3g}"
    model.use_extra = False
    model.zero_grad()
    loss_fn(model_ddp(x), y).backward()
    assert sorted(model_ddp.unused_parameters()) == ["extra.bias", "extra.weight"], model_ddp.unused_parameters()
    assert model.extra.weight.grad is None
    ok("ddp_find_unused_parameters")

    # without it, a parameter that gets no gradient is a Python exception naming it
    genesis.manual_seed(0)
    model = MLP(extra=True)
    model_ddp = DDP(model)
    try:
        loss_fn(model_ddp(x), y).backward()
        raise AssertionError("a backward without extra's gradients passed")
    except (ValueError, RuntimeError) as e:
        assert "extra.weight" in str(e), e
    ok("ddp_unused_is_an_error")

    # before-init and bad arguments
    try:
        DDP(genesis.ones(2))
        raise AssertionError("DDP of a tensor accepted")
    except TypeError:
        pass
    ok("ddp_errors")


# --------------------------------------------------------------------- sampler

def sampler():
    from genesis.data import DataLoader, DistributedSampler, TensorDataset
    rank, world = dist.get_rank(), dist.get_world_size()
    for n in (23, 4, 1):
        for shuffle in (True, False):
            for drop_last in (False, True):
                s = DistributedSampler(range(n), shuffle=shuffle, seed=3, drop_last=drop_last)
                assert s.num_replicas == world and s.rank == rank
                orders = []
                for epoch in (0, 1):
                    s.set_epoch(epoch)
                    mine = list(s)
                    per = n // world if drop_last else -(-n // world)
                    assert len(mine) == len(s) == per
                    t = genesis.tensor(mine if mine else [0], dtype=genesis.int64)
                    outs = [genesis.zeros(t.shape, dtype=genesis.int64) for _ in range(world)]
                    dist.all_gather(outs, t)
                    got = [int(v) for o in outs for v in arr(o)] if per else []
                    if drop_last:
                        assert len(set(got)) == len(got) == per * world, got  # disjoint
                    else:
                        assert set(got) == set(range(n)), (n, got)  # every example, padding repeats
                    orders.append(got)
                if shuffle and n > 4:
                    assert orders[0] != orders[1], "set_epoch did not change the order"
    ok("sampler_covers")
    # the loader: sharded by the C++ loader, and over a sampler
    n = 21
    ds = TensorDataset(genesis.arange(n, dtype=genesis.int64), genesis.arange(n, dtype=genesis.float32) * 2)
    for loader in (DataLoader(ds, batch_size=4, shuffle=True, seed=5, num_replicas=world, rank=rank),
                   DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds.tensors[0].shape[0], seed=5))):
        loader.set_epoch(2)
        mine = []
        for xb, yb in loader:
            assert np.array_equal(arr(yb), arr(xb).astype(np.float32) * 2)
            mine += [int(v) for v in arr(xb)]
        assert len(loader) == -(-len(mine) // 4)
        t = genesis.tensor(mine, dtype=genesis.int64)
        outs = [genesis.zeros(t.shape, dtype=genesis.int64) for _ in range(world)]
        dist.all_gather(outs, t)
        got = {int(v) for o in outs for v in arr(o)}
        assert got == set(range(n)), got
    ok("loader_shards")


def fail():
    if dist.get_rank() == 1:
        raise AssertionError("deliberate failure on rank 1")
    dist.barrier()  # released when the launcher stops the job


def main():
    dist.init_process_group("gloo")
    {"collectives": collectives, "ddp": ddp, "sampler": sampler, "fail": fail}[sys.argv[1]]()
    dist.barrier()
    print(f"rank {dist.get_rank()} done: {len(CHECKS)} checks", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
