// moe_test.cpp - the sparse MoE block (llm/src/models/moe.cpp) against a dense oracle in float64: every expert
// evaluated on every token, weighted by routing weights whose top-k mask is chosen on the host (ties: the lower
// expert id, as torch.topk), so the grouping, gather and index_add of the block are checked against plain
// arithmetic.  Values to 1e-10, gradients to 1e-10 against the oracle's backward and to 1e-8 against central
// finite differences; the load-balancing loss against the formula evaluated on the host.
//
// The reference plugin by default; GENESIS_MOE_PLUGINS ("cpu,reference", "cuda,reference") and GENESIS_MOE_DEVICE
// ("cuda") run the same checks on another backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <map>
#include <random>

#include "genesis/autograd.hpp"
#include "genesis/models/moe.hpp"
#include "genesis/nn/functional.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;
namespace F = genesis::nn::functional;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_MOE", "moe test");
const Device& dev() { return g_backend.device(); }

std::vector<double> host(const Tensor& t) { return t.to(Device("cpu")).to(DType::f64).tolist(); }

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

Tensor randn(const genesis::Shape& shape, std::mt19937_64& rng, double scale, DType dt = DType::f64) {
  std::normal_distribution<double> nd(0.0, scale);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = nd(rng);
  return genesis::tensor(v, shape, {.device = dev()}).to(dt);
}

// A block with normal(0, 0.4) weights drawn on the host (the same values on every backend).
std::shared_ptr<M::SparseMoeBlock> make_block(const M::MoeConfig& c, uint64_t seed, DType dt = DType::f64) {
  auto m = std::make_shared<M::SparseMoeBlock>(c, genesis::Options{.dtype = dt, .device = dev()});
  std::mt19937_64 rng(seed);
  genesis::NoGradGuard ng;
  for (auto& [name, p] : m->named_parameters()) p.copy_(randn(p.shape(), rng, 0.4, dt));
  return m;
}

// The host's top-k mask of probabilities p (N, E): the k largest per row, ties to the lower index.
Tensor topk_mask(const std::vector<double>& p, int64_t N, int64_t E, int64_t K) {
  std::vector<double> mask(static_cast<size_t>(N * E), 0.0);
  for (int64_t i = 0; i < N; ++i) {
    std::vector<int64_t> idx(static_cast<size_t>(E));
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = p.data() + i * E;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < K; ++j) mask[static_cast<size_t>(i * E + idx[static_cast<size_t>(j)])] = 1.0;
  }
  return genesis::tensor(mask, {N, E}, {.device = dev()});
}

// Every expert on every token, weighted by the masked (and maybe renormalised) softmax of the router.
Tensor dense_oracle(M::SparseMoeBlock& m, const Tensor& x) {
  const auto& c = m.config;
  const Tensor x2 = x.reshape({-1, c.hidden_size});
  const int64_t N = x2.size(0), E = c.num_experts;
  const Tensor ex = F::linear(x2, m.gate.weight).exp();
  const Tensor p = ex / ex.sum({-1}, true);
  Tensor w = p * topk_mask(host(p), N, E, c.num_experts_per_tok);
  if (c.norm_topk_prob) w = w / w.sum({-1}, true);
  Tensor out = genesis::zeros({N, c.hidden_size}, {.dtype = x.dtype(), .device = dev()});
  for (int64_t e = 0; e < E; ++e) {
    auto& ep = *m.experts[static_cast<size_t>(e)];
    const Tensor y =
        F::linear(F::silu(F::linear(x2, ep.gate_proj.weight)) * F::linear(x2, ep.up_proj.weight), ep.down_proj.weight);
    out = out + w.slice(1, e, e + 1) * y;
  }
  return out.reshape(x.shape());
}

std::vector<double> grad_or_zeros(const Tensor& p) {
  return p.grad().defined() ? host(p.grad()) : std::vector<double>(static_cast<size_t>(p.numel()), 0.0);
}

struct Case {
  const char* what;
  M::MoeConfig c;
};

class MoeDense : public ::testing::TestWithParam<Case> {};

