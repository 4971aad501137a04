// tests/core/runtime/threading.cpp - the thread-safety contract of docs/threading.md, exactly:
// op calls, op lookups, tensor retain/release, random ops on the shared default generator, the
// profiler and memory statistics used from several threads on one runtime.  Each case compares
// what the threads got with the same work done on one thread (or with arithmetic), and the
// binary is also run under ThreadSanitizer (scripts/sanitize.sh), which fails on any data race.
// A binary of its own, so the TSan build compiles only the core, the reference plugin and this.
#include <atomic>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "util.h"

using namespace gt;

namespace {

constexpr int kThreads = 4;

// Runs body(thread index) on kThreads threads at once (released together) and joins them.
template <class F>
void on_threads(F body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      body(t);
    });
  for (auto& th : threads) th.join();
}

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = scale * (float)((i * 37) % 101 - 50);
  return v;
}

// The raw bytes of a tensor (compared bit for bit).
std::string bytes_of(gn_tensor* t) {
  std::string b((size_t)gn_tensor_numel(t) * 4, '\0');
  gn_status* st = gn_tensor_to_host(t, b.data(), b.size());
  if (st) {
    ADD_FAILURE() << gn_status_message(st);
    gn_status_free(st);
  }
  return b;
}

// One op call on fresh outputs; the result's bytes, or "error: <message>".
std::string run(gn_runtime* rt, const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> attrs = {}) {
  T out;
  gn_status* st = call1(rt, name, in, attrs, &out);
  if (st) return "error: " + take(st).msg;
  return bytes_of(out.t);
}

uint64_t allocated(gn_runtime* rt, gn_device dev) {
  gn_memory_stats s{};
  s.struct_size = sizeof s;
  gn_status* st = gn_memory_stats_get(rt, dev, &s);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return s.allocated;
}

}  // namespace

TEST(Threading, ConcurrentOpCallsOnOneRuntimeGiveTheSequentialBits) {
  Runtime r;
  const int64_t n = 48;
  const std::vector<float> av = ramp(n * n, 0.01f), bv = ramp(n * n, -0.02f);
  T a = make(r.rt, r.cpu, av, {n, n}, GN_F32), b = make(r.rt, r.cpu, bv, {n, n}, GN_F32);
  const int64_t dims[1] = {1};
  // Every thread reads the same input tensors.
  auto work = [&] {
    return std::vector<std::string>{run(r.rt, "add", {a.t, b.t}), run(r.rt, "matmul", {a.t, b.t}),
                                    run(r.rt, "softmax", {a.t}, {gn_attr_int(1)}),
                                    run(r.rt, "sum", {b.t}, {gn_attr_ints(dims, 1)})};
  };
  const std::vector<std::string> expected = work();
  // add is checked against host arithmetic too (one f32 rounding, as here).
  std::vector<float> sum_ab(av.size());
  for (size_t i = 0; i < av.size(); ++i) sum_ab[i] = av[i] + bv[i];
  ASSERT_EQ(expected[0], std::string(reinterpret_cast<const char*>(sum_ab.data()), sum_ab.size() * 4));
  for (const std::string& e : expected) ASSERT_NE(e.rfind("error: ", 0), 0u) << e;

  const uint64_t before = allocated(r.rt, r.cpu);
  std::atomic<int> mismatches{0};
  on_threads([&](int) {
    for (int rep = 0; rep < 20; ++rep)
      if (work() != expected) mismatches.fetch_add(1);
  });
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(allocated(r.rt, r.cpu), before);  // every output of every thread was freed
}

