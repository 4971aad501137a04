// inplace_higher_order_test.cpp - in-place ops under autograd (version counters, rebased
// histories, writes into views), autograd::grad / backward(inputs), create_graph (double
// backward, checked by central differences of the first derivative), nodes with several outputs
// (record_function), and the errors torch raises in the same places.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/tensor.hpp"

#include "../test_common.h"

namespace {

using genesis::Tensor;
namespace ag = genesis::autograd;
using V = std::vector<Tensor>;

const bool g_init = genesis_test::init_reference();

const genesis::Options kF64 = {.dtype = genesis::float64};

Tensor leaf(std::vector<double> v, genesis::Shape s) {
  return genesis::tensor(v, s, {.dtype = genesis::float64, .requires_grad = true});
}

void expect_near(const Tensor& a, const std::vector<double>& b, double tol = 1e-12) {
  ASSERT_TRUE(a.defined());
  const std::vector<double> av = a.tolist();
  ASSERT_EQ(av.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(av[i], b[i], tol * (1 + std::fabs(b[i]))) << "element " << i;
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-12) { expect_near(a, b.tolist(), tol); }

using genesis_test::error_of;

// ---- version counters

TEST(VersionCounter, BumpedByEveryInPlaceWriteAndSharedByViews) {
  Tensor x = genesis::zeros({2, 3}, kF64);
  EXPECT_EQ(x.version(), 0u);
  x.add_(genesis::ones({2, 3}, kF64));
  x.mul_(2.0);
  x.fill_(1);
  EXPECT_EQ(x.version(), 3u);
  Tensor row = x.select(0, 1), d = x.detach();
  EXPECT_EQ(row.version(), 3u);
  row.zero_();
  d.copy_(genesis::ones({2, 3}, kF64));
  EXPECT_EQ(x.version(), 5u);
  EXPECT_EQ(row.version(), 5u);
  x.index_put_({0, 0}, 7.0);
  EXPECT_EQ(d.version(), 6u);
}

// ---- in-place ops on non-leaf tensors

TEST(InPlace, NonLeafWritesBecomeItsHistory) {
  Tensor x = leaf({0.5, -1.0, 2.0}, {3});
  Tensor y = x * 2.0;
  y.add_(1.0);
  EXPECT_EQ(ag::node_display_name(*y.grad_fn()), "AddBackward0");
  y.mul_(y.clone());  // (2x + 1)^2
  y.sum().backward();
  expect_near(x.grad(), {8 * 0.5 + 4, 8 * -1.0 + 4, 8 * 2.0 + 4});
  // y.mul_(y) saves y as the other operand and then writes it: refused at backward, as torch does
  Tensor z = x * 2.0;
  z.mul_(z);
  EXPECT_NE(error_of([&] { z.sum().backward(); }).find("output 0 of MulBackward0, is at version 1; expected version 0"),
            std::string::npos);
}

TEST(InPlace, UnaryAndDivAndClampAndMaskedFill) {
  const Tensor mask = genesis::tensor(std::vector<int64_t>{0, 1, 0, 0}, {4}).to(genesis::boolean);
  Tensor x = leaf({0.3, -0.7, 1.2, 0.1}, {4});
  Tensor y = x * 1.0;
  y.unary_("sin");  // saves its input: the old value, kept aside
  y.div_(x + 3.0);
  y.clamp_(-10, 0.25);
  y.masked_fill_(mask, 0.0);
  y.unary_("exp");
  y.sum().backward();
  // the same function out of place
  Tensor x2 = leaf({0.3, -0.7, 1.2, 0.1}, {4});
  Tensor z = (x2.sin() / (x2 + 3.0)).clamp(-10, 0.25).masked_fill(mask, 0.0).exp();
  z.sum().backward();
  expect_close(x.grad(), x2.grad());
  // exp_ saves its result: a later write into it is refused at backward, naming exp (as torch)
  Tensor w = x * 1.0;
  w.unary_("exp");
  w.div_(x + 3.0);
  EXPECT_NE(error_of([&] { w.sum().backward(); }).find("output 0 of ExpBackward0, is at version 2; expected version 1"),
            std::string::npos);
}

TEST(InPlace, SavedTensorWrittenSinceIsRefusedNamingTheOp) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  Tensor y = x.exp();
  y.add_(1.0);
  const std::string msg = error_of([&] { y.sum().backward(); });
  EXPECT_NE(msg.find("one of the variables needed for gradient computation has been modified by an inplace "
                     "operation: [genesis.DoubleTensor [3, 4]], which is output 0 of ExpBackward0, is at version 1; "
                     "expected version 0 instead."),
            std::string::npos)
      << msg;
  // A saved input: named by its current history (the in-place add that rewrote it).
  Tensor a = x * 2.0;
  Tensor s = a.sin();
  a.add_(1.0);
  EXPECT_NE(error_of([&] { s.sum().backward(); }).find("which is output 0 of AddBackward0, is at version 1"),
            std::string::npos);
  // A saved leaf written under no_grad: no producer in the message.
  Tensor w = leaf({1, 2}, {2});
  Tensor c = w.sin();
  {
    genesis::NoGradGuard ng;
    w.mul_(2.0);
  }
  const std::string leaf_msg = error_of([&] { c.sum().backward(); });
  EXPECT_NE(leaf_msg.find("[genesis.DoubleTensor [2]] is at version 1; expected version 0 instead."), std::string::npos)
      << leaf_msg;
}

TEST(InPlace, LeafThatRequiresGradIsRefusedOutsideNoGrad) {
  Tensor x = leaf({1, 2}, {2});
  EXPECT_NE(error_of([&] { x.add_(1.0); }).find("a leaf Variable that requires grad is being used in an in-place"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.select(0, 0).fill_(3); }).find("a view of a leaf Variable that requires grad"),
            std::string::npos);
  {
    genesis::NoGradGuard ng;
    x.add_(1.0);
  }
  expect_near(x.detach(), {2, 3});
}

