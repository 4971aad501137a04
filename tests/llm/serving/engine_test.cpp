// engine_test.cpp - the Qwen model's packed forward over a paged KV cache (against the plain forward) and the
// serving engine over it (against models::generate on each prompt alone) on the tiny fixtures
// (tests/fixtures/qwen).
//
// The reference plugin by default; GENESIS_SERVING_PLUGINS ("cpu,reference") and GENESIS_SERVING_DEVICE run the
// same checks on another backend.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/serving/engine.hpp"
#include "genesis/serving/llm.hpp"

#include "test_common.h"
#include "../test_files.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;
namespace S = genesis::serving;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_SERVING", "serving test");
const Device& dev() { return g_backend.device(); }

std::string fixture(const std::string& name) {
  return std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/qwen/" + name;
}

std::vector<double> host(const Tensor& t) { return t.to(Device("cpu")).to(DType::f64).tolist(); }

Tensor i64(const std::vector<int64_t>& v) {
  return genesis::tensor(v, {static_cast<int64_t>(v.size())}, {.device = dev()});
}

struct PagedCase {
  const char* fixture;
  bool f64;  // float64 (the module converted: separate projections) or float32 as loaded (fused projections)
};

class PagedForward : public ::testing::TestWithParam<PagedCase> {};

// Three sequences computed in two packed passes (chunked prompts, then a decode and a new prompt in one pass),
// their blocks scattered over the pool: every row's logits equal the plain forward's at that position (float64).
TEST_P(PagedForward, MatchesThePlainForward) {
  const PagedCase pc = GetParam();
  auto model = M::QwenForCausalLM::from_pretrained(fixture(pc.fixture), {.device = dev(), .dtype = DType::f32});
  const DType dt = pc.f64 ? DType::f64 : DType::f32;
  if (pc.f64) model->to(DType::f64);
  // float64: to 1e-10; float32 (other summation orders than the plain forward's): to 1e-5 of the largest logit.
  const double tol = pc.f64 ? 1e-10 : 1e-5;
  const int64_t BS = 4, V = model->config.vocab_size;
  const std::vector<std::vector<int64_t>> seqs = {{5, 17, 99, 3, 8, 250, 31}, {400, 2, 7, 8}, {42, 1, 2, 3, 4, 5}};
  const std::vector<std::vector<int32_t>> blocks = {{5, 2}, {7}, {0, 9}};
  // Pass 1: seq 0 positions [0, 5), seq 1 [0, 3). Pass 2: seq 0 [5, 7), seq 1 [3, 4), seq 2 [0, 6).
  M::PagedKVCache cache = M::PagedKVCache::allocate(model->config, 12, BS, dev(), dt);
  ASSERT_EQ(cache.pools.size(), static_cast<size_t>(model->config.num_hidden_layers));
  EXPECT_EQ(cache.pools[0].shape(),
            (std::vector<int64_t>{12, 2 * model->config.num_key_value_heads, BS, model->config.head_dim}));
  std::vector<std::vector<double>> want;  // full forward logits per sequence, (L, V) flattened
  {
    genesis::NoGradGuard ng;
    for (const auto& s : seqs) {
      const int64_t L = static_cast<int64_t>(s.size());
      want.push_back(host(model->forward(genesis::tensor(s, {1, L}, {.device = dev()}))));
    }
  }
  const std::vector<std::vector<std::pair<int64_t, int64_t>>> plan = {{{0, 5}, {0, 3}}, {{5, 7}, {3, 4}, {0, 6}}};
  for (const auto& pass : plan) {
    std::vector<int64_t> ids, pos, slots, lens, qs = {0};
    const int64_t B = static_cast<int64_t>(pass.size());
    std::vector<int64_t> tables(static_cast<size_t>(B * 2), 0);
    for (int64_t b = 0; b < B; ++b) {
      const auto [lo, hi] = pass[static_cast<size_t>(b)];
      const auto& bl = blocks[static_cast<size_t>(b)];
      for (int64_t p = lo; p < hi; ++p) {
        ids.push_back(seqs[static_cast<size_t>(b)][static_cast<size_t>(p)]);
        pos.push_back(p);
        slots.push_back(bl[static_cast<size_t>(p / BS)] * BS + p % BS);
      }
      for (size_t j = 0; j < bl.size(); ++j) tables[static_cast<size_t>(b) * 2 + j] = bl[j];
      lens.push_back(hi);
      qs.push_back(qs.back() + hi - lo);
    }
    const int64_t T = static_cast<int64_t>(ids.size());
    M::PagedBatch batch;
    batch.cache = &cache;
    batch.slots = i64(slots);
    batch.block_tables = genesis::tensor(tables, {B, 2}, {.device = dev()}).to(DType::i32);
    batch.seq_lens = i64(lens);
    batch.query_start = i64(qs);
    std::vector<int64_t> rows(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) rows[static_cast<size_t>(t)] = T - 1 - t;  // every row, reversed
    const Tensor lg =
        model->forward_paged(genesis::tensor(ids, {1, T}, {.device = dev()}), i64(pos), batch, i64(rows), 8);
    ASSERT_EQ(lg.shape(), (std::vector<int64_t>{T, V}));
    const std::vector<double> got = host(lg);
    double worst = 0, scale = 0;
    for (int64_t r = 0; r < T; ++r) {
      const int64_t t = rows[static_cast<size_t>(r)];
      int64_t b = 0;
      while (qs[static_cast<size_t>(b + 1)] <= t) ++b;
      const int64_t p = pos[static_cast<size_t>(t)];
      for (int64_t v = 0; v < V; ++v) {
        const double w = want[static_cast<size_t>(b)][static_cast<size_t>(p * V + v)];
        worst = std::max(worst, std::fabs(got[static_cast<size_t>(r * V + v)] - w));
        scale = std::max(scale, std::fabs(w));
      }
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LT(worst, tol * std::max(1.0, scale)) << pc.fixture;
  }
  // The ids may also come as (T); the last row of sequence 2 again (its cache now holds every position).
  M::PagedBatch one;
  one.cache = &cache;
  one.slots = i64({-1});  // padding: nothing written
  one.block_tables = genesis::tensor(std::vector<int64_t>{0, 9}, {1, 2}, {.device = dev()}).to(DType::i32);
  one.seq_lens = i64({6});
  one.query_start = i64({0, 1});
  const std::vector<double> last = host(model->forward_paged(i64({5}), i64({5}), one, i64({0}), 6));
  for (int64_t v = 0; v < V; ++v)
    EXPECT_NEAR(last[static_cast<size_t>(v)], want[2][static_cast<size_t>(5 * V + v)], tol * 10);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PagedForward,
                         ::testing::Values(PagedCase{"qwen2-tiny", false}, PagedCase{"qwen2-tiny", true},
                                           PagedCase{"qwen3-tiny", false}, PagedCase{"qwen3-tiny", true}));

TEST(PagedKVCache, SizesAndBlockCopies) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture("qwen2-tiny"), {.device = dev(), .dtype = DType::f32});
  const M::QwenConfig& c = model->config;
  const int64_t per = c.num_hidden_layers * 2 * c.num_key_value_heads * 16 * c.head_dim * 4;
  EXPECT_EQ(M::PagedKVCache::block_bytes(c, 16, DType::f32), per);
  EXPECT_EQ(M::PagedKVCache::blocks_for_bytes(c, 16, DType::f32, 10 * per + per - 1), 10);
  EXPECT_EQ(M::PagedKVCache::blocks_for_bytes(c, 16, DType::bf16, 10 * per), 20);
  EXPECT_THROW(M::PagedKVCache::allocate(c, 0, 16, dev(), DType::f32), genesis::Error);
  EXPECT_THROW(M::PagedKVCache::blocks_for_free_memory(c, 16, DType::f32, dev(), 1.5), genesis::Error);
  if (dev().type() == "cpu") {  // host memory needs a byte budget; an engine without one is refused
    EXPECT_THROW(M::PagedKVCache::blocks_for_free_memory(c, 16, DType::f32, dev(), 0.5), genesis::Error);
    EXPECT_THROW({ S::Engine e(*model, S::EngineConfig{}); }, genesis::Error);
  } else {
    EXPECT_GT(M::PagedKVCache::blocks_for_free_memory(c, 16, DType::f32, dev(), 0.01), 0);
  }
  M::PagedKVCache cache = M::PagedKVCache::allocate(c, 3, 2, dev(), DType::f32);
  cache.pools[1].select(0, 0).fill_(2.5);
  cache.copy_block(0, 2);
  const std::vector<double> b2 = host(cache.pools[1].select(0, 2)), b1 = host(cache.pools[1].select(0, 1));
  for (double x : b2) EXPECT_EQ(x, 2.5);
  for (double x : b1) EXPECT_EQ(x, 0.0);
  EXPECT_THROW(cache.copy_block(0, 3), genesis::Error);
  // Bad shapes are refused with errors, never a crash.
  M::PagedBatch batch;
  batch.cache = &cache;
  EXPECT_THROW(model->forward_paged(i64({1, 2}), i64({0}), batch, i64({0}), 4), genesis::Error);
  M::PagedBatch empty;
  EXPECT_THROW(model->forward_paged(i64({1}), i64({0}), empty, i64({0}), 4), genesis::Error);
}

