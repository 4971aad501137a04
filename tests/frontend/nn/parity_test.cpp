// parity_test.cpp - CrossEntropyLoss, BCEWithLogitsLoss and BatchNorm2d against
// values from Debian's torch 1.13 (expected_data.h, written by gen_expected.py).
#include "common.h"
#include "expected_data.h"

namespace {

using namespace nn_test;
namespace nn = genesis::nn;

TEST(NnParity, CrossEntropyLoss) {
  Tensor t = genesis::tensor(std::vector<int64_t>{1, -100, 4, 0}, {4});
  nn::CrossEntropyLoss mean, sum(-100, "sum"), smooth(-100, "mean", 0.1);
  std::vector<std::tuple<nn::CrossEntropyLoss*, const std::vector<double>*, const std::vector<double>*>> cases = {
      {&mean, &expected::ce_mean, &expected::ce_mean_grad},
      {&sum, &expected::ce_sum, &expected::ce_sum_grad},
      {&smooth, &expected::ce_smooth, &expected::ce_smooth_grad}};
  for (auto [loss, value, grad] : cases) {
    Tensor x = f64(seq(20, 0.37, 0.1), {4, 5}).requires_grad_();
    Tensor l = (*loss)(x, t);
    l.backward();
    expect_near(l, *value, 1e-10);
    expect_near(x.grad(), *grad, 1e-10);
  }
  Tensor x3 = f64(seq(24, 0.53, 0.3), {2, 3, 4});
  Tensor t3 = genesis::tensor(std::vector<int64_t>{0, 2, 1, -100, 2, 2, 0, 1}, {2, 4});
  expect_near(nn::CrossEntropyLoss(-100, "none")(x3, t3), expected::ce_nd_none, 1e-10);
  // float32 logits as well (the usual case).
  Tensor x32 = genesis::tensor(seq(20, 0.37, 0.1), {4, 5}, {.dtype = genesis::float32});
  expect_near(mean(x32, t), expected::ce_mean, 1e-5);
  EXPECT_THROW(nn::CrossEntropyLoss(-100, "avg")(x32, t), genesis::Error);
}

TEST(NnParity, BCEWithLogitsLoss) {
  std::vector<double> z = seq(6, 0.9, 0.2);
  for (double& v : z) v *= 30;  // |z| up to 60: the naive form overflows
  Tensor y = f64({1, 0, 1, 0.5, 0, 1}, {6});
  expect_near(nn::BCEWithLogitsLoss("none")(f64(z, {6}), y), expected::bce_logits_none, 1e-10);
  Tensor z32 = genesis::tensor(z, {6}, {.dtype = genesis::float32});
  expect_near(nn::BCEWithLogitsLoss("none")(z32, y.to(genesis::float32)), expected::bce_logits_none, 1e-4);
  Tensor z2 = f64(seq(6, 0.7, 0.4), {2, 3}).requires_grad_();
  nn::BCEWithLogitsLoss pw("mean", f64({1, 2, 0.5}, {3}));
  Tensor l = pw(z2, y.reshape({2, 3}));
  l.backward();
  expect_near(l, expected::bce_logits_pw, 1e-10);
  expect_near(z2.grad(), expected::bce_logits_pw_grad, 1e-10);
}

TEST(NnParity, BatchNorm2dTrainThenEval) {
  nn::BatchNorm2d bn(3);
  bn.to(genesis::float64);
  {
    genesis::NoGradGuard g;
    bn.weight.copy_(f64({1, 0.5, 2}, {3}));
    bn.bias.copy_(f64({0, 0.1, -0.2}, {3}));
  }
  Tensor a = f64(seq(24, 0.41, 0.0), {2, 3, 2, 2});
  Tensor b = f64(seq(24, 0.29, 1.0), {2, 3, 2, 2}) + 1;
  expect_near(bn(a), expected::bn_train_out, 1e-10);
  bn(b);
  expect_near(bn.running_mean, expected::bn_running_mean, 1e-12);
  expect_near(bn.running_var, expected::bn_running_var, 1e-12);
  bn.eval();
  expect_near(bn(a), expected::bn_eval_out, 1e-10);
}

TEST(NnParity, SimpleLossesClosedForm) {
  Tensor x = genesis::tensor({1.0, 2.0, 4.0}), y = genesis::tensor({0.0, 2.0, 1.0});
  expect_near(nn::MSELoss()(x, y), {10.0 / 3});
  expect_near(nn::MSELoss("sum")(x, y), {10});
  expect_near(nn::L1Loss()(x, y), {4.0 / 3});
  expect_near(nn::L1Loss("none")(x, y), {1, 0, 3});
  Tensor p = genesis::tensor({0.9, 0.2, 0.0}), t = genesis::tensor({1.0, 0.0, 1.0});
  expect_near(nn::BCELoss("none")(p, t), {-std::log(0.9), -std::log(0.8), 100});  // log clamped at -100
  Tensor logp = genesis::tensor({{-1.0, -2.0, -0.5}, {-0.1, -3.0, -4.0}});
  Tensor ids = genesis::tensor(std::vector<int64_t>{2, 0}, {2});
  expect_near(nn::NLLLoss()(logp, ids), {0.3});
  expect_near(nn::NLLLoss(0, "sum")(logp, ids), {0.5});  // class 0 ignored
}

}  // namespace
