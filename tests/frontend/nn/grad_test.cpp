// grad_test.cpp - the gradient rules nn added to autograd/rules.cpp (conv2d,
// pooling, attention, rope, swiglu, gather, index_select, cat, stack) and the
// composite losses/layers, against central finite differences in float64.
#include "common.h"

namespace {

using namespace nn_test;
namespace ag = genesis::autograd;
namespace nn = genesis::nn;
namespace F = genesis::nn::functional;

TEST(NnGrad, Conv2d) {
  GRADCHECK(F::conv2d(x[0], x[1], x[2]), leaf({2, 3, 5, 5}), leaf({4, 3, 3, 3}), leaf({4}));
  GRADCHECK(F::conv2d(x[0], x[1], {}, 2, 1), leaf({1, 2, 5, 4}), leaf({3, 2, 3, 2}));
  GRADCHECK(F::conv2d(x[0], x[1], x[2], 1, {1, 0}, 2, 2), leaf({1, 4, 6, 5}), leaf({2, 2, 2, 2}), leaf({2}));
}

TEST(NnGrad, Pooling) {
  GRADCHECK(F::max_pool2d(x[0], 2), leaf({2, 2, 4, 4}));
  GRADCHECK(F::max_pool2d(x[0], 3, 2, 1), leaf({1, 2, 5, 5}));
  GRADCHECK(F::max_pool2d(x[0], 2, 1, 0, 2), leaf({1, 1, 5, 5}));
  GRADCHECK(F::max_pool2d(x[0], 2, 2, 0, 1, true), leaf({1, 1, 5, 5}));
  GRADCHECK(F::avg_pool2d(x[0], 2), leaf({2, 2, 4, 4}));
  GRADCHECK(F::avg_pool2d(x[0], 3, 2, 1), leaf({1, 2, 5, 5}));
  GRADCHECK(F::avg_pool2d(x[0], 3, 2, 1, true, false), leaf({1, 1, 6, 6}));
}

TEST(NnGrad, Attention) {
  GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2]), leaf({1, 2, 3, 4}), leaf({1, 2, 5, 4}),
            leaf({1, 2, 5, 3}));
  GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0, true), leaf({2, 2, 4, 3}), leaf({2, 2, 4, 3}),
            leaf({2, 2, 4, 3}));
  GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0, false, 0.3), leaf({2, 4, 3}), leaf({2, 5, 3}),
            leaf({2, 5, 3}));
  GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2]), leaf({1, 4, 3, 2}), leaf({1, 2, 3, 2}),
            leaf({1, 2, 3, 2}));  // GQA
  genesis::manual_seed(2);
  Tensor mask = genesis::randn({3, 4}, {.dtype = genesis::float64});
  GRADCHECK(F::scaled_dot_product_attention(x[0], x[1], x[2], mask), leaf({1, 2, 3, 2}), leaf({1, 2, 4, 2}),
            leaf({1, 2, 4, 2}));
}

TEST(NnGrad, RopeAndSwiglu) {
  genesis::manual_seed(4);
  Tensor theta = genesis::randn({3, 4}, {.dtype = genesis::float64});
  Tensor c = theta.cos(), s = theta.sin();
  GRADCHECK(F::rope(x[0], c, s), leaf({2, 3, 4}));
  GRADCHECK(F::swiglu(x[0], x[1]), leaf({3, 4}), leaf({3, 4}));
}

TEST(NnGrad, IndexingAndJoining) {
  Tensor idx = genesis::tensor(std::vector<int64_t>{0, 2, 2, 1, 0, 1}, {3, 2});
  GRADCHECK(F::gather(x[0], 1, idx), leaf({3, 4}));
  Tensor sel = genesis::tensor(std::vector<int64_t>{2, 0, 2}, {3});
  GRADCHECK(F::index_select(x[0], 0, sel), leaf({3, 4}));
  GRADCHECK(F::index_select(x[0], -1, sel), leaf({2, 3}));
  GRADCHECK(F::cat({x[0], x[1], x[2]}, 1), leaf({2, 1}), leaf({2, 3}), leaf({2, 2}));
  GRADCHECK(F::cat({x[0], x[1]}, -1), leaf({2, 3}), leaf({2, 1}));
  GRADCHECK(F::stack({x[0], x[1]}, 0), leaf({2, 3}), leaf({2, 3}));
  GRADCHECK(F::stack({x[0], x[1], x[0]}, -1), leaf({2, 3}), leaf({2, 3}));
}

TEST(NnGrad, Losses) {
  Tensor t = genesis::tensor(std::vector<int64_t>{1, 0, 3, -100}, {4});
  for (const char* r : {"none", "mean", "sum"}) {
    GRADCHECK(F::nll_loss(x[0].log_softmax(1), t, -100, r), leaf({4, 5}));
    GRADCHECK(F::mse_loss(x[0], x[1], r), leaf({3, 4}), leaf({3, 4}));
    GRADCHECK(F::l1_loss(x[0], x[1], r), leaf({3, 4}), leaf({3, 4}));
  }
  Tensor t3 = genesis::tensor(std::vector<int64_t>{0, 2, -100, 1, 1, 2}, {2, 3});
  GRADCHECK(F::cross_entropy(x[0], t3), leaf({2, 4, 3}));
  GRADCHECK(F::cross_entropy(x[0], t3, -100, "none", 0.2), leaf({2, 4, 3}));
  GRADCHECK(F::nll_loss(x[0], t3), leaf({2, 4, 3}));
  genesis::manual_seed(5);
  Tensor probs = genesis::rand({3, 4}, {.dtype = genesis::float64}).softmax(1);
  GRADCHECK(F::cross_entropy(x[0], probs, -100, "mean", 0.1), leaf({3, 4}));
  Tensor y = genesis::tensor(std::vector<double>{1, 0, 0.3, 1, 0, 1}, {2, 3});
  GRADCHECK(F::binary_cross_entropy(x[0].sigmoid(), y), leaf({2, 3}));
  GRADCHECK(F::binary_cross_entropy_with_logits(x[0], y), leaf({2, 3}, 3));
  GRADCHECK(F::binary_cross_entropy_with_logits(x[0], y, "sum", x[1]), leaf({2, 3}), leaf({3}));
}

