#!/usr/bin/env bash
# tests/backends/nccl/gpu_check.sh - on a GPU machine: build the cuda and nccl
# plugins with the nccl tests, and run them.  World-size-1 cases need one GPU;
# the world-size-2 cases (collectives, DDP, a dead peer, a silent peer) run
# when two are visible and skip otherwise.
#
#   bash tests/backends/nccl/gpu_check.sh            # build into build-nccl/
#   GENESIS_BUILD_DIR=build bash tests/backends/nccl/gpu_check.sh
#
# No oneDNN or Gloo is needed: the cpu side runs on the reference plugin.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${GENESIS_BUILD_DIR:-build-nccl}
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_GLOO=OFF \
    -DGENESIS_WITH_CUDA=ON -DGENESIS_WITH_NCCL=ON -DGENESIS_BUILD_BENCH=OFF -DGENESIS_BUILD_EXAMPLES=OFF \
    ${GENESIS_CMAKE_ARGS:-}
fi
cmake --build "$build" --target nccl_test genesis_cli -j"$(nproc)"
nvidia-smi -L || true
"$build/bin/nccl_test" "$@"
