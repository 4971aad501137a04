#!/usr/bin/env bash
# scripts/format.sh - clang-format (.clang-format) over the C, C++ and CUDA sources, in place.
# Generated headers (the PyTorch reference tables under tests/frontend) and fixtures are left as
# their generators write them.  `--check` lists the files that would change and exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' |
        grep -vE '^tests/fixtures/|^tests/frontend/(nn|optim)/(modules_)?expected(_data)?\.h$')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in $files; do clang-format "$f" | cmp -s - "$f" || { echo "$f"; bad=1; }; done
  exit $bad
fi
echo "$files" | xargs clang-format -i
