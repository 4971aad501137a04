#!/usr/bin/env bash
# tests/backends/nccl/gpu_check.sh - the nccl tests and the DDP benchmark on the GPU machine.
#
# That machine has nvcc, PyTorch and NCCL but lacks some of the build's Debian packages, so the
# binaries are built here and carried over:
#
#   bash tests/backends/nccl/gpu_check.sh bundle     # here: build into build-dist-cuda/, pack .carry/dist/
#   bash tests/backends/nccl/gpu_check.sh run        # there (carry .carry/dist): tests, then the benchmark
#
# `bundle` builds libgenesis, the nccl and reference plugins, nccl_test and its rank programs
# and the genesis tool without CUDA code (fast), and takes the cuda plugin from an existing
# CUDA build ($GENESIS_CUDA_PLUGIN, default build/lib/genesis/plugins/libgenesis_plugin_cuda.so;
# a plugin of an older ABI minor loads fine).  `run` unpacks it where it was built (a link makes
# the checkout's path the same there), runs nccl_test (world size 1, and 2 with two GPUs), then
# bench/distributed/run.sh (Genesis and PyTorch DDP, 1 and 2 GPUs) unless SKIP_BENCH=1.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
build=build-dist-cuda
case "${1:-}" in
  bundle)
    if [ ! -f "$build/CMakeCache.txt" ]; then
      cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CUDA=OFF -DGENESIS_WITH_NCCL=ON \
        -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_GLOO=OFF -DGENESIS_BUILD_BENCH=OFF -DGENESIS_BUILD_EXAMPLES=OFF
    fi
    cmake --build "$build" -j"${JOBS:-2}" --target genesis genesis_plugin_nccl genesis_plugin_reference nccl_test \
      distributed_collectives_worker distributed_ddp_worker genesis_cli
    cuda=${GENESIS_CUDA_PLUGIN:-build/lib/genesis/plugins/libgenesis_plugin_cuda.so}
    [ -f "$cuda" ] || { echo "no cuda plugin at $cuda (set GENESIS_CUDA_PLUGIN)"; exit 1; }
    stage=$(mktemp -d)
    mkdir -p "$stage/$build/bin" "$stage/$build/lib/genesis/plugins" .carry/dist
    cp -a "$build"/lib/libgenesis.so* "$stage/$build/lib/"
    cp "$build"/lib/genesis/plugins/libgenesis_plugin_{nccl,reference}.so "$cuda" "$stage/$build/lib/genesis/plugins/"
    cp "$build"/bin/{nccl_test,distributed_collectives_worker,distributed_ddp_worker,genesis} "$stage/$build/bin/"
    strip "$stage/$build"/bin/*
    # Shared libraries the GPU machine's image lacks.
    for lib in libutf8proc.so.2 libpcre2-8.so.0; do
      f=$(ldconfig -p | awk -v l="$lib" '$1 == l && !found { print $NF; found = 1 }')
      [ -n "$f" ] && cp -L "$f" "$stage/$build/lib/"
    done
    tar czf .carry/dist/bundle.tgz -C "$stage" "$build"
    echo "$root" > .carry/dist/built_in
    rm -rf "$stage"
    ls -la .carry/dist
    ;;
  run)
    built_in=$(cat .carry/dist/built_in)
    if [ "$root" != "$built_in" ]; then mkdir -p "$(dirname "$built_in")"; ln -sfn "$root" "$built_in"; fi
    tar xzf .carry/dist/bundle.tgz
    export LD_LIBRARY_PATH=$root/$build/lib:${LD_LIBRARY_PATH:-}
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
    nvidia-smi -L || true
    out=${OUT:-.}
    timeout 300 "$build/bin/nccl_test" 2>&1 | tee "$out/nccl_test.log" | grep -vE "^\[rank [1-9]"
    [ "${SKIP_BENCH:-0}" = 1 ] || timeout 400 bash bench/distributed/run.sh "$build/bin/genesis" 2
    ;;
  *)
    sed -n 2,16p "$0"
    exit 2
    ;;
esac