TEST(InPlace, WriteIntoAViewRewritesTheBase) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x * 2.0;
  Tensor row = y.select(0, 1);
  Tensor col = y.slice(1, 0, 1);  // made before the write: follows the base's new history lazily
  row.mul_(3.0);
  EXPECT_EQ(ag::node_display_name(*y.grad_fn()), "CopySlices");
  EXPECT_EQ(ag::node_display_name(*row.grad_fn()), "AsStridedBackward0");
  (y.sum() + (col * col).sum()).backward();
  // y = 2x with row 1 times 3; col = y[:, 0]: d/dx (col^2) = 2 col * dcol/dx
  expect_near(x.grad(), {2 + 2 * 2 * 2, 2, 2, 6 + 2 * 24 * 6, 6, 6});
}

TEST(InPlace, AssignmentIntoATensorWithoutGradStartsAHistory) {
  Tensor x = leaf({1.5, -2}, {2});
  Tensor out = genesis::zeros({3, 2}, kF64);
  out.index_put_({1}, x * x);
  out.index_put_({genesis::indexing::Slice(), 0}, 4.0);  // overwrites x[0]^2: its gradient goes
  EXPECT_TRUE(out.requires_grad());
  (out * genesis::tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2}, kF64)).sum().backward();
  expect_near(x.grad(), {0, 4 * 2 * -2});
}

TEST(InPlace, CopyIntoNonLeafSendsGradientToTheSource) {
  Tensor a = leaf({1, 2, 3}, {3}), b = leaf({4, 5, 6}, {3});
  Tensor y = a * 1.0;
  y.copy_(b * b);
  EXPECT_EQ(ag::node_display_name(*y.grad_fn()), "CopyBackwards");
  y.sum().backward();
  EXPECT_FALSE(a.grad().defined());
  expect_near(b.grad(), {8, 10, 12});
}

// ---- autograd::grad and backward(inputs)

TEST(Grad, ReturnsGradientsWithoutAccumulating) {
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2});
  Tensor y = (x * w).sum();
  Tensor later = x * 1.0;  // not on y's graph
  V g = ag::grad({y}, {x, later}, {}, true, false, true);
  expect_near(g[0], {3, 4});
  EXPECT_FALSE(g[1].defined());  // a tensor made after y: not reached (allow_unused)
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // a non-leaf input: the gradient reaching it
  Tensor h = x * 3.0;
  Tensor z = (h * h).sum();
  expect_near(ag::grad({z}, {h})[0], {6, 12});
  EXPECT_NE(error_of([&] { ag::grad({(x * 2.0).sum()}, {w}); }).find("appears to not have been used in the graph"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ag::grad({(x * 2.0).sum()}, {genesis::ones({2}, kF64)});
            }).find("One of the differentiated Tensors does not require grad"),
            std::string::npos);
}

