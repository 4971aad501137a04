// modules_parity_test.cpp - every nn layer and loss against PyTorch 1.13:
// outputs, input gradients and parameter gradients (modules_expected.h,
// written by gen_modules_expected.py; the recipe is at the top of that script).
// float64 throughout, so the tolerance is 1e-10: a wrong formula, a wrong
// default (eps, momentum, count_include_pad...) or a wrong rule shows up.
#include <algorithm>
#include <functional>

#include "common.h"
#include "modules_expected.h"

namespace {

using namespace nn_test;
namespace nn = genesis::nn;

const std::vector<double>& E(const std::string& key) {
  auto it = expected::modules.find(key);
  if (it == expected::modules.end()) throw std::runtime_error("no expected value " + key);
  return it->second;
}

Tensor X(genesis::Shape s, double a = 0.37, double b = 0.1) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return f64(seq(static_cast<int>(n), a, b), s);
}

std::vector<std::pair<std::string, Tensor>> sorted_params(nn::Module& m) {
  auto ps = m.named_parameters();
  std::sort(ps.begin(), ps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return ps;
}

// Parameters k = 0, 1, ... (sorted by name) = seq(numel, 0.31 + 0.17k, 0.5k) * 0.5, as the generator.
void set_params(nn::Module& m) {
  genesis::NoGradGuard ng;
  int k = 0;
  for (auto& [name, p] : sorted_params(m)) {
    Tensor v = f64(seq(static_cast<int>(p.numel()), 0.31 + 0.17 * k, 0.5 * k), p.shape()) * 0.5;
    p.copy_(v);
    p.set_grad(Tensor());
    ++k;
  }
}

// out = fwd(x); backward of sum(out * seq(out.numel, 0.77, 0.5)); compare out, x.grad, parameter grads.
void run(const std::string& c, nn::Module* m, Tensor x, const std::function<Tensor(const Tensor&)>& fwd,
         bool grad_input = true, double tol = 1e-10) {
  SCOPED_TRACE(c);
  if (m) {
    m->to(genesis::float64);
    set_params(*m);
  }
  if (grad_input) x = x.detach().requires_grad_();
  Tensor y = fwd(x);
  expect_near(y, E(c + ".out"), tol);
  (y * f64(seq(static_cast<int>(y.numel()), 0.77, 0.5), y.shape())).sum().backward();
  if (grad_input) expect_near(x.grad(), E(c + ".grad"), tol);
  if (m)
    for (auto& [name, p] : sorted_params(*m)) {
      SCOPED_TRACE(name);
      expect_near(p.grad(), E(c + "." + name + ".grad"), tol);
    }
}

void run(const std::string& c, nn::Module& m, const Tensor& x) {
  run(c, &m, x, [&](const Tensor& t) { return m(t); });
}

TEST(NnTorchParity, LinearEmbeddingNorms) {
  nn::Linear lin(5, 3), lin_nb(5, 3, false);
  run("linear", lin, X({2, 4, 5}));
  run("linear_nobias", lin_nb, X({4, 5}, 0.23));
  nn::Embedding emb(7, 4, 2);
  Tensor ids = genesis::tensor(std::vector<int64_t>{0, 2, 6, 3, 2, 0}, {2, 3});
  run(
      "embedding", &emb, ids, [&](const Tensor& i) { return emb(i); }, false);
  nn::LayerNorm ln(6), ln2({2, 3}, 1e-3);
  run("layernorm", ln, X({3, 6}));
  run("layernorm2d", ln2, X({4, 2, 3}, 0.61));
  nn::RMSNorm rms(6, 1e-6);
  run("rmsnorm", rms, X({3, 6}, 0.43));
}

TEST(NnTorchParity, Activations) {
  nn::ReLU relu;
  nn::GELU gelu, gelu_tanh("tanh");
  nn::SiLU silu;
  nn::Tanh tanh_;
  nn::Sigmoid sigmoid;
  nn::Softmax softmax(1);
  nn::Flatten flatten;
  run("relu", relu, X({3, 4}));
  run("gelu", gelu, X({3, 4}));
  run("gelu_tanh", gelu_tanh, X({3, 4}));
  run("silu", silu, X({3, 4}));
  run("tanh", tanh_, X({3, 4}));
  run("sigmoid", sigmoid, X({3, 4}));
  run("softmax", softmax, X({2, 3, 4}));
  run("flatten", flatten, X({2, 3, 2, 2}));
}

TEST(NnTorchParity, ConvAndPooling) {
  nn::Conv2d conv(4, 6, 3, 2, 1, 1, 2);
  run("conv2d", conv, X({2, 4, 7, 6}, 0.29));
  nn::Conv2d conv_b(3, 2, {2, 3}, {1, 2}, {1, 0}, {2, 1});
  run("conv2d_b", conv_b, X({1, 3, 5, 6}, 0.53));
  nn::MaxPool2d mp(3, 2, 1, 1, true), mp_dil(2, 1, 0, 2);
  run("maxpool", mp, X({1, 2, 7, 7}, 0.71));
  run("maxpool_dil", mp_dil, X({2, 1, 5, 5}, 0.83));
  nn::AvgPool2d ap(3, 2, 1, true, false), ap2(2);
  run("avgpool", ap, X({1, 2, 7, 7}, 0.71));
  run("avgpool2", ap2, X({2, 1, 4, 6}, 0.19));
}

TEST(NnTorchParity, BatchNorm1d) {
  nn::BatchNorm1d bn(3);
  run("bn1d", bn, X({4, 3}, 0.47));
  expect_near(bn.running_mean, E("bn1d.running_mean"), 1e-12);
  expect_near(bn.running_var, E("bn1d.running_var"), 1e-12);
  bn.eval();
  expect_near(bn(X({4, 3}, 0.21)), E("bn1d.eval"), 1e-10);
  nn::BatchNorm1d bn3(3, 1e-5, std::nullopt);  // momentum None: cumulative average
  run("bn1d_3d", bn3, X({2, 3, 5}, 0.59));
  expect_near(bn3.running_var, E("bn1d_3d.running_var"), 1e-12);
}

TEST(NnTorchParity, MultiheadAttention) {
  nn::MultiheadAttention mha(8, 2, 0, true, true);
  Tensor kv = X({2, 5, 8}, 0.27, 0.9);
  run("mha_self", &mha, X({2, 3, 8}, 0.31), [&](const Tensor& q) { return mha(q, q, q); });
  Tensor kpm = genesis::tensor({{0.0, 0.0, 1.0, 0.0, 1.0}, {0.0, 0.0, 0.0, 0.0, 0.0}}) > 0.5;
  run("mha_cross", &mha, X({2, 3, 8}, 0.31), [&](const Tensor& q) { return mha(q, kv, kv, kpm); });
  Tensor am = f64(seq(15, 0.5, 0.0), {3, 5});
  run("mha_mask", &mha, X({2, 3, 8}, 0.31), [&](const Tensor& q) { return mha(q, kv, kv, {}, false, am); });
  nn::MultiheadAttention mha2(6, 3, 0, false, false);  // (L, N, E), no biases
  run("mha_seqfirst", &mha2, X({4, 2, 6}, 0.13), [&](const Tensor& q) { return mha2(q, q, q); });
}

TEST(NnTorchParity, Losses) {
  Tensor t = genesis::tensor(std::vector<int64_t>{1, -100, 4, 0}, {4});
  Tensor logp = X({4, 5}).log_softmax(1).detach();
  Tensor bce_t = f64({1, 0, 0.3, 1, 0, 0.8}, {2, 3});
  Tensor ce_t = genesis::tensor(std::vector<int64_t>{1, 4, 3, 0}, {4});
  for (const std::string r : {"mean", "sum", "none"}) {
    nn::NLLLoss nll(-100, r);
    nn::MSELoss mse(r);
    nn::L1Loss l1(r);
    nn::BCELoss bce(r);
    nn::CrossEntropyLoss ce(4, r, 0.2);
    run("nll_" + r, nullptr, logp, [&](const Tensor& x) { return nll(x, t); });
    run("mse_" + r, nullptr, X({3, 4}), [&](const Tensor& x) { return mse(x, X({3, 4}, 0.91)); });
    run("l1_" + r, nullptr, X({3, 4}), [&](const Tensor& x) { return l1(x, X({3, 4}, 0.91)); });
    run("bce_" + r, nullptr, X({2, 3}).sigmoid(), [&](const Tensor& x) { return bce(x, bce_t); });
    run("ce_smooth_" + r, nullptr, X({4, 5}), [&](const Tensor& x) { return ce(x, ce_t); });
  }
  Tensor probs = X({3, 4}, 0.63).softmax(1);
  nn::CrossEntropyLoss ce_s(-100, "mean", 0.1), ce_plain;
  run("ce_probs", nullptr, X({3, 4}), [&](const Tensor& x) { return ce_s(x, probs); });
  Tensor t4 = genesis::tensor(std::vector<int64_t>{0, 2, 1, -100, 2, 2, 0, 1}, {2, 2, 2});
  run("ce_4d", nullptr, X({2, 3, 2, 2}, 0.33), [&](const Tensor& x) { return ce_plain(x, t4); });
  nn::BCEWithLogitsLoss bl("sum", f64({0.5, 1.0, 3.0}, {3}));
  run("bce_logits_w", nullptr, X({2, 3}) * 3, [&](const Tensor& x) { return bl(x, bce_t); });
}

}  // namespace