// ---------------------------------------------------------------- engine

// What the callbacks saw: per request, per sample, the tokens and the finish reason (thread-safe).
struct Collector {
  struct Out {
    std::vector<std::vector<int64_t>> tokens;
    std::vector<std::string> reasons;
    std::vector<std::vector<S::TokenEvent>> events;
    bool finished = false;
  };
  std::mutex mu;
  std::map<int64_t, Out> out;
  int64_t finished = 0;
  S::EventCallback callback() {
    return [this](const S::TokenEvent& e) {
      std::lock_guard<std::mutex> lk(mu);
      Out& o = out[e.request];
      const size_t k = static_cast<size_t>(e.sample);
      if (o.tokens.size() <= k) {
        o.tokens.resize(k + 1);
        o.reasons.resize(k + 1);
        o.events.resize(k + 1);
      }
      EXPECT_TRUE(o.reasons[k].empty()) << "an event after sample " << k << " of request " << e.request << " ended";
      if (e.token >= 0) o.tokens[k].push_back(e.token);
      o.events[k].push_back(e);
      if (e.finished) o.reasons[k] = e.finish_reason;
      if (e.request_finished) {
        EXPECT_FALSE(o.finished);
        o.finished = true;
        ++finished;
      }
    };
  }
};

std::vector<int64_t> random_prompt(std::mt19937& rng, int64_t len, int64_t V) {
  std::vector<int64_t> p(static_cast<size_t>(len));
  for (auto& x : p) x = static_cast<int64_t>(rng() % static_cast<uint32_t>(V));
  return p;
}

