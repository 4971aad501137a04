// gradcheck_test.cpp - every gradient rule of frontend/src/autograd/rules.cpp
// against central finite differences in float64, plus engine behaviour
// (accumulation, hooks on leaves, retain_grad, no_grad, freed graphs).
//
// Coverage is enforced, not hoped for: EveryBuiltInOpIsClassified walks the
// runtime's op table (core/ops/ops.def) and fails when an op is neither in
// autograd::differentiable_ops() (the GN_GRAD rows of
// frontend/src/autograd/derivatives.def) with a gradcheck entry in checks()
// below (and gradcheck_linalg_test.cpp) and a sample in frontend/src/autograd/grad_samples.cpp (the case
// `genesis test-ops --mode grad` runs on a backend), nor a GN_NO_GRAD row
// there with a reason.
#include "gradcheck_common.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "genesis/tensor_algorithms.hpp"

namespace {

using namespace gradcheck_test;

// op name (ops.def) -> finite-difference checks of its rule, several shapes/attributes each: the
// ops but the factorizations and solves (gradcheck_linalg_test.cpp).
const Checks& own_checks() {
  static const Checks m = {
      // ---- elementwise unary
      {"neg",
       [] {
         GRADCHECK(-x[0], leaf({3, 4}));
       }},
      {"abs",
       [] {
         GRADCHECK(x[0].abs(), leaf({3, 4}, 1, 0.1));
       }},
      {"exp",
       [] {
         GRADCHECK(x[0].exp(), leaf({3, 4}));
       }},
      {"log",
       [] {
         GRADCHECK(x[0].log(), pos({3, 4}));
       }},
      {"log1p",
       [] {
         GRADCHECK(x[0].log1p(), pos({3, 4}));
       }},
      {"sqrt",
       [] {
         GRADCHECK(x[0].sqrt(), pos({3, 4}));
       }},
      {"rsqrt",
       [] {
         GRADCHECK(x[0].rsqrt(), pos({3, 4}));
       }},
      {"sin",
       [] {
         GRADCHECK(x[0].sin(), leaf({3, 4}));
       }},
      {"cos",
       [] {
         GRADCHECK(x[0].cos(), leaf({3, 4}));
       }},
      {"tanh",
       [] {
         GRADCHECK(x[0].tanh(), leaf({3, 4}));
       }},
      {"sigmoid",
       [] {
         GRADCHECK(x[0].sigmoid(), leaf({3, 4}));
       }},
      {"relu",
       [] {
         GRADCHECK(x[0].relu(), leaf({3, 4}, 1, 0.05));
       }},
      {"gelu",
       [] {
         GRADCHECK(x[0].gelu(), leaf({3, 4}));
         GRADCHECK(x[0].gelu(true), leaf({3, 4}));
         Tensor t = genesis::tensor({-1e-4, 0.0, 2e-4, 5e-4}, f64()).requires_grad_();
         EXPECT_EQ(ag::gradcheck([](const V& v) { return v[0].gelu(); }, {t}), "");  // the series branch near 0
       }},
      {"silu",
       [] {
         GRADCHECK(x[0].silu(), leaf({3, 4}));
       }},
      {"reciprocal",
       [] {
         GRADCHECK(x[0].reciprocal(), pos({3, 4}));
       }},
      {"square",
       [] {
         GRADCHECK(x[0].square(), leaf({3, 4}));
       }},
      {"clamp",
       [] {
         GRADCHECK(x[0].clamp(-0.5, 0.5), leaf({3, 4}));
       }},
      {"cast",  // through float32: a step float32 resolves, and a matching tolerance
       [] {
         genesis::manual_seed(7);
         EXPECT_EQ(ag::gradcheck([](const V& x) { return x[0].to(genesis::float32).to(genesis::float64) * x[0]; },
                                 {leaf({3})}, {.eps = 1e-2, .atol = 1e-3, .rtol = 1e-2}),
                   "");
       }},
      {"copy",
       [] {
         GRADCHECK(x[0].clone() * x[0], leaf({3, 4}));
         GRADCHECK(x[0].transpose(0, 1).contiguous(), leaf({3, 4}));
       }},
      // ---- elementwise binary (with broadcasting)
      {"add",
       [] {
         GRADCHECK(x[0] + x[1], leaf({2, 3, 4}), leaf({3, 1}));
         GRADCHECK(x[0].add(x[1], 2.5), leaf({2, 3}), leaf({3}));
         GRADCHECK(x[0] * 3 + 1, leaf({3}));
       }},
      {"sub",
       [] {
         GRADCHECK(x[0] - x[1], leaf({4}), leaf({2, 3, 4}));
         GRADCHECK(x[0].sub(x[1], 0.5), leaf({2, 3}), leaf({2, 1}));
         GRADCHECK(1 - x[0], leaf({3}));
       }},
      {"mul",
       [] {
         GRADCHECK(x[0] * x[1], leaf({2, 3, 4}), leaf({1, 4}));
       }},
      {"div",
       [] {
         GRADCHECK(x[0] / x[1], leaf({3, 4}), pos({4}));
         GRADCHECK(2 / x[0], pos({3}));
       }},
      {"pow",
       [] {
         GRADCHECK(x[0].pow(x[1]), pos({3, 4}), leaf({4}));
         GRADCHECK(x[0].pow(3), leaf({3, 4}));
         GRADCHECK(x[0].pow(0.5), pos({3, 4}));
       }},
      {"maximum",
       [] {
         GRADCHECK(x[0].maximum(x[1]), leaf({3, 4}), leaf({4}));
       }},
      {"minimum",
       [] {
         GRADCHECK(x[0].minimum(x[1]), leaf({3, 4}), leaf({3, 1}));
       }},
      {"where",
       [] {
         GRADCHECK(genesis::where(x[0] > 0, x[0], x[1]), leaf({3, 4}), leaf({4}));
       }},
      // ---- reductions
      {"sum",
       [] {
         GRADCHECK(x[0].sum(), leaf({3, 4}));
         GRADCHECK(x[0].sum({0, 2}), leaf({2, 3, 4}));
         GRADCHECK(x[0].sum(-1, true), leaf({2, 3, 4}));
       }},
      {"mean",
       [] {
         GRADCHECK(x[0].mean(), leaf({3, 4}));
         GRADCHECK(x[0].mean(1), leaf({2, 3, 4}));
       }},
      {"prod",
       [] {
         GRADCHECK(x[0].prod(), leaf({2, 3}));
         GRADCHECK(x[0].prod(1), leaf({3, 4}));
         GRADCHECK(x[0].prod({0, 2}, true), leaf({2, 3, 2}));
         // Rows with no zero, one zero and two zeros (prod is multilinear: central
         // differences are exact there, so the zero branches are checked too).
         Tensor z = genesis::tensor({{1.5, -2.0, 0.5}, {0.0, 3.0, -1.5}, {0.0, 0.0, 2.0}}, f64());
         z.requires_grad_();
         EXPECT_EQ(ag::gradcheck([](const V& v) { return v[0].prod(1); }, {z}), "");
         EXPECT_EQ(ag::gradcheck([](const V& v) { return v[0].prod(); }, {z}), "");
       }},
      {"max",
       [] {
         GRADCHECK(x[0].max(), leaf({3, 4}));
         GRADCHECK(x[0].max(1, true), leaf({2, 3, 4}));
       }},
      {"min",
       [] {
         GRADCHECK(x[0].min({0, 2}), leaf({2, 3, 4}));
       }},
      {"var",
       [] {
         GRADCHECK(x[0].var(), leaf({3, 4}));
         GRADCHECK(x[0].var(1, 0, true), leaf({2, 3, 4}));
       }},
      {"std",
       [] {
         GRADCHECK(x[0].std(-1), leaf({3, 5}));
       }},
      {"logsumexp",
       [] {
         GRADCHECK(x[0].logsumexp(1), leaf({2, 3, 4}));
       }},
      {"norm",
       [] {
         GRADCHECK(x[0].norm(), leaf({3, 4}));
         GRADCHECK(x[0].norm(3, 1), leaf({3, 4}));
       }},
      // ---- softmax, matmul, fused NN ops
      {"softmax",
       [] {
         GRADCHECK(x[0].softmax(-1), leaf({2, 3, 5}));
         GRADCHECK(x[0].softmax(1), leaf({2, 3, 5}));
       }},
      {"log_softmax",
       [] {
         GRADCHECK(x[0].log_softmax(-1), leaf({4, 5}));
       }},
      {"matmul",
       [] {
         GRADCHECK(x[0].matmul(x[1]), leaf({3, 4}), leaf({4, 5}));
         GRADCHECK(x[0].matmul(x[1]), leaf({2, 3, 4}), leaf({4, 5}));  // batch bcast on b
         GRADCHECK(x[0].matmul(x[1]), leaf({3, 4}), leaf({2, 4, 5}));  // batch bcast on a
         GRADCHECK(x[0].matmul(x[1]), leaf({2, 1, 3, 4}), leaf({3, 4, 2}));
         GRADCHECK(x[0].matmul(x[1]), leaf({4}), leaf({2, 4, 5}));  // 1-D left
         GRADCHECK(x[0].matmul(x[1]), leaf({2, 3, 4}), leaf({4}));  // 1-D right
         GRADCHECK(x[0].matmul(x[1]), leaf({4}), leaf({4}));        // dot
         GRADCHECK(x[0].t().matmul(x[0]), leaf({3, 2}));
         GRADCHECK(x[0].matmul(x[1].t()), leaf({3, 4}), leaf({5, 4}));  // b transposed (linear): dense weight grad
         // nn.functional.linear: one matmul with trans_b and its own rule.
         GRADCHECK(F::linear(x[0], x[1], x[2]), leaf({2, 5, 3}), leaf({4, 3}), leaf({4}));
         GRADCHECK(F::linear(x[0], x[1]), leaf({3}), leaf({4, 3}));
       }},
      {"bmm",
       [] {
         GRADCHECK(genesis::bmm(x[0], x[1]), leaf({2, 3, 4}), leaf({2, 4, 5}));
         GRADCHECK(genesis::bmm(x[0], x[1], true, false), leaf({2, 4, 3}), leaf({2, 4, 5}));
         GRADCHECK(genesis::bmm(x[0], x[1], false, true), leaf({2, 3, 4}), leaf({2, 5, 4}));
         GRADCHECK(genesis::bmm(x[0], x[1], true, true), leaf({2, 4, 3}), leaf({2, 5, 4}));
       }},
      {"layer_norm",
       [] {
         GRADCHECK(genesis::layer_norm(x[0]), leaf({3, 6}));
         GRADCHECK(genesis::layer_norm(x[0], x[1], x[2]), leaf({2, 3, 6}), leaf({6}), leaf({6}));
         GRADCHECK(genesis::layer_norm(x[0], x[1], x[2], 2), leaf({2, 3, 4}), leaf({3, 4}), leaf({3, 4}));
       }},
      {"rms_norm",
       [] {
         GRADCHECK(genesis::rms_norm(x[0]), leaf({3, 6}));
         GRADCHECK(genesis::rms_norm(x[0], x[1]), leaf({2, 3, 6}), leaf({6}));
       }},
      {"rope",
       [] {
         genesis::manual_seed(4);
         Tensor theta = genesis::randn({3, 4}, f64());
         Tensor c = theta.cos(), s = theta.sin();
         genesis::manual_seed(7);
         Tensor in = leaf({2, 3, 4});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return F::rope(v[0], c, s); }, {in}), "");
       }},
      {"swiglu",
       [] {
         GRADCHECK(F::swiglu(x[0], x[1]), leaf({3, 4}), leaf({3, 4}));
       }},
      {"cross_entropy",
       [] {
         Tensor target = ids({1, 0, 4, -100, 2, 3}, {6});
         for (int64_t reduction : {0, 1, 2}) {
           genesis::manual_seed(3);
           Tensor logits = leaf({6, 5});
           EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::cross_entropy(v[0], target, -100, 0, reduction); },
                                   {logits}),
                     "")
               << "reduction " << reduction;
         }
         Tensor logits = leaf({6, 5});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::cross_entropy(v[0], target, -100, 0.1); }, {logits}),
                   "");
       }},
      {"scaled_dot_product_attention",
       [] {
         GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2]), leaf({1, 2, 3, 4}), leaf({1, 2, 5, 4}),
                   leaf({1, 2, 5, 3}));
         GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0, true), leaf({1, 2, 4, 3}),
                   leaf({1, 2, 4, 3}), leaf({1, 2, 4, 3}));
         GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2]), leaf({1, 4, 3, 2}), leaf({1, 2, 3, 2}),
                   leaf({1, 2, 3, 2}));  // GQA
       }},
      {"embedding",
       [] {
         Tensor i = ids({0, 3, 3, 1, 4, 0}, {2, 3});
         Tensor weight = leaf({5, 4});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::embedding(v[0], i); }, {weight}), "");
       }},
      // ---- indexing and joining
      {"gather",
       [] {
         Tensor i = ids({0, 2, 2, 1, 0, 1}, {3, 2});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return v[0].gather(1, i); }, {leaf({3, 4})}), "");
       }},
      {"scatter",  // index unique per column: a deterministic result
       [] {
         Tensor i = ids({0, 1, 3, 2, 0, 1}, {2, 3});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::scatter(v[0], 0, i, v[1]); },
                                 {leaf({4, 3}), leaf({2, 3})}),
                   "");
       }},
      {"scatter_add",
       [] {
         Tensor i = ids({0, 1, 1, 0, 0, 3}, {2, 3});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::scatter_add(v[0], 0, i, v[1]); },
                                 {leaf({4, 3}), leaf({2, 3})}),
                   "");
       }},
      {"index_select",
       [] {
         Tensor i = ids({2, 0, 2}, {3});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return v[0].index_select(0, i); }, {leaf({3, 4})}), "");
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return v[0].index_select(-1, i); }, {leaf({2, 3})}), "");
       }},
      {"index_add",
       [] {
         Tensor i = ids({0, 2, 0}, {3});
         EXPECT_EQ(ag::gradcheck([&](const V& v) { return genesis::index_add(v[0], 0, i, v[1], 1.5); },
                                 {leaf({4, 3}), leaf({3, 3})}),
                   "");
       }},
      {"masked_fill",
       [] {
         Tensor mask = genesis::tensor({1.0, 0.0, 0.0, 1.0}, {.device = dev()}) > 0.5;  // broadcast over rows
         GRADCHECK(x[0].masked_fill(mask, -2.0) * x[0], leaf({3, 4}));
       }},
      {"cat",
       [] {
         GRADCHECK(F::cat({x[0], x[1], x[2]}, 1), leaf({2, 1}), leaf({2, 3}), leaf({2, 2}));
         GRADCHECK(F::cat({x[0], x[1]}, -1), leaf({2, 3}), leaf({2, 1}));
       }},
      {"stack",
       [] {
         GRADCHECK(F::stack({x[0], x[1]}, 0), leaf({2, 3}), leaf({2, 3}));
         GRADCHECK(F::stack({x[0], x[1], x[0]}, -1), leaf({2, 3}), leaf({2, 3}));
       }},
      {"split",  // each part is an autograd view; the parts' gradients add up in x
       [] {
         GRADCHECK(([&] {
                     auto p = x[0].split(2, 1);
                     return p[0] * 2 + p[1].exp();
                   }()),
                   leaf({3, 4}));
         GRADCHECK(([&] {
                     auto p = x[0].split_with_sizes({1, 3}, 0);
                     return p[1] * p[0];
                   }()),
                   leaf({4, 2}));
         GRADCHECK(([&] {
                     auto p = x[0].chunk(3, -1);
                     return p[0] + p[1] * p[2];
                   }()),
                   leaf({2, 6}));
       }},
      {"triu",
       [] {
         GRADCHECK(x[0].triu(), leaf({3, 4}));
         GRADCHECK(x[0].triu(1), leaf({2, 3, 3}));
       }},
      {"tril",
       [] {
         GRADCHECK(x[0].tril(), leaf({4, 3}));
         GRADCHECK(x[0].tril(-1), leaf({2, 3, 3}));
       }},
      {"topk",  // random values have no ties, so the selection is locally constant
       [] {
         GRADCHECK(x[0].topk(2).first, leaf({3, 5}));
         GRADCHECK(x[0].topk(2, 0, false).first, leaf({4, 3}));
       }},
      {"sort",
       [] {
         GRADCHECK(x[0].sort().first, leaf({3, 5}));
         GRADCHECK(x[0].sort(0, true).first, leaf({4, 3}));
       }},
      // ---- convolution and pooling
      {"conv2d",
       [] {
         GRADCHECK(F::conv2d(x[0], x[1], x[2]), leaf({1, 2, 4, 4}), leaf({3, 2, 3, 3}), leaf({3}));
         GRADCHECK(F::conv2d(x[0], x[1], {}, 2, 1), leaf({1, 2, 5, 4}), leaf({3, 2, 3, 2}));
         GRADCHECK(F::conv2d(x[0], x[1], x[2], 1, {1, 0}, 2, 2), leaf({1, 4, 6, 5}), leaf({2, 2, 2, 2}), leaf({2}));
       }},
      {"max_pool2d",
       [] {
         GRADCHECK(F::max_pool2d(x[0], 2), leaf({2, 2, 4, 4}));
         GRADCHECK(F::max_pool2d(x[0], 3, 2, 1), leaf({1, 2, 5, 5}));
         GRADCHECK(F::max_pool2d(x[0], 2, 2, 0, 1, true), leaf({1, 1, 5, 5}));
       }},
      {"avg_pool2d",
       [] {
         GRADCHECK(F::avg_pool2d(x[0], 2), leaf({2, 2, 4, 4}));
         GRADCHECK(F::avg_pool2d(x[0], 3, 2, 1, true, false), leaf({1, 1, 6, 6}));
       }},
      // ---- cumulative
      {"cumsum",
       [] {
         GRADCHECK(genesis::cumsum(x[0], 1), leaf({3, 4}));
         GRADCHECK(genesis::cumsum(x[0], 0), leaf({5}));
         GRADCHECK(genesis::cumsum(x[0], -1), leaf({}));
       }},
      {"cumprod",
       [] {
         GRADCHECK(genesis::cumprod(x[0], 1), leaf({3, 5}));
         GRADCHECK(genesis::cumprod(x[0], 0), leaf({4, 2}));
         // zeros: one, two, at the start and at the end of a line
         GRADCHECK(genesis::cumprod(x[0], 1), fixed({2, 0, 3, 4, 0, 2, 0, 5, 1.5, -2, 3, 0}, {3, 4}));
       }},
      {"logcumsumexp",
       [] {
         GRADCHECK(genesis::logcumsumexp(x[0], 1), leaf({3, 4}, 2));
         GRADCHECK(genesis::logcumsumexp(x[0], 0), leaf({5, 2}, 10));
       }},
      {"cummax",
       [] {
         GRADCHECK(genesis::cummax(x[0], 1).first, leaf({3, 5}));
         GRADCHECK(genesis::cummax(x[0], 0).first, leaf({4, 2}));
       }},
      {"cummin",
       [] {
         GRADCHECK(genesis::cummin(x[0], -1).first, leaf({3, 5}));
       }},
      // ---- indexing
      {"scatter_reduce",
       [] {
         for (const char* r : {"sum", "prod", "mean", "amax", "amin"})
           for (bool self : {true, false}) {
             GRADCHECK(genesis::scatter_reduce(x[0], 0, x[2], x[1], r, self), leaf({4, 3}, 1, 0.2), leaf({3, 3}),
                       ids({0, 1, 1, 0, 0, 3, 2, 0, 3}, {3, 3}));
             GRADCHECK(genesis::scatter_reduce(x[0], 1, x[2], x[1], r, self), leaf({2, 4}), leaf({2, 3}),
                       ids({0, 0, 3, 2, 1, 2}, {2, 3}));
           }
       }},
  };
  return m;
}

