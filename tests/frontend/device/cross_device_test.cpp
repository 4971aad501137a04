// cross_device_test.cpp - the frontend on a CUDA device gives what it gives on
// the CPU: the frontend knows no backend, so a model, its gradients, an
// optimizer step, autocast, GradScaler, clipping, RNG, memory statistics and
// checkpoints must behave the same wherever the tensors live.  The CPU run is
// the oracle; tolerances are float32 ones.  Skipped when no CUDA device is loaded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "genesis/amp.hpp"
#include "genesis/io.hpp"
#include "genesis/memory.hpp"
#include "genesis/nn.hpp"
#include "genesis/optim.hpp"
#include "genesis/random.hpp"
#include "genesis/tensor.hpp"

namespace {

using namespace genesis;
namespace F = genesis::nn::functional;

const bool g_init = [] {
  genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR});  // every plugin found (cuda when built)
  return true;
}();

class CrossDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
    cuda = Device("cuda");
  }
  Device cpu{"cpu"}, cuda;  // cuda is set once we know the type exists
};

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.tolist(), w = want.tolist();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(g[i] - w[i]) - rtol * std::fabs(w[i]);
    if (err > worst) worst = err, at = i;
  }
  EXPECT_LE(worst, atol) << what << ": element " << at << " " << g[at] << " vs " << w[at];
}

struct Net : nn::Module {
  // No conv bias: BatchNorm cancels it, so its gradient is pure rounding noise that
  // Adam would blow up to lr-sized steps differently on each device.
  nn::Conv2d conv{1, 4, 3, 1, 1, 1, 1, false};
  nn::BatchNorm2d bn{4};
  nn::Linear fc1{4 * 4 * 4, 32}, fc2{32, 10};
  nn::LayerNorm ln{32};
  Net() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("fc1", fc1);
    register_module("ln", ln);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = F::max_pool2d(bn(conv(x)).relu(), 2).flatten(1);
    return fc2(ln(fc1(h)).gelu());
  }
};

TEST_F(CrossDevice, TrainingStepsMatchTheCpu) {
  manual_seed(3);
  Net a, b;
  b.load_state_dict(a.state_dict());
  b.to(cuda);
  optim::AdamW oa(a.parameters(), {.lr = 1e-2}), ob(b.parameters(), {.lr = 1e-2});
  nn::CrossEntropyLoss ce(-100, "mean", 0.1);
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({8, 1, 8, 8}), y = randint(0, 10, {8});
    Tensor la = ce(a(x), y), lb = ce(b(x.to(cuda)), y.to(cuda));
    EXPECT_EQ(lb.device(), cuda);
    expect_close(lb.to(cpu), la, 1e-4, 1e-5, "loss step " + std::to_string(step));
    oa.zero_grad();
    ob.zero_grad();
    la.backward();
    lb.backward();
    Tensor na = clip_grad_norm_(a.parameters(), 1.0), nb = clip_grad_norm_(b.parameters(), 1.0);
    expect_close(nb.to(cpu), na, 1e-4, 1e-5, "grad norm");
    for (const auto& [k, p] : a.named_parameters())
      expect_close(b.state_dict().at(k).to(cpu), p, 1e-3, 1e-4, "param " + k);
    oa.step();
    ob.step();
  }
  for (const auto& [k, t] : a.state_dict()) expect_close(b.state_dict().at(k).to(cpu), t, 1e-3, 1e-4, "final " + k);
}

TEST_F(CrossDevice, AutocastAndGradScaler) {
  manual_seed(4);
  nn::Linear lin(16, 8);
  lin.to(cuda);
  optim::SGD opt(lin.parameters(), {.lr = 0.1});
  amp::GradScaler scaler({.init_scale = 256, .growth_interval = 1});
  Tensor x = randn({4, 16}, {.device = cuda});
  Tensor y = randint(0, 8, {4}, {.device = cuda});
  Tensor loss;
  {
    amp::autocast ac("cuda", bfloat16);
    Tensor logits = lin(x);
    EXPECT_EQ(logits.dtype(), DType::bf16);  // linear runs in low precision
    loss = F::cross_entropy(logits, y);
    EXPECT_EQ(loss.dtype(), DType::f32);  // losses in float32
  }
  const Tensor w0 = lin.weight.clone();
  scaler.scale(loss).backward();
  EXPECT_EQ(lin.weight.grad().dtype(), DType::f32);
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512);  // grew after one clean step
  EXPECT_GT((lin.weight - w0).abs().max().item<double>(), 0);
  // An inf gradient: the step is skipped and the scale backs off.
  const Tensor w1 = lin.weight.clone();
  opt.zero_grad();
  scaler.scale((lin(x) * std::numeric_limits<double>::infinity()).sum()).backward();
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 256);
  EXPECT_EQ(lin.weight.tolist(), w1.tolist());
}

TEST_F(CrossDevice, RngMemoryAndCheckpoints) {
  manual_seed(5, cuda);
  const auto r1 = rand({1000}, {.device = cuda}).tolist();
  manual_seed(5, cuda);
  {
    ForkRng fork;  // every device
    manual_seed(9, cuda);
    (void)randn({10}, {.device = cuda});
  }
  EXPECT_EQ(rand({1000}, {.device = cuda}).tolist(), r1);  // the fork restored the cuda generator

  const uint64_t before = memory_allocated(cuda);
  {
    Tensor big = empty({1 << 20}, {.device = cuda});  // 4 MiB
    EXPECT_GE(memory_allocated(cuda), before + (4u << 20));
    EXPECT_GE(max_memory_allocated(cuda), memory_allocated(cuda));
    EXPECT_GE(memory_reserved(cuda), memory_allocated(cuda));
  }
  EXPECT_EQ(memory_allocated(cuda), before);
  empty_cache(cuda);
  EXPECT_LE(memory_reserved(cuda), memory_stats(cuda).peak_reserved);

  char tmpl[] = "/tmp/genesis_xdev.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/m.safetensors";
  Tensor t = randn({3, 5}, {.device = cuda}).to(bfloat16);
  save({{"w", t}}, path);
  Tensor back = load(path).at("w");
  EXPECT_EQ(back.device(), cpu);
  EXPECT_EQ(back.dtype(), DType::bf16);
  EXPECT_EQ(back.tolist(), t.tolist());
  EXPECT_EQ(load(path, cuda).at("w").device(), cuda);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
