// families_test.cpp - the decoder's model families (Llama with llama3/yarn/linear/dynamic rope, Mistral, Gemma 2,
// Gemma 3 text) against transformers: tests/fixtures/families/<name> hold tiny random checkpoints with the logits,
// loss, gradients and greedy generation transformers computed in float64 (make_families.py there).  Also: switches
// flipped by hand break the parity (the comparison can fail), unsupported config values are refused naming the
// field, configs round-trip, and the paged serving path refuses the features its op lacks.
//
// The reference plugin by default; GENESIS_FAMILIES_PLUGINS ("cpu,reference", "cuda,reference") and
// GENESIS_FAMILIES_DEVICE ("cuda") run the same checks on another backend.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "genesis/autograd.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/io.hpp"
#include "genesis/models/decoder.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/train/sft.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;
namespace fs = std::filesystem;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_FAMILIES", "families test");
const Device& dev() { return g_backend.device(); }

std::string fixture(const std::string& name) {
  return std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/families/" + name;
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
std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double x : host(t)) out.push_back(static_cast<int64_t>(x));
  return out;
}

// max |logits - reference| / max |reference| of a model on the fixture's inputs.
double logits_error(M::CausalLM& model, const std::map<std::string, Tensor>& ref) {
  genesis::NoGradGuard ng;
  const auto want = host(ref.at("logits")), got = host(model.forward(ref.at("input_ids")));
  return max_diff(got, want) / max_abs(want);
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class FamilyParity : public ::testing::TestWithParam<const char*> {};

// float32 weights against the float64 oracle: logits within 1e-4 of their max magnitude, the loss within 1e-5
// relative, every gradient the fixture lists within 1e-4 of its max magnitude, then the greedy generation (KV cache,
// a prompt longer than the sliding windows) token for token.  The generation runs on the same model after the
// training forward, as the fixture's did: dynamic rope scaling keeps the longest sequence it has seen.
TEST_P(FamilyParity, LogitsLossGradientsAndGreedyGenerationMatchTransformers) {
  auto model = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev(), .dtype = DType::f32});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  Tensor logits = model->forward(ref.at("input_ids"));
  const auto want = host(ref.at("logits")), got = host(logits);
  const double scale = max_abs(want), err = max_diff(got, want);
  EXPECT_LE(err, 1e-4 * scale) << "logits, max |logit| " << scale;

  Tensor loss = model->loss(ref.at("input_ids"), ref.at("labels"));
  const double lw = host(ref.at("loss"))[0], lg = host(loss)[0];
  EXPECT_NEAR(lg, lw, 1e-5 * std::fabs(lw));

  loss.backward();
  int checked = 0;
  double worst = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    auto it = ref.find("grad." + name);
    if (it == ref.end()) continue;
    ASSERT_TRUE(p.grad().defined()) << name;
    const auto gw = host(it->second), gg = host(p.grad());
    const double e = max_diff(gg, gw), m = max_abs(gw);
    EXPECT_LE(e, 1e-4 * m) << "grad of " << name << ", max |grad| " << m;
    worst = std::max(worst, m > 0 ? e / m : e);
    ++checked;
  }
  int listed = 0;
  for (const auto& [k, v] : ref) listed += k.rfind("grad.", 0) == 0;
  EXPECT_EQ(checked, listed) << "every gradient in the fixture has a parameter";
  EXPECT_EQ(static_cast<size_t>(listed), model->named_parameters().size()) << "every parameter has a gradient";

  const auto prompt = ints(ref.at("generate.prompt")), full = ints(ref.at("generate.output"));
  M::GenerationConfig g;
  g.max_new_tokens = static_cast<int64_t>(full.size() - prompt.size());
  g.ignore_eos = true;
  auto r = M::generate(*model, {prompt}, g);
  EXPECT_EQ(r.tokens[0], std::vector<int64_t>(full.begin() + static_cast<int64_t>(prompt.size()), full.end()));
  std::cout << GetParam() << " on " << dev().str() << ": logits max |err| / max |logit| = " << err / scale
            << ", loss rel err = " << std::fabs(lg - lw) / std::fabs(lw) << ", worst gradient rel err = " << worst
            << " (" << checked << " gradients)\n";
}

