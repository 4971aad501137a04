# sft_script_common.sh - the start of the train-sft command tests, sourced with their arguments
# (<genesis> <work dir> <source dir>): sets exe, dir and src, moves into a fresh work dir, and
# defines sum_chat.
set -eu
exe=$1
dir=$2
src=$3
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"

# sum_chat <n>: a small chat task of n sums of two numbers (chat.jsonl) and its tokenizer (tok).
sum_chat() {
  i=0
  : > chat.jsonl
  while [ $i -lt "$1" ]; do
    a=$((i * 7 % 50)); b=$((i * 13 % 50))
    printf '{"messages": [{"role": "user", "content": "What is %d + %d?"}, {"role": "assistant", "content": "%d"}]}\n' \
      $a $b $((a + b)) >> chat.jsonl
    i=$((i + 1))
  done
  "$exe" -q train-tokenizer chat.jsonl --out tok --vocab-size 300 2> tok.log
}