// Every op's checks.
const Checks& checks() {
  static const Checks m = [] {
    Checks all = own_checks();
    all.insert(linalg_checks().begin(), linalg_checks().end());
    return all;
  }();
  return m;
}

// Built-in ops with no gradient rule, each with the reason.  Adding an op to
// ops.def without a rule or an entry here fails EveryBuiltInOpIsClassified.
// op name -> why it has no gradient: the GN_NO_GRAD rows of derivatives.def.
const std::map<std::string, const char*>& no_gradient() {
  static const std::map<std::string, const char*> m = {
#define GN_NO_GRAD(op, policy, reason) {#op, reason},
#include "derivatives.def"
  };
  return m;
}

// The GN_UNARY_GRAD rows: a row without an entry in checks() gets the generic
// check below (positive inputs in [0.5, 1.5], inside every such op's domain).
const std::set<std::string>& unary_rows() {
  static const std::set<std::string> s = {
#define GN_UNARY_GRAD(op, saves, policy, formula) #op,
#include "derivatives.def"
  };
  return s;
}

// The generic check of a GN_UNARY_GRAD row, called by name (genesis::call_unary).
void unary_row_check(const std::string& op) {
  genesis::manual_seed(7);
  EXPECT_EQ(ag::gradcheck([&](const V& x) { return genesis::call_unary(op, x[0]); }, {pos({3, 4})}), "") << op;
  EXPECT_EQ(ag::gradcheck([&](const V& x) { return genesis::call_unary(op, x[0]); }, {pos({5})}), "") << op;
}

