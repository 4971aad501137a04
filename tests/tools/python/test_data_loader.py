"""genesis.data against torch.utils.data (PyTorch 1.13): the DataLoader over map-style and iterable datasets,
default collation, samplers and batch samplers, worker processes (same batches as without workers, errors
raised in the main process naming the worker, sharding with get_worker_info, clean shutdown), datasets and
random_split, argument errors of torch's types, the C++ loader's order for TensorDataset, and the
genesis.utils.data import path."""
import collections
import gc
import os
import random
import time
import warnings

import numpy as np
import pytest

import genesis
import genesis.data as gd

torch = pytest.importorskip("torch")
import torch.utils.data as td  # noqa: E402

Pair = collections.namedtuple("Pair", "a b")


def same(g, t, path="batch"):
    """Asserts that a genesis batch has torch's structure, container types, dtypes, shapes and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(g, genesis.Tensor), f"{path}: {type(g).__name__} instead of a tensor"
        assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{path}: {g.dtype} vs {t.dtype}"
        assert tuple(g.shape) == tuple(t.shape), f"{path}: shape {tuple(g.shape)} vs {tuple(t.shape)}"
        assert np.array_equal(np.asarray(g), t.numpy()), f"{path}: values differ"
        return
    assert type(g) is type(t), f"{path}: {type(g).__name__} vs {type(t).__name__}"
    if isinstance(t, dict):
        assert list(g.keys()) == list(t.keys()), path
        for k in t:
            same(g[k], t[k], f"{path}[{k!r}]")
    elif isinstance(t, (list, tuple)):
        assert len(g) == len(t), path
        for i, (a, b) in enumerate(zip(g, t)):
            same(a, b, f"{path}[{i}]")
    else:
        assert g == t, f"{path}: {g!r} vs {t!r}"


def same_error(genesis_fn, torch_fn):
    """Both raise, with the same exception type; returns genesis's exception."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(Exception) as ge:
        genesis_fn()
    assert ge.type is te.type, f"genesis raised {ge.type.__name__}: {ge.value}; torch {te.type.__name__}: {te.value}"
    return ge.value


class Mixed:
    """A map-style dataset of every kind of field default_collate knows, built with either framework."""

    def __init__(self, lib, n=7):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib = self.lib
        return {
            "row": lib.tensor([i, i + 0.5, -i], dtype=lib.float64),
            "label": lib.tensor(i % 3),
            "image": np.arange(6, dtype=np.float32).reshape(2, 3) * i,
            "mask": np.array([i % 2 == 0, True]),
            "np_int": np.int32(i), "np_float": np.float64(i / 4), "np_bool": np.bool_(i > 2),
            "int": i, "float": i * 0.25, "flag": i % 2 == 1, "name": f"item{i}", "raw": bytes([65 + i]),
            "pair": (i, lib.tensor([2.0 * i])), "list": [i, [i + 1.5, f"n{i}"]], "point": Pair(i, i * 1.5),
            "nested": collections.OrderedDict(a=np.zeros(2, dtype=np.int64) + i, b={"c": i}),
        }


class Rows(gd.Dataset):
    """Rows of a few tensors plus NumPy fields (genesis only; picklable for spawned workers)."""

    def __init__(self, n=11):
        self.x = genesis.arange(n * 3, dtype=genesis.float32).reshape(n, 3)
        self.h = genesis.arange(n, dtype=genesis.float32).to(genesis.bfloat16)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i], {"h": self.h[i], "np": np.full(2, i, dtype=np.int64), "id": i, "s": str(i)}


class Fails(gd.Dataset):
    """Raises at one index (in whichever process fetches it)."""

    def __init__(self, bad=5, exc=ValueError):
        self.bad, self.exc = bad, exc

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc(f"example {i} is broken")
        return i


def make_stream(base):
    class Stream(base):
        """range(n), each worker taking every num_workers-th item starting at its id."""

        def __init__(self, n, info):
            self.n, self.info = n, info

        def __iter__(self):
            w = self.info()
            lo, step = (0, 1) if w is None else (w.id, w.num_workers)
            return iter(range(lo, self.n, step))

        def __len__(self):
            return self.n
    return Stream


