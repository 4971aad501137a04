#!/bin/sh
# train_accuracy_test.sh <train_fashion_mnist> <work dir> <min test accuracy %> [trainer args...]
#
# Trains with the example's defaults (plus the given arguments) on the full
# Fashion-MNIST and checks the last epoch's test accuracy against the bar the
# issue sets (MLP >= 88%, CNN >= 90%, 10 epochs each).
set -eu
exe=$1
dir=$2
bar=$3
shift 3
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
"$exe" --progress lines --checkpoint run.ckpt "$@" | tee run.out
acc=$(sed -n 's/^epoch [0-9]*\/[0-9]* .* test acc \([0-9.]*\)%.*/\1/p' run.out | tail -n 1)
[ -n "$acc" ] || { echo "FAIL: no test accuracy printed"; exit 1; }
if awk -v a="$acc" -v b="$bar" 'BEGIN { exit !(a >= b) }'; then
  echo "OK: final test accuracy $acc% >= $bar%"
else
  echo "FAIL: final test accuracy $acc% < $bar%"
  exit 1
fi
