#!/usr/bin/env python3
"""Check and time the raw flash attention kernels against PyTorch (GPU machine).

    nvcc -arch=sm_90 -O3 -std=c++17 --shared -Xcompiler -fPIC \
         -o /tmp/flash_harness.so bench/gpu/flash/flash_harness.cu
    python3 bench/gpu/flash/flash_check.py /tmp/flash_harness.so [--perf]

Correctness: relative L2 error ||x - ref|| / ||ref|| of out, lse, dq, dk, dv against
a float64 reference built from explicit masks (fresh random inputs per case,
outputs poisoned with NaN first so unwritten elements fail).  bf16/f16 inputs:
the bar is 2e-2 (16-bit operands, f32 accumulation; measured errors are printed).
The backward must also give the same bits when run twice.
Timing: CUDA events, warm-up, median of 30; PyTorch SDPA forced to the flash backend.
"""
import ctypes
import math
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent.parent))
from torch_timing import time_ms  # noqa: E402

lib = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
I = ctypes.c_int
lib.harness_flash_fwd.argtypes = [P, P, P, P, P] + [I] * 7 + [ctypes.c_float, I, P]
lib.harness_flash_bwd.argtypes = [P] * 10 + [I] * 7 + [ctypes.c_float, I, P]
dev = "cuda"


def ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def ours_fwd(q, k, v, causal, scale):
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, Hq, Sq), float("nan"), device=dev)
    dt = 1 if q.dtype == torch.bfloat16 else 0
    rc = lib.harness_flash_fwd(ptr(q), ptr(k), ptr(v), ptr(out), ptr(lse), B, Hq, Hkv, Sq, Sk, D, causal, scale, dt,
                               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    assert rc == 0, f"launch error {rc}"
    return out, lse


def ours_bwd(do, q, k, v, o, lse, causal, scale, scratch=None):
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    dq = torch.full_like(q, float("nan"))
    dk = torch.full_like(k, float("nan"))
    dv = torch.full_like(v, float("nan"))
    if scratch is None:
        scratch = torch.empty(B * Hq * Sq, device=dev)
    dt = 1 if q.dtype == torch.bfloat16 else 0
    rc = lib.harness_flash_bwd(ptr(do), ptr(q), ptr(k), ptr(v), ptr(o), ptr(lse), ptr(dq), ptr(dk), ptr(dv),
                               ptr(scratch), B, Hq, Hkv, Sq, Sk, D, causal, scale, dt,
                               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    assert rc == 0, f"launch error {rc}"
    return dq, dk, dv


def reference(q, k, v, do, causal, scale):
    """float64 attention with explicit masks; rows with no key give out 0, lse -inf."""
    q, k, v, do = (t.double().requires_grad_(t is not do) for t in (q, k, v, do))
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    kr = k.repeat_interleave(Hq // Hkv, dim=1)
    vr = v.repeat_interleave(Hq // Hkv, dim=1)
    s = scale * q @ kr.transpose(-1, -2)
    i = torch.arange(Sq, device=dev)[:, None]
    j = torch.arange(Sk, device=dev)[None, :]
    keep = torch.ones(Sq, Sk, dtype=torch.bool, device=dev)
    if causal == 1:
        keep = j <= i
    elif causal == 2:
        keep = j <= i + (Sk - Sq)
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None].masked_fill(torch.isinf(lse[..., None]), 0.0))
    p = torch.where(keep, p, torch.zeros_like(p))
    out = p @ vr
    out.backward(do)
    return out.detach(), lse.detach(), q.grad, k.grad, v.grad


def rel(x, ref):
    x, ref = x.double(), ref.double()
    fin = torch.isfinite(ref)
    if not torch.equal(torch.isfinite(x), fin) or not torch.equal(x[~fin], ref[~fin]):
        return float("inf")
    d = (x[fin] - ref[fin]).norm() / max(ref[fin].norm().item(), 1e-30)
    return d.item()


def check():
    cases = [  # B, Hq, Hkv, Sq, Sk, D, causal, dtype
        (2, 4, 4, 128, 128, 64, 0, torch.bfloat16),
        (2, 4, 4, 128, 128, 64, 1, torch.bfloat16),
        (1, 4, 2, 77, 133, 64, 0, torch.bfloat16),
        (1, 4, 2, 77, 133, 64, 1, torch.float16),
        (1, 4, 2, 77, 133, 64, 2, torch.bfloat16),
        (1, 6, 2, 133, 77, 128, 2, torch.bfloat16),
        (1, 6, 2, 133, 77, 128, 1, torch.float16),
        (2, 8, 1, 1, 300, 128, 0, torch.bfloat16),   # decode, MQA
        (2, 8, 2, 1, 300, 64, 2, torch.float16),     # decode, KV cache
        (1, 2, 2, 200, 200, 128, 1, torch.float16),
        (1, 3, 1, 65, 64, 64, 0, torch.bfloat16),
    ]
    worst = 0.0
    ok = True
    for (B, Hq, Hkv, Sq, Sk, D, causal, dt) in cases:
        torch.manual_seed(B * 1000 + Sq * 7 + Sk + D + causal)
        q = torch.randn(B, Hq, Sq, D, device=dev, dtype=dt)
        k = torch.randn(B, Hkv, Sk, D, device=dev, dtype=dt)
        v = torch.randn(B, Hkv, Sk, D, device=dev, dtype=dt)
        do = torch.randn(B, Hq, Sq, D, device=dev, dtype=dt)
        scale = 1.0 / math.sqrt(D) if causal != 1 else 0.3
        out, lse = ours_fwd(q, k, v, causal, scale)
        dq, dk, dv = ours_bwd(do, q, k, v, out, lse, causal, scale)
        torch.cuda.synchronize()
        ro, rl, rdq, rdk, rdv = reference(q, k, v, do, causal, scale)
        errs = [rel(out, ro), rel(lse, rl), rel(dq, rdq), rel(dk, rdk), rel(dv, rdv)]
        # deterministic backward: a second run gives the same bits
        dq2, dk2, dv2 = ours_bwd(do, q, k, v, out, lse, causal, scale)
        same = all(torch.equal(a.view(torch.int16), b.view(torch.int16))
                   for a, b in ((dq, dq2), (dk, dk2), (dv, dv2)))
        good = all(e < 2e-2 for e in errs) and same
        ok &= good
        worst = max(worst, max(errs))
        print(f"check B{B} Hq{Hq} Hkv{Hkv} Sq{Sq} Sk{Sk} D{D} causal{causal} {str(dt)[6:]}: "
              f"out {errs[0]:.1e} lse {errs[1]:.1e} dq {errs[2]:.1e} dk {errs[3]:.1e} dv {errs[4]:.1e} "
              f"{'repeatable' if same else 'NOT REPEATABLE'} "
              f"{'ok' if good else 'FAIL'}")
    print(f"flash check: {'PASS' if ok else 'FAIL'} (worst rel err {worst:.2e}, bar 2e-2)")
    return ok


def bench(fn, reps=30):
    return time_ms(fn, reps=reps, warm=5)


def perf():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    for (B, H, S, D) in [(8, 16, 1024, 64), (4, 14, 2048, 64), (1, 32, 4096, 128)]:
        dt = torch.bfloat16
        q = torch.randn(B, H, S, D, device=dev, dtype=dt)
        k = torch.randn(B, H, S, D, device=dev, dtype=dt)
        v = torch.randn(B, H, S, D, device=dev, dtype=dt)
        do = torch.randn(B, H, S, D, device=dev, dtype=dt)
        scale = 1.0 / math.sqrt(D)
        flops = 4 * B * H * S * S * D / 2  # causal
        scratch = torch.empty(B * H * S, device=dev)
        out, lse = ours_fwd(q, k, v, 1, scale)
        import os  # forward tiling variants (flash_launch.cuh, GN_FLASH_TUNING)
        for var in ("1", "3", "5", "6", "7", "0"):
            os.environ["GENESIS_FLASH_FWD_VARIANT"] = var
            print(f"  {(B, H, S, D)} fwd variant {var}: {bench(lambda: ours_fwd(q, k, v, 1, scale)):.3f} ms")
        t_of = bench(lambda: ours_fwd(q, k, v, 1, scale))
        t_ob = bench(lambda: ours_bwd(do, q, k, v, out, lse, 1, scale, scratch))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            t_tf = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

            def fb():
                o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
                o.backward(do)
            t_tfb = bench(fb)
        t_ofb = t_of + t_ob
        rows.append((B, H, S, D, t_of, t_tf, t_ofb, t_tfb, flops))
    print(f"{'shape':>22} {'fwd ms':>8} {'torch':>8} {'TF/s':>6} {'ratio':>6} {'f+b ms':>8} {'torch':>8} {'ratio':>6}")
    for (B, H, S, D, a, b, c, d, fl) in rows:
        print(f"{str((B, H, S, D)):>22} {a:8.3f} {b:8.3f} {fl / a / 1e9:6.0f} {b / a:6.2f} {c:8.3f} {d:8.3f} {d / c:6.2f}")


if __name__ == "__main__":
    good = check()
    if "--perf" in sys.argv:
        perf()
    sys.exit(0 if good else 1)
