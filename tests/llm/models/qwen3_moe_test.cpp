// qwen3_moe_test.cpp - Qwen3-MoE (Qwen3MoeForCausalLM) parity with HF transformers on the fixture
// tests/fixtures/families/qwen3-moe (8 experts top-2 with norm_topk_prob, layer 1 dense through mlp_only_layers;
// logits, LM loss, the router's load-balancing loss, gradients and greedy ids computed in float64 by
// make_families.py), plus the checkpoint's per-expert names on save, the sparse-layer rule and refused configs.
//
// transformers 5 keeps each layer's experts fused in memory, so its gradients are
// grad.model.layers.{i}.mlp.experts.gate_up_proj (E, 2I, H) (rows [0, I) gate_proj, [I, 2I) up_proj) and
// ...experts.down_proj (E, H, I); they are cut here into the per-expert gradients of the checkpoint's names.
//
// The reference plugin by default; GENESIS_QWEN3_MOE_PLUGINS ("cpu,reference", "cuda,reference") and
// GENESIS_QWEN3_MOE_DEVICE ("cuda") run the same checks on another backend.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/moe.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/train/sft.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_QWEN3_MOE", "qwen3-moe test");
const Device& dev() { return g_backend.device(); }

std::string fixture() { return std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/families/qwen3-moe"; }

std::vector<double> host(const Tensor& t) { return t.to(Device("cpu")).to(DType::f64).tolist(); }

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}
std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double x : host(t)) out.push_back(static_cast<int64_t>(x));
  return out;
}

std::vector<double> grad_or_zeros(const Tensor& p) {
  return p.grad().defined() ? host(p.grad()) : std::vector<double>(static_cast<size_t>(p.numel()), 0.0);
}

std::shared_ptr<M::SparseMoeBlock> moe_of(M::QwenDecoderLayer& l) {
  return std::dynamic_pointer_cast<M::SparseMoeBlock>(l.feed_forward_block);
}

// The fixture's gradients under the checkpoint's per-expert names.
std::map<std::string, Tensor> reference_gradients(const genesis::TensorMap& ref, int64_t E, int64_t I) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : ref) {
    if (k.rfind("grad.", 0) != 0) continue;
    const std::string name = k.substr(5);
    const auto at = name.find("mlp.experts.");
    if (at == std::string::npos) {
      out[name] = v;
      continue;
    }
    const std::string pre = name.substr(0, at) + "mlp.experts.", what = name.substr(at + 12);
    for (int64_t e = 0; e < E; ++e) {
      const std::string ex = pre + std::to_string(e) + ".";
      if (what == "gate_up_proj") {
        out[ex + "gate_proj.weight"] = v.select(0, e).slice(0, 0, I);
        out[ex + "up_proj.weight"] = v.select(0, e).slice(0, I, 2 * I);
      } else if (what == "down_proj") {
        out[ex + "down_proj.weight"] = v.select(0, e);
      } else {
        ADD_FAILURE() << "unexpected fixture gradient " << k;
      }
    }
  }
  return out;
}

