// layers_test.cpp - every layer's forward against closed forms or hand-computed
// values; init; Dropout and BatchNorm in train/eval; a tiny end-to-end fit.
#include <cmath>

#include "common.h"

namespace {

using namespace nn_test;
namespace nn = genesis::nn;
namespace F = genesis::nn::functional;

// Copies values into a parameter (as a user would under no_grad).
void set(Tensor& p, const std::vector<double>& v) {
  genesis::NoGradGuard g;
  p.copy_(genesis::tensor(v, p.shape()));
}

TEST(NnLayers, LinearForwardAndDefaultInit) {
  nn::Linear fc(3, 2);
  EXPECT_EQ(fc.weight.shape(), (genesis::Shape{2, 3}));
  const double bound = 1 / std::sqrt(3.0);  // kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in))
  for (double w : fc.weight.tolist()) EXPECT_LE(std::fabs(w), bound);
  for (double b : fc.bias.tolist()) EXPECT_LE(std::fabs(b), bound);
  set(fc.weight, {1, 2, 3, 4, 5, 6});
  set(fc.bias, {0.5, -1});
  Tensor x = genesis::tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.0}});
  expect_near(fc(x), {1 - 3 + 0.5, 4 - 6 - 1, 2 + 2 + 0.5, 8 + 5 - 1});
  nn::Linear nb(3, 2, false);
  EXPECT_FALSE(nb.bias.defined());
  EXPECT_EQ(nb.parameters().size(), 1u);
  // Reproducible with the framework RNG.
  genesis::manual_seed(5);
  nn::Linear a(4, 4);
  genesis::manual_seed(5);
  nn::Linear b(4, 4);
  EXPECT_EQ(a.weight.tolist(), b.weight.tolist());
}

TEST(NnLayers, EmbeddingWithPadding) {
  nn::Embedding emb(4, 2, 1);
  set(emb.weight, {1, 2, 0, 0, 5, 6, 7, 8});
  Tensor ids = genesis::tensor(std::vector<int64_t>{3, 1, 0, 3}, {2, 2});
  Tensor y = emb(ids);
  EXPECT_EQ(y.shape(), (genesis::Shape{2, 2, 2}));
  expect_near(y, {7, 8, 0, 0, 1, 2, 7, 8});
  y.sum().backward();
  expect_near(emb.weight.grad(), {1, 1, 0, 0, 0, 0, 2, 2});  // padding row gets nothing
  nn::Embedding e2(3, 5, -1);
  expect_near(e2.weight.select(0, 2), {0, 0, 0, 0, 0});
}

TEST(NnLayers, Norms) {
  nn::LayerNorm ln(3);
  const double s = 1 / std::sqrt(2.0 / 3 + 1e-5);
  expect_near(ln(genesis::tensor({{1.0, 2.0, 3.0}})), {-s, 0, s});
  set(ln.weight, {1, 2, 3});
  set(ln.bias, {0, 1, 0});
  expect_near(ln(genesis::tensor({{1.0, 2.0, 3.0}})), {-s, 1, 3 * s});
  nn::LayerNorm ln2(genesis::Shape{2, 2}, 1e-5, false);
  EXPECT_EQ(ln2.parameters().size(), 0u);
  expect_near(ln2(genesis::tensor({{1.0, 3.0}, {1.0, 3.0}}).unsqueeze(0)), {-1, 1, -1, 1}, 1e-4);
  nn::RMSNorm rms(2, 1e-6);
  const double r = 1 / std::sqrt(12.5 + 1e-6);
  expect_near(rms(genesis::tensor({{3.0, 4.0}})), {3 * r, 4 * r});
  EXPECT_THROW(F::layer_norm(genesis::ones({2, 3}), {4}), genesis::Error);
}