// Every engine-held container empty and every block back (free or cached for prefix reuse).
void expect_idle(const S::Engine& e) {
  const S::EngineStats s = e.stats();
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.blocks_used, 0);
  EXPECT_EQ(s.blocks_free + s.blocks_cached, s.blocks_total);
  EXPECT_EQ(s.tracked_requests, 0);
  EXPECT_EQ(s.tracked_sequences, 0);
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ =
        M::QwenForCausalLM::from_pretrained(fixture("qwen2-tiny"), {.device = dev(), .dtype = DType::f32}).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static M::GenerationConfig greedy(int64_t max_new) {
    M::GenerationConfig g;
    g.max_new_tokens = max_new;
    g.ignore_eos = true;
    return g;
  }
  static std::vector<int64_t> alone(const std::vector<int64_t>& prompt, const M::GenerationConfig& g) {
    return M::generate(*model_, {prompt}, g).tokens[0];
  }
  static M::QwenForCausalLM* model_;
};
M::QwenForCausalLM* EngineTest::model_ = nullptr;

// (a) 64 requests of mixed prompt lengths and output lengths, submitted at random steps, through chunked prompts
// and small blocks: each request's greedy tokens equal models::generate on its prompt alone; (g) afterwards
// every block and every engine-held container is back to empty, also after a second wave.
TEST_F(EngineTest, RandomArrivalsMatchGenerateAlone) {
  std::mt19937 rng(1234);
  const int64_t V = model_->config.vocab_size;
  struct Job {
    std::vector<int64_t> prompt;
    M::GenerationConfig g;
    std::vector<int64_t> want;
    int64_t id = -1;
  };
  std::vector<Job> jobs(64);
  for (auto& j : jobs) {
    j.prompt = random_prompt(rng, 1 + static_cast<int64_t>(rng() % 40), V);
    j.g = greedy(1 + static_cast<int64_t>(rng() % 10));
    j.want = alone(j.prompt, j.g);
  }
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 160, .max_running = 12, .max_tokens_per_step = 48});
  Collector col;
  for (int wave = 0; wave < 2; ++wave) {
    size_t next = 0;
    while (next < jobs.size() || engine.has_work()) {
      for (int64_t add = static_cast<int64_t>(rng() % 5); add > 0 && next < jobs.size(); --add, ++next)
        jobs[next].id = engine.submit({.prompt = jobs[next].prompt, .sampling = jobs[next].g}, col.callback());
      engine.step();
    }
    for (const auto& j : jobs) {
      const Collector::Out& o = col.out[j.id];
      ASSERT_EQ(o.tokens.size(), 1u);
      EXPECT_EQ(o.tokens[0], j.want) << "request " << j.id << ", prompt of " << j.prompt.size();
      EXPECT_EQ(o.reasons[0], "length");
      EXPECT_TRUE(o.finished);
    }
    expect_idle(engine);
    std::reverse(jobs.begin(), jobs.end());  // the last prompts first: their blocks are still cached
  }
  const S::EngineStats s = engine.stats();
  EXPECT_EQ(s.requests_finished, 128);
  EXPECT_GT(s.prefix_hit_rate, 0.0);  // the second wave repeats the first one's prompts
}

