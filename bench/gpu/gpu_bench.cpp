// bench/gpu/gpu_bench.cpp - the GPU op-class cases timed in Genesis through the
// public C API (libgenesis + the cuda plugin).  Writes one JSON line per case to
// stdout (or the file named by --out); bench/gpu/compare.py times the same cases
// in PyTorch and prints the ratio table.  bench/gpu/run.sh builds and runs both.
//
// Device timing: bench_util.h (CUDA events around each call, median of the
// reps).  Host-side cases (allocation, tiny-op overhead) use the wall clock
// over many calls.  Built with nvcc (one empty kernel for the launch floor):
// see run.sh.
//
//   gpu_bench <plugin dir> [--out file] [--only substring]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using namespace bench;

FILE* out_file = stdout;
const char* only = nullptr;

bool want(const std::string& name) { return !only || name.find(only) != std::string::npos; }

// One result line: name, ms, and a derived figure (GB/s, TFLOP/s, us) with its unit.
void emit(const std::string& name, double ms, double value, const char* unit, const std::string& extra = "") {
  std::fprintf(out_file, "{\"case\": \"%s\", \"ms\": %.6f, \"value\": %.4f, \"unit\": \"%s\"%s}\n", name.c_str(), ms,
               value, unit, extra.c_str());
  std::fflush(out_file);
  std::fprintf(stderr, "  %-36s %10.4f ms %10.2f %s\n", name.c_str(), ms, value, unit);
}

// ----------------------------------------------------------------------------
// cases

void bench_add() {
  for (int64_t n : {int64_t(1) << 16, int64_t(4) << 20, int64_t(16) << 20, int64_t(64) << 20}) {
    std::string name = "add_f32_" + std::to_string(n >= (1 << 20) ? n >> 20 : n >> 10) + (n >= (1 << 20) ? "M" : "K");
    if (!want(name)) continue;
    gn_tensor* a = randn({n}, GN_F32);
    gn_tensor* b = randn({n}, GN_F32);
    const gn_op* add = op("add");
    double ms = time_ms([&] { call(add, {a, b}, {}, 1); }, n < (1 << 20) ? 200 : 30);
    emit(name, ms, 3.0 * n * 4 / (ms * 1e-3) / 1e9, "GB/s");
    gn_tensor_release(a);
    gn_tensor_release(b);
  }
}

// The row-wise cases run at 4096^2 (16M elements, the shapes) and at
// 8192^2 (64M, where the acceptance asks for >= 85% of the copy bandwidth).
std::string sq(int64_t n) { return std::to_string(n) + "x" + std::to_string(n); }

void bench_bcast_add() {
  for (int64_t n : {4096, 8192}) {
    const std::string name = "bcast_add_" + sq(n) + "+" + std::to_string(n) + "x1";
    if (!want(name)) continue;
    gn_tensor* a = randn({n, n}, GN_F32);
    gn_tensor* b = randn({n, 1}, GN_F32);
    double ms = time_ms([&] { call(op("add"), {a, b}, {}, 1); }, 30);
    emit(name, ms, (2.0 * n * n + n) * 4 / (ms * 1e-3) / 1e9, "GB/s");
    gn_tensor_release(a);
    gn_tensor_release(b);
  }
}

void bench_sum_rows() {
  for (int64_t n : {4096, 8192}) {
    const std::string name = "sum_rows_" + sq(n);
    if (!want(name)) continue;
    gn_tensor* a = randn({n, n}, GN_F32);
    std::vector<int64_t> dims = {1};
    double ms = time_ms([&] { call(op("sum"), {a}, {aints(dims)}, 1); }, 30);
    emit(name, ms, (1.0 * n * n + n) * 4 / (ms * 1e-3) / 1e9, "GB/s");
    gn_tensor_release(a);
  }
}

void bench_softmax() {
  if (!want("softmax_f32_8192x8192")) return;
  gn_tensor* a = randn({8192, 8192}, GN_F32);
  double ms = time_ms([&] { call(op("softmax"), {a}, {ai(-1)}, 1); }, 30);
  emit("softmax_f32_8192x8192", ms, 2.0 * 8192 * 8192 * 4 / (ms * 1e-3) / 1e9, "GB/s");
  gn_tensor_release(a);
}

