// tests/backends/cpu/cpu_backend_test.cpp - the oneDNN cpu backend itself:
// device type, caching host allocator statistics, thread settings.  The op
// results are checked by the cross-backend suite (../op_consistency_*).
#include <omp.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "../../sanitizers.h"
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

// Resident set size of this process, from /proc/self/statm.
size_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// The plugin's caches belong to the runtime that loaded it: a create / allocate
// / free / destroy cycle must give its memory back, even though the library is
// unloaded and loaded again each time (a cache left behind would be lost).
TEST(CpuBackend, RuntimeCyclesKeepMemoryFlat) {
  if (GENESIS_TEST_ASAN)
    GTEST_SKIP() << "ASan's quarantine holds freed memory; LeakSanitizer checks the plugin's frees instead";
  constexpr int64_t kFloats = int64_t(16) << 20;  // 64 MiB per cycle
  const std::vector<float> host(kFloats, 1.5f);
  auto cycle = [&] {
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_TEST_PLUGIN_DIR;
    o.plugins = "cpu";
    gn_runtime* rt = nullptr;
    GN_OK_OR_FAIL(gn_runtime_create(&o, &rt));
    gn_device dev{};
    GN_OK_OR_FAIL(gn_device_parse(rt, "cpu", &dev));
    gn_tensor* t = nullptr;
    const int64_t shape[] = {kFloats};
    GN_OK_OR_FAIL(gn_tensor_from_host(rt, host.data(), shape, 1, GN_F32, dev, &t));  // touches every page
    gn_memory_stats s{};
    s.struct_size = sizeof(s);
    GN_OK_OR_FAIL(gn_memory_stats_get(rt, dev, &s));
    EXPECT_GE(s.allocated, uint64_t(kFloats) * 4) << "the cpu plugin did not serve the tensor";
    gn_tensor_release(t);
    gn_runtime_destroy(rt);
  };
  for (int i = 0; i < 2; ++i) cycle();  // libraries, thread pools, first-touch arenas
  const size_t before = rss_bytes();
  ASSERT_GT(before, 0u);
  constexpr int kCycles = 8;
  for (int i = 0; i < kCycles; ++i) cycle();
  const size_t after = rss_bytes();
  // A leaked cache costs 64 MiB a cycle (512 MiB here); allow a quarter of one.
  EXPECT_LT(after, before + (size_t(16) << 20)) << "RSS grew from " << (before >> 20) << " MiB to " << (after >> 20)
                                                << " MiB over " << kCycles << " runtime cycles";
}

// Runtimes that load the plugin share its one loaded copy, and so its allocator: the first
// runtime's shutdown must leave it to the second, and the last one frees it (the plugin keeps a
// count of its loads; a function-local allocator was lost with each unload, which
// LeakSanitizer reports in scripts/sanitize.sh).
TEST(CpuBackend, RuntimesSharingThePluginShareItsAllocatorUntilTheLastShutdown) {
  auto make = [](gn_runtime** rt, gn_device* dev) {
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_TEST_PLUGIN_DIR;
    o.plugins = "cpu";
    GN_OK_OR_FAIL(gn_runtime_create(&o, rt));
    GN_OK_OR_FAIL(gn_device_parse(*rt, "cpu", dev));
  };
  gn_runtime *a = nullptr, *b = nullptr;
  gn_device da{}, db{};
  ASSERT_NO_FATAL_FAILURE(make(&a, &da));
  ASSERT_NO_FATAL_FAILURE(make(&b, &db));
  const std::vector<float> v = {1, 2, 3, 4};
  const int64_t shape[] = {4};
  gn_tensor* tb = nullptr;
  GN_OK_OR_FAIL(gn_tensor_from_host(b, v.data(), shape, 1, GN_F32, db, &tb));
  gn_runtime_destroy(a);  // its shutdown runs: b's allocator and tensor must live on
  gn_tensor* tb2 = nullptr;
  GN_OK_OR_FAIL(gn_tensor_from_host(b, v.data(), shape, 1, GN_F32, db, &tb2));
  std::vector<float> back(4);
  GN_OK_OR_FAIL(gn_tensor_to_host(tb, back.data(), back.size() * sizeof(float)));
  EXPECT_EQ(back, v);
  gn_memory_stats s{};
  s.struct_size = sizeof(s);
  GN_OK_OR_FAIL(gn_memory_stats_get(b, db, &s));
  EXPECT_EQ(s.active_blocks, 2u);
  gn_tensor_release(tb);
  gn_tensor_release(tb2);
  gn_runtime_destroy(b);
}