// The same on a background thread, requests submitted from two threads at once.
TEST_F(EngineTest, BackgroundThreadServesConcurrentSubmits) {
  std::mt19937 rng(99);
  const int64_t V = model_->config.vocab_size;
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back(random_prompt(rng, 1 + static_cast<int64_t>(rng() % 20), V));
  const M::GenerationConfig g = greedy(5);
  S::Engine engine(*model_, {.block_size = 8, .num_blocks = 64});
  Collector col;
  engine.start();
  std::vector<int64_t> ids(prompts.size());
  auto submit_half = [&](size_t from) {
    for (size_t i = from; i < prompts.size(); i += 2)
      ids[i] = engine.submit({.prompt = prompts[i], .sampling = g}, col.callback());
  };
  std::thread a(submit_half, 0), b(submit_half, 1);
  a.join();
  b.join();
  engine.wait_idle();
  engine.stop();
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(col.out[ids[i]].tokens.at(0), alone(prompts[i], g)) << i;
  expect_idle(engine);
}

// A callback that throws on the background thread ends every request ("cancelled") with the message kept; the
// engine serves the next requests.
TEST_F(EngineTest, BackgroundFailureEndsRequestsAndRecovers) {
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 32});
  Collector col;
  auto inner = col.callback();
  const int64_t other = engine.submit({.prompt = {4, 5, 6}, .sampling = greedy(50)}, col.callback());
  engine.submit({.prompt = {1, 2}, .sampling = greedy(3)}, [&](const S::TokenEvent& e) {
    if (e.token >= 0 && !e.finished) throw std::runtime_error("callback failed");
    inner(e);
  });
  engine.start();
  engine.wait_idle();
  EXPECT_EQ(engine.stats().last_error, "callback failed");
  EXPECT_EQ(col.out[other].reasons.at(0), "cancelled");
  const int64_t next = engine.submit({.prompt = {4, 5, 6}, .sampling = greedy(4)}, col.callback());
  engine.wait_idle();
  engine.stop();
  EXPECT_EQ(col.out[next].tokens.at(0), alone({4, 5, 6}, greedy(4)));
  expect_idle(engine);
}

// (b) n = 4 samples with a seed equal 4 separate requests seeded seed, seed + 1, ... (and generate with those
// seeds); the samples differ from one another.
TEST_F(EngineTest, SamplesOfOnePromptEqualSeparateSeededRequests) {
  M::GenerationConfig g = greedy(12);
  g.temperature = 1.3;
  g.top_k = 40;
  g.top_p = 0.95;
  g.repetition_penalty = 1.1;
  g.seed = 21;
  const std::vector<int64_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46};
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 64});
  Collector col;
  const int64_t joint = engine.submit({.prompt = prompt, .sampling = g, .n = 4}, col.callback());
  engine.submit({.prompt = {7, 7, 7}, .sampling = greedy(9)}, col.callback());  // another request in the batch
  std::vector<int64_t> single(4);
  for (int64_t k = 0; k < 4; ++k) {
    M::GenerationConfig gk = g;
    gk.seed = g.seed + static_cast<uint64_t>(k);
    single[static_cast<size_t>(k)] = engine.submit({.prompt = prompt, .sampling = gk}, col.callback());
    engine.step();
  }
  engine.run_until_idle();
  const Collector::Out& o = col.out[joint];
  ASSERT_EQ(o.tokens.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    M::GenerationConfig gk = g;
    gk.seed = g.seed + k;
    EXPECT_EQ(o.tokens[k], col.out[single[k]].tokens.at(0)) << "sample " << k;
    EXPECT_EQ(o.tokens[k], alone(prompt, gk)) << "sample " << k;
    EXPECT_EQ(o.reasons[k], "length");
  }
  EXPECT_NE(o.tokens[0], o.tokens[1]);
  EXPECT_NE(o.tokens[2], o.tokens[3]);
  expect_idle(engine);
}

