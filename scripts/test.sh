#!/usr/bin/env bash
# scripts/test.sh - install, build, run the whole test suite (GPU-labelled
# tests skip cleanly without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
