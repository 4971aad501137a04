// genesis/serving/llm.hpp - offline batched generation over the serving engine, in vLLM's shape.
//
//   genesis::serving::LLM llm("Qwen2.5-0.5B-Instruct", {.device = genesis::Device("cuda")});
//   genesis::serving::SamplingParams p;
//   p.temperature = 0.7; p.top_p = 0.8; p.max_new_tokens = 64; p.seed = 1;
//   for (const auto& out : llm.generate({"Hello, my name is", "The capital of France is"}, p))
//     std::cout << out.outputs[0].text << "\n";
//   auto replies = llm.chat({{{"user", "Hi!"}}}, p);
//
// Every prompt becomes one engine request (n samples each); the engine runs them with continuous batching and the
// outputs come back in the order of the prompts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "genesis/chat_template.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/serving/engine.hpp"
#include "genesis/tokenizer.hpp"

namespace genesis::serving {

/** How tokens are chosen (models::GenerationConfig's fields) plus samples per prompt and logprobs. */
struct SamplingParams : models::GenerationConfig {
  int64_t n = 1;                    ///< samples per prompt; sample k draws from seed + k
  int64_t logprobs = 0;             ///< 0..20: each token's log-probability and the top `logprobs`
  bool skip_special_tokens = true;  ///< leave special tokens out of the text
};

/** One sample of a prompt. */
struct CompletionOutput {
  int64_t index = 0;                                    ///< which of the n samples
  std::string text;                                     ///< the decoded tokens ("" without a tokenizer)
  std::vector<int64_t> token_ids;                       ///< new tokens (a stop id included)
  std::string finish_reason;                            ///< "stop", "length" or "cancelled"
  std::vector<double> token_logprobs;                   ///< per token, when logprobs > 0
  std::vector<std::vector<TokenLogprob>> top_logprobs;  ///< per token, the top `logprobs`, when logprobs > 0
};

/** What one prompt produced. */
struct RequestOutput {
  std::string prompt;                     ///< the prompt text ("" when given as ids)
  std::vector<int64_t> prompt_token_ids;  ///< the prompt as the model saw it
  std::vector<CompletionOutput> outputs;  ///< n samples, in sample order
};

/** Where and how a model folder is loaded. */
struct LLMOptions {
  Device device = Device();                   ///< where the model and its KV cache live
  std::optional<DType> dtype = std::nullopt;  ///< unset = the checkpoint's dtype
  EngineConfig engine;  ///< num_blocks, kv_cache_bytes and the fraction of free memory as Engine takes them; where the
                        ///< device reports no free memory and neither size is given, a 1 GiB budget (at least one
                        ///< full context)
};

/** A model, its tokenizer and a serving engine: batched offline generation and chat. */
class LLM {
 public:
  /** Loads a Hugging Face model folder (config.json, weights, tokenizer.json and its chat template when present). */
  explicit LLM(const std::string& model_dir, const LLMOptions& opts = {});
  /** Over a loaded model and an optional tokenizer (text prompts and chat need one). */
  LLM(std::unique_ptr<models::QwenForCausalLM> model, std::optional<Tokenizer> tokenizer,
      const EngineConfig& engine = {});
  ~LLM();
  LLM(const LLM&) = delete;
  LLM& operator=(const LLM&) = delete;

  /** Generates after each text prompt (encoded without special tokens); outputs in the prompts' order. */
  std::vector<RequestOutput> generate(const std::vector<std::string>& prompts, const SamplingParams& params = {});
  /** Generates after each prompt of token ids; outputs in the prompts' order. */
  std::vector<RequestOutput> generate(const std::vector<std::vector<int64_t>>& prompts,
                                      const SamplingParams& params = {});
  /** Replies to each conversation, rendered with the tokenizer's chat template (generation prompt added). */
  std::vector<RequestOutput> chat(const std::vector<std::vector<ChatMessage>>& conversations,
                                  const SamplingParams& params = {}, std::optional<bool> enable_thinking = {});

  /** The model. */
  models::QwenForCausalLM& model();
  /** The tokenizer, or null when the folder has none. */
  const Tokenizer* tokenizer() const;
  /** The engine (its stats, or requests of one's own). */
  Engine& engine();

 private:
  std::vector<RequestOutput> run(std::vector<RequestOutput> outs, const SamplingParams& params);
  std::unique_ptr<models::QwenForCausalLM> model_;
  std::optional<Tokenizer> tok_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace genesis::serving
