#!/usr/bin/env python3
"""PyTorch side of ops_bench.cpp: the same cases, same timing; prints the table.

    python3 ops_bench.py genesis.jsonl
speedup = torch ms / genesis ms (>= 1: Genesis as fast or faster)."""
import json, sys, torch
import torch.nn.functional as F
from torch_timing import time_ms as _time_ms
dev = "cuda"
def time_ms(fn): return _time_ms(fn, reps=30, warm=5)
g = torch.Generator(device=dev).manual_seed(0)
def randn(*s, dtype=torch.float32): return torch.randn(*s, device=dev, dtype=dtype, generator=g)
r = {}
M = 64 << 20
for dt, n in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
    a, b = randn(M, dtype=dt), randn(M, dtype=dt); r[f"add_{n}_64M"] = time_ms(lambda: a + b); del a, b
a = randn(M)
r["exp_f32_64M"] = time_ms(lambda: torch.exp(a))
r["gelu_f32_64M"] = time_ms(lambda: F.gelu(a))
r["cast_f32_bf16_64M"] = time_ms(lambda: a.to(torch.bfloat16))
r["sum_all_f32_64M"] = time_ms(lambda: a.sum())
del a
a = randn(M, dtype=torch.bfloat16); r["gelu_bf16_64M"] = time_ms(lambda: F.gelu(a)); del a
a = randn(4096, 4096)
r["sum_cols_f32_4096x4096"] = time_ms(lambda: a.sum(0))
r["max_rows_f32_4096x4096"] = time_ms(lambda: a.amax(1))
r["argmax_rows_f32_4096x4096"] = time_ms(lambda: a.argmax(1))
r["var_rows_f32_4096x4096"] = time_ms(lambda: a.var(1))
r["logsumexp_rows_f32_4096x4096"] = time_ms(lambda: torch.logsumexp(a, 1))
t = a.t(); r["contiguous_T_f32_4096x4096"] = time_ms(lambda: t.contiguous())
b = randn(4096); r["bcast_add_row_f32_4096x4096+4096"] = time_ms(lambda: a + b)
s = randn(8192, 8192, dtype=torch.bfloat16); r["softmax_bf16_8192x8192"] = time_ms(lambda: torch.softmax(s, -1)); del s
s = randn(8192, 8192); r["log_softmax_f32_8192x8192"] = time_ms(lambda: torch.log_softmax(s, -1))
y = randn(8192, 8192)
r["softmax_bwd_f32_8192x8192"] = time_ms(lambda: torch._softmax_backward_data(s, y, -1, torch.float32)); del s, y
s = randn(4096, 32000, dtype=torch.bfloat16); r["softmax_bf16_4096x32000"] = time_ms(lambda: torch.softmax(s, -1))
gen = {}
for line in open(sys.argv[1]):
    try: d = json.loads(line); gen[d["case"]] = d
    except Exception: pass
print(f"{'case':<36} {'genesis ms':>10} {'torch ms':>9} {'GB/s':>8} {'speedup':>8}")
for c, tms in r.items():
    d = gen.get(c)
    if not d: print(f"{c:<36} {'-':>10} {tms:9.4f}"); continue
    print(f"{c:<36} {d['ms']:10.4f} {tms:9.4f} {d['gbs']:8.0f} {tms / d['ms']:8.2f}")
