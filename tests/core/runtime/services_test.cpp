// RNG state, generators, DLPack, memory statistics, profiler, introspection.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util.h"

using namespace gt;

namespace {

T rand_tensor(Runtime& r, int64_t n, gn_generator* g = nullptr) {
  const gn_op* op = nullptr;
  EXPECT_EQ(gn_op_find(r.rt, "rand", &op), nullptr);
  gn_attr_value a[1] = {gn_attr_ints(&n, 1)};
  gn_tensor* o[1] = {nullptr};
  gn_call_options opts{sizeof(gn_call_options), g};
  gn_status* st = gn_op_call_ex(r.rt, op, nullptr, 0, a, 1, o, 1, &opts);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return T(o[0]);
}

TEST(Rng, ManualSeedReproducesAndStateRoundTrips) {
  Runtime r;
  gn_rng_manual_seed(r.rt, 1234);
  auto a = values<float>(rand_tensor(r, 10));
  auto b = values<float>(rand_tensor(r, 10));
  EXPECT_NE(a, b);  // the offset advanced
  uint64_t seed = 0, offset = 0;
  GN_OK_OR_FAIL(gn_rng_get_state(r.rt, r.cpu, &seed, &offset));
  EXPECT_EQ(seed, 1234u);
  EXPECT_EQ(offset, 24u);  // two calls of 10 numbers, each rounded up to a Philox block of 4
  gn_rng_manual_seed(r.rt, 1234);
  EXPECT_EQ(values<float>(rand_tensor(r, 10)), a);
  auto c = values<float>(rand_tensor(r, 10));
  EXPECT_EQ(c, b);
  GN_OK_OR_FAIL(gn_rng_set_state(r.rt, r.cpu, 1234, 12));
  EXPECT_EQ(values<float>(rand_tensor(r, 10)), b);
  gn_rng_manual_seed(r.rt, 99);
  EXPECT_NE(values<float>(rand_tensor(r, 10)), a);
}

TEST(Rng, PrivateGeneratorDoesNotTouchTheDefault) {
  Runtime r;
  gn_rng_manual_seed(r.rt, 7);
  gn_generator* g = nullptr;
  GN_OK_OR_FAIL(gn_generator_create(r.rt, 7, &g));
  auto from_gen = values<float>(rand_tensor(r, 8, g));
  uint64_t s = 0, off = 99;
  gn_generator_get_state(g, &s, &off);
  EXPECT_EQ(off, 8u);
  GN_OK_OR_FAIL(gn_rng_get_state(r.rt, r.cpu, &s, &off));
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(values<float>(rand_tensor(r, 8)), from_gen);  // same seed, same stream
  gn_generator_destroy(g);
}

TEST(DLPack, ExportImportSharesMemoryAndRunsDeleter) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  gn_tensor* tr = nullptr;
  GN_OK_OR_FAIL(gn_tensor_transpose(a.t, 0, 1, &tr));
  T at(tr);
  DLManagedTensorVersioned* m = nullptr;
  GN_OK_OR_FAIL(gn_tensor_to_dlpack(at.t, &m));
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 1);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  gn_tensor* back = nullptr;
  GN_OK_OR_FAIL(gn_tensor_from_dlpack(r.rt, m, &back));
  T b(back);
  EXPECT_EQ(gn_tensor_data_ptr(b.t), gn_tensor_data_ptr(at.t));
  EXPECT_EQ(values<float>(b), (std::vector<float>{1, 4, 2, 5, 3, 6}));

  // A foreign tensor: our deleter flag proves the import released it.
  static bool deleted;
  deleted = false;
  static float data[4] = {1, 2, 3, 4};
  static int64_t shape[1] = {4};
  // A capsule over data with this element type, whose deleter sets the flag.
  auto foreign = [](DLDataType dtype) {
    auto* m = new DLManagedTensorVersioned{};
    m->version = {1, 0};
    m->deleter = [](DLManagedTensorVersioned* self) {
      deleted = true;
      delete self;
    };
    m->dl_tensor = {data, {kDLCPU, 0}, 1, dtype, shape, nullptr, 0};
    return m;
  };
  DLManagedTensorVersioned* f = foreign({kDLFloat, 32, 1});
  gn_tensor* imp = nullptr;
  GN_OK_OR_FAIL(gn_tensor_from_dlpack(r.rt, f, &imp));
  EXPECT_EQ(values<float>(T(imp)), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(deleted);
  // Unsupported dtype: error, and the deleter still runs.
  deleted = false;
  DLManagedTensorVersioned* g = foreign({kDLComplex, 64, 1});
  gn_tensor* none = nullptr;
  Err e = take(gn_tensor_from_dlpack(r.rt, g, &none));
  EXPECT_EQ(e.code, GN_ERR_DTYPE);
  EXPECT_TRUE(deleted);
}

