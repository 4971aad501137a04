#!/bin/sh
# train_options_test.sh <train_fashion_mnist> <work dir>
#
# Bad numbers, on the command line or in a checkpoint, are refused with a
# message naming the field (exit status != 0, before any training); resuming
# a checkpoint with the wrong --model, or one whose tensors do not fit its
# model tag, says which file and model.
set -u
exe=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
fails=0

# expect_error <text that must appear> <args...>
expect_error() {
  want=$1
  shift
  out=$("$exe" "$@" --progress lines 2>&1)
  status=$?
  if [ "$status" -eq 0 ]; then
    echo "FAIL: accepted: $*"
    fails=$((fails + 1))
  elif ! printf '%s\n' "$out" | grep -qF -- "$want"; then
    echo "FAIL: $*: the message lacks \"$want\":"
    printf '%s\n' "$out" | tail -n 3
    fails=$((fails + 1))
  else
    echo "ok: $* -> $(printf '%s\n' "$out" | tail -n 1)"
  fi
}

expect_error "--lr must be a finite number > 0, got 'nan'" --lr nan
expect_error "--lr must be a finite number > 0, got 'inf'" --lr inf
expect_error "--lr must be a finite number > 0, got '0'" --lr 0
expect_error "--lr must be a finite number > 0, got '1e-3x'" --lr 1e-3x
expect_error "--epochs must be an integer in [1," --epochs -3
expect_error "--epochs must be an integer in [1," --epochs 2.5
expect_error "--batch-size must be an integer in [1," --batch-size 0
expect_error "--limit-train must be an integer in [0," --limit-train -5
expect_error "--limit-test must be an integer in [0," --limit-test -5
expect_error "--stop-after must be an integer in [0," --stop-after -1
expect_error "--seed must be an integer in [0, 2^64), got '-1'" --seed -1
expect_error "--seed must be an integer in [0, 2^64), got '18446744073709551616'" --seed 18446744073709551616
expect_error "--threads must be an integer in [0, 4096]" --threads -2

# A small checkpoint to resume from.
"$exe" --model mlp --epochs 1 --limit-train 100 --limit-test 100 --batch-size 50 --no-eval \
  --checkpoint mlp.ckpt --progress lines >train.log 2>&1 || { echo "FAIL: training run"; cat train.log; exit 1; }
expect_error "mlp.ckpt holds a 'mlp' model, not 'cnn'" --resume mlp.ckpt --model cnn

# Rewrite one user entry of the checkpoint's manifest (a safetensors header edit).
edit() {
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, struct, sys
src, dst, key, value = sys.argv[1:]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
m = json.loads(h["__metadata__"]["genesis.manifest"])
m["user"][key] = value
h["__metadata__"]["genesis.manifest"] = json.dumps(m)
t = json.dumps(h).encode()
t += b" " * (-len(t) % 8)
open(dst, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
}
if command -v python3 >/dev/null; then
  edit mlp.ckpt bad_lr.ckpt lr abc
  expect_error "checkpoint bad_lr.ckpt: entry 'lr' must be a finite number > 0, got 'abc'" --resume bad_lr.ckpt
  edit mlp.ckpt bad_epochs.ckpt epochs -3
  expect_error "checkpoint bad_epochs.ckpt: entry 'epochs' must be an integer in [1," --resume bad_epochs.ckpt
  edit mlp.ckpt bad_seed.ckpt seed -1
  expect_error "checkpoint bad_seed.ckpt: entry 'seed' must be an integer in [0, 2^64)" --resume bad_seed.ckpt
  edit mlp.ckpt bad_model.ckpt model rnn
  expect_error "checkpoint bad_model.ckpt: entry 'model' is 'rnn', not mlp or cnn" --resume bad_model.ckpt
  # The tag says cnn, the tensors are an MLP's.
  edit mlp.ckpt cnn_tag.ckpt model cnn
  expect_error "cnn_tag.ckpt does not fit this program's 'cnn' model" --resume cnn_tag.ckpt
else
  echo "python3 missing: checkpoint edits skipped"
fi

[ "$fails" -eq 0 ] || { echo "FAIL: $fails case(s)"; exit 1; }
echo "OK: every bad value was refused with its field named"