TEST(CppGradcheck, EveryBuiltInOpIsClassified) {
  const std::vector<std::string> diff = ag::differentiable_ops();
  const std::set<std::string> with_rule(diff.begin(), diff.end());
  gn_runtime* rt = genesis::runtime();
  size_t n_builtin = 0;
  for (size_t i = 0; i < gn_op_count(rt); ++i) {
    const gn_op* op = gn_op_at(rt, i);
    if (std::string(gn_op_origin(op)) != "core") continue;  // plugins' own ops are theirs to cover
    ++n_builtin;
    const std::string name = gn_op_name(op);
    const bool rule = with_rule.count(name) > 0, exempt = no_gradient().count(name) > 0;
    EXPECT_TRUE(rule || exempt) << "op '" << name << "' has no row in derivatives.def (GN_GRAD with a "
                                << "rule, or GN_NO_GRAD with a reason)";
    EXPECT_FALSE(rule && exempt) << "op '" << name << "' has a rule but is listed as non-differentiable";
    if (rule) {
      EXPECT_TRUE(checks().count(name) || unary_rows().count(name))
          << "op '" << name << "' has a rule but no gradcheck entry";
      EXPECT_TRUE(ag::find_grad_sample(name)) << "op '" << name << "' has a rule but no sample in grad_samples.cpp";
    }
  }
  EXPECT_GE(n_builtin, 100u);
  for (const auto& [name, _] : checks())
    EXPECT_TRUE(with_rule.count(name)) << "gradcheck entry '" << name << "' has no rule";
  for (const ag::GradSample& s : ag::grad_samples())
    EXPECT_TRUE(with_rule.count(s.op)) << "sample '" << s.op << "' has no rule";
}

