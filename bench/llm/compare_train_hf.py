#!/usr/bin/env python3
"""compare_train_hf.py - training tokens/s and peak memory: `genesis bench train` against HF
transformers + PyTorch eager on the same GPU, same shape, same recipe.

    python3 bench/llm/compare_train_hf.py --genesis build/bin/genesis [--config qwen2.5-0.5b]

Both sides: a named Qwen shape with random weights in float32, bf16 autocast, batch 8 x 512 random
tokens with every position a target, AdamW (torch's default foreach implementation on the HF
side), gradient clipping at 1.0; 3 warm-up steps, then the mean of 10 steps (each ends with the
loss read on the host).  Peak memory is torch.cuda.max_memory_allocated for HF and the allocator's
peak of allocated bytes for Genesis.
"""
import argparse
import json
import subprocess
import time

import torch
import transformers

SHAPES = {  # the fields genesis' QwenConfig::preset uses
    "qwen2.5-0.5b": dict(model_type="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864,
                         num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True),
    "qwen3-0.6b": dict(model_type="qwen3", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       max_position_embeddings=40960, rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True),
}


def hf_model(config):
    """HF transformers' model of a named shape: random weights (seed 0), float32, on the GPU, in training mode."""
    cfg = dict(SHAPES[config])
    cfg = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).cuda().train()


def timed_steps(model, opt, ids, warmup):
    """One training step of the recipe per batch of token ids (bf16 autocast, every position a target, clipping at
    1.0, the loss read on the host); the seconds of the steps after the warmup ones. Peak memory counts from here."""
    torch.cuda.reset_peak_memory_stats()
    stamps = []
    for batch in ids:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        stamps.append(time.perf_counter())
    return stamps[-1] - stamps[warmup - 1]


def hf(config, batch, seq, warmup, steps):
    model = hf_model(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (warmup + steps, batch, seq), device="cuda")
    secs = timed_steps(model, opt, ids, warmup)
    return {"tokens_per_second": steps * batch * seq / secs, "step_ms": 1e3 * secs / steps,
            "peak_gb": torch.cuda.max_memory_allocated() / 1e9}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genesis", required=True)
    ap.add_argument("--config", default="qwen2.5-0.5b", choices=sorted(SHAPES))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    g = json.loads(subprocess.run([a.genesis, "-q", "bench", "train", "--config", a.config, "--batch", str(a.batch),
                                   "--seq", str(a.seq), "--steps", str(a.steps), "--warmup", str(a.warmup),
                                   "--autocast", "bf16", "--device", "cuda", "--json"],
                                  check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    h = hf(a.config, a.batch, a.seq, a.warmup, a.steps)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"{a.config}, batch {a.batch} x {a.seq}, bf16 autocast, AdamW")
    print(f"{'':<22}{'HF transformers':>18}{'Genesis':>12}{'ratio':>8}")
    print(f"{'tokens/s':<22}{h['tokens_per_second']:>18.0f}{g['tokens_per_second']:>12.0f}"
          f"{g['tokens_per_second'] / h['tokens_per_second']:>8.2f}")
    print(f"{'step ms':<22}{h['step_ms']:>18.1f}{g['step_ms']:>12.1f}")
    print(f"{'peak memory GB':<22}{h['peak_gb']:>18.2f}{g['peak_gb']:>12.2f}{g['peak_gb'] / h['peak_gb']:>8.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"hf": h, "genesis": g}, f)


if __name__ == "__main__":
    main()