// (c) Prompts sharing a long prefix: the same tokens with and without prefix caching; hits only with it.
TEST_F(EngineTest, PrefixCachingChangesNothingButTheWork) {
  std::mt19937 rng(7);
  const int64_t V = model_->config.vocab_size;
  const std::vector<int64_t> prefix = random_prompt(rng, 21, V);
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> p = prefix;
    for (int64_t x : random_prompt(rng, i % 3, V)) p.push_back(x);
    prompts.push_back(p);
  }
  std::vector<std::vector<int64_t>> got[2];
  S::EngineStats stats[2];
  for (int cached = 0; cached < 2; ++cached) {
    S::Engine engine(*model_, {.block_size = 4, .num_blocks = 96, .prefix_caching = cached == 1});
    Collector col;
    std::vector<int64_t> ids;
    for (const auto& p : prompts) {
      ids.push_back(engine.submit({.prompt = p, .sampling = greedy(6)}, col.callback()));
      engine.step();
      engine.step();
    }
    engine.run_until_idle();
    for (int64_t id : ids) got[cached].push_back(col.out[id].tokens.at(0));
    stats[cached] = engine.stats();
    expect_idle(engine);
  }
  EXPECT_EQ(got[0], got[1]);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[1][i], alone(prompts[i], greedy(6))) << i;
  EXPECT_EQ(stats[0].prefix_hit_rate, 0.0);
  EXPECT_GT(stats[1].prefix_hit_rate, 0.5);
  EXPECT_LT(stats[1].computed_tokens, stats[0].computed_tokens);
}

// (d) Cancelling half of 200 in-flight requests: their final events say "cancelled", the rest finish, and no
// block stays in use.
TEST_F(EngineTest, CancellingHalfReturnsEveryBlock) {
  std::mt19937 rng(5);
  const int64_t V = model_->config.vocab_size;
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 512, .max_running = 64, .max_tokens_per_step = 256});
  Collector col;
  std::vector<int64_t> ids;
  for (int i = 0; i < 200; ++i)
    ids.push_back(
        engine.submit({.prompt = random_prompt(rng, 1 + static_cast<int64_t>(rng() % 12), V), .sampling = greedy(6)},
                      col.callback()));
  for (int i = 0; i < 4; ++i) engine.step();
  EXPECT_GT(engine.stats().blocks_used, 0);
  for (size_t i = 0; i < ids.size(); i += 2) engine.cancel(ids[i]);
  engine.run_until_idle();
  int64_t cancelled = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Collector::Out& o = col.out[ids[i]];
    ASSERT_TRUE(o.finished) << i;
    if (i % 2 == 1) {
      EXPECT_EQ(o.reasons.at(0), "length");
    }
    cancelled += o.reasons.at(0) == "cancelled";
  }
  EXPECT_GT(cancelled, 50);  // some of the even ones may have finished before the cancel
  expect_idle(engine);
  engine.cancel(ids[0]);  // a finished id: ignored
  engine.cancel(12345);   // an unknown one too
  EXPECT_FALSE(engine.step());
}

// (e) A pool far too small for the batch: requests are preempted and recomputed, and every output is unchanged.
TEST_F(EngineTest, PreemptionLeavesOutputsUnchanged) {
  std::mt19937 rng(11);
  const int64_t V = model_->config.vocab_size;
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 10; ++i) prompts.push_back(random_prompt(rng, 6 + static_cast<int64_t>(rng() % 10), V));
  M::GenerationConfig g = greedy(12);
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 12});
  Collector col;
  std::vector<int64_t> ids;
  for (const auto& p : prompts) ids.push_back(engine.submit({.prompt = p, .sampling = g}, col.callback()));
  // Sampled requests too: their streams do not depend on preemption.
  M::GenerationConfig gs = g;
  gs.temperature = 0.8;
  gs.seed = 3;
  const int64_t sampled = engine.submit({.prompt = prompts[0], .sampling = gs}, col.callback());
  engine.run_until_idle();
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(col.out[ids[i]].tokens.at(0), alone(prompts[i], g)) << i;
  EXPECT_EQ(col.out[sampled].tokens.at(0), alone(prompts[0], gs));
  EXPECT_GT(engine.stats().preemptions, 0);
  expect_idle(engine);
  // A request that could never fit the pool is refused at once.
  EXPECT_THROW(engine.submit({.prompt = random_prompt(rng, 40, V), .sampling = greedy(10)}, col.callback()),
               genesis::Error);
}

