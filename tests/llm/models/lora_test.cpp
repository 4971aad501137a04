// lora_test.cpp - LoRA adapters on the tiny Qwen fixtures (tests/fixtures/qwen): gradients against central finite
// differences in float64, adapted == merged, B = 0 == base, the fused inference path (generation, serving's paged
// forward) against the training forward, the PEFT files' round trip and their errors, and (when /usr/bin/python3
// with torch is present) the adapted logits recomputed independently from the written files.
//
// The reference plugin by default; GENESIS_LORA_PLUGINS / GENESIS_LORA_DEVICE run it on another backend.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/random.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;
namespace fs = std::filesystem;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_LORA", "lora test");
const Device& dev() { return g_backend.device(); }

std::string fixture(const std::string& name) {
  return std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/qwen/" + name;
}

// The fixture in dt; float64 (which checkpoints are not loaded in) is built and given the float32 weights in place,
// so the fused q/k/v and gate/up buffers stay fused.
std::unique_ptr<M::QwenForCausalLM> load(const std::string& name, DType dt) {
  auto m = M::QwenForCausalLM::from_pretrained(fixture(name), {.device = dev(), .dtype = DType::f32});
  if (dt == DType::f32) return m;
  auto d = std::make_unique<M::QwenForCausalLM>(m->config, genesis::Options{.dtype = dt, .device = dev()});
  genesis::TensorMap sd;
  for (const auto& [k, t] : m->state_dict()) sd[k] = t.to(dt);
  d->load_state_dict(sd);
  d->generation_defaults = m->generation_defaults;
  return d;
}

std::string temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("genesis_lora_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

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

Tensor ids_for(int64_t B, int64_t T, int64_t vocab, int64_t salt = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < B * T; ++i) v.push_back((i * 37 + 11 + salt * 101) % vocab);
  return genesis::tensor(v, {B, T}, {.dtype = DType::i64, .device = dev()});
}

// Gives every B a random value (at init B is zero, which would leave the adapters' effect untested).
void randomize_b(M::LoraModel& lm, double std_ = 0.05) {
  genesis::autograd::NoGradGuard no_grad;
  for (auto& [path, a] : lm.adapters) genesis::nn::init::normal_(a->lora_B.weight, 0, std_);
}

M::LoraConfig config(int64_t r = 4, double alpha = 8, const std::string& targets = "all-linear") {
  M::LoraConfig c;
  c.r = r;
  c.lora_alpha = alpha;
  c.target_modules = M::LoraConfig::parse_targets(targets);
  return c;
}

class LoraModels : public ::testing::TestWithParam<const char*> {};

// Zero B: the adapted model's logits are the base model's (bit for bit on the inference path); A is PEFT's
// kaiming_uniform(a = sqrt(5)): U(-1/sqrt(in), 1/sqrt(in)); the base is frozen.
TEST_P(LoraModels, FreshAdaptersGiveExactlyTheBaseLogits) {
  auto m = load(GetParam(), DType::f32);
  const Tensor ids = ids_for(2, 7, m->config.vocab_size);
  // Both kernel sets: training (something requires grad; here the final norm) and inference (no grad).
  m->model.norm.weight.requires_grad_(true);
  const auto base_train = host(m->forward(ids));
  m->model.norm.weight.requires_grad_(false);
  std::vector<double> base_infer;
  {
    genesis::autograd::NoGradGuard no_grad;
    base_infer = host(m->forward(ids));
  }
  genesis::manual_seed(1);
  auto lm = M::LoraModel::attach(*m, config());
  EXPECT_EQ(lm->adapters.size(), 7u * static_cast<size_t>(m->config.num_hidden_layers));
  // Training: the adapters' zero outputs are added exactly, but which ops record for backward differs (the base's
  // norm weight above, the adapters here), and an op recording for backward may round differently: float32 rounding.
  EXPECT_LE(max_diff(host(m->forward(ids)), base_train), 2e-6 * max_abs(base_train));
  {
    // With gate/up adapters inference runs gate/up as one linear and swiglu instead of linear_swiglu (the same
    // math, rounded differently): equal to float32 rounding; without them, bit for bit.
    genesis::autograd::NoGradGuard no_grad;
    EXPECT_LE(max_diff(host(m->forward(ids)), base_infer), 1e-6 * max_abs(base_infer));
    lm->unload();
    auto attn_only = M::LoraModel::attach(*m, config(4, 8, "q_proj,k_proj,v_proj,o_proj,down_proj"));
    EXPECT_EQ(host(m->forward(ids)), base_infer);
    attn_only->unload();
    lm = M::LoraModel::attach(*m, config());
  }
  for (auto& [name, p] : m->named_parameters()) EXPECT_FALSE(p.requires_grad()) << name;
  for (auto& [path, a] : lm->adapters) {
    const auto A = host(a->lora_A.weight);
    const double bound = 1.0 / std::sqrt(static_cast<double>(a->lora_A.in_features));
    EXPECT_LE(max_abs(A), bound) << path;
    EXPECT_GT(max_abs(A), 0.5 * bound) << path;
    EXPECT_EQ(max_abs(host(a->lora_B.weight)), 0.0) << path;
    EXPECT_TRUE(a->lora_A.weight.requires_grad());
  }
  EXPECT_DOUBLE_EQ(lm->adapters[0].second->scale, 2.0);
  M::LoraConfig rs = config(4, 8);
  rs.use_rslora = true;
  EXPECT_DOUBLE_EQ(rs.scale(), 4.0);
}