GStream, TStream = make_stream(gd.IterableDataset), make_stream(td.IterableDataset)


def batches(loader):
    return [b for b in loader]


# ------------------------------------------------------------------------------------ collation

def test_default_collate_matches_torch_for_every_field_kind():
    order = [4, 0, 6, 2, 5, 1, 3]
    for bs, drop_last in ((3, False), (3, True), (1, False), (7, False)):
        g = batches(gd.DataLoader(Mixed(genesis), batch_size=bs, sampler=order, drop_last=drop_last))
        t = batches(td.DataLoader(Mixed(torch), batch_size=bs, sampler=order, drop_last=drop_last))
        assert len(g) == len(t) == (7 // bs if drop_last else -(-7 // bs))
        same(g, t)
    examples = [Mixed(genesis)[i] for i in range(3)]
    same(gd.default_collate(examples), td.default_collate([Mixed(torch)[i] for i in range(3)]))


def test_no_batching_converts_numpy_and_keeps_the_rest():
    g = batches(gd.DataLoader(Mixed(genesis), batch_size=None, sampler=gd.SequentialSampler(range(7))))
    t = batches(td.DataLoader(Mixed(torch), batch_size=None, sampler=td.SequentialSampler(range(7))))
    same(g, t)
    for x in (np.float32(2.5), np.arange(4).reshape(2, 2), (1, np.ones(2)), {"a": [np.int32(3), "s"]}, "str"):
        same(gd.default_convert(x), td.default_convert(x))


def test_collate_errors_match_torch():
    same_error(lambda: gd.default_collate([object(), object()]), lambda: td.default_collate([object(), object()]))
    strings = [np.array(["a", "b"]), np.array(["c", "d"])]
    same_error(lambda: gd.default_collate(strings), lambda: td.default_collate(strings))
    ragged = [[1, 2], [3]]
    same_error(lambda: gd.default_collate(ragged), lambda: td.default_collate(ragged))


def test_collate_fn_and_batch_sampler():
    def collate(lib):
        return lambda items: (len(items), lib.stack([it["row"] for it in items]).sum(0))
    bsamp = [[3, 1], [0, 2, 5], [6], [4]]
    g = batches(gd.DataLoader(Mixed(genesis), batch_sampler=bsamp, collate_fn=collate(genesis)))
    t = batches(td.DataLoader(Mixed(torch), batch_sampler=bsamp, collate_fn=collate(torch)))
    same(g, t)
    g = batches(gd.DataLoader(Mixed(genesis), batch_sampler=gd.BatchSampler(range(6, -1, -1), 3, True)))
    t = batches(td.DataLoader(Mixed(torch), batch_sampler=td.BatchSampler(range(6, -1, -1), 3, True)))
    same(g, t)
    assert len(gd.DataLoader(Mixed(genesis), batch_sampler=bsamp)) == 4


# ------------------------------------------------------------------------------------ samplers

def test_sequential_and_batch_samplers_match_torch():
    data = list(range(10))
    assert list(gd.SequentialSampler(data)) == list(td.SequentialSampler(data))
    for bs in (1, 3, 4, 10, 12):
        for drop_last in (False, True):
            g, t = gd.BatchSampler(data, bs, drop_last), td.BatchSampler(data, bs, drop_last)
            assert list(g) == list(t) and len(g) == len(t)


def test_random_sampler():
    data = list(range(9))
    g = genesis.Generator().manual_seed(3)
    first = list(gd.RandomSampler(data, generator=g))
    assert sorted(first) == data
    second = list(gd.RandomSampler(data, generator=g))
    assert second != first  # the generator advanced
    assert list(gd.RandomSampler(data, generator=genesis.Generator().manual_seed(3))) == first
    genesis.manual_seed(11)
    a = list(gd.RandomSampler(data))
    genesis.manual_seed(11)
    assert list(gd.RandomSampler(data)) == a  # seeded from the default generator
    s = gd.RandomSampler(data, num_samples=20)
    got = list(s)
    assert len(s) == len(got) == 20
    assert sorted(got[:9]) == data and sorted(got[9:18]) == data and len(set(got[18:])) == 2
    s = gd.RandomSampler(data, replacement=True, num_samples=70, generator=genesis.Generator().manual_seed(1))
    got = list(s)
    assert len(got) == len(s) == 70 and set(got) <= set(data) and len(set(got)) > 6
    assert got == list(gd.RandomSampler(data, True, 70, genesis.Generator().manual_seed(1)))
    for kw in (dict(replacement=1), dict(num_samples=0), dict(num_samples=-2), dict(num_samples=2.0)):
        same_error(lambda: gd.RandomSampler(data, **kw), lambda: td.RandomSampler(data, **kw))


def test_subset_random_sampler():
    idx = [10, 20, 30, 40, 50]
    g = list(gd.SubsetRandomSampler(idx, generator=genesis.Generator().manual_seed(4)))
    perm = genesis.randperm(5, generator=genesis.Generator().manual_seed(4)).tolist()
    assert g == [idx[i] for i in perm] and sorted(g) == idx
    assert len(gd.SubsetRandomSampler(idx)) == 5


def test_weighted_random_sampler():
    w = [1.0, 0.0, 3.0, 6.0]
    n = 40000
    got = np.array(list(gd.WeightedRandomSampler(w, n, generator=genesis.Generator().manual_seed(2))))
    counts = np.bincount(got, minlength=4)
    p = np.array(w) / sum(w)
    assert counts[1] == 0
    sigma = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) <= 5 * sigma + 1e-9), counts
    again = list(gd.WeightedRandomSampler(w, n, generator=genesis.Generator().manual_seed(2)))
    assert again == got.tolist()
    no_rep = list(gd.WeightedRandomSampler(genesis.tensor(w), 3, replacement=False))
    assert sorted(no_rep) == [0, 2, 3]
    # without replacement, the heaviest index comes first most often
    firsts = [next(iter(gd.WeightedRandomSampler([1.0, 9.0], 2, replacement=False))) for _ in range(400)]
    assert 300 < firsts.count(1) < 400
    # more draws than positive weights: the zero-weight indices come last, as in torch
    assert sorted(list(gd.WeightedRandomSampler(w, 4, replacement=False))[:3]) == [0, 2, 3]
    assert sorted(list(td.WeightedRandomSampler(w, 4, replacement=False))[:3]) == [0, 2, 3]
    same_error(lambda: list(gd.WeightedRandomSampler(w, 5, replacement=False)),
               lambda: list(td.WeightedRandomSampler(w, 5, replacement=False)))
    for bad in ([1.0, -1.0], [0.0, 0.0], [1.0, float("inf")]):
        same_error(lambda: list(gd.WeightedRandomSampler(bad, 2)), lambda: list(td.WeightedRandomSampler(bad, 2)))
    for args in (([[1.0, 2.0]], 2), (w, 0), (w, 2, 1)):
        same_error(lambda: gd.WeightedRandomSampler(*args), lambda: td.WeightedRandomSampler(*args))