// f32 against the float64 oracle: logits within 1e-4 of their max magnitude, the LM loss, the load-balancing loss
// and the loss with it within 1e-5 (relative), every gradient within 1e-4 of its max magnitude.
TEST(Qwen3Moe, LogitsLossesAndGradientsMatchTransformers) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::f32});
  const auto& c = model->config;
  EXPECT_EQ(c.model_type, "qwen3_moe");
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_FALSE(c.output_router_logits);
  auto ref = genesis::load(fixture() + "/reference.safetensors", dev());
  const Tensor ids = ref.at("input_ids"), labels = ref.at("labels");

  const auto want = host(ref.at("logits")), got = host(model->forward(ids));
  const double scale = max_abs(want);
  EXPECT_LE(max_diff(got, want), 1e-4 * scale) << "logits, max |logit| " << scale;
  std::cout << "qwen3-moe on " << dev().str() << ": logits max |err| / max |logit| = " << max_diff(got, want) / scale
            << "\n";

  Tensor loss = model->loss(ids, labels);  // output_router_logits is false: the LM loss alone
  const double lw = host(ref.at("loss"))[0];
  EXPECT_NEAR(host(loss)[0], lw, 1e-5 * std::fabs(lw));
  EXPECT_NE(genesis_test::error_of([&] { model->router_aux_loss(); }).find("kept no router logits"), std::string::npos);

  loss.backward();
  const auto grads = reference_gradients(ref, c.num_experts, c.moe_intermediate_size);
  std::set<std::string> seen;
  double worst_grad = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    auto it = grads.find(name);
    ASSERT_NE(it, grads.end()) << "no fixture gradient for " << name;
    // An expert no token chose gets no gradient here and zeros in transformers' fused tensor.
    const auto gw = host(it->second), gg = grad_or_zeros(p);
    EXPECT_LE(max_diff(gg, gw), 1e-4 * max_abs(gw)) << "grad of " << name << ", max |grad| " << max_abs(gw);
    if (max_abs(gw) > 0) worst_grad = std::max(worst_grad, max_diff(gg, gw) / max_abs(gw));
    seen.insert(name);
  }
  std::cout << "qwen3-moe: loss rel err " << std::fabs(host(loss)[0] - lw) / lw << ", worst gradient err / max |grad| "
            << worst_grad << " over " << seen.size() << " parameters\n";
  EXPECT_EQ(seen.size(), grads.size()) << "every fixture gradient has a parameter";

  // output_router_logits: loss() adds router_aux_loss_coef times the load-balancing loss of that forward.
  model->config.output_router_logits = true;
  const double lwa = host(ref.at("loss_with_aux"))[0];
  EXPECT_NEAR(host(model->loss(ids, labels))[0], lwa, 1e-5 * std::fabs(lwa));
  EXPECT_GT(std::fabs(lwa - lw), 1e-2) << "the fixture's aux term is visible";
  const double aux = host(model->router_aux_loss())[0], aw = host(ref.at("router_aux_loss"))[0];
  EXPECT_NEAR(aux, aw, 1e-5 * std::fabs(aw)) << "load-balancing loss";
  std::cout << "qwen3-moe: aux loss rel err " << std::fabs(aux - aw) / aw << "\n";
}

// bfloat16 weights: the router's softmax and top-k in float32, the routing weights and the experts in bfloat16;
// logits within what bfloat16 rounding allows through 3 layers (3% of their max magnitude), the loss within 1%.
TEST(Qwen3Moe, Bfloat16IsCloseToTheFloat64Oracle) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::bf16});
  auto ref = genesis::load(fixture() + "/reference.safetensors", dev());
  genesis::NoGradGuard ng;
  const Tensor logits = model->forward(ref.at("input_ids"));
  EXPECT_EQ(logits.dtype(), DType::bf16);
  const auto want = host(ref.at("logits")), got = host(logits);
  EXPECT_LE(max_diff(got, want), 0.03 * max_abs(want));
  std::cout << "qwen3-moe bf16 on " << dev().str()
            << ": logits max |err| / max |logit| = " << max_diff(got, want) / max_abs(want) << "\n";
  const double lw = host(ref.at("loss"))[0];
  EXPECT_NEAR(host(model->loss(ref.at("input_ids"), ref.at("labels")))[0], lw, 0.01 * lw);
}

// Negative control: the same checkpoint without the top-k renormalisation is far from the oracle.
TEST(Qwen3Moe, WithoutNormTopkProbTheLogitsDiffer) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::f32});
  int sparse = 0;
  for (auto& l : model->model.layers)
    if (auto m = moe_of(*l)) {
      m->config.norm_topk_prob = false;
      ++sparse;
    }
  EXPECT_EQ(sparse, 2);
  auto ref = genesis::load(fixture() + "/reference.safetensors", dev());
  genesis::NoGradGuard ng;
  const auto want = host(ref.at("logits")), got = host(model->forward(ref.at("input_ids")));
  EXPECT_GT(max_diff(got, want), 1e-2 * max_abs(want));
}

// Activation checkpointing recomputes the experts in backward: the same gradients; with the load-balancing loss
// (whose router logits a checkpointed forward cannot keep for backward) it is refused.
TEST(Qwen3Moe, GradientCheckpointingGivesTheSameGradients) {
  auto ref = genesis::load(fixture() + "/reference.safetensors", dev());
  std::vector<std::map<std::string, std::vector<double>>> grads;
  for (bool ckpt : {false, true}) {
    auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::f32});
    model->model.gradient_checkpointing = ckpt;
    model->loss(ref.at("input_ids"), ref.at("labels")).backward();
    grads.emplace_back();
    for (const auto& [n, p] : model->named_parameters()) grads.back()[n] = grad_or_zeros(p);
    if (ckpt) {
      model->config.output_router_logits = true;
      EXPECT_NE(genesis_test::error_of([&] {
                  model->loss(ref.at("input_ids"), ref.at("labels"));
                }).find("gradient checkpointing"),
                std::string::npos);
    }
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (const auto& [n, g] : grads[0]) EXPECT_LE(max_diff(g, grads[1][n]), 1e-6 * max_abs(g)) << n;
}

