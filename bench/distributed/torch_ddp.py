#!/usr/bin/env python3
"""torch_ddp.py - the PyTorch reference of bench/distributed/run.sh: Hugging Face transformers'
model of a named Qwen shape (random weights, float32) in torch DistributedDataParallel over NCCL,
with the recipe of `genesis bench train` (bench/llm/compare_train_hf.py): bf16 autocast, batch 8 x
512 random tokens per rank with every position a target, AdamW, gradient clipping at 1.0, 3
warm-up steps then the mean of 10, each step ending with the loss read on the host.

Run one process per GPU with torchrun's environment, e.g.

    genesis launch --nproc-per-node 2 python3 bench/distributed/torch_ddp.py --config qwen2.5-0.5b

Rank 0 prints one JSON line: the job's tokens/s (every rank's tokens), step time, peak memory.
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llm"))
from compare_train_hf import SHAPES, hf_model, timed_steps  # noqa: E402  (the 1-GPU benchmark's shapes and recipe)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="qwen2.5-0.5b", choices=sorted(SHAPES))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reduce-dtype", choices=["bf16", "f16"], default=None,
                    help="all-reduce compressed gradients (torch's bf16/fp16_compress_hook)")
    a = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()

    model = hf_model(a.config)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=25)
    if a.reduce_dtype:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        hook = default_hooks.bf16_compress_hook if a.reduce_dtype == "bf16" else default_hooks.fp16_compress_hook
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-5)
    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    ids = torch.randint(0, model.config.vocab_size, (a.warmup + a.steps, a.batch, a.seq), device="cuda", generator=g)
    secs = timed_steps(ddp, opt, ids, a.warmup)
    if rank == 0:
        print(json.dumps({"framework": "pytorch-ddp", "config": a.config, "world_size": world, "batch": a.batch,
                          "reduce_dtype": a.reduce_dtype or "none",
                          "tokens_per_second": world * a.steps * a.batch * a.seq / secs,
                          "step_ms": 1e3 * secs / a.steps, "peak_gb": torch.cuda.max_memory_allocated() / 1e9}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
