// bench/cpu_bench.cpp - the oneDNN CPU backend through Genesis beside the same
// oneDNN primitives called directly (no framework around them).
//
//   genesis/*  gn_op_call on "cpu" (served by libgenesis_plugin_cpu), outputs
//              allocated by the call and released, as the frontend does
//   onednn/*   the primitive built once, executed on preallocated buffers
//
// Cases: matmul f32 M=N=K in {512, 1024, 2048} (GFLOP/s = 2MNK), add of two
// 4M-element f32 tensors (GB/s = 3 * 4 bytes * n), softmax over the last dim
// and layer_norm (weight + bias) of 1024x4096 f32 (GB/s = 2 * 4 bytes * n),
// conv2d ResNet-style 3x3 (N=32, C=64->64, 56x56, pad 1, no bias; GFLOP/s =
// 2*N*O*Ho*Wo*C*9).  onednn/conv2d does what Genesis must do for NCHW user
// tensors (reorders into the primitive's blocked layouts and back, weights
// included); onednn/conv2d_blocked times the primitive alone on data already
// in its layouts (the upper bound).
// Threads: GENESIS_NUM_THREADS for both (default all cores).
//
//   build-cpu/bin/bench_cpu [--benchmark_filter=...]  (bench/compare_cpu.py adds PyTorch)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <random>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "genesis/genesis.h"