TEST(Qwen3Moe, GreedyGenerationIsIdentical) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev()});
  auto ref = genesis::load(fixture() + "/reference.safetensors");
  const auto prompt = ints(ref.at("generate.prompt")), full = ints(ref.at("generate.output"));
  M::GenerationConfig g;
  g.max_new_tokens = static_cast<int64_t>(full.size() - prompt.size());
  g.ignore_eos = true;
  auto r = M::generate(*model, {prompt}, g);
  EXPECT_EQ(r.tokens[0], std::vector<int64_t>(full.begin() + static_cast<int64_t>(prompt.size()), full.end()));
}

// LoRA adapts the attention projections of every layer and the dense layer's MLP; the experts get none (as PEFT
// over transformers 5's fused experts); the adapters train through the sparse layers.
TEST(Qwen3Moe, LoraSkipsTheExperts) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::f32});
  auto lm = M::LoraModel::attach(*model, M::LoraConfig{});
  std::set<std::string> paths;
  for (const auto& [path, a] : lm->adapters) paths.insert(path);
  EXPECT_EQ(paths.size(), 3u * 4 + 3);
  EXPECT_TRUE(paths.count("model.layers.1.mlp.gate_proj"));
  EXPECT_FALSE(paths.count("model.layers.0.mlp.gate_proj"));
  EXPECT_TRUE(paths.count("model.layers.2.self_attn.q_proj"));
  auto ref = genesis::load(fixture() + "/reference.safetensors", dev());
  model->loss(ref.at("input_ids"), ref.at("labels")).backward();
  for (const auto& [path, a] : lm->adapters) EXPECT_GT(max_abs(grad_or_zeros(a->lora_B.weight)), 0.0) << path;
}

// The paged serving path (forward_paged over a block pool, as the engine runs it): a prefill, then two decode steps,
// give the rows of the plain forward over the same tokens (blocks of 4 positions, out of order in the pool).
TEST(Qwen3Moe, PagedForwardMatchesTheForward) {
  auto m = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev()});
  const std::vector<int64_t> all = {5, 17, 99, 3, 8, 1, 2, 3, 4, 5, 6, 7, 300, 12, 40, 41, 42, 43};
  const int64_t N = static_cast<int64_t>(all.size()), prompt = N - 2, bs = 4, V = m->config.vocab_size;
  M::PagedKVCache cache = M::PagedKVCache::allocate(m->config, 8, bs, dev(), DType::f32);
  const std::vector<int64_t> blocks = {6, 2, 7, 0, 5};  // covers 20 positions
  std::vector<double> full;
  {
    genesis::NoGradGuard ng;
    full = host(m->forward(genesis::tensor(all, {1, N}, {.device = dev()})).view({N, -1}));
  }
  auto pass = [&](int64_t from, int64_t to) {  // tokens [from, to) after the cache holds [0, from)
    std::vector<int64_t> ids(all.begin() + from, all.begin() + to), pos, slots, rows;
    for (int64_t p = from; p < to; ++p) {
      pos.push_back(p);
      slots.push_back(blocks[static_cast<size_t>(p / bs)] * bs + p % bs);
      rows.push_back(p - from);
    }
    const int64_t T = to - from;
    M::PagedBatch b;
    b.cache = &cache;
    b.slots = genesis::tensor(slots, {T}, {.device = dev()});
    b.block_tables =
        genesis::tensor(blocks, {1, static_cast<int64_t>(blocks.size())}, {.device = dev()}).to(DType::i32);
    b.seq_lens = genesis::tensor(std::vector<int64_t>{to}, {1}, {.device = dev()});
    b.query_start = genesis::tensor(std::vector<int64_t>{0, T}, {2}, {.device = dev()});
    const auto got = host(m->forward_paged(genesis::tensor(ids, {1, T}, {.device = dev()}),
                                           genesis::tensor(pos, {T}, {.device = dev()}), b,
                                           genesis::tensor(rows, {T}, {.device = dev()}), to));
    const std::vector<double> want(full.begin() + from * V, full.begin() + to * V);
    EXPECT_LE(max_diff(got, want), 1e-5 * max_abs(want)) << "positions " << from << ".." << to - 1;
  };
  pass(0, prompt);
  pass(prompt, prompt + 1);
  pass(prompt + 1, N);
}

