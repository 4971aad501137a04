// qwen_test.cpp - Qwen2/Qwen3 parity with HF transformers (tests/fixtures/qwen: tiny checkpoints
// written by transformers, with logits, loss, gradients and greedy generations computed in
// float64), plus loading/saving errors and the generation loop's own invariants.
//
// The reference plugin by default; GENESIS_QWEN_PLUGINS ("cpu,reference", "cuda,reference") and
// GENESIS_QWEN_DEVICE ("cuda") run the same checks on another backend.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/profiler.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_QWEN", "qwen test");
const Device& dev() { return g_backend.device(); }

std::string fixture(const std::string& name) {
  return std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/qwen/" + name;
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

class QwenParity : public ::testing::TestWithParam<const char*> {};

// f32 checkpoint: logits within 1e-4 of their max magnitude; loss likewise; gradients within
// 1e-4 of each gradient's max magnitude (float32 arithmetic against a float64 oracle).
TEST_P(QwenParity, LogitsLossAndGradientsMatchTransformers) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev(), .dtype = DType::f32});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  Tensor logits = model->forward(ref.at("input_ids"));
  const auto want = host(ref.at("logits")), got = host(logits);
  const double scale = max_abs(want);
  EXPECT_LE(max_diff(got, want), 1e-4 * scale) << "logits, max |logit| " << scale;
  std::cout << GetParam() << " on " << dev().str()
            << ": logits max |err| / max |logit| = " << max_diff(got, want) / scale << "\n";

  Tensor loss = model->loss(ref.at("input_ids"), ref.at("labels"));
  const double lw = host(ref.at("loss"))[0];
  EXPECT_NEAR(host(loss)[0], lw, 1e-4 * std::fabs(lw));

  loss.backward();
  int checked = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    auto it = ref.find("grad." + name);
    if (it == ref.end()) continue;
    ASSERT_TRUE(p.grad().defined()) << name;
    const auto gw = host(it->second), gg = host(p.grad());
    EXPECT_LE(max_diff(gg, gw), 1e-4 * max_abs(gw)) << "grad of " << name << ", max |grad| " << max_abs(gw);
    ++checked;
  }
  int listed = 0;
  for (const auto& [k, v] : ref) listed += k.rfind("grad.", 0) == 0;
  EXPECT_EQ(checked, listed) << "every gradient in the fixture has a parameter";
}

TEST_P(QwenParity, GreedyGenerationIsIdentical) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors");
  const auto prompt = ints(ref.at("generate.prompt")), full = ints(ref.at("generate.output"));
  M::GenerationConfig g;
  g.max_new_tokens = static_cast<int64_t>(full.size() - prompt.size());
  g.ignore_eos = true;
  auto r = M::generate(*model, {prompt}, g);
  std::vector<int64_t> want(full.begin() + static_cast<int64_t>(prompt.size()), full.end());
  EXPECT_EQ(r.tokens[0], want);
  EXPECT_EQ(r.finish_reasons[0], "length");
}

// A batch of prompts of different lengths gives each prompt exactly what it gives alone (the
// padding and per-row positions do not leak), and the cached decode matches full recomputation.
TEST_P(QwenParity, BatchedGenerationMatchesSingleAndUncached) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 99, 3}, {400, 2, 7, 8, 9, 10, 11, 12, 13}, {42}};
  M::GenerationConfig g;
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  auto batched = M::generate(*model, prompts, g);
  for (size_t b = 0; b < prompts.size(); ++b) {
    auto single = M::generate(*model, {prompts[b]}, g);
    EXPECT_EQ(batched.tokens[b], single.tokens[0]) << "prompt " << b;
    // No cache: append one greedy token at a time and rerun the whole sequence.
    std::vector<int64_t> seq = prompts[b];
    genesis::NoGradGuard ng;
    for (int i = 0; i < g.max_new_tokens; ++i) {
      const int64_t T = static_cast<int64_t>(seq.size());
      Tensor lg = model->forward(genesis::tensor(seq, {1, T}, {.device = dev()}));
      seq.push_back(ints(lg.select(1, T - 1).argmax(-1))[0]);
    }
    EXPECT_EQ(std::vector<int64_t>(seq.begin() + static_cast<int64_t>(prompts[b].size()), seq.end()), single.tokens[0])
        << "prompt " << b;
  }
}