void bench_norms() {
  for (int64_t n : {4096, 8192}) {
    if (want("layer_norm_f32_" + sq(n))) {
      gn_tensor* x = randn({n, n}, GN_F32);
      gn_tensor* w = randn({n}, GN_F32);
      gn_tensor* b = randn({n}, GN_F32);
      double ms = time_ms([&] { call(op("layer_norm"), {x, w, b}, {ai(1), af(1e-5)}, 3); }, 30);
      emit("layer_norm_f32_" + sq(n), ms, 2.0 * n * n * 4 / (ms * 1e-3) / 1e9, "GB/s");
      gn_tensor_release(x);
      gn_tensor_release(w);
      gn_tensor_release(b);
    }
    if (want("rms_norm_f32_" + sq(n))) {
      gn_tensor* x = randn({n, n}, GN_F32);
      gn_tensor* w = randn({n}, GN_F32);
      double ms = time_ms([&] { call(op("rms_norm"), {x, w}, {af(1e-6)}, 2); }, 30);
      emit("rms_norm_f32_" + sq(n), ms, 2.0 * n * n * 4 / (ms * 1e-3) / 1e9, "GB/s");
      gn_tensor_release(x);
      gn_tensor_release(w);
    }
  }
}

void bench_matmul() {
  for (int64_t n : {4096, 8192}) {
    std::string name = "matmul_bf16_" + std::to_string(n);
    if (!want(name)) continue;
    gn_tensor* a = randn({n, n}, GN_BF16);
    gn_tensor* b = randn({n, n}, GN_BF16);
    double ms = time_ms(
        [&] {
          call(op("matmul"), {a, b}, {}, 1);
        },
        100, 20);  // long enough for steady clocks (cuBLASLt on both sides)
    emit(name, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12, "TFLOP/s");
    gn_tensor_release(a);
    gn_tensor_release(b);
  }
}

void bench_attention() {
  struct S {
    int64_t B, H, S, D;
  };
  for (S s : {S{8, 16, 1024, 64}, S{4, 14, 2048, 64}, S{1, 32, 4096, 128}}) {
    std::string tag =
        std::to_string(s.B) + "x" + std::to_string(s.H) + "x" + std::to_string(s.S) + "x" + std::to_string(s.D);
    const double flops = 4.0 * s.B * s.H * s.S * s.S * s.D / 2;  // causal: half the scores
    gn_tensor* q = randn({s.B, s.H, s.S, s.D}, GN_BF16);
    gn_tensor* k = randn({s.B, s.H, s.S, s.D}, GN_BF16);
    gn_tensor* v = randn({s.B, s.H, s.S, s.D}, GN_BF16);
    gn_tensor* g = randn({s.B, s.H, s.S, s.D}, GN_BF16);
    const gn_op* fwd = op("scaled_dot_product_attention");
    const gn_op* bwd = op("scaled_dot_product_attention_backward");
    std::vector<gn_attr_value> at = {ai(1), af(NAN)};
    if (want("attn_fwd_" + tag)) {
      double ms = time_ms([&] { call(fwd, {q, k, v}, at, 2); }, 50);
      emit("attn_fwd_" + tag, ms, flops / (ms * 1e-3) / 1e12, "TFLOP/s");
    }
    if (want("attn_fwdbwd_" + tag)) {
      double ms = time_ms(
          [&] {
            std::vector<gn_tensor*> o;
            call(fwd, {q, k, v}, at, 2, &o);
            call(bwd, {g, q, k, v, o[0], o[1]}, at, 3);
            gn_tensor_release(o[0]);
            gn_tensor_release(o[1]);
          },
          50);
      emit("attn_fwdbwd_" + tag, ms, 3.5 * flops / (ms * 1e-3) / 1e12, "TFLOP/s");
    }
    gn_tensor_release(q);
    gn_tensor_release(k);
    gn_tensor_release(v);
    gn_tensor_release(g);
  }
}

void bench_cross_entropy() {
  if (!want("xent_bf16_4096x151936")) return;
  const int64_t R = 4096, C = 151936;
  gn_tensor* x = randn({R, C}, GN_BF16);
  gn_tensor* t = randint(0, C, {R});
  gn_tensor* one = nullptr;
  check(gn_tensor_scalar(rt, 1.0, GN_BF16, dev, &one), "scalar");
  const gn_op* fwd = op("cross_entropy");
  const gn_op* bwd = op("cross_entropy_backward");
  std::vector<gn_attr_value> at = {ai(-100), af(0.0), ai(1)};
  auto step = [&] {
    std::vector<gn_tensor*> o;
    call(fwd, {x, t}, at, 2, &o);
    call(bwd, {one, x, t, o[1]}, at, 1);
    gn_tensor_release(o[0]);
    gn_tensor_release(o[1]);
  };
  double ms = time_ms(step, 20);
  // allocator peak over one fwd+bwd, beyond what was live before
  check(gn_device_synchronize(rt, dev), "sync");
  gn_memory_stats s0{sizeof(gn_memory_stats)};
  check(gn_memory_reset_peak(rt, dev), "reset_peak");
  check(gn_memory_stats_get(rt, dev, &s0), "stats");
  step();
  check(gn_device_synchronize(rt, dev), "sync");
  gn_memory_stats s1{sizeof(gn_memory_stats)};
  check(gn_memory_stats_get(rt, dev, &s1), "stats");
  const double extra = (double)s1.peak_allocated - (double)s0.allocated;
  const double f32_logits = (double)R * C * 4;
  char buf[160];
  std::snprintf(buf, sizeof buf, ", \"peak_extra_bytes\": %.0f, \"f32_logits_bytes\": %.0f", extra, f32_logits);
  emit("xent_bf16_4096x151936", ms, ms, "ms", buf);
  std::fprintf(stderr, "  xent peak extra %.1f MB (bf16 dlogits %.1f MB, f32 logits would be %.1f MB)\n", extra / 1e6,
               (double)R * C * 2 / 1e6, f32_logits / 1e6);
  gn_tensor_release(x);
  gn_tensor_release(t);
  gn_tensor_release(one);
}