// The cached decode honours the sliding window: prompts longer than the window, batched with a short one, give
// what recomputing the whole sequence without a cache gives.
TEST_P(FamilyParity, CachedDecodeMatchesUncachedRecomputation) {
  if (std::string(GetParam()) == "llama-dynamic") GTEST_SKIP() << "dynamic rope depends on the sequences seen";
  auto model = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 99, 3, 8, 1, 2, 3, 4, 5, 6, 7, 300, 12}, {42, 7}};
  M::GenerationConfig g;
  g.max_new_tokens = 8;
  g.ignore_eos = true;
  auto batched = M::generate(*model, prompts, g);
  for (size_t b = 0; b < prompts.size(); ++b) {
    std::vector<int64_t> seq = prompts[b];
    genesis::NoGradGuard ng;
    for (int i = 0; i < g.max_new_tokens; ++i) {
      const int64_t T = static_cast<int64_t>(seq.size());
      Tensor lg = model->forward(genesis::tensor(seq, {1, T}, {.device = dev()}));
      seq.push_back(ints(lg.select(1, T - 1).argmax(-1))[0]);
    }
    EXPECT_EQ(std::vector<int64_t>(seq.begin() + static_cast<int64_t>(prompts[b].size()), seq.end()), batched.tokens[b])
        << "prompt " << b;
  }
}

// save_pretrained writes a folder that loads back to the same model (config switches and every tensor).
TEST_P(FamilyParity, SaveAndReloadGiveTheSameLogits) {
  auto model = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  const fs::path out = fs::temp_directory_path() / ("genesis_family_" + std::string(GetParam()));
  fs::remove_all(out);
  model->save_pretrained(out.string());
  auto back = M::CausalLM::from_pretrained(out.string(), {.device = dev()});
  const M::DecoderConfig &a = model->config, &b = back->config;
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.layer_types, b.layer_types);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(a.rope_scaling.rope_type, b.rope_scaling.rope_type);
  EXPECT_EQ(a.rope_scaling.factor, b.rope_scaling.factor);
  EXPECT_EQ(a.rope_local_theta, b.rope_local_theta);
  EXPECT_EQ(a.norm_offset, b.norm_offset);
  EXPECT_EQ(a.hidden_act, b.hidden_act);
  EXPECT_EQ(a.attn_logit_softcapping, b.attn_logit_softcapping);
  EXPECT_EQ(a.final_logit_softcapping, b.final_logit_softcapping);
  genesis::NoGradGuard ng;
  EXPECT_EQ(host(model->forward(ref.at("input_ids"))), host(back->forward(ref.at("input_ids"))));
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FamilyParity,
                         ::testing::Values("llama", "llama-yarn", "llama-linear", "llama-dynamic", "mistral", "gemma2",
                                           "gemma3"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// LoRA over each family (GeGLU, soft-capped and windowed attention included): adapters with non-zero B change the
// logits, under the training kernels (adapters require grad) and the inference ones (no grad) alike, and merging them
// into the weights gives the adapted model's logits.
TEST_P(FamilyParity, LoraAdaptersMergeToTheAdaptedModel) {
  if (std::string(GetParam()) == "llama-dynamic") GTEST_SKIP() << "the rope is the only difference from llama";
  // float64 (the same weights in a model built in float64), so that the comparisons below are at 1e-10.
  auto m32 = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev(), .dtype = DType::f32});
  auto m = std::make_unique<M::CausalLM>(m32->config, genesis::Options{.dtype = DType::f64, .device = dev()});
  genesis::TensorMap sd;
  for (const auto& [k, t] : m32->state_dict()) sd[k] = t.to(DType::f64);
  m->load_state_dict(sd);
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  const Tensor ids = ref.at("input_ids");
  const auto base = host(m->forward(ids));
  genesis::manual_seed(3);
  M::LoraConfig c;
  c.r = 4;
  c.lora_alpha = 16;
  auto lm = M::LoraModel::attach(*m, c);
  {
    genesis::NoGradGuard ng;
    for (auto& [path, a] : lm->adapters) genesis::nn::init::normal_(a->lora_B.weight, 0, 0.05);
  }
  const auto adapted = host(m->forward(ids));  // training kernels
  std::vector<double> adapted_infer;
  {
    genesis::NoGradGuard ng;
    adapted_infer = host(m->forward(ids));
  }
  const double scale = max_abs(adapted);
  EXPECT_GT(max_diff(adapted, base), 1e-3 * scale);
  EXPECT_LE(max_diff(adapted_infer, adapted), 1e-10 * scale);
  lm->merge_and_unload();
  genesis::NoGradGuard ng;
  EXPECT_LE(max_diff(host(m->forward(ids)), adapted), 1e-10 * scale);
}