TEST(NnLayers, Activations) {
  Tensor x = genesis::tensor({-1.0, 0.0, 1.0});
  expect_near(nn::ReLU()(x), {0, 0, 1});
  expect_near(nn::GELU()(x), {-0.15865525393145707, 0, 0.8413447460685429});
  expect_near(nn::GELU("tanh")(x), {-0.15880800939172324, 0, 0.8411919906082768});
  expect_near(nn::SiLU()(x), {-0.2689414213699951, 0, 0.7310585786300049});
  expect_near(nn::Tanh()(x), {std::tanh(-1.0), 0, std::tanh(1.0)});
  expect_near(nn::Sigmoid()(x), {0.2689414213699951, 0.5, 0.7310585786300049});
  const double z = std::exp(-1.0) + 1 + std::exp(1.0);
  expect_near(nn::Softmax(0)(x), {std::exp(-1.0) / z, 1 / z, std::exp(1.0) / z});
  expect_near(nn::Softmax(-1)(genesis::tensor({{0.0, 0.0}, {1.0, 1.0}})), {0.5, 0.5, 0.5, 0.5});
  EXPECT_EQ(nn::Flatten()(genesis::zeros({2, 3, 4, 5})).shape(), (genesis::Shape{2, 60}));
  EXPECT_EQ(nn::Flatten(0, 1)(genesis::zeros({2, 3, 4})).shape(), (genesis::Shape{6, 4}));
  EXPECT_THROW(F::gelu(x, "fast"), genesis::Error);
}

TEST(NnLayers, ConvAndPooling) {
  Tensor x = genesis::arange(0, 9, 1, {.dtype = genesis::float32}).reshape({1, 1, 3, 3});
  nn::Conv2d conv(1, 1, 2);
  EXPECT_EQ(conv.weight.shape(), (genesis::Shape{1, 1, 2, 2}));
  set(conv.weight, {1, 1, 1, 1});
  set(conv.bias, {1});
  expect_near(conv(x), {9, 13, 21, 25});  // window sums + 1
  nn::Conv2d padded(1, 2, {3, 1}, 1, {1, 0}, 1, 1, false);
  EXPECT_EQ(padded(x).shape(), (genesis::Shape{1, 2, 3, 3}));
  const double bound = 1 / std::sqrt(3.0 * 3 * 3);
  nn::Conv2d c3(3, 4, 3);
  for (double w : c3.weight.tolist()) EXPECT_LE(std::fabs(w), bound);
  EXPECT_THROW(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), genesis::Error);

  Tensor y = genesis::arange(0, 16, 1, {.dtype = genesis::float32}).reshape({1, 1, 4, 4});
  expect_near(nn::MaxPool2d(2)(y), {5, 7, 13, 15});
  expect_near(nn::AvgPool2d(2)(y), {2.5, 4.5, 10.5, 12.5});
  expect_near(nn::MaxPool2d(3, 1)(y), {10, 11, 14, 15});
  // Padding 1, stride 2, count_include_pad: corner windows divide by 4 including zeros.
  expect_near(nn::AvgPool2d(2, 2, 1)(y).slice(2, 0, 1), {0 / 4.0, (1 + 2) / 4.0, 3 / 4.0});
  expect_near(nn::AvgPool2d(2, 2, 1, false, false)(y).slice(2, 0, 1), {0, 1.5, 3});
}

TEST(NnLayers, DropoutTrainEval) {
  nn::Dropout drop(0.25);
  Tensor x = genesis::ones({4000});
  genesis::manual_seed(11);
  Tensor a = drop(x);
  genesis::manual_seed(11);
  Tensor b = drop(x);
  EXPECT_EQ(a.tolist(), b.tolist());  // reproducible from the seed
  int zeros = 0;
  for (double v : a.tolist()) {
    EXPECT_TRUE(v == 0 || std::fabs(v - 1 / 0.75) < 1e-6) << v;
    zeros += v == 0;
  }
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.03);
  drop.eval();
  EXPECT_EQ(drop(x).tolist(), x.tolist());
  EXPECT_THROW(nn::Dropout(1.5), genesis::Error);
}