// SFT through the sparse layers: a run stopped after 3 of 6 steps and resumed from its checkpoint (into a model whose
// every tensor was overwritten) gives the straight run's losses and parameters bit for bit, and the run learns.
TEST(Qwen3Moe, SftResumeIsExact) {
  namespace T = genesis::train;
  namespace fs = std::filesystem;
  auto make_model = [&] {
    return M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev(), .dtype = DType::f32});
  };
  auto temp_dir = [&](const std::string& tag) {
    const fs::path p = fs::temp_directory_path() / ("genesis_qwen3_moe_sft_" + tag);
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
  };
  std::vector<T::ChatExample> ex;
  for (int64_t i = 0; i < 20; ++i) {
    T::ChatExample e;
    for (int64_t t = 0; t < 10 + i % 5; ++t) e.ids.push_back((i * 31 + t * 7) % 500 + 1);
    for (size_t t = 0; t < e.ids.size(); ++t) e.labels.push_back(t < 3 ? T::kIgnoreIndex : e.ids[t]);
    ex.push_back(e);
  }
  T::BatchOptions bo;
  bo.batch_size = 4;
  bo.seed = 3;
  T::SftBatcher data(ex, bo);
  T::SftOptions o;
  o.max_steps = 6;
  o.lr = 1e-2;
  o.warmup_steps = 2;
  o.progress = "none";
  o.grad_accum = 2;
  const std::string straight_dir = temp_dir("straight"), part = temp_dir("part");
  o.output_dir = straight_dir;
  auto m1 = make_model();
  T::SftResult straight = T::train_sft(*m1, data, nullptr, o);
  o.output_dir = part;
  o.stop_after = 3;
  auto m2 = make_model();
  T::SftResult first = T::train_sft(*m2, data, nullptr, o);
  EXPECT_EQ(first.steps, 3);
  o.stop_after = 0;
  o.resume = part + "/checkpoint.safetensors";
  auto m3 = make_model();
  {
    genesis::NoGradGuard no_grad;
    for (auto [n, t] : m3->state_dict()) t.fill_(0.5);  // everything must come from the checkpoint
  }
  T::SftResult second = T::train_sft(*m3, data, nullptr, o);
  EXPECT_EQ(second.steps, 6);
  std::vector<double> resumed = first.losses;
  resumed.insert(resumed.end(), second.losses.begin(), second.losses.end());
  ASSERT_EQ(resumed.size(), straight.losses.size());
  for (size_t i = 0; i < resumed.size(); ++i) EXPECT_EQ(resumed[i], straight.losses[i]) << "step " << i + 1;
  EXPECT_LT(straight.losses.back(), straight.losses.front()) << "the run learns";
  const auto p1 = m1->state_dict(), p3 = m3->state_dict();
  for (const auto& [n, t] : p1) EXPECT_EQ(host(t), host(p3.at(n))) << n;
  fs::remove_all(straight_dir);
  fs::remove_all(part);
}

// Layers 0 and 2 are sparse, layer 1 (mlp_only_layers) dense; the parameters are the checkpoint's tensors.
TEST(Qwen3Moe, SparseLayersAndParameterNames) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev()});
  EXPECT_TRUE(moe_of(*model->model.layers[0]));
  EXPECT_FALSE(moe_of(*model->model.layers[1]));
  EXPECT_TRUE(moe_of(*model->model.layers[2]));
  EXPECT_TRUE(moe_of(*model->model.layers[2])->weights_stacked()) << "loading keeps the experts' stacked buffers";
  std::set<std::string> names, want;
  for (const auto& [n, p] : model->named_parameters()) names.insert(n);
  for (const auto& [k, v] : genesis::load(fixture() + "/model.safetensors")) want.insert(k);
  EXPECT_EQ(names, want);
  EXPECT_TRUE(names.count("model.layers.2.mlp.experts.7.down_proj.weight"));
  EXPECT_TRUE(names.count("model.layers.1.mlp.up_proj.weight"));
}