TEST_P(QwenParity, SamplingIsReproducibleAndSeedDependent) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  M::GenerationConfig g;
  g.max_new_tokens = 16;
  g.ignore_eos = true;
  g.temperature = 1.5;
  g.top_k = 50;
  g.top_p = 0.95;
  g.seed = 7;
  auto a = M::generate(*model, {{1, 2, 3}}, g), b = M::generate(*model, {{1, 2, 3}}, g);
  EXPECT_EQ(a.tokens, b.tokens);
  g.seed = 8;
  auto c = M::generate(*model, {{1, 2, 3}}, g);
  EXPECT_NE(a.tokens, c.tokens);
}

TEST_P(QwenParity, SaveThenLoadRoundTripsAndShards) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const std::string dir = testing::TempDir() + "qwen_save_" + GetParam();
  model->save_pretrained(dir, 64 << 10);  // 64 KiB shards: several files plus the index
  struct stat s {};
  EXPECT_EQ(::stat((dir + "/model.safetensors.index.json").c_str(), &s), 0);
  EXPECT_NE(::stat((dir + "/model.safetensors").c_str(), &s), 0);
  auto back = M::QwenForCausalLM::from_pretrained(dir, {.device = dev()});
  Tensor ids = genesis::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8}, {.device = dev()});
  EXPECT_EQ(max_diff(host(model->forward(ids)), host(back->forward(ids))), 0.0);
  EXPECT_EQ(back->config.tie_word_embeddings, model->config.tie_word_embeddings);
  // Unsharded again: the index goes, model.safetensors comes back.
  back->save_pretrained(dir);
  EXPECT_EQ(::stat((dir + "/model.safetensors").c_str(), &s), 0);
  EXPECT_NE(::stat((dir + "/model.safetensors.index.json").c_str(), &s), 0);
}

// bf16 weights: logits within what bf16 rounding allows (8 bits of mantissa through 2 layers:
// 3% of the logits' max magnitude) and the loss within 1%.
TEST_P(QwenParity, Bfloat16IsCloseToTheFloat64Oracle) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev(), .dtype = DType::bf16});
  auto ref = genesis::load(fixture(GetParam()) + "/reference.safetensors", dev());
  genesis::NoGradGuard ng;
  const auto want = host(ref.at("logits")), got = host(model->forward(ref.at("input_ids")));
  EXPECT_LE(max_diff(got, want), 0.03 * max_abs(want));
  std::cout << GetParam() << " bf16 on " << dev().str()
            << ": logits max |err| / max |logit| = " << max_diff(got, want) / max_abs(want) << "\n";
  const double lw = host(ref.at("loss"))[0];
  EXPECT_NEAR(host(model->loss(ref.at("input_ids"), ref.at("labels")))[0], lw, 0.01 * lw);
}

