// gradcheck_test.cpp - every gradient rule of frontend/src/autograd/rules.cpp
// against central finite differences in float64, plus engine behaviour
// (accumulation, hooks on leaves, retain_grad, no_grad, freed graphs).
#include <gtest/gtest.h>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

namespace {

using genesis::Tensor;
using V = std::vector<Tensor>;
namespace ag = genesis::autograd;

const bool g_init = [] {
  genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "reference", .no_default_paths = true});
  return true;
}();

// Random float64 leaf requiring grad.
Tensor leaf(genesis::Shape s, double scale = 1, double shift = 0) {
  Tensor t = genesis::randn(s, {.dtype = genesis::float64}) * scale + shift;
  return t.detach().requires_grad_();
}
// Random positive float64 leaf (for log, sqrt, pow...).
Tensor pos(genesis::Shape s) { return (genesis::rand(s, {.dtype = genesis::float64}) + 0.5).requires_grad_(); }

#define GRADCHECK(fn, ...)                                        \
  do {                                                            \
    genesis::manual_seed(7);                                      \
    V in_ = {__VA_ARGS__};                                        \
    EXPECT_EQ(ag::gradcheck([](const V& x) { return fn; }, in_), ""); \
  } while (0)

TEST(CppGradcheck, Unary) {
  genesis::manual_seed(1);
  GRADCHECK(-x[0], leaf({3, 4}));
  GRADCHECK(x[0].abs(), leaf({3, 4}, 1, 0.1));
  GRADCHECK(x[0].exp(), leaf({3, 4}));
  GRADCHECK(x[0].log(), pos({3, 4}));
  GRADCHECK(x[0].log1p(), pos({3, 4}));
  GRADCHECK(x[0].sqrt(), pos({3, 4}));
  GRADCHECK(x[0].rsqrt(), pos({3, 4}));
  GRADCHECK(x[0].sin(), leaf({3, 4}));
  GRADCHECK(x[0].cos(), leaf({3, 4}));
  GRADCHECK(x[0].tanh(), leaf({3, 4}));
  GRADCHECK(x[0].sigmoid(), leaf({3, 4}));
  GRADCHECK(x[0].relu(), leaf({3, 4}, 1, 0.05));
  GRADCHECK(x[0].gelu(), leaf({3, 4}));
  GRADCHECK(x[0].gelu(true), leaf({3, 4}));
  GRADCHECK(x[0].silu(), leaf({3, 4}));
  GRADCHECK(x[0].reciprocal(), pos({3, 4}));
  GRADCHECK(x[0].square(), leaf({3, 4}));
  GRADCHECK(x[0].clamp(-0.5, 0.5), leaf({3, 4}));
  GRADCHECK(x[0].pow(3), leaf({3, 4}));
  GRADCHECK(x[0].pow(0.5), pos({3, 4}));
}

TEST(CppGradcheck, GeluNearZero) {
  Tensor x = genesis::tensor({-1e-4, 0.0, 2e-4, 5e-4}, {.dtype = genesis::float64}).requires_grad_();
  EXPECT_EQ(ag::gradcheck([](const V& v) { return v[0].gelu(); }, {x}), "");
}

TEST(CppGradcheck, BinaryWithBroadcast) {
  GRADCHECK(x[0] + x[1], leaf({2, 3, 4}), leaf({3, 1}));
  GRADCHECK(x[0].add(x[1], 2.5), leaf({2, 3}), leaf({3}));
  GRADCHECK(x[0] - x[1], leaf({4}), leaf({2, 3, 4}));
  GRADCHECK(x[0].sub(x[1], 0.5), leaf({2, 3}), leaf({2, 1}));
  GRADCHECK(x[0] * x[1], leaf({2, 3, 4}), leaf({1, 4}));
  GRADCHECK(x[0] / x[1], leaf({3, 4}), pos({4}));
  GRADCHECK(x[0].pow(x[1]), pos({3, 4}), leaf({4}));
  GRADCHECK(x[0].maximum(x[1]), leaf({3, 4}), leaf({4}));
  GRADCHECK(x[0].minimum(x[1]), leaf({3, 4}), leaf({3, 1}));
  GRADCHECK(x[0] * 3 + 1 - 2 / x[1], leaf({3}), pos({3}));
  GRADCHECK(genesis::where(x[0] > 0, x[0], x[1]), leaf({3, 4}), leaf({4}));
}

TEST(CppGradcheck, Matmul) {
  GRADCHECK(x[0].matmul(x[1]), leaf({3, 4}), leaf({4, 5}));
  GRADCHECK(x[0].matmul(x[1]), leaf({2, 3, 4}), leaf({4, 5}));      // batch bcast on b
  GRADCHECK(x[0].matmul(x[1]), leaf({3, 4}), leaf({2, 4, 5}));      // batch bcast on a
  GRADCHECK(x[0].matmul(x[1]), leaf({2, 1, 3, 4}), leaf({3, 4, 2}));
  GRADCHECK(x[0].matmul(x[1]), leaf({4}), leaf({2, 4, 5}));         // 1-D left
  GRADCHECK(x[0].matmul(x[1]), leaf({2, 3, 4}), leaf({4}));         // 1-D right
  GRADCHECK(x[0].matmul(x[1]), leaf({4}), leaf({4}));               // dot
}

