#!/usr/bin/env python3
"""Paged decode attention: Genesis paged_attention vs Genesis' contiguous decode vs PyTorch, one table.

    bench/gpu/paged_attention.sh [build dir]             # builds, runs both sides, prints the table
    python3 bench/gpu/paged_attention.py genesis.jsonl [--out table.txt]   # the PyTorch side alone

genesis.jsonl comes from bench/gpu/paged_attention_bench (paged_attention.cpp): its "check" lines compare
paged_attention with scaled_dot_product_attention (printed first, a failure is reported loudly), its "case"
lines hold the Genesis times.  PyTorch is timed here the same way (torch_timing.py: CUDA events, outputs
allocated per call, warm-up, median) on the same shapes: bf16, 14 query heads, 2 kv heads, block size 16, one
query per sequence.  Columns:
  paged        Genesis paged_attention over a pool with shuffled block ids
  contiguous   Genesis scaled_dot_product_attention of q (B,14,1,D) against the (B,2,ctx,D) cache
  torch sdpa   F.scaled_dot_product_attention on the contiguous cache (enable_gqa, or k/v expanded beforehand)
  torch gather F.scaled_dot_product_attention after gathering the pages into a contiguous cache (a naive paged
               decode in PyTorch)
  GB/s         K and V bytes of the batch / paged time (the decode's floor is the HBM bandwidth)
  vs torch     torch sdpa time / paged time (>= 1: the paged kernel is as fast or faster)
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch_timing import time_ms

dev = "cuda"
HQ, HKV, BS = 14, 2, 16


def sdpa_gqa(q, k, v):
    """F.scaled_dot_product_attention with GQA: enable_gqa where PyTorch has it, else k/v expanded per call."""
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:
        g = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))


def torch_times(B, L, D):
    """(torch sdpa ms, torch gather+sdpa ms) of one decode step of B sequences of L positions."""
    g = torch.Generator(device=dev).manual_seed(0)

    def randn(*s):
        return torch.randn(*s, device=dev, dtype=torch.bfloat16, generator=g)

    q = randn(B, HQ, 1, D)
    k, v = randn(B, HKV, L, D), randn(B, HKV, L, D)
    try:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        sdpa = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
    except TypeError:  # no enable_gqa: expand once, outside the timing
        ke, ve = k.repeat_interleave(HQ // HKV, 1), v.repeat_interleave(HQ // HKV, 1)
        sdpa = lambda: F.scaled_dot_product_attention(q, ke, ve)  # noqa: E731
    t_sdpa = time_ms(sdpa, 50, 10)
    del k, v
    M = (L + BS - 1) // BS
    NB = B * M + 3
    pool = randn(NB, 2 * HKV, BS, D)
    tables = torch.randperm(NB, device=dev, generator=g)[: B * M].view(B, M)

    def gather():
        pages = pool[tables]  # (B, M, 2*Hkv, BS, D)
        kv = pages.permute(0, 2, 1, 3, 4).reshape(B, 2 * HKV, M * BS, D)[:, :, :L]
        return sdpa_gqa(q, kv[:, :HKV], kv[:, HKV:])

    t_gather = time_ms(gather, 50, 10)
    return t_sdpa, t_gather


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    checks, cases = [], []
    for line in open(sys.argv[1]):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        (checks if "check" in d else cases if "case" in d else []).append(d)
    lines = [f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", ""]
    bad = [c["check"] for c in checks if not c.get("ok")]
    lines.append(f"checks (paged_attention vs scaled_dot_product_attention): {len(checks) - len(bad)}/{len(checks)} ok"
                 + (f"; FAILED: {', '.join(bad)}" if bad else ""))
    lines.append("")
    hdr = (f"{'case':<24} {'paged ms':>9} {'contig ms':>9} {'torch sdpa':>10} {'torch gather':>12} "
           f"{'GB/s':>7} {'vs torch':>8} {'vs contig':>9}")
    lines.append(hdr)
    print("\n".join(lines), flush=True)
    for c in cases:
        t_sdpa, t_gather = torch_times(c["B"], c["ctx"], c["D"])
        p = c["paged_ms"]
        row = (f"{c['case']:<24} {p:9.4f} {c['contig_ms']:9.4f} {t_sdpa:10.4f} {t_gather:12.4f} "
               f"{c['kv_bytes'] / (p * 1e-3) / 1e9:7.0f} {t_sdpa / p:8.2f} {c['contig_ms'] / p:9.2f}")
        lines.append(row)
        print(row, flush=True)
    if out_path:
        with open(out_path, "w") as f:
            f.write("\n".join(lines) + "\n")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