// (f) A queue over its limit refuses cleanly; bad requests too; the engine keeps serving.
TEST_F(EngineTest, FullQueueAndBadRequestsAreRefused) {
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 32, .max_waiting = 3});
  Collector col;
  for (int i = 0; i < 3; ++i) engine.submit({.prompt = {1, 2, 3}, .sampling = greedy(2)}, col.callback());
  EXPECT_THROW(engine.submit({.prompt = {1, 2, 3}, .sampling = greedy(2)}, col.callback()), genesis::Error);
  EXPECT_THROW(engine.submit({.prompt = {}, .sampling = greedy(2)}, col.callback()), genesis::Error);
  EXPECT_THROW(engine.submit({.prompt = {model_->config.vocab_size}, .sampling = greedy(2)}, col.callback()),
               genesis::Error);
  EXPECT_THROW(engine.submit({.prompt = {1}, .sampling = greedy(2), .n = 0}, col.callback()), genesis::Error);
  EXPECT_THROW(engine.submit({.prompt = {1}, .sampling = greedy(2), .logprobs = 21}, col.callback()), genesis::Error);
  M::GenerationConfig bad = greedy(2);
  bad.top_p = 0;
  EXPECT_THROW(engine.submit({.prompt = {1}, .sampling = bad}, col.callback()), genesis::Error);
  engine.run_until_idle();
  EXPECT_EQ(col.finished, 3);
  const int64_t id = engine.submit({.prompt = {1, 2, 3}, .sampling = greedy(0)}, col.callback());
  engine.run_until_idle();
  EXPECT_EQ(col.out[id].reasons.at(0), "length");
  EXPECT_TRUE(col.out[id].tokens.at(0).empty());
  expect_idle(engine);
}

// Stop ids end a sample with "stop" (the stop token reported); logprobs are the model's log_softmax.
TEST_F(EngineTest, StopIdsAndLogprobs) {
  const std::vector<int64_t> prompt = {9, 8, 7, 6, 5};
  const std::vector<int64_t> free_run = alone(prompt, greedy(8));
  M::GenerationConfig g = greedy(8);
  g.stop_ids = {free_run[3]};
  S::Engine engine(*model_, {.block_size = 4, .num_blocks = 16});
  Collector col;
  const int64_t id = engine.submit({.prompt = prompt, .sampling = g, .logprobs = 5}, col.callback());
  engine.run_until_idle();
  const Collector::Out& o = col.out[id];
  const auto stop_at = std::find(free_run.begin(), free_run.end(), free_run[3]);
  EXPECT_EQ(o.tokens.at(0), std::vector<int64_t>(free_run.begin(), stop_at + 1));
  EXPECT_EQ(o.reasons.at(0), "stop");
  EXPECT_EQ(o.tokens.at(0), alone(prompt, g));
  // The first token's logprobs against the plain forward's log_softmax of the last prompt row.
  genesis::NoGradGuard ng;
  const Tensor lg =
      model_->forward(genesis::tensor(prompt, {1, 5}, {.device = dev()})).select(1, 4).to(DType::f64).log_softmax(-1);
  const std::vector<double> want = host(lg);
  const S::TokenEvent& e = o.events.at(0).at(0);
  ASSERT_EQ(e.top.size(), 5u);
  EXPECT_EQ(e.top[0].token, e.token);  // greedy: the most likely token
  EXPECT_NEAR(e.logprob, want[static_cast<size_t>(e.token)], 1e-5);
  for (size_t i = 0; i < e.top.size(); ++i) {
    EXPECT_NEAR(e.top[i].logprob, want[static_cast<size_t>(e.top[i].token)], 1e-5);
    if (i > 0) {
      EXPECT_GE(e.top[i - 1].logprob, e.top[i].logprob);
    }
  }
  // Stop strings through a decode function, as generate() applies them.
  M::GenerationConfig gs = greedy(8);
  gs.decode = [](const std::vector<int64_t>& t) {
    std::string text;
    for (int64_t x : t) {
      text += '<';
      text += std::to_string(x);
      text += '>';
    }
    return text;
  };
  gs.stop_strings = {gs.decode({free_run[2]})};
  const int64_t by_text = engine.submit({.prompt = prompt, .sampling = gs}, col.callback());
  // A callback may cancel its own request: nothing is reported after the final event.
  int64_t self = -1, seen = 0;
  self = engine.submit({.prompt = prompt, .sampling = greedy(8)}, [&](const S::TokenEvent& e) {
    if (++seen == 2) engine.cancel(self);
    col.callback()(e);
  });
  engine.run_until_idle();
  const auto stop2 = std::find(free_run.begin(), free_run.end(), free_run[2]);
  EXPECT_EQ(col.out[by_text].tokens.at(0), std::vector<int64_t>(free_run.begin(), stop2 + 1));
  EXPECT_EQ(col.out[by_text].reasons.at(0), "stop");
  EXPECT_EQ(col.out[by_text].tokens.at(0), alone(prompt, gs));
  EXPECT_EQ(col.out[self].reasons.at(0), "cancelled");
  EXPECT_LE(col.out[self].tokens.at(0).size(), 3u);
  std::vector<double> sorted = want;
  std::sort(sorted.rbegin(), sorted.rend());
  EXPECT_NEAR(e.top[4].logprob, sorted[4], 1e-5);
}

