// rng_memory_test.cpp - Generator, rng states, ForkRng, random helpers,
// memory statistics and the profiler guard.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common.h"
#include "genesis/memory.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"

using namespace genesis;

namespace {
class Rng : public ::testing::Test {
 protected:
  void SetUp() override { iotest::init_runtime(); }
};
}  // namespace

TEST_F(Rng, GeneratorIsReproducibleAndPrivate) {
  manual_seed(3);
  const RngState global = get_rng_state();
  Generator g(123);
  EXPECT_EQ(g.initial_seed(), 123u);
  const auto a = rand({5}, g).tolist();
  EXPECT_GT(g.offset(), 0u);
  g.manual_seed(123);
  EXPECT_EQ(g.offset(), 0u);
  EXPECT_EQ(rand({5}, g).tolist(), a);
  EXPECT_EQ(get_rng_state(), global);  // the default generator did not move
  Generator h = g;                     // copies state
  EXPECT_EQ(randn({4}, g).tolist(), randn({4}, h).tolist());
  const RngState s = g.get_state();
  const auto r1 = randint(0, 10, {20}, g).tolist();
  g.set_state(s);
  EXPECT_EQ(randint(0, 10, {20}, g).tolist(), r1);
  for (double v : r1) EXPECT_TRUE(v >= 0 && v < 10);
  EXPECT_EQ(Generator().initial_seed(), Generator::kDefaultSeed);
}

TEST_F(Rng, DefaultStateSaveRestoreAndFork) {
  manual_seed(42);
  const RngState s = get_rng_state();
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.offset, 0u);
  const auto a = rand({8}).tolist();
  EXPECT_NE(get_rng_state(), s);
  set_rng_state(s);
  EXPECT_EQ(rand({8}).tolist(), a);
  const RngState before = get_rng_state();
  {
    ForkRng fork;
    manual_seed(999);
    (void)randn({16});
  }
  EXPECT_EQ(get_rng_state(), before);
  const auto all = get_all_rng_states();
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(all[0].device == Device("cpu"));
  manual_seed(7, Device("cpu"));
  EXPECT_EQ(get_rng_state().seed, 7u);
  set_all_rng_states(all);
  EXPECT_EQ(get_rng_state(), all[0]);
}

TEST_F(Rng, RandpermBernoulliDropout) {
  Generator g(5);
  const auto p = randperm(1000, g).tolist();
  std::vector<double> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_NE(p, sorted);
  g.manual_seed(5);
  EXPECT_EQ(randperm(1000, g).tolist(), p);
  EXPECT_EQ(randperm(0).numel(), 0);

  Tensor x = ones({1000});
  EXPECT_EQ(bernoulli(x, 0.0, &g).sum().item<double>(), 0);
  EXPECT_EQ(bernoulli(x, 1.0, &g).sum().item<double>(), 1000);
  const double frac = bernoulli(x, 0.3, &g).sum().item<double>() / 1000;
  EXPECT_NEAR(frac, 0.3, 0.06);
  Tensor y = dropout(x, 0.5, true, &g);
  for (double v : y.tolist()) EXPECT_TRUE(v == 0 || v == 2) << v;
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  g.manual_seed(1);
  const auto d1 = dropout(x, 0.5, true, &g).tolist();
  g.manual_seed(1);
  EXPECT_EQ(dropout(x, 0.5, true, &g).tolist(), d1);
  // Gradients flow through the mask.
  Tensor w = ones({10}).requires_grad_();
  g.manual_seed(2);
  Tensor out = dropout(w, 0.5, true, &g);
  out.sum().backward();
  EXPECT_EQ(w.grad().tolist(), out.detach().tolist());
  EXPECT_THROW(dropout(x, 1.5), Error);
}

TEST_F(Rng, MemoryStats) {
  const Device cpu("cpu");
  const MemoryStats s0 = memory_stats(cpu);
  EXPECT_GE(s0.reserved, s0.allocated);
  EXPECT_GE(s0.peak_allocated, s0.allocated);
  Tensor big = zeros({1 << 20});  // 4 MB
  const uint64_t a1 = memory_allocated(cpu);
  if (s0.num_allocs == 0 && a1 == 0) GTEST_SKIP() << "this backend does not track allocations";
  EXPECT_GE(a1, s0.allocated + (4u << 20));
  EXPECT_GE(max_memory_allocated(cpu), a1);
  EXPECT_GE(memory_reserved(cpu), a1);
  big = Tensor();
  EXPECT_LE(memory_allocated(cpu), a1 - (4u << 20));
  reset_peak_memory_stats(cpu);
  EXPECT_EQ(max_memory_allocated(cpu), memory_allocated(cpu));
  EXPECT_NO_THROW(empty_cache(cpu));
  EXPECT_LE(memory_reserved(cpu), max_memory_reserved(cpu));
  EXPECT_NE(memory_summary(cpu).find("allocated"), std::string::npos);
  EXPECT_GE(memory_stats(cpu).cache_hit_rate(), 0.0);
}

TEST_F(Rng, ProfilerWritesChromeTrace) {
  const std::string dir = iotest::temp_dir(), path = dir + "/trace.json";
  {
    Profiler prof(path);
    EXPECT_TRUE(prof.running());
    Tensor a = ones({8, 8});
    Tensor b = matmul(a, a) + a;
    (void)b.sum();
  }
  const nlohmann::json j = nlohmann::json::parse(iotest::read_file(path));
  const nlohmann::json& ev = j.is_array() ? j : j.at("traceEvents");
  bool saw_matmul = false;
  for (const auto& e : ev) saw_matmul = saw_matmul || e.value("name", "").find("matmul") != std::string::npos;
  EXPECT_TRUE(saw_matmul) << j.dump().substr(0, 400);
  const std::string table = profiler_summary();
  EXPECT_NE(table.find("matmul"), std::string::npos) << table;
  Profiler p2;
  (void)ones({2}).sum();
  p2.stop();
  EXPECT_FALSE(p2.running());
  EXPECT_NE(p2.summary().find("sum"), std::string::npos) << p2.summary();
  p2.export_chrome_trace(dir + "/t2.json");
  EXPECT_FALSE(iotest::read_file(dir + "/t2.json").empty());
}

TEST_F(Rng, GeneratorMoves) {
  Generator a(11);
  const auto x = rand({3}, a).tolist();
  Generator b(std::move(a));
  Generator c(1);
  c = std::move(b);
  c.manual_seed(11);
  EXPECT_EQ(rand({3}, c).tolist(), x);
}
