#!/usr/bin/env bash
# bench/gpu/run.sh - build Genesis with the cuda backend, run the GPU op-class
# benchmark in Genesis (bench/gpu/gpu_bench, C API) and in PyTorch
# (bench/gpu/compare.py) in the same run, and print the ratio table last.
#
#   bench/gpu/run.sh [build dir] [--only substring]
#
# Writes $OUT/gpu_bench_table.txt and $OUT/gpu_bench_genesis.jsonl when OUT is
# set (the lent GPU machine), else into the build dir (configured and built by
# build.sh's gpu_build, which says what to carry in .carry/).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-/tmp/genesis-gpu-bench}
shift || true
ONLY=()
if [[ "${1:-}" == "--only" ]]; then ONLY=(--only "$2"); fi
DEST=${OUT:-$B}
mkdir -p "$B" "$DEST"

# shellcheck source=bench/gpu/build.sh
source bench/gpu/build.sh
gpu_build "$B" genesis genesis_plugin_cuda genesis_plugin_reference

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
"$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -arch=sm_90 -x cu bench/gpu/gpu_bench.cpp -Iabi/include -L"$B/lib" -lgenesis \
  -cudart shared -Xlinker -rpath,"$B/lib" -Xlinker -rpath,"$CUDA_HOME/lib64" -o "$B/gpu_bench"

echo "== genesis"
"$B/gpu_bench" "$B/lib/genesis/plugins" --out "$DEST/gpu_bench_genesis.jsonl" "${ONLY[@]}"
echo "== pytorch + table"
PYTHONUNBUFFERED=1 python3 bench/gpu/compare.py "$DEST/gpu_bench_genesis.jsonl" --out "$DEST/gpu_bench_table.txt"
