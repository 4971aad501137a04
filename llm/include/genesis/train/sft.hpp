// genesis/train/sft.hpp - supervised fine-tuning of Qwen models on chat data.
//
//   auto model = genesis::models::QwenForCausalLM::from_pretrained("Qwen2.5-0.5B-Instruct", {.device = "cuda"});
//   auto tok = genesis::Tokenizer::from_pretrained("Qwen2.5-0.5B-Instruct");
//   genesis::train::SftOptions o;
//   o.train_file = "chat.jsonl";           // {"messages": [{"role": "user", "content": ...}, ...]} per line
//   o.output_dir = "out/";                 // checkpoints, metrics.jsonl and the final HF folder
//   genesis::train::SftResult r = genesis::train::train_sft(*model, tok, o);
//
// Each conversation is rendered with the tokenizer's chat template; only the assistant turns are
// learned (every other label is -100).  Conversations are padded into length-bucketed batches or
// packed several to a row, each attending only to itself.  See docs/training.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "genesis/chat_template.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/tensor.hpp"
#include "genesis/tokenizer.hpp"

namespace genesis::train {

/** Label value that the loss ignores. */
inline constexpr int64_t kIgnoreIndex = -100;

/** One tokenized conversation: labels equal ids on assistant tokens and kIgnoreIndex elsewhere. */
struct ChatExample {
  std::vector<int64_t> ids;
  std::vector<int64_t> labels;
};

/** Reads chat JSONL ({"messages": [{"role", "content"}, ...]} per line; blank lines skipped).
 * Errors name the file and line. */
std::vector<std::vector<ChatMessage>> read_chat_jsonl(const std::string& path);

/** Renders msgs with tmpl and tokenizes them; labels cover each assistant turn's text and the
 * template's tokens that close it (<|im_end|>), so the model learns to stop.  Longer than max_len
 * tokens: truncated (max_len <= 0: no limit).  Throws genesis::Error when the template does not
 * render a conversation's prefixes as prefixes of it (a template that rewrites earlier turns). */
ChatExample tokenize_chat(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& msgs,
                          int64_t max_len = 0);

/** One batch on the host: rows of ids and labels, with segment ids when packed. */
struct SftBatch {
  int64_t rows = 0, length = 0;    ///< (rows, length) tokens
  std::vector<int64_t> ids;        ///< rows * length; padding is the pad id
  std::vector<int64_t> labels;     ///< rows * length; kIgnoreIndex on padding and non-assistant tokens
  std::vector<int64_t> positions;  ///< rows * length; restart at 0 for each packed conversation
  std::vector<int32_t>
      segments;        ///< rows * length; packed: conversation number in the row (padding -1); empty when not packed
  int64_t tokens = 0;  ///< real (non-padding) tokens
  int64_t target_tokens = 0;  ///< labels that count in the loss (after the shift)
};

/** How examples become batches. */
struct BatchOptions {
  int64_t batch_size = 8;      ///< rows per batch
  int64_t max_length = 1024;   ///< longest row (tokens); longer conversations are truncated
  bool packing = false;        ///< pack several conversations into each row of max_length tokens
  int64_t bucket_factor = 50;  ///< padding: sort by length within windows of bucket_factor * batch_size
  int64_t pad_id = -1;         ///< id written into padding (-1: the tokenizer's pad or eos id, else 0)
  bool shuffle = true;         ///< reshuffle every epoch (from seed and epoch number)
  uint64_t seed = 0;
};

/** Deterministic batches: batch(epoch, i) depends only on the examples, the options, epoch and i,
 * so a resumed run sees exactly the batches an uninterrupted one would.  Not thread-safe (it
 * caches the last epoch's plan). */
class SftBatcher {
 public:
  /** Batches over examples (each truncated to o.max_length). */
  SftBatcher(std::vector<ChatExample> examples, BatchOptions o);
  /** Batches in epoch `epoch` (0-based; the same for every epoch unless packing). */
  int64_t batches_in_epoch(int64_t epoch) const { return static_cast<int64_t>(plan(epoch).size()); }
  /** Batch i of epoch `epoch`. */
  SftBatch batch(int64_t epoch, int64_t i) const;
  /** The examples, truncated. */
  const std::vector<ChatExample>& examples() const { return examples_; }
  /** The options. */
  const BatchOptions& options() const { return o_; }

