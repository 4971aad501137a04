#!/usr/bin/env bash
# scripts/setup.sh - install what is missing (Debian packages), configure and
# build into build/.  Used by scripts/main.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the build needs (README "Dependencies").
pkgs=(g++ cmake ninja-build ccache python3 libboost-dev nlohmann-json3-dev libcli11-dev libedit-dev
      libgtest-dev libbenchmark-dev libdnnl-dev zlib1g-dev dataset-fashion-mnist binutils
      libpcre2-dev libutf8proc-dev pkg-config clang libclang-rt-14-dev libgloo-dev
      python3-dev pybind11-dev python3-numpy python3-pytest python3-torch python3-venv python3-jinja2
      libcpp-httplib-dev nodejs chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# npm: Debian's nodejs comes without it (a nodejs from NodeSource has it built in and conflicts with the package).
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi

# The server's tests drive `genesis serve` with the official OpenAI Node SDK and headless Chromium
# (tests/tools/serve/package.json; node_modules there is git-ignored).
if command -v npm >/dev/null 2>&1 && [ ! -d tests/tools/serve/node_modules/openai ]; then
  echo "setup: npm install in tests/tools/serve (openai, puppeteer-core)"
  npm install --prefix tests/tools/serve --no-audit --no-fund --loglevel=error
fi

BUILD=${GENESIS_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${GENESIS_CMAKE_ARGS:-}
fi
cmake --build "$BUILD" -j "$jobs"
