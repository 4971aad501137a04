"""Memory and profiling: allocator statistics and a Chrome trace of some ops.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/memory_profiling.py [trace.json]
"""
import sys

import genesis

device = genesis.device("cuda" if genesis.cuda.is_available() else "cpu")
n = 4096 if device.type == "cuda" else 256
with genesis.profiler.profile() as prof:
    x = genesis.rand(n, n, device=device)
    y = genesis.matmul(x, x.T)
    z = (y.softmax(-1) * 2).sum()
print(prof.summary())
if len(sys.argv) > 1:
    prof.export_chrome_trace(sys.argv[1])
    print(f"trace written to {sys.argv[1]} (open it in Perfetto)")

print(f"Memory allocated: {device.memory_allocated() / 1e6:.1f} MB")
print(f"Memory cached: {device.memory_cached() / 1e6:.1f} MB")
stats = device.memory_stats()
print(f"Cache hit rate: {stats['cache_hit_rate']:.1%}")
print(f"Peak memory usage: {stats['peak_allocated'] / 1e9:.3f} GB")