// ---------------------------------------------------------------- offline API

// A byte-level tokenizer.json over the fixture's 512 ids: the 256 bytes (GPT-2's byte-to-character map), the
// merge "a b", then added tokens <|end|> (special) and <tN> up to 511.
nlohmann::json byte_tokenizer_json() {
  nlohmann::json j = llm_test::small_tokenizer_json();
  auto utf8 = [](uint32_t c) {
    std::string s;
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else {
      s += static_cast<char>(0xC0 | (c >> 6));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
  };
  nlohmann::json vocab = nlohmann::json::object();
  uint32_t extra = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    vocab[utf8(keep ? b : 256 + extra++)] = b;
  }
  vocab["ab"] = 256;
  j["model"]["vocab"] = vocab;
  nlohmann::json added = nlohmann::json::array();
  for (int64_t id = 257; id < 512; ++id)
    added.push_back({{"id", id},
                     {"content", id == 257 ? std::string("<|end|>") : "<t" + std::to_string(id) + ">"},
                     {"special", id == 257},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false}});
  j["added_tokens"] = added;
  return j;
}

// The qwen2-tiny fixture with a byte-level tokenizer and a chat template beside it.
std::string model_folder_with_tokenizer() {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/genesis_llm_test_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(fixture("qwen2-tiny") + "/" + f, dir + "/" + f);
  std::ofstream(dir + "/tokenizer.json") << byte_tokenizer_json().dump();
  nlohmann::json cfg = {{"eos_token", "<|end|>"},
                        {"chat_template",
                         "{% for m in messages %}{{ m.role }}: {{ m.content }}<|end|>{% endfor %}"
                         "{% if add_generation_prompt %}assistant: {% endif %}"}};
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  return dir;
}

