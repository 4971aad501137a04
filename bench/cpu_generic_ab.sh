#!/usr/bin/env bash
# bench/cpu_generic_ab.sh - the cpu backend's generic loops (dtypes and ops oneDNN does not serve)
# and a few oneDNN ones, timed for two builds of the plugin in one run: rounds alternate A and B,
# and the table gives the median of the rounds, in microseconds per call.
#
#   bench/cpu_generic_ab.sh DIR_A DIR_B [bench_op_time]
#
# Each DIR holds a libgenesis_plugin_cpu.so and the reference plugin (which serves what it lacks).
#
# Environment: N (elements, default 262144), ROUNDS (3), GENESIS_NUM_THREADS (1).
set -euo pipefail
A=$1 B=$2
T=${3:-$(dirname "$0")/../build/bin/bench_op_time}
N=${N:-262144}
ROUNDS=${ROUNDS:-3}
export GENESIS_NUM_THREADS=${GENESIS_NUM_THREADS:-1}
cases=("pow f32" "pow f64" "div f32 dense 2" "div f64 dense 1" "maximum bf16" "maximum f16" "add bf16"
       "sub f16 bcast" "eq f16" "lt bf16" "add i32" "mul f64" "exp f64" "tanh f64" "exp f16" "relu f16"
       "neg i32" "log f16" "add f32" "exp f32" "relu f32" "add f32 bcast")
log=$(mktemp)
for r in $(seq "$ROUNDS"); do
  for c in "${cases[@]}"; do
    read -r op dt layout attr <<<"$c"
    for side in A B; do
      dir=$A; [ $side = B ] && dir=$B
      t=$("$T" "$dir" "$op" "$dt" "$N" "${layout:-dense}" ${attr:+"$attr"} | sed 's/.*median \([0-9.]*\) us.*/\1/')
      echo "$c|$side|$t" >> "$log"
    done
  done
done
python3 - "$log" "$N" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    case, side, t = line.rstrip("\n").split("|")
    rows[case][side].append(float(t))
print(f"| case ({sys.argv[2]} elements) | A, us | B, us | B / A |")
print("|---|---:|---:|---:|")
for case, v in rows.items():
    a, b = statistics.median(v["A"]), statistics.median(v["B"])
    print(f"| {case} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
PY
rm -f "$log"