# ------------------------------------------------------------------------------------ datasets

def test_subset_concat_and_chain_match_torch():
    def summary(lib, m):
        sub = m.Subset(Mixed(lib, 5), [4, 1, 3])
        cat = m.ConcatDataset([sub, Mixed(lib, 2), sub])
        plus = sub + Mixed(lib, 2)
        return [len(sub), len(cat), cat.cumulative_sizes, len(plus), [cat[i]["int"] for i in range(len(cat))],
                cat[-1]["int"], cat[-8]["int"], [plus[i]["int"] for i in range(len(plus))],
                m.Subset(m.TensorDataset(lib.arange(5) * 10), [4, 1, 3])[[2, 0]][0].tolist()]
    assert summary(genesis, gd) == summary(torch, td) == [3, 8, [3, 5, 8], 5, [4, 1, 3, 0, 1, 4, 1, 3], 3, 4,
                                                          [4, 1, 3, 0, 1], [30, 40]]
    same_error(lambda: gd.ConcatDataset([Mixed(genesis, 3)])[-4], lambda: td.ConcatDataset([Mixed(torch, 3)])[-4])
    same_error(lambda: gd.ConcatDataset([]), lambda: td.ConcatDataset([]))
    same_error(lambda: gd.ConcatDataset([GStream(3, gd.get_worker_info)]),
               lambda: td.ConcatDataset([TStream(3, td.get_worker_info)]))
    same_error(lambda: gd.TensorDataset(genesis.zeros(3), genesis.zeros(4)),
               lambda: td.TensorDataset(torch.zeros(3), torch.zeros(4)))
    chain = GStream(3, gd.get_worker_info) + GStream(2, gd.get_worker_info)
    assert isinstance(chain, gd.ChainDataset) and list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
    with pytest.raises(NotImplementedError):
        gd.Dataset()[0]


