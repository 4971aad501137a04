#!/usr/bin/env bash
# scripts/main.sh - the main job: install, build, then show the runtime
# (plugins, devices, ops) and run the C API demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GENESIS_BUILD_DIR:-build}
"$BUILD/bin/genesis" info
"$BUILD/bin/tensor_basics"