namespace {

void check(gn_status* st) {
  if (!st) return;
  std::fprintf(stderr, "bench: %s\n", gn_status_message(st));
  std::exit(1);
}

int threads() {
  const char* s = std::getenv("GENESIS_NUM_THREADS");
  int n = s ? std::atoi(s) : 0;
  return n > 0 ? n : omp_get_num_procs();
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// ------------------------------------------------------------------ Genesis

struct Genesis {
  gn_runtime* rt = nullptr;
  gn_device cpu{};
  Genesis() {
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_BENCH_PLUGIN_DIR;
    o.plugins = "reference,cpu";
    check(gn_runtime_create(&o, &rt));
    check(gn_device_parse(rt, "cpu", &cpu));
  }
  gn_tensor* tensor(std::vector<int64_t> shape, unsigned seed) {
    size_t n = 1;
    for (int64_t d : shape) n *= (size_t)d;
    std::vector<float> v = random_floats(n, seed);
    gn_tensor* t = nullptr;
    check(gn_tensor_from_host(rt, v.data(), shape.data(), (int32_t)shape.size(), GN_F32, cpu, &t));
    return t;
  }
  static Genesis& get() {
    static Genesis* g = new Genesis();
    return *g;
  }
};

// Time gn_op_call(op, inputs, attrs) with n_out fresh outputs per iteration.
void run_genesis(benchmark::State& state, const char* name, std::vector<gn_tensor*> in,
                 std::vector<gn_attr_value> attrs, size_t n_out) {
  Genesis& g = Genesis::get();
  const gn_op* op = nullptr;
  check(gn_op_find(g.rt, name, &op));
  std::vector<gn_tensor*> out(n_out);
  for (auto _ : state) {
    for (auto& o : out) o = nullptr;
    gn_status* st = gn_op_call(g.rt, op, in.data(), in.size(), attrs.data(), attrs.size(), out.data(), n_out);
    if (st) {
      state.SkipWithError(gn_status_message(st));
      gn_status_free(st);
      break;
    }
    for (gn_tensor* o : out) gn_tensor_release(o);
  }
  for (gn_tensor* t : in) gn_tensor_release(t);
}

void set_rate(benchmark::State& state, const char* name, double per_iter) {
  state.counters[name] = benchmark::Counter(per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_genesis_matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  Genesis& g = Genesis::get();
  run_genesis(state, "matmul", {g.tensor({n, n}, 1), g.tensor({n, n}, 2)}, {}, 1);
  set_rate(state, "GFLOPs", 2.0 * n * n * n * 1e-9);
}

void BM_genesis_add(benchmark::State& state) {
  const int64_t n = state.range(0);
  Genesis& g = Genesis::get();
  run_genesis(state, "add", {g.tensor({n}, 1), g.tensor({n}, 2)}, {}, 1);
  set_rate(state, "GBs", 3.0 * 4 * n * 1e-9);
}

void BM_genesis_softmax(benchmark::State& state) {
  const int64_t r = state.range(0), c = state.range(1);
  Genesis& g = Genesis::get();
  run_genesis(state, "softmax", {g.tensor({r, c}, 1)}, {gn_attr_int(-1)}, 1);
  set_rate(state, "GBs", 2.0 * 4 * r * c * 1e-9);
}

void BM_genesis_layer_norm(benchmark::State& state) {
  const int64_t r = state.range(0), c = state.range(1);
  Genesis& g = Genesis::get();
  run_genesis(state, "layer_norm", {g.tensor({r, c}, 1), g.tensor({c}, 2), g.tensor({c}, 3)},
              {gn_attr_int(1), gn_attr_float(1e-5)}, 3);
  set_rate(state, "GBs", 2.0 * 4 * r * c * 1e-9);
}

constexpr int64_t kConvN = 32, kConvC = 64, kConvO = 64, kConvH = 56;
const double kConvGflop = 2.0 * kConvN * kConvO * kConvH * kConvH * kConvC * 9 * 1e-9;

void BM_genesis_conv2d(benchmark::State& state) {
  Genesis& g = Genesis::get();
  static const int64_t one[2] = {1, 1};
  run_genesis(state, "conv2d", {g.tensor({kConvN, kConvC, kConvH, kConvH}, 1), g.tensor({kConvO, kConvC, 3, 3}, 2)},
              {gn_attr_ints(one, 2), gn_attr_ints(one, 2), gn_attr_ints(one, 2), gn_attr_int(1)}, 1);
  set_rate(state, "GFLOPs", kConvGflop);
}

// ------------------------------------------------------------------ oneDNN

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Dnnl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  static Dnnl& get() {
    static Dnnl* d = new Dnnl();
    omp_set_num_threads(threads());
    return *d;
  }
  memory buffer(const memory::desc& md, unsigned seed) {
    memory m(md, eng);
    std::vector<float> v = random_floats(md.get_size() / sizeof(float), seed);
    std::memcpy(m.get_data_handle(), v.data(), v.size() * sizeof(float));
    return m;
  }
};

void run_dnnl(benchmark::State& state, dnnl::primitive p, const std::unordered_map<int, memory>& args) {
  Dnnl& d = Dnnl::get();
  for (auto _ : state) {
    p.execute(d.strm, args);
    d.strm.wait();
  }
}

void BM_onednn_matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  Dnnl& d = Dnnl::get();
  memory::desc md({n, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), d.eng);
  run_dnnl(state, dnnl::matmul(pd),
           {{DNNL_ARG_SRC, d.buffer(md, 1)}, {DNNL_ARG_WEIGHTS, d.buffer(md, 2)}, {DNNL_ARG_DST, memory(md, d.eng)}});
  set_rate(state, "GFLOPs", 2.0 * n * n * n * 1e-9);
}

void BM_onednn_add(benchmark::State& state) {
  const int64_t n = state.range(0);
  Dnnl& d = Dnnl::get();
  memory::desc md({n}, dt::f32, tag::a);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, md, md, md), d.eng);
  run_dnnl(state, dnnl::binary(pd),
           {{DNNL_ARG_SRC_0, d.buffer(md, 1)}, {DNNL_ARG_SRC_1, d.buffer(md, 2)}, {DNNL_ARG_DST, memory(md, d.eng)}});
  set_rate(state, "GBs", 3.0 * 4 * n * 1e-9);
}

void BM_onednn_softmax(benchmark::State& state) {
  const int64_t r = state.range(0), c = state.range(1);
  Dnnl& d = Dnnl::get();
  memory::desc md({r, c}, dt::f32, tag::ab);
  dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, md, md, 1);
  dnnl::softmax_v2_forward::primitive_desc pd(desc, d.eng);
  run_dnnl(state, dnnl::softmax_v2_forward(pd), {{DNNL_ARG_SRC, d.buffer(md, 1)}, {DNNL_ARG_DST, memory(md, d.eng)}});
  set_rate(state, "GBs", 2.0 * 4 * r * c * 1e-9);
}

