#!/usr/bin/env bash
# tests/tools/python/gpu_check.sh - the Python package on the GPU machine.
#
# That machine has its own python3 (with PyTorch, NumPy, pytest and pybind11) but lacks some of
# the build's Debian packages and oneDNN, so the package is built there without the cpu plugin,
# against headers and libraries carried from here, and the cuda plugin comes from a CUDA build here:
#
#   bash tests/tools/python/gpu_check.sh bundle     # here: pack .carry/deps ($GENESIS_CUDA_PLUGIN)
#   bash tests/tools/python/gpu_check.sh run        # there (carry .carry/deps): build, then the tests
#
# `run` builds into /tmp/genesis-py and runs test_cuda.py (skipped without a GPU) and the tensor,
# autograd, nn, optim and DLPack suites with that machine's interpreter, NumPy, PyTorch and pybind11.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=$PWD/.carry/deps
case "${1:-}" in
  bundle)
    cuda=${GENESIS_CUDA_PLUGIN:-build/lib/genesis/plugins/libgenesis_plugin_cuda.so}
    [ -f "$cuda" ] || { echo "no cuda plugin at $cuda (set GENESIS_CUDA_PLUGIN)"; exit 1; }
    bash scripts/gpu_check.sh bundle  # the headers and libraries that machine lacks, into .carry/deps
    mkdir -p "$D/plugins"
    cp "$cuda" "$D/plugins/"
    ;;
  run)
    export PKG_CONFIG_PATH=$D/lib/pkgconfig CPATH=$D/include LIBRARY_PATH=$D/lib LD_LIBRARY_PATH=$D/lib
    PY=$(command -v python3)
    B=/tmp/genesis-py
    out=${OUT:-$B}
    mkdir -p "$out"
    cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_CUDA=OFF \
      -DGENESIS_WITH_GLOO=OFF -DGENESIS_WITH_NCCL=OFF -DGENESIS_BUILD_TESTS=OFF -DGENESIS_BUILD_EXAMPLES=OFF \
      -DGENESIS_BUILD_BENCH=OFF -DGENESIS_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PY" \
      -Dpybind11_DIR="$("$PY" -c 'import pybind11; print(pybind11.get_cmake_dir())')" -DCMAKE_PREFIX_PATH="$D" \
      > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
    ninja -C "$B" > "$out/build.log" 2>&1 || { grep -A8 "error" "$out/build.log" | head -60; exit 1; }
    echo "built; compiler warnings: $(grep -c 'warning:' "$out/build.log" || true)"
    cp "$D/plugins/libgenesis_plugin_cuda.so" "$B/lib/genesis/plugins/"
    cd tests/tools/python
    GENESIS_BUILD_DIR=$B PYTHONPATH=$B/python "$PY" -m pytest -q -p no:cacheprovider -rs \
      test_cuda.py test_composites_cuda.py test_dlpack.py test_autograd.py test_tensor.py test_nn.py test_optim.py
    ;;
  *)
    sed -n 2,13p "$0"
    exit 2
    ;;
esac
