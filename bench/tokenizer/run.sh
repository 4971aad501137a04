#!/usr/bin/env bash
# bench/tokenizer/run.sh - genesis::Tokenizer against transformers.js on a >= 12 MB mixed corpus:
# builds bench_tokenizer, fetches @lenml/tokenizers once (npm), then runs bench.mjs, which checks the
# ids are identical and prints MB/s for both.
#
#   bench/tokenizer/run.sh                      # build dir: $GENESIS_BUILD_DIR or build/
#   MB=50 bench/tokenizer/run.sh                # corpus size in MB (default 12)
#   MAX_CASE_BYTES=200 bench/tokenizer/run.sh   # leave the very long test words out of the corpus
#   TOKENIZERS_JS=/path/to/package bench/tokenizer/run.sh   # an unpacked @lenml/tokenizers
set -euo pipefail
cd "$(dirname "$0")/../.."

BUILD=${GENESIS_BUILD_DIR:-build}
WORK=$BUILD/bench-tokenizer
mkdir -p "$WORK"

if [ -z "${TOKENIZERS_JS:-}" ]; then
  TOKENIZERS_JS=$WORK/package
  if [ ! -f "$TOKENIZERS_JS/dist/main.mjs" ]; then
    (cd "$WORK" && npm pack --silent @lenml/tokenizers@3.7.2 >/dev/null && tar xzf lenml-tokenizers-3.7.2.tgz)
  fi
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENESIS_BUILD_BENCH=ON
fi
cmake --build "$BUILD" --target bench_tokenizer
node bench/tokenizer/bench.mjs "$(cd "$TOKENIZERS_JS" && pwd)" "$BUILD/bin/bench_tokenizer" "$WORK" "${MB:-12}"