// d(loss)/d(A, B) against central differences in float64, the loss a fixed random projection of the logits.
TEST_P(LoraModels, GradientsMatchFiniteDifferences) {
  auto m = load(GetParam(), DType::f64);
  genesis::manual_seed(2);
  auto lm = M::LoraModel::attach(*m, config(3, 6));
  randomize_b(*lm, 0.2);
  const Tensor ids = ids_for(2, 5, m->config.vocab_size);
  const Tensor w = genesis::randn({2, 5, m->config.vocab_size}, {.dtype = DType::f64, .device = dev()});
  auto f = [&] { return (m->forward(ids) * w).sum(); };
  f().backward();
  int checked = 0;
  for (size_t i = 0; i < lm->adapters.size(); i += 3) {
    for (genesis::nn::Linear* l : {&lm->adapters[i].second->lora_A, &lm->adapters[i].second->lora_B}) {
      Tensor p = l->weight;
      const auto g = host(p.grad());
      const int64_t n = p.numel();
      for (int64_t k : {int64_t{0}, n / 2, n - 1}) {
        const double h = 1e-6;
        Tensor flat = p.view({n});
        double num;
        {
          genesis::autograd::NoGradGuard no_grad;
          const double x0 = host(flat.select(0, k))[0];
          flat.select(0, k).fill_(x0 + h);
          const double up = f().item<double>();
          flat.select(0, k).fill_(x0 - h);
          const double down = f().item<double>();
          flat.select(0, k).fill_(x0);
          num = (up - down) / (2 * h);
        }
        const double tol = 1e-7 * std::max(1.0, max_abs(g));
        EXPECT_NEAR(g[static_cast<size_t>(k)], num, tol) << lm->adapters[i].first << " element " << k;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 12);
}

// Merging folds B A * scale into the weights: the merged model's logits equal the adapted ones (f32: 1e-5 of the
// largest logit, f64: 1e-10), and without the merge the adapters change the logits.
TEST_P(LoraModels, MergedModelEqualsAdaptedModel) {
  for (DType dt : {DType::f32, DType::f64}) {
    auto m = load(GetParam(), dt);
    const Tensor ids = ids_for(2, 9, m->config.vocab_size);
    const auto base = host(m->forward(ids));
    genesis::manual_seed(3);
    auto lm = M::LoraModel::attach(*m, config(4, 16, "q_proj,v_proj,o_proj,up_proj,down_proj"));
    randomize_b(*lm);
    const auto adapted = host(m->forward(ids));
    const double scale = max_abs(adapted);
    EXPECT_GT(max_diff(adapted, base), 1e-3 * scale);
    lm->merge_and_unload();
    const auto merged = host(m->forward(ids));
    EXPECT_LE(max_diff(merged, adapted), (dt == DType::f32 ? 1e-5 : 1e-10) * scale) << genesis::dtype_name(dt);
    // The merged weights still share the fused buffers: the inference kernels stay on.
    genesis::autograd::NoGradGuard no_grad;
    const M::QwenKernels k = m->model.kernels(nullptr);
    EXPECT_TRUE(k.fused_qkv && k.fused_mlp);
  }
}

// The inference set (one q/k/v projection with the adapters added to its row blocks, rope over all heads, gate/up
// as one projection) against the training set (separate projections), and greedy generation (prefill and decode
// steps over a KV cache) against argmax of the training forward.
TEST_P(LoraModels, FusedInferencePathEqualsTrainingForward) {
  auto m = load(GetParam(), DType::f64);
  genesis::manual_seed(4);
  auto lm = M::LoraModel::attach(*m, config(4, 8, "k_proj,gate_proj,down_proj"));  // some q/k/v and gate/up unset
  randomize_b(*lm, 0.3);
  const Tensor ids = ids_for(1, 6, m->config.vocab_size, 2);
  const auto train = host(m->forward(ids));  // adapters require grad: the training kernels
  EXPECT_FALSE(m->model.kernels(nullptr).inference);
  std::vector<double> infer;
  {
    genesis::autograd::NoGradGuard no_grad;
    const M::QwenKernels k = m->model.kernels(nullptr);
    EXPECT_TRUE(k.inference && k.fused_qkv && k.fused_mlp);
    infer = host(m->forward(ids));
  }
  EXPECT_LE(max_diff(infer, train), 1e-10 * max_abs(train));

  M::GenerationConfig g;
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  std::vector<int64_t> prompt;
  for (double x : host(ids)) prompt.push_back(static_cast<int64_t>(x));
  const auto out = M::generate(*m, {prompt}, g).tokens[0];
  ASSERT_EQ(out.size(), 6u);
  std::vector<int64_t> seq = prompt;
  for (size_t s = 0; s < out.size(); ++s) {
    const int64_t T = static_cast<int64_t>(seq.size());
    const Tensor lg = m->forward(genesis::tensor(seq, {1, T}, {.dtype = DType::i64, .device = dev()}));
    const auto last = host(lg.select(1, T - 1).reshape({-1}));
    const int64_t best = std::max_element(last.begin(), last.end()) - last.begin();
    EXPECT_EQ(out[s], best) << "step " << s;
    seq.push_back(best);
  }

  // Serving's packed forward over a paged cache: the last position's logits equal the training forward's.
  genesis::autograd::NoGradGuard no_grad;
  const int64_t T = ids.size(1), bs = 4;
  M::PagedKVCache cache = M::PagedKVCache::allocate(m->config, 4, bs, dev(), DType::f64);
  M::PagedBatch pb;
  pb.cache = &cache;
  pb.slots = genesis::arange(static_cast<double>(T), {.dtype = DType::i64, .device = dev()});
  pb.block_tables =
      genesis::tensor(std::vector<int64_t>{0, 1, 2, 3}, {1, 4}, {.dtype = DType::i64, .device = dev()}).to(DType::i32);
  pb.seq_lens = genesis::tensor(std::vector<int64_t>{T}, {1}, {.dtype = DType::i64, .device = dev()});
  pb.query_start = genesis::tensor(std::vector<int64_t>{0, T}, {2}, {.dtype = DType::i64, .device = dev()});
  const Tensor rows = genesis::tensor(std::vector<int64_t>{T - 1}, {1}, {.dtype = DType::i64, .device = dev()});
  const auto paged = host(m->forward_paged(ids, pb.slots, pb, rows, T));
  const std::vector<double> want(train.end() - m->config.vocab_size, train.end());
  EXPECT_LE(max_diff(paged, want), 1e-10 * max_abs(want));
}

// Over a bfloat16 base the adapters are float32 (as PEFT keeps them); forward and backward run, the logits stay
// bfloat16, and the merged model matches the adapted one to bfloat16 rounding of the weights (2e-2 of the largest
// logit).
TEST(LoraModelsBf16, Bfloat16BaseKeepsFloat32Adapters) {
  auto m = load("qwen2-tiny", DType::bf16);
  genesis::manual_seed(8);
  auto lm = M::LoraModel::attach(*m, config(4, 8));
  randomize_b(*lm, 0.1);
  for (auto& [path, a] : lm->adapters) EXPECT_EQ(a->lora_A.weight.dtype(), DType::f32) << path;
  const Tensor ids = ids_for(1, 6, m->config.vocab_size);
  Tensor lg = m->forward(ids);
  EXPECT_EQ(lg.dtype(), DType::bf16);
  lg.to(DType::f32).sum().backward();
  for (auto& [path, a] : lm->adapters) ASSERT_TRUE(a->lora_B.weight.grad().defined()) << path;
  const auto adapted = host(lg);
  lm->merge_and_unload();
  genesis::autograd::NoGradGuard no_grad;
  EXPECT_LE(max_diff(host(m->forward(ids)), adapted), 2e-2 * max_abs(adapted));
}

// Activation checkpointing (each layer recomputed in backward) gives the adapters the same gradients, bit for bit.
TEST(LoraModelsCheckpointing, SameGradientsWithActivationCheckpointing) {
  auto m = load("qwen3-tiny", DType::f32);
  genesis::manual_seed(9);
  auto lm = M::LoraModel::attach(*m, config(4, 8));
  randomize_b(*lm, 0.1);
  const Tensor ids = ids_for(2, 6, m->config.vocab_size);
  auto grads = [&](bool ckpt) {
    m->model.gradient_checkpointing = ckpt;
    for (auto& [path, a] : lm->adapters) {
      a->lora_A.weight.set_grad(Tensor());
      a->lora_B.weight.set_grad(Tensor());
    }
    m->forward(ids).sum().backward();
    std::vector<std::vector<double>> g;
    for (auto& [path, a] : lm->adapters) {
      g.push_back(host(a->lora_A.weight.grad()));
      g.push_back(host(a->lora_B.weight.grad()));
    }
    return g;
  };
  const auto plain = grads(false), recomputed = grads(true);
  ASSERT_EQ(plain.size(), recomputed.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i], recomputed[i]) << lm->adapters[i / 2].first;
  EXPECT_GT(max_abs(plain[1]), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoraModels, ::testing::Values("qwen2-tiny", "qwen3-tiny"));

// save_pretrained -> from_pretrained: PEFT's file names, keys and shapes; equal weights and logits.
TEST(LoraFiles, SaveLoadRoundTrip) {
  auto m = load("qwen2-tiny", DType::f32);
  genesis::manual_seed(5);
  M::LoraConfig c = config(4, 8, "q_proj,v_proj,down_proj");
  c.lora_dropout = 0.05;
  c.base_model_name_or_path = "Qwen/Qwen2.5-0.5B";
  auto lm = M::LoraModel::attach(*m, c);
  randomize_b(*lm);
  const Tensor ids = ids_for(2, 6, m->config.vocab_size);
  std::vector<double> adapted;
  {
    genesis::autograd::NoGradGuard no_grad;
    adapted = host(m->forward(ids));
  }
  const std::string dir = temp_dir("roundtrip");
  lm->save_pretrained(dir);

  const auto j = nlohmann::json::parse(M::read_text_file(dir + "/adapter_config.json"));
  EXPECT_EQ(j["peft_type"], "LORA");
  EXPECT_EQ(j["task_type"], "CAUSAL_LM");
  EXPECT_EQ(j["r"], 4);
  EXPECT_EQ(j["lora_alpha"], 8.0);
  EXPECT_EQ(j["bias"], "none");
  EXPECT_EQ(j["fan_in_fan_out"], false);
  EXPECT_EQ(j["use_rslora"], false);
  EXPECT_EQ(j["base_model_name_or_path"], "Qwen/Qwen2.5-0.5B");
  EXPECT_EQ(j["target_modules"], nlohmann::json({"q_proj", "v_proj", "down_proj"}));
  const auto f = genesis::load_safetensors(dir + "/adapter_model.safetensors");
  EXPECT_EQ(f.tensors.size(), 3u * 2 * static_cast<size_t>(m->config.num_hidden_layers));
  const int64_t H = m->config.hidden_size, I = m->config.intermediate_size;
  EXPECT_EQ(f.tensors.at("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight").shape(),
            (genesis::Shape{4, H}));
  EXPECT_EQ(f.tensors.at("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight").shape(),
            (genesis::Shape{m->config.num_attention_heads * m->config.head_dim, 4}));
  EXPECT_EQ(f.tensors.at("base_model.model.model.layers.0.mlp.down_proj.lora_A.weight").shape(),
            (genesis::Shape{4, I}));

  auto m2 = load("qwen2-tiny", DType::f32);
  auto back = M::LoraModel::from_pretrained(*m2, dir);
  EXPECT_EQ(back->config.r, 4);
  EXPECT_DOUBLE_EQ(back->config.lora_dropout, 0.05);
  const auto a = lm->peft_state_dict(), b = back->peft_state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, t] : a) EXPECT_EQ(host(t), host(b.at(k))) << k;
  EXPECT_EQ(host(m2->forward(ids)), adapted);  // loaded adapters are frozen: the inference path
  fs::remove_all(dir);
}