TEST(NnLayers, BatchNormRunningStatsByHand) {
  nn::BatchNorm1d bn(1);
  Tensor x = genesis::tensor(std::vector<float>{1, 2, 3, 4}, {4, 1});  // mean 2.5, biased var 1.25, unbiased 5/3
  const double s = 1 / std::sqrt(1.25 + 1e-5);
  expect_near(bn(x), {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s});
  expect_near(bn.running_mean, {0.1 * 2.5});
  expect_near(bn.running_var, {0.9 + 0.1 * 5.0 / 3});
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn(x);
  expect_near(bn.running_mean, {0.9 * 0.25 + 0.25});
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  bn.eval();
  const double rm = 0.9 * 0.25 + 0.25, rv = 0.9 * (0.9 + 0.1 * 5.0 / 3) + 0.1 * 5.0 / 3;
  expect_near(bn(x), {(1 - rm) / std::sqrt(rv + 1e-5), (2 - rm) / std::sqrt(rv + 1e-5), (3 - rm) / std::sqrt(rv + 1e-5),
                      (4 - rm) / std::sqrt(rv + 1e-5)});
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);  // eval leaves the stats alone
  // momentum unset: cumulative average.
  nn::BatchNorm1d cum(1, 1e-5, std::nullopt);
  cum(x);
  cum(x * 2);
  expect_near(cum.running_mean, {(2.5 + 5) / 2});
  // No running stats: batch statistics in eval too, and no buffers.
  nn::BatchNorm1d nostats(1, 1e-5, 0.1, false, false);
  nostats.eval();
  expect_near(nostats(x), {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s});
  EXPECT_EQ(nostats.state_dict().size(), 0u);
  EXPECT_THROW(bn(genesis::ones({2, 1, 1, 1})), genesis::Error);
  nn::BatchNorm2d bn2(2);
  EXPECT_THROW(bn2(genesis::ones({1, 2, 1, 1})), genesis::Error);  // one value per channel in training
}

TEST(NnLayers, MultiheadAttentionMatchesManual) {
  genesis::manual_seed(3);
  const int64_t N = 2, L = 3, S = 4, E = 4, H = 2, D = 2;
  nn::MultiheadAttention mha(E, H, 0, true, true);
  EXPECT_EQ(mha.state_dict().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  {
    genesis::NoGradGuard g;
    mha.in_proj_bias.copy_(genesis::randn({3 * E}));
  }
  Tensor q = genesis::randn({N, L, E}), kv = genesis::randn({N, S, E});
  auto manual = [&](const Tensor& k_in, const Tensor& add_mask) {
    auto proj = [&](const Tensor& x, int64_t i) {
      Tensor w = mha.in_proj_weight.slice(0, i * E, (i + 1) * E), b = mha.in_proj_bias.slice(0, i * E, (i + 1) * E);
      return F::linear(x, w, b).reshape({N, x.size(1), H, D}).transpose(1, 2);
    };
    Tensor s = proj(q, 0).matmul(proj(k_in, 1).transpose(-1, -2)) / std::sqrt(double(D));
    if (add_mask.defined()) s = s + add_mask;
    return mha.out_proj(s.softmax(-1).matmul(proj(k_in, 2)).transpose(1, 2).reshape({N, L, E}));
  };
  expect_near(mha(q, kv, kv), manual(kv, {}).tolist());
  // key_padding_mask: the last key of the second sequence is ignored.
  Tensor kpm = genesis::tensor(std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 1}, {N, S}) != 0;
  Tensor add = genesis::where(kpm, genesis::full({}, -INFINITY), genesis::zeros({})).reshape({N, 1, 1, S});
  expect_near(mha(q, kv, kv, kpm), manual(kv, add).tolist());
  // Sequence-first layout (the default) gives the same numbers.
  nn::MultiheadAttention sf(E, H);
  sf.load_state_dict(mha.state_dict());
  expect_near(sf(q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1)).transpose(0, 1), manual(kv, {}).tolist());
  // Causal self-attention equals a bool "not allowed" mask above the diagonal.
  Tensor i = genesis::arange(L).unsqueeze(1), j = genesis::arange(L).unsqueeze(0);
  expect_near(mha(q, q, q, {}, false, {}, true), mha(q, q, q, {}, false, j > i).tolist());
  EXPECT_EQ(mha(q[0], kv[0], kv[0]).shape(), (genesis::Shape{L, E}));  // unbatched
  EXPECT_THROW(mha(q, kv, kv, {}, true), genesis::Error);              // need_weights
}

