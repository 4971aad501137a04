# bench/gpu/build.sh - sourced by the GPU benchmark scripts (run.sh, paged_attention.sh,
# ../serving/run.sh): gpu_build DIR TARGET... configures DIR with the cuda backend for sm_90 (no cpu
# backend, no tests, examples or benches) unless it is configured already, and builds the targets.
# The GPU machine lacks nlohmann-json's CMake package, CLI11 and the zlib headers: carry them in .carry/
# (include/{nlohmann,CLI,zlib.h,zconf.h}, share/cmake/nlohmann_json); .carry is used when present.
gpu_build() {
  # llm needs PCRE2 and utf8proc: scripts/gpu_check.sh bundle packs them into .carry/deps
  if [[ -d .carry/deps ]]; then
    export PKG_CONFIG_PATH="$PWD/.carry/deps/lib/pkgconfig" CPATH="$PWD/.carry/deps/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$PWD/.carry/deps/lib" LD_LIBRARY_PATH="$PWD/.carry/deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  local B=$1
  mkdir -p "$B"
  shift
  local extra=()
  if [[ -d .carry ]]; then
    extra+=(-DCMAKE_PREFIX_PATH="$PWD/.carry;$PWD/.carry/deps" -DCMAKE_INCLUDE_PATH="$PWD/.carry/include")
    export CPATH="$PWD/.carry/include${CPATH:+:$CPATH}"
  fi
  if ! ls /usr/lib/x86_64-linux-gnu/libz.so >/dev/null 2>&1; then
    local z
    z=$(ls /usr/lib/x86_64-linux-gnu/libz.so.* 2>/dev/null | head -1 || true)
    [[ -n "$z" ]] && extra+=(-DZLIB_LIBRARY="$z" -DZLIB_INCLUDE_DIR="$PWD/.carry/include")
  fi
  if [[ ! -f "$B/build.ninja" ]]; then
    cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_WITH_CPU=OFF -DGENESIS_WITH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DGENESIS_BUILD_TESTS=OFF -DGENESIS_BUILD_EXAMPLES=OFF \
      -DGENESIS_BUILD_BENCH=OFF "${extra[@]}" >"$B/configure.log" 2>&1 || { tail -30 "$B/configure.log"; return 1; }
  fi
  ninja -C "$B" "$@" >"$B/build.log" 2>&1 || { tail -40 "$B/build.log"; return 1; }
}