// One test per differentiable op: its rule against central differences, in the cases
// above and in its sample (what `genesis test-ops --mode grad` runs), float64 and float32.
class EveryDifferentiableOp : public ::testing::TestWithParam<std::string> {};
TEST_P(EveryDifferentiableOp, MatchesFiniteDifferences) {
  if (const ag::GradSample* s = ag::find_grad_sample(GetParam())) {
    EXPECT_EQ(ag::gradcheck_sample(*s, genesis::float64, dev()), "") << "float64 sample";
    EXPECT_EQ(ag::gradcheck_sample(*s, genesis::float32, dev()), "") << "float32 sample";
  }
  auto it = checks().find(GetParam());
  if (it == checks().end() && unary_rows().count(GetParam())) return unary_row_check(GetParam());
  ASSERT_NE(it, checks().end()) << "no gradcheck for " << GetParam();
  it->second();
}
INSTANTIATE_TEST_SUITE_P(Rules, EveryDifferentiableOp, ::testing::ValuesIn(ag::differentiable_ops()),
                         [](const auto& info) { return info.param; });

// ---- engine behaviour

TEST(CppAutograd, QuickStart) {
  Tensor x = genesis::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.requires_grad = true});
  Tensor y = genesis::tensor({{2.0, 0.0}, {0.0, 2.0}}, {.requires_grad = true});
  Tensor loss = genesis::matmul(x, y).sum();
  loss.backward();
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(y.grad().tolist(), (std::vector<double>{4, 4, 6, 6}));
}

