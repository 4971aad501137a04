#!/usr/bin/env bash
# Layering and symbol-hygiene checks (docs/architecture.md, docs/style.md), run by CTest:
#   .ci/check_layering.sh <source dir> <build dir>
set -u
src=${1:-.}; build=${2:-build}
bad=0
say() { echo "layering: $*"; bad=1; }

# 1. frontend/, backends/, plugins/ see only abi/ (and the SDK), never core/.
hits=$(grep -rnE '#\s*include\s*[<"](\.\./)*(core/|genesis/core/)' "$src"/frontend "$src"/backends "$src"/plugins 2>/dev/null)
[ -n "$hits" ] && say "core headers included outside core/:
$hits"
# 2. abi/ includes only the C standard library and its own headers.
hits=$(grep -rnE '#\s*include' "$src"/abi/include | grep -vE '<(stddef|stdint|stdbool|string|stdlib)\.h>|"genesis/[a-z_]+\.h"')
[ -n "$hits" ] && say "abi/ includes something other than the C library:
$hits"

lib="$build/lib/libgenesis.so"
if [ -f "$lib" ]; then
  # 3. libgenesis exports only gn_* symbols.
  extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^gn_' | grep -vE '^(_init|_fini|GENESIS_)' )
  [ -n "$extra" ] && say "libgenesis.so exports non-gn_ symbols: $(echo $extra | head -c 400)"
  # 4. The core links no device libraries.
  needed=$(readelf -d "$lib" | grep NEEDED | grep -Ei 'cuda|cublas|dnnl|nccl')
  [ -n "$needed" ] && say "libgenesis.so links device libraries: $needed"
else
  say "missing $lib"
fi
# 5. No plugin links libgenesis; each exports exactly gn_plugin_init.
for p in $(find "$build/lib/genesis" "$build/test-plugins" -name 'libgenesis_plugin_*.so' 2>/dev/null); do
  case "$p" in *missing_symbol*|*garbage*) continue ;; esac
  readelf -d "$p" 2>/dev/null | grep NEEDED | grep -q 'libgenesis\.so' && say "$p links libgenesis.so"
  syms=$(nm -D --defined-only "$p" 2>/dev/null | awk '{print $3}' | grep -vE '^(_init|_fini)$' | sort -u)
  [ "$syms" != "gn_plugin_init" ] && say "$p exports more than gn_plugin_init: $(echo $syms | head -c 300)"
done
[ $bad = 0 ] && echo "layering: OK"
exit $bad