// Every way of building a context gives the same logits: the model's own (one rope over all heads
// where it can), a hand-made per-head one, explicit positions, and the all-heads rows gathered per
// forward instead of kept (rope_all_heads_max_bytes 0), which generation then uses too.
TEST_P(QwenParity, ContextFormsGiveTheSameResults) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  genesis::NoGradGuard ng;
  const int64_t B = 2, T = 7, D = model->config.head_dim;
  Tensor ids =
      genesis::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7}, {B, T}, {.device = dev()});
  const auto want = host(model->forward(ids));
  auto [cos, sin] = model->rope_tables(T);
  M::AttentionContext per_head;
  per_head.cos = cos.slice(0, 0, T).view({1, 1, T, D});
  per_head.sin = sin.slice(0, 0, T).view({1, 1, T, D});
  EXPECT_EQ(max_diff(host(model->logits(model->hidden_states(ids, per_head))), want), 0.0);
  Tensor pos = genesis::arange(static_cast<double>(T), {.dtype = DType::i64, .device = dev()})
                   .view({1, T})
                   .expand({B, T})
                   .contiguous();
  EXPECT_EQ(max_diff(host(model->logits(model->hidden_states(ids, model->attention_context(pos)))), want), 0.0);

  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 99, 3}, {400, 2, 7, 8, 9, 10, 11, 12, 13}, {42}};
  M::GenerationConfig g;
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  const auto kept = M::generate(*model, prompts, g).tokens;
  auto gathered = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  gathered->rope_all_heads_max_bytes = 0;
  EXPECT_EQ(max_diff(host(gathered->forward(ids)), want), 0.0);
  EXPECT_EQ(M::generate(*gathered, prompts, g).tokens, kept);
}

// A pass longer than the generation's cache, run from the token callback, regrows the model's
// rotary tables; the generation (its captured step on CUDA included) goes on with the tables it
// started with and gives the same tokens.
TEST_P(QwenParity, TablesRegrownMidGenerationChangeNothing) {
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 99, 3}, {42}};
  M::GenerationConfig g;
  g.max_new_tokens = 8;
  g.ignore_eos = true;
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const auto want = M::generate(*model, prompts, g).tokens;
  auto fresh = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  int calls = 0;
  const auto got = M::generate(*fresh, prompts, g, [&](size_t, int64_t) {
                     if (++calls == 5) {  // after the first decode steps (and, on CUDA, the capture)
                       std::vector<int64_t> ids(200, 7);
                       (void)fresh->forward(genesis::tensor(ids, {1, 200}, {.device = dev()}));
                     }
                     return true;
                   }).tokens;
  EXPECT_EQ(got, want);
}

// What one decode step runs: generating one token more costs exactly one step.  Without q/k norm a
// layer's q, k and v come from one projection and one rope, and no concatenation; with it (Qwen3)
// q and k rotate separately and k|v are joined for the cache.  The step gathers its rotary rows once.
TEST_P(QwenParity, DecodeStepRunsOneFusedRopePerLayer) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture(GetParam()), {.device = dev()});
  const int64_t L = model->config.num_hidden_layers;
  auto calls = [&](int64_t n) {
    M::GenerationConfig g;
    g.max_new_tokens = n;
    g.ignore_eos = true;
    g.cuda_graph = false;  // count the eager step's op calls
    genesis::profiler_start();
    M::generate(*model, {{5, 17, 99}, {4, 2}}, g);
    genesis::profiler_stop();
    std::map<std::string, int64_t> c;
    std::istringstream in(genesis::profiler_summary());
    std::string line, name;
    int64_t k = 0;
    while (std::getline(in, line))
      if (std::istringstream(line) >> name >> k) c[name] = k;
    return c;
  };
  calls(4);  // the model makes its rotary tables once
  auto a = calls(3), b = calls(4);
  auto step = [&](const char* op) { return b[op] - a[op]; };
  const bool qk_norm = model->config.qk_norm;
  EXPECT_EQ(step("rope"), qk_norm ? 2 * L : L);
  EXPECT_EQ(step("cat"), qk_norm ? L : 0);
  EXPECT_EQ(step("kv_cache_write_"), L);
  EXPECT_EQ(step("index_select"), 1);
  EXPECT_EQ(step("embedding"), 1);
  // Nothing is created in a step (a captured step may not upload): the tables were made before.
  EXPECT_EQ(step("full"), 0);
  EXPECT_EQ(step("arange"), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QwenParity, ::testing::Values("qwen2-tiny", "qwen3-tiny"));

// ---------------------------------------------------------------- bad input