TEST(CppAutograd, AccumulatesAcrossBackwardAndUses) {
  Tensor x = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  (x * x + x).sum().backward();  // 2x + 1
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{3, 5}));
  Tensor g = x.grad();
  (x * 3).sum().backward();
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{6, 8}));
  EXPECT_EQ(g.tolist(), (std::vector<double>{6, 8}));  // accumulated in place, as torch
}

TEST(CppAutograd, ExplicitGradientAndErrors) {
  Tensor x = genesis::tensor({1.0, 2.0, 3.0}, {.requires_grad = true});
  Tensor y = x * 2;
  EXPECT_THROW(y.backward(), genesis::Error);  // non-scalar needs a gradient
  y.backward(genesis::tensor({1.0, 0.5, 0.0}));
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{2, 1, 0}));
  Tensor z = (x.exp()).sum();
  z.backward();
  EXPECT_THROW(z.backward(), genesis::Error);  // graph freed
  Tensor w = (x.exp()).sum();
  w.backward({}, true);
  EXPECT_NO_THROW(w.backward());
  EXPECT_THROW(genesis::ones({2}).backward(), genesis::Error);
}

TEST(CppAutograd, HooksOnLeavesAndNonLeaves) {
  Tensor x = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  int leaf_calls = 0;
  x.register_hook([&](const Tensor& g) {
    ++leaf_calls;
    EXPECT_EQ(g.tolist(), (std::vector<double>{20, 20}));
  });
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g * 10; });  // replaces the gradient
  y.sum().backward();
  EXPECT_EQ(leaf_calls, 1);  // the leaf hook saw the replaced gradient
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{20, 20}));

  Tensor a = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  int calls = 0;
  a.register_hook([&](const Tensor& g) {
    ++calls;
    EXPECT_EQ(g.tolist(), (std::vector<double>{3, 3}));
  });
  (a * 1 + a * 2).sum().backward();  // both uses summed before the hook runs once
  EXPECT_EQ(calls, 1);
}

