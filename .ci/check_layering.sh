#!/usr/bin/env bash
# Layering and symbol-hygiene checks (docs/architecture.md), run by CTest:
#   .ci/check_layering.sh <source dir> <build dir>
#
# The layers, lowest first, and what each may include:
#   abi/       the C standard library only
#   sdk/       abi/
#   core/      abi/, sdk/
#   backends/  abi/, sdk/ (never core/, the frontend or anything above)
#   frontend/  abi/ (and sdk/support, its internal file writer); never core/, llm/ or tools/
#   llm/       abi/ and the frontend's public headers; never core/, frontend/src or tools/
#   tools/     everything public
# Tests, benchmarks and examples are outside the layers.
set -u
src=${1:-.}; build=${2:-build}
bad=0
say() { echo "layering: $*"; bad=1; }
inc='#\s*include\s*[<"]'
# grep_inc <pattern> <dirs...>: include lines matching pattern in C/C++/CUDA sources.
grep_inc() {
  local pat=$1; shift
  grep -rnE --include='*.c' --include='*.h' --include='*.cpp' --include='*.hpp' --include='*.cu' \
    --include='*.cuh' --include='*.def' "$inc$pat" "$@" 2>/dev/null
}

# Public headers of each C++ layer, as include paths ("genesis/nn/linear.hpp").
headers_of() { (cd "$src/$1/include" 2>/dev/null && find genesis -name '*.hpp' | sort); }
alt() { local h; h=$(tr '\n' '|' | sed 's/|$//; s/\./\\./g'); echo "($h)"; }
frontend_h=$(headers_of frontend | alt)
llm_h=$(headers_of llm | alt)

# 1. Nothing outside core/ includes core's sources.
hits=$(grep_inc '(\.\./)*(core/|genesis/core/)' "$src"/sdk "$src"/backends "$src"/frontend "$src"/llm "$src"/tools)
[ -n "$hits" ] && say "core headers included outside core/:
$hits"
# 2. abi/ includes only the C standard library and its own headers.
hits=$(grep -rnE '#\s*include' "$src"/abi/include | grep -vE '<(stddef|stdint|stdbool|string|stdlib)\.h>|"genesis/[a-z_]+\.h"')
[ -n "$hits" ] && say "abi/ includes something other than the C library:
$hits"
# 3. sdk/ and backends/ see only abi/ and sdk/: no C++ layer's header.
hits=$(grep_inc "$frontend_h|$llm_h|(\.\./)+(frontend|llm|tools)/" "$src"/sdk "$src"/backends)
[ -n "$hits" ] && say "sdk/ or backends/ include a frontend, llm or tools header:
$hits"
# 4. frontend/ never includes llm/ or tools/.
hits=$(grep_inc "$llm_h|(\.\./)+(llm|tools)/" "$src"/frontend)
[ -n "$hits" ] && say "frontend/ includes llm/ or tools/ (the LLM layer sits above the framework):
$hits"
# 5. llm/ uses the frontend's public headers only: not its sources, not tools/.
hits=$(grep_inc '(\.\./)+(frontend|tools)/|internal\.h"' "$src"/llm)
[ -n "$hits" ] && say "llm/ includes frontend internals or tools/:
$hits"
# 6. Only tools/ sees tools/: no layer includes the CLI's or the Python package's headers.
tools_h=$(cd "$src/tools" && find . -name '*.h' -o -name '*.hpp' | sed 's#.*/##' | sort -u | alt)
hits=$(grep_inc "(\.\./)*(tools/|[a-z_/]*/)?$tools_h\"" "$src"/sdk "$src"/core "$src"/backends "$src"/frontend "$src"/llm |
       grep -vE '/(tools|cli)/')
[ -n "$hits" ] && say "a library includes a tools/ header:
$hits"

lib="$build/lib/libgenesis.so"
if [ -f "$lib" ]; then
  # 7. libgenesis exports only gn_* symbols.
  extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^gn_' | grep -vE '^(_init|_fini|GENESIS_)' )
  [ -n "$extra" ] && say "libgenesis.so exports non-gn_ symbols: $(echo $extra | head -c 400)"
  # 8. The core links no device libraries.
  needed=$(readelf -d "$lib" | grep NEEDED | grep -Ei 'cuda|cublas|dnnl|nccl')
  [ -n "$needed" ] && say "libgenesis.so links device libraries: $needed"
else
  say "missing $lib"
fi
# 9. The frontend library links only libgenesis of ours (never the LLM library).
for f in "$build"/lib/libgenesis_frontend.so.*; do
  [ -f "$f" ] || continue
  readelf -d "$f" | grep NEEDED | grep -q 'libgenesis_llm' && say "$f links libgenesis_llm"
done
# 10. No plugin links libgenesis; each exports exactly gn_plugin_init.
for p in $(find "$build/lib/genesis" "$build/test-plugins" -name 'libgenesis_plugin_*.so' 2>/dev/null); do
  case "$p" in *missing_symbol*|*garbage*) continue ;; esac
  readelf -d "$p" 2>/dev/null | grep NEEDED | grep -q 'libgenesis\.so' && say "$p links libgenesis.so"
  syms=$(nm -D --defined-only "$p" 2>/dev/null | awk '{print $3}' | grep -vE '^(_init|_fini)$' | sort -u)
  [ "$syms" != "gn_plugin_init" ] && say "$p exports more than gn_plugin_init: $(echo $syms | head -c 300)"
done
[ $bad = 0 ] && echo "layering: OK"
exit $bad
