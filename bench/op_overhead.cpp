// bench/op_overhead.cpp - host overhead of one gn_op_call: add on two
// 1-element CPU tensors, including output allocation and release.  The
// kernel's own work is a single float add, so the time is the framework's.
//
//   build/bin/bench_op_overhead [--benchmark_repetitions=10 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "genesis/genesis.h"

namespace {

struct Fixture {
  gn_runtime* rt = nullptr;
  gn_device cpu{};
  gn_tensor* a = nullptr;
  gn_tensor* b = nullptr;
  const gn_op* add = nullptr;

  Fixture() {
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.plugin_path = GENESIS_BENCH_PLUGIN_DIR;  // build tree plugins, then the defaults
    check(gn_runtime_create(&o, &rt));
    check(gn_device_parse(rt, "cpu", &cpu));
    float one = 1.0f;
    int64_t shape[1] = {1};
    check(gn_tensor_from_host(rt, &one, shape, 1, GN_F32, cpu, &a));
    check(gn_tensor_from_host(rt, &one, shape, 1, GN_F32, cpu, &b));
    check(gn_op_find(rt, "add", &add));
  }
  ~Fixture() {
    gn_tensor_release(a);
    gn_tensor_release(b);
    gn_runtime_destroy(rt);
  }
  static void check(gn_status* st) {
    if (!st) return;
    std::fprintf(stderr, "bench: %s\n", gn_status_message(st));
    std::exit(1);
  }
};

// True when st is OK; else marks the run failed with its message (and frees it).
bool call_ok(benchmark::State& state, gn_status* st) {
  if (!st) return true;
  state.SkipWithError(gn_status_message(st));
  gn_status_free(st);
  return false;
}

// One op call: find is done once (as the frontend does); call + free output.
void BM_op_call_add_1elem(benchmark::State& state) {
  static Fixture f;
  gn_tensor* in[2] = {f.a, f.b};
  for (auto _ : state) {
    gn_tensor* out[1] = {nullptr};
    if (!call_ok(state, gn_op_call(f.rt, f.add, in, 2, nullptr, 0, out, 1))) break;
    gn_tensor_release(out[0]);
  }
  // Which backend served the call, for the report.
  gn_device_type_record rec{sizeof(rec)};
  if (!gn_device_type_get(f.rt, (size_t)f.cpu.type, &rec)) state.SetLabel(std::string("cpu backend: ") + rec.backend);
}
BENCHMARK(BM_op_call_add_1elem);

// Same with a preallocated output (no allocation on the path).
void BM_op_call_add_1elem_out(benchmark::State& state) {
  static Fixture f;
  gn_tensor* in[2] = {f.a, f.b};
  gn_tensor* out[1] = {nullptr};
  Fixture::check(gn_op_call(f.rt, f.add, in, 2, nullptr, 0, out, 1));
  for (auto _ : state) {
    if (!call_ok(state, gn_op_call(f.rt, f.add, in, 2, nullptr, 0, out, 1))) break;
  }
  gn_tensor_release(out[0]);
}
BENCHMARK(BM_op_call_add_1elem_out);

}  // namespace

BENCHMARK_MAIN();