TEST(CppAutograd, RetainGradNoGradDetach) {
  Tensor x = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  Tensor y = x * 3;
  y.retain_grad();
  Tensor z = y * y;
  z.sum().backward();
  EXPECT_EQ(y.grad().tolist(), (std::vector<double>{6, 12}));
  EXPECT_FALSE(z.grad().defined());
  {
    genesis::NoGradGuard guard;
    Tensor w = x * 2;
    EXPECT_FALSE(w.requires_grad());
    EXPECT_TRUE(w.is_leaf());
  }
  EXPECT_TRUE((x * 2).requires_grad());
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_THROW(x.add_(genesis::ones({2})), genesis::Error);  // in place on a leaf needing grad
  {
    genesis::NoGradGuard guard;
    x.add_(genesis::ones({2}));
  }
  EXPECT_EQ(x.tolist(), (std::vector<double>{2, 3}));
}

TEST(CppAutograd, DeepChainIsIterative) {
  Tensor x = genesis::tensor({1.0}, {.requires_grad = true});
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = y * 1.0;  // recursion would overflow the stack
  y.sum().backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
}

}  // namespace

namespace {

TEST(CppAutograd, BackwardFreesSavedTensors) {
  Tensor x = genesis::randn({4, 4}, {.requires_grad = true});
  Tensor h = x.exp();        // saves its output
  Tensor y = (h * x).sum();  // mul saves both inputs
  auto mul = y.grad_fn()->next[0];
  ASSERT_NE(mul, nullptr);
  EXPECT_FALSE(mul->saved_tensors.empty());
  EXPECT_FALSE(h.grad_fn()->saved_tensors.empty());
  y.backward();
  EXPECT_TRUE(mul->saved_tensors.empty());  // freed as soon as the node ran
  EXPECT_TRUE(mul->released);
  EXPECT_TRUE(h.grad_fn()->saved_tensors.empty());
  // With retain_graph they stay, and a second backward accumulates the same gradient again.
  x.set_grad(Tensor());
  Tensor z = (x.exp() * x).sum();
  z.backward({}, true);
  EXPECT_FALSE(z.grad_fn()->next[0]->saved_tensors.empty());
  const std::vector<double> once = x.grad().tolist();
  z.backward();
  const std::vector<double> twice = x.grad().tolist();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-5 * (1 + std::fabs(once[i])));
}

}  // namespace