TEST(Grad, BackwardWithInputsAccumulatesOnlyThere) {
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2});
  Tensor h = x * w;
  ag::backward({h.sum()}, {}, std::nullopt, false, {w, h});
  EXPECT_FALSE(x.grad().defined());
  expect_near(w.grad(), {1, 2});
  expect_near(h.grad(), {1, 1});
}

// ---- create_graph: second derivatives against central differences of the first

// gradcheck of x -> d sum(f(x) * u) / dx, the first derivative computed with create_graph.
std::string gradgrad(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  return ag::gradcheck(
      [f](const V& in) {
        // gradcheck's finite differences run under no_grad on fresh inputs: the first derivative
        // still needs a graph there, only not a recorded one.
        const bool analytic = ag::grad_enabled();
        ag::set_grad_enabled(true);
        Tensor xi = in[0].requires_grad() ? in[0] : in[0].detach().requires_grad_(true);
        Tensor y = f(xi);
        Tensor u = genesis::linspace(0.5, 1.5, y.numel(), kF64).reshape(y.shape());
        Tensor g = ag::grad({(y * u).sum()}, {xi}, {}, true, analytic)[0];
        ag::set_grad_enabled(analytic);
        return g;
      },
      {x});
}

TEST(CreateGraph, SecondDerivativesOfTheCommonOps) {
  Tensor x = genesis::tensor(std::vector<double>{0.3, -0.8, 1.1, 0.5, -0.2, 0.9}, {2, 3},
                             {.dtype = genesis::float64, .requires_grad = true});
  Tensor pos = genesis::tensor(std::vector<double>{0.3, 0.8, 1.1, 0.5, 0.2, 0.9}, {2, 3},
                               {.dtype = genesis::float64, .requires_grad = true});
  Tensor w = genesis::tensor(std::vector<double>{0.2, -0.1, 0.4, 0.3, 0.5, -0.6}, {3, 2}, kF64);
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t * t * t - t.sin() * t; }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.exp() + t.tanh() + t.sigmoid(); }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.log() + t.pow(2.5) + t.sqrt() / t; }, pos), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.relu() * t; }, x), "");
  EXPECT_EQ(gradgrad([w](const Tensor& t) { return (t.matmul(w)).square(); }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.matmul(t.t()).mean(); }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.softmax(1) * t; }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return t.log_softmax(0).square(); }, x), "");
  EXPECT_EQ(gradgrad([](const Tensor& t) { return (t.sum(1) * t.mean(0).sum()).square(); }, x), "");
  Tensor target = genesis::tensor(std::vector<int64_t>{2, 0}, {2});
  EXPECT_EQ(gradgrad([target](const Tensor& t) { return genesis::cross_entropy(t, target, -100, 0.1, 1); }, x), "");
  EXPECT_EQ(gradgrad([w](const Tensor& t) { return genesis::nn::functional::linear(t, w.t()).square(); }, x), "");
  // writes into views stay differentiable twice
  EXPECT_EQ(gradgrad(
                [](const Tensor& t) {
                  Tensor y = t * t;
                  y.select(0, 1).mul_(t.select(0, 0));
                  return y;
                },
                x),
            "");
}

TEST(CreateGraph, ABackwardKernelWithoutDerivativeRaisesWhenReachedTwice) {
  Tensor x = leaf({0.3, -0.8, 1.1, 0.5, -0.2, 0.9}, {2, 3});
  Tensor g = ag::grad({genesis::layer_norm(x).square().sum()}, {x}, {}, true, true)[0];
  EXPECT_TRUE(g.requires_grad());
  EXPECT_NE(error_of([&] { ag::grad({g.sum()}, {x}); }).find("double backward through LayerNormBackward0 is not"),
            std::string::npos);
}

// ---- nodes with several outputs

TEST(RecordFunction, EachOutputSendsItsOwnGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a, b;
  {
    genesis::NoGradGuard ng;
    a = x * 2.0;
    b = x * x;
  }
  V outs = {a, b};
  auto node = ag::record_function("TwoBackward", {x}, outs, {false, false}, [](ag::Node& n, V& grads) {
    const Tensor& xs = n.saved_at(0);
    return V{grads[0] * 2.0 + grads[1] * xs * 2.0};
  });
  node->save("x", x);
  EXPECT_EQ(outs[1].impl()->output_nr, 1u);
  (outs[0] * 3.0 + outs[1]).sum().backward();
  expect_near(x.grad(), {6 + 2, 6 + 4});
}

}  // namespace
