// sft.cpp - genesis/train/sft.hpp: the supervised fine-tuning loop: loss on assistant tokens,
// gradient accumulation, AdamW with cosine-with-warmup, clipping, autocast, evaluation, checkpoints
// with an exact resume, progress and a JSONL metrics log.  Its data (reading, tokenizing,
// batching) is in sft_data.cpp, the exact-match check in sft_eval.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "genesis/amp.hpp"
#include "genesis/autograd.hpp"
#include "genesis/distributed/ddp.hpp"
#include "genesis/io.hpp"
#include "genesis/memory.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/optim.hpp"
#include "genesis/random.hpp"
#include "genesis/train/sft.hpp"
#include "progress.h"

namespace genesis::train {

namespace F = nn::functional;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- loss

std::pair<Tensor, int64_t> sft_loss_sum(models::QwenForCausalLM& model, const DeviceBatch& b) {
  const int64_t B = b.ids.size(0), T = b.ids.size(1);
  if (b.n_targets == 0) return {Tensor(), 0};
  // Packed rows: positions restart with each conversation, the mask keeps each to itself.  The model's context
  // carries what its family needs besides (sliding-window masks, a second rope).
  const models::AttentionContext ctx = b.positions.defined() ? model.attention_context(b.positions, nullptr, 0, b.mask)
                                                             : model.attention_context(T, nullptr, b.mask);
  Tensor h = model.hidden_states(b.ids, ctx);  // (B, T, hidden)
  const int64_t H = h.size(-1);
  // Only the positions that predict a target reach lm_head: (N, hidden) -> (N, vocab).
  Tensor hp = h.slice(1, 0, T - 1).reshape({B * (T - 1), H}).index_select(0, b.rows);
  Tensor logits = model.logits(hp);
  // The loss op reduces low-precision logits in float32 itself; autocast would first copy them
  // to float32 (vocab-wide, the largest activation of the model).
  amp::autocast off(b.ids.device().type(), {}, false);
  return {F::cross_entropy(logits, b.targets, kIgnoreIndex, "sum"), b.n_targets};
}

namespace {

// "" and "none" (or float32 in any spelling): off; else the dtype dtype_from_name reads.
std::optional<DType> autocast_dtype(const std::string& s) {
  const std::optional<DType> d = s.empty() || s == "none" ? DType::f32 : dtype_from_name(s);
  if (d == DType::f32) return std::nullopt;
  if (d == DType::bf16 || d == DType::f16) return d;
  throw Error(GN_ERR_INVALID_ARGUMENT,
              "[sft] autocast must be none (fp32, f32, float32, float), bf16 (bfloat16) or "
              "fp16 (f16, float16, half), got \"" +
                  s + "\"");
}

Device model_device(models::QwenForCausalLM& m) { return m.model.embed_tokens.weight.device(); }

// Decayed: matrices and embeddings; not decayed: biases and norm weights (1-D), as most
// fine-tuning recipes do.
std::vector<optim::ParamGroup> param_groups(nn::Module& m, double weight_decay) {
  std::vector<Tensor> decay, keep;
  for (auto& [name, p] : m.named_parameters()) {
    if (!p.requires_grad()) continue;
    (p.dim() >= 2 ? decay : keep).push_back(p);
  }
  std::vector<optim::ParamGroup> g;
  g.emplace_back(decay, std::map<std::string, double>{{"weight_decay", weight_decay}});
  if (!keep.empty()) g.emplace_back(keep, std::map<std::string, double>{{"weight_decay", 0.0}});
  return g;
}

void validate(const SftOptions& o) {
  auto bad = [](const std::string& what) { throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] " + what); };
  if (o.grad_accum < 1) bad("grad_accum must be >= 1");
  if (o.epochs < 1) bad("epochs must be >= 1");
  if (o.max_steps < 0) bad("max_steps must be >= 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) bad("lr must be a positive number");
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) bad("weight_decay must be >= 0");
  if (!(o.max_grad_norm >= 0) || !std::isfinite(o.max_grad_norm)) bad("max_grad_norm must be >= 0");
  if (!(o.warmup_ratio >= 0 && o.warmup_ratio <= 1)) bad("warmup_ratio must be in [0, 1]");
  if (o.stop_after < 0) bad("stop_after must be >= 0");
  if (o.eval_every < 0 || o.save_every < 0 || o.log_every < 1)
    bad("eval_every/save_every must be >= 0, log_every >= 1");
  if (o.progress != "auto" && o.progress != "bar" && o.progress != "lines" && o.progress != "none")
    bad("progress must be auto, bar, lines or none");
  autocast_dtype(o.autocast);
  if (o.lora) {
    o.lora->validate("SftOptions::lora");
    // A checkpointed layer runs twice; the adapters' dropout would draw other masks the second time.
    if (o.lora->lora_dropout > 0 && o.activation_checkpointing)
      bad("lora_dropout must be 0 with activation_checkpointing (the recomputation would draw other dropout masks)");
  }
}

// Where the data stands: the next micro-batch to read.
struct Cursor {
  int64_t epoch = 0, batch = 0;
  void advance(const SftBatcher& d) {
    if (++batch >= d.batches_in_epoch(epoch)) {
      ++epoch;
      batch = 0;
    }
  }
};

}  // namespace

double evaluate_loss(models::QwenForCausalLM& model, const SftBatcher& data, const Device& device,
                     const std::string& autocast) {
  const std::optional<DType> ac = autocast_dtype(autocast);
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  Tensor sum;
  int64_t n = 0;
  for (int64_t i = 0; i < data.batches_in_epoch(0); ++i) {
    DeviceBatch b = to_device(data.batch(0, i), device);
    amp::autocast guard(device.type(), ac, ac.has_value());
    auto [s, k] = sft_loss_sum(model, b);
    if (k == 0) continue;
    sum = sum.defined() ? sum + s : s;
    n += k;
  }
  model.train(was_training);
  return n ? sum.item<double>() / static_cast<double>(n) : -1.0;
}

SftResult train_sft(models::QwenForCausalLM& model, const SftBatcher& train, const SftBatcher* eval,
                    const SftOptions& o) {
  validate(o);
  const Device dev = model_device(model);
  const std::optional<DType> ac = autocast_dtype(o.autocast);
  fs::create_directories(o.output_dir);
  // Under `genesis launch` (docs/distributed.md): data parallel over the ranks.  A step takes
  // world * grad_accum micro-batches, rank r those at positions r, r + world, ...; rank 0 writes.
  const bool dp = distributed::init_from_env(dev);
  const int64_t world = distributed::get_world_size(), rank = distributed::get_rank();

  const int64_t per_epoch = train.batches_in_epoch(0);
  const int64_t per_step = o.grad_accum * world;  // micro-batches an optimizer step consumes
  const int64_t steps_per_epoch = (per_epoch + per_step - 1) / per_step;
  const int64_t total = o.max_steps > 0 ? o.max_steps : o.epochs * steps_per_epoch;
  const int64_t warmup = o.warmup_steps >= 0
                             ? o.warmup_steps
                             : static_cast<int64_t>(std::ceil(o.warmup_ratio * static_cast<double>(total)));

  // LoRA: fresh adapters (drawn before a resume restores them, so the RNG stream matches), the model frozen; the
  // adapters are what trains, syncs and is saved.
  std::shared_ptr<models::LoraModel> lora;
  if (o.lora) lora = models::LoraModel::attach(model, *o.lora);
  nn::Module& trained = lora ? static_cast<nn::Module&>(*lora) : model;
  model.train();
  trained.train();
  model.model.gradient_checkpointing = o.activation_checkpointing;
  std::vector<Tensor> params;
  for (auto& [name, p] : trained.named_parameters()) {
    p.requires_grad_(true);
    params.push_back(p);
  }
  std::optional<distributed::DistributedDataParallel> ddp;
  if (dp) ddp.emplace(trained);
  optim::AdamW opt(param_groups(trained, o.weight_decay),
                   {.lr = o.lr, .betas = {o.beta1, o.beta2}, .eps = o.adam_eps, .weight_decay = o.weight_decay});
  optim::LambdaLR sched = optim::get_cosine_schedule_with_warmup(opt, warmup, total);

  // Resume: model, optimizer, schedule, RNG, step and data position, all or nothing.
  TrainingState st;
  st.model = &trained;
  st.optimizer = &opt;
  st.scheduler = &sched;
  Cursor cur;
  int64_t step = 0;
  const std::string ckpt = (fs::path(o.output_dir) / "checkpoint.safetensors").string();
  if (!o.resume.empty()) {
    Checkpoint ck = load_training_checkpoint(o.resume, st, dev);
    step = st.step;
    cur.epoch = st.epoch;
    auto it = st.user.find("sft.batch");
    if (it == st.user.end())
      throw Error(GN_ERR_INVALID_ARGUMENT, o.resume + ": not an SFT checkpoint (no data position)");
    cur.batch = std::stoll(it->second);
    auto kind = st.user.find("sft.lora");
    const std::string want = lora ? lora->config.to_json() : "";
    if ((kind == st.user.end() ? std::string() : kind->second) != want)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  o.resume + ": saved by a run with " +
                      (kind == st.user.end() || kind->second.empty() ? "full fine-tuning" : "other LoRA options") +
                      "; resume with the same options");
    auto tot = st.user.find("sft.total_steps");
    if (tot != st.user.end() && std::stoll(tot->second) != total)
      throw Error(GN_ERR_INVALID_ARGUMENT, o.resume + ": saved for " + tot->second + " steps but this run has " +
                                               std::to_string(total) + " (keep epochs, max_steps, batch options)");
  }