def test_random_split():
    data = list(range(23))
    for lengths in ([5, 18], [23], [0.3, 0.3, 0.4], [0.5, 0.5], [0.1] * 10, [1 / 3] * 3):
        parts = gd.random_split(data, lengths, generator=genesis.Generator().manual_seed(1))
        tparts = td.random_split(data, lengths, generator=torch.Generator().manual_seed(1))
        assert [len(p) for p in parts] == [len(p) for p in tparts], lengths
        flat = [x for p in parts for x in p]
        assert sorted(flat) == data  # disjoint and covering
        assert all(isinstance(p, gd.Subset) and p.dataset is data for p in parts)
        again = gd.random_split(data, lengths, generator=genesis.Generator().manual_seed(1))
        assert [list(p) for p in again] == [list(p) for p in parts]
    genesis.manual_seed(3)
    a = [list(p) for p in gd.random_split(data, [10, 13])]
    genesis.manual_seed(3)
    assert [list(p) for p in gd.random_split(data, [10, 13])] == a
    assert a != [list(range(10)), list(range(10, 23))]
    for lengths in ([5, 5], [0.5, 0.6], [1.5, -0.5]):
        same_error(lambda: gd.random_split(data, lengths), lambda: td.random_split(data, lengths))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        gd.random_split(list(range(2)), [0.9, 0.05, 0.05])
    assert any("Length of split at index" in str(x.message) for x in w)


# ------------------------------------------------------------------------------------ order and seeds

def test_tensor_dataset_keeps_the_cpp_loaders_batches():
    x = genesis.arange(23, dtype=genesis.float64) * 1.5
    y = genesis.arange(23)
    ds = gd.TensorDataset(x, y)
    for shuffle in (False, True):
        for drop_last in (False, True):
            loader = gd.DataLoader(ds, batch_size=4, shuffle=shuffle, drop_last=drop_last, seed=9)
            assert loader._impl is not None  # the C++ loader gives the order
            cpp = genesis._C.data.DataLoader([x, y], 4, shuffle, drop_last, 9, 1, 0)
            for epoch in range(2):
                got = batches(loader)
                assert len(got) == len(loader) == len(cpp)
                for b, (gx, gy) in enumerate(got):
                    cx, cy = cpp.batch(epoch, b)
                    assert gx.tolist() == cx.tolist() and gy.tolist() == cy.tolist()
                    assert isinstance(got[b], list)
                # torch's DataLoader over the same order gives the same batches
                t = batches(td.DataLoader(td.TensorDataset(torch.tensor(np.asarray(x)), torch.tensor(np.asarray(y))),
                                          batch_size=4, sampler=cpp.indices(epoch), drop_last=drop_last))
                same(got, t)


class Wrapped(gd.Dataset):
    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        return self.ds[i]


