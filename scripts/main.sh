#!/usr/bin/env bash
# scripts/main.sh - the main job: install what is missing and build (scripts/
# setup.sh), show the runtime briefly (plugins and devices), then train the
# MLP on Fashion-MNIST end to end with the example's defaults (10 epochs,
# batch 64, Adam 1e-3 with a cosine schedule, seed 0) on the best device,
# writing a checkpoint every epoch.  Extra arguments go to the trainer, e.g.
#   scripts/main.sh --epochs 2          scripts/main.sh --model cnn
#   scripts/main.sh --resume build/fashion_mnist_mlp.ckpt.safetensors
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
# The runtime, without the op table.
"$BUILD/bin/genesis" info --quiet --no-ops
# Defaults the caller's arguments may replace: the model and where the checkpoint goes.
model=(--model mlp)
checkpoint=(--checkpoint "$BUILD/fashion_mnist_mlp.ckpt.safetensors")
for a in "$@"; do
  case "$a" in
    --model|--model=*) model=(); checkpoint=() ;;
    --checkpoint|--checkpoint=*) checkpoint=() ;;
    --resume|--resume=*) model=() ;;  # the checkpoint knows its model
  esac
done
exec "$BUILD/bin/train_fashion_mnist" "${model[@]}" "${checkpoint[@]}" "$@"
