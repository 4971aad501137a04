#!/usr/bin/env python3
"""bench/llm/compare_hf.py - Qwen decode/prefill: `genesis bench llm` against HF transformers +
PyTorch on the same GPU, same shape (a named config with random weights), same dtype.

    python3 bench/llm/compare_hf.py --genesis build/bin/genesis [--config qwen2.5-0.5b]

Measures, for both: prefill = time to the first token of a 1 x 512 prompt; decode = tokens/s
after a 128-token prompt, 256 new tokens, at batch 1 and batch 8 (greedy, eos ignored).
Prints one table with the ratios (Genesis / HF) and writes --out JSON.
"""
import argparse
import json
import subprocess
import sys
import time

import torch
import transformers

PRESETS = {
    "qwen2.5-0.5b": dict(model_type="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864,
                         num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         tie_word_embeddings=True, rope_theta=1e6, max_position_embeddings=32768),
    "qwen3-0.6b": dict(model_type="qwen3", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       tie_word_embeddings=True, rope_theta=1e6, max_position_embeddings=40960),
}


def hf_model(name, dtype):
    kw = dict(PRESETS[name])
    mt = kw.pop("model_type")
    cfg = transformers.AutoConfig.for_model(mt, **kw)
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype).cuda().eval()
    return m


def timed(fn, repeats):
    best = float("inf")
    fn()  # warm-up
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def hf_bench(m, batch, prompt_len, new_tokens, prefill_len, repeats):
    g = torch.Generator().manual_seed(1)
    V = m.config.vocab_size
    ids = torch.randint(0, V, (batch, prompt_len), generator=g).cuda()
    pre_ids = torch.randint(0, V, (1, prefill_len), generator=g).cuda()
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)

    def gen(x, n):
        return m.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n, **kw)

    with torch.no_grad():
        t_first = timed(lambda: gen(ids, 1), repeats)
        t_all = timed(lambda: gen(ids, new_tokens), repeats)
        t_prefill = timed(lambda: gen(pre_ids, 1), repeats)
    return dict(prefill_tok_s=prefill_len / t_prefill,
                decode_tok_s=batch * (new_tokens - 1) / (t_all - t_first))


def genesis_bench(exe, name, batch, prompt_len, new_tokens, prefill_len, repeats):
    cmd = [exe, "bench", "llm", "--config", name, "--device", "cuda", "--dtype", "bfloat16", "--batch", str(batch),
           "--prompt-len", str(prompt_len), "--new-tokens", str(new_tokens), "--prefill-len", str(prefill_len),
           "--repeats", str(repeats), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genesis", required=True, help="path of the genesis tool")
    ap.add_argument("--config", default="qwen2.5-0.5b", choices=sorted(PRESETS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    rows = []
    m = hf_model(a.config, torch.bfloat16)
    for batch in (1, 8):
        hf = hf_bench(m, batch, 128, 256, 512, a.repeats)
        gn = genesis_bench(a.genesis, a.config, batch, 128, 256, 512, a.repeats)
        rows.append(dict(batch=batch, hf=hf, genesis=gn))
    print(f"{a.config} bf16 on {torch.cuda.get_device_name()}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    print(f"{'measure':<34}{'HF':>12}{'Genesis':>12}{'ratio':>8}")
    for r in rows:
        b = r["batch"]
        for key, label in (("decode_tok_s", f"decode tok/s, batch {b}"),) + (
                (("prefill_tok_s", "prefill tok/s, 1 x 512"),) if b == 1 else ()):
            h, g = r["hf"][key], r["genesis"][key]
            print(f"{label:<34}{h:>12.1f}{g:>12.1f}{g / h:>8.2f}")
        print(f"{'peak MiB (genesis), batch ' + str(b):<34}{'':>12}{r['genesis']['peak_mb']:>12.0f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
