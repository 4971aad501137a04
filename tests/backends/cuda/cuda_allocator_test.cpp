// tests/backends/cuda/cuda_allocator_test.cpp - the cuda plugin's device
// reporting and its caching allocator, through the public C API: statistics
// against a model of what was allocated, no two live tensors overlapping,
// reuse, cross-stream frees, empty_cache and the out-of-memory path.
#include <algorithm>
#include <cstdio>
#include <random>

#include "cuda_test_util.h"

namespace {

using cudat::crt;

// Bytes the allocator accounts for a request (rounded to 512).
uint64_t rounded(uint64_t bytes) { return bytes < 512 ? 512 : (bytes + 511) / 512 * 512; }
uint64_t DeviceBytes(int64_t f32_elems) { return rounded((uint64_t)f32_elems * 4); }

TEST(CudaDevice, ReportsDevicesOrAReason) {
  // Runs everywhere: with a GPU the count is positive and the properties are
  // real; without one the plugin still loads and says why there is none.
  const int32_t n = gn_device_count(crt().rt, "cuda");
  if (n == 0) {
    EXPECT_FALSE(crt().note.empty());
    EXPECT_NE(crt().note.find("CUDA"), std::string::npos) << crt().note;
    return;
  }
  gn_device_props p{};
  p.struct_size = sizeof(p);
  cudat::ok(gn_device_properties(crt().rt, crt().dev, &p), "properties");
  EXPECT_GT(p.total_memory, uint64_t(1) << 30);
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GE(p.compute_major, 7);
  EXPECT_GT(std::strlen(p.name), 0u);
}

TEST(CudaAllocator, StatsFollowAllocationsAndFrees) {
  CUDA_REQUIRE_DEVICE();
  cudat::sync();
  const gn_memory_stats s0 = cudat::stats();
  {
    gt::T a = cudat::empty({1000}, GN_F32, crt().dev);     // 4000 B -> 4096
    gt::T b = cudat::empty({3}, GN_I8, crt().dev);         // 3 B -> 512
    gt::T c = cudat::empty({1 << 20}, GN_F32, crt().dev);  // 4 MiB, large pool
    const gn_memory_stats s1 = cudat::stats();
    EXPECT_EQ(s1.allocated - s0.allocated, rounded(4000) + rounded(3) + rounded(4u << 20));
    EXPECT_EQ(s1.active_blocks - s0.active_blocks, 3u);
    EXPECT_EQ(s1.num_allocs - s0.num_allocs, 3u);
    EXPECT_GE(s1.reserved, s1.allocated);
    EXPECT_GE(s1.peak_allocated, s1.allocated);
  }
  const gn_memory_stats s2 = cudat::stats();
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_EQ(s2.active_blocks, s0.active_blocks);
  EXPECT_EQ(s2.num_frees - s0.num_frees, 3u);
  // The same sizes again come from the cache.
  {
    gt::T a = cudat::empty({1000}, GN_F32, crt().dev);
    gt::T c = cudat::empty({1 << 20}, GN_F32, crt().dev);
    const gn_memory_stats s3 = cudat::stats();
    EXPECT_EQ(s3.cache_hits - s2.cache_hits, 2u);
    EXPECT_EQ(s3.cache_misses, s2.cache_misses);
    EXPECT_EQ(s3.reserved, s2.reserved);
  }
}

// Random sizes from 1 B to 48 MiB, random frees: every live tensor keeps the
// value written into it (no two blocks overlap, splitting/merging keep data),
// and the statistics equal the model at every step.
TEST(CudaAllocator, RandomStressKeepsDataAndStats) {
  CUDA_REQUIRE_DEVICE();
  cudat::sync();
  std::mt19937 gen(42);
  std::uniform_int_distribution<int> pick(0, 99);
  auto random_elems = [&]() -> int64_t {
    const int r = pick(gen);
    if (r < 60) return 1 + gen() % 4096;             // small pool, < 16 KiB
    if (r < 90) return 4096 + gen() % (300 * 1024);  // up to ~1.2 MiB
    return (1 << 20) + gen() % (12 << 20);           // 4 - 52 MiB of f32
  };
  struct Live {
    gt::T t;
    float value;
    uint64_t bytes;
  };
  std::vector<Live> live;
  const gn_memory_stats base = cudat::stats();
  uint64_t model_alloc = 0;
  for (int step = 0; step < 400; ++step) {
    if (!live.empty() && pick(gen) < 45) {
      const size_t k = gen() % live.size();
      // Check the value before freeing: max == min == value.
      gt::T mx = cudat::call("max", {live[k].t.t}, {gn_attr_ints(nullptr, 0)});
      gt::T mn = cudat::call("min", {live[k].t.t}, {gn_attr_ints(nullptr, 0)});
      ASSERT_EQ(cudat::to_host(mx)[0], live[k].value) << "step " << step;
      ASSERT_EQ(cudat::to_host(mn)[0], live[k].value) << "step " << step;
      model_alloc -= live[k].bytes;
      live.erase(live.begin() + (long)k);
    } else {
      const int64_t n = random_elems();
      Live l{cudat::empty({n}, GN_F32, crt().dev), (float)(step + 1), rounded((uint64_t)n * 4)};
      cudat::fill(l.t, l.value);
      model_alloc += l.bytes;
      live.push_back(std::move(l));
    }
    const gn_memory_stats s = cudat::stats();
    ASSERT_EQ(s.allocated - base.allocated, model_alloc) << "step " << step;
    ASSERT_EQ(s.active_blocks - base.active_blocks, live.size()) << "step " << step;
    ASSERT_GE(s.reserved, s.allocated);
    ASSERT_GE(s.peak_allocated, s.allocated);
    ASSERT_GE(s.peak_reserved, s.reserved);
  }
  for (Live& l : live) {
    gt::T mx = cudat::call("max", {l.t.t}, {gn_attr_ints(nullptr, 0)});
    gt::T mn = cudat::call("min", {l.t.t}, {gn_attr_ints(nullptr, 0)});
    EXPECT_EQ(cudat::to_host(mx)[0], l.value);
    EXPECT_EQ(cudat::to_host(mn)[0], l.value);
  }
  live.clear();
  const gn_memory_stats end = cudat::stats();
  EXPECT_EQ(end.allocated, base.allocated);
  EXPECT_EQ(end.active_blocks, base.active_blocks);
  EXPECT_GT(end.cache_hits, base.cache_hits);
  // empty_cache hands every fully free segment back.
  cudat::ok(gn_memory_empty_cache(crt().rt, crt().dev), "empty_cache");
  const gn_memory_stats after = cudat::stats();
  EXPECT_LT(after.reserved, end.reserved);
  EXPECT_EQ(after.allocated, end.allocated);
}

// A tensor allocated on stream s1 and freed while s2 is current: the block is
// held until s2's work is done (an event), then reused; nothing leaks.
TEST(CudaAllocator, CrossStreamFreeIsReusedAfterItsEvent) {
  CUDA_REQUIRE_DEVICE();
  gn_stream *s1 = nullptr, *s2 = nullptr;
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &s1), "stream 1");
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &s2), "stream 2");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, s1), "set s1");
  const gn_memory_stats s0 = cudat::stats();
  {
    gt::T a = cudat::empty({1 << 18}, GN_F32, crt().dev);  // 1 MiB
    cudat::fill(a, 3.0);
    gt::T b = cudat::call("exp", {a.t});  // work queued on s1
    cudat::ok(gn_stream_set_current(crt().rt, crt().dev, s2), "set s2");
    // a and b die here with s2 current: cross-stream frees.
  }
  const gn_memory_stats s1s = cudat::stats();
  EXPECT_EQ(s1s.allocated, s0.allocated);
  EXPECT_EQ(s1s.active_blocks, s0.active_blocks);
  cudat::ok(gn_stream_synchronize(s2), "sync s2");
  cudat::ok(gn_stream_synchronize(s1), "sync s1");
  // Back on s1, the same size is served from the cache once the events completed.
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, s1), "set s1 again");
  {
    gt::T c = cudat::empty({1 << 18}, GN_F32, crt().dev);
    const gn_memory_stats s3 = cudat::stats();
    EXPECT_EQ(s3.cache_misses, s1s.cache_misses);
    cudat::fill(c, 5.0);
    gt::T mx = cudat::call("max", {c.t}, {gn_attr_ints(nullptr, 0)});
    EXPECT_EQ(cudat::to_host(mx)[0], 5.0f);
  }
  cudat::ok(gn_stream_synchronize(s1), "sync s1");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, nullptr), "reset current");
  cudat::ok(gn_stream_destroy(s1), "destroy s1");
  cudat::ok(gn_stream_destroy(s2), "destroy s2");
}

