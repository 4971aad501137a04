// sft_test.cpp - supervised fine-tuning against its oracles: 20 AdamW steps of HF transformers +
// PyTorch (tests/fixtures/sft/qwen3_tiny_sft.json, made by make_reference.py there), the
// assistant-only labels against the whole text's tokenization, packing against separate rows,
// loss masking, exact resume, and the batcher's invariants.
//
// The reference plugin by default; GENESIS_SFT_PLUGINS ("cpu,reference", "cuda,reference") and
// GENESIS_SFT_DEVICE ("cuda") run the same checks on another backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/train/bpe_trainer.hpp"
#include "genesis/train/sft.hpp"

#include "test_common.h"

namespace {

using genesis::Device;
using genesis::DType;
using genesis::Tensor;
namespace M = genesis::models;
namespace T = genesis::train;
namespace fs = std::filesystem;

genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_SFT", "sft test");
const Device& dev() { return g_backend.device(); }

std::string source(const std::string& rel) { return std::string(GENESIS_SOURCE_DIR) + "/" + rel; }

std::unique_ptr<M::QwenForCausalLM> tiny_model() {
  return M::QwenForCausalLM::from_pretrained(source("tests/fixtures/qwen/qwen3-tiny"),
                                             {.device = dev(), .dtype = DType::f32});
}

std::string temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("genesis_sft_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::vector<double> host(const Tensor& t) { return t.to(Device("cpu")).to(DType::f64).tolist(); }

// Gradients of every parameter after backward of f(model), by name.
std::map<std::string, std::vector<double>> grads_of(M::QwenForCausalLM& m, const std::function<Tensor()>& f) {
  for (auto& [n, p] : m.named_parameters()) {
    p.requires_grad_(true);
    p.set_grad(Tensor());
  }
  f().backward();
  std::map<std::string, std::vector<double>> g;
  for (auto& [n, p] : m.named_parameters()) g[n] = p.grad().defined() ? host(p.grad()) : std::vector<double>{};
  return g;
}

double max_rel_diff(const std::map<std::string, std::vector<double>>& a,
                    const std::map<std::string, std::vector<double>>& b) {
  double scale = 0, diff = 0;
  for (const auto& [n, v] : a) {
    const auto& w = b.at(n);
    EXPECT_EQ(v.size(), w.size()) << n;
    for (size_t i = 0; i < std::min(v.size(), w.size()); ++i) {
      scale = std::max(scale, std::fabs(v[i]));
      diff = std::max(diff, std::fabs(v[i] - w[i]));
    }
  }
  return scale > 0 ? diff / scale : diff;
}

T::ChatExample example(std::vector<int64_t> ids, int64_t prompt) {
  T::ChatExample e;
  e.ids = std::move(ids);
  for (size_t i = 0; i < e.ids.size(); ++i)
    e.labels.push_back(static_cast<int64_t>(i) < prompt ? T::kIgnoreIndex : e.ids[i]);
  return e;
}

// ------------------------------------------------------------------ HF parity

// Same weights, same batches, same recipe: every step's loss within 1e-4 relative of
// transformers + PyTorch (float32 both), and the gradient norms before clipping close too.
TEST(SftParity, TwentyAdamWStepsMatchTransformers) {
  std::ifstream in(source("tests/fixtures/sft/qwen3_tiny_sft.json"));
  ASSERT_TRUE(in) << "missing fixture";
  nlohmann::json ref = nlohmann::json::parse(in);
  std::vector<T::ChatExample> rows;
  for (const auto& b : ref["batches"])
    for (size_t r = 0; r < b["ids"].size(); ++r) {
      T::ChatExample e;
      e.ids = b["ids"][r].get<std::vector<int64_t>>();
      e.labels = b["labels"][r].get<std::vector<int64_t>>();
      rows.push_back(e);
    }
  const auto& rc = ref["recipe"];
  T::BatchOptions bo;
  bo.batch_size = static_cast<int64_t>(ref["batches"][0]["ids"].size());
  bo.shuffle = false;  // batches in the file's order (rows have one length: no reordering)
  bo.max_length = 1024;
  T::SftBatcher data(rows, bo);
  T::SftOptions o;
  o.output_dir = temp_dir("parity");
  o.max_steps = rc["steps"];
  o.lr = rc["lr"];
  o.beta1 = rc["betas"][0];
  o.beta2 = rc["betas"][1];
  o.adam_eps = rc["eps"];
  o.weight_decay = rc["weight_decay"];
  o.warmup_steps = rc["warmup_steps"];
  o.max_grad_norm = rc["max_grad_norm"];
  o.progress = "none";
  auto model = tiny_model();
  T::SftResult r = T::train_sft(*model, data, nullptr, o);
  const auto want = ref["losses"].get<std::vector<double>>();
  ASSERT_EQ(r.losses.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double rel = std::fabs(r.losses[i] - want[i]) / std::fabs(want[i]);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-4) << "step " << i + 1 << ": " << r.losses[i] << " vs HF " << want[i];
  }
  // The comparison can tell training from none: the same batches with a learning rate of ~0
  // miss HF's later losses by far more than the tolerance.
  {
    T::SftOptions frozen = o;
    frozen.lr = 1e-12;
    frozen.output_dir = temp_dir("parity_frozen");
    auto still = tiny_model();
    T::SftResult f = T::train_sft(*still, data, nullptr, frozen);
    double far = 0;
    for (size_t i = 1; i < want.size(); ++i) far = std::max(far, std::fabs(f.losses[i] - want[i]) / std::fabs(want[i]));
    EXPECT_GT(far, 1e-3);
    fs::remove_all(frozen.output_dir);
  }
  // Gradient norms from the metrics log.
  std::ifstream log(o.output_dir + "/metrics.jsonl");
  std::string line;
  std::vector<double> norms;
  while (std::getline(log, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("grad_norm")) norms.push_back(j["grad_norm"]);
  }
  const auto want_norms = ref["grad_norms"].get<std::vector<double>>();
  ASSERT_EQ(norms.size(), want_norms.size());
  // Norms before clipping: step 1 sees identical weights (tight); later steps sum the gradients of
  // parameters that have drifted apart by float32 rounding, which the norm amplifies (looser).
  for (size_t i = 0; i < norms.size(); ++i)
    EXPECT_NEAR(norms[i], want_norms[i], (i == 0 ? 1e-5 : 2e-3) * want_norms[i]) << "step " << i + 1;
  std::printf("worst relative loss difference to HF over %zu steps: %.3g\n", want.size(), worst);
  fs::remove_all(o.output_dir);
}

// ------------------------------------------------------------------ labels

// Assistant-only labels: the ids equal the whole rendered text's tokenization, and the labelled
// tokens are exactly each answer followed by the template's <|im_end|>\n.
TEST(SftData, LabelsCoverExactlyTheAssistantTurns) {
  auto tok = genesis::Tokenizer::from_pretrained(source("tests/fixtures/tokenizer/qwen3"));
  genesis::ChatTemplate tmpl(T::chatml_template());
  std::vector<genesis::ChatMessage> conv = {{"system", "Be brief."},
                                            {"user", "What is 2 + 2?"},
                                            {"assistant", "4"},
                                            {"user", "And 10 - 3?"},
                                            {"assistant", "It is 7."}};
  T::ChatExample e = T::tokenize_chat(tok, tmpl, conv);
  EXPECT_EQ(e.ids, tok.encode(tmpl.apply(conv, false, false), false));
  ASSERT_EQ(e.ids.size(), e.labels.size());
  // Runs of labelled tokens, decoded.
  std::vector<std::string> runs;
  std::vector<int64_t> cur;
  for (size_t i = 0; i <= e.ids.size(); ++i) {
    if (i < e.ids.size() && e.labels[i] != T::kIgnoreIndex) {
      EXPECT_EQ(e.labels[i], e.ids[i]);
      cur.push_back(e.ids[i]);
    } else if (!cur.empty()) {
      runs.push_back(tok.decode(cur));
      cur.clear();
    }
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"4<|im_end|>\n", "It is 7.<|im_end|>\n"}));
}