// ---------------------------------------------------------------- threads
//
// The thread count comes from the runtime option "num_threads", else the
// environment variable GENESIS_NUM_THREADS, else all cores.  It is checked two
// ways: the device name the plugin reports ("host (oneDNN x.y.z, N threads)"),
// and the OpenMP setting a kernel leaves on the calling thread (the plugin
// sets omp_set_num_threads before every parallel region; this process shares
// its libgomp).  Each TEST runs in its own process under ctest; the runtime
// made here re-initialises the plugin, so the suite's runtimes are not used.

// A runtime over "reference,cpu" with an optional num_threads option.
// op(x) on runtime r for f32 values x (attrs as given), as f32 bits.
std::vector<uint32_t> call_f32(Rt& r, const char* name, const std::vector<float>& x,
                               const std::vector<gn_attr_value>& attrs = {}) {
  const int64_t shape[] = {(int64_t)x.size()};
  gn_tensor *t = nullptr, *y = nullptr;
  const gn_op* op = nullptr;
  std::vector<uint32_t> bits(x.size());
  EXPECT_EQ(gn_tensor_from_host(r.rt, x.data(), shape, 1, GN_F32, r.dev, &t), nullptr);
  EXPECT_EQ(gn_op_find(r.rt, name, &op), nullptr);
  gn_status* st = gn_op_call(r.rt, op, &t, 1, attrs.data(), attrs.size(), &y, 1);
  EXPECT_EQ(st, nullptr) << name << ": " << gn_status_message(st);
  gn_status_free(st);
  if (y) {
    EXPECT_EQ(gn_tensor_to_host(y, bits.data(), bits.size() * sizeof(float)), nullptr);
  }
  gn_tensor_release(t);
  gn_tensor_release(y);
  return bits;
}

// Small eltwise calls skip the oneDNN primitive call (ops/onednn/unary.cpp): relu,
// neg, abs, sqrt, square and clamp run the generic loop, equal to the
// reference bit for bit (NaN and signed zeros included); the other ops run
// the primitive on the calling thread and leave its OpenMP setting as it was.
TEST(CpuBackend, SmallEltwiseCalls) {
  OPC_REQUIRE_SUITE();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, -0.0f, 0.0f, -3.0f, 2.5f, -inf, inf, 1e-40f, -1e-40f, 0.7f, -1.2f, 3e38f};
  const std::vector<gn_attr_value> bounds = {gn_attr_float(-1.0), gn_attr_float(2.0)};
  for (const char* op : {"relu", "neg", "abs", "sqrt", "square", "clamp"}) {
    const std::vector<gn_attr_value> attrs = std::string(op) == "clamp" ? bounds : std::vector<gn_attr_value>{};
    for (size_t n : {size_t(1), x.size()}) {
      const std::vector<float> xs(x.begin(), x.begin() + (long)n);
      EXPECT_EQ(call_f32(runtimes().dut, op, xs, attrs), call_f32(runtimes().ref, op, xs, attrs)) << op << " n=" << n;
    }
  }
  // (op, its value at 0.5)
  const std::pair<const char*, float> approx[] = {{"exp", 1.6487213f},
                                                  {"tanh", 0.46211716f},
                                                  {"sigmoid", 0.62245933f},
                                                  {"gelu", 0.34573123f},
                                                  {"silu", 0.31122967f}};
  omp_set_num_threads(97);
  for (const auto& [op, want] : approx) {
    const std::vector<uint32_t> y = call_f32(runtimes().dut, op, {0.5f});
    float v;
    std::memcpy(&v, y.data(), sizeof v);
    EXPECT_NEAR(v, want, 1e-6f) << op;
    EXPECT_EQ(omp_get_max_threads(), 97) << op;
  }
}

struct ThreadRt {
  gn_runtime* rt = nullptr;
  gn_device dev{};
  explicit ThreadRt(const char* num_threads) {
    const char* keys[] = {"num_threads"};
    const char* vals[] = {num_threads};
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_TEST_PLUGIN_DIR;
    o.plugins = "reference,cpu";
    if (num_threads) {
      o.n_options = 1;
      o.option_keys = keys;
      o.option_values = vals;
    }
    EXPECT_EQ(gn_runtime_create(&o, &rt), nullptr);
    EXPECT_EQ(gn_device_parse(rt, "cpu", &dev), nullptr);
  }
  ~ThreadRt() { gn_runtime_destroy(rt); }

  // The plugin's device name.
  std::string name() {
    gn_device_props p{};
    p.struct_size = sizeof(p);
    gn_status* st = gn_device_properties(rt, dev, &p);
    EXPECT_EQ(st, nullptr) << gn_status_message(st);
    gn_status_free(st);
    return p.name;
  }

