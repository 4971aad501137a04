#!/usr/bin/env bash
# scripts/test.sh - install, build, run the whole test suite (GPU-labelled
# tests skip cleanly without a device), then the sanitizer and fuzzing stage
# (scripts/sanitize.sh: ASan + UBSan, TSan, bounded fuzz runs).
# Arguments go to ctest and select tests; the sanitizer stage then runs only
# with GENESIS_SANITIZERS=1.  GENESIS_SANITIZERS=0 always leaves it out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
status=0
# A fresh build directory has no record of test durations, and ctest -j would start the long tests in declaration
# order, some of them last: seed the record (tests/ctest-costs.txt, seconds per test from an earlier run) so that
# the longest start first. ctest keeps it up to date afterwards.
if [ ! -f "$BUILD/Testing/Temporary/CTestCostData.txt" ]; then
  mkdir -p "$BUILD/Testing/Temporary"
  cp tests/ctest-costs.txt "$BUILD/Testing/Temporary/CTestCostData.txt"
fi
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@" || status=$?
default_stage=1
[ $# -gt 0 ] && default_stage=0
if [ "${GENESIS_SANITIZERS:-$default_stage}" = 1 ]; then
  bash scripts/sanitize.sh || status=1
fi
exit $status