// gn_tensor_empty + release of a fixed mix of sizes (256 B .. 64 MB), after a warm-up
// round so the caching allocator serves them (as PyTorch's does).
void bench_alloc() {
  if (!want("alloc_free_mixed")) return;
  std::vector<int64_t> sizes;
  for (int i = 0; i < 64; ++i) sizes.push_back(int64_t(64) << ((i * 7) % 19));  // 64 .. 16M floats
  std::vector<gn_tensor*> ts(sizes.size());
  auto round = [&] {
    for (size_t i = 0; i < sizes.size(); ++i) check(gn_tensor_empty(rt, &sizes[i], 1, GN_F32, dev, &ts[i]), "empty");
    for (gn_tensor* t : ts) gn_tensor_release(t);
  };
  round();
  const int rounds = 200;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) round();
  auto t1 = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / (rounds * sizes.size());
  emit("alloc_free_mixed", us * 1e-3, us, "us/tensor");
}

// conv2d 3x3, stride 1, padding 1 on (32, 64, 56, 56) x (64, 64, 3, 3): not an
// acceptance case, a yardstick against cuDNN (forward; backward = grad_x + grad_w
// + grad_bias).  f32 runs in full precision (PyTorch side: TF32 off).
void bench_conv() {
  const int64_t N = 32, C = 64, H = 56, O = 64;
  const double flops = 2.0 * N * O * H * H * C * 9;
  for (int32_t dt : {GN_BF16, GN_F32}) {
    const std::string tag = dt == GN_BF16 ? "bf16" : "f32";
    if (!want("conv2d_" + tag)) continue;
    gn_tensor* x = randn({N, C, H, H}, dt);
    gn_tensor* w = randn({O, C, 3, 3}, dt);
    std::vector<int64_t> one = {1, 1};
    std::vector<gn_attr_value> at = {aints(one), aints(one)};
    double ms = time_ms([&] { call(op("conv2d"), {x, w}, at, 1); }, 30);
    emit("conv2d_" + tag + "_fwd", ms, flops / (ms * 1e-3) / 1e12, "TFLOP/s");
    std::vector<gn_tensor*> y;
    call(op("conv2d"), {x, w}, at, 1, &y);
    ms = time_ms([&] { call(op("conv2d_backward"), {y[0], x, w}, at, 3); }, 30);
    emit("conv2d_" + tag + "_bwd", ms, 2 * flops / (ms * 1e-3) / 1e12, "TFLOP/s");
    gn_tensor_release(y[0]);
    gn_tensor_release(x);
    gn_tensor_release(w);
  }
}

// Host time per call, several variants interleaved: round r times a burst of
// 200 calls of each variant in turn (wall clock), the device drained (untimed)
// after every burst so the launch queue never fills and blocks the host; the
// result per variant is the median over 100 rounds.  Interleaving gives every
// variant the same vCPU speed and the same drift (on the lent VM the launch
// cost alone moves between 3 and 4.6 us from one process to the next).
std::vector<double> host_us_interleaved(const std::vector<std::function<void()>>& fns) {
  constexpr int kBurst = 200, kRounds = 100, kWarm = 3;
  std::vector<std::vector<double>> us(fns.size());
  for (int r = 0; r < kRounds + kWarm; ++r)
    for (size_t k = 0; k < fns.size(); ++k) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBurst; ++i) fns[k]();
      auto t1 = std::chrono::steady_clock::now();
      check(gn_device_synchronize(rt, dev), "sync");
      if (r >= kWarm) us[k].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBurst);
    }
  std::vector<double> med;
  for (auto& v : us) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