  // Pool workers after a large parallel kernel: the threads named
  // "genesis-cpu" (threads.h) in this process.
  int workers_after_op() {
    const int64_t shape[] = {1024, 1024};
    gn_tensor *a = nullptr, *b = nullptr, *y = nullptr;
    EXPECT_EQ(gn_tensor_empty(rt, shape, 2, GN_F32, dev, &a), nullptr);
    EXPECT_EQ(gn_tensor_empty(rt, shape, 2, GN_F32, dev, &b), nullptr);
    const gn_op* op = nullptr;
    EXPECT_EQ(gn_op_find(rt, "maximum", &op), nullptr);  // a C++ loop over rows on the pool
    gn_tensor* ins[] = {a, b};
    EXPECT_EQ(gn_op_call(rt, op, ins, 2, nullptr, 0, &y, 1), nullptr);
    gn_tensor_release(a);
    gn_tensor_release(b);
    gn_tensor_release(y);
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(e.path() / "comm");
      std::string name;
      if (std::getline(comm, name) && name == "genesis-cpu") ++n;
    }
    return n;
  }
};

std::string threads_text(int n) { return ", " + std::to_string(n) + " threads)"; }

int affinity_cores() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

// Sets or clears the two thread variables for one test.
struct ThreadEnv {
  ThreadEnv(const char* omp, const char* genesis) {
    omp ? setenv("OMP_NUM_THREADS", omp, 1) : unsetenv("OMP_NUM_THREADS");
    genesis ? setenv("GENESIS_NUM_THREADS", genesis, 1) : unsetenv("GENESIS_NUM_THREADS");
  }
  ~ThreadEnv() {
    unsetenv("OMP_NUM_THREADS");
    unsetenv("GENESIS_NUM_THREADS");
  }
};

TEST(CpuThreads, DefaultIsTheCoresThisProcessMayUse) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env(nullptr, nullptr);
  ThreadRt r(nullptr);
  // No cgroup quota on the machines that run this suite is assumed: the affinity mask decides.
  EXPECT_NE(r.name().find(threads_text(affinity_cores())), std::string::npos) << r.name();
  EXPECT_EQ(gn_runtime_num_threads(r.rt), affinity_cores());
}

TEST(CpuThreads, OmpNumThreadsComesBeforeGenesisNumThreads) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env("2,1", "1");  // OpenMP's list form: the first entry counts
  ThreadRt r(nullptr);
  const int n = std::min(2, affinity_cores());
  EXPECT_NE(r.name().find(threads_text(n)), std::string::npos) << r.name();
  EXPECT_EQ(gn_runtime_num_threads(r.rt), n);
  EXPECT_EQ(r.workers_after_op(), n - 1);  // the calling thread is the other one
}

TEST(CpuThreads, GenesisNumThreads) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env(nullptr, "2");
  ThreadRt r(nullptr);
  const int n = std::min(2, affinity_cores());
  EXPECT_NE(r.name().find(threads_text(n)), std::string::npos) << r.name();
  EXPECT_EQ(r.workers_after_op(), n - 1);
}

TEST(CpuThreads, TheEnvironmentNeverAsksForMoreThanTheCores) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env("4096", nullptr);
  ThreadRt r(nullptr);
  EXPECT_EQ(gn_runtime_num_threads(r.rt), affinity_cores());
  GN_OK_OR_FAIL(gn_runtime_set_num_threads(r.rt, affinity_cores() + 2));  // asked for by name: granted
  EXPECT_EQ(gn_runtime_num_threads(r.rt), affinity_cores() + 2);
}

TEST(CpuThreads, RuntimeOptionOverridesEnvironment) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env("1", "1");
  ThreadRt r("5");
  EXPECT_NE(r.name().find(threads_text(5)), std::string::npos) << r.name();
  EXPECT_EQ(r.workers_after_op(), 4);
}

TEST(CpuThreads, SetAfterLoadAndBackToTheDefault) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env(nullptr, nullptr);
  ThreadRt r(nullptr);
  GN_OK_OR_FAIL(gn_runtime_set_num_threads(r.rt, 1));
  EXPECT_EQ(gn_runtime_num_threads(r.rt), 1);
  EXPECT_EQ(r.workers_after_op(), 0);  // one thread: no pool at all
  GN_OK_OR_FAIL(gn_runtime_set_num_threads(r.rt, 2));
  EXPECT_EQ(gn_runtime_num_threads(r.rt), 2);
  EXPECT_EQ(r.workers_after_op(), 1);
  char buf[16];
  EXPECT_EQ(gn_runtime_get_option(r.rt, "num_threads", buf, sizeof buf), 1);
  EXPECT_STREQ(buf, "2");
  GN_OK_OR_FAIL(gn_runtime_set_num_threads(r.rt, 0));  // the default again: the cores
  EXPECT_EQ(gn_runtime_num_threads(r.rt), affinity_cores());
  // A value the backend cannot use is refused with its reason, and changes nothing.
  gn_status* st = gn_runtime_set_option(r.rt, "num_threads", "many");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st), GN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gn_status_message(st)).find("'many'"), std::string::npos) << gn_status_message(st);
  gn_status_free(st);
  EXPECT_EQ(gn_runtime_num_threads(r.rt), affinity_cores());
  // Keys no plugin reads are kept and read back.
  GN_OK_OR_FAIL(gn_runtime_set_option(r.rt, "my_key", "v"));
  EXPECT_EQ(gn_runtime_get_option(r.rt, "my_key", buf, sizeof buf), 1);
  EXPECT_STREQ(buf, "v");
  EXPECT_EQ(gn_runtime_get_option(r.rt, "absent", buf, sizeof buf), 0);
  EXPECT_STREQ(buf, "");
}