  const std::string metrics_path = (fs::path(o.output_dir) / "metrics.jsonl").string();
  std::ofstream metrics;  // rank 0 writes (the others' stream stays closed: writes to it do nothing)
  if (rank == 0) metrics.open(metrics_path, o.resume.empty() ? std::ios::trunc : std::ios::app);
  if (rank == 0 && !metrics) throw Error(GN_ERR_IO, metrics_path + ": cannot open for writing");

  auto save = [&] {
    st.step = step;
    st.epoch = cur.epoch;
    st.user["sft.batch"] = std::to_string(cur.batch);
    st.user["sft.total_steps"] = std::to_string(total);
    if (lora) st.user["sft.lora"] = lora->config.to_json();
    distributed::save_on_rank0([&] { save_training_checkpoint(ckpt, st); });
  };

  SftResult r;
  r.adapter = lora;
  Progress bar(rank == 0 ? o.progress : "none", total, step);
  reset_peak_memory_stats(dev);
  const auto t0 = Clock::now();
  int64_t tokens_seen = 0;
  auto run_eval = [&](bool final) {
    if (!eval) return;
    r.eval_loss = evaluate_loss(model, *eval, dev, o.autocast);
    nlohmann::json j{{"step", step}, {"eval_loss", r.eval_loss}};
    metrics << j.dump() << "\n" << std::flush;
    bar.message("step " + std::to_string(step) + (final ? "  final" : "") + "  eval loss " +
                format_number(r.eval_loss));
  };

