// tests/backends/cuda/cuda_stream_graph_test.cpp - streams and events
// (record / wait / query / synchronize, per-device current stream) and CUDA
// graph capture through the ABI's graph slots: a replay computes what eager
// execution computes, on new input values, and repeatedly.
#include <cmath>
#include <random>

#include "cuda_test_util.h"

namespace {

using cudat::crt;

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// gn_tensor_copy_(dst, src-from-host): writes new values into an existing
// device tensor (its storage stays, as a captured graph needs).
void overwrite(const gt::T& dst, const std::vector<float>& v) {
  gt::T src = cudat::from_host(v, {(int64_t)v.size()}, crt().host);
  gn_tensor* moved = nullptr;
  cudat::ok(gn_tensor_to_device(src.t, crt().dev, &moved), "to device");
  gt::T m(moved);
  gn_tensor* flat = nullptr;
  cudat::ok(gn_tensor_view_as(dst.t, std::vector<int64_t>{(int64_t)v.size()}.data(), 1, &flat), "view");
  gt::T f(flat);
  cudat::ok(gn_tensor_copy_(f.t, m.t), "copy_");
}

TEST(CudaStreams, EventsOrderWorkAcrossStreams) {
  CUDA_REQUIRE_DEVICE();
  gn_stream *a = nullptr, *b = nullptr;
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &a), "stream a");
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &b), "stream b");
  EXPECT_NE(gn_stream_native(a), nullptr);
  EXPECT_NE(gn_stream_native(a), gn_stream_native(b));
  gn_event* ev = nullptr;
  cudat::ok(gn_event_create(crt().rt, crt().dev, &ev), "event");
  const size_t n = 1 << 22;
  const std::vector<float> v = random_vec(n, 1);
  gt::T x = cudat::from_host(v, {(int64_t)n}, crt().dev);

  // Producer on a: y = exp(x) repeated a few times so it takes a while.
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, a), "current a");
  EXPECT_EQ(gn_stream_get_current(crt().rt, crt().dev), a);
  gt::T y = cudat::call("exp", {x.t});
  for (int k = 0; k < 20; ++k) y = cudat::call("tanh", {y.t});
  cudat::ok(gn_event_record(ev, a), "record");
  // Consumer on b waits for the event, then reads y.
  cudat::ok(gn_stream_wait_event(b, ev), "wait");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, b), "current b");
  gt::T z = cudat::call("neg", {y.t});
  cudat::ok(gn_stream_synchronize(b), "sync b");
  int32_t done = 0;
  cudat::ok(gn_event_query(ev, &done), "query");
  EXPECT_EQ(done, 1);  // b waited for it, and b is done
  cudat::ok(gn_event_synchronize(ev), "event sync");
  std::vector<float> got = cudat::to_host(z);
  for (size_t i = 0; i < n; i += 4099) {
    float e = std::exp(v[i]);
    for (int k = 0; k < 20; ++k) e = std::tanh(e);
    ASSERT_NEAR(got[i], -e, 1e-5f) << i;
  }
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, nullptr), "reset");
  y = gt::T();
  z = gt::T();
  cudat::sync();
  cudat::ok(gn_event_destroy(ev), "event destroy");
  cudat::ok(gn_stream_destroy(a), "destroy a");
  cudat::ok(gn_stream_destroy(b), "destroy b");
}

TEST(CudaGraph, CaptureOnTheDefaultStreamIsAClearError) {
  CUDA_REQUIRE_DEVICE();
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, nullptr), "default");
  gt::Err e = gt::take(gn_graph_begin(crt().rt, crt().dev));
  EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT) << e.msg;
  EXPECT_NE(e.msg.find("non-default stream"), std::string::npos) << e.msg;
}

