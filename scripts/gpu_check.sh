#!/usr/bin/env bash
# scripts/gpu_check.sh - the GPU-labelled test suite on a machine with a GPU but without some of
# this build's Debian packages (oneDNN, PCRE2, utf8proc, nlohmann-json, CLI11).
#
#   bash scripts/gpu_check.sh bundle   # here: pack the headers and libraries that machine lacks into .carry/deps
#   bash scripts/gpu_check.sh run      # there (carry .carry/deps): build with CUDA and NCCL, cpu plugin off,
#                                      # then `ctest -L gpu` and, where python3 has pybind11, the Python
#                                      # package's CUDA suites (logs under $OUT when set)
#
# Extra arguments to `run` go to ctest (e.g. -R qwen).  JOBS sets the build's parallelism (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.carry/deps
case "${1:-}" in
  bundle)
    rm -rf "$D" && mkdir -p "$D/include" "$D/lib/pkgconfig" "$D/share/cmake"
    cp -r /usr/include/nlohmann /usr/include/CLI "$D/include/"
    cp /usr/include/pcre2.h /usr/include/utf8proc.h "$D/include/"
    cp -a /usr/lib/x86_64-linux-gnu/libpcre2-8.so* /usr/lib/x86_64-linux-gnu/libutf8proc.so* "$D/lib/"
    cp -r /usr/share/cmake/nlohmann_json "$D/share/cmake/"
    for pc in libpcre2-8 libutf8proc; do
      sed -e 's#^prefix=.*#prefix=${pcfiledir}/../..#; s#^libdir=.*#libdir=${prefix}/lib#' \
        "/usr/lib/x86_64-linux-gnu/pkgconfig/$pc.pc" > "$D/lib/pkgconfig/$pc.pc"
    done
    du -sh "$D"
    ;;
  run)
    shift
    export PKG_CONFIG_PATH=$D/lib/pkgconfig CPATH=$D/include LIBRARY_PATH=$D/lib LD_LIBRARY_PATH=$D/lib
    B=$(realpath -m "${GENESIS_BUILD_DIR:-build-gpu}")  # absolute: the Python suites run from their folder
    out=${OUT:-$B}
    mkdir -p "$out"
    nvidia-smi -L || true
    # The Python package too where that machine's python3 has pybind11 (its GPU tests run last).
    PY=$(command -v python3 || true)
    py_args=(-DGENESIS_BUILD_PYTHON=OFF)
    if [ "${GENESIS_GPU_PYTHON:-1}" = 1 ] && [ -n "$PY" ] && pyb=$("$PY" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null); then
      py_args=(-DGENESIS_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PY" -Dpybind11_DIR="$pyb")
    fi
    cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_CUDA=ON \
      -DGENESIS_WITH_GLOO=OFF -DGENESIS_WITH_NCCL=ON "${py_args[@]}" -DGENESIS_BUILD_BENCH=OFF \
      -DCMAKE_PREFIX_PATH="$D" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
    t0=$(date +%s)
    ninja -C "$B" -j"${JOBS:-$(nproc)}" > "$out/build.log" 2>&1 || { grep -B2 -A8 "error" "$out/build.log" | head -80; exit 1; }
    echo "built in $(( $(date +%s) - t0 )) s; compiler warnings: $(grep -c 'warning:' "$out/build.log" || true)"
    ctest --test-dir "$B" -L gpu --output-on-failure "$@" 2>&1 | tee "$out/ctest_gpu.log" | tail -40
    if [ -d "$B/python/genesis" ]; then  # the Python package's CUDA suites, against the CPU (reference) path
      (cd tests/tools/python && GENESIS_BUILD_DIR=$B PYTHONPATH=$B/python "$PY" -m pytest -q -p no:cacheprovider -rs \
        test_cuda.py test_composites_cuda.py 2>&1 | tee "$out/pytest_gpu.log" | tail -15)
    fi
    ;;
  *)
    sed -n 2,9p "$0"
    exit 2
    ;;
esac
