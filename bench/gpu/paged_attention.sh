#!/usr/bin/env bash
# bench/gpu/paged_attention.sh - build Genesis with the cuda backend, check paged_attention and
# paged_kv_write_ against scaled_dot_product_attention, time the paged decode against the contiguous
# decode (paged_attention.cpp) and PyTorch (paged_attention.py) in one run, and print the table.
#
#   bench/gpu/paged_attention.sh [build dir] [--check-only]
#
# Writes $OUT/paged_attention_table.txt and $OUT/paged_attention_genesis.jsonl when OUT is set, else into
# the build dir.  Configures the build dir as run.sh does (same options, .carry/ when present).
# Exit status: the bench's (3: a check failed) or the table's (1: a check failed).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-/tmp/genesis-gpu-bench}
shift || true
CHECK=()
if [[ "${1:-}" == "--check-only" ]]; then CHECK=(--check-only); fi
DEST=${OUT:-$B}
mkdir -p "$B" "$DEST"

# shellcheck source=bench/gpu/build.sh
source bench/gpu/build.sh
gpu_build "$B" genesis genesis_plugin_cuda genesis_plugin_reference

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
"$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -arch=sm_90 -x cu bench/gpu/paged_attention.cpp -Iabi/include -L"$B/lib" \
  -lgenesis -cudart shared -Xlinker -rpath,"$B/lib" -Xlinker -rpath,"$CUDA_HOME/lib64" -o "$B/paged_attention_bench"

echo "== genesis (checks, then timings)"
rc=0
"$B/paged_attention_bench" "$B/lib/genesis/plugins" "${CHECK[@]}" >"$DEST/paged_attention_genesis.jsonl" || rc=$?
if [[ $rc -ne 0 && $rc -ne 3 ]]; then exit $rc; fi
echo "== pytorch + table"
PYTHONUNBUFFERED=1 python3 bench/gpu/paged_attention.py "$DEST/paged_attention_genesis.jsonl" \
  --out "$DEST/paged_attention_table.txt" || rc=$((rc ? rc : $?))
exit $rc