TEST(CpuThreads, AForkedChildGetsAPoolOfItsOwn) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env(nullptr, "2");
  ThreadRt r(nullptr);
  ASSERT_EQ(r.workers_after_op(), 1);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The parent's worker did not come along: a new one serves the child, and the
    // child's runtime shuts down (joining it) without touching the parent's.
    const int workers = r.workers_after_op();
    gn_runtime_destroy(r.rt);
    _exit(workers == 1 ? 0 : 10 + workers);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 + the child's workers";
  EXPECT_EQ(r.workers_after_op(), 1);
}

TEST(CpuThreads, PooledResultsEqualOneThread) {
  OPC_REQUIRE_SUITE();
  ThreadEnv env(nullptr, nullptr);
  ThreadRt r(nullptr);
  // matmul (blocks over N, then M), a long exp (blocks of oneDNN eltwise) and a reduction.
  auto run = [&](int threads) {
    EXPECT_EQ(gn_runtime_set_num_threads(r.rt, threads), nullptr);
    std::vector<std::vector<uint32_t>> outs;
    for (auto [m, k, n] : {std::array<int64_t, 3>{4, 300, 1000}, std::array<int64_t, 3>{600, 300, 40}}) {
      std::vector<float> a((size_t)(m * k)), b((size_t)(k * n));
      for (size_t i = 0; i < a.size(); ++i) a[i] = (float)std::sin(0.37 * (double)i);
      for (size_t i = 0; i < b.size(); ++i) b[i] = (float)std::cos(0.11 * (double)i);
      gn_tensor *ta = nullptr, *tb = nullptr, *y = nullptr;
      const int64_t sa[] = {m, k}, sb[] = {k, n};
      EXPECT_EQ(gn_tensor_from_host(r.rt, a.data(), sa, 2, GN_F32, r.dev, &ta), nullptr);
      EXPECT_EQ(gn_tensor_from_host(r.rt, b.data(), sb, 2, GN_F32, r.dev, &tb), nullptr);
      const gn_op* op = nullptr;
      EXPECT_EQ(gn_op_find(r.rt, "matmul", &op), nullptr);
      gn_tensor* ins[] = {ta, tb};
      EXPECT_EQ(gn_op_call(r.rt, op, ins, 2, nullptr, 0, &y, 1), nullptr);
      std::vector<uint32_t> host((size_t)(m * n));
      EXPECT_EQ(gn_tensor_to_host(y, host.data(), host.size() * 4), nullptr);
      outs.push_back(host);
      gn_tensor_release(ta);
      gn_tensor_release(tb);
      gn_tensor_release(y);
    }
    std::vector<float> x(1 << 18);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::sin(0.001 * (double)i);
    const int64_t sx[] = {(int64_t)x.size()};
    for (const char* name : {"exp", "sum"}) {
      gn_tensor *t = nullptr, *y = nullptr;
      EXPECT_EQ(gn_tensor_from_host(r.rt, x.data(), sx, 1, GN_F32, r.dev, &t), nullptr);
      const gn_op* op = nullptr;
      EXPECT_EQ(gn_op_find(r.rt, name, &op), nullptr);
      EXPECT_EQ(gn_op_call(r.rt, op, &t, 1, nullptr, 0, &y, 1), nullptr);
      std::vector<uint32_t> host((size_t)gn_tensor_numel(y));
      EXPECT_EQ(gn_tensor_to_host(y, host.data(), host.size() * 4), nullptr);
      outs.push_back(host);
      gn_tensor_release(t);
      gn_tensor_release(y);
    }
    return outs;
  };
  const auto one = run(1);
  for (int threads : {2, 3, 7}) EXPECT_EQ(run(threads), one) << threads << " threads";
}

TEST(CpuThreads, MalformedValuesMeanTheDefault) {
  OPC_REQUIRE_SUITE();
  for (const char* bad : {"0", "-2", "two", "4x", ""}) {
    ThreadEnv env(bad, bad);
    ThreadRt r(nullptr);
    EXPECT_NE(r.name().find(threads_text(affinity_cores())), std::string::npos) << "'" << bad << "': " << r.name();
  }
}

}  // namespace
