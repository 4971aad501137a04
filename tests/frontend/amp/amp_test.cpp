// amp_test.cpp - autocast policy (output dtypes in bf16/f16 regions, f32 ops,
// promotion, nesting, gradients to f32 params) and GradScaler (unscale, skipped
// steps on inf/nan, backoff, growth, state_dict).
#include <gtest/gtest.h>

#include <cmath>

#include "genesis/amp.hpp"
#include "genesis/autograd.hpp"
#include "genesis/optim.hpp"

#include "../test_common.h"

namespace {

using genesis::DType;
using genesis::Tensor;
using D = std::vector<double>;

const bool g_init = genesis_test::init_reference();

Tensor param(genesis::Shape s) {
  genesis::manual_seed(1);
  return genesis::randn(s).requires_grad_(true);
}

TEST(Autocast, PolicyInBf16Region) {
  Tensor a = param({2, 3}), b = param({3, 4});
  Tensor c = genesis::ones({2, 4});
  {
    genesis::autocast ac("cpu", genesis::bfloat16);
    EXPECT_TRUE(genesis::amp::is_autocast_enabled("cpu"));
    EXPECT_EQ(genesis::amp::get_autocast_dtype("cpu"), DType::bf16);
    Tensor y = a.matmul(b);
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_EQ(genesis::matmul(a, b).dtype(), DType::bf16);
    EXPECT_EQ(y.relu().dtype(), DType::bf16);  // not in the table: unchanged
    EXPECT_EQ(y.softmax(-1).dtype(), DType::f32);
    EXPECT_EQ(y.log_softmax(-1).dtype(), DType::f32);
    EXPECT_EQ(y.sum().dtype(), DType::f32);
    EXPECT_EQ(y.mean({1}).dtype(), DType::f32);
    EXPECT_EQ(y.logsumexp({1}).dtype(), DType::f32);
    EXPECT_EQ(y.norm().dtype(), DType::f32);
    EXPECT_EQ(y.exp().dtype(), DType::f32);
    EXPECT_EQ(y.pow(2).dtype(), DType::f32);
    EXPECT_EQ(genesis::layer_norm(y).dtype(), DType::f32);
    EXPECT_EQ(genesis::rms_norm(y).dtype(), DType::f32);
    Tensor t = genesis::tensor(std::vector<int64_t>{0, 3}, {2});
    EXPECT_EQ(genesis::cross_entropy(y, t).dtype(), DType::f32);
    EXPECT_EQ((y + c).dtype(), DType::f32);     // promoted to the widest
    EXPECT_EQ((y * 2.0).dtype(), DType::bf16);  // a number does not promote
    EXPECT_EQ(c.sum().dtype(), DType::f32);     // f32 ops stay f32
  }
  EXPECT_FALSE(genesis::amp::is_autocast_enabled("cpu"));
  EXPECT_EQ(a.matmul(b).dtype(), DType::f32);
  EXPECT_EQ(genesis::amp::cast_policy("linear"), genesis::amp::CastPolicy::lower_precision);
  // The inference fast paths follow the ops they fuse: linear_swiglu is a product (an f32 input
  // from an f32 norm must not make it an f32 GEMM), add_rms_norm a norm.
  EXPECT_EQ(genesis::amp::cast_policy("linear_swiglu"), genesis::amp::CastPolicy::lower_precision);
  EXPECT_EQ(genesis::amp::cast_policy("add_rms_norm"), genesis::amp::CastPolicy::fp32);
  EXPECT_EQ(genesis::amp::cast_policy("relu"), genesis::amp::CastPolicy::none);
}

TEST(Autocast, NestsAndF16) {
  Tensor a = param({2, 3}), b = param({3, 2});
  genesis::autocast outer("cpu", genesis::bfloat16);
  {
    genesis::autocast inner("cpu", genesis::float16);
    EXPECT_EQ(a.matmul(b).dtype(), DType::f16);
    {
      genesis::autocast off("cpu", genesis::bfloat16, false);
      EXPECT_FALSE(genesis::amp::is_autocast_enabled("cpu"));
      EXPECT_EQ(a.matmul(b).dtype(), DType::f32);
    }
    EXPECT_EQ(a.matmul(b).dtype(), DType::f16);
  }
  EXPECT_EQ(a.matmul(b).dtype(), DType::bf16);
  EXPECT_THROW(genesis::autocast("cpu", genesis::float32), genesis::Error);
}

TEST(Autocast, GradientsFlowToF32Params) {
  Tensor a = param({2, 3}), b = param({3, 4});
  Tensor loss;
  {
    genesis::autocast ac("cpu", genesis::bfloat16);
    Tensor y = a.matmul(b);
    Tensor z = y.matmul(b.t());  // b is cast once (cached) and used twice
    loss = z.softmax(-1).sum() + y.sum();
  }
  EXPECT_EQ(loss.dtype(), DType::f32);
  loss.backward();
  ASSERT_TRUE(a.grad().defined());
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(b.grad().dtype(), DType::f32);
  // d(sum(a@b))/da = row sums of b, and softmax rows sum to 1 (zero gradient): compare loosely (bf16).
  Tensor want = genesis::ones({2, 4}).matmul(b.detach().t());
  auto g = a.grad().tolist(), w = want.tolist();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 0.05 * (1 + std::fabs(w[i])));
}

