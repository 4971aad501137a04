#!/usr/bin/env python3
"""check_hf_load.py - a folder written by Genesis loads in HF transformers unchanged.

    python3 tests/llm/models/check_hf_load.py --genesis build/bin/genesis

For each fixture (tests/fixtures/qwen/*): `genesis convert` rewrites it sharded (64 KB shards, so
the index and several shards are written) and unsharded in bfloat16; transformers'
AutoModelForCausalLM.from_pretrained loads each folder and its logits on the fixture's input_ids
are compared with reference.safetensors (float32: max abs error <= 1e-4 of the logits' max
magnitude; bfloat16: <= 3%).  Needs torch, transformers and safetensors (the GPU machine has them).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "qwen")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genesis", required=True)
    a = ap.parse_args()
    failures = checks = 0
    for name in sorted(os.listdir(FIXTURES)):
        src = os.path.join(FIXTURES, name)
        ref = load_file(os.path.join(src, "reference.safetensors"))
        want = ref["logits"].double()
        scale = want.abs().max().item()
        for label, args, tol in (("f32 sharded", ["--max-shard-size", "64KB", "--dtype", "float32"], 1e-4),
                                 ("bf16 single", ["--dtype", "bfloat16"], 3e-2)):
            out = tempfile.mkdtemp(prefix=f"genesis_{name}_")
            subprocess.run([a.genesis, "convert", "--model", src, "--out", out] + args, check=True)
            files = sorted(os.listdir(out))
            m = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
            with torch.no_grad():
                got = m(ref["input_ids"]).logits.double()
            err = (got - want).abs().max().item()
            ok = err <= tol * scale
            failures += not ok
            checks += 1
            print(f"{name:<11} {label:<12} files={files} max|err|={err:.3e} (limit {tol * scale:.3e}) "
                  f"{'OK' if ok else 'FAIL'}")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
