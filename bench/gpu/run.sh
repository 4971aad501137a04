#!/usr/bin/env bash
# bench/gpu/run.sh - build Genesis with the cuda backend, run the GPU op-class
# benchmark in Genesis (bench/gpu/gpu_bench, C API) and in PyTorch
# (bench/gpu/compare.py) in the same run, and print the ratio table last.
#
#   bench/gpu/run.sh [build dir] [--only substring]
#
# Writes $OUT/gpu_bench_table.txt and $OUT/gpu_bench_genesis.jsonl when OUT is
# set (the lent GPU machine), else into the build dir.  The GPU machine lacks
# nlohmann-json's CMake package, CLI11 and the zlib headers: carry them in
# .carry/ (include/{nlohmann,CLI,zlib.h,zconf.h}, share/cmake/nlohmann_json);
# the script uses .carry when present.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-/tmp/genesis-gpu-bench}
shift || true
ONLY=()
if [[ "${1:-}" == "--only" ]]; then ONLY=(--only "$2"); fi
DEST=${OUT:-$B}
mkdir -p "$B" "$DEST"

EXTRA=()
if [[ -d .carry ]]; then
  EXTRA+=(-DCMAKE_PREFIX_PATH="$PWD/.carry" -DCMAKE_INCLUDE_PATH="$PWD/.carry/include")
  export CPATH="$PWD/.carry/include${CPATH:+:$CPATH}"
fi
if ! ls /usr/lib/x86_64-linux-gnu/libz.so >/dev/null 2>&1; then
  z=$(ls /usr/lib/x86_64-linux-gnu/libz.so.* 2>/dev/null | head -1 || true)
  [[ -n "$z" ]] && EXTRA+=(-DZLIB_LIBRARY="$z" -DZLIB_INCLUDE_DIR="$PWD/.carry/include")
fi

if [[ ! -f "$B/build.ninja" ]]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DGENESIS_BUILD_TESTS=OFF -DGENESIS_BUILD_EXAMPLES=OFF \
    -DGENESIS_BUILD_BENCH=OFF "${EXTRA[@]}" >"$B/configure.log" 2>&1 || { tail -30 "$B/configure.log"; exit 1; }
fi
ninja -C "$B" genesis genesis_plugin_cuda genesis_plugin_reference >"$B/build.log" 2>&1 || { tail -40 "$B/build.log"; exit 1; }

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
"$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -arch=sm_90 -x cu bench/gpu/gpu_bench.cpp -Iabi/include -L"$B/lib" -lgenesis \
  -cudart shared -Xlinker -rpath,"$B/lib" -Xlinker -rpath,"$CUDA_HOME/lib64" -o "$B/gpu_bench"

echo "== genesis"
"$B/gpu_bench" "$B/lib/genesis/plugins" --out "$DEST/gpu_bench_genesis.jsonl" "${ONLY[@]}"
echo "== pytorch + table"
PYTHONUNBUFFERED=1 python3 bench/gpu/compare.py "$DEST/gpu_bench_genesis.jsonl" --out "$DEST/gpu_bench_table.txt"
