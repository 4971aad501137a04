#!/bin/sh
# train_resume_test.sh <train_fashion_mnist> <work dir> <mlp|cnn> <threads>
#
# Resume to the bit: 2 epochs straight vs 1 epoch, stop, then --resume from
# the checkpoint for epoch 2.  Every step's loss is logged as a hex float
# (%a) and every epoch logs its train/test loss and an FNV-1a fingerprint of
# the parameters, so the two logs must be byte-identical; so must the final
# checkpoints (model, Adam state, scheduler, RNG states, step, epoch).
# Then the check is shown able to fail: resuming with another shuffle seed
# must change the log.
set -eu
exe=$1
dir=$2
model=$3
threads=$4
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
common="--model $model --epochs 2 --limit-train 1000 --limit-test 500 --batch-size 50 --seed 7 --threads $threads --progress lines"

echo "== 2 epochs straight"
"$exe" $common --log straight.log --checkpoint straight.ckpt
echo "== 1 epoch, interrupted"
"$exe" $common --stop-after 1 --log part1.log --checkpoint resumed.ckpt
cp resumed.ckpt epoch1.ckpt
echo "== resume for epoch 2"
"$exe" --resume resumed.ckpt --threads $threads --limit-test 500 --progress lines --log part2.log --checkpoint resumed.ckpt
cat part1.log part2.log > resumed.log

steps=$(grep -c '^step ' straight.log)
[ "$steps" -eq 40 ] || { echo "FAIL: expected 40 logged steps, got $steps"; exit 1; }
grep -q '^epoch 2 ' part2.log || { echo "FAIL: the resumed run did not train epoch 2"; exit 1; }
if ! cmp straight.log resumed.log; then
  echo "FAIL: the resumed run's losses differ from the uninterrupted run's:"
  diff straight.log resumed.log | head -20
  exit 1
fi
cmp straight.ckpt resumed.ckpt || { echo "FAIL: the final checkpoints differ"; exit 1; }
echo "OK: $steps step losses, 2 epoch summaries and the final checkpoint are bit-identical"
tail -n 1 straight.log

echo "== negative control: the same resume with another shuffle seed must differ"
"$exe" --resume epoch1.ckpt --seed 8 --threads $threads --limit-test 500 --progress lines --log other.log \
  --checkpoint other.ckpt
if cmp -s part2.log other.log; then
  echo "FAIL: the comparison cannot tell runs apart (another seed gave the same log)"
  exit 1
fi
echo "OK: another seed changes the log, as it must"
