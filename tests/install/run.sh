#!/usr/bin/env bash
# run.sh - install a built Genesis into a temporary prefix, build consumers
# outside the source tree against that prefix, and run them there:
#   1. a third-party C op plugin (find_package(Genesis), Genesis::sdk,
#      genesis_add_plugin), installed into the prefix;
#   2. a C program built with `cc $(pkg-config --cflags --libs genesis)`;
#   3. a C++ program built with find_package(Genesis) and Genesis::frontend.
# The installed `genesis info` and both programs must load every plugin from
# the prefix (found next to the installed libgenesis, no search path set) and
# none from the build tree.
#
#   run.sh <build dir> <this dir> <libdir> <cmake> <generator> <make program> <cc> <c++>
set -euo pipefail
build=$1 here=$2 libdir=$3 cmake=$4 generator=$5 make_program=$6 cc=$7 cxx=$8

work=$(mktemp -d "${TMPDIR:-/tmp}/genesis-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
work=$(cd "$work" && pwd -P)
prefix=$work/prefix
step() { echo "== $*"; }
fail() { echo "install test: $*" >&2; exit 1; }

# Nothing may point the runtime or the linker at another tree.
unset GENESIS_PLUGIN_PATH GENESIS_PLUGINS LD_LIBRARY_PATH CMAKE_PREFIX_PATH
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig

step "install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
# No installed binary keeps a run path into the build tree.
while IFS= read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -E 'RUNPATH|RPATH' | grep -qF "$build"; then
    fail "$f has a run path into the build tree: $(readelf -d "$f" | grep -E 'RUNPATH|RPATH')"
  fi
done < <(find "$prefix/bin" "$prefix/$libdir" -type f \( -name '*.so*' -o -perm -u+x \))

cp -r "$here/c" "$here/cpp" "$here/plugin" "$work/"
configure() {  # configure <source> <binary dir>
  "$cmake" --no-warn-unused-cli -S "$1" -B "$2" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR="$libdir" \
    > "$2.log" ||
    { cat "$2.log"; fail "configuring $1 failed"; }
}

step "third-party plugin: find_package(Genesis), genesis_add_plugin"
configure "$work/plugin" "$work/build-plugin"
"$cmake" --build "$work/build-plugin"
"$cmake" --install "$work/build-plugin" > /dev/null
[ -f "$prefix/$libdir/genesis/plugins/libgenesis_plugin_thirdparty_scale.so" ] ||
  fail "the plugin was not installed into $prefix/$libdir/genesis/plugins"

step "C consumer: pkg-config genesis $(pkg-config --modversion genesis)"
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror "$work/c/consumer.c" -o "$work/c-consumer" \
  $(pkg-config --cflags --libs genesis) -Wl,-rpath,"$(pkg-config --variable=libdir genesis)"
pkg-config --exists --print-errors genesis-frontend

step "C++ consumer: find_package(Genesis), Genesis::frontend"
configure "$work/cpp" "$work/build-cpp"
"$cmake" --build "$work/build-cpp"

step "installed genesis info"
"$prefix/bin/genesis" info > "$work/info.txt" || { cat "$work/info.txt"; fail "genesis info failed"; }
sed -n '/^Ops/q;p' "$work/info.txt"
grep -q "^  library:  $prefix/$libdir/libgenesis.so" "$work/info.txt" || fail "libgenesis is not the installed one"
# Canonical paths: the tool finds libgenesis through its run path, bin/../lib.
paths=$(sed -n 's/^      path:  //p' "$work/info.txt" | xargs -r realpath -e)
[ -n "$paths" ] || fail "genesis info lists no plugin"
outside=$(grep -vF "$prefix/$libdir/genesis/plugins/" <<< "$paths" || true)
[ -z "$outside" ] || fail "plugins loaded from outside the prefix: $outside"
grep -q "^  thirdparty_scale 1.0.0: loaded" "$work/info.txt" || fail "thirdparty_scale not loaded"
grep -q "^Plugins (.* 0 rejected)" "$work/info.txt" || fail "a plugin was rejected"

step "run the consumers"
"$work/c-consumer" "$prefix"
"$work/build-cpp/consumer" "$prefix"
echo "install test: OK"