// Class weights: gradients (input and weight) by finite differences, values by a loop oracle.
TEST(NnGrad, WeightedLosses) {
  Tensor t = genesis::tensor(std::vector<int64_t>{1, 0, 3, 2, 3}, {5});
  for (const char* r : {"none", "mean", "sum"}) {
    GRADCHECK(F::nll_loss(x[0].log_softmax(1), t, 3, r, x[1].abs() + 0.1), leaf({5, 4}), leaf({4}));
    GRADCHECK(F::cross_entropy(x[0], t, 3, r, 0.2, x[1].abs() + 0.1), leaf({5, 4}), leaf({4}));
  }
  Tensor t3 = genesis::tensor(std::vector<int64_t>{0, 2, -100, 1, 1, 2}, {2, 3});
  GRADCHECK(F::cross_entropy(x[0], t3, -100, "mean", 0, x[1].abs() + 0.1), leaf({2, 4, 3}), leaf({4}));
  genesis::manual_seed(5);
  Tensor probs = genesis::rand({3, 4}, {.dtype = genesis::float64}).softmax(1);
  GRADCHECK(F::cross_entropy(x[0], probs, -100, "mean", 0.1, x[1].abs()), leaf({3, 4}), leaf({4}));
  Tensor y = genesis::tensor(std::vector<double>{1, 0, 0.3, 1, 0, 1}, {2, 3});
  GRADCHECK(F::binary_cross_entropy_with_logits(x[0], y, "mean", x[1], x[2]), leaf({2, 3}), leaf({3}), leaf({3}));
  GRADCHECK(F::binary_cross_entropy(x[0].sigmoid(), y, "sum", x[1]), leaf({2, 3}), leaf({3}));

  // nll_loss mean = sum_i -w[t_i] lp[i][t_i] / sum_i w[t_i] over targets != ignore_index (3).
  genesis::manual_seed(9);
  Tensor lp = genesis::randn({5, 4}, {.dtype = genesis::float64});
  Tensor w = genesis::tensor(std::vector<double>{0.5, 1.5, 2.0, 3.0}, {4});
  const auto lv = lp.tolist(), wv = w.tolist(), tv = t.tolist();
  double num = 0, den = 0;
  for (size_t i = 0; i < tv.size(); ++i) {
    const auto c = static_cast<size_t>(tv[i]);
    if (c == 3) continue;
    num -= wv[c] * lv[i * 4 + c];
    den += wv[c];
  }
  EXPECT_NEAR(F::nll_loss(lp, t, 3, "mean", w).item<double>(), num / den, 1e-14);
  EXPECT_NEAR(F::nll_loss(lp, t, 3, "sum", w).item<double>(), num, 1e-14);
  // Without smoothing, cross_entropy is nll_loss of log_softmax with the same weights.
  EXPECT_NEAR(F::cross_entropy(lp, t, 3, "mean", 0, w).item<double>(),
              F::nll_loss(lp.log_softmax(1), t, 3, "mean", w).item<double>(), 1e-14);
  nn::CrossEntropyLoss weighted(3, "mean", 0, w);
  EXPECT_NEAR(weighted(lp, t).item<double>(), F::cross_entropy(lp, t, 3, "mean", 0, w).item<double>(), 0);
  EXPECT_THROW(F::nll_loss(lp, t, 3, "mean", genesis::ones({3}, {.dtype = genesis::float64})), genesis::Error);
}

TEST(NnGrad, Layers) {
  GRADCHECK(F::linear(x[0], x[1], x[2]), leaf({2, 5, 3}), leaf({4, 3}), leaf({4}));
  GRADCHECK(F::layer_norm(x[0], {2, 3}, x[1], x[2]), leaf({4, 2, 3}), leaf({2, 3}), leaf({2, 3}));
  GRADCHECK(F::rms_norm(x[0], {3}, x[1]), leaf({4, 3}), leaf({3}));
  nn::BatchNorm2d bn(2);
  bn.to(genesis::float64);
  GRADCHECK(bn(x[0]), leaf({3, 2, 2, 2}));
  nn::MultiheadAttention mha(4, 2, 0, true, true);
  mha.to(genesis::float64);
  GRADCHECK(mha(x[0], x[1], x[1]), leaf({2, 3, 4}), leaf({2, 5, 4}));
  // Parameter gradients of a layer reach the registered tensors.
  nn::Conv2d conv(2, 3, 2);
  conv.to(genesis::float64);
  GRADCHECK(F::conv2d(x[0], conv.weight, conv.bias), leaf({1, 2, 3, 3}));
  EXPECT_EQ(ag::gradcheck([&](const V& p) { return F::conv2d(p[2], p[0], p[1]); },
                          {conv.weight, conv.bias, genesis::randn({1, 2, 3, 3}, {.dtype = genesis::float64})}),
            "");
}

}  // namespace
