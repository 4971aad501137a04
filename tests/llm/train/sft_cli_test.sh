#!/bin/sh
# sft_cli_test.sh <genesis> <work dir> <source dir>
#
# kill -9 while `genesis train-sft` writes a checkpoint every step, at several moments; after each
# kill the checkpoint on disk must load and training must resume from it.  Then a negative
# control: a checkpoint with one flipped byte is refused.  Then the main job's other commands
# (the HF folder, eval-chat, a piped chat) on a short run.
. "$3/tests/llm/train/sft_script_common.sh"
sum_chat 300

base="-q train-sft --config $src/examples/sft/tiny-qwen3.json --tokenizer tok --data chat.jsonl --device cpu
      --batch-size 8 --progress none"
common="$base --max-steps 200 --save-every 1 --out run"
# A first checkpoint, then runs that resume from it and are killed at different moments (on a
# busy machine some kills land between writes; each checkpoint left behind is checked all the same).
"$exe" $common --stop-after 2 > /dev/null 2>>train.log || { echo "FAIL: the first run failed"; cat train.log; exit 1; }
kills=0
for delay in 1.5 1.9 2.3 2.6 2.9 3.3; do
  "$exe" $common --resume run/checkpoint.safetensors > /dev/null 2>>train.log &
  pid=$!
  sleep "$delay"
  if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null || true
  if [ -f run/checkpoint.safetensors ]; then
    # The checkpoint left behind must load and train on.
    if ! "$exe" $common --resume run/checkpoint.safetensors --stop-after 1 > /dev/null 2> resume.log; then
      echo "FAIL: after a kill at ${delay}s the checkpoint does not resume:"
      cat resume.log
      exit 1
    fi
  fi
done
[ -f run/checkpoint.safetensors ] || { echo "FAIL: no checkpoint was ever written"; exit 1; }
echo "OK: $kills kills with a checkpoint written every step; every checkpoint left behind resumed"

# Negative control: a corrupted checkpoint must be refused, so the resumes above were real checks.
cp run/checkpoint.safetensors bad.safetensors
size=$(wc -c < bad.safetensors)
printf '\377' | dd of=bad.safetensors bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
if "$exe" $common --resume bad.safetensors --stop-after 1 > /dev/null 2> bad.log; then
  echo "FAIL: a checkpoint with a flipped byte was accepted"
  exit 1
fi
echo "OK: a flipped byte is refused: $(tail -n 1 bad.log)"

# The rest of the main job's commands on a short run: the HF folder, eval-chat and piped chat.
"$exe" $base --max-steps 5 --out short --exact-match 10 --max-new-tokens 4 > short.log 2>&1 ||
  { echo "FAIL: a short train-sft run failed:"; cat short.log; exit 1; }
grep -q '^exact match: ' short.log || { echo "FAIL: no exact-match line"; cat short.log; exit 1; }
for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json; do
  [ -f short/final/$f ] || { echo "FAIL: short/final/$f missing"; exit 1; }
done
"$exe" -q eval-chat --model short/final --data chat.jsonl --limit 10 --max-new-tokens 4 --device cpu > eval.log 2>&1 ||
  { echo "FAIL: eval-chat failed:"; cat eval.log; exit 1; }
grep -q '^exact match: .* of 10 conversations' eval.log || { echo "FAIL: eval-chat printed no score"; cat eval.log; exit 1; }
printf 'What is 1 + 2?\n/reset\nWhat is 3 + 4?\n' | "$exe" -q chat --model short/final --max-new-tokens 4 --device cpu > chat.log 2>&1 ||
  { echo "FAIL: chat failed:"; cat chat.log; exit 1; }
[ "$(grep -c '>>> What is' chat.log)" -eq 2 ] || { echo "FAIL: the piped questions are not echoed"; cat chat.log; exit 1; }
echo "OK: short run saved an HF folder; eval-chat and a piped chat ran"
