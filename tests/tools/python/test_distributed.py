"""genesis.distributed from Python: every collective, DistributedDataParallel over a Module written
in Python, DistributedSampler and the DataLoader's sharding, at world sizes 2 and 4 with Gloo on
localhost. Each test starts dist_worker.py under `genesis launch` and checks that every rank
passed its checks (each compares with a single-process computation; see dist_worker.py)."""
import datetime
import os
import re
import subprocess
import sys

import pytest

import genesis
import genesis.distributed as dist
from conftest import BUILD_DIR, SOURCE_DIR

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(BUILD_DIR, "bin", "genesis")


def launch(nproc, script, *args, timeout=120):
    """Runs `genesis launch --nproc-per-node nproc python3 script args`; returns (exit code, output)."""
    if not dist.is_gloo_available():
        pytest.skip("the gloo communicator plugin is not built (needs libgloo-dev)")
    if not os.path.exists(LAUNCHER):
        pytest.skip("the genesis launcher is not built")
    env = dict(os.environ, GENESIS_NUM_THREADS="1", OMP_NUM_THREADS="1", GENESIS_DIST_TIMEOUT="60")
    r = subprocess.run([LAUNCHER, "launch", "--nproc-per-node", str(nproc), "--master-port", "0", "--grace", "2",
                        sys.executable, script, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return r.returncode, r.stdout + r.stderr


def run_worker(nproc, mode, checks):
    code, out = launch(nproc, os.path.join(HERE, "dist_worker.py"), mode)
    assert code == 0, out
    done = dict(re.findall(r"rank (\d+) done: (\d+) checks", out))
    assert done == {str(r): str(checks) for r in range(nproc)}, out
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_collectives(world):
    run_worker(world, "collectives", 12)


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_python_module(world):
    out = run_worker(world, "ddp", 7)
    errors = [float(e) for e in re.findall(r"relative error vs float64 oracle: ([0-9.]+(?:e[-+][0-9]+)?)", out)]
    assert len(errors) == world and max(errors) <= 1e-6
    print(f"world {world}: DDP gradients vs float64 single-process oracle, worst relative error {max(errors):.3g}")


@pytest.mark.parametrize("world", [2, 4])
def test_sampler_and_loader_shards(world):
    run_worker(world, "sampler", 2)


def test_failing_rank_fails_the_job():
    """A check that fails on one rank fails the whole job (the harness can see a failure)."""
    code, out = launch(2, os.path.join(HERE, "dist_worker.py"), "fail")
    assert code != 0
    assert "rank 1" in out and "deliberate failure" in out, out


def test_example_ddp_mlp(tmp_path):
    ckpt = str(tmp_path / "mlp.safetensors")
    code, out = launch(2, os.path.join(SOURCE_DIR, "examples", "python", "ddp_mlp.py"), "--epochs", "20",
                       "--checkpoint", ckpt)
    assert code == 0, out
    acc = float(re.findall(r"train accuracy ([0-9.]+)%", out)[-1])
    assert acc > 85.0, out
    state = genesis.load(ckpt)
    assert sorted(state) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]


def test_calls_before_init_raise_runtime_error():
    assert dist.is_available() and not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier,
                 lambda: dist.all_reduce(genesis.ones(2)), lambda: dist.broadcast(genesis.ones(2), 0),
                 lambda: dist.new_group([0]), lambda: genesis.data.DistributedSampler(range(4)),
                 lambda: genesis.nn.parallel.DistributedDataParallel(genesis.nn.Linear(2, 2))):
        with pytest.raises(RuntimeError, match="init_process_group"):
            call()
    with pytest.raises(ValueError):
        dist.init_process_group("mpi")


def test_single_process_group():
    """A job of one, in this process: collectives are identities, DDP leaves gradients alone."""
    if not dist.is_gloo_available():
        pytest.skip("the gloo communicator plugin is not built (needs libgloo-dev)")
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", world_size=1, rank=0,
                            timeout=datetime.timedelta(seconds=30))
    try:
        with pytest.raises(RuntimeError, match="already"):
            dist.init_process_group("gloo")
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
        t = genesis.arange(5, dtype=genesis.float64)
        work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        assert work.wait() and work.is_completed()
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        with pytest.raises(RuntimeError, match=r"ReduceOp\.AVG"):  # AVG needs a floating dtype
            dist.all_reduce(genesis.ones(2, dtype=genesis.int64), op=dist.ReduceOp.AVG)
        with pytest.raises(ValueError):
            dist.recv(genesis.ones(2))  # no receive from any rank
        lin = genesis.nn.Linear(3, 2)
        model = genesis.nn.parallel.DistributedDataParallel(lin)
        x = genesis.randn(4, 3)
        model(x).sum().backward()
        want = genesis.nn.Linear(3, 2)
        want.load_state_dict(lin.state_dict())
        want(x).sum().backward()
        assert lin.weight.grad.tolist() == want.weight.grad.tolist()
        assert list(model.state_dict()) == ["module.weight", "module.bias"]
        loss = model(x).sum()
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    # a wrapper whose group is gone raises instead of communicating
    with pytest.raises(RuntimeError, match="destroyed"):
        loss.backward()
    with pytest.raises(RuntimeError, match="destroyed"):
        model(x)
    # once the wrapper is gone, the module trains alone
    del model
    lin.weight.grad = None
    lin(x).sum().backward()
    want.weight.grad = None
    want(x).sum().backward()
    assert lin.weight.grad.tolist() == want.weight.grad.tolist()
