// bench/gpu/ops_bench.cpp - device times of the cuda-infra
// families beyond gpu_bench.cpp's cases (dtypes, layouts, reductions over other
// dims, casts, unary math), one JSON line per case; ops_bench.py times the same
// cases in PyTorch and prints the ratio table.  Not part of the CMake build:
//   g++ -O2 -std=c++17 bench/gpu/ops_bench.cpp -I<repo>/abi/include -I$CUDA/include -L<build>/lib -lgenesis
//       -L$CUDA/lib64 -lcudart -Wl,-rpath,<build>/lib -o ops_bench
//   ops_bench <plugin dir> > genesis.jsonl; python3 ops_bench.py genesis.jsonl
// Timing: bench_util.h, 5 warm-ups, median of 30 reps.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using namespace bench;

void call(const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> at, size_t n_out = 1) {
  bench::call(op(name), std::move(in), std::move(at), n_out);
}
double median_ms(const std::function<void()>& fn) { return bench::time_ms(fn, 30, 5); }
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
    emit(std::string("add_") + dn(dt) + "_64M", median_ms([&] { call("add", {a, b}, {}); }), 3.0 * M * esz(dt));
    gn_tensor_release(a);
    gn_tensor_release(b);
  }
  {
    gn_tensor* a = randn({M}, GN_F32);
    emit("exp_f32_64M", median_ms([&] { call("exp", {a}, {}); }), 2.0 * M * 4);
    emit("gelu_f32_64M", median_ms([&] { call("gelu", {a}, {ai(0)}); }), 2.0 * M * 4);
    emit("cast_f32_bf16_64M", median_ms([&] { call("cast", {a}, {ai(GN_BF16)}); }), 6.0 * M);
    std::vector<int64_t> all;
    emit("sum_all_f32_64M", median_ms([&] { call("sum", {a}, {aints(all)}); }), 4.0 * M);
    gn_tensor_release(a);
  }
  {
    gn_tensor* a = randn({M}, GN_BF16);
    emit("gelu_bf16_64M", median_ms([&] { call("gelu", {a}, {ai(0)}); }), 2.0 * M * 2);
    gn_tensor_release(a);
  }
  {
    gn_tensor* a = randn({4096, 4096}, GN_F32);
    std::vector<int64_t> d0 = {0}, d1 = {1};
    emit("sum_cols_f32_4096x4096", median_ms([&] { call("sum", {a}, {aints(d0)}); }), 4.0 * 4096 * 4096);
    emit("max_rows_f32_4096x4096", median_ms([&] { call("max", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    emit("argmax_rows_f32_4096x4096", median_ms([&] { call("argmax", {a}, {ai(1)}); }), 4.0 * 4096 * 4096);
    emit("var_rows_f32_4096x4096", median_ms([&] { call("var", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    emit("logsumexp_rows_f32_4096x4096", median_ms([&] { call("logsumexp", {a}, {aints(d1)}); }), 4.0 * 4096 * 4096);
    gn_tensor* t = nullptr;
    check(gn_tensor_transpose(a, 0, 1, &t), "transpose");
    emit("contiguous_T_f32_4096x4096", median_ms([&] { call("copy", {t}, {}); }), 8.0 * 4096 * 4096);
    gn_tensor* b = randn({4096}, GN_F32);
    emit("bcast_add_row_f32_4096x4096+4096", median_ms([&] { call("add", {a, b}, {}); }), 8.0 * 4096 * 4096);
    gn_tensor_release(b);
    gn_tensor_release(t);
    gn_tensor_release(a);
  }
  for (int32_t dt : {GN_BF16}) {
    gn_tensor* s = randn({8192, 8192}, dt);
    emit(std::string("softmax_") + dn(dt) + "_8192x8192", median_ms([&] { call("softmax", {s}, {ai(-1)}); }),
         2.0 * 8192 * 8192 * esz(dt));
    gn_tensor_release(s);
  }
  {
    gn_tensor* s = randn({8192, 8192}, GN_F32);
    emit("log_softmax_f32_8192x8192", median_ms([&] { call("log_softmax", {s}, {ai(-1)}); }), 2.0 * 8192 * 8192 * 4);
    gn_tensor* y = randn({8192, 8192}, GN_F32);
    emit("softmax_bwd_f32_8192x8192", median_ms([&] {
           call("softmax_backward", {s, y}, {ai(-1)});
         }),
         3.0 * 8192 * 8192 * 4);
    gn_tensor_release(y);
    gn_tensor_release(s);
  }
  {
    gn_tensor* s = randn({4096, 32000}, GN_BF16);
    emit("softmax_bf16_4096x32000", median_ms([&] { call("softmax", {s}, {ai(-1)}); }), 2.0 * 4096 * 32000 * 2);
    gn_tensor_release(s);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (!open_cuda(argc > 1 ? argv[1] : nullptr, "ops_bench")) return 2;
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
