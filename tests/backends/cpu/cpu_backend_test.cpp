// tests/backends/cpu/cpu_backend_test.cpp - the oneDNN cpu backend itself:
// device type, caching host allocator statistics, thread settings.  The op
// results are checked by the cross-backend suite (../op_consistency_*).
#include "op_consistency.h"

namespace {

TEST(CpuBackend, CachingAllocatorStatistics) {
  OPC_REQUIRE_SUITE();
  Rt& r = runtimes().dut;
  GN_OK_OR_FAIL(gn_memory_empty_cache(r.rt, r.dev));
  gn_memory_stats s0{};
  s0.struct_size = sizeof(s0);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.dev, &s0));
  const int64_t shape[] = {1000, 1000};
  gn_tensor* t = nullptr;
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, shape, 2, GN_F32, r.dev, &t));
  EXPECT_EQ((uintptr_t)gn_tensor_data_ptr(t) % 64, 0u);
  gn_memory_stats s1{};
  s1.struct_size = sizeof(s1);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.dev, &s1));
  EXPECT_GE(s1.allocated, s0.allocated + 4000000u);
  EXPECT_EQ(s1.num_allocs, s0.num_allocs + 1);
  EXPECT_EQ(s1.cache_misses, s0.cache_misses + 1);
  EXPECT_EQ(s1.active_blocks, s0.active_blocks + 1);
  EXPECT_GE(s1.peak_allocated, s1.allocated);
  gn_tensor_release(t);
  // The same size again comes from the cache.
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, shape, 2, GN_F32, r.dev, &t));
  gn_memory_stats s2{};
  s2.struct_size = sizeof(s2);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.dev, &s2));
  EXPECT_EQ(s2.cache_hits, s1.cache_hits + 1);
  EXPECT_EQ(s2.num_frees, s1.num_frees + 1);
  gn_tensor_release(t);
  gn_memory_stats s3{};
  s3.struct_size = sizeof(s3);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.dev, &s3));
  EXPECT_GT(s3.reserved, s3.allocated);  // the block is cached
  GN_OK_OR_FAIL(gn_memory_empty_cache(r.rt, r.dev));
  GN_OK_OR_FAIL(gn_memory_reset_peak(r.rt, r.dev));
  gn_memory_stats s4{};
  s4.struct_size = sizeof(s4);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.dev, &s4));
  EXPECT_EQ(s4.reserved, s4.allocated);
  EXPECT_EQ(s4.peak_allocated, s4.allocated);
}

}  // namespace