TEST(Memory, StatsFollowAllocations) {
  Runtime r;
  gn_memory_stats before{sizeof(gn_memory_stats)};
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &before));
  {
    int64_t n = 1 << 20;
    gn_tensor* t = nullptr;
    GN_OK_OR_FAIL(gn_tensor_empty(r.rt, &n, 1, GN_F32, r.cpu, &t));
    T hold(t);
    gn_memory_stats during{sizeof(gn_memory_stats)};
    GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &during));
    EXPECT_GE(during.allocated, before.allocated + (4u << 20));
    EXPECT_GE(during.peak_allocated, during.allocated);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
  }
  gn_memory_stats after{sizeof(gn_memory_stats)};
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &after));
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_EQ(after.num_frees, before.num_frees + 1);
}

TEST(Profiler, RecordsOpsAndWritesChromeTrace) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2}, {2}, GN_F32);
  GN_OK_OR_FAIL(gn_profiler_start(r.rt));
  for (int i = 0; i < 3; ++i) {
    T c;
    GN_OK_OR_FAIL(call1(r.rt, "exp", {a.t}, {}, &c));
  }
  GN_OK_OR_FAIL(gn_profiler_stop(r.rt));
  std::string path = std::string(GENESIS_TEST_BINARY_DIR) + "/profiler_test_trace.json";
  GN_OK_OR_FAIL(gn_profiler_export_chrome_trace(r.rt, path.c_str()));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string json = ss.str();
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"exp\""), std::string::npos) << json.substr(0, 300);
  EXPECT_NE(json.find("\"ph\": \"X\""), std::string::npos);
  size_t need = 0;
  GN_OK_OR_FAIL(gn_profiler_summary(r.rt, nullptr, 0, &need));
  std::string table(need, '\0');
  GN_OK_OR_FAIL(gn_profiler_summary(r.rt, table.data(), table.size(), &need));
  EXPECT_NE(table.find("exp"), std::string::npos);
  EXPECT_NE(table.find(" 3 "), std::string::npos) << table;
  std::remove(path.c_str());
}

TEST(Profiler, TraceExportReplacesTheFileAndRemovesStaleTemporaries) {
  // The export writes through the same atomic writer as the frontend's files: a killed
  // export's temporary file (no lock held) is removed by the next one.
  Runtime r;
  const std::string dir = std::string(GENESIS_TEST_BINARY_DIR) + "/profiler_stale";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/trace.json", stale = dir + "/.trace.json.tmp.Ab12Cd";
  std::ofstream(stale) << "{\"traceEv";
  std::ofstream(path) << "old";
  GN_OK_OR_FAIL(gn_profiler_export_chrome_trace(r.rt, path.c_str()));
  EXPECT_FALSE(std::filesystem::exists(stale));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"trace.json"});
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("\"traceEvents\""), std::string::npos) << ss.str();
  // A directory that does not exist: GN_ERR_IO naming the file.
  const std::string missing = dir + "/no/such/dir/trace.json";
  Err e = take(gn_profiler_export_chrome_trace(r.rt, missing.c_str()));
  EXPECT_EQ(e.code, GN_ERR_IO);
  EXPECT_NE(e.msg.find("cannot write '" + missing + "'"), std::string::npos) << e.msg;
  std::filesystem::remove_all(dir);
}

TEST(Introspection, ReferenceServesCpuAndListsKernels) {
  Runtime r;
  ASSERT_GE(gn_device_type_count(r.rt), 1u);
  gn_device_type_record rec{sizeof(rec)};
  GN_OK_OR_FAIL(gn_device_type_get(r.rt, (size_t)r.cpu.type, &rec));
  EXPECT_STREQ(rec.name, "cpu");
  EXPECT_STREQ(rec.backend, "reference");
  EXPECT_EQ(rec.device_count, 1);
  const gn_op* add = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "add", &add));
  EXPECT_STREQ(gn_op_origin(add), "core");
  ASSERT_GT(gn_op_kernel_count(add), 0u);
  gn_kernel_record k{sizeof(k)};
  GN_OK_OR_FAIL(gn_op_kernel_get(add, 0, &k));
  EXPECT_STREQ(k.backend, "reference");
  // Every built-in op has at least one reference kernel.
  for (size_t i = 0; i < gn_op_count(r.rt); ++i) {
    const gn_op* op = gn_op_at(r.rt, i);
    if (gn_op_get_schema(op)->flags & GN_OP_VIEW) continue;
    EXPECT_GT(gn_op_kernel_count(op), 0u) << gn_op_name(op) << " has no reference kernel";
  }
}

}  // namespace
