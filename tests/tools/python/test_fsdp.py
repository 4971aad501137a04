"""genesis.distributed.fsdp (FullyShardedDataParallel) over gloo at world sizes 2 and 4, against PyTorch.

Each test starts fsdp_worker.py under `genesis launch`; every rank compares itself with a single-process
torch.optim.AdamW run (float64, clip_grad_norm_) on the concatenated batch.
"""
import os
import re

import pytest

from test_distributed import launch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("world", [2, 4])
def test_every_strategy_matches_torch(world):
    code, out = launch(world, os.path.join(HERE, "fsdp_worker.py"), "main")
    assert code == 0, out
    done = dict(re.findall(r"rank (\d+) done: (\d+) checks", out))
    assert done == {str(r): "10" for r in range(world)}, out
    errors = [float(e) for e in re.findall(r"relative error vs torch float64: ([0-9.]+e[-+][0-9]+)", out)]
    assert len(errors) == world and max(errors) <= 1e-10, out
    print(f"world {world}: FSDP vs torch AdamW float64, worst relative error {max(errors):.3g}")


def test_a_skipped_reduction_fails_the_comparison():
    """The negative control: with one unit's reduction skipped, the comparison with torch must fail."""
    code, out = launch(2, os.path.join(HERE, "fsdp_worker.py"), "negative")
    assert code == 0, out
    assert out.count("negative control caught") == 2, out


@pytest.mark.parametrize("world", [2, 4])
def test_tiny_qwen_matches_a_single_process_run(world):
    code, out = launch(world, os.path.join(HERE, "fsdp_worker.py"), "qwen")
    assert code == 0, out
    done = dict(re.findall(r"rank (\d+) done: (\d+) checks", out))
    assert done == {str(r): "3" for r in range(world)}, out
    errors = [float(e) for e in re.findall(r"qwen relative error vs single process: ([0-9.]+e[-+][0-9]+)", out)]
    assert len(errors) == world and max(errors) <= 1e-10, out
    print(f"world {world}: FSDP on the tiny Qwen vs one process, worst relative error {max(errors):.3g}")


def test_a_checkpoint_saved_by_4_ranks_resumes_at_2_and_at_1(tmp_path):
    """The tiny Qwen, sharded 4 ways, saved; loaded by 2 ranks and by 1: the same next-step losses."""
    code, out = launch(4, os.path.join(HERE, "fsdp_worker.py"), "qwen_save", str(tmp_path))
    assert code == 0, out
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["buffers.safetensors", "manifest.json"] + [
        f"shard-{r}-of-4.safetensors" for r in range(4)], os.listdir(tmp_path / "ckpt")
    for world in (2, 1):
        code, out = launch(world, os.path.join(HERE, "fsdp_worker.py"), "qwen_resume", str(tmp_path))
        assert code == 0, out
        assert out.count(f"resumed at world size {world}") == world, out