// A template that renders earlier turns differently once later ones follow is refused, not guessed.
TEST(SftData, TemplateThatRewritesHistoryIsAnError) {
  auto tok = genesis::Tokenizer::from_pretrained(source("tests/fixtures/tokenizer/qwen3"));
  genesis::ChatTemplate tmpl(
      "{% for m in messages %}{% if loop.last %}LAST:{% endif %}{{ m['role'] }}:{{ m['content'] }}\n{% endfor %}"
      "{% if add_generation_prompt %}assistant:{% endif %}");
  EXPECT_THROW(T::tokenize_chat(tok, tmpl, {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}), genesis::Error);
}

TEST(SftData, JsonlErrorsNameTheLine) {
  const std::string dir = temp_dir("jsonl");
  std::ofstream(dir + "/bad.jsonl") << R"({"messages": [{"role": "user", "content": "hi"}]})"
                                    << "\n\n"
                                    << R"({"messages": [{"role": "user"}]})"
                                    << "\n";
  try {
    T::read_chat_jsonl(dir + "/bad.jsonl");
    FAIL() << "no error";
  } catch (const genesis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(T::read_chat_jsonl(dir + "/missing.jsonl"), genesis::Error);
  EXPECT_THROW(T::read_chat_jsonl(dir), genesis::Error);  // a directory
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ batches

TEST(SftBatcher, EveryExampleOncePerEpochAndRowsFit) {
  std::vector<T::ChatExample> ex;
  for (int64_t i = 0; i < 37; ++i) ex.push_back(example(std::vector<int64_t>(static_cast<size_t>(3 + i % 11), i), 2));
  for (bool packing : {false, true}) {
    T::BatchOptions o;
    o.batch_size = 4;
    o.max_length = 24;
    o.packing = packing;
    o.seed = 5;
    T::SftBatcher b(ex, o);
    std::vector<std::multiset<int64_t>> seen(2);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      for (int64_t i = 0; i < b.batches_in_epoch(epoch); ++i) {
        T::SftBatch sb = b.batch(epoch, i);
        EXPECT_LE(sb.length, o.max_length);
        EXPECT_LE(sb.rows, o.batch_size);
        for (int64_t r = 0; r < sb.rows; ++r)
          for (int64_t t = 0; t < sb.length; ++t) {
            const size_t at = static_cast<size_t>(r * sb.length + t);
            const bool start = packing ? (sb.segments[at] >= 0 && sb.positions[at] == 0) : t == 0;
            if (start) seen[static_cast<size_t>(epoch)].insert(sb.ids[at]);  // ids encode the example number
          }
      }
      EXPECT_EQ(seen[static_cast<size_t>(epoch)].size(), ex.size()) << "packing " << packing;
      for (int64_t i = 0; i < 37; ++i) EXPECT_EQ(seen[static_cast<size_t>(epoch)].count(i), 1u) << i;
    }
    // Deterministic, and another epoch has another order.
    EXPECT_EQ(b.batch(1, 0).ids, T::SftBatcher(ex, o).batch(1, 0).ids);
    EXPECT_NE(b.batch(0, 0).ids, b.batch(1, 0).ids);
  }
}

// ------------------------------------------------------------------ loss

// Packing: a row holding conversations A and B gives the gradient of A and B in rows of their own
// (the mask keeps attention inside each, positions restart).
TEST(SftLoss, PackedRowEqualsSeparateRows) {
  auto model = tiny_model();
  T::ChatExample a = example({5, 17, 3, 99, 42, 7, 8, 1, 300, 11}, 4), b = example({9, 8, 7, 6, 5, 4, 3}, 3);
  auto grad_of_batch = [&](const std::vector<T::ChatExample>& ex, bool packing) {
    T::BatchOptions o;
    o.batch_size = 2;
    o.max_length = 32;
    o.packing = packing;
    o.shuffle = false;
    T::SftBatcher data(ex, o);
    T::DeviceBatch d = T::to_device(data.batch(0, 0), dev());
    EXPECT_EQ(data.batches_in_epoch(0), 1);
    return grads_of(*model, [&] { return T::sft_loss_sum(*model, d).first; });
  };
  const auto packed = grad_of_batch({a, b}, true), separate = grad_of_batch({a, b}, false);
  EXPECT_LE(max_rel_diff(packed, separate), 1e-5);
  // The check can fail: a row where B's first token were a target would differ.
  T::ChatExample b2 = b;
  b2.labels[3] = T::kIgnoreIndex;
  EXPECT_GT(max_rel_diff(grad_of_batch({a, b2}, true), separate), 1e-3);
}

// Masking: text after the last answer (a trailing user turn) and the labels' values at ignored
// positions change nothing; a change in the prompt before the answer does.
TEST(SftLoss, OnlyAssistantTargetsCarryGradient) {
  auto model = tiny_model();
  auto grad = [&](const T::ChatExample& e) {
    T::BatchOptions o;
    o.batch_size = 1;
    o.shuffle = false;
    T::DeviceBatch d = T::to_device(T::SftBatcher({e}, o).batch(0, 0), dev());
    return grads_of(*model, [&] { return T::sft_loss_sum(*model, d).first; });
  };
  // ids: prompt (0..5), answer (6..9), trailing non-assistant text (10..13)
  T::ChatExample base = example({1, 2, 3, 4, 5, 6, 70, 71, 72, 73, 9, 9, 9, 9}, 6);
  for (size_t i = 10; i < 14; ++i) base.labels[i] = T::kIgnoreIndex;
  T::ChatExample trailing = base;
  for (size_t i = 10; i < 14; ++i) trailing.ids[i] = 200 + static_cast<int64_t>(i);
  T::ChatExample prompt = base;
  prompt.ids[2] = 400;
  const auto g0 = grad(base);
  EXPECT_EQ(max_rel_diff(g0, grad(trailing)), 0.0);
  EXPECT_GT(max_rel_diff(g0, grad(prompt)), 1e-4);
}

// Activation checkpointing recomputes each layer in backward: the same gradients, bit for bit.
TEST(SftLoss, ActivationCheckpointingGivesTheSameGradients) {
  auto model = tiny_model();
  T::BatchOptions o;
  o.batch_size = 2;
  o.shuffle = false;
  T::SftBatcher data({example({5, 17, 3, 99, 42, 7, 8, 1, 300, 11}, 4), example({9, 8, 7, 6, 5, 4, 3}, 3)}, o);
  T::DeviceBatch d = T::to_device(data.batch(0, 0), dev());
  const auto plain = grads_of(*model, [&] { return T::sft_loss_sum(*model, d).first; });
  model->model.gradient_checkpointing = true;
  const auto recomputed = grads_of(*model, [&] { return T::sft_loss_sum(*model, d).first; });
  // The recomputation runs the forward's own ops on the same inputs: the same bits.
  EXPECT_EQ(max_rel_diff(plain, recomputed), 0.0);
  EXPECT_FALSE(recomputed.at("model.layers.0.self_attn.q_proj.weight").empty());
}

// ------------------------------------------------------------------ resume

// 6 steps straight vs 3 steps, stop, resume for 3: the same losses and parameters, bit for bit
// on every backend (no backward kernel accumulates with atomics).  make_model gives the same
// initial weights on every call.
void expect_exact_resume(const std::function<std::unique_ptr<M::QwenForCausalLM>()>& make_model,
                         const std::string& autocast, const std::string& tag) {
  std::vector<T::ChatExample> ex;
  for (int64_t i = 0; i < 20; ++i) {
    std::vector<int64_t> ids;
    for (int64_t t = 0; t < 8 + i % 5; ++t) ids.push_back((i * 31 + t * 7) % 500 + 1);
    ex.push_back(example(ids, 3));
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
  o.autocast = autocast;

  o.output_dir = temp_dir(tag + "_straight");
  auto m1 = make_model();
  T::SftResult straight = T::train_sft(*m1, data, nullptr, o);

  const std::string part = temp_dir(tag + "_part");
  o.output_dir = part;
  o.stop_after = 3;
  auto m2 = make_model();
  T::SftResult first = T::train_sft(*m2, data, nullptr, o);
  EXPECT_EQ(first.steps, 3);
  o.stop_after = 0;
  o.resume = part + "/checkpoint.safetensors";
  auto m3 = make_model();
  {
    genesis::autograd::NoGradGuard no_grad;
    for (auto [name, t] : m3->state_dict()) t.fill_(0.5);  // everything must come from the checkpoint
  }
  T::SftResult second = T::train_sft(*m3, data, nullptr, o);
  EXPECT_EQ(second.steps, 6);

  std::vector<double> resumed = first.losses;
  resumed.insert(resumed.end(), second.losses.begin(), second.losses.end());
  ASSERT_EQ(resumed.size(), straight.losses.size());
  for (size_t i = 0; i < resumed.size(); ++i) EXPECT_EQ(resumed[i], straight.losses[i]) << tag << " step " << i + 1;
  const auto p1 = m1->state_dict(), p3 = m3->state_dict();
  for (const auto& [name, t] : p1) EXPECT_EQ(host(t), host(p3.at(name))) << tag << " " << name;
  // A resume with other batch options is refused instead of silently changing the run.
  o.max_steps = 7;
  auto m4 = make_model();
  EXPECT_THROW(T::train_sft(*m4, data, nullptr, o), genesis::Error);
  fs::remove_all(part);
}

TEST(SftResume, ResumedRunEqualsUninterruptedRun) { expect_exact_resume(tiny_model, "", "f32"); }

// The same under bf16 autocast with head_dim 64, which takes CUDA's tensor-core (flash)
// attention kernels: their backward is deterministic too.
TEST(SftResume, ResumedBf16AutocastRunEqualsUninterruptedRun) {
  M::QwenConfig c = M::QwenConfig::from_file(source("tests/fixtures/qwen/qwen3-tiny/config.json"));
  c.head_dim = 64;
  expect_exact_resume(
      [&] {
        genesis::manual_seed(7);
        return std::make_unique<M::QwenForCausalLM>(c, genesis::Options{.dtype = DType::f32, .device = dev()});
      },
      "bf16", "bf16");
}

// ------------------------------------------------------------------ LoRA

// LoRA fine-tuning: 6 steps straight vs 3, stop, resume for 3 (adapter dropout on, so the RNG is part of the
// resume) give the same losses and adapters bit for bit; the base weights stay bitwise what they were; the
// checkpoint holds only the adapters and their AdamW state; the trained adapter round-trips through a PEFT folder.
TEST(SftLora, ResumeIsExactAndTheBaseStaysFrozen) {
  std::vector<T::ChatExample> ex;
  for (int64_t i = 0; i < 16; ++i) {
    std::vector<int64_t> ids;
    for (int64_t t = 0; t < 7 + i % 4; ++t) ids.push_back((i * 29 + t * 5) % 400 + 1);
    ex.push_back(example(ids, 2));
  }
  T::BatchOptions bo;
  bo.batch_size = 4;
  bo.seed = 5;
  T::SftBatcher data(ex, bo);
  T::SftOptions o;
  o.max_steps = 6;
  o.lr = 5e-2;
  o.weight_decay = 0.01;
  o.warmup_steps = 1;
  o.progress = "none";
  M::LoraConfig lc;
  lc.r = 4;
  lc.lora_alpha = 8;
  lc.lora_dropout = 0.1;
  o.lora = lc;

  auto fresh = tiny_model();
  const auto base = fresh->state_dict();
  o.output_dir = temp_dir("lora_straight");
  auto m1 = tiny_model();
  genesis::manual_seed(11);  // the adapters' initial A
  T::SftResult straight = T::train_sft(*m1, data, nullptr, o);
  ASSERT_TRUE(straight.adapter);
  EXPECT_LT(straight.losses.back(), straight.losses.front());
  for (const auto& [name, t] : m1->state_dict()) EXPECT_EQ(host(t), host(base.at(name))) << "base " << name;
  for (auto& [name, p] : m1->named_parameters()) EXPECT_FALSE(p.requires_grad()) << name;

  const std::string part = temp_dir("lora_part");
  o.output_dir = part;
  o.stop_after = 3;
  auto m2 = tiny_model();
  genesis::manual_seed(11);
  T::SftResult first = T::train_sft(*m2, data, nullptr, o);
  EXPECT_EQ(first.steps, 3);
  // The checkpoint: adapters only (every model tensor a lora_A/lora_B), AdamW state for them alone.
  const genesis::Checkpoint ck = genesis::load_checkpoint(part + "/checkpoint.safetensors");
  int64_t adapter_numel = 0, optim_numel = 0;
  for (const auto& [k, t] : ck.model.tensors) {
    EXPECT_NE(k.find("lora_"), std::string::npos) << k;
    adapter_numel += t.numel();
  }
  for (const auto& [k, t] : ck.optim.tensors) optim_numel += t.numel();
  EXPECT_EQ(ck.model.tensors.size(), 2 * first.adapter->adapters.size());
  EXPECT_LE(optim_numel, 2 * adapter_numel + 4 * static_cast<int64_t>(ck.model.tensors.size()));  // + step counts
  EXPECT_GE(optim_numel, 2 * adapter_numel);

  o.stop_after = 0;
  o.resume = part + "/checkpoint.safetensors";
  auto m3 = tiny_model();
  genesis::manual_seed(12);  // a different draw: the adapters and the RNG must come from the checkpoint
  T::SftResult second = T::train_sft(*m3, data, nullptr, o);
  EXPECT_EQ(second.steps, 6);
  std::vector<double> resumed = first.losses;
  resumed.insert(resumed.end(), second.losses.begin(), second.losses.end());
  ASSERT_EQ(resumed.size(), straight.losses.size());
  for (size_t i = 0; i < resumed.size(); ++i) EXPECT_EQ(resumed[i], straight.losses[i]) << "step " << i + 1;
  const auto a1 = straight.adapter->peft_state_dict(), a3 = second.adapter->peft_state_dict();
  for (const auto& [k, t] : a1) EXPECT_EQ(host(t), host(a3.at(k))) << k;

  // A full fine-tuning run cannot resume the LoRA checkpoint (and the other way round).
  T::SftOptions full = o;
  full.lora.reset();
  auto m4 = tiny_model();
  EXPECT_THROW(T::train_sft(*m4, data, nullptr, full), genesis::Error);

  // Adapter dropout with activation checkpointing (a recomputation would draw other masks) is refused.
  T::SftOptions ckpt = o;
  ckpt.resume.clear();
  ckpt.activation_checkpointing = true;
  auto m6 = tiny_model();
  EXPECT_THROW(T::train_sft(*m6, data, nullptr, ckpt), genesis::Error);
  EXPECT_FALSE(m6->model.layers[0]->self_attn.q_lora);  // refused before anything was attached

  // The trained adapter as a PEFT folder, loaded into a fresh base: the same logits.
  const std::string peft = temp_dir("lora_peft");
  straight.adapter->save_pretrained(peft);
  auto m5 = tiny_model();
  auto loaded = M::LoraModel::from_pretrained(*m5, peft);
  const Tensor ids =
      genesis::tensor(std::vector<int64_t>{3, 14, 15, 92, 65, 35}, {1, 6}, {.dtype = DType::i64, .device = dev()});
  genesis::autograd::NoGradGuard no_grad;
  straight.adapter->eval();
  EXPECT_EQ(host(m5->forward(ids)), host(m1->forward(ids)));
  fs::remove_all(part);
  fs::remove_all(peft);
}

// ------------------------------------------------------------------ BPE

TEST(BpeTrainer, LearnsMergesThatRoundTripAndLoad) {
  const std::string dir = temp_dir("bpe");
  {
    std::ofstream f(dir + "/corpus.txt");
    for (int i = 0; i < 200; ++i)
      f << "the quick brown fox jumps over the lazy dog " << i * 37 << "\nzwölf Äpfel für 7 € – naïve café\n";
    std::ofstream c(dir + "/chat.jsonl");
    c << R"({"messages": [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "general kenobi"}]})"
      << "\n";
  }
  T::BpeTrainerOptions o;
  o.vocab_size = 300;
  T::BpeTrainingResult r = T::train_bpe_tokenizer({dir + "/corpus.txt", dir + "/chat.jsonl"}, dir + "/tok", o);
  EXPECT_EQ(r.vocab_size, 300);
  EXPECT_EQ(r.merges, 300 - 256 - 3);
  auto tok = genesis::Tokenizer::from_pretrained(dir + "/tok");
  EXPECT_EQ(tok.vocab_size(), 300);
  EXPECT_EQ(tok.token_to_id("<|im_end|>"), 299);
  EXPECT_EQ(tok.eos_token_id, 299);
  EXPECT_FALSE(tok.chat_template().empty());
  for (const std::string s : {"the quick brown fox", "zwölf Äpfel für 7 € – naïve café", "unseen words: Ωμέγα 🚀\n\t x",
                              "<|im_start|>user\nhello there<|im_end|>\n"}) {
    const auto ids = tok.encode(s, false);
    EXPECT_EQ(tok.decode(ids), s);
  }
  // Merges were learned from the corpus: its most frequent word is one token, its phrases take
  // fewer than half as many tokens as bytes.
  EXPECT_EQ(tok.encode(" the", false).size(), 1u);
  EXPECT_LT(tok.encode(" the quick brown fox jumps over the lazy dog", false).size() * 2, 44u);
  // Special tokens are single ids.
  EXPECT_EQ(tok.encode("<|im_start|>", false), std::vector<int64_t>{298});
  // Deterministic: a second run writes the same bytes.
  T::train_bpe_tokenizer({dir + "/corpus.txt", dir + "/chat.jsonl"}, dir + "/tok2", o);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(slurp(dir + "/tok/tokenizer.json"), slurp(dir + "/tok2/tokenizer.json"));
  EXPECT_THROW(T::train_bpe_tokenizer({dir + "/nope.txt"}, dir + "/tok3", o), genesis::Error);
  o.vocab_size = 100;
  EXPECT_THROW(T::train_bpe_tokenizer({dir + "/corpus.txt"}, dir + "/tok3", o), genesis::Error);
  fs::remove_all(dir);
}

}  // namespace