// bfloat16 weights run every path (the (1 + w) norms and soft-capping in float32, the embedding scale rounded to
// bfloat16): the logits stay within bfloat16's precision of the float64 reference, and generation runs.
TEST_P(FamilyParity, Bfloat16StaysCloseToTheReference) {
  auto m = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev(), .dtype = DType::bf16});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  EXPECT_LE(logits_error(*m, ref), 5e-2);
  Tensor loss = m->loss(ref.at("input_ids"), ref.at("labels"));
  const double lw = host(ref.at("loss"))[0];
  EXPECT_NEAR(host(loss)[0], lw, 2e-2 * std::fabs(lw));
  M::GenerationConfig g;
  g.max_new_tokens = 4;
  g.ignore_eos = true;
  EXPECT_EQ(M::generate(*m, {ints(ref.at("generate.prompt"))}, g).tokens[0].size(), 4u);
}

// Negative controls: the parity check above fails when one switch is flipped, so each switch is exercised.
TEST(FamilySwitches, FlippingASwitchBreaksTheParity) {
  auto err_with = [](const std::string& name, const std::function<void(M::CausalLM&)>& flip) {
    auto model = M::CausalLM::from_pretrained(fixture(name), {.device = dev()});
    auto ref = genesis::load(fixture(name) + "/reference.safetensors", dev());
    const double before = logits_error(*model, ref);
    EXPECT_LE(before, 1e-4) << name << " unflipped";
    flip(*model);
    return logits_error(*model, ref);
  };
  // Gemma 2 without the (1 + w) offset of its norms.
  EXPECT_GT(err_with("gemma2",
                     [](M::CausalLM& m) {
                       m.model.norm.offset = false;
                       for (auto& l : m.model.layers) {
                         l->input_layernorm.offset = l->post_attention_layernorm.offset = false;
                         l->pre_feedforward_layernorm->offset = l->post_feedforward_layernorm->offset = false;
                       }
                     }),
            1e-4);
  // Mistral without its sliding window (full attention on 24 tokens, window 8).
  EXPECT_GT(err_with("mistral",
                     [](M::CausalLM& m) {
                       for (auto& l : m.model.layers) l->self_attn.sliding = false;
                     }),
            1e-4);
  // Gemma 2 without attention soft-capping, and with the default attention scale.
  EXPECT_GT(err_with("gemma2",
                     [](M::CausalLM& m) {
                       for (auto& l : m.model.layers) l->self_attn.softcap = 0;
                     }),
            1e-4);
  EXPECT_GT(err_with("gemma2",
                     [](M::CausalLM& m) {
                       for (auto& l : m.model.layers) l->self_attn.scale = 0.25;
                     }),
            1e-4);
  // Gemma 3 without the embedding scale, and with SwiGLU instead of GeGLU.
  EXPECT_GT(err_with("gemma3", [](M::CausalLM& m) { m.model.embed_scale = 0; }), 1e-4);
  EXPECT_GT(err_with("gemma3",
                     [](M::CausalLM& m) {
                       for (auto& l : m.model.layers) l->mlp.geglu = false;
                     }),
            1e-4);
  // Gemma 2 without the final logit soft-capping.
  EXPECT_GT(err_with("gemma2", [](M::CausalLM& m) { m.config.final_logit_softcapping = 0; }), 1e-4);
}