// save_pretrained writes each expert's tensors under the checkpoint's names and the MoE fields; loading it back
// computes the same logits.
TEST(Qwen3Moe, SaveWritesPerExpertTensorsAndRoundTrips) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(), {.device = dev()});
  const std::string dir = testing::TempDir() + "qwen3_moe_save";
  model->save_pretrained(dir);
  std::set<std::string> saved, want;
  for (const auto& [k, v] : genesis::load(dir + "/model.safetensors")) saved.insert(k);
  for (const auto& [k, v] : genesis::load(fixture() + "/model.safetensors")) want.insert(k);
  EXPECT_EQ(saved, want);
  std::ifstream f(dir + "/config.json");
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("model_type"), "qwen3_moe");
  EXPECT_EQ(j.at("mlp_only_layers"), nlohmann::json::array({1}));
  EXPECT_EQ(j.at("moe_intermediate_size"), 32);
  EXPECT_EQ(j.at("norm_topk_prob"), true);
  auto back = M::QwenForCausalLM::from_pretrained(dir, {.device = dev()});
  Tensor ids = genesis::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8}, {.device = dev()});
  EXPECT_EQ(max_diff(host(model->forward(ids)), host(back->forward(ids))), 0.0);
}

std::string config_with(const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream f(fixture() + "/config.json");
  auto j = nlohmann::json::parse(f);
  edit(j);
  return j.dump();
}

// decoder_sparse_step k makes layers k-1, 2k-1, ... sparse (minus mlp_only_layers); num_experts and
// num_local_experts are the same field.
TEST(Qwen3Moe, SparseStepRule) {
  auto c = M::QwenConfig::from_json(config_with([](nlohmann::json& j) {
    j["decoder_sparse_step"] = 2;
    j["mlp_only_layers"] = nlohmann::json::array();
    j["num_hidden_layers"] = 4;
    j.erase("num_local_experts");
    j["num_experts"] = 4;
  }));
  EXPECT_EQ(c.num_experts, 4);
  EXPECT_FALSE(c.is_sparse_layer(0));
  EXPECT_TRUE(c.is_sparse_layer(1));
  EXPECT_FALSE(c.is_sparse_layer(2));
  EXPECT_TRUE(c.is_sparse_layer(3));
  M::QwenForCausalLM m(c, {.dtype = DType::f32, .device = dev()});
  EXPECT_FALSE(moe_of(*m.model.layers[0]));
  EXPECT_TRUE(moe_of(*m.model.layers[3]));
  EXPECT_EQ(moe_of(*m.model.layers[3])->experts.size(), 4u);
}

// The qwen3-30b-a3b preset has Qwen3-30B-A3B's shape: 30.5B parameters, 128 experts top-8 on all 48 layers.
TEST(Qwen3Moe, Qwen3_30B_A3BPreset) {
  const auto c = M::QwenConfig::preset("qwen3-30b-a3b");
  EXPECT_EQ(c.model_type, "qwen3_moe");
  EXPECT_TRUE(c.is_sparse_layer(0) && c.is_sparse_layer(47));
  EXPECT_NEAR(static_cast<double>(c.num_parameters()), 30.53e9, 0.01e9);
  const auto back = M::QwenConfig::from_json(c.to_json());
  EXPECT_EQ(back.num_experts, 128);
  EXPECT_EQ(back.num_experts_per_tok, 8);
  EXPECT_EQ(back.moe_intermediate_size, 768);
  EXPECT_TRUE(back.norm_topk_prob && back.qk_norm);
  EXPECT_EQ(back.num_parameters(), c.num_parameters());
}

TEST(Qwen3Moe, BadMoeFieldsAreRefusedNamingTheField) {
  auto err = [](const std::function<void(nlohmann::json&)>& edit) {
    return genesis_test::error_of([&] { M::QwenConfig::from_json(config_with(edit)); });
  };
  EXPECT_NE(err([](nlohmann::json& j) { j["num_experts_per_tok"] = 9; }).find("num_experts_per_tok"),
            std::string::npos);
  EXPECT_NE(err([](nlohmann::json& j) { j.erase("moe_intermediate_size"); }).find("moe_intermediate_size"),
            std::string::npos);
  EXPECT_NE(err([](nlohmann::json& j) { j["decoder_sparse_step"] = 0; }).find("decoder_sparse_step"),
            std::string::npos);
  EXPECT_NE(err([](nlohmann::json& j) { j["mlp_only_layers"] = nlohmann::json::array({"a"}); }).find("mlp_only_layers"),
            std::string::npos);
  EXPECT_NE(err([](nlohmann::json& j) { j["hidden_act"] = "gelu"; }).find("hidden_act"), std::string::npos);
}

}  // namespace