// An adapter for another base (a tensor of another shape) is refused naming the tensor and both shapes; unsupported
// config values name their field; nothing stays attached after a failed load.
TEST(LoraFiles, WrongAdapterIsAClearError) {
  auto m = load("qwen2-tiny", DType::f32);
  genesis::manual_seed(6);
  auto lm = M::LoraModel::attach(*m, config(4, 8, "q_proj"));
  const std::string dir = temp_dir("wrong");
  lm->save_pretrained(dir);
  genesis::TensorMap t = lm->peft_state_dict();
  const std::string key = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
  t[key] = genesis::zeros({4, m->config.hidden_size + 8});
  genesis::save_safetensors(dir + "/adapter_model.safetensors", t);
  auto m2 = load("qwen2-tiny", DType::f32);
  try {
    M::LoraModel::from_pretrained(*m2, dir);
    ADD_FAILURE() << "a wrongly shaped adapter loaded";
  } catch (const genesis::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, " + std::to_string(m->config.hidden_size + 8) + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, " + std::to_string(m->config.hidden_size) + ")"), std::string::npos) << msg;
  }
  EXPECT_FALSE(m2->model.layers[0]->self_attn.q_lora);
  // A second attach on an adapted model is refused.
  EXPECT_THROW(M::LoraModel::attach(*m, config()), genesis::Error);

  auto refused = [](const std::string& text, const std::string& field) {
    try {
      M::LoraConfig::from_json(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const genesis::Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  const std::string ok = R"("r": 8, "lora_alpha": 16, "target_modules": ["q_proj"])";
  refused(R"({"peft_type": "PREFIX_TUNING", )" + ok + "}", "peft_type");
  refused(R"({"peft_type": "LORA", "bias": "all", )" + ok + "}", "bias");
  refused(R"({"peft_type": "LORA", "fan_in_fan_out": true, )" + ok + "}", "fan_in_fan_out");
  refused(R"({"peft_type": "LORA", "use_dora": true, )" + ok + "}", "use_dora");
  refused(R"({"peft_type": "LORA", "rank_pattern": {"q_proj": 4}, )" + ok + "}", "rank_pattern");
  refused(R"({"peft_type": "LORA", "lora_bias": true, )" + ok + "}", "lora_bias");
  refused(R"({"peft_type": "LORA", "layer_replication": [[0, 1]], )" + ok + "}", "layer_replication");
  refused(R"({"peft_type": "LORA", "task_type": "SEQ_CLS", )" + ok + "}", "task_type");
  refused(R"({"peft_type": "LORA", "r": 8, "target_modules": ["qkv"]})", "target_modules");
  refused(R"({"peft_type": "LORA", "r": 0, "target_modules": ["q_proj"]})", "r");
  refused(R"({"peft_type": "LORA", "r": 8, "target_modules": ".*proj"})", "target_modules");
  const M::LoraConfig c = M::LoraConfig::from_json(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16,
      "target_modules": ["v_proj", "q_proj"], "task_type": "CAUSAL_LM", "bias": "none", "use_rslora": true})");
  EXPECT_EQ(c.target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_DOUBLE_EQ(c.scale(), 16 / std::sqrt(8.0));
  fs::remove_all(dir);
}

// The adapted logits recomputed from the written files alone (adapter_config.json, adapter_model.safetensors and
// the base model.safetensors) by an independent PyTorch forward applying W + B A * scale (test_lora_peft_math.py).
TEST(LoraFiles, PeftMathMatchesAnIndependentTorchForward) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 + torch";
  auto m = load("qwen2-tiny", DType::f64);
  genesis::manual_seed(7);
  M::LoraConfig c = config(4, 8, "all-linear");
  c.use_rslora = true;
  auto lm = M::LoraModel::attach(*m, c);
  randomize_b(*lm, 0.2);
  const Tensor ids = ids_for(1, 8, m->config.vocab_size, 3);
  const std::string dir = temp_dir("peft_math");
  lm->save_pretrained(dir + "/adapter");
  genesis::autograd::NoGradGuard no_grad;
  genesis::save_safetensors(dir + "/expected.safetensors", {{"input_ids", ids}, {"logits", m->forward(ids)}});
  const std::string cmd = "/usr/bin/python3 " + std::string(GENESIS_SOURCE_DIR) +
                          "/tests/llm/models/test_lora_peft_math.py " + fixture("qwen2-tiny") + " " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(dir);
}

}  // namespace