// Time per call when 20000 are queued back to back and then waited for:
// bounded by whichever of host and GPU is slower per launch.
double stream_us(const std::function<void()>& fn) {
  for (int i = 0; i < 1000; ++i) fn();
  check(gn_device_synchronize(rt, dev), "sync");
  const int n = 20000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  check(gn_device_synchronize(rt, dev), "sync");
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

__global__ void empty_kernel() {}

// tiny_add_overhead: host time of add on two 1-element cuda tensors with a
// fresh output released at once (as an application makes the call).  Timed
// interleaved with its floor, an empty kernel launched by the CUDA runtime on
// the same stream (launch_empty_host, no Genesis code), and two diagnostics:
// the add into a preallocated output, and a 1-element tensor made + released.
void bench_tiny_add() {
  float one = 1.0f;
  int64_t shape[1] = {1};
  gn_tensor *a = nullptr, *b = nullptr, *o = nullptr;
  check(gn_tensor_from_host(rt, &one, shape, 1, GN_F32, dev, &a), "from_host");
  check(gn_tensor_from_host(rt, &one, shape, 1, GN_F32, dev, &b), "from_host");
  check(gn_tensor_empty(rt, shape, 1, GN_F32, dev, &o), "empty");
  const gn_op* add = op("add");
  gn_tensor* ins[2] = {a, b};
  cudaStream_t s = native_stream();
  auto tiny_add = [&] {
    gn_tensor* t = nullptr;
    check(gn_op_call(rt, add, ins, 2, nullptr, 0, &t, 1), "add");
    gn_tensor_release(t);
  };
  if (want("tiny_add_overhead")) {
    const std::vector<double> us =
        host_us_interleaved({tiny_add, [&] { empty_kernel<<<1, 32, 0, s>>>(); },
                             [&] { check(gn_op_call(rt, add, ins, 2, nullptr, 0, &o, 1), "add"); },
                             [&] {
                               gn_tensor* t = nullptr;
                               check(gn_tensor_empty(rt, shape, 1, GN_F32, dev, &t), "empty");
                               gn_tensor_release(t);
                             }});
    emit("tiny_add_overhead", us[0] * 1e-3, us[0], "us/call");
    emit("launch_empty_host", us[1] * 1e-3, us[1], "us/call");
    emit("host_add_prealloc", us[2] * 1e-3, us[2], "us/call");
    emit("host_empty_release", us[3] * 1e-3, us[3], "us/call");
  }
  if (want("tiny_add_stream")) {
    const double us = stream_us(tiny_add);
    emit("tiny_add_stream", us * 1e-3, us, "us/call");
  }
  gn_tensor_release(o);
  gn_tensor_release(a);
  gn_tensor_release(b);
}

// device-to-device copy of 64M floats (256 MB) through the copy op: the
// bandwidth ceiling for the memory-bound cases (bytes read + written).
void bench_copy() {
  if (!want("copy_d2d_256MB")) return;
  const int64_t n = int64_t(64) << 20;
  gn_tensor* a = randn({n}, GN_F32);
  double ms = time_ms([&] { call(op("copy"), {a}, {}, 1); }, 30);
  emit("copy_d2d_256MB", ms, 2.0 * n * 4 / (ms * 1e-3) / 1e9, "GB/s");
  gn_tensor_release(a);
}

}  // namespace

int main(int argc, char** argv) {
  const char* plugin_dir = argc > 1 ? argv[1] : nullptr;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) {
      out_file = std::fopen(argv[++i], "w");
      if (!out_file) {
        std::perror("open");
        return 1;
      }
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    }
  }
  if (!open_cuda(plugin_dir, "gpu_bench")) return 2;
  gn_rng_manual_seed(rt, 1234);
  // each case in its own guard so one failure does not hide the rest
  std::pair<const char*, void (*)()> cases[] = {{"copy", bench_copy},
                                                {"add", bench_add},
                                                {"bcast_add", bench_bcast_add},
                                                {"sum_rows", bench_sum_rows},
                                                {"softmax", bench_softmax},
                                                {"norms", bench_norms},
                                                {"matmul", bench_matmul},
                                                {"attention", bench_attention},
                                                {"cross_entropy", bench_cross_entropy},
                                                {"alloc", bench_alloc},
                                                {"tiny_add", bench_tiny_add},
                                                {"conv", bench_conv}};
  for (auto& [name, fn] : cases) {
    try {
      fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpu_bench: case %s failed: %s\n", name, e.what());
      std::fprintf(out_file, "{\"case\": \"%s\", \"error\": \"%s\"}\n", name, e.what());
      gn_device_synchronize(rt, dev);
    }
  }
  gn_runtime_destroy(rt);
  if (out_file != stdout) std::fclose(out_file);
  return 0;
}