// Text prompts, id prompts and chats: outputs in input order, each equal to generate() on its prompt alone; n
// samples and logprobs per token.
TEST(LLM, GenerateAndChatMatchGenerateAlone) {
  const std::string dir = model_folder_with_tokenizer();
  S::LLM llm(dir, {.device = dev(), .dtype = DType::f32, .engine = {.block_size = 4, .num_blocks = 64}});
  ASSERT_NE(llm.tokenizer(), nullptr);
  const genesis::Tokenizer& tok = *llm.tokenizer();
  ASSERT_EQ(tok.vocab_size(), 512);
  EXPECT_EQ(tok.encode("ab ab", false), (std::vector<int64_t>{256, 32, 256}));
  S::SamplingParams p;
  p.max_new_tokens = 5;
  p.ignore_eos = true;
  auto alone = [&](const std::vector<int64_t>& prompt, const M::GenerationConfig& g) {
    return M::generate(llm.model(), {prompt}, g).tokens[0];
  };
  const std::vector<std::string> texts = {"ab ab", "a", "bbb a b ab"};
  const auto outs = llm.generate(texts, p);
  ASSERT_EQ(outs.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(outs[i].prompt, texts[i]);
    EXPECT_EQ(outs[i].prompt_token_ids, tok.encode(texts[i], false));
    ASSERT_EQ(outs[i].outputs.size(), 1u);
    EXPECT_EQ(outs[i].outputs[0].token_ids, alone(outs[i].prompt_token_ids, p)) << i;
    EXPECT_EQ(outs[i].outputs[0].text, tok.decode(outs[i].outputs[0].token_ids, true));
    EXPECT_EQ(outs[i].outputs[0].finish_reason, "length");
  }
  const std::vector<std::vector<int64_t>> ids = {{300, 301, 302}, {5}};
  const auto by_ids = llm.generate(ids, p);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(by_ids[i].outputs[0].token_ids, alone(ids[i], p)) << i;

  const std::vector<std::vector<genesis::ChatMessage>> convs = {{{"user", "ab"}}, {{"system", "b"}, {"user", "a a"}}};
  const auto replies = llm.chat(convs, p);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].prompt, "user: ab<|end|>assistant: ");
  for (size_t i = 0; i < convs.size(); ++i) {
    EXPECT_EQ(replies[i].prompt_token_ids, tok.encode(replies[i].prompt, false));
    EXPECT_EQ(replies[i].outputs[0].token_ids, alone(replies[i].prompt_token_ids, p)) << i;
  }

  S::SamplingParams ps = p;
  ps.n = 3;
  ps.logprobs = 2;
  ps.temperature = 1.0;
  ps.seed = 5;
  const auto sampled = llm.generate(std::vector<std::vector<int64_t>>{{1, 2, 3}}, ps);
  ASSERT_EQ(sampled[0].outputs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const S::CompletionOutput& c = sampled[0].outputs[k];
    EXPECT_EQ(c.index, static_cast<int64_t>(k));
    M::GenerationConfig g = ps;
    g.seed = ps.seed + k;
    EXPECT_EQ(c.token_ids, alone({1, 2, 3}, g)) << k;
    ASSERT_EQ(c.token_logprobs.size(), c.token_ids.size());
    ASSERT_EQ(c.top_logprobs.size(), c.token_ids.size());
    for (size_t t = 0; t < c.token_ids.size(); ++t) {
      ASSERT_EQ(c.top_logprobs[t].size(), 2u);
      EXPECT_LE(c.token_logprobs[t], c.top_logprobs[t][0].logprob);
      EXPECT_LT(c.token_logprobs[t], 0.0);
    }
  }
  // A bad prompt refuses the call and leaves nothing behind.
  EXPECT_THROW(llm.generate(std::vector<std::vector<int64_t>>{{1}, {}}, p), genesis::Error);
  expect_idle(llm.engine());
  std::filesystem::remove_all(dir);
}

// Every family (tests/fixtures/families: sliding windows of 8 positions, soft-capping, Gemma's scale and local
// rope, rope scaling, Qwen3-MoE) on the engine: prompts longer and shorter than the window, chunked and in small blocks, give
// the greedy tokens of models::generate on each prompt alone (whose attention is composed from tensor ops: an
// independent path to the paged op's window and soft-cap).
class FamilyEngine : public ::testing::TestWithParam<const char*> {};

TEST_P(FamilyEngine, GreedyMatchesGenerateAlone) {
  const std::string dir = std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/families/" + GetParam();
  auto model = M::QwenForCausalLM::from_pretrained(dir, {.device = dev(), .dtype = DType::f32});
  std::mt19937 rng(31);
  const int64_t V = model->config.vocab_size;
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t len : {3, 9, 17, 30, 5, 24}) prompts.push_back(random_prompt(rng, len, V));
  M::GenerationConfig g;
  g.max_new_tokens = 10;
  g.ignore_eos = true;
  S::Engine engine(*model, {.block_size = 4, .num_blocks = 96, .max_running = 4, .max_tokens_per_step = 16});
  Collector col;
  std::vector<int64_t> ids;
  for (const auto& p : prompts) ids.push_back(engine.submit({.prompt = p, .sampling = g}, col.callback()));
  engine.run_until_idle();
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int64_t> want = M::generate(*model, {prompts[i]}, g).tokens[0];
    ASSERT_EQ(col.out[ids[i]].tokens.size(), 1u);
    EXPECT_EQ(col.out[ids[i]].tokens[0], want) << GetParam() << ", prompt of " << prompts[i].size();
  }
  expect_idle(engine);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyEngine,
                         ::testing::Values("llama", "llama-yarn", "llama-linear", "mistral", "gemma2", "gemma3",
                                           "qwen3-moe"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