 private:
  using Plan = std::vector<std::vector<std::vector<int64_t>>>;  // batches -> rows -> example indices
  const Plan& plan(int64_t epoch) const;
  std::vector<ChatExample> examples_;
  BatchOptions o_;
  mutable int64_t cached_epoch_ = -1;
  mutable Plan cached_;
};

/** Device tensors of a batch, as the model's loss reads them. */
struct DeviceBatch {
  Tensor ids;             ///< (B, T) int64
  Tensor labels;          ///< (B, T) int64
  Tensor positions;       ///< (B, T) int64, undefined when every row counts 0, 1, 2, ...
  Tensor mask;            ///< (B, 1, T, T) bool keep-mask for packed rows, undefined = plain causal
  Tensor rows;            ///< (N) int64: flat (b * (T-1) + t) indices of the positions that predict a target
  Tensor targets;         ///< (N) int64: the label each of those positions predicts
  int64_t n_targets = 0;  ///< N
};
/** Copies b to device. */
DeviceBatch to_device(const SftBatch& b, const Device& device);

/** Sum (not mean) of next-token cross entropy over labels != kIgnoreIndex, and how many there
 * are.  Only the positions with a target go through lm_head, and the logits stay in the model's
 * (or autocast's) dtype: the loss op reduces them in float32 without a float32 copy. */
std::pair<Tensor, int64_t> sft_loss_sum(models::QwenForCausalLM& model, const DeviceBatch& b);

/** Everything train_sft reads. */
struct SftOptions {
  std::string train_file;              ///< chat JSONL
  std::string eval_file;               ///< held-out chat JSONL ("" = take eval_fraction of train_file)
  double eval_fraction = 0.0;          ///< used when eval_file is empty (0 = no evaluation)
  std::string output_dir = "sft-out";  ///< checkpoint, metrics.jsonl and final/ (the HF folder)
  BatchOptions batches;                ///< batch_size, max_length, packing, seed
  int64_t grad_accum = 1;              ///< micro-batches per optimizer step
  int64_t epochs = 1;
  int64_t max_steps = 0;  ///< optimizer steps (0 = epochs * batches / grad_accum)
  double lr = 2e-5, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;
  double warmup_ratio = 0.03;             ///< share of the steps warming up linearly (then cosine to 0)
  int64_t warmup_steps = -1;              ///< overrides warmup_ratio when >= 0
  double max_grad_norm = 1.0;             ///< 0 = no clipping
  std::string autocast;                   ///< "" none, "bf16" or "fp16" (autocast on the model's device)
  bool activation_checkpointing = false;  ///< recompute each decoder layer in backward
  int64_t eval_every = 0;                 ///< steps between evaluations (0 = at the end only)
  int64_t save_every = 0;                 ///< steps between checkpoints (0 = none)
  int64_t log_every = 1;                  ///< steps between metrics lines
  std::string resume;                     ///< checkpoint to resume from ("" = start fresh)
  int64_t stop_after = 0;         ///< end this process after so many steps, checkpoint saved (0 = run to the end)
  std::string progress = "auto";  ///< "auto" (a bar on a terminal), "bar", "lines" or "none"
  bool save_final = true;         ///< write output_dir/final as an HF folder with the tokenizer
  std::string tokenizer_dir;      ///< tokenizer files copied into final/ ("" = none)
  std::function<void(int64_t)> on_step;  ///< called after each optimizer step with its number (after the loss is read)
  /** LoRA instead of full fine-tuning: adapters of this config are attached to the model (its weights frozen, no
   * optimizer state for them); checkpoints hold the adapters and their optimizer state, final/ is a PEFT adapter
   * folder (adapter_config.json, adapter_model.safetensors) instead of a model. */
  std::optional<models::LoraConfig> lora;
};

/** What a run did. */
struct SftResult {
  int64_t steps = 0;           ///< optimizer steps taken (in total, resumed ones included)
  int64_t total_steps = 0;     ///< steps the whole run takes
  std::vector<double> losses;  ///< per step of this process: mean loss per target token
  double eval_loss = -1;       ///< last evaluation (-1 = none)
  double seconds = 0, tokens_per_second = 0;
  uint64_t peak_memory = 0;                    ///< bytes, on the model's device
  std::string final_dir;                       ///< "" when not saved
  std::shared_ptr<models::LoraModel> adapter;  ///< the trained adapters (still attached to the model) with o.lora
};

/** Trains model on o.train_file; see SftOptions.  A checkpoint (output_dir/checkpoint.safetensors)
 * holds the model (with o.lora: the adapters), AdamW, the schedule, the RNG and the data position: resuming gives the
 * losses an uninterrupted run would, bit for bit, on the same device. */
SftResult train_sft(models::QwenForCausalLM& model, const Tokenizer& tok, const SftOptions& o);

/** The training loop over ready batches (o.train_file, eval_file and tokenizer_dir unused; eval
 * may be null).  Used by the file-reading overload and by tests that bring their own batches. */
SftResult train_sft(models::QwenForCausalLM& model, const SftBatcher& train, const SftBatcher* eval,
                    const SftOptions& o);

/** Mean loss per target token over a batcher's first epoch, without gradients. */
double evaluate_loss(models::QwenForCausalLM& model, const SftBatcher& data, const Device& device,
                     const std::string& autocast = "");

/** Greedy answers to the last assistant turn of each conversation, compared with the reference
 * text (exact match after trimming whitespace).  Returns the share that match; `on_result` (when
 * set) sees each prompt's conversation, the answer and whether it matched. */
double exact_match(models::QwenForCausalLM& model, const Tokenizer& tok, const ChatTemplate& tmpl,
                   const std::vector<std::vector<ChatMessage>>& conversations, int64_t max_new_tokens,
                   const std::function<void(size_t, const std::string&, bool)>& on_result = {});

}  // namespace genesis::train
