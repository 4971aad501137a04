// paged_test.cpp - F::paged_kv_write_ and F::paged_attention through the frontend: a prompt and
// a decode step written into shuffled blocks of a float64 pool and attended, against
// F::scaled_dot_product_attention on the same keys and values held contiguously.
#include <cmath>

#include "common.h"

namespace {

using namespace nn_test;
namespace F = genesis::nn::functional;

// Largest |a - b| over all elements (same shapes).
double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  return (a - b).abs().max().item<double>();
}

TEST(NnPaged, WriteThenAttendMatchesContiguousAttention) {
  const int64_t Hq = 4, Hkv = 2, D = 8, BS = 4, NB = 6, P = 7;
  const std::vector<int64_t> blocks = {4, 1};  // positions 0..3 in block 4, 4..7 in block 1
  auto slots_of = [&](int64_t from, int64_t n) {
    std::vector<int64_t> s;
    for (int64_t p = from; p < from + n; ++p) s.push_back(blocks[(size_t)(p / BS)] * BS + p % BS);
    return genesis::tensor(s, {n});
  };
  Tensor pool = genesis::zeros({NB, 2 * Hkv, BS, D}, {.dtype = genesis::float64});
  Tensor tables = genesis::tensor(blocks, {1, 2}).to(genesis::int32);
  // prefill: 7 prompt tokens, causal
  Tensor k = genesis::randn({P, Hkv, D}, {.dtype = genesis::float64});
  Tensor v = genesis::randn({P, Hkv, D}, {.dtype = genesis::float64});
  F::paged_kv_write_(pool, F::cat({k, v}, 1), slots_of(0, P));
  Tensor q = genesis::randn({P, Hq, D}, {.dtype = genesis::float64});
  Tensor out = F::paged_attention(q, pool, tables, genesis::tensor(std::vector<int64_t>{P}, {1}),
                                  genesis::tensor(std::vector<int64_t>{0, P}, {2}));
  Tensor want = F::scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), {}, 0.0, true)
                    .transpose(0, 1);
  EXPECT_LT(max_diff(out, want), 1e-12);
  // decode: one more token at position 7 (the last row of block 1) attends to all 8
  Tensor k1 = genesis::randn({1, Hkv, D}, {.dtype = genesis::float64});
  Tensor v1 = genesis::randn({1, Hkv, D}, {.dtype = genesis::float64});
  F::paged_kv_write_(pool, F::cat({k1, v1}, 1), slots_of(P, 1));
  Tensor q1 = genesis::randn({1, Hq, D}, {.dtype = genesis::float64});
  Tensor out1 = F::paged_attention(q1, pool, tables, genesis::tensor(std::vector<int64_t>{P + 1}, {1}),
                                   genesis::tensor(std::vector<int64_t>{0, 1}, {2}), 0.25);
  Tensor kall = F::cat({k, k1}, 0), vall = F::cat({v, v1}, 0);
  Tensor want1 = F::scaled_dot_product_attention(q1.transpose(0, 1), kall.transpose(0, 1), vall.transpose(0, 1), {},
                                                 0.0, false, 0.25)
                     .transpose(0, 1);
  EXPECT_LT(max_diff(out1, want1), 1e-12);
  // block_tables must be int32: a genesis error, not a crash
  EXPECT_THROW(
      F::paged_attention(q1, pool, genesis::tensor(blocks, {1, 2}), genesis::tensor(std::vector<int64_t>{P + 1}, {1}),
                         genesis::tensor(std::vector<int64_t>{0, 1}, {2})),
      genesis::Error);
}

}  // namespace
