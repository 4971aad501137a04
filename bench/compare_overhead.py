#!/usr/bin/env python3
"""bench/compare_overhead.py - host overhead of one tiny op, Genesis vs PyTorch, in one run.

Runs build/bin/bench_op_overhead (gn_op_call: add of two 1-element float32 CPU
tensors, output allocated and freed) and times `torch.add(a, b)` on the same
tensors with Debian's python3-torch, then prints both medians and the ratio.

    /usr/bin/python3 bench/compare_overhead.py [build dir]
"""
import json
import statistics
import subprocess
import sys
import timeit

build = sys.argv[1] if len(sys.argv) > 1 else "build"
out = subprocess.run([f"{build}/bin/bench_op_overhead", "--benchmark_repetitions=9",
                      "--benchmark_report_aggregates_only=true", "--benchmark_format=json",
                      "--benchmark_filter=BM_op_call_add_1elem$"],
                     check=True, capture_output=True, text=True).stdout
rows = json.loads(out)["benchmarks"]
genesis_ns = next(r["real_time"] for r in rows if r.get("aggregate_name") == "median")

try:
    import torch
except ImportError:
    print(f"genesis gn_op_call(add, 1 elem): {genesis_ns:.0f} ns (torch not installed: no ratio)")
    sys.exit(0)
torch.set_num_threads(1)
a = torch.ones(1)
b = torch.ones(1)
n = 200000
samples = [timeit.timeit(lambda: torch.add(a, b), number=n) / n * 1e9 for _ in range(9)]
torch_ns = statistics.median(samples)
print(f"{'case':44} {'genesis (ns)':>13} {'torch (ns)':>11} {'torch/genesis':>14}")
print(f"{'add, two 1-element f32 CPU tensors':44} {genesis_ns:13.0f} {torch_ns:11.0f} {torch_ns / genesis_ns:13.1f}x")
print(f"(torch {torch.__version__}; the torch figure includes the Python call, as 'PyTorch eager' does)")