// Rope scaling and Gemma 3's local rope: the same weights under another rope config miss the reference.
TEST(FamilySwitches, RopeVariantsAreEachNeeded) {
  auto err_with_config = [](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    const fs::path out = fs::temp_directory_path() / ("genesis_family_rope_" + name);
    fs::remove_all(out);
    fs::create_directories(out);
    for (const char* f : {"model.safetensors", "generation_config.json"})
      fs::copy_file(fixture(name) + "/" + f, out / f);
    nlohmann::json j = nlohmann::json::parse(read(fixture(name) + "/config.json"));
    edit(j);
    std::ofstream(out / "config.json") << j.dump(2);
    auto model = M::CausalLM::from_pretrained(out.string(), {.device = dev()});
    auto ref = genesis::load(fixture(name) + "/reference.safetensors", dev());
    const double e = logits_error(*model, ref);
    fs::remove_all(out);
    return e;
  };
  for (const char* name : {"llama", "llama-yarn", "llama-linear", "llama-dynamic"})
    EXPECT_GT(err_with_config(name, [](nlohmann::json& j) { j["rope_parameters"]["rope_type"] = "default"; }), 1e-4)
        << name;
  EXPECT_GT(
      err_with_config("gemma3",
                      [](nlohmann::json& j) { j["rope_parameters"]["sliding_attention"]["rope_theta"] = 1000000.0; }),
      1e-4);
  // The transformers 4.x spelling of Gemma 3's ropes (rope_theta, rope_scaling, rope_local_base_freq) is the same
  // model.
  EXPECT_LE(err_with_config("gemma3",
                            [](nlohmann::json& j) {
                              j.erase("rope_parameters");
                              j["rope_theta"] = 1000000.0;
                              j["rope_local_base_freq"] = 10000.0;
                              j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
                            }),
            1e-4);
}

