#!/usr/bin/env bash
# scripts/sanitize.sh - the sanitizer and fuzzing stage of the test suite (scripts/test.sh runs it
# after the normal suite; docs/sanitizers.md):
#   1. ASan + UBSan (clang, -O1, no CUDA, with libFuzzer's coverage instrumentation) in
#      build-asan: the test binaries of the core, support, the reference and cpu backends and the
#      frontend, then every fuzz harness for a bounded time from its committed seed corpus;
#   2. TSan (gcc) in build-tsan (core and reference plugin only): the thread-safety test.
# Any sanitizer report, failing test, fuzz crash or hang (an input over 1 s) fails the script.
# Environment: GENESIS_FUZZ_SECONDS (per harness, default 20), GENESIS_ASAN_DIR, GENESIS_TSAN_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
ASAN=${GENESIS_ASAN_DIR:-build-asan}
TSAN=${GENESIS_TSAN_DIR:-build-tsan}
FUZZ_SECONDS=${GENESIS_FUZZ_SECONDS:-20}
jobs=$(nproc 2>/dev/null || echo 2)
start=$SECONDS

# -O1: the usual sanitizer trade-off (quick to compile, tests still fast); NDEBUG as in Release;
# line tables only, for symbolised reports.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGENESIS_WITH_CUDA=OFF -DGENESIS_WITH_NCCL=OFF
        -DGENESIS_BUILD_EXAMPLES=OFF -DGENESIS_BUILD_BENCH=OFF)
