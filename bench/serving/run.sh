#!/usr/bin/env bash
# bench/serving/run.sh - build Genesis with the cuda backend, run bench_serving_offline (the serving engine vs the
# static-batch generate(), Qwen2.5-0.5B shape, random weights, bf16) and transformers' continuous batching on the
# same request list (compare_hf.py), in one run.
#
#   bench/serving/run.sh [build dir] [-- extra bench_serving_offline options]
#
# Writes $OUT/serving_offline.json, $OUT/serving_offline.txt, $OUT/serving_requests.json and $OUT/serving_hf.json
# when OUT is set (the lent GPU machine), else into the build dir. Configures the build dir as bench/gpu/run.sh does
# (GENESIS_BUILD_BENCH=OFF), builds libgenesis_llm and compiles offline.cpp against it.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-/tmp/genesis-gpu-bench}
shift || true
[[ "${1:-}" == "--" ]] && shift
DEST=${OUT:-$B}
mkdir -p "$B" "$DEST"

# shellcheck source=bench/gpu/build.sh
source bench/gpu/build.sh
gpu_build "$B" genesis_llm genesis_plugin_cuda genesis_plugin_reference

${CXX:-g++} -std=c++20 -O2 -Illm/include -Ifrontend/include -Iabi/include \
  -DGENESIS_BENCH_PLUGIN_DIR="\"$B/lib/genesis/plugins\"" bench/serving/offline.cpp -L"$B/lib" -lgenesis_llm \
  -lgenesis_frontend -lgenesis -Wl,-rpath,"$B/lib" -o "$B/bench_serving_offline"

echo "== genesis: engine vs generate()"
"$B/bench_serving_offline" --device cuda --dtype bf16 --preset qwen2.5-0.5b --requests-json "$DEST/serving_requests.json" \
  --json "$@" >"$DEST/serving_offline.json" 2> >(tee "$DEST/serving_offline.txt" >&2)
echo "== transformers continuous batching on the same requests"
PYTHONUNBUFFERED=1 python3 bench/serving/compare_hf.py "$DEST/serving_requests.json" --json >"$DEST/serving_hf.json" || true
cat "$DEST/serving_offline.json" "$DEST/serving_hf.json"