std::string tmp_copy(const std::string& name, const std::string& tag) {
  const std::string dir = testing::TempDir() + "qwen_bad_" + tag;
  ::mkdir(dir.c_str(), 0755);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) {
    std::ifstream in(fixture(name) + "/" + f, std::ios::binary);
    std::ofstream out(dir + "/" + f, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  return dir;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

using genesis_test::error_of;

TEST(QwenLoad, TruncatedShardIsAClearError) {
  const std::string dir = tmp_copy("qwen2-tiny", "trunc");
  std::string bytes = M::read_text_file(dir + "/model.safetensors");
  write_file(dir + "/model.safetensors", bytes.substr(0, bytes.size() / 2));
  const std::string e = error_of([&] { M::QwenForCausalLM::from_pretrained(dir, {.device = dev()}); });
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(QwenLoad, ConfigFieldsAreValidatedByName) {
  const std::string dir = tmp_copy("qwen2-tiny", "cfg");
  std::string cfg = M::read_text_file(fixture("qwen2-tiny") + "/config.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string c = cfg;
    const size_t at = c.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    c.replace(at, from.size(), to);
    write_file(dir + "/config.json", c);
    return error_of([&] { M::QwenForCausalLM::from_pretrained(dir, {.device = dev()}); });
  };
  EXPECT_NE(with("\"hidden_size\": 64", "\"hidden_size\": \"64\"").find("hidden_size"), std::string::npos);
  EXPECT_NE(with("\"use_sliding_window\": false", "\"use_sliding_window\": true").find("use_sliding_window"),
            std::string::npos);
  EXPECT_NE(with("\"rope_type\": \"default\"", "\"rope_type\": \"longrope\"").find("rope_type"), std::string::npos);
  EXPECT_NE(with("\"model_type\": \"qwen2\"", "\"model_type\": \"qwen2_moe\"").find("mixture of experts"),
            std::string::npos);
  EXPECT_NE(with("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"").find("hidden_act"), std::string::npos);
  // A config whose shapes disagree with the weights names the tensor and both shapes.
  const std::string e = with("\"intermediate_size\": 128", "\"intermediate_size\": 96");
  EXPECT_NE(e.find("mlp.down_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[64, 128]"), std::string::npos) << e;
  EXPECT_NE(e.find("[64, 96]"), std::string::npos) << e;
}

// transformers 4.x spellings: rope_theta at the top level, torch_dtype, a list of eos ids.
TEST(QwenLoad, Transformers4ConfigSpellings) {
  const auto c = M::QwenConfig::from_json(R"({"model_type": "qwen2", "vocab_size": 100, "hidden_size": 48,
      "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 6, "num_key_value_heads": 2,
      "rope_theta": 1234.5, "rope_scaling": null, "torch_dtype": "bfloat16", "eos_token_id": [7, 9],
      "sliding_window": 4096, "use_sliding_window": false, "tie_word_embeddings": false})");
  EXPECT_EQ(c.rope_theta, 1234.5);
  EXPECT_EQ(c.head_dim, 8);  // hidden / heads when head_dim is absent
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{7, 9}));
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  // The same config written back reads the same.
  const auto back = M::QwenConfig::from_json(c.to_json());
  EXPECT_EQ(back.rope_theta, 1234.5);
  EXPECT_EQ(back.num_key_value_heads, 2);
  EXPECT_NE(error_of([] {
              M::QwenConfig::from_json(R"({"model_type": "qwen2", "vocab_size": 100, "hidden_size": 48,
      "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 6, "num_key_value_heads": 4,
      "rope_scaling": {"type": "linear", "factor": 2}})");
            }).find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              M::QwenConfig::from_json(R"({"model_type": "qwen2", "vocab_size": 100, "hidden_size": 48,
      "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 6,
      "rope_scaling": {"type": "longrope", "factor": 2}})");
            }).find("rope_scaling.type"),
            std::string::npos);
}