  const int64_t first = step;
  while (step < total) {
    if (o.stop_after > 0 && step - first >= o.stop_after) break;
    // One optimizer step over grad_accum micro-batches, the loss normalised by the step's targets.
    std::vector<SftBatch> micro;
    int64_t targets = 0, tokens = 0;
    for (int64_t m = 0; m < per_step; ++m) {
      SftBatch hb = train.batch(cur.epoch, cur.batch);
      targets += hb.target_tokens;  // over every rank's micro-batches: the step's normaliser
      tokens += hb.tokens;
      if (m % world == rank) micro.push_back(std::move(hb));
      cur.advance(train);
    }
    Tensor loss_sum;
    for (size_t m = 0; m < micro.size(); ++m) {
      DeviceBatch b = to_device(micro[m], dev);
      Tensor s;
      int64_t k = 0;
      {
        amp::autocast guard(dev.type(), ac, ac.has_value());
        std::tie(s, k) = sft_loss_sum(model, b);
      }
      const bool last = m + 1 == micro.size();
      if (k == 0) {
        if (ddp && last) ddp->reduce_gradients();  // the other ranks' backward waits for this rank's share
        continue;
      }
      // DDP averages over the ranks: times world, each rank's share is its part of sum / targets.
      std::optional<distributed::DistributedDataParallel::NoSyncGuard> local_only;
      if (ddp && !last) local_only.emplace(*ddp);
      (s * (static_cast<double>(world) / static_cast<double>(targets))).backward();
      Tensor d = s.detach();
      loss_sum = loss_sum.defined() ? loss_sum + d : d;
    }
    if (dp) {  // the step's loss over every rank
      Tensor all = loss_sum.defined() ? loss_sum.to(DType::f32).reshape({1}) : zeros({1}, {DType::f32, dev});
      distributed::all_reduce(all);
      loss_sum = all;
    }
    Tensor grad_norm;
    if (o.max_grad_norm > 0) grad_norm = nn::utils::clip_grad_norm_(params, o.max_grad_norm);
    const double lr = opt.param_groups()[0].lr();
    opt.step();
    opt.zero_grad();
    sched.step();
    ++step;
    tokens_seen += tokens;

    const double loss =
        loss_sum.defined() ? loss_sum.item<double>() / static_cast<double>(std::max<int64_t>(targets, 1)) : 0.0;
    r.losses.push_back(loss);
    if (o.on_step) o.on_step(step);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const double tps = secs > 0 ? static_cast<double>(tokens_seen) / secs : 0.0;
    if (step % o.log_every == 0 || step == total) {
      nlohmann::json j{{"step", step},       {"loss", loss},
                       {"lr", lr},           {"tokens", tokens},
                       {"targets", targets}, {"tokens_per_second", tps},
                       {"epoch", cur.epoch}, {"memory", memory_allocated(dev)}};
      if (grad_norm.defined()) j["grad_norm"] = grad_norm.item<double>();
      metrics << j.dump() << "\n" << std::flush;
    }
    bar.update(step, loss, lr, tps, memory_allocated(dev));
    if (o.save_every > 0 && step % o.save_every == 0 && step < total) save();
    if (o.eval_every > 0 && step % o.eval_every == 0 && step < total) run_eval(false);
  }
  bar.finish();
  r.steps = step;
  r.total_steps = total;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.tokens_per_second = r.seconds > 0 ? static_cast<double>(tokens_seen) / r.seconds : 0.0;
  r.peak_memory = max_memory_allocated(dev);
  if (o.save_every > 0 || o.stop_after > 0) save();
  if (step < total) return r;  // stopped early: no final evaluation
  run_eval(true);
  return r;
}

