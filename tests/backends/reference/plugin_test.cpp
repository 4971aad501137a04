// plugin_test.cpp - the reference plugin's init, its kernel registrations and
// its "cpu" device type (allocator statistics, props, copies, streams).
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const int32_t kAll[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
const int32_t kFloats[] = {GN_F32, GN_F16, GN_BF16, GN_F64};

const gn_device_vtable& cpu() {
  const gn_device_vtable* d = find_device("cpu");
  EXPECT_NE(d, nullptr);
  return *d;
}

gn_memory_stats stats() {
  gn_memory_stats s{};
  s.struct_size = sizeof(s);
  gn_status* st = cpu().memory_stats(cpu().ctx, 0, &s);
  EXPECT_EQ(st, nullptr);
  delete st;
  return s;
}

}  // namespace

// ----------------------------------------------------------------------------
// init and registrations

TEST(ReferencePlugin, InitSucceeds) {
  const Registry& r = registry();
  ASSERT_EQ(r.init_status, nullptr) << r.init_status->msg;
  EXPECT_STREQ(r.info.name, "reference");
  EXPECT_EQ(r.info.abi_major, (uint32_t)GN_ABI_VERSION_MAJOR);
  EXPECT_EQ(r.info.abi_minor, (uint32_t)GN_ABI_VERSION_MINOR);
  EXPECT_NE(r.info.version, nullptr);
  EXPECT_NE(r.info.description, nullptr);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_TRUE(r.ops.empty()) << "the reference plugin adds no schemas";
}

TEST(ReferencePlugin, EveryKernelIsForCpuAndHasAFunction) {
  for (const auto& [key, k] : registry().kernels) {
    EXPECT_STREQ(k.device_type, "cpu") << key.first;
    EXPECT_NE(k.fn, nullptr) << key.first;
    EXPECT_GE(k.dtype, 0) << key.first << ": explicit dtypes, not GN_DTYPE_ANY";
  }
}

TEST(ReferencePlugin, RegistersEveryOpOfItsFamilies) {
  // Ops served for every dtype.
  for (const char* op :
       {"sign",        "exp",         "log",       "sigmoid", "gelu",    "square",       "logical_not", "isnan",
        "isinf",       "isfinite",    "cast",      "copy",    "fill",    "add",          "mul",         "div",
        "maximum",     "minimum",     "eq",        "ne",      "lt",      "le",           "gt",          "ge",
        "logical_and", "logical_or",  "where",     "full",    "sum",     "prod",         "max",         "min",
        "softmax",     "log_softmax", "embedding", "gather",  "scatter", "index_select", "masked_fill", "cat",
        "stack",       "triu",        "tril",      "sort",    "argsort"})
    for (int32_t dt : kAll) EXPECT_NE(find_kernel(op, dt), nullptr) << op << " / " << gn_dtype_name(dt);
  // Ops served for every numeric dtype (not bool).
  for (const char* op : {"neg", "abs", "relu", "floor", "ceil", "round", "clamp", "sub", "pow", "arange", "randint",
                         "argmax", "argmin", "scatter_add", "index_add", "topk"}) {
    for (int32_t dt : kAll) {
      if (dt == GN_BOOL)
        EXPECT_EQ(find_kernel(op, dt), nullptr) << op << " / bool";
      else
        EXPECT_NE(find_kernel(op, dt), nullptr) << op << " / " << gn_dtype_name(dt);
    }
  }
  // Float-only ops.
  for (const char* op : {"rand", "randn", "bernoulli", "mean", "var", "std", "norm", "logsumexp", "softmax_backward",
                         "log_softmax_backward", "embedding_backward"}) {
    for (int32_t dt : kFloats) EXPECT_NE(find_kernel(op, dt), nullptr) << op << " / " << gn_dtype_name(dt);
    EXPECT_EQ(find_kernel(op, GN_I64), nullptr) << op << " / int64";
  }
  for (int32_t dt : {GN_I8, GN_U8, GN_I32, GN_I64}) EXPECT_NE(find_kernel("one_hot", dt), nullptr);
}

// ----------------------------------------------------------------------------
// the cpu device type

TEST(ReferenceDevice, Description) {
  const gn_device_vtable& d = cpu();
  EXPECT_EQ(d.score, 1);
  EXPECT_TRUE(d.flags & GN_DEVICE_HOST_MEMORY);
  int32_t count = 0;
  ASSERT_EQ(d.device_count(d.ctx, &count), nullptr);
  EXPECT_EQ(count, 1);
  gn_device_props p{};
  p.struct_size = sizeof(p);
  ASSERT_EQ(d.device_props(d.ctx, 0, &p), nullptr);
  EXPECT_STREQ(p.name, "host (reference)");
  EXPECT_EQ(p.total_memory, (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGE_SIZE));
  EXPECT_GE(p.multiprocessors, 1);
  gn_status* bad = d.device_props(d.ctx, 1, &p);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->code, GN_ERR_DEVICE);
  delete bad;
  EXPECT_EQ(d.graph_begin, nullptr);
  EXPECT_EQ(d.graph_launch, nullptr);
}

