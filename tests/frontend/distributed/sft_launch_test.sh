#!/bin/sh
# sft_launch_test.sh <genesis> <work dir> <source dir>
#
# `genesis train-sft` under `genesis launch --nproc-per-node 2` with --grad-accum 1 against one
# process with --grad-accum 2: a step of either sees the same two micro-batches with the same
# normaliser, so the losses of every step must agree (float32; only the order of the sums
# differs).  Only rank 0 writes metrics, the checkpoint and the final folder, and the final model
# loads in a single process.
. "$3/tests/llm/train/sft_script_common.sh"
sum_chat 120

base="-q train-sft --config $src/examples/sft/tiny-qwen3.json --tokenizer tok --data chat.jsonl --device cpu
      --batch-size 4 --progress none --max-steps 6 --save-every 3 --lr 3e-3"
"$exe" $base --grad-accum 2 --out one > one.log 2>&1 || { echo "FAIL: the single-process run failed"; cat one.log; exit 1; }
"$exe" launch --nproc-per-node 2 --master-port 0 "$exe" $base --grad-accum 1 --out two > two.log 2>&1 ||
  { echo "FAIL: the 2-rank run failed"; cat two.log; exit 1; }

python3 - <<'PY'
import json, sys
def losses(p):
    return [json.loads(l)["loss"] for l in open(p) if '"loss"' in l]
a, b = losses("one/metrics.jsonl"), losses("two/metrics.jsonl")
print("one process, grad-accum 2:", ["%.6f" % x for x in a])
print("two ranks, grad-accum 1:  ", ["%.6f" % x for x in b])
if len(a) != 6 or len(b) != 6:
    sys.exit("FAIL: expected 6 logged steps each, got %d and %d" % (len(a), len(b)))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
print("largest relative difference: %.2e" % worst)
if worst > 1e-4:
    sys.exit("FAIL: the 2-rank losses differ from the single-process ones")
PY
[ -f two/checkpoint.safetensors ] || { echo "FAIL: rank 0 wrote no checkpoint"; exit 1; }
[ -f two/final/model.safetensors ] || { echo "FAIL: rank 0 wrote no final folder"; exit 1; }
"$exe" -q generate --model two/final --device cpu --max-new-tokens 2 --prompt "What is 1 + 2?" > gen.log 2>&1 ||
  { echo "FAIL: the final folder of the 2-rank run does not load in one process"; cat gen.log; exit 1; }
echo "OK: train-sft under genesis launch matches one process with the same global batch"