// Forward values and every gradient (input and parameters) equal the dense oracle's.
TEST_P(MoeDense, ForwardAndBackwardMatchDenseOracle) {
  const M::MoeConfig c = GetParam().c;
  auto m = make_block(c, 11);
  std::mt19937_64 rng(5);
  const Tensor x0 = randn({3, 7, c.hidden_size}, rng, 1.0), r = randn({3, 7, c.hidden_size}, rng, 1.0);

  Tensor x = x0.detach().requires_grad_(true);
  auto [y, logits] = m->forward_with_router_logits(x);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(logits.shape(), (genesis::Shape{21, c.num_experts}));
  (y * r).sum().backward();
  std::vector<std::vector<double>> grads;
  for (auto& [name, p] : m->named_parameters()) grads.push_back(grad_or_zeros(p));
  const auto gx = host(x.grad());
  m->zero_grad();

  Tensor xo = x0.detach().requires_grad_(true);
  Tensor yo = dense_oracle(*m, xo);
  const auto want = host(yo);
  ASSERT_GT(max_abs(want), 0.1);
  EXPECT_LE(max_diff(host(y), want), 1e-10) << GetParam().what;
  (yo * r).sum().backward();
  EXPECT_LE(max_diff(gx, host(xo.grad())), 1e-10) << "input gradient";
  size_t i = 0;
  int nonzero = 0;
  for (auto& [name, p] : m->named_parameters()) {
    const auto go = grad_or_zeros(p);
    EXPECT_LE(max_diff(grads[i++], go), 1e-10 * std::max(1.0, max_abs(go))) << "grad of " << name;
    nonzero += max_abs(go) > 0;
  }
  EXPECT_GE(nonzero, 4) << "the router and some experts get gradients";
}

INSTANTIATE_TEST_SUITE_P(Configs, MoeDense,
                         ::testing::Values(Case{"8 experts top-2, norm_topk_prob", {16, 8, 2, 8, true}},
                                           Case{"8 experts top-2, no renormalisation", {16, 8, 2, 8, false}},
                                           Case{"5 experts top-3, no renormalisation", {12, 5, 3, 6, false}},
                                           Case{"top-1, norm_topk_prob (weights all 1)", {12, 4, 1, 6, true}},
                                           Case{"every expert chosen (k = E)", {12, 4, 4, 6, true}}),
                         [](const ::testing::TestParamInfo<Case>& i) { return "case" + std::to_string(i.index); });

// Inference over few (token, slot) pairs gathers each pair's expert weights (no host synchronisation); it equals
// the dense oracle as the grouped path does, for both routing rules; after Module::to() the weights are no longer
// slices of the stacked buffers and the grouped path serves.
TEST(Moe, GatheredInferencePathMatchesDenseOracle) {
  for (bool norm : {true, false}) {
    M::MoeConfig c{16, 8, 2, 8, norm};
    auto m = make_block(c, 11);
    EXPECT_TRUE(m->weights_stacked());
    std::mt19937_64 rng(5);
    const Tensor small = randn({1, 3, 16}, rng, 1.0), big = randn({3, 7, 16}, rng, 1.0);
    genesis::NoGradGuard ng;
    EXPECT_LE(max_diff(host(m->forward(small)), host(dense_oracle(*m, small))), 1e-10);  // 6 pairs <= 8 experts
    m->gathered_max_pairs = 1000;                                                        // every pair gathered
    const auto gathered = host(m->forward(big));
    m->gathered_max_pairs = 0;  // grouped per expert
    const auto grouped = host(m->forward(big)), want = host(dense_oracle(*m, big));
    EXPECT_LE(max_diff(gathered, want), 1e-10);
    EXPECT_LE(max_diff(grouped, want), 1e-10);
    m->to(DType::f32);
    EXPECT_FALSE(m->weights_stacked());
    m->gathered_max_pairs = -1;
    EXPECT_LE(max_diff(host(m->forward(small.to(DType::f32))), host(dense_oracle(*m, small.to(DType::f32)))), 1e-5);
  }
}

// The renormalisation matters: flipping norm_topk_prob changes the output (the oracle comparison can fail).
TEST(Moe, NormTopkProbChangesTheOutput) {
  M::MoeConfig c{16, 8, 2, 8, true};
  auto m = make_block(c, 11);
  std::mt19937_64 rng(5);
  const Tensor x = randn({2, 5, 16}, rng, 1.0);
  const auto a = host(m->forward(x));
  m->config.norm_topk_prob = false;
  const auto b = host(m->forward(x));
  EXPECT_GT(max_diff(a, b), 1e-3);
  EXPECT_LE(max_diff(b, host(dense_oracle(*m, x))), 1e-10);
}

