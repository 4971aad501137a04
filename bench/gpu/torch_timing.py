"""PyTorch's side of bench_util.h's timing, shared by the GPU benchmark scripts.

CUDA events around each call (outputs allocated per call), warm-up calls
first, then the median of the reps, in milliseconds.
"""
import torch


def time_ms(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]