TEST(QwenLoad, MissingAndExtraTensorsAreNamed) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture("qwen3-tiny"), {.device = dev()});
  genesis::TensorMap sd = model->state_dict();
  const std::string dir = tmp_copy("qwen3-tiny", "keys");
  sd.erase("model.layers.1.self_attn.k_norm.weight");
  genesis::save(sd, dir + "/model.safetensors");
  std::string e = error_of([&] { M::QwenForCausalLM::from_pretrained(dir, {.device = dev()}); });
  EXPECT_NE(e.find("missing tensor 'model.layers.1.self_attn.k_norm.weight'"), std::string::npos) << e;
  sd = model->state_dict();
  sd["model.layers.0.self_attn.extra"] = genesis::zeros({2});
  genesis::save(sd, dir + "/model.safetensors");
  e = error_of([&] { M::QwenForCausalLM::from_pretrained(dir, {.device = dev()}); });
  EXPECT_NE(e.find("unexpected tensor 'model.layers.0.self_attn.extra'"), std::string::npos) << e;
}

TEST(QwenGenerate, BadArgumentsAreRefused) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture("qwen2-tiny"), {.device = dev()});
  M::GenerationConfig g;
  EXPECT_NE(error_of([&] { M::generate(*model, {{1, 512}}, g); }).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of([&] { M::generate(*model, {{}}, g); }).find("empty"), std::string::npos);
  g.top_p = 0;
  EXPECT_NE(error_of([&] { M::generate(*model, {{1}}, g); }).find("top_p"), std::string::npos);
}

TEST(QwenGenerate, StopIdsEndARowAndAreKept) {
  auto model = M::QwenForCausalLM::from_pretrained(fixture("qwen2-tiny"), {.device = dev()});
  M::GenerationConfig g;
  g.max_new_tokens = 12;
  g.ignore_eos = true;
  model->train();
  auto free_run = M::generate(*model, {{7, 8, 9}}, g);
  ASSERT_EQ(free_run.tokens[0].size(), 12u);
  EXPECT_TRUE(model->is_training()) << "generate restores the caller's mode";
  g.stop_ids = {free_run.tokens[0][4]};
  auto stopped = M::generate(*model, {{7, 8, 9}}, g);
  // It stops at the first occurrence of that id, which is kept.
  size_t first = 0;
  while (free_run.tokens[0][first] != g.stop_ids[0]) ++first;
  EXPECT_EQ(stopped.tokens[0],
            std::vector<int64_t>(free_run.tokens[0].begin(), free_run.tokens[0].begin() + first + 1));
  EXPECT_EQ(stopped.finish_reasons[0], "stop");
}

// ---------------------------------------------------------------- sampling rules

TEST(QwenSampling, FiltersFollowTransformers) {
  M::GenerationConfig g;
  g.temperature = 1.0;
  // probabilities 0.5, 0.25, 0.125, 0.125 (logits are their logs)
  const std::vector<float> base = {std::log(0.125f), std::log(0.5f), std::log(0.25f), std::log(0.125f)};
  auto draw = [&](double u) {
    std::vector<float> l = base;
    return M::sample_token(l, {}, g, u);
  };
  EXPECT_EQ(draw(0.0), 1);
  EXPECT_EQ(draw(0.6), 2);
  EXPECT_EQ(draw(0.99), 3);  // the tie 0 vs 3 sorts by id: 0 then 3
  g.top_p = 0.7;             // keeps 0.5 and 0.25 (0.5 < 0.7, 0.75 >= 0.7)
  EXPECT_EQ(draw(0.99), 2);
  g.top_p = 1.0;
  g.min_p = 0.4;  // drops p < 0.2
  EXPECT_EQ(draw(0.99), 2);
  g.min_p = 0;
  g.top_k = 1;
  EXPECT_EQ(draw(0.99), 1);
  g.top_k = 0;
  g.temperature = 0;
  g.repetition_penalty = 4.0;  // token 1's logit log(0.5) < 0 becomes 4 * log(0.5) < log(0.25)
  std::vector<float> l = base;
  EXPECT_EQ(M::sample_token(l, {1}, g, 0.0), 2);
}

}  // namespace