// Central differences of sum(y * r) on a few entries of the input, the router and an expert's weights.
TEST(Moe, GradientsMatchFiniteDifferences) {
  M::MoeConfig c{10, 6, 2, 5, true};
  auto m = make_block(c, 3);
  std::mt19937_64 rng(9);
  Tensor x = randn({2, 4, 10}, rng, 1.0).requires_grad_(true);
  const Tensor r = randn({2, 4, 10}, rng, 1.0);
  (m->forward(x) * r).sum().backward();
  auto f = [&]() {
    genesis::NoGradGuard ng;
    return host((m->forward(x) * r).sum())[0];
  };
  const double eps = 1e-6;
  int checked = 0;
  auto check = [&](Tensor& t, const std::string& what) {
    const auto g = grad_or_zeros(t);
    Tensor flat = t.detach().reshape({-1});
    for (int64_t j : {int64_t{0}, t.numel() / 3, t.numel() - 1}) {
      const double v = host(flat.slice(0, j, j + 1))[0];
      genesis::NoGradGuard ng;
      flat.slice(0, j, j + 1).fill_(v + eps);
      const double fp = f();
      flat.slice(0, j, j + 1).fill_(v - eps);
      const double fm = f();
      flat.slice(0, j, j + 1).fill_(v);
      EXPECT_NEAR(g[static_cast<size_t>(j)], (fp - fm) / (2 * eps), 1e-8) << what << "[" << j << "]";
      ++checked;
    }
  };
  check(x, "x");
  check(m->gate.weight, "gate.weight");
  for (auto& e : m->experts) {
    if (!e->down_proj.weight.grad().defined()) continue;  // an expert no token chose
    check(e->gate_proj.weight, "gate_proj");
    check(e->up_proj.weight, "up_proj");
    check(e->down_proj.weight, "down_proj");
    break;
  }
  EXPECT_EQ(checked, 15);
}

// Ties go to the lower expert id (torch.topk's order): a zero router makes every expert equally likely, so the
// first k are chosen with weight 1/k (renormalised) or 1/E; two identical router rows tie in the same way.
TEST(Moe, TopkTiesPickTheLowerExpert) {
  for (bool norm : {true, false}) {
    M::MoeConfig c{8, 6, 2, 4, norm};
    auto m = make_block(c, 21);
    std::mt19937_64 rng(2);
    const Tensor x = randn({9, 8}, rng, 1.0);
    {
      genesis::NoGradGuard ng;
      m->gate.weight.fill_(0.0);
    }
    const auto r = m->route(x);
    const auto ids = host(r.experts), w = host(r.weights);
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(ids[i], static_cast<double>(i % 2)) << "row " << i / 2;
      EXPECT_NEAR(w[i], norm ? 0.5 : 1.0 / 6, 1e-15);
    }
    EXPECT_LE(max_diff(host(m->forward(x)), host(dense_oracle(*m, x))), 1e-10);
    {
      genesis::NoGradGuard ng;  // experts 4 and 2 share their router row, bigger than the others
      m->gate.weight.copy_(randn({6, 8}, rng, 0.01));
      m->gate.weight.select(0, 2).fill_(1.0);
      m->gate.weight.select(0, 4).fill_(1.0);
    }
    const Tensor xp = x.abs();  // positive inputs: rows 2 and 4 win
    const auto ids2 = host(m->route(xp).experts);
    for (size_t i = 0; i < ids2.size(); i += 2) {
      EXPECT_EQ(ids2[i], 2.0);
      EXPECT_EQ(ids2[i + 1], 4.0);
    }
    EXPECT_LE(max_diff(host(m->forward(xp)), host(dense_oracle(*m, xp))), 1e-10);
  }
}

// The routing weights come out in the input's dtype; a float32 block agrees with its float64 twin.
TEST(Moe, Float32MatchesFloat64) {
  M::MoeConfig c{16, 8, 2, 8, true};
  auto m64 = make_block(c, 11), m32 = make_block(c, 11, DType::f32);
  std::mt19937_64 rng(5);
  const Tensor x = randn({2, 6, 16}, rng, 1.0);
  const Tensor y32 = m32->forward(x.to(DType::f32));
  EXPECT_EQ(y32.dtype(), DType::f32);
  EXPECT_EQ(m32->route(x.to(DType::f32).reshape({-1, 16})).weights.dtype(), DType::f32);
  const auto want = host(m64->forward(x));
  EXPECT_LE(max_diff(host(y32), want), 1e-5 * max_abs(want));
}

