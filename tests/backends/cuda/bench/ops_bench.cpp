// tests/backends/cuda/bench/ops_bench.cpp - device times of the cuda-infra
// families beyond bench/gpu's cases (dtypes, layouts, reductions over other
// dims, casts, unary math), one JSON line per case; ops_bench.py times the same
// cases in PyTorch and prints the ratio table.  Not part of the CMake build:
//   g++ -O2 -std=c++17 ops_bench.cpp -I<repo>/abi/include -I$CUDA/include -L<build>/lib -lgenesis
//       -L$CUDA/lib64 -lcudart -Wl,-rpath,<build>/lib -o ops_bench
//   ops_bench <plugin dir> > genesis.jsonl; python3 ops_bench.py genesis.jsonl
// Timing: CUDA events on the current stream around each call (outputs
// allocated per call, as PyTorch does), 5 warm-ups, median of 30 reps.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "genesis/genesis.h"

namespace {
gn_runtime* rt = nullptr;
gn_device dev{};

void check(gn_status* st, const char* what) {
  if (!st) return;
  std::string m = std::string(what) + ": " + gn_status_message(st);
  gn_status_free(st);
  throw std::runtime_error(m);
}
const gn_op* op(const char* n) {
  const gn_op* o = nullptr;
  check(gn_op_find(rt, n, &o), n);
  return o;
}
gn_attr_value ai(int64_t v) { gn_attr_value a{}; a.kind = GN_ATTR_INT; a.u.i = v; return a; }
gn_attr_value aints(const std::vector<int64_t>& v) {
  gn_attr_value a{}; a.kind = GN_ATTR_INTS; a.u.ints.data = v.data(); a.u.ints.size = v.size(); return a;
}
gn_attr_value adev(gn_device d) { gn_attr_value a{}; a.kind = GN_ATTR_DEVICE; a.u.device = d; return a; }

gn_tensor* randn(std::vector<int64_t> shape, int32_t dtype) {
  gn_attr_value at[3] = {aints(shape), ai(dtype), adev(dev)};
  gn_tensor* t = nullptr;
  check(gn_op_call(rt, op("randn"), nullptr, 0, at, 3, &t, 1), "randn");
  return t;
}
void call(const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> at, size_t n_out = 1) {
  std::vector<gn_tensor*> outs(n_out, nullptr);
  check(gn_op_call(rt, op(name), in.data(), in.size(), at.data(), at.size(), outs.data(), n_out), name);
  for (gn_tensor* t : outs) gn_tensor_release(t);
}
double time_ms(const std::function<void()>& fn) {
  cudaStream_t s = static_cast<cudaStream_t>(gn_stream_native(gn_stream_get_current(rt, dev)));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) fn();
  check(gn_device_synchronize(rt, dev), "sync");
  std::vector<double> ts;
  for (int i = 0; i < 30; ++i) {
    cudaEventRecord(a, s);
    fn();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    ts.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
void emit(const std::string& name, double ms, double bytes) {
  std::printf("{\"case\": \"%s\", \"ms\": %.6f, \"gbs\": %.1f}\n", name.c_str(), ms, bytes / (ms * 1e-3) / 1e9);
  std::fflush(stdout);
  std::fprintf(stderr, "  %-34s %9.4f ms %8.1f GB/s\n", name.c_str(), ms, bytes / (ms * 1e-3) / 1e9);
}
size_t esz(int32_t dt) { return dt == GN_F32 ? 4 : 2; }
const char* dn(int32_t dt) { return dt == GN_F32 ? "f32" : dt == GN_BF16 ? "bf16" : "f16"; }

void run_cases() {
  const int64_t M = 64 << 20;
  for (int32_t dt : {GN_BF16, GN_F16}) {
    gn_tensor *a = randn({M}, dt), *b = randn({M}, dt);
    emit(std::string("add_") + dn(dt) + "_64M", time_ms([&] { call("add", {a, b}, {}); }), 3.0 * M * esz(dt));
    gn_tensor_release(a);
    gn_tensor_release(b);
  }
  {
    gn_tensor* a = randn({M}, GN_F32);
    emit("exp_f32_64M", time_ms([&] { call("exp", {a}, {}); }), 2.0 * M * 4);
    emit("gelu_f32_64M", time_ms([&] { call("gelu", {a}, {ai(0)}); }), 2.0 * M * 4);
    emit("cast_f32_bf16_64M", time_ms([&] { call("cast", {a}, {ai(GN_BF16)}); }), 6.0 * M);
    std::vector<int64_t> all;
    emit("sum_all_f32_64M", time_ms([&] { call("sum", {a}, {aints(all)}); }), 4.0 * M);
    gn_tensor_release(a);
  }
  {
    gn_tensor* a = randn({M}, GN_BF16);
    emit("gelu_bf16_64M", time_ms([&] { call("gelu", {a}, {ai(0)}); }), 2.0 * M * 2);
    gn_tensor_release(a);
  }
  {
    gn_tensor* a = randn({4096, 4096}, GN_F32);
    std::vector<int64_t> d0 = {0}, d1 = {1};
    emit("sum_cols_f32_4096x4096", time_ms([&] { call("sum", {a}, {aints(d0)}); }), 4.0 * 4096 * 4096);
    emit("max_rows_f32_4096x4096", time_ms([&] { call("max", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    emit("argmax_rows_f32_4096x4096", time_ms([&] { call("argmax", {a}, {ai(1)}); }), 4.0 * 4096 * 4096);
    emit("var_rows_f32_4096x4096", time_ms([&] { call("var", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    emit("logsumexp_rows_f32_4096x4096", time_ms([&] { call("logsumexp", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    gn_tensor* t = nullptr;
    check(gn_tensor_transpose(a, 0, 1, &t), "transpose");
    emit("contiguous_T_f32_4096x4096", time_ms([&] { call("copy", {t}, {}); }), 8.0 * 4096 * 4096);
    gn_tensor* b = randn({4096}, GN_F32);
    emit("bcast_add_row_f32_4096x4096+4096", time_ms([&] { call("add", {a, b}, {}); }), 8.0 * 4096 * 4096);
    gn_tensor_release(b);
    gn_tensor_release(t);
    gn_tensor_release(a);
  }
  for (int32_t dt : {GN_BF16}) {
    gn_tensor* s = randn({8192, 8192}, dt);
    emit(std::string("softmax_") + dn(dt) + "_8192x8192", time_ms([&] { call("softmax", {s}, {ai(-1)}); }),
         2.0 * 8192 * 8192 * esz(dt));
    gn_tensor_release(s);
  }
  {
    gn_tensor* s = randn({8192, 8192}, GN_F32);
    emit("log_softmax_f32_8192x8192", time_ms([&] { call("log_softmax", {s}, {ai(-1)}); }), 2.0 * 8192 * 8192 * 4);
    gn_tensor* y = randn({8192, 8192}, GN_F32);
    emit("softmax_bwd_f32_8192x8192", time_ms([&] { call("softmax_backward", {s, y}, {ai(-1)}); }),
         3.0 * 8192 * 8192 * 4);
    gn_tensor_release(y);
    gn_tensor_release(s);
  }
  {
    gn_tensor* s = randn({4096, 32000}, GN_BF16);
    emit("softmax_bf16_4096x32000", time_ms([&] { call("softmax", {s}, {ai(-1)}); }), 2.0 * 4096 * 32000 * 2);
    gn_tensor_release(s);
  }
}
}  // namespace

int main(int argc, char** argv) {
  gn_runtime_options o{};
  o.struct_size = sizeof(o);
  o.plugin_path = argc > 1 ? argv[1] : nullptr;
  if (gn_runtime_create(&o, &rt)) return 1;
  if (gn_device_count(rt, "cuda") < 1 || gn_device_parse(rt, "cuda:0", &dev)) {
    std::fprintf(stderr, "ops_bench: no cuda device\n");
    return 2;
  }
  gn_rng_manual_seed(rt, 1);
  try {
    run_cases();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ops_bench: %s\n", e.what());
    return 1;
  }
  gn_runtime_destroy(rt);
  return 0;
}
