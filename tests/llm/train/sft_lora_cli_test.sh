#!/bin/sh
# sft_lora_cli_test.sh <genesis> <work dir> <source dir>
#
# LoRA through the commands: train-sft --lora-* writes a PEFT adapter folder (and no model), its
# checkpoints resume exactly (the per-step losses of a stopped and resumed run equal a straight
# run's), a wrong option is refused naming it, and convert --adapter writes a merged HF folder
# that generate runs.
. "$3/tests/llm/train/sft_script_common.sh"
sum_chat 120

# A base model to adapt: a short full fine-tuning run's HF folder (it carries the tokenizer).
"$exe" -q train-sft --config $src/examples/sft/tiny-qwen3.json --tokenizer tok --data chat.jsonl --device cpu \
  --batch-size 8 --progress none --max-steps 2 --out base > base.log 2>&1 ||
  { echo "FAIL: base run"; cat base.log; exit 1; }

opts="-q train-sft --model base/final --data chat.jsonl --device cpu --batch-size 8 --progress none --lr 1e-2
      --max-steps 6 --lora-r 4 --lora-alpha 8 --lora-dropout 0.05 --seed 3"
lora="$opts --lora-targets all-linear"
"$exe" $lora --out straight > straight.log 2>&1 || { echo "FAIL: LoRA run"; cat straight.log; exit 1; }
for f in adapter_config.json adapter_model.safetensors tokenizer.json; do
  [ -f straight/final/$f ] || { echo "FAIL: straight/final/$f missing"; ls straight/final; exit 1; }
done
[ ! -f straight/final/model.safetensors ] || { echo "FAIL: a LoRA run wrote a whole model"; exit 1; }
grep -q '"peft_type": "LORA"' straight/final/adapter_config.json || { echo "FAIL: not a PEFT LoRA config"; exit 1; }
grep -q '"r": 4' straight/final/adapter_config.json || { echo "FAIL: r not written"; exit 1; }
echo "OK: train-sft --lora-r wrote a PEFT adapter folder"

# Stop after 3 steps with a checkpoint, resume: the losses equal the straight run's, digit for digit.
"$exe" $lora --out part --stop-after 3 > part1.log 2>&1 || { echo "FAIL: stopped run"; cat part1.log; exit 1; }
"$exe" $lora --out part --resume part/checkpoint.safetensors > part2.log 2>&1 ||
  { echo "FAIL: resumed run"; cat part2.log; exit 1; }
losses() { grep '"loss"' "$1" | sed 's/.*"loss":\([^,}]*\).*/\1/'; }
losses straight/metrics.jsonl > a.txt
losses part/metrics.jsonl > b.txt
[ "$(wc -l < a.txt)" -eq 6 ] || { echo "FAIL: expected 6 loss lines"; cat straight/metrics.jsonl; exit 1; }
cmp -s a.txt b.txt || { echo "FAIL: resumed losses differ"; paste a.txt b.txt; exit 1; }
echo "OK: a stopped and resumed LoRA run has the straight run's losses"

if "$exe" $opts --lora-targets q_proj,qkv --out bad > bad.log 2>&1; then
  echo "FAIL: a bad target was accepted"
  exit 1
fi
grep -q 'target_modules' bad.log || { echo "FAIL: the error does not name the field"; cat bad.log; exit 1; }
echo "OK: a bad --lora-targets is refused: $(tail -n 1 bad.log)"

# convert --adapter: the merged HF folder loads and generates.
"$exe" -q convert --model base/final --adapter straight/final --out merged --device cpu > convert.log 2>&1 ||
  { echo "FAIL: convert --adapter"; cat convert.log; exit 1; }
[ -f merged/model.safetensors ] && [ -f merged/config.json ] || { echo "FAIL: merged folder incomplete"; exit 1; }
"$exe" -q generate --model merged --prompt-ids 1,2,3 --max-new-tokens 4 --print-ids --device cpu > gen.log 2>&1 ||
  { echo "FAIL: generate on the merged model"; cat gen.log; exit 1; }
echo "OK: convert --adapter wrote a merged model that generates"
# generate --adapter (merged at load) prints the merged folder's tokens; without the adapter the base differs.
gen() {
  "$exe" -q generate --prompt-ids 5,9,2,7 --max-new-tokens 12 --ignore-eos --print-ids --device cpu "$@" 2> gen.err ||
    { echo "FAIL: generate $*"; cat gen.err; exit 1; }
}
gen --model merged > merged.ids
gen --model base/final --adapter straight/final > adapter.ids
gen --model base/final > base.ids
cmp -s merged.ids adapter.ids ||
  { echo "FAIL: generate --adapter differs from the merged model"; cat merged.ids adapter.ids; exit 1; }
cmp -s merged.ids base.ids && { echo "FAIL: the adapter changed nothing (the check above is vacuous)"; exit 1; }
echo "OK: generate --adapter gives the merged model's tokens"
