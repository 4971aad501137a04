// backend.h - what the server asks of the engine that generates: submit a prompt with its sampling
// settings and receive its tokens (and their log-probabilities) as events, cancel, read the
// engine's figures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"

namespace genesis::cli::serve {

/** A token id and its log-probability. */
struct TokenLogprob {
  int64_t id = 0;
  double logprob = 0;
};

/** One event of a request: a new token of choice `index`, or the end of that choice. */
struct Event {
  int index = 0;                  ///< which of the request's n choices
  bool has_token = false;         ///< a new token (else only the end)
  int64_t token = 0;              ///< the token
  double logprob = 0;             ///< its log-probability (when logprobs were asked for)
  std::vector<TokenLogprob> top;  ///< the most likely tokens at that step (top_logprobs)
  bool finished = false;          ///< the choice ended (after its last token, if any)
  std::string finish_reason;      ///< "stop", "length" or "abort" when finished
};

/** Called on the engine's thread with each event; it must not block. */
using EventCallback = std::function<void(const Event&)>;

/** What one request generates. */
struct Submission {
  std::vector<int64_t> prompt;   ///< prompt token ids (non-empty)
  models::GenerationConfig cfg;  ///< sampling and stopping
  int n = 1;                     ///< choices sampled from the prompt
  int logprobs = -1;             ///< -1: none; else the chosen token's log-probability and this many top ones
};

/** The engine's figures for /metrics. */
struct BackendStats {
  int64_t running = 0, waiting = 0;
  int64_t blocks_used = 0, blocks_free = 0, blocks_total = 0;
  double prefix_hit_rate = 0;
};

/** submit() when the engine's queue is full (429). */
class QueueFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** The generating engine behind the server; every method may be called from any thread. */
class Backend {
 public:
  virtual ~Backend() = default;
  /** Queues a request; its events go to `on_event` (on the engine's thread) until every choice has
   * finished. Throws QueueFull when the queue is full, genesis::Error for a request it refuses. */
  virtual int64_t submit(Submission s, EventCallback on_event) = 0;
  /** Ends a request early; its remaining choices finish with "abort". Unknown ids are ignored. */
  virtual void cancel(int64_t id) = 0;
  virtual BackendStats stats() const = 0;
  /** Whether events carry log-probabilities when asked. */
  virtual bool supports_logprobs() const = 0;
  /** Cancels everything and stops the engine's thread. */
  virtual void shutdown() = 0;
};

/** Limits of the engine (the serve command's flags). */
struct EngineLimits {
  int64_t max_running = 256;
  int64_t max_tokens_per_step = 2048;
  int64_t max_waiting = 4096;
  int64_t kv_cache_blocks = 0;   ///< 0: from kv_cache_memory (a GPU) or 512 MiB (cpu)
  double kv_cache_memory = 0.9;  ///< the share of the device's free memory for the KV cache
  int64_t block_size = 16;
  bool prefix_caching = true;
};

/** The serving engine over `model` (owned by the caller, outliving the backend). */
std::unique_ptr<Backend> make_backend(models::QwenForCausalLM& model, const EngineLimits& limits);

}  // namespace genesis::cli::serve