// Out of memory, two ways.  (1) More than the device has: refused at once.
// (2) Two requests of 60% of the device each: the second fails in cudaMalloc;
// the cache is flushed and the request retried once (oom_retries + 1), then
// GN_ERR_OUT_OF_MEMORY names the request, what is allocated and reserved.
// Afterwards the allocator works as before.
TEST(CudaAllocator, OutOfMemoryIsAClearErrorAfterOneRetry) {
  CUDA_REQUIRE_DEVICE();
  auto step = [](const char* what) { std::fprintf(stderr, "[oom test] %s\n", what), std::fflush(stderr); };
  gn_device_props p{};
  p.struct_size = sizeof(p);
  cudat::ok(gn_device_properties(crt().rt, crt().dev, &p), "properties");
  gt::T keep = cudat::empty({1 << 20}, GN_F32, crt().dev);
  const gn_memory_stats s0 = cudat::stats();
  {
    step("request beyond the device");
    gn_tensor* t = nullptr;
    const int64_t shape[1] = {(int64_t)(p.total_memory / 4) * 2};
    gt::Err e = gt::take(gn_tensor_empty(crt().rt, shape, 1, GN_F32, crt().dev, &t));
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(e.code, GN_ERR_OUT_OF_MEMORY) << e.msg;
    EXPECT_NE(e.msg.find("total memory"), std::string::npos) << e.msg;
    EXPECT_EQ(cudat::stats().oom_retries, s0.oom_retries);
  }
  {
    const int64_t n = (int64_t)(p.total_memory * 6 / 10 / 4);
    step("first 60% request");
    gt::T big = cudat::empty({n}, GN_F32, crt().dev);
    ASSERT_NE(big.t, nullptr);
    step("second 60% request");
    gn_tensor* t = nullptr;
    gn_status* st = gn_tensor_empty(crt().rt, &n, 1, GN_F32, crt().dev, &t);
    ASSERT_NE(st, nullptr) << "a second 60% allocation succeeded";
    gt::Err e = gt::take(st);
    step(e.msg.c_str());
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(e.code, GN_ERR_OUT_OF_MEMORY) << e.msg;
    EXPECT_NE(e.msg.find("tried to allocate"), std::string::npos) << e.msg;
    EXPECT_NE(e.msg.find("allocated"), std::string::npos) << e.msg;
    EXPECT_NE(e.msg.find("reserved"), std::string::npos) << e.msg;
    const gn_memory_stats s1 = cudat::stats();
    EXPECT_EQ(s1.oom_retries, s0.oom_retries + 1);
    EXPECT_EQ(s1.allocated, s0.allocated + DeviceBytes(n));
  }
  step("allocating after the errors");
  gt::T after = cudat::empty({1 << 20}, GN_F32, crt().dev);
  cudat::fill(after, 1.5);
  gt::T mx = cudat::call("max", {after.t}, {gn_attr_ints(nullptr, 0)});
  EXPECT_EQ(cudat::to_host(mx)[0], 1.5f);
  // The 60% block went back to the cache; empty_cache returns it to the driver.
  cudat::ok(gn_memory_empty_cache(crt().rt, crt().dev), "empty_cache");
  EXPECT_LT(cudat::stats().reserved, (uint64_t)(p.total_memory / 2));
  step("done");
}