namespace {

// Accumulation takes a gradient over only when nothing else can reach it.
TEST(CppAutograd, GradientsNeverAliasOtherTensors) {
  Tensor a = genesis::randn({3}, {.requires_grad = true}), b = genesis::randn({3}, {.requires_grad = true});
  ((a + b) * 2).sum().backward();  // the add rule hands one fresh dense tensor to both inputs
  EXPECT_FALSE(gn_tensor_shares_storage(a.grad().handle(), b.grad().handle()));
  ((a + b) * 2).sum().backward();  // accumulates in place into each: still separate
  EXPECT_EQ(a.grad().tolist(), (std::vector<double>{4, 4, 4}));
  EXPECT_EQ(b.grad().tolist(), (std::vector<double>{4, 4, 4}));

  Tensor x = genesis::randn({3}, {.requires_grad = true});
  Tensor user = genesis::ones({3});
  (x * 1.0).backward(user);  // mul by a scalar: the rule's output is fresh, so it may be taken
  Tensor y = genesis::randn({3}, {.requires_grad = true});
  y.clone().backward(user);  // clone's rule passes the user's gradient through: must be copied
  EXPECT_FALSE(gn_tensor_shares_storage(y.grad().handle(), user.handle()));
  y.clone().backward(user);
  EXPECT_EQ(user.tolist(), (std::vector<double>{1, 1, 1}));  // accumulation did not write into it
  EXPECT_EQ(y.grad().tolist(), (std::vector<double>{2, 2, 2}));

  Tensor z = genesis::randn({2}, {.requires_grad = true});
  std::vector<Tensor> seen;
  z.register_hook([&](const Tensor& g) { seen.push_back(g); });  // the hook keeps the gradient
  (z * 3).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(gn_tensor_shares_storage(z.grad().handle(), seen[0].handle()));
}

}  // namespace