// Capture y = sum(softmax(a*b + a, -1) * 2, dim 1) with mixed elementwise,
// broadcast, reduction and softmax kernels (plus allocations inside the
// capture); replay on new values equals eager execution on those values.
TEST(CudaGraph, ReplayEqualsEager) {
  CUDA_REQUIRE_DEVICE();
  gn_stream* s = nullptr;
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &s), "stream");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, s), "current");
  const int64_t R = 64, C = 1000;
  gt::T a = cudat::empty({R, C}, GN_F32, crt().dev);
  gt::T b = cudat::empty({1, C}, GN_F32, crt().dev);
  gt::T two = cudat::empty({}, GN_F32, crt().dev);
  cudat::fill(two, 2.0);
  const int64_t dims1[1] = {1};
  auto compute = [&]() {
    gt::T ab = cudat::call("mul", {a.t, b.t});
    gt::T s1 = cudat::call("add", {ab.t, a.t}, {gn_attr_float(1.0)});
    gt::T sm = cudat::call("softmax", {s1.t}, {gn_attr_int(-1)});
    gt::T sc = cudat::call("mul", {sm.t, two.t});
    return cudat::call("sum", {sc.t}, {gn_attr_ints(dims1, 1), gn_attr_int(0)});
  };
  // Eager reference on the first values.
  overwrite(a, random_vec((size_t)(R * C), 11));
  overwrite(b, random_vec((size_t)C, 12));
  std::vector<float> eager1 = cudat::to_host(compute());

  cudat::ok(gn_graph_begin(crt().rt, crt().dev), "graph begin");
  gt::T y = compute();  // allocated inside the capture: owned by the graph's pool
  gn_graph* g = nullptr;
  cudat::ok(gn_graph_end(crt().rt, crt().dev, &g), "graph end");
  ASSERT_NE(g, nullptr);

  cudat::ok(gn_graph_launch(g), "launch 1");
  cudat::ok(gn_stream_synchronize(s), "sync");
  std::vector<float> r1 = cudat::to_host(y);
  ASSERT_EQ(r1.size(), eager1.size());
  for (size_t i = 0; i < r1.size(); ++i) EXPECT_FLOAT_EQ(r1[i], eager1[i]) << i;

  // New values in the same storages: the replay follows them.
  overwrite(a, random_vec((size_t)(R * C), 21));
  overwrite(b, random_vec((size_t)C, 22));
  std::vector<float> eager2 = cudat::to_host(compute());
  for (int rep = 0; rep < 3; ++rep) {
    cudat::ok(gn_graph_launch(g), "launch");
    cudat::ok(gn_stream_synchronize(s), "sync");
    std::vector<float> r2 = cudat::to_host(y);
    for (size_t i = 0; i < r2.size(); ++i) ASSERT_FLOAT_EQ(r2[i], eager2[i]) << "rep " << rep << " i " << i;
  }
  // The eager values differ from the first ones (the replay did recompute).
  EXPECT_NE(eager1, eager2);
  y = gt::T();
  gn_graph_destroy(g);
  const gn_memory_stats st = cudat::stats();
  EXPECT_GE(st.reserved, st.allocated);
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, nullptr), "reset");
  cudat::sync();
  cudat::ok(gn_stream_destroy(s), "destroy");
}

// Random numbers: the same seed gives the same values on cuda as on the
// reference (exact for float32; docs/rng.md).
TEST(CudaRandom, SameNumbersAsTheReference) {
  CUDA_REQUIRE_DEVICE();
  gt::Runtime ref("reference");
  const int64_t shape[1] = {10007};
  for (const char* op : {"rand", "randn"}) {
    std::vector<float> vals[2];
    for (int side = 0; side < 2; ++side) {
      gn_runtime* rt = side ? crt().rt : ref.rt;
      gn_device dev = side ? crt().dev : ref.cpu;
      gn_rng_manual_seed(rt, 1234);
      gt::T t;
      gn_status* st = gt::call1(rt, op, {}, {gn_attr_ints(shape, 1), gn_attr_int(GN_F32), gn_attr_device(dev)}, &t);
      ASSERT_EQ(st, nullptr) << gn_status_message(st);
      vals[side].resize(10007);
      cudat::ok(gn_tensor_to_host(t.t, vals[side].data(), vals[side].size() * 4), "to host");
    }
    EXPECT_EQ(vals[0], vals[1]) << op;
  }
}

}  // namespace