// The retry that works: a 60% block freed on another stream stays cached for that stream (blocks
// are reused only by the stream they were allocated on), so a 60% request on the default stream
// misses the cache and cudaMalloc fails; the allocator then releases the cached segment and the
// retry succeeds (oom_retries + 1, no error).  The data written survives, and the process goes on.
TEST(CudaAllocator, OutOfMemoryReleasesTheCacheAndTheRetrySucceeds) {
  CUDA_REQUIRE_DEVICE();
  gn_device_props p{};
  p.struct_size = sizeof(p);
  cudat::ok(gn_device_properties(crt().rt, crt().dev, &p), "properties");
  const int64_t n = (int64_t)(p.total_memory * 6 / 10 / 4);
  cudat::ok(gn_memory_empty_cache(crt().rt, crt().dev), "empty_cache");
  gn_stream* s1 = nullptr;
  cudat::ok(gn_stream_create(crt().rt, crt().dev, &s1), "stream");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, s1), "set s1");
  {
    gt::T on_s1 = cudat::empty({n}, GN_F32, crt().dev);
    ASSERT_NE(on_s1.t, nullptr);
  }  // freed: cached for s1, still reserved
  cudat::ok(gn_stream_synchronize(s1), "sync s1");
  cudat::ok(gn_stream_set_current(crt().rt, crt().dev, nullptr), "reset current");
  const gn_memory_stats s0 = cudat::stats();
  EXPECT_GE(s0.reserved, DeviceBytes(n)) << "the freed block should still be cached";
  {
    gt::T big = cudat::empty({n}, GN_F32, crt().dev);  // must not fail
    ASSERT_NE(big.t, nullptr);
    const gn_memory_stats s1s = cudat::stats();
    EXPECT_EQ(s1s.oom_retries, s0.oom_retries + 1);
    EXPECT_LT(s1s.reserved, s0.reserved + DeviceBytes(n));  // the cached segment was given back
    cudat::fill(big, 2.5);
    gt::T mx = cudat::call("max", {big.t}, {gn_attr_ints(nullptr, 0)});
    EXPECT_EQ(cudat::to_host(mx)[0], 2.5f);
  }
  cudat::ok(gn_stream_destroy(s1), "destroy s1");
  cudat::ok(gn_memory_empty_cache(crt().rt, crt().dev), "empty_cache");
  gt::T after = cudat::empty({1 << 20}, GN_F32, crt().dev);
  cudat::fill(after, -1.0);
  gt::T mn = cudat::call("min", {after.t}, {gn_attr_ints(nullptr, 0)});
  EXPECT_EQ(cudat::to_host(mn)[0], -1.0f);
}

// Host -> device copies from pageable memory are staged: the caller may
// overwrite its buffer as soon as the call returns.
TEST(CudaCopy, StagedHostToDeviceCopiesSnapshotTheSource) {
  CUDA_REQUIRE_DEVICE();
  std::vector<float> buf(1000);
  std::vector<gt::T> ts;
  for (int k = 0; k < 50; ++k) {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = (float)(k * 1000 + (int)i);
    ts.push_back(cudat::from_host(buf, {1000}, crt().dev));
    std::fill(buf.begin(), buf.end(), -1.0f);  // must not reach the device copy
  }
  for (int k = 0; k < 50; ++k) {
    const std::vector<float> got = cudat::to_host(ts[(size_t)k]);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], (float)(k * 1000 + (int)i)) << k << "," << i;
  }
  // A large copy (direct path) round-trips too, as does device -> device.
  std::vector<float> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = (float)(i % 9973);
  gt::T tb = cudat::from_host(big, {(int64_t)big.size()}, crt().dev);
  gt::T tc = cudat::call("copy", {tb.t});
  const std::vector<float> back = cudat::to_host(tc);
  EXPECT_EQ(back, big);
}

}  // namespace
