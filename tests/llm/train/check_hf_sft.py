#!/usr/bin/env python3
"""check_hf_sft.py - what `genesis train-tokenizer` and `genesis train-sft` write loads in HF.

    python3 tests/llm/train/check_hf_sft.py --genesis build/bin/genesis [--device cuda]

Makes a small arithmetic chat task (examples/sft/make_task.py), learns a tokenizer, trains a
tiny Qwen3 for a few dozen steps and saves it; then, in transformers:
  - AutoTokenizer loads the tokenizer folder and encodes a set of strings to the same ids as
    `genesis tokenize`, and apply_chat_template renders the same text;
  - AutoModelForCausalLM loads final/ and its float32 logits on a held-out conversation match
    the logits `genesis eval-chat --logits-out` wrote (max abs error <= 1e-4 of their magnitude).
Needs torch and transformers (the GPU machine has them).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
TEXTS = ["What is 347 + 589?", "Subtract 12 from 95.", " leading space and  two", "new\nlines\n\n", "ünïcödé 🚀 12345",
         "<|im_start|>user\nhi<|im_end|>\n"]


def run(cmd):
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genesis", required=True)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="genesis_hf_sft_")
    failures = 0
    run([sys.executable, os.path.join(ROOT, "examples/sft/make_task.py"), work, "--train", "2000", "--test", "50",
         "--task", "arithmetic"])
    tok_dir = os.path.join(work, "tok")
    run([a.genesis, "-q", "train-tokenizer", os.path.join(work, "train.jsonl"), "--out", tok_dir, "--vocab-size", "320"])
    hf_tok = transformers.AutoTokenizer.from_pretrained(tok_dir)
    for t in TEXTS:
        ours = [int(x) for x in run([a.genesis, "tokenize", "--model", tok_dir, "--text", t]).stdout.split()]
        theirs = hf_tok.encode(t, add_special_tokens=False)
        ok = ours == theirs
        failures += not ok
        print(f"tokenize {t!r}: {'OK' if ok else 'FAIL'} ({len(ours)} ids){'' if ok else f' ours {ours} HF {theirs}'}")
    conv = json.loads(open(os.path.join(work, "test.jsonl")).readline())["messages"]
    rendered = hf_tok.apply_chat_template(conv, tokenize=False)
    print("HF chat template:", repr(rendered))

    out = os.path.join(work, "run")
    run([a.genesis, "-q", "train-sft", "--config", os.path.join(ROOT, "examples/sft/tiny-qwen3.json"), "--tokenizer",
         tok_dir, "--data", os.path.join(work, "train.jsonl"), "--out", out, "--max-steps", "30", "--batch-size", "32",
         "--lr", "3e-3", "--progress", "none", "--device", a.device])
    final = os.path.join(out, "final")
    logits_file = os.path.join(work, "logits.safetensors")
    run([a.genesis, "-q", "eval-chat", "--model", final, "--data", os.path.join(work, "test.jsonl"), "--limit", "8",
         "--logits-out", logits_file, "--device", a.device, "--dtype", "float32"])
    ref = load_file(logits_file)
    ids = ref["input_ids"]
    ok = ids[0].tolist() == hf_tok.encode(rendered, add_special_tokens=False)
    failures += not ok
    print(f"ids of the rendered conversation: {'OK' if ok else 'FAIL'}")
    model = transformers.AutoModelForCausalLM.from_pretrained(final, dtype=torch.float32).eval()
    with torch.no_grad():
        got = model(ids).logits.double()
    want = ref["logits"].double()
    err = (got - want).abs().max().item()
    limit = 1e-4 * want.abs().max().item()
    ok = err <= limit
    failures += not ok
    print(f"logits of final/ in transformers {transformers.__version__}: max|err| {err:.3e} (limit {limit:.3e}) "
          f"{'OK' if ok else 'FAIL'}")
    print(f"{'all passed' if not failures else f'{failures} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