void BM_onednn_layer_norm(benchmark::State& state) {
  const int64_t r = state.range(0), c = state.range(1);
  Dnnl& d = Dnnl::get();
  memory::desc md({r, c}, dt::f32, tag::ab), stat({r}, dt::f32, tag::a), ss({c}, dt::f32, tag::a);
  dnnl::layer_normalization_forward::desc desc(
      dnnl::prop_kind::forward_training, md, stat, 1e-5f,
      dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, d.eng);
  run_dnnl(state, dnnl::layer_normalization_forward(pd),
           {{DNNL_ARG_SRC, d.buffer(md, 1)},
            {DNNL_ARG_DST, memory(md, d.eng)},
            {DNNL_ARG_MEAN, memory(stat, d.eng)},
            {DNNL_ARG_VARIANCE, memory(stat, d.eng)},
            {DNNL_ARG_SCALE, d.buffer(ss, 2)},
            {DNNL_ARG_SHIFT, d.buffer(ss, 3)}});
  set_rate(state, "GBs", 2.0 * 4 * r * c * 1e-9);
}

// conv2d: the primitive on oneDNN's chosen layouts; `user_layouts` adds the
// reorders from/to NCHW (and OIHW weights) that a caller with plain tensors needs.
void onednn_conv2d(benchmark::State& state, bool user_layouts) {
  Dnnl& d = Dnnl::get();
  const memory::dims src{kConvN, kConvC, kConvH, kConvH}, wei{kConvO, kConvC, 3, 3},
      dst{kConvN, kConvO, kConvH, kConvH};
  memory::desc src_u(src, dt::f32, tag::nchw), wei_u(wei, dt::f32, tag::oihw), dst_u(dst, dt::f32, tag::nchw);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                       memory::desc(src, dt::f32, tag::any), memory::desc(wei, dt::f32, tag::any),
                                       memory::desc(dst, dt::f32, tag::any), {1, 1}, {0, 0}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc pd(desc, d.eng);
  memory su = d.buffer(src_u, 1), wu = d.buffer(wei_u, 2), du(dst_u, d.eng);
  memory so(pd.src_desc(), d.eng), wo(pd.weights_desc(), d.eng), dso(pd.dst_desc(), d.eng);
  dnnl::reorder(su, so).execute(d.strm, su, so);
  dnnl::reorder(wu, wo).execute(d.strm, wu, wo);
  dnnl::convolution_forward conv(pd);
  const bool rs = pd.src_desc() != src_u, rw = pd.weights_desc() != wei_u, rd = pd.dst_desc() != dst_u;
  dnnl::reorder r_src(su, so), r_wei(wu, wo), r_dst(dso, du);
  for (auto _ : state) {
    if (user_layouts && rs) r_src.execute(d.strm, su, so);
    if (user_layouts && rw) r_wei.execute(d.strm, wu, wo);
    conv.execute(d.strm, {{DNNL_ARG_SRC, so}, {DNNL_ARG_WEIGHTS, wo}, {DNNL_ARG_DST, dso}});
    if (user_layouts && rd) r_dst.execute(d.strm, dso, du);
    d.strm.wait();
  }
  set_rate(state, "GFLOPs", kConvGflop);
  state.SetLabel(pd.impl_info_str());
}

void BM_onednn_conv2d(benchmark::State& state) { onednn_conv2d(state, true); }
void BM_onednn_conv2d_blocked(benchmark::State& state) { onednn_conv2d(state, false); }

}  // namespace

BENCHMARK(BM_genesis_matmul)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_matmul)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_genesis_add)->Arg(4 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_onednn_add)->Arg(4 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_genesis_softmax)->Args({1024, 4096})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_onednn_softmax)->Args({1024, 4096})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_genesis_layer_norm)->Args({1024, 4096})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_onednn_layer_norm)->Args({1024, 4096})->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK(BM_genesis_conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_onednn_conv2d_blocked)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
