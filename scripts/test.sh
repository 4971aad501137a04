#!/usr/bin/env bash
# scripts/test.sh - install, build, run the whole test suite (GPU-labelled
# tests skip cleanly without a device).  GENESIS_SANITIZERS=1 adds the
# sanitizer and fuzzing stage (scripts/sanitize.sh: ASan + UBSan, TSan,
# bounded fuzz runs), which roughly doubles the run on 2 cores.
# Arguments go to ctest and select tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
status=0
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@" || status=$?
if [ "${GENESIS_SANITIZERS:-0}" = 1 ]; then
  bash scripts/sanitize.sh || status=1
fi
exit $status