f="-O1 -gline-tables-only -DNDEBUG"
if [ ! -f "$ASAN/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$ASAN" "${common[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$f" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$f" -DGENESIS_BUILD_FUZZERS=ON >/dev/null
fi
# TSan with gcc: clang 14's shared TSan runtime crashes at start-up on kernels with 28 or more
# bits of mmap randomisation, and the shared runtime is what dlopen'd plugins need.
if [ ! -f "$TSAN/build.ninja" ]; then
  f="-O1 -g1 -DNDEBUG"
  CC=gcc CXX=g++ cmake -S . -B "$TSAN" "${common[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$f" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$f" -DGENESIS_SANITIZE=thread -DGENESIS_WITH_CPU=OFF >/dev/null
fi

# Not reference_ops_test: its harness uses std::source_location, which clang 14 cannot compile
# with libstdc++ 12; the reference kernels still run under ASan as the oracle of
# op_consistency_test and as the backend of the core and frontend tests.
asan_tests=(support_test core_api_null_test core_checked_test core_ops_test core_runtime_test
            core_threading_test loader_test cpu_backend_test
            frontend_tensor_test frontend_gradcheck_test frontend_nn_test frontend_optim_test
            frontend_amp_test frontend_io_test frontend_data_test llm_tokenizer_test
            llm_chat_template_test frontend_qwen_test frontend_llm_cli_test)
fuzzers=(safetensors checkpoint config_json tokenizer_json chat_template)
cmake --build "$ASAN" -j "$jobs" --target "${asan_tests[@]}" op_consistency_test "${fuzzers[@]/#/fuzz_}" genesis_cli
cmake --build "$TSAN" -j "$jobs" --target core_threading_test
echo "sanitize: built in $((SECONDS - start)) s"

# Reports are fatal: the first one ends the process with a failure.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# Symbolised stack traces in reports (the symbolizer comes with llvm-14, which clang recommends).
[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
logs="$ASAN/sanitize-logs"
rm -rf "$logs" && mkdir -p "$logs"

# Each job: "<name> <command...>", run $jobs at a time; a failed job's log is printed.
# The longest first: the op suite (minutes under ASan) in two shards, so that the short jobs fill in
# beside them.
jobs_list=()
for i in 0 1; do
  jobs_list+=("asan.op_consistency_test.$i env ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i $ASAN/bin/op_consistency_test --gtest_brief=1")
done
# TokenizerCli: the same library code as the other tokenizer cases, through the genesis tool on
# Qwen3's full vocabulary; minutes under ASan, so left to the normal suite.
skip_tokenizer_test=--gtest_filter=-TokenizerCli.*
# The cpu backend's allocator cases keep the exit-time leak check (they load and unload the plugin
# and share its allocator); its thread and kernel cases leave OpenMP and pool workers running at
# exit, and LeakSanitizer's thread tracer can crash on those (no report, the tool failing), so
# they and the cpu backend under the frontend's suites run without it.
cpu_env="ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"
cpu_leak_cases=CpuBackend.CachingAllocatorStatistics:CpuBackend.RuntimesSharing*:CpuBackend.RuntimeCycles*
for t in "${asan_tests[@]}"; do
  extra=""
  [ "$t" = llm_tokenizer_test ] && extra=$skip_tokenizer_test
  [ "$t" = cpu_backend_test ] && extra=--gtest_filter=$cpu_leak_cases
  jobs_list+=("asan.$t env $ASAN/bin/$t --gtest_brief=1 $extra")
done
jobs_list+=("asan.cpu_backend_test.threads env $cpu_env $ASAN/bin/cpu_backend_test --gtest_brief=1 --gtest_filter=-$cpu_leak_cases")
# The cpu backend under the frontend's suites (the reference plugin serves what it lacks).
jobs_list+=("asan.frontend_gradcheck_test.cpu env $cpu_env GENESIS_GRADCHECK_PLUGINS=cpu,reference $ASAN/bin/frontend_gradcheck_test --gtest_brief=1")
jobs_list+=("asan.frontend_qwen_test.cpu env $cpu_env GENESIS_QWEN_PLUGINS=cpu,reference $ASAN/bin/frontend_qwen_test --gtest_brief=1")
jobs_list+=("tsan.core_threading_test env $TSAN/bin/core_threading_test --gtest_brief=1")
for h in "${fuzzers[@]}"; do
  mkdir -p "$ASAN/fuzz-work/$h"  # new inputs go here, never into the committed seeds
  # libFuzzer's link puts libstdc++ before the shared ASan runtime in the harness's library list;
  # malloc and free are still intercepted, so the order check is turned off for the harnesses.
  jobs_list+=("fuzz.$h env ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0 $ASAN/bin/fuzz_$h -max_total_time=$FUZZ_SECONDS -timeout=1 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$logs/$h- $ASAN/fuzz-work/$h tests/fuzz/corpus/$h")
done

failed=()
# LeakSanitizer's exit-time tracer at times crashes itself on a loaded machine ("LeakSanitizer has
# encountered a fatal error", no report): that is the tool failing, not a finding, so such a run is
# repeated once; a leak report or any other failure is never retried.
tracer_crashed() {  # log
  grep -q 'LeakSanitizer has encountered a fatal error' "$1" && ! grep -q 'ERROR: LeakSanitizer: detected' "$1"
}
run_one() {  # name command...
  local name=$1; shift
  local t0=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1 ||
     { tracer_crashed "$logs/$name.log" && echo "sanitize: $name: the leak tracer crashed, once more" &&
       "$@" >"$logs/$name.log" 2>&1; }; then
    echo "sanitize: $name passed ($((SECONDS - t0)) s)"
  else
    echo "sanitize: $name FAILED ($((SECONDS - t0)) s)"
    return 1
  fi
}
declare -A pid_name=()
running=0
reap() {  # waits for one job, noting its name when it failed
  local done_pid
  wait -n -p done_pid || failed+=("${pid_name[$done_pid]}")
  running=$((running - 1))
}
for j in "${jobs_list[@]}"; do
  [ "$running" -lt "$jobs" ] || reap
  # shellcheck disable=SC2086
  run_one $j &
  pid_name[$!]=${j%% *}
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do reap; done
for name in "${failed[@]}"; do
  echo "==== $name ($logs/$name.log)"
  tail -n 60 "$logs/$name.log"
done
for h in "${fuzzers[@]}"; do
  runs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$logs/fuzz.$h.log" | grep -o '[0-9]*$' || true)
  echo "sanitize: fuzz_$h ran ${runs:-?} inputs in ${FUZZ_SECONDS} s"
done
echo "sanitize: ${#jobs_list[@]} jobs, ${#failed[@]} failed, $((SECONDS - start)) s in all"
[ ${#failed[@]} -eq 0 ]