TEST(NnLayers, InitFunctions) {
  namespace init = genesis::nn::init;
  Tensor w = genesis::empty({64, 32, 3, 3});
  auto [fi, fo] = init::calculate_fan_in_and_fan_out(w);
  EXPECT_EQ(fi, 32 * 9);
  EXPECT_EQ(fo, 64 * 9);
  EXPECT_NEAR(init::calculate_gain("relu"), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(2.0 / 6), 1e-12);
  EXPECT_NEAR(init::calculate_gain("tanh"), 5.0 / 3, 1e-12);
  init::xavier_uniform_(w);
  const double a = std::sqrt(6.0 / (fi + fo));
  EXPECT_LE(w.abs().max().item<double>(), a);
  EXPECT_GT(w.abs().max().item<double>(), 0.9 * a);
  init::kaiming_normal_(w, 0, "fan_out", "relu");
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / fo), 0.02 * std::sqrt(2.0 / fo));
  init::kaiming_uniform_(w, 0, "fan_in", "relu");
  EXPECT_LE(w.abs().max().item<double>(), std::sqrt(6.0 / fi));
  init::xavier_normal_(w, 2);
  EXPECT_NEAR(w.std().item<double>(), 2 * std::sqrt(2.0 / (fi + fo)), 0.05 * std::sqrt(2.0 / (fi + fo)));
  init::normal_(w, 3, 0.5);
  EXPECT_NEAR(w.mean().item<double>(), 3, 0.02);
  init::uniform_(w, -2, -1);
  EXPECT_GE(w.min().item<double>(), -2);
  EXPECT_LT(w.max().item<double>(), -1);
  init::zeros_(w);
  EXPECT_EQ(w.abs().sum().item<double>(), 0);
  init::ones_(w);
  EXPECT_EQ(w.sum().item<double>(), 64 * 32 * 9);
  init::constant_(w, 0.5);
  EXPECT_EQ(w.mean().item<double>(), 0.5);
  Tensor v = genesis::empty({3});
  EXPECT_THROW(init::xavier_uniform_(v), genesis::Error);
  genesis::manual_seed(9);
  Tensor p1 = init::normal_(v).clone();
  genesis::manual_seed(9);
  EXPECT_EQ(init::normal_(v).tolist(), p1.tolist());
}

TEST(NnLayers, LinearRegressionConverges) {
  // y = x . (1, -2, 0.5) + 0.3, fitted by plain SGD through Module::parameters().
  genesis::manual_seed(0);
  nn::Linear model(3, 1);
  nn::MSELoss criterion;
  Tensor x = genesis::randn({64, 3});
  Tensor y = x.matmul(genesis::tensor(std::vector<float>{1, -2, 0.5}, {3, 1})) + 0.3;
  double loss_value = 0;
  for (int step = 0; step < 300; ++step) {
    model.zero_grad();
    Tensor loss = criterion(model(x), y);
    loss.backward();
    loss_value = loss.item<double>();
    genesis::NoGradGuard g;
    for (Tensor& p : model.parameters()) p.sub_(p.grad(), 0.1);
  }
  EXPECT_LT(loss_value, 1e-6);
  expect_near(model.weight, {1, -2, 0.5}, 1e-3);
  expect_near(model.bias, {0.3}, 1e-3);
}

}  // namespace