def test_any_dataset_shuffles_like_the_cpp_loader_and_generators_reproduce():
    x = genesis.arange(17)
    ds = gd.TensorDataset(x, x * 2)
    fast = gd.DataLoader(ds, batch_size=5, shuffle=True, seed=4)
    slow = gd.DataLoader(Wrapped(ds), batch_size=5, shuffle=True, seed=4)
    assert fast._impl is not None and slow._impl is None
    assert isinstance(slow.sampler, gd.RandomSampler)
    for _ in range(2):  # epochs 0 and 1
        same_as = [[a.tolist() for a in b] for b in batches(fast)]
        assert [[a.tolist() for a in b] for b in batches(slow)] == same_as
    slow.set_epoch(0)
    fast.set_epoch(0)
    e0 = [b[0].tolist() for b in batches(slow)]
    assert e0 == [b[0].tolist() for b in batches(fast)] and e0 != [b[0].tolist() for b in batches(slow)]
    # sharded over 3 ranks: the same split as DistributedSampler, for any dataset
    got = []
    for rank in range(3):
        loader = gd.DataLoader(Wrapped(ds), batch_size=2, shuffle=True, seed=4, num_replicas=3, rank=rank)
        fast = gd.DataLoader(ds, batch_size=2, shuffle=True, seed=4, num_replicas=3, rank=rank)
        mine = [v for b in loader for v in b[0].tolist()]
        assert mine == [v for b in fast for v in b[0].tolist()] and len(mine) == 6
        got += mine
    assert set(got) == set(range(17))
    # a generator: torch's RandomSampler, reproducible, fresh each epoch
    runs = []
    for d in (ds, Wrapped(ds), ds):
        loader = gd.DataLoader(d, batch_size=5, shuffle=True, generator=genesis.Generator().manual_seed(8))
        runs.append([[b[0].tolist() for b in loader] for _ in range(2)])
    assert runs[0] == runs[1] == runs[2] and runs[0][0] != runs[0][1]
    assert sorted(sum(runs[0][0], [])) == list(range(17))


# ------------------------------------------------------------------------------------ workers

def values(batches_):
    """Batches as plain Python values (tensors as (dtype, nested lists)) for equality checks."""
    def conv(v):
        if isinstance(v, genesis.Tensor):
            return (str(v.dtype), np.asarray(v).tolist())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(conv(x) for x in v)
        return v
    return [conv(b) for b in batches_]


def test_workers_give_the_single_process_batches():
    ds = Rows()
    for kw in (dict(batch_size=3), dict(batch_size=3, shuffle=True, seed=2), dict(batch_size=4, drop_last=True),
               dict(batch_size=None), dict(batch_sampler=[[1, 9], [0], [10, 2, 3]]),
               dict(batch_size=2, sampler=[7, 7, 0, 3, 1], collate_fn=lambda b: [r[1]["id"] * 10 for r in b])):
        ref = values(gd.DataLoader(ds, num_workers=0, **kw))
        configs = ((2, {}), (3, dict(prefetch_factor=1)), (1, dict(pin_memory=True))) if "shuffle" in kw else ((2, {}),)
        for workers, extra in configs:
            loader = gd.DataLoader(ds, num_workers=workers, **kw, **extra)
            assert values(loader) == ref, (kw, workers)
            assert len(loader) == len(ref)
    same(batches(gd.DataLoader(Mixed(genesis), batch_size=3, num_workers=2)),
         batches(td.DataLoader(Mixed(torch), batch_size=3)))


def test_persistent_workers_and_epochs():
    ds = Rows(9)
    ref = gd.DataLoader(ds, batch_size=2, shuffle=True, seed=5)
    loader = gd.DataLoader(ds, batch_size=2, shuffle=True, seed=5, num_workers=2, persistent_workers=True)
    it = iter(loader)
    first = values(it)
    assert first == values(ref)
    assert iter(loader) is it  # the same workers
    next(iter(loader))  # an epoch left unfinished...
    ref.set_epoch(3)
    loader.set_epoch(3)
    assert values(loader) == values(ref)  # ...does not leak into the next one
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    del it, loader
    gc.collect()
    for w in workers:
        w.join(timeout=10)
        assert not w.is_alive()