TEST(ReferenceDevice, AllocatorKeepsStatistics) {
  const gn_device_vtable& d = cpu();
  ASSERT_EQ(d.reset_peak_stats(d.ctx, 0), nullptr);
  gn_memory_stats s0 = stats();
  void *a = nullptr, *b = nullptr, *z = (void*)1;
  ASSERT_EQ(d.alloc(d.ctx, 0, 1000, nullptr, &a), nullptr);
  ASSERT_EQ(d.alloc(d.ctx, 0, 24, nullptr, &b), nullptr);
  ASSERT_EQ(d.alloc(d.ctx, 0, 0, nullptr, &z), nullptr);
  EXPECT_EQ(z, nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((uintptr_t)a % 64, 0u);
  EXPECT_EQ((uintptr_t)b % 64, 0u);
  std::memset(a, 7, 1000);  // the whole block is usable
  gn_memory_stats s1 = stats();
  EXPECT_EQ(s1.allocated, s0.allocated + 1024);
  EXPECT_EQ(s1.reserved, s1.allocated);
  EXPECT_EQ(s1.num_allocs, s0.num_allocs + 2);
  EXPECT_EQ(s1.active_blocks, s0.active_blocks + 2);
  EXPECT_GE(s1.peak_allocated, s1.allocated);
  ASSERT_EQ(d.free(d.ctx, 0, a, nullptr), nullptr);
  ASSERT_EQ(d.free(d.ctx, 0, nullptr, nullptr), nullptr);
  gn_memory_stats s2 = stats();
  EXPECT_EQ(s2.allocated, s0.allocated + 24);
  EXPECT_EQ(s2.num_frees, s0.num_frees + 1);
  EXPECT_EQ(s2.active_blocks, s0.active_blocks + 1);
  EXPECT_EQ(s2.peak_allocated, s1.peak_allocated) << "peak survives a free";
  ASSERT_EQ(d.reset_peak_stats(d.ctx, 0), nullptr);
  EXPECT_EQ(stats().peak_allocated, s2.allocated);
  ASSERT_EQ(d.free(d.ctx, 0, b, nullptr), nullptr);
  ASSERT_EQ(d.empty_cache(d.ctx, 0), nullptr);
  EXPECT_EQ(stats().allocated, s0.allocated);
}

TEST(ReferenceDevice, CopyMemsetStreamsEvents) {
  const gn_device_vtable& d = cpu();
  std::vector<uint8_t> src(100), dst(100, 0);
  for (int i = 0; i < 100; ++i) src[(size_t)i] = (uint8_t)i;
  for (int32_t kind : {GN_COPY_HOST_TO_DEVICE, GN_COPY_DEVICE_TO_HOST, GN_COPY_DEVICE_TO_DEVICE}) {
    std::fill(dst.begin(), dst.end(), 0);
    ASSERT_EQ(d.copy(d.ctx, 0, dst.data(), src.data(), 100, kind, nullptr), nullptr);
    EXPECT_EQ(dst, src);
  }
  ASSERT_EQ(d.memset(d.ctx, 0, dst.data() + 10, 0xCD, 5, nullptr), nullptr);
  EXPECT_EQ(dst[9], 9);
  EXPECT_EQ(dst[10], 0xCD);
  EXPECT_EQ(dst[14], 0xCD);
  EXPECT_EQ(dst[15], 15);

  void *s = nullptr, *e = nullptr;
  ASSERT_EQ(d.stream_create(d.ctx, 0, &s), nullptr);
  ASSERT_EQ(d.event_create(d.ctx, 0, &e), nullptr);
  EXPECT_NE(s, nullptr);
  EXPECT_NE(e, nullptr);
  ASSERT_EQ(d.event_record(d.ctx, 0, e, s), nullptr);
  ASSERT_EQ(d.stream_wait_event(d.ctx, 0, s, e), nullptr);
  int32_t done = 0;
  ASSERT_EQ(d.event_query(d.ctx, 0, e, &done), nullptr);
  EXPECT_EQ(done, 1);
  ASSERT_EQ(d.event_synchronize(d.ctx, 0, e), nullptr);
  ASSERT_EQ(d.stream_synchronize(d.ctx, 0, s), nullptr);
  ASSERT_EQ(d.device_synchronize(d.ctx, 0), nullptr);
  ASSERT_EQ(d.event_destroy(d.ctx, 0, e), nullptr);
  ASSERT_EQ(d.stream_destroy(d.ctx, 0, s), nullptr);
}