// load_balancing_loss = E * sum_e f_e P_e over the concatenated layers, against the host's arithmetic; with a
// mask the padded tokens are left out; its gradient reaches the router logits.
TEST(Moe, LoadBalancingLossMatchesTheFormula) {
  const int64_t E = 6, K = 2, B = 2, T = 5;
  std::mt19937_64 rng(17);
  std::vector<Tensor> layers = {randn({B * T, E}, rng, 1.5), randn({B * T, E}, rng, 1.5)};
  const std::vector<double> mask = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
  auto expect = [&](bool masked) {
    std::vector<double> f(static_cast<size_t>(K * E), 0.0), P(static_cast<size_t>(E), 0.0);
    double count = 0;
    for (const Tensor& l : layers) {
      const auto v = host(l);
      for (int64_t i = 0; i < B * T; ++i) {
        const double mi = masked ? mask[static_cast<size_t>(i)] : 1.0;
        std::vector<double> p(v.begin() + i * E, v.begin() + (i + 1) * E);
        const double mx = *std::max_element(p.begin(), p.end());
        double s = 0;
        for (double& q : p) s += (q = std::exp(q - mx));
        for (double& q : p) q /= s;
        std::vector<int64_t> idx(static_cast<size_t>(E));
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
        for (int64_t j = 0; j < K; ++j) f[static_cast<size_t>(j * E + idx[static_cast<size_t>(j)])] += mi;
        for (int64_t e = 0; e < E; ++e) P[static_cast<size_t>(e)] += mi * p[static_cast<size_t>(e)];
        count += mi;
      }
    }
    double loss = 0;
    for (int64_t j = 0; j < K; ++j)
      for (int64_t e = 0; e < E; ++e)
        loss += f[static_cast<size_t>(j * E + e)] / count * P[static_cast<size_t>(e)] / count;
    return loss * static_cast<double>(E);
  };
  const Tensor plain = M::load_balancing_loss(layers, E, K);
  EXPECT_EQ(plain.dtype(), DType::f64);
  EXPECT_NEAR(host(plain)[0], expect(false), 1e-12);
  const Tensor am = genesis::tensor(mask, {B, T}, {.device = dev()}).to(DType::i64);
  const double masked = host(M::load_balancing_loss(layers, E, K, am))[0];
  EXPECT_NEAR(masked, expect(true), 1e-12);
  EXPECT_GT(std::fabs(masked - host(plain)[0]), 1e-6);

  Tensor l0 = layers[0].detach().requires_grad_(true);
  M::load_balancing_loss({l0, layers[1]}, E, K).backward();
  const auto g = host(l0.grad());
  EXPECT_GT(max_abs(g), 1e-4);
  // Central difference on one logit (the top-k choice does not move for so small a step).
  const double eps = 1e-6;
  auto at = [&](double d) {
    Tensor l = layers[0].detach().clone();
    l.reshape({-1}).slice(0, 3, 4).add_(d);
    return host(M::load_balancing_loss({l, layers[1]}, E, K))[0];
  };
  EXPECT_NEAR(g[3], (at(eps) - at(-eps)) / (2 * eps), 1e-8);
}

TEST(Moe, BadArgumentsAreRefused) {
  EXPECT_NE(genesis_test::error_of([] {
              M::SparseMoeBlock b({16, 4, 5, 8, true});
            }).find("num_experts_per_tok"),
            std::string::npos);
  EXPECT_NE(genesis_test::error_of([] {
              M::SparseMoeBlock b({16, 0, 1, 8, true});
            }).find("num_experts"),
            std::string::npos);
  auto m = make_block({16, 4, 2, 8, true}, 1);
  EXPECT_NE(genesis_test::error_of([&] {
              m->forward(genesis::zeros({2, 3, 15}, {.dtype = DType::f64}));
            }).find("expected input (*, 16)"),
            std::string::npos);
  EXPECT_NE(genesis_test::error_of([] { M::load_balancing_loss({}, 4, 2); }).find("at least one layer"),
            std::string::npos);
}

// Parameter names are the checkpoint's: gate.weight (E, H) and experts.{e}.{gate,up,down}_proj.weight.
TEST(Moe, ParameterNamesAndShapes) {
  M::SparseMoeBlock m({16, 3, 2, 8, true}, {.dtype = DType::f32, .device = dev()});
  std::map<std::string, genesis::Shape> got;
  for (auto& [n, p] : m.named_parameters()) got[n] = p.shape();
  std::map<std::string, genesis::Shape> want = {{"gate.weight", {3, 16}}};
  for (int e = 0; e < 3; ++e) {
    const std::string pre = "experts." + std::to_string(e) + ".";
    want[pre + "gate_proj.weight"] = {8, 16};
    want[pre + "up_proj.weight"] = {8, 16};
    want[pre + "down_proj.weight"] = {16, 8};
  }
  EXPECT_EQ(got, want);
}

}  // namespace
