#!/usr/bin/env bash
# scripts/main.sh - the main job: install what is missing and build (scripts/setup.sh), then train
# a small chat model from nothing and talk to it:
#   1. write the task: reverse or sort the digits of a number, asked in a few phrasings
#      (examples/sft/make_task.py: 20000 training and 500 held-out conversations, fixed seed);
#   2. learn a byte-level BPE tokenizer on the training conversations (genesis train-tokenizer);
#   3. train a 0.8M-parameter Qwen3-architecture model on them, loss on the answers only
#      (genesis train-sft; AdamW, cosine schedule, a checkpoint every 100 steps);
#   4. score greedy answers on the held-out conversations (exact match), save the model as a
#      Hugging Face folder, and chat with it.
# It uses the GPU when there is one.  Extra arguments go to train-sft, e.g.
#   scripts/main.sh --max-steps 1000        scripts/main.sh --device cpu
# The Fashion-MNIST example has its own command (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
G="$BUILD/bin/genesis"
OUT="$BUILD/sft"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
start=$(date +%s)

# The runtime, without the op table.
"$G" info --quiet --no-ops

echo "== 1. task"
"$PY" examples/sft/make_task.py "$OUT/data"
echo "== 2. tokenizer"
"$G" -q train-tokenizer "$OUT/data/train.jsonl" --out "$OUT/tokenizer" --vocab-size 512
echo "== 3. training"
"$G" -q train-sft --config examples/sft/tiny-qwen3.json --tokenizer "$OUT/tokenizer" \
  --data "$OUT/data/train.jsonl" --eval-data "$OUT/data/test.jsonl" --out "$OUT/run" \
  --max-steps 600 --batch-size 64 --lr 3e-3 --weight-decay 0.01 --save-every 100 \
  --exact-match 500 --max-new-tokens 10 "$@"
echo "== 4. a short chat with $OUT/run/final"
# One question per conversation (/reset), as the model was trained on single-turn chats.
printf 'Reverse 80417.\n/reset\nSort the digits of 52918.\n/reset\nWrite 2024 backwards.\n/reset\nPut the digits of 907153 in order.\n' |
  "$G" -q chat --model "$OUT/run/final" --max-new-tokens 12
echo
echo "main job done in $(( $(date +%s) - start )) s (after the build).  Talk to the model yourself:"
echo "  $G chat --model $OUT/run/final"
