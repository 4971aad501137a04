// engine_test.cpp - the Qwen model's packed forward over a paged KV cache (against the plain forward) on the
// tiny fixtures (tests/fixtures/qwen).
//
// The reference plugin by default; GENESIS_SERVING_PLUGINS ("cpu,reference") and GENESIS_SERVING_DEVICE run the
// same checks on another backend.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;

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

}  // namespace
