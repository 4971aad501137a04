#!/usr/bin/env python3
"""bench/llm/compare_cpu.py - Qwen2.5-0.5B-shaped decode on the CPU: `genesis bench llm` against a
plain PyTorch implementation of the same model (KV cache, greedy, float32, random weights).

    /usr/bin/python3 bench/llm/compare_cpu.py --genesis build/bin/genesis [--new-tokens 32]

Debian's python3-torch has no transformers, so the PyTorch side is written out here: the same
layers (RMSNorm, GQA attention with q/k/v bias and rope, SwiGLU, tied head) in torch ops, with
torch.nn.functional.scaled_dot_product_attention on a growing KV cache.
"""
import argparse
import json
import os
import subprocess
import time

import torch
import torch.nn.functional as F

H, FFN, L, HQ, HKV, D, V, THETA = 896, 4864, 24, 14, 2, 64, 151936, 1e6


def rms(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rot(x):
    return torch.cat((-x[..., D // 2:], x[..., :D // 2]), -1)


class Qwen:
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        n = lambda *s: torch.randn(*s, generator=g) * 0.02
        self.emb = n(V, H)
        self.layers = [dict(qkv=n(HQ * D + 2 * HKV * D, H), b=n(HQ * D + 2 * HKV * D), o=n(H, HQ * D),
                            gu=n(2 * FFN, H), down=n(H, FFN), n1=torch.ones(H), n2=torch.ones(H)) for _ in range(L)]
        self.norm = torch.ones(H)
        inv = THETA ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
        ang = torch.arange(4096, dtype=torch.float64)[:, None] * inv[None]
        self.cos = torch.cat((ang.cos(), ang.cos()), -1).float()
        self.sin = torch.cat((ang.sin(), ang.sin()), -1).float()

    def step(self, ids, cache, pos):
        T = ids.shape[1]
        x = self.emb[ids]
        cos, sin = self.cos[pos:pos + T], self.sin[pos:pos + T]
        for i, p in enumerate(self.layers):
            h = rms(x, p["n1"])
            qkv = F.linear(h, p["qkv"], p["b"])
            q, k, v = qkv.split([HQ * D, HKV * D, HKV * D], -1)
            q = q.view(1, T, HQ, D).transpose(1, 2)
            k = k.view(1, T, HKV, D).transpose(1, 2)
            v = v.view(1, T, HKV, D).transpose(1, 2)
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            ck, cv = cache[i]
            ck[:, :, pos:pos + T], cv[:, :, pos:pos + T] = k, v
            kk = ck[:, :, :pos + T].repeat_interleave(HQ // HKV, 1)
            vv = cv[:, :, :pos + T].repeat_interleave(HQ // HKV, 1)
            s = (q @ kk.transpose(-1, -2)) * D ** -0.5  # torch 1.13 has no fused sdpa
            if T > 1:
                s = s + torch.full((T, pos + T), float("-inf")).triu(pos + 1)
            a = s.softmax(-1) @ vv
            x = x + F.linear(a.transpose(1, 2).reshape(1, T, HQ * D), p["o"])
            gu = F.linear(rms(x, p["n2"]), p["gu"])
            x = x + F.linear(F.silu(gu[..., :FFN]) * gu[..., FFN:], p["down"])
        return F.linear(rms(x[:, -1], self.norm), self.emb)


def torch_decode(prompt_len, new_tokens):
    m = Qwen()
    cap = prompt_len + new_tokens
    cache = [(torch.zeros(1, HKV, cap, D), torch.zeros(1, HKV, cap, D)) for _ in range(L)]
    ids = torch.randint(0, V, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        nxt = m.step(ids, cache, 0).argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for s in range(new_tokens - 1):
            nxt = m.step(nxt, cache, prompt_len + s).argmax(-1, keepdim=True)
        return (new_tokens - 1) / (time.perf_counter() - t0)


def main():
    torch.set_num_threads(os.cpu_count())  # both sides use every core
    ap = argparse.ArgumentParser()
    ap.add_argument("--genesis", required=True)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=32)
    a = ap.parse_args()
    out = subprocess.run([a.genesis, "bench", "llm", "--config", "qwen2.5-0.5b", "--device", "cpu", "--dtype", "float32",
                          "--prompt-len", str(a.prompt_len), "--new-tokens", str(a.new_tokens), "--prefill-len",
                          str(a.prompt_len), "--repeats", "1", "--json"], check=True, capture_output=True, text=True)
    gn = json.loads(out.stdout.strip().splitlines()[-1])
    tt = torch_decode(a.prompt_len, a.new_tokens)
    print(f"qwen2.5-0.5b float32 decode on {torch.get_num_threads()} CPU threads, batch 1, "
          f"{a.prompt_len}-token prompt, {a.new_tokens} new tokens; torch {torch.__version__}")
    print(f"PyTorch {tt:.2f} tok/s, Genesis {gn['decode_tok_s']:.2f} tok/s, ratio {gn['decode_tok_s'] / tt:.2f}")


if __name__ == "__main__":
    main()