TEST(Threading, OpLookupsAndErrorsFromSeveralThreads) {
  Runtime r;
  const gn_op* add = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "add", &add));
  T a = make(r.rt, r.cpu, ramp(6, 1.0f), {2, 3}, GN_F32), c = make(r.rt, r.cpu, ramp(4, 1.0f), {4}, GN_F32);
  std::atomic<int> wrong{0};
  on_threads([&](int) {
    for (int rep = 0; rep < 200; ++rep) {
      const gn_op* op = nullptr;
      gn_status* st = gn_op_find(r.rt, "add", &op);
      if (st || op != add) wrong.fetch_add(1);
      gn_status_free(st);
      // A failing call on one thread leaves the others alone; its message is its own.
      T out;
      Err e = take(call1(r.rt, "add", {a.t, c.t}, {}, &out));
      if (e.code != GN_ERR_SHAPE || e.msg.find("(2, 3) and (4)") == std::string::npos) wrong.fetch_add(1);
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threading, RetainAndReleaseOfOneTensorFromSeveralThreads) {
  Runtime r;
  const uint64_t before = allocated(r.rt, r.cpu);
  gn_tensor* t = nullptr;
  const std::vector<float> v = ramp(1000, 0.5f);
  const int64_t shape[1] = {1000};
  GN_OK_OR_FAIL(gn_tensor_from_host(r.rt, v.data(), shape, 1, GN_F32, r.cpu, &t));
  on_threads([&](int) {
    for (int rep = 0; rep < 5000; ++rep) {
      gn_tensor_retain(t);
      gn_tensor* view = nullptr;  // views share (and count) the storage
      const int64_t s[2] = {10, 100};
      gn_status* st = gn_tensor_view_as(t, s, 2, &view);
      gn_status_free(st);
      gn_tensor_release(view);
      gn_tensor_release(t);
    }
  });
  EXPECT_EQ(bytes_of(t), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  gn_tensor_release(t);
  EXPECT_EQ(allocated(r.rt, r.cpu), before);  // the last release freed the storage
}

TEST(Threading, RandomCallsFromSeveralThreadsDrawDisjointCounterRanges) {
  // Each call claims numel (a multiple of 4) counters of the shared default generator atomically,
  // so the threads' draws are the sequential draws in some order: none repeated, none lost.
  constexpr int kCalls = 16;
  const int64_t shape[1] = {256};
  auto draw = [&](gn_runtime* rt, gn_device dev) {
    return run(rt, "rand", {}, {gn_attr_ints(shape, 1), gn_attr_int(GN_F32), gn_attr_device(dev)});
  };
  std::map<std::string, int> sequential;
  {
    Runtime s;
    gn_rng_manual_seed(s.rt, 1234);
    for (int i = 0; i < kThreads * kCalls; ++i) sequential[draw(s.rt, s.cpu)]++;
  }
  ASSERT_EQ(sequential.size(), size_t(kThreads * kCalls));  // distinct chunks

  Runtime r;
  gn_rng_manual_seed(r.rt, 1234);
  std::vector<std::vector<std::string>> got(kThreads);
  on_threads([&](int t) {
    for (int i = 0; i < kCalls; ++i) got[(size_t)t].push_back(draw(r.rt, r.cpu));
  });
  std::map<std::string, int> concurrent;
  for (const auto& g : got)
    for (const std::string& chunk : g) concurrent[chunk]++;
  EXPECT_TRUE(concurrent == sequential);
  uint64_t seed = 0, offset = 0;
  GN_OK_OR_FAIL(gn_rng_get_state(r.rt, r.cpu, &seed, &offset));
  EXPECT_EQ(seed, 1234u);
  EXPECT_EQ(offset, uint64_t(kThreads * kCalls * 256));
}

TEST(Threading, TheProfilerRecordsEveryConcurrentCall) {
  Runtime r;
  T a = make(r.rt, r.cpu, ramp(64, 1.0f), {8, 8}, GN_F32);
  GN_OK_OR_FAIL(gn_profiler_start(r.rt));
  constexpr int kCalls = 100;
  on_threads([&](int) {
    for (int i = 0; i < kCalls; ++i) run(r.rt, "neg", {a.t});
  });
  GN_OK_OR_FAIL(gn_profiler_stop(r.rt));
  size_t needed = 0;
  GN_OK_OR_FAIL(gn_profiler_summary(r.rt, nullptr, 0, &needed));
  std::string table(needed, '\0');
  GN_OK_OR_FAIL(gn_profiler_summary(r.rt, table.data(), table.size(), nullptr));
  // The row "neg <calls> ...": one event per call of every thread.
  std::istringstream lines(table.c_str());
  std::string line;
  long long calls = -1;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (name == "neg") words >> calls;
  }
  EXPECT_EQ(calls, kThreads * kCalls) << table;
}