def test_spawned_workers():
    # genesis's own classes only, so the fresh interpreters import nothing but genesis
    ds = gd.Subset(gd.TensorDataset(genesis.arange(14).reshape(7, 2), genesis.rand(7, dtype=genesis.float64)),
                   [6, 0, 5, 1, 4, 2, 3])
    ref = values(gd.DataLoader(ds, batch_size=3))
    loader = gd.DataLoader(ds, batch_size=3, num_workers=2, multiprocessing_context="spawn")
    assert loader._impl is None and values(loader) == ref


def test_workers_shut_down_on_break_and_garbage_collection():
    loader = gd.DataLoader(Rows(40), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    workers = list(it._workers)
    assert len(workers) == 2 and all(w.is_alive() for w in workers)
    for _ in it:
        break
    del it
    gc.collect()
    for w in workers:
        w.join(timeout=10)
        assert not w.is_alive() and w.exitcode == 0


class SeedProbe(gd.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = gd.get_worker_info()
        return {"worker": info.id, "seed": info.seed, "n": info.num_workers, "genesis": genesis.rand(1).item(),
                "numpy": float(np.random.rand()), "python": random.random(), "tag": info.dataset.tag}


def test_worker_info_seeds_and_init_fn():
    ds = SeedProbe()
    ds.tag = "copy"
    assert gd.get_worker_info() is None

    def init(worker_id):
        info = gd.get_worker_info()
        assert info.id == worker_id and info.num_workers == 2
        info.dataset.tag = f"init{worker_id}"

    def run(seed):
        loader = gd.DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=init,
                               generator=genesis.Generator().manual_seed(seed))
        return list(loader)
    a, b, c = run(1), run(1), run(2)
    assert a == b and a != c  # the generator fixes the workers' seeds
    assert [r["worker"] for r in a] == [0, 1] * 4  # round robin, in order
    assert all(r["tag"] == f"init{r['worker']}" for r in a) and ds.tag == "copy"
    w0, w1 = a[0], a[1]
    assert w1["seed"] == w0["seed"] + 1 and w0["n"] == 2
    for key in ("genesis", "numpy", "python"):
        assert w0[key] != w1[key], key
    info = gd.WorkerInfo(id=0, num_workers=1, seed=1, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign"):
        info.id = 2


def test_worker_exceptions_are_raised_in_the_main_process():
    for exc, bad in ((ValueError, 5), (KeyError, 0), (IndexError, 3)):
        loader = gd.DataLoader(Fails(bad, exc), batch_size=2, num_workers=2)
        seen = []
        with pytest.raises(exc) as e:
            for b in loader:
                seen.append(b.tolist())
        msg = str(e.value)
        assert f"Caught {exc.__name__} in DataLoader worker process {(bad // 2) % 2}" in msg
        assert f"example {bad} is broken" in msg and "Traceback" in msg
        assert seen == [[2 * k, 2 * k + 1] for k in range(bad // 2)]  # the batches before it, in order

    def init(worker_id):
        if worker_id == 1:
            raise OSError("no such file: shard1")
    with pytest.raises(OSError, match="worker process 1(.|\n)*shard1"):
        list(gd.DataLoader(Rows(), batch_size=2, num_workers=2, worker_init_fn=init))


class Dies(gd.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            os._exit(3)
        return i


class Slow(gd.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(1.5)
        return i


def test_dead_or_slow_workers_are_errors():
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(gd.DataLoader(Dies(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        list(gd.DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3))


def test_iterable_dataset_matches_torch_with_worker_sharding():
    kws = (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None), dict(batch_size=5))
    cases = [(11, kw, 0) for kw in kws] + [(11, kws[1], 3), (11, kws[2], 3), (12, kws[1], 2), (0, kws[0], 2),
                                           (0, kws[0], 0)]
    for n, kw, workers in cases:
        g = batches(gd.DataLoader(GStream(n, gd.get_worker_info), num_workers=workers, **kw))
        t = batches(td.DataLoader(TStream(n, td.get_worker_info), num_workers=workers, **kw))
        if kw["batch_size"] is None:
            assert g == t, (n, kw, workers)  # plain ints, as torch leaves them
        else:
            same(g, t)
        assert len(gd.DataLoader(GStream(n, gd.get_worker_info), **kw)) == \
            len(td.DataLoader(TStream(n, td.get_worker_info), **kw))


# ------------------------------------------------------------------------------------ arguments

def test_bad_arguments_raise_torchs_errors():
    gds, tds = Mixed(genesis, 4), Mixed(torch, 4)
    gstream, tstream = GStream(4, gd.get_worker_info), TStream(4, td.get_worker_info)
    cases = [
        dict(batch_sampler=[[0, 1]], batch_size=2), dict(batch_sampler=[[0, 1]], shuffle=True),
        dict(batch_sampler=[[0, 1]], sampler=[0]), dict(batch_sampler=[[0, 1]], drop_last=True),
        dict(sampler=[0, 1], shuffle=True), dict(batch_size=None, drop_last=True), dict(num_workers=-1),
        dict(timeout=-1), dict(persistent_workers=True), dict(prefetch_factor=3), dict(batch_size=0),
        dict(batch_size=-2), dict(batch_size=2.5), dict(drop_last="yes"),
        dict(multiprocessing_context="no-such-method", num_workers=1), dict(multiprocessing_context="fork"),
        dict(multiprocessing_context=3, num_workers=1),
    ]
    for kw in cases:
        same_error(lambda: gd.DataLoader(gds, **kw), lambda: td.DataLoader(tds, **kw))
    for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        same_error(lambda: gd.DataLoader(gstream, **kw), lambda: td.DataLoader(tstream, **kw))
    gl, tl = gd.DataLoader(gds), td.DataLoader(tds)
    for attr in ("batch_size", "sampler", "drop_last", "dataset"):
        e = same_error(lambda: setattr(gl, attr, 1), lambda: setattr(tl, attr, 1))
        assert "should not be set after DataLoader is initialized" in str(e)
    gl.num_workers = 0  # others may change
    with pytest.raises(ValueError, match="mutually exclusive"):
        gd.DataLoader(gds, sampler=[0], num_replicas=2, rank=0)
    with pytest.raises(TypeError):  # an iterable dataset without __len__
        len(gd.DataLoader(NoLen()))


class NoLen(gd.IterableDataset):
    def __iter__(self):
        return iter(range(3))


def outcome(fn):
    """("len", n) or ("error", exception type) of len(fn())."""
    try:
        return "len", len(fn())
    except Exception as e:  # noqa: BLE001 - the type is compared
        return "error", type(e)


def test_lengths_match_torch():
    for n in (0, 1, 10, 11):
        for kw in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                   dict(batch_size=4, shuffle=True), dict(batch_size=2, sampler=list(range(n // 2)))):
            g = outcome(lambda: gd.DataLoader(Mixed(genesis, n), **kw))
            assert g == outcome(lambda: td.DataLoader(Mixed(torch, n), **kw)), (n, kw)
            assert g == outcome(lambda: gd.DataLoader(gd.TensorDataset(genesis.arange(n)), **kw)), (n, kw)


def test_torch_import_path():
    from genesis.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info, random_split
    import genesis.utils
    assert DataLoader is gd.DataLoader and Dataset is gd.Dataset and random_split is gd.random_split
    assert IterableDataset is gd.IterableDataset and get_worker_info is gd.get_worker_info
    assert genesis.utils.data.TensorDataset is gd.TensorDataset
    datapipes = {"DFIterDataPipe", "DataChunk", "DataLoader2", "IterDataPipe", "MapDataPipe", "_DatasetKind",
                 "argument_validation", "collate", "communication", "functional_datapipe",
                 "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
                 "runtime_validation_disabled"}  # torch's DataPipes and internals: not provided
    assert set(td.__all__) - set(genesis.utils.data.__all__) == datapipes


def test_torch_submodule_import_paths():
    from genesis.utils.data.dataloader import DataLoader
    from genesis.utils.data.dataset import Dataset
    from genesis.utils.data.sampler import Sampler

    assert DataLoader is genesis.data.DataLoader and Dataset is genesis.data.Dataset
    assert Sampler is genesis.data.Sampler
