#!/bin/sh
# sft_kill_test.sh <genesis> <work dir> <source dir>
#
# kill -9 while `genesis train-sft` writes a checkpoint every step, at several moments; after each
# kill the checkpoint on disk must load and training must resume from it.  Then a negative
# control: a checkpoint with one flipped byte is refused.
set -eu
exe=$1
dir=$2
src=$3
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"

# A small chat task (sums of two numbers) and its tokenizer.
i=0
: > chat.jsonl
while [ $i -lt 300 ]; do
  a=$((i * 7 % 50)); b=$((i * 13 % 50))
  printf '{"messages": [{"role": "user", "content": "What is %d + %d?"}, {"role": "assistant", "content": "%d"}]}\n' \
    $a $b $((a + b)) >> chat.jsonl
  i=$((i + 1))
done
"$exe" -q train-tokenizer chat.jsonl --out tok --vocab-size 300 2> tok.log

common="-q train-sft --config $src/examples/sft/tiny-qwen3.json --tokenizer tok --data chat.jsonl --device cpu
        --batch-size 8 --max-steps 200 --save-every 1 --progress none --out run"
kills=0
for delay in 1.5 1.9 2.3 2.6 2.9 3.3; do
  if [ -f run/checkpoint.safetensors ]; then
    "$exe" $common --resume run/checkpoint.safetensors > /dev/null 2>>train.log &
  else
    "$exe" $common > /dev/null 2>>train.log &
  fi
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
