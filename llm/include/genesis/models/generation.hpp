// genesis/models/generation.hpp - text generation for the Qwen causal LMs.
//
//   genesis::models::GenerationConfig g;
//   g.max_new_tokens = 64;
//   g.temperature = 0.7; g.top_p = 0.8; g.seed = 1;          // temperature 0 = greedy
//   auto r = genesis::models::generate(*model, {prompt_ids}, g,
//                                      [&](size_t row, int64_t id) { print(id); return true; });
//
// Prompts of different lengths run as one right-padded batch: a batched
// prefill writes every layer's K/V into a preallocated cache, then each decode
// step feeds one token per row at that row's own position.  On CUDA the decode
// step is captured once into a CUDA graph and replayed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "genesis/models/qwen.hpp"

namespace genesis::models {

/** How tokens are chosen and when generation stops (transformers' names and defaults). */
struct GenerationConfig {
  int64_t max_new_tokens = 128;           ///< new tokens per prompt at most
  double temperature = 0;                 ///< 0 = greedy; > 0 samples from softmax(logits / temperature)
  int64_t top_k = 0;                      ///< keep the k most likely tokens (0 = off)
  double top_p = 1.0;                     ///< keep the smallest set with probability >= top_p (1 = off)
  double min_p = 0.0;                     ///< drop tokens below min_p * the top probability (0 = off)
  double repetition_penalty = 1.0;        ///< > 1 discourages tokens already in the prompt or output
  std::vector<int64_t> stop_ids;          ///< ids that end a row (the model's eos ids are added unless ignore_eos)
  bool ignore_eos = false;                ///< do not stop at the model's eos ids
  std::vector<std::string> stop_strings;  ///< text that ends a row (needs decode)
  std::function<std::string(const std::vector<int64_t>&)> decode;  ///< ids -> text, for stop_strings
  uint64_t seed = 0;                                               ///< sampling seed: same seed, same tokens
  bool cuda_graph = true;  ///< replay the decode step as a CUDA graph where possible
};

/** What generate() produced. */
struct GenerationResult {
  std::vector<std::vector<int64_t>> tokens;  ///< new tokens per prompt (a stop id is included)
  std::vector<std::string> finish_reasons;   ///< per prompt: "stop", "length" or "callback"
  int64_t prompt_tokens = 0;                 ///< sum of the prompt lengths
  int64_t generated_tokens = 0;              ///< sum of the new tokens
  int64_t decode_steps = 0;                  ///< batched decode steps after the prefill
  double prefill_seconds = 0;                ///< prompt processing up to the first new tokens
  double decode_seconds = 0;                 ///< every later step
  bool used_cuda_graph = false;              ///< the decode steps replayed a captured graph
};

/** Called with (prompt index, new token) as tokens arrive; return false to stop that row. */
using TokenCallback = std::function<bool(size_t row, int64_t token)>;

/** Generates up to cfg.max_new_tokens after each prompt (token ids); no gradients are recorded. A prompt of
 * max_position_embeddings tokens or more is refused (genesis::Error); a row also stops ("length") once prompt and
 * output reach max_position_embeddings. */
GenerationResult generate(QwenForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                          const GenerationConfig& cfg, const TokenCallback& on_token = {});

/** Picks the next token of one row from its logits (vocab) as cfg says (repetition penalty over
 * `history`, temperature, top-k, top-p, min-p, then a draw using u in [0, 1)); greedy when
 * cfg.temperature == 0. Exposed for tests. */
int64_t sample_token(std::vector<float>& logits, const std::vector<int64_t>& history, const GenerationConfig& cfg,
                     double u);

}  // namespace genesis::models