TEST(CppGradcheck, Reductions) {
  GRADCHECK(x[0].sum(), leaf({3, 4}));
  GRADCHECK(x[0].sum({0, 2}), leaf({2, 3, 4}));
  GRADCHECK(x[0].sum(-1, true), leaf({2, 3, 4}));
  GRADCHECK(x[0].mean(), leaf({3, 4}));
  GRADCHECK(x[0].mean(1), leaf({2, 3, 4}));
  GRADCHECK(x[0].max(), leaf({3, 4}));
  GRADCHECK(x[0].max(1, true), leaf({2, 3, 4}));
  GRADCHECK(x[0].min({0, 2}), leaf({2, 3, 4}));
  GRADCHECK(x[0].var(), leaf({3, 4}));
  GRADCHECK(x[0].var(1, 0, true), leaf({2, 3, 4}));
  GRADCHECK(x[0].std(-1), leaf({3, 5}));
  GRADCHECK(x[0].logsumexp(1), leaf({2, 3, 4}));
  GRADCHECK(x[0].norm(), leaf({3, 4}));
  GRADCHECK(x[0].norm(3, 1), leaf({3, 4}));
}

TEST(CppGradcheck, SoftmaxAndFusedOps) {
  GRADCHECK(x[0].softmax(-1), leaf({2, 3, 5}));
  GRADCHECK(x[0].softmax(1), leaf({2, 3, 5}));
  GRADCHECK(x[0].log_softmax(-1), leaf({4, 5}));
  GRADCHECK(genesis::layer_norm(x[0]), leaf({3, 6}));
  GRADCHECK(genesis::layer_norm(x[0], x[1], x[2]), leaf({2, 3, 6}), leaf({6}), leaf({6}));
  GRADCHECK(genesis::layer_norm(x[0], x[1], x[2], 2), leaf({2, 3, 4}), leaf({3, 4}), leaf({3, 4}));
  GRADCHECK(genesis::rms_norm(x[0]), leaf({3, 6}));
  GRADCHECK(genesis::rms_norm(x[0], x[1]), leaf({2, 3, 6}), leaf({6}));
}

TEST(CppGradcheck, CrossEntropyAndEmbedding) {
  Tensor target = genesis::tensor(std::vector<int64_t>{1, 0, 4, -100, 2, 3}, {6});
  for (int64_t reduction : {0, 1, 2}) {
    genesis::manual_seed(3);
    Tensor logits = leaf({6, 5});
    EXPECT_EQ(ag::gradcheck([&](const V& x) { return genesis::cross_entropy(x[0], target, -100, 0, reduction); },
                            {logits}), "") << "reduction " << reduction;
  }
  Tensor logits = leaf({6, 5});
  EXPECT_EQ(ag::gradcheck([&](const V& x) { return genesis::cross_entropy(x[0], target, -100, 0.1); }, {logits}), "");
  Tensor ids = genesis::tensor(std::vector<int64_t>{0, 3, 3, 1, 4, 0}, {2, 3});
  Tensor weight = leaf({5, 4});
  EXPECT_EQ(ag::gradcheck([&](const V& x) { return genesis::embedding(x[0], ids); }, {weight}), "");
}

TEST(CppGradcheck, ViewsAndCopies) {
  GRADCHECK(x[0].reshape({4, 3}) * x[1], leaf({2, 6}), leaf({4, 3}));
  GRADCHECK(x[0].view({3, 2, 2}), leaf({3, 4}));
  GRADCHECK(x[0].permute({2, 0, 1}), leaf({2, 3, 4}));
  GRADCHECK(x[0].transpose(0, 2), leaf({2, 3, 4}));
  GRADCHECK(x[0].t().matmul(x[0]), leaf({3, 2}));
  GRADCHECK(x[0].slice(1, 1, -1), leaf({2, 5}));
  GRADCHECK(x[0].slice(0, 0, 5, 2), leaf({5, 3}));
  GRADCHECK(x[0].select(1, -1), leaf({2, 3, 4}));
  GRADCHECK(x[0][1], leaf({3, 4}));
  GRADCHECK(x[0].expand({2, 3, 4}), leaf({3, 1}));
  GRADCHECK(x[0].squeeze(), leaf({3, 1, 4}));
  GRADCHECK(x[0].unsqueeze(1), leaf({3, 4}));
  GRADCHECK(x[0].flatten(), leaf({2, 3, 2}));
  GRADCHECK(x[0].transpose(0, 1).contiguous(), leaf({3, 4}));
  GRADCHECK(x[0].clone() * x[0], leaf({3, 4}));
  // Through float32: a step float32 resolves, and a matching tolerance.
  genesis::manual_seed(7);
  EXPECT_EQ(ag::gradcheck([](const V& x) { return x[0].to(genesis::float32).to(genesis::float64) * x[0]; },
                          {leaf({3})}, {.eps = 1e-2, .atol = 1e-3, .rtol = 1e-2}), "");
}

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
  x.register_hook([&](const Tensor& g) { ++leaf_calls; EXPECT_EQ(g.tolist(), (std::vector<double>{20, 20})); });
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g * 10; });  // replaces the gradient
  y.sum().backward();
  EXPECT_EQ(leaf_calls, 1);  // the leaf hook saw the replaced gradient
  EXPECT_EQ(x.grad().tolist(), (std::vector<double>{20, 20}));

  Tensor a = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  int calls = 0;
  a.register_hook([&](const Tensor& g) { ++calls; EXPECT_EQ(g.tolist(), (std::vector<double>{3, 3})); });
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
