// train.cpp - `genesis train-tokenizer` (byte-level BPE from text files), `genesis train-sft`
// (supervised fine-tuning of a Qwen model, or training one from a config) and `genesis eval-chat`
// (held-out exact match of greedy answers).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "genesis/autograd.hpp"
#include "genesis/chat_template.hpp"
#include "genesis/distributed.hpp"
#include "genesis/io.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"
#include "genesis/tokenizer.hpp"
#include "genesis/train/bpe_trainer.hpp"
#include "genesis/train/sft.hpp"

namespace genesis::cli {

namespace M = genesis::models;
namespace T = genesis::train;
namespace fs = std::filesystem;

namespace {

// The options of one of these commands (each has its own; the ones it does not take stay unset).
struct TrainState {
  // bench train
  std::string bench_config = "qwen2.5-0.5b";
  int64_t bench_batch = 8, bench_seq = 512, bench_steps = 10, bench_warmup = 3;
  bool bench_json = false;
  // train-tokenizer
  std::vector<std::string> files;
  std::string out_dir;
  T::BpeTrainerOptions bpe;
  std::string chat_template_file;
  // train-sft and eval-chat
  std::string model_dir, config, tokenizer_dir;
  DeviceFlags dev;
  T::SftOptions sft_opts;
  uint64_t seed = 0;
  int64_t exact_match = 0, max_new_tokens = 64, show = 3;
  bool profile = false;
  std::string data, logits_out;
  // train-sft --lora-*
  int64_t lora_r = 0;
  double lora_alpha = 0, lora_dropout = 0;
  std::string lora_targets = "all-linear";
  bool use_rslora = false;
};

int run_train_tokenizer(const GlobalOptions&, TrainState& s) {
  if (!s.chat_template_file.empty()) s.bpe.chat_template = M::read_text_file(s.chat_template_file);
  s.bpe.log = [](const std::string& line) { std::fprintf(stderr, "train-tokenizer: %s\n", line.c_str()); };
  const auto t0 = std::chrono::steady_clock::now();
  T::BpeTrainingResult r = T::train_bpe_tokenizer(s.files, s.out_dir, s.bpe);
  std::fprintf(stderr, "train-tokenizer: %lld ids from %lld bytes in %.1f s\n", static_cast<long long>(r.vocab_size),
               static_cast<long long>(r.bytes),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

// The model to train: an HF folder (--model), or new weights of a config.json file or a named
// shape (--config) sized to the tokenizer's vocabulary.
std::unique_ptr<M::QwenForCausalLM> make_model(TrainState& s, const Tokenizer& tok, const Device& d) {
  const std::optional<DType> dt = pick_dtype(s.dev);
  if (!s.model_dir.empty()) {
    if (!s.config.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "give --model or --config, not both");
    return M::QwenForCausalLM::from_pretrained(s.model_dir, {.device = d, .dtype = dt.value_or(DType::f32)});
  }
  if (s.config.empty())
    throw Error(GN_ERR_INVALID_ARGUMENT, "give --model DIR (fine-tune) or --config FILE|NAME (new model)");
  M::QwenConfig c = config_from_name_or_file(s.config);
  c.vocab_size = tok.vocab_size();
  c.eos_token_ids.clear();
  if (tok.eos_token_id >= 0) c.eos_token_ids.push_back(tok.eos_token_id);
  c.dtype = "float32";
  manual_seed(s.seed);
  auto m = std::make_unique<M::QwenForCausalLM>(c, Options{.dtype = dt.value_or(DType::f32), .device = d});
  m->generation_defaults.eos_token_ids = c.eos_token_ids;
  return m;
}

int run_train_sft(const GlobalOptions& go, TrainState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  T::SftOptions& o = s.sft_opts;
  if (s.tokenizer_dir.empty()) s.tokenizer_dir = s.model_dir;
  if (s.tokenizer_dir.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "--tokenizer DIR is needed with --config");
  Tokenizer tok = Tokenizer::from_pretrained(s.tokenizer_dir);
  auto model = make_model(s, tok, d);
  std::fprintf(stderr, "train-sft: %s (%s, %.2fM parameters) on %s, %s\n",
               s.model_dir.empty() ? ("new model from " + s.config).c_str() : s.model_dir.c_str(),
               model->config.model_type.c_str(), static_cast<double>(model->config.num_parameters()) / 1e6,
               d.str().c_str(),
               o.autocast.empty() ? dtype_name(model->model.embed_tokens.weight.dtype()) : o.autocast.c_str());
  o.tokenizer_dir = s.tokenizer_dir;
  o.batches.seed = s.seed;
  if (s.lora_r > 0) {  // LoRA: adapters train, the model stays frozen; final/ is a PEFT adapter folder
    M::LoraConfig lc;
    lc.r = s.lora_r;
    lc.lora_alpha = s.lora_alpha > 0 ? s.lora_alpha : 2.0 * static_cast<double>(s.lora_r);
    lc.lora_dropout = s.lora_dropout;
    lc.use_rslora = s.use_rslora;
    lc.target_modules = M::LoraConfig::parse_targets(s.lora_targets);
    lc.base_model_name_or_path = s.model_dir;
    lc.validate("--lora-*");
    o.lora = lc;
    manual_seed(s.seed);  // the adapters' initial A (a resume restores them and the RNG from the checkpoint)
    std::fprintf(stderr, "train-sft: LoRA r %lld, alpha %g, dropout %g, targets %s\n", static_cast<long long>(lc.r),
                 lc.lora_alpha, lc.lora_dropout, s.lora_targets.c_str());
  }
  std::unique_ptr<Profiler> prof;
  if (s.profile) prof = std::make_unique<Profiler>("", true);
  T::SftResult r = T::train_sft(*model, tok, o);
  prof.reset();
  std::fprintf(stderr, "train-sft: %lld steps in %.1f s, %.0f tokens/s, peak memory %.1f MB%s\n",
               static_cast<long long>(r.steps), r.seconds, r.tokens_per_second,
               static_cast<double>(r.peak_memory) / 1e6,
               r.eval_loss >= 0 ? (", eval loss " + std::to_string(r.eval_loss)).c_str() : "");
  if (!r.final_dir.empty()) std::fprintf(stderr, "train-sft: saved %s\n", r.final_dir.c_str());
  if (s.exact_match > 0) {
    const std::string file = o.eval_file.empty() ? o.train_file : o.eval_file;
    auto convs = T::read_chat_jsonl(file);
    if (static_cast<int64_t>(convs.size()) > s.exact_match) convs.resize(static_cast<size_t>(s.exact_match));
    ChatTemplate tmpl(tok.chat_template());
    const double acc = T::exact_match(*model, tok, tmpl, convs, s.max_new_tokens);
    std::printf("exact match: %.1f%% of %zu held-out conversations (%s)\n", 100.0 * acc, convs.size(), file.c_str());
  }
  return 0;
}

int run_eval_chat(const GlobalOptions& go, TrainState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  Tokenizer tok = Tokenizer::from_pretrained(s.model_dir);
  if (tok.chat_template().empty()) throw Error(GN_ERR_NOT_FOUND, s.model_dir + ": the tokenizer has no chat template");
  auto model = M::QwenForCausalLM::from_pretrained(s.model_dir, {.device = d, .dtype = pick_dtype(s.dev)});
  auto convs = T::read_chat_jsonl(s.data);
  if (s.exact_match > 0 && static_cast<int64_t>(convs.size()) > s.exact_match)
    convs.resize(static_cast<size_t>(s.exact_match));
  ChatTemplate tmpl(tok.chat_template());
  if (!s.logits_out.empty()) {  // the first conversation's ids and logits, for comparison with other frameworks
    const std::vector<int64_t> ids = tok.encode(tmpl.apply(convs.at(0), false, false), false);
    NoGradGuard no_grad;
    model->eval();
    Tensor t = tensor(ids, {1, static_cast<int64_t>(ids.size())}, {.dtype = DType::i64, .device = d});
    Tensor logits = model->forward(t).to(DType::f32).to(Device("cpu"));
    save_safetensors(s.logits_out, {{"input_ids", t.to(Device("cpu"))}, {"logits", logits}});
    std::fprintf(stderr, "eval-chat: wrote %s (%zu tokens)\n", s.logits_out.c_str(), ids.size());
  }
  int64_t shown = 0;
  const double acc =
      T::exact_match(*model, tok, tmpl, convs, s.max_new_tokens, [&](size_t i, const std::string& answer, bool ok) {
        if (ok || shown >= s.show || convs[i].size() < 2) return;
        ++shown;
        std::printf("miss: %s\n  expected: %s\n  answered: %s\n", convs[i].end()[-2].content.c_str(),
                    convs[i].back().content.c_str(), answer.c_str());
      });
  std::printf("exact match: %.1f%% of %zu conversations (%s)\n", 100.0 * acc, convs.size(), s.data.c_str());
  return 0;
}

// Training throughput: random tokens (every position a target), AdamW, autocast as asked; the
// mean of the timed steps after warm-up, and the peak memory of the whole run.
int run_bench_train(const GlobalOptions& go, TrainState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  M::QwenConfig c = config_from_name_or_file(s.bench_config);
  manual_seed(0);
  M::QwenForCausalLM model(c, Options{.dtype = DType::f32, .device = d});
  std::vector<T::ChatExample> rows;
  HostRng rng(0);
  for (int64_t r = 0; r < s.bench_batch * (s.bench_warmup + s.bench_steps); ++r) {
    T::ChatExample e;
    for (int64_t t = 0; t < s.bench_seq; ++t) e.ids.push_back(rng.below(c.vocab_size));
    e.labels = e.ids;
    rows.push_back(std::move(e));
  }
  T::BatchOptions bo;
  bo.batch_size = s.bench_batch;
  bo.max_length = s.bench_seq;
  bo.shuffle = false;
  T::SftBatcher data(rows, bo);
  T::SftOptions o = s.sft_opts;
  o.output_dir = (fs::temp_directory_path() / ("genesis_bench_train_" + std::to_string(::getpid()))).string();
  o.max_steps = s.bench_warmup + s.bench_steps;
  o.warmup_steps = 0;
  o.progress = "none";
  o.lr = 1e-5;
  // Time the steps after warm-up from the per-step metrics (each step ends with a host sync).
  std::vector<double> stamps;
  o.on_step = [&](int64_t) {
    stamps.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  };
  std::unique_ptr<Profiler> prof;
  if (s.profile) prof = std::make_unique<Profiler>("", true);
  T::SftResult r = T::train_sft(model, data, nullptr, o);
  prof.reset();
  fs::remove_all(o.output_dir);
  const double secs = stamps.back() - stamps[static_cast<size_t>(s.bench_warmup - 1)];
  // Under `genesis launch` every rank trains its own batch: the job's tokens/s, printed by rank 0.
  const int world = distributed::get_world_size();
  if (distributed::get_rank() != 0) return 0;
  const double tps = static_cast<double>(world * s.bench_steps * s.bench_batch * s.bench_seq) / secs;
  const double peak_gb = static_cast<double>(r.peak_memory) / 1e9;
  if (s.bench_json) {
    std::printf(
        "{\"config\": \"%s\", \"world_size\": %d, \"device\": \"%s\", \"batch\": %lld, \"seq\": %lld, \"autocast\": "
        "\"%s\", "
        "\"tokens_per_second\": %.1f, \"step_ms\": %.2f, \"peak_gb\": %.3f, \"last_loss\": %.4f}\n",
        s.bench_config.c_str(), world, d.str().c_str(), static_cast<long long>(s.bench_batch),
        static_cast<long long>(s.bench_seq), o.autocast.c_str(), tps, 1e3 * secs / static_cast<double>(s.bench_steps),
        peak_gb, r.losses.back());
  } else {
    std::printf("train %s on %s, batch %lld x %lld, autocast %s: %.0f tokens/s (%.1f ms a step), peak %.2f GB\n",
                s.bench_config.c_str(), d.str().c_str(), static_cast<long long>(s.bench_batch),
                static_cast<long long>(s.bench_seq), o.autocast.empty() ? "none" : o.autocast.c_str(), tps,
                1e3 * secs / static_cast<double>(s.bench_steps), peak_gb);
  }
  return 0;
}

}  // namespace

CommandRun setup_train_tokenizer(CLI::App& c) {
  auto s = std::make_shared<TrainState>();
  c.add_option("files", s->files, "text files (.jsonl: the messages' contents)")->required()->check(CLI::ExistingFile);
  c.add_option("--out", s->out_dir, "output folder (tokenizer.json, tokenizer_config.json)")->required();
  c.add_option("--vocab-size", s->bpe.vocab_size, "ids in all, special tokens included")
      ->check(CLI::Range(int64_t{257}, int64_t{1} << 24));
  c.add_option("--min-frequency", s->bpe.min_frequency, "merge only pairs seen this often")->check(CLI::PositiveNumber);
  c.add_option("--special-tokens", s->bpe.special_tokens, "special tokens, in id order")->delimiter(',');
  c.add_option("--eos-token", s->bpe.eos_token, "end-of-turn token (one of the special tokens)");
  c.add_option("--pad-token", s->bpe.pad_token, "padding token (one of the special tokens)");
  c.add_option("--chat-template", s->chat_template_file, "Jinja chat template file (default: ChatML)")
      ->check(CLI::ExistingFile);
  c.fallthrough();
  return bind_command(s, run_train_tokenizer);
}

CommandRun setup_train_sft(CLI::App& c) {
  auto s = std::make_shared<TrainState>();
  T::SftOptions& o = s->sft_opts;
  existing_folder(
      c.add_option("--model", s->model_dir, "Hugging Face model folder to fine-tune (default: none, see --config)"));
  c.add_option("--config", s->config,
               std::string("train a new model of this shape (default: none, see --model): ") + kConfigHelp);
  existing_folder(c.add_option("--tokenizer", s->tokenizer_dir, "folder with tokenizer.json (default: --model)"));
  c.add_option("--data", o.train_file, "training conversations (JSONL)")->required()->check(CLI::ExistingFile);
  c.add_option("--eval-data", o.eval_file, "held-out conversations (JSONL; default: none, see --eval-fraction)")
      ->check(CLI::ExistingFile);
  c.add_option("--eval-fraction", o.eval_fraction, "hold out this share of --data when --eval-data is not given")
      ->check(CLI::Range(0.0, 0.9));
  c.add_option("--out", o.output_dir,
               "output folder: checkpoint, metrics.jsonl, final/ (HF folder; with --lora-r a PEFT adapter folder)");
  c.add_option("--epochs", o.epochs, "passes over the data")->check(CLI::PositiveNumber);
  c.add_option("--max-steps", o.max_steps, "optimizer steps (overrides --epochs)")->check(CLI::NonNegativeNumber);
  c.add_option("--batch-size", o.batches.batch_size, "rows per micro-batch")->check(CLI::PositiveNumber);
  c.add_option("--grad-accum", o.grad_accum, "micro-batches per optimizer step")->check(CLI::PositiveNumber);
  c.add_option("--max-length", o.batches.max_length, "tokens per row (longer conversations are cut)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  c.add_flag("--packing", o.batches.packing, "pack several conversations per row (attention stays within each)");
  c.add_option("--lr", o.lr, "peak learning rate")->check(CLI::PositiveNumber);
  c.add_option("--weight-decay", o.weight_decay, "AdamW weight decay (matrices only)")->check(CLI::NonNegativeNumber);
  c.add_option("--warmup-ratio", o.warmup_ratio, "share of steps warming up")->check(CLI::Range(0.0, 1.0));
  c.add_option("--warmup-steps", o.warmup_steps, "warm-up steps (overrides --warmup-ratio)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--max-grad-norm", o.max_grad_norm, "clip the gradient norm (0 = off)")->check(CLI::NonNegativeNumber);
  add_autocast_option(c, o.autocast, "mixed precision: none, bfloat16 (bf16) or float16 (fp16, half)");
  c.add_flag("--activation-checkpointing", o.activation_checkpointing, "recompute decoder layers in backward");
  c.add_option("--eval-every", o.eval_every, "steps between evaluations (0 = at the end)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--save-every", o.save_every, "steps between checkpoints (0 = none)")->check(CLI::NonNegativeNumber);
  c.add_option("--log-every", o.log_every, "steps between metrics.jsonl lines")->check(CLI::PositiveNumber);
  c.add_option("--resume", o.resume, "checkpoint to continue from (default: none)")->check(CLI::ExistingFile);
  c.add_option("--stop-after", o.stop_after, "end after this many steps with a checkpoint (resume later)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--progress", o.progress, "auto, bar, lines or none");
  c.add_option("--seed", s->seed, "seed of the initial weights and the data order");
  c.add_option("--exact-match", s->exact_match,
               "after training, score greedy answers on this many held-out conversations")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--max-new-tokens", s->max_new_tokens, "answer length limit of --exact-match")
      ->check(CLI::PositiveNumber);
  c.add_flag("--profile", s->profile, "print a per-op time table of the training run");
  c.add_option("--lora-r", s->lora_r, "train LoRA adapters of this rank instead of every weight (0 = full)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--lora-alpha", s->lora_alpha, "LoRA alpha: scale alpha / r (default: 2 r)")->check(CLI::PositiveNumber);
  c.add_option("--lora-dropout", s->lora_dropout, "dropout on the adapters' input")->check(CLI::Range(0.0, 0.99));
  c.add_option("--lora-targets", s->lora_targets,
               "projections with adapters: all-linear or a list of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,"
               "down_proj");
  c.add_flag("--use-rslora", s->use_rslora, "rank-stabilised LoRA: scale alpha / sqrt(r)");
  add_device_options(c, s->dev, kDeviceHelp,
                     "parameter dtype: float32 (default), bfloat16 or float16 (see --autocast)");
  c.fallthrough();
  return bind_command(s, run_train_sft);
}

CommandRun setup_bench_train(CLI::App& c) {
  auto s = std::make_shared<TrainState>();
  T::SftOptions& o = s->sft_opts;
  c.add_option("--config", s->bench_config, std::string("model shape: ") + kConfigHelp);
  c.add_option("--batch", s->bench_batch, "rows per step")->check(CLI::PositiveNumber);
  c.add_option("--seq", s->bench_seq, "tokens per row")->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  c.add_option("--steps", s->bench_steps, "timed steps")->check(CLI::PositiveNumber);
  c.add_option("--warmup", s->bench_warmup, "untimed steps first")->check(CLI::PositiveNumber);
  add_autocast_option(c, o.autocast, "mixed precision: none, bfloat16 (bf16) or float16 (fp16, half)");
  c.add_flag("--activation-checkpointing", o.activation_checkpointing, "recompute decoder layers in backward");
  add_device_options(c, s->dev, kDeviceHelp);
  c.add_flag("--json", s->bench_json, "one JSON line");
  c.add_flag("--profile", s->profile, "print a per-op time table of the run");
  c.fallthrough();
  return bind_command(s, run_bench_train);
}

CommandRun setup_eval_chat(CLI::App& c) {
  auto s = std::make_shared<TrainState>();
  existing_folder(c.add_option("--model", s->model_dir, "Hugging Face model folder with tokenizer files"))->required();
  c.add_option("--data", s->data, "conversations (JSONL)")->required()->check(CLI::ExistingFile);
  c.add_option("--limit", s->exact_match, "score at most this many (0 = all)")->check(CLI::NonNegativeNumber);
  c.add_option("--max-new-tokens", s->max_new_tokens, "answer length limit")->check(CLI::PositiveNumber);
  c.add_option("--show", s->show, "print this many misses")->check(CLI::NonNegativeNumber);
  c.add_option("--logits-out", s->logits_out,
               "also write the first conversation's ids and logits (safetensors; default: none)");
  add_device_options(c, s->dev, kDeviceHelp, "float32, bfloat16 or float16 (default: the config's)");
  c.fallthrough();
  return bind_command(s, run_eval_chat);
}

}  // namespace genesis::cli
