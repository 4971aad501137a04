"""Process-wide services from Python: RNG (manual_seed, Generator, get/set_rng_state, fork_rng),
autocast and GradScaler, genesis.cuda without a GPU, memory statistics, the profiler's Chrome
trace and safetensors files (tests tools/python/src/runtime.cpp and the Python wrappers)."""
import json
import os

import numpy as np
import pytest

import genesis
import genesis.nn as nn


def test_manual_seed_reproduces_and_generators_are_private():
    genesis.manual_seed(42)
    a = genesis.rand(5).tolist()
    genesis.manual_seed(42)
    assert genesis.rand(5).tolist() == a
    g = genesis.Generator().manual_seed(7)
    x = genesis.randn(4, generator=g).tolist()
    g.manual_seed(7)
    genesis.rand(3)  # the default generator is not g
    assert genesis.randn(4, generator=g).tolist() == x


def test_rng_state_and_fork():
    state = genesis.get_rng_state()
    a = genesis.rand(3).tolist()
    genesis.set_rng_state(state)
    assert genesis.rand(3).tolist() == a
    s = genesis.get_rng_state()
    with genesis.fork_rng():
        genesis.manual_seed(999)
        genesis.rand(10)
    assert genesis.get_rng_state() == s


def test_autocast_runs_matmul_in_low_precision_on_cpu():
    a, b = genesis.randn(4, 8), genesis.randn(8, 3)
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        assert genesis.amp.is_autocast_enabled("cpu")
        y = a @ b
        s = y.softmax(-1)
    assert y.dtype == genesis.bfloat16 and s.dtype == genesis.float32
    assert not genesis.amp.is_autocast_enabled("cpu")
    np.testing.assert_allclose(y.float().numpy(), (a @ b).numpy(), rtol=0.05, atol=0.05)


def test_grad_scaler_scales_and_steps():
    model = nn.Linear(3, 1)
    opt = genesis.optim.SGD(model.parameters(), lr=0.1)
    scaler = genesis.amp.GradScaler(init_scale=1024.0)
    loss = model(genesis.randn(2, 3)).sum()
    scaler.scale(loss).backward()
    w = model.weight.tolist()
    assert scaler.step(opt)
    scaler.update()
    assert model.weight.tolist() != w and scaler.get_scale() == 1024.0
    assert scaler.state_dict()["scale"] == 1024.0


def test_cuda_module_without_a_gpu():
    assert genesis.cuda.is_available() in (True, False)
    if not genesis.cuda.is_available():
        assert genesis.cuda.device_count() == 0
        genesis.cuda.empty_cache()  # nothing to do, no error
        assert not genesis.cuda_available()


def test_memory_statistics_of_the_cpu():
    dev = genesis.device("cpu")
    before = dev.memory_allocated()
    x = genesis.empty(1 << 20, dtype=genesis.uint8)
    assert dev.memory_allocated() >= before + (1 << 20)
    stats = genesis.memory_stats("cpu")
    assert stats["peak_allocated"] >= stats["allocated"] and "cache_hit_rate" in stats
    del x


def test_profiler_writes_a_chrome_trace(tmp_path):
    x = genesis.rand(64, 64)
    with genesis.profiler.profile() as prof:
        y = genesis.matmul(x, x.T)
        (y + 1).relu()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e.get("name") for e in events}
    assert {"matmul", "add", "relu"} <= names
    assert "matmul" in prof.summary()


def test_save_and_load_safetensors(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    path = str(tmp_path / "model.safetensors")
    genesis.save(model.state_dict(), path)
    other = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    other.load_state_dict(genesis.load(path))
    for (k, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        assert a.tolist() == b.tolist(), k
    tensors = {"bf16": genesis.ones(2, dtype=genesis.bfloat16), "flag": genesis.tensor([True, False])}
    genesis.save_file(tensors, str(tmp_path / "t.safetensors"), metadata={"format": "pt"})
    back = genesis.load_file(str(tmp_path / "t.safetensors"))
    assert back["bf16"].dtype == genesis.bfloat16 and back["flag"].tolist() == [True, False]
    assert genesis._C.load_metadata(str(tmp_path / "t.safetensors"))["format"] == "pt"
    raw = (tmp_path / "t.safetensors").read_bytes()
    (tmp_path / "bad.safetensors").write_bytes(raw[: len(raw) - 3])
    with pytest.raises(OSError, match="bad.safetensors"):
        genesis.load(str(tmp_path / "bad.safetensors"))


def test_data_loader_order_depends_on_seed_and_epoch():
    x = genesis.arange(10)
    loader = genesis.data.DataLoader(genesis.data.TensorDataset(x, x * 2), batch_size=4, shuffle=True, seed=1)
    first = [b[0].tolist() for b in loader]
    second = [b[0].tolist() for b in loader]  # the next epoch
    assert sorted(sum(first, [])) == list(range(10)) and first != second
    loader.set_epoch(0)
    assert [b[0].tolist() for b in loader] == first


def test_save_and_load_whole_checkpoints(tmp_path):
    model = nn.Linear(3, 2)
    opt = genesis.optim.Adam(model.parameters(), lr=0.1)
    model(genesis.randn(4, 3)).sum().backward()
    opt.step()
    path = str(tmp_path / "ckpt.safetensors")
    genesis.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "note": None,
                  "shape": (2, 3)}, path)
    ck = genesis.load(path)
    assert ck["epoch"] == 3 and ck["note"] is None and ck["shape"] == (2, 3)
    assert ck["model"]["weight"].tolist() == model.weight.tolist()
    assert ck["optimizer"]["state"][0]["step"] == 1  # int keys come back as ints
    other = genesis.optim.Adam(nn.Linear(3, 2).parameters(), lr=0.1)
    other.load_state_dict(ck["optimizer"])
    assert other.state_dict()["state"][1]["exp_avg"].tolist() == opt.state_dict()["state"][1]["exp_avg"].tolist()
    assert "optimizer.state.0.exp_avg" in genesis.load_file(path)  # tensors are named by their path
    # Objects that are not data are pickled, as torch does; weights_only=True refuses to unpickle them.
    genesis.save({"x": _Plain(7)}, str(tmp_path / "obj.pt"))
    assert genesis.load(str(tmp_path / "obj.pt"))["x"].v == 7
    with pytest.raises(Exception):
        genesis.load(str(tmp_path / "obj.pt"), weights_only=True)


class _Plain:
    def __init__(self, v):
        self.v = v


def test_set_and_get_num_threads():
    # CTest runs this file with OMP_NUM_THREADS=1: the default is 1.
    before = genesis.get_num_threads()
    assert before == int(os.environ.get("OMP_NUM_THREADS", before))
    try:
        genesis.set_num_threads(3)
        assert genesis.get_num_threads() == 3
        x = genesis.randn(512, 256, dtype=genesis.float64)
        w = genesis.randn(256, 384, dtype=genesis.float64)
        y3 = (x.float() @ w.float()).numpy()
        genesis.set_num_threads(1)
        y1 = (x.float() @ w.float()).numpy()
        assert (y3 == y1).all()  # blocks of a matmul on 3 threads: the same bits as one thread
        with pytest.raises(ValueError, match="must be positive"):
            genesis.set_num_threads(0)
    finally:
        genesis.set_num_threads(before)