SftResult train_sft(models::QwenForCausalLM& model, const Tokenizer& tok, const SftOptions& o) {
  if (tok.chat_template().empty())
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[sft] the tokenizer has no chat template (tokenizer_config.json "
                "\"chat_template\" or chat_template.jinja)");
  ChatTemplate tmpl(tok.chat_template());
  auto load = [&](const std::vector<std::vector<ChatMessage>>& convs) {
    std::vector<ChatExample> ex;
    ex.reserve(convs.size());
    for (const auto& c : convs) ex.push_back(tokenize_chat(tok, tmpl, c, o.batches.max_length));
    return ex;
  };
  std::vector<std::vector<ChatMessage>> train = read_chat_jsonl(o.train_file), held;
  if (!o.eval_file.empty()) {
    held = read_chat_jsonl(o.eval_file);
  } else if (o.eval_fraction > 0) {
    if (o.eval_fraction >= 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] eval_fraction must be below 1");
    // A fixed shuffle (independent of the training seed) picks the held-out conversations.
    std::vector<size_t> idx(train.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    HostRng g(0x5EEDull);
    for (size_t i = idx.size(); i > 1; --i)
      std::swap(idx[i - 1], idx[static_cast<size_t>(g.below(static_cast<int64_t>(i)))]);
    const size_t k = std::max<size_t>(1, static_cast<size_t>(o.eval_fraction * static_cast<double>(train.size())));
    std::vector<std::vector<ChatMessage>> keep;
    std::vector<bool> is_held(train.size(), false);
    for (size_t i = 0; i < k && i < idx.size(); ++i) is_held[idx[i]] = true;
    for (size_t i = 0; i < train.size(); ++i) (is_held[i] ? held : keep).push_back(std::move(train[i]));
    train = std::move(keep);
  }
  // Data that would train on nothing is refused rather than run (and saved) as if it had trained.
  if (train.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] " + o.train_file + ": no conversations to train on");
  if (std::none_of(train.begin(), train.end(), [](const std::vector<ChatMessage>& c) {
        return std::any_of(c.begin(), c.end(), [](const ChatMessage& m) { return m.role == "assistant"; });
      }))
    throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] " + o.train_file +
                                             ": no conversation has an \"assistant\" turn; the loss covers assistant "
                                             "turns only, so training would learn nothing");
  BatchOptions bo = o.batches;
  if (bo.pad_id < 0) bo.pad_id = tok.pad_token_id >= 0 ? tok.pad_token_id : std::max<int64_t>(tok.eos_token_id, 0);
  std::vector<ChatExample> train_ex = load(train);
  if (std::none_of(train_ex.begin(), train_ex.end(), [](const ChatExample& e) {
        return std::any_of(e.labels.begin() + (e.labels.empty() ? 0 : 1), e.labels.end(),
                           [](int64_t l) { return l != kIgnoreIndex; });
      }))
    throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] " + o.train_file +
                                             ": no assistant token survives tokenization and truncation to "
                                             "max_length " +
                                             std::to_string(bo.max_length) + "; training would learn nothing");
  SftBatcher train_b(std::move(train_ex), bo);
  std::optional<SftBatcher> eval_b;
  if (!held.empty()) {
    BatchOptions eo = bo;
    eo.shuffle = false;
    eval_b.emplace(load(held), eo);
  }
  SftResult r = train_sft(model, train_b, eval_b ? &*eval_b : nullptr, o);
  if (o.save_final && (o.stop_after == 0 || r.steps >= r.total_steps)) {
    r.final_dir = (fs::path(o.output_dir) / "final").string();
    if (distributed::get_rank() == 0) {
      if (r.adapter)
        r.adapter->save_pretrained(r.final_dir);
      else
        model.save_pretrained(r.final_dir);
    }
    if (!o.tokenizer_dir.empty()) {
      for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "vocab.json",
                            "merges.txt", "special_tokens_map.json"}) {
        const fs::path src = fs::path(o.tokenizer_dir) / f;
        if (distributed::get_rank() == 0 && fs::is_regular_file(src)) {
          std::ifstream in(src, std::ios::binary);
          std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          atomic_write_file((fs::path(r.final_dir) / f).string(), bytes);
        }
      }
    }
  }
  return r;
}

}  // namespace genesis::train