namespace {

// op -> the tensors its derivatives.def row says the forward saves.
const std::map<std::string, std::set<std::string>>& row_saves() {
  static const std::map<std::string, std::set<std::string>> m = [] {
    std::map<std::string, std::set<std::string>> r;
    auto add = [&r](const char* op, std::string saves) {
      std::set<std::string>& words = r[op];
      for (size_t i = 0; i < saves.size();) {
        size_t j = saves.find(' ', i);
        if (j == std::string::npos) j = saves.size();
        if (j > i) words.insert(saves.substr(i, j - i));
        i = j + 1;
      }
    };
#define GN_UNARY_GRAD(op, saves, policy, formula) add(#op, saves);
#define GN_GRAD(op, rule, saves, policy) add(#op, saves);
#include "derivatives.def"
    return r;
  }();
  return m;
}

// Every node a function records, found from its output.
std::vector<std::shared_ptr<ag::Node>> nodes_of(const Tensor& out) {
  std::vector<std::shared_ptr<ag::Node>> seen, stack;
  if (out.grad_fn()) stack.push_back(out.grad_fn());
  while (!stack.empty()) {
    auto n = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    for (const auto& m : n->next)
      if (m && m->rule) stack.push_back(m);
  }
  return seen;
}

// The names a node saves its tensors under are those its derivatives.def row declares
// (the rules read them by these names: NodeReadsByName shows a wrong name throwing).
TEST(CppAutograd, SavedTensorsMatchTheirDerivativesRow) {
  genesis::manual_seed(7);
  Tensor a = leaf({3, 4}), b = pos({3, 4}), w = leaf({4}), m = leaf({2, 4});
  Tensor i = ids({2, 0}, {2}), gi = ids({0, 2, 1, 0, 1, 1, 2, 0}, {2, 4});
  const std::vector<Tensor> outs = {
      a.exp() + a.sigmoid() * a.log1p().abs() + a.gelu() + a.silu() + a.square().sqrt(),
      a / b + a.pow(b) + a.pow(2) * a.maximum(b) - a.minimum(b),
      (a * b).sum(1) + a.mean(1) + a.prod(1) + a.var(1) + a.std(1) + a.max(1) + a.logsumexp(1) + a.norm(3, 1),
      a.softmax(-1).log_softmax(0).clamp(-1, 1) + genesis::where(a > 0, a, b),
      genesis::layer_norm(a, w, w) + genesis::rms_norm(a, w),
      a.index_select(0, i).sum(0) + a.gather(0, gi).sum(0) + a.topk(2).first.sum(1).sum() + a.sort(0).first.sum(0),
      genesis::bmm(m.unsqueeze(0), a.t().unsqueeze(0)),
      F::scaled_dot_product_attention(leaf({1, 2, 3, 4}), leaf({1, 2, 3, 4}), leaf({1, 2, 3, 4})),
      F::conv2d(leaf({1, 2, 4, 4}), leaf({3, 2, 3, 3})) + F::max_pool2d(leaf({1, 3, 4, 4}), 3, 1) +
          F::avg_pool2d(leaf({1, 3, 4, 4}), 3, 1)};
  size_t checked = 0;
  for (const Tensor& out : outs)
    for (const auto& n : nodes_of(out)) {
      auto row = row_saves().find(n->name);
      if (row == row_saves().end()) continue;  // a frontend view or function without a row
      ++checked;
      for (const char* saved : n->saved_names)
        EXPECT_TRUE(row->second.count(saved))
            << "node '" << n->name << "' saves '" << saved << "', which its derivatives.def row does not name";
    }
  EXPECT_GE(checked, 30u);
}

// Rules read attributes and saved tensors by name; a name the forward did not keep, or an
// attribute read as the wrong kind, is an error naming the op and what it kept.
TEST(CppAutograd, NodeReadsByName) {
  Tensor x = leaf({2, 3, 4});
  Tensor y = x.var({0, 2}, 0.5, true);
  const ag::Node& n = *y.grad_fn();
  EXPECT_EQ(n.attr_ints("dims"), (std::vector<int64_t>{0, 2}));  // named by the schema, whatever its order
  EXPECT_EQ(n.attr_float("correction"), 0.5);
  EXPECT_EQ(n.attr_int("keepdim"), 1);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const genesis::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { (void)n.attr_int("dim"); })
                .find("[var] the recorded node has no attribute 'dim' "
                      "(kept: dims, correction, keepdim)"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)n.attr_int("correction"); }).find("[var] attribute 'correction' is float, read as int"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)n.saved("out"); }).find("[var] the recorded node saved no tensor 'out' (saved: x)"),
            std::string::npos);
  EXPECT_EQ(n.saved("x").shape(), x.shape());
  // Views have no schema: their rules' attributes are named where they are recorded.
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.grad_fn()->attr_int("dim0"), 0);
  EXPECT_EQ(t.grad_fn()->attr_int("dim1"), 2);
  Tensor s = x.slice(1, 1, 3);
  EXPECT_EQ(s.grad_fn()->attr_int("start"), 1);
  EXPECT_EQ(s.grad_fn()->attr_int("stop"), 3);
}

}  // namespace