// --------------------------------------------------------------- GradScaler

struct Fixture {
  Tensor p = genesis::tensor({1.0, 2.0}).requires_grad_(true);
  genesis::optim::SGD opt{std::vector<Tensor>{p}, {.lr = 0.1}};
  // Backward of scaler.scale(sum(p * w)): p.grad = w * scale.
  void backward(genesis::GradScaler& s, const Tensor& w) {
    opt.zero_grad();
    s.scale((p * w).sum()).backward();
  }
};

TEST(GradScaler, UnscaleAndStep) {
  Fixture f;
  genesis::GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  f.backward(scaler, genesis::tensor({0.5, -0.25}));
  EXPECT_EQ(f.p.grad().tolist(), (D{0.5 * 65536, -0.25 * 65536}));
  scaler.unscale_(f.opt);
  EXPECT_EQ(f.p.grad().tolist(), (D{0.5, -0.25}));
  EXPECT_THROW(scaler.unscale_(f.opt), genesis::Error);
  EXPECT_TRUE(scaler.step(f.opt));
  EXPECT_THROW(scaler.step(f.opt), genesis::Error);
  auto v = f.p.tolist();
  EXPECT_NEAR(v[0], 1.0 - 0.05, 1e-7);
  EXPECT_NEAR(v[1], 2.0 + 0.025, 1e-7);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.state_dict().at("_growth_tracker"), 1.0);
}

TEST(GradScaler, SkipsOnInfAndBacksOff) {
  Fixture f;
  genesis::GradScaler scaler;
  for (double bad : {INFINITY, NAN}) {
    f.backward(scaler, genesis::tensor({1.0, 1.0}));
    f.p.grad().copy_(genesis::tensor({bad, 1.0}));
    const double before = scaler.get_scale();
    EXPECT_FALSE(scaler.step(f.opt));
    EXPECT_EQ(f.p.tolist(), (D{1.0, 2.0}));
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), before * 0.5);
    EXPECT_EQ(scaler.state_dict().at("_growth_tracker"), 0.0);
  }
}

TEST(GradScaler, GrowsAfterInterval) {
  Fixture f;
  genesis::GradScaler scaler({.init_scale = 4.0, .growth_interval = 3});
  std::vector<double> scales;
  for (int i = 0; i < 7; ++i) {
    f.backward(scaler, genesis::tensor({0.1, 0.1}));
    if (i == 4) f.p.grad().copy_(genesis::tensor({INFINITY, 0.0}));
    scaler.step(f.opt);
    scaler.update();
    scales.push_back(scaler.get_scale());
  }
  EXPECT_EQ(scales, (D{4, 4, 8, 8, 4, 4, 4}));
  scaler.update(1024.0);
  EXPECT_EQ(scaler.get_scale(), 1024.0);
}

TEST(GradScaler, StateDict) {
  Fixture f;
  genesis::GradScaler a({.init_scale = 8.0, .growth_interval = 2});
  f.backward(a, genesis::tensor({1.0, 1.0}));
  a.step(f.opt);
  a.update();
  auto sd = a.state_dict();
  EXPECT_EQ(sd.at("scale"), 8.0);
  EXPECT_EQ(sd.at("growth_interval"), 2.0);
  genesis::GradScaler b;
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), 8.0);
  f.backward(b, genesis::tensor({1.0, 1.0}));
  b.step(f.opt);
  b.update();
  EXPECT_EQ(b.get_scale(), 16.0);  // the tracker carried over
  EXPECT_THROW(b.load_state_dict({}), genesis::Error);
  genesis::GradScaler off({.enabled = false});
  EXPECT_TRUE(off.state_dict().empty());
  EXPECT_EQ(off.get_scale(), 1.0);
}

}  // namespace
