#!/usr/bin/env python3
"""Time the GPU op-class cases in PyTorch and print the Genesis/PyTorch ratio table.

    python3 bench/gpu/compare.py genesis.jsonl [--out table.txt]

genesis.jsonl comes from bench/gpu/gpu_bench (same machine, same run: run.sh).
PyTorch is timed the same way: CUDA events around each call, outputs allocated
per call, warm-up, median of the reps; host-side cases use the wall clock.
speedup = PyTorch time / Genesis time (>= 1: Genesis is as fast or faster).
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch_timing import time_ms

dev = "cuda"


def torch_cases():
    r = {}
    g = torch.Generator(device=dev).manual_seed(0)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device=dev, dtype=dtype, generator=g)

    n = 64 << 20
    x = randn(n)
    ms = time_ms(lambda: x.clone(), 30)
    r["copy_d2d_256MB"] = (ms, 2 * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
    del x
    for n in (1 << 16, 4 << 20, 16 << 20, 64 << 20):
        name = f"add_f32_{n >> 20}M" if n >= (1 << 20) else f"add_f32_{n >> 10}K"
        a, b = randn(n), randn(n)
        ms = time_ms(lambda: a + b, 200 if n < (1 << 20) else 30)
        r[name] = (ms, 3 * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
    for n in (4096, 8192):
        a, b = randn(n, n), randn(n, 1)
        ms = time_ms(lambda: a + b, 30)
        r[f"bcast_add_{n}x{n}+{n}x1"] = (ms, (2 * n * n + n) * 4 / (ms * 1e-3) / 1e9, "GB/s")
        ms = time_ms(lambda: a.sum(1), 30)
        r[f"sum_rows_{n}x{n}"] = (ms, (n * n + n) * 4 / (ms * 1e-3) / 1e9, "GB/s")
        if n == 8192:
            ms = time_ms(lambda: torch.softmax(a, -1), 30)
            r["softmax_f32_8192x8192"] = (ms, 2 * n * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
        w, bb = randn(n), randn(n)
        ms = time_ms(lambda: F.layer_norm(a, (n,), w, bb, 1e-5), 30)
        r[f"layer_norm_f32_{n}x{n}"] = (ms, 2 * n * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
        ms = time_ms(lambda: F.rms_norm(a, (n,), w, 1e-6), 30)
        r[f"rms_norm_f32_{n}x{n}"] = (ms, 2 * n * n * 4 / (ms * 1e-3) / 1e9, "GB/s")
        del a, b
    for n in (4096, 8192):
        ma, mb = randn(n, n, dtype=torch.bfloat16), randn(n, n, dtype=torch.bfloat16)
        ms = time_ms(lambda: ma @ mb, 100, 20)  # steady clocks, as gpu_bench
        r[f"matmul_bf16_{n}"] = (ms, 2 * n ** 3 / (ms * 1e-3) / 1e12, "TFLOP/s")
        del ma, mb
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for (B, H, S, D) in [(8, 16, 1024, 64), (4, 14, 2048, 64), (1, 32, 4096, 128)]:
        tag = f"{B}x{H}x{S}x{D}"
        flops = 4 * B * H * S * S * D / 2
        q, k, v, go = (randn(B, H, S, D, dtype=torch.bfloat16) for _ in range(4))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 50)
            r["attn_fwd_" + tag] = (ms, flops / (ms * 1e-3) / 1e12, "TFLOP/s")
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

            def fb():
                o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
                o.backward(go)
            ms = time_ms(fb, 50)
            r["attn_fwdbwd_" + tag] = (ms, 3.5 * flops / (ms * 1e-3) / 1e12, "TFLOP/s")
        del q, k, v, go, qg, kg, vg
    # conv2d yardstick (not an acceptance case): f32 in full precision, TF32 off
    N, Cc, H, O = 32, 64, 56, 64
    cflops = 2.0 * N * O * H * H * Cc * 9
    for dt, tag in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
        torch.backends.cudnn.allow_tf32 = False
        x = randn(N, Cc, H, H, dtype=dt).requires_grad_()
        w = randn(O, Cc, 3, 3, dtype=dt).requires_grad_()
        ms = time_ms(lambda: F.conv2d(x, w, padding=1), 30)
        r[f"conv2d_{tag}_fwd"] = (ms, cflops / (ms * 1e-3) / 1e12, "TFLOP/s")
        y = F.conv2d(x, w, padding=1)
        gy = torch.randn_like(y)

        def cb():
            torch.autograd.grad(y, (x, w), gy, retain_graph=True)
        ms = time_ms(cb, 30)
        r[f"conv2d_{tag}_bwd"] = (ms, 2 * cflops / (ms * 1e-3) / 1e12, "TFLOP/s")
        del x, w, y, gy
    torch.backends.cudnn.allow_tf32 = True
    R, C = 4096, 151936
    xl = randn(R, C, dtype=torch.bfloat16).requires_grad_()
    t = torch.randint(0, C, (R,), device=dev, generator=g)

    def xent():
        xl.grad = None
        F.cross_entropy(xl, t).backward()
    ms = time_ms(xent)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    xent()
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    r["xent_bf16_4096x151936"] = (ms, ms, "ms", {"peak_extra_bytes": extra})
    del xl, t
    torch.cuda.empty_cache()
    sizes = [64 << ((i * 7) % 19) for i in range(64)]

    def alloc_round():
        ts = [torch.empty(s, device=dev) for s in sizes]
        del ts
    alloc_round()
    rounds = 200
    t0 = time.perf_counter()
    for _ in range(rounds):
        alloc_round()
    us = (time.perf_counter() - t0) * 1e6 / (rounds * len(sizes))
    r["alloc_free_mixed"] = (us * 1e-3, us, "us/tensor")
    ta, tb = torch.ones(1, device=dev), torch.ones(1, device=dev)

    def host_us(burst=200, bursts=100):
        # host time per call in bursts, the device drained (untimed) in between
        us = []
        for i in range(bursts + 3):
            t0 = time.perf_counter()
            for _ in range(burst):
                ta + tb
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            if i >= 3:
                us.append((t1 - t0) * 1e6 / burst)
        us.sort()
        return us[len(us) // 2]
    us = host_us()
    r["tiny_add_overhead"] = (us * 1e-3, us, "us/call")
    for _ in range(1000):
        ta + tb
    torch.cuda.synchronize()
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        ta + tb
    torch.cuda.synchronize()
    us = (time.perf_counter() - t0) * 1e6 / n
    r["tiny_add_stream"] = (us * 1e-3, us, "us/call")
    return r


# (case, acceptance target in words, check(genesis_value_or_ms, torch_value_or_ms, copy_gbs) -> bool)
def targets(case):
    if case.startswith(("add_f32_", "bcast_add", "sum_rows", "softmax", "layer_norm", "rms_norm")):
        return ">=1.0x (>=4M)"
    if case.startswith("matmul"):
        return ">=0.95x"
    if case.startswith("attn_fwd_"):
        return ">=0.9x"
    if case.startswith("attn_fwdbwd_"):
        return ">=0.8x"
    if case.startswith("xent"):
        return ">=2x, no f32 logits"
    if case == "alloc_free_mixed":
        return "<=2 us"
    if case == "tiny_add_overhead":
        return "<=5 us (host time per call)"
    if case == "tiny_add_stream":
        return "(20000 queued, then sync)"
    return ""


def main():
    gpath = sys.argv[1]
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    gen = {}
    for line in open(gpath):
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        gen[d["case"]] = d
    tc = torch_cases()
    copy_gbs = gen.get("copy_d2d_256MB", {}).get("value")
    lines = [f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}",
             f"{'case':<30} {'genesis ms':>11} {'torch ms':>10} {'genesis':>14} {'torch':>14} {'speedup':>8}  target"]
    for case, tv in tc.items():
        g = gen.get(case)
        t_ms, t_val, unit = tv[0], tv[1], tv[2]
        if g is None or "ms" not in g:
            err = g.get("error", "not run") if g else "not run"
            lines.append(f"{case:<30} {'-':>11} {t_ms:10.4f} {'-':>14} {t_val:10.2f} {unit:<3} {'-':>8}  {targets(case)}"
                         f"  [{err[:60]}]")
            continue
        speed = t_ms / g["ms"] if g["ms"] > 0 else float("nan")
        note = ""
        if case.startswith("xent"):
            ge, te = g.get("peak_extra_bytes", float("nan")), tv[3]["peak_extra_bytes"]
            note = f"  peak extra: genesis {ge / 1e6:.0f} MB, torch {te / 1e6:.0f} MB (f32 logits {R_C4 / 1e6:.0f} MB)"
        if copy_gbs and (case == "add_f32_64M" or "8192x8192" in case):
            note = f"  {100 * g['value'] / copy_gbs:.0f}% of copy bw (>=85% at 64M)"
        lines.append(f"{case:<30} {g['ms']:11.4f} {t_ms:10.4f} {g['value']:10.2f} {unit:<3} {t_val:10.2f} {unit:<3} "
                     f"{speed:8.2f}  {targets(case)}{note}")
    for case in ("launch_empty_host", "host_add_prealloc", "host_empty_release"):
        if case in gen and "ms" in gen[case]:
            what = ("(floor: empty CUDA kernel, no Genesis code)" if case.startswith("launch")
                    else "(diagnostic: host time per call)")
            lines.append(f"{case:<30} {gen[case]['ms']:11.4f} {'':>10} {gen[case]['value']:10.2f} us   {what}")
    if copy_gbs:
        lines.append(f"measured device-to-device copy bandwidth (genesis copy, 256 MB): {copy_gbs:.0f} GB/s; "
                     f"torch clone: {tc['copy_d2d_256MB'][1]:.0f} GB/s")
    text = "\n".join(lines)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    print(text)


R_C4 = 4096 * 151936 * 4

if __name__ == "__main__":
    main()