// Each family's config.json maps onto the switches.
TEST(FamilyConfig, SwitchesFromEachFamily) {
  const auto g2 = M::DecoderConfig::from_file(fixture("gemma2") + "/config.json");
  EXPECT_TRUE(g2.norm_offset && g2.sandwich_norms && g2.scale_embeddings && g2.tie_word_embeddings);
  EXPECT_FALSE(g2.qk_norm);
  EXPECT_EQ(g2.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(g2.attn_logit_softcapping, 20.0);
  EXPECT_EQ(g2.final_logit_softcapping, 10.0);
  EXPECT_DOUBLE_EQ(g2.attention_scale(), 1.0 / std::sqrt(24.0));
  EXPECT_TRUE(g2.is_sliding(0));
  EXPECT_FALSE(g2.is_sliding(1));
  EXPECT_TRUE(g2.is_sliding(2));
  const auto g3 = M::DecoderConfig::from_file(fixture("gemma3") + "/config.json");
  EXPECT_TRUE(g3.qk_norm && g3.norm_offset);
  EXPECT_EQ(g3.rope_theta, 1e6);
  EXPECT_EQ(g3.rope_local_theta, 1e4);
  EXPECT_EQ(g3.rope_scaling.rope_type, "linear");
  EXPECT_FALSE(g3.is_sliding(2));
  const auto mi = M::DecoderConfig::from_file(fixture("mistral") + "/config.json");
  for (int64_t l = 0; l < mi.num_hidden_layers; ++l) EXPECT_TRUE(mi.is_sliding(l));
  EXPECT_FALSE(mi.norm_offset || mi.sandwich_norms || mi.qk_norm || mi.attention_bias);
  const auto ll = M::DecoderConfig::from_file(fixture("llama") + "/config.json");
  EXPECT_EQ(ll.rope_scaling.rope_type, "llama3");
  EXPECT_EQ(ll.rope_scaling.original_max_position_embeddings, 16);
  EXPECT_FALSE(ll.tie_word_embeddings);
  EXPECT_FALSE(ll.is_sliding(0));
  // Gemma 2 without layer_types alternates from layer 0; Gemma 3 keeps every sliding_window_pattern-th layer full.
  nlohmann::json j = nlohmann::json::parse(read(fixture("gemma2") + "/config.json"));
  j.erase("layer_types");
  const auto g2d = M::DecoderConfig::from_json(j.dump());
  EXPECT_EQ(g2d.layer_types, (std::vector<std::string>{"sliding_attention", "full_attention", "sliding_attention"}));
  j = nlohmann::json::parse(read(fixture("gemma3") + "/config.json"));
  j.erase("layer_types");
  j["sliding_window_pattern"] = 2;
  EXPECT_EQ(M::DecoderConfig::from_json(j.dump()).layer_types,
            (std::vector<std::string>{"sliding_attention", "full_attention", "sliding_attention"}));
}

// Values the decoder does not implement are refused with an error naming the field.
TEST(FamilyConfig, UnsupportedValuesAreRefusedNamingTheField) {
  auto refused = [](const std::string& name, const std::function<void(nlohmann::json&)>& edit) -> std::string {
    nlohmann::json j = nlohmann::json::parse(read(fixture(name) + "/config.json"));
    edit(j);
    try {
      M::DecoderConfig::from_json(j.dump());
    } catch (const genesis::Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  auto has = [](const std::string& msg, const std::string& field) { return msg.find(field) != std::string::npos; };
  std::string m;
  m = refused("llama", [](nlohmann::json& j) { j["rope_parameters"]["rope_type"] = "longrope"; });
  EXPECT_TRUE(has(m, "rope_parameters.rope_type") && has(m, "longrope")) << m;
  m = refused("llama", [](nlohmann::json& j) { j["mlp_bias"] = true; });
  EXPECT_TRUE(has(m, "mlp_bias")) << m;
  m = refused("llama", [](nlohmann::json& j) { j["hidden_act"] = "relu"; });
  EXPECT_TRUE(has(m, "hidden_act") && has(m, "relu")) << m;
  m = refused("gemma2", [](nlohmann::json& j) { j["hidden_activation"] = "gelu"; });
  EXPECT_TRUE(has(m, "hidden_activation")) << m;
  m = refused("gemma3", [](nlohmann::json& j) { j["architectures"] = {"Gemma3ForConditionalGeneration"}; });
  EXPECT_TRUE(has(m, "architectures")) << m;
  m = refused("gemma2", [](nlohmann::json& j) { j["layer_types"] = {"full_attention"}; });
  EXPECT_TRUE(has(m, "layer_types")) << m;
  m = refused("gemma2", [](nlohmann::json& j) { j["layer_types"][0] = "chunked_attention"; });
  EXPECT_TRUE(has(m, "layer_types") && has(m, "chunked_attention")) << m;
  m = refused("llama", [](nlohmann::json& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.5; });
  EXPECT_TRUE(has(m, "partial_rotary_factor")) << m;
  m = refused("llama", [](nlohmann::json& j) { j["rope_parameters"].erase("original_max_position_embeddings"); });
  EXPECT_TRUE(has(m, "original_max_position_embeddings")) << m;
  m = refused("llama-linear", [](nlohmann::json& j) { j["rope_parameters"].erase("factor"); });
  EXPECT_TRUE(has(m, "rope_parameters.factor")) << m;
  m = refused("gemma3", [](nlohmann::json& j) { j["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; });
  EXPECT_TRUE(has(m, "rope_parameters.sliding_attention")) << m;
  m = refused("mistral", [](nlohmann::json& j) { j["model_type"] = "mixtral"; });
  EXPECT_TRUE(has(m, "model_type") && has(m, "mixtral")) << m;
  m = refused("mistral", [](nlohmann::json& j) { j["attn_logit_softcapping"] = 30.0; });
  EXPECT_TRUE(has(m, "attn_logit_softcapping")) << m;
  m = refused("gemma3", [](nlohmann::json& j) { j["use_bidirectional_attention"] = true; });
  EXPECT_TRUE(has(m, "use_bidirectional_attention")) << m;
}

// Supervised fine-tuning of a new family resumes exactly: 6 steps straight against 3 steps, stop, resume for 3 give
// the same losses and parameters bit for bit (Gemma 2: soft-capped composed attention, sliding windows, sandwich
// norms; Llama: llama3 rope scaling, untied head; Gemma 3: the sliding layers' own rope).
void expect_exact_resume(const std::string& name) {
  namespace T = genesis::train;
  auto make_model = [&] { return M::CausalLM::from_pretrained(fixture(name), {.device = dev(), .dtype = DType::f32}); };
  auto temp_dir = [&](const std::string& tag) {
    const fs::path p = fs::temp_directory_path() / ("genesis_family_sft_" + name + "_" + tag);
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
  o.weight_decay = 0.1;
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
  for (size_t i = 0; i < resumed.size(); ++i) EXPECT_EQ(resumed[i], straight.losses[i]) << name << " step " << i + 1;
  EXPECT_LT(straight.losses.back(), straight.losses.front()) << name << ": the run learns";
  const auto p1 = m1->state_dict(), p3 = m3->state_dict();
  for (const auto& [n, t] : p1) EXPECT_EQ(host(t), host(p3.at(n))) << name << " " << n;
  fs::remove_all(straight_dir);
  fs::remove_all(part);
}

TEST(FamilySft, Gemma2ResumeIsExact) { expect_exact_resume("gemma2"); }
TEST(FamilySft, LlamaResumeIsExact) { expect_exact_resume("llama"); }
TEST(FamilySft, Gemma3ResumeIsExact) { expect_exact_resume("gemma3"); }

// The paged serving path (forward_paged over a block pool, as the engine runs it) takes each family's switches: a
// prefill of a prompt longer than the sliding window, then two decode steps, give the rows of the plain forward over
// the same tokens (blocks of 4 positions, the sequence's blocks out of order in the pool).
TEST_P(FamilyParity, PagedForwardMatchesTheForward) {
  if (std::string(GetParam()) == "llama-dynamic") GTEST_SKIP() << "refused on the paged path (see below)";
  auto m = M::CausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const std::vector<int64_t> all = {5, 17, 99, 3, 8, 1, 2, 3, 4, 5, 6, 7, 300, 12, 40, 41, 42, 43};
  const int64_t N = static_cast<int64_t>(all.size()), prompt = N - 2, bs = 4;
  M::PagedKVCache cache = M::PagedKVCache::allocate(m->config, 8, bs, dev(), DType::f32);
  const std::vector<int32_t> blocks = {6, 2, 7, 0, 5};  // covers 20 positions
  std::vector<double> full;
  {
    genesis::NoGradGuard ng;
    full = host(m->forward(genesis::tensor(all, {1, N}, {.device = dev()})).view({N, -1}));
  }
  const int64_t V = m->config.vocab_size;
  auto slot = [&](int64_t p) { return int64_t{blocks[static_cast<size_t>(p / bs)]} * bs + p % bs; };
  auto pass = [&](int64_t from, int64_t to) {  // tokens [from, to) after the cache holds [0, from)
    std::vector<int64_t> ids(all.begin() + from, all.begin() + to), pos, slots, rows;
    for (int64_t p = from; p < to; ++p) {
      pos.push_back(p);
      slots.push_back(slot(p));
      rows.push_back(p - from);
    }
    const int64_t T = to - from;
    M::PagedBatch b;
    b.cache = &cache;
    b.slots = genesis::tensor(slots, {T}, {.device = dev()});
    b.block_tables = genesis::tensor(std::vector<int64_t>(blocks.begin(), blocks.end()),
                                     {1, static_cast<int64_t>(blocks.size())}, {.device = dev()})
                         .to(DType::i32);
    b.seq_lens = genesis::tensor(std::vector<int64_t>{to}, {1}, {.device = dev()});
    b.query_start = genesis::tensor(std::vector<int64_t>{0, T}, {2}, {.device = dev()});
    const Tensor lg =
        m->forward_paged(genesis::tensor(ids, {1, T}, {.device = dev()}), genesis::tensor(pos, {T}, {.device = dev()}),
                         b, genesis::tensor(rows, {T}, {.device = dev()}), to);
    const auto got = host(lg);
    const std::vector<double> want(full.begin() + from * V, full.begin() + to * V);
    EXPECT_LE(max_diff(got, want), 1e-5 * max_abs(want)) << GetParam() << " positions " << from << ".." << to - 1;
  };
  pass(0, prompt);
  pass(prompt, prompt + 1);
  pass(prompt + 1, N);
}

// Dynamic rope scaling needs a rotary table per sequence length, which the paged path does not keep: forward_paged
// refuses it naming the feature; the other families serve.
TEST(FamilyServing, PagedPathRefusesDynamicRope) {
  auto model = M::CausalLM::from_pretrained(fixture("llama-dynamic"), {.device = dev()});
  M::PagedBatch batch;
  const Tensor ids = genesis::tensor(std::vector<int64_t>{1, 2, 3}, {1, 3}, {.device = dev()});
  const Tensor pos = genesis::tensor(std::vector<int64_t>{0, 1, 2}, {3}, {.device = dev()});
  const Tensor rows = genesis::tensor(std::vector<int64_t>{2}, {1}, {.device = dev()});
  try {
    model->forward_paged(ids, pos, batch, rows, 3);
    ADD_FAILURE() << "dynamic rope served on the paged path";
  } catch (const genesis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dynamic rope scaling"), std::string::npos) << e.what();
  }
  for (const char* name : {"llama", "llama-yarn", "mistral", "gemma2", "gemma3"})
    EXPECT_EQ(M::DecoderConfig::from_file(fixture(name) + "/config.json").paged_unsupported(), "") << name;
}

}  // namespace
