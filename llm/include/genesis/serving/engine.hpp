// genesis/serving/engine.hpp - continuous-batching generation over a paged KV cache (docs/serving.md).
//
//   genesis::serving::Engine engine(*model, {.num_blocks = 512});
//   genesis::serving::Request r;
//   r.prompt = ids;
//   r.sampling.max_new_tokens = 64;
//   engine.submit(r, [](const genesis::serving::TokenEvent& e) { if (!e.finished) print(e.token); });
//   while (engine.step()) {}                       // or engine.start() ... engine.stop() on a thread of its own
//
// Each step asks the Scheduler which tokens to compute (decode tokens of running sequences first, then prompt
// chunks), copies shared blocks that are about to be written (copy-on-write), runs one packed forward of every
// scheduled token over the paged cache (QwenForCausalLM::forward_paged), samples the rows that end a sequence's
// known tokens with models::sample_token, applies the stop rules and reports each new token through the
// request's callback.
//
// Sampling is deterministic per request: sample k of a request (k < n) draws one uniform number per token from
// its own stream HostRng(seed + k), so its tokens do not depend on what else runs in the batch, on chunking or
// on preemption, and sample k equals a lone request with n = 1 and seed + k (and, for one prompt,
// models::generate with that seed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/serving/scheduler.hpp"

namespace genesis::serving {

/** Sizes and limits of an engine. */
struct EngineConfig {
  int64_t block_size = 16;                ///< positions per KV block
  int64_t num_blocks = 0;                 ///< blocks in each layer's pool; 0 = from kv_cache_bytes or the fraction
  int64_t kv_cache_bytes = 0;             ///< KV cache budget over all layers, when num_blocks is 0
  double kv_cache_memory_fraction = 0.9;  ///< else this fraction of the device's free memory (an accelerator's; on
                                          ///< cpu one of the two sizes above is needed)
  int64_t max_running = 256;              ///< sequences in the running batch at most
  int64_t max_tokens_per_step = 2048;     ///< tokens one step computes at most
  int64_t max_waiting = 4096;             ///< sequences queued at most; submit() beyond it throws genesis::Error
  bool prefix_caching = true;             ///< reuse the cached blocks of equal prompt prefixes
  bool cuda_graph = true;                 ///< on cuda, replay captured graphs for decode steps (one per batch size
                                          ///< bucket 1, 2, 4, ...; steps that also hold prompt chunks run eagerly)
};

/** One generation request. */
struct Request {
  std::vector<int64_t> prompt;        ///< token ids (non-empty, inside the vocabulary)
  models::GenerationConfig sampling;  ///< sampling, stop rules, seed and max_new_tokens (cuda_graph is ignored)
  int64_t n = 1;                      ///< samples of the prompt; sample k draws from seed + k
  int64_t logprobs = 0;               ///< 0..20: report the chosen token's log-probability and the top k
};

/** A token and its log-probability under the model's distribution (log_softmax of the raw logits). */
struct TokenLogprob {
  int64_t token = 0;
  double logprob = 0;
};

/** What a request's callback receives: a new token of one sample, or that sample's end. */
struct TokenEvent {
  int64_t request = 0;            ///< the id submit() returned
  int64_t sample = 0;             ///< which of the request's n samples
  int64_t token = -1;             ///< the new token (-1 on a final event without a token)
  double logprob = 0;             ///< the token's log-probability (when the request asked for logprobs)
  std::vector<TokenLogprob> top;  ///< the `logprobs` most likely tokens, most likely first
  bool finished = false;          ///< this sample has ended (the event may still carry its last token)
  std::string finish_reason;      ///< when finished: "stop", "length" or "cancelled"
  bool request_finished = false;  ///< every sample of the request has ended (the request's last event)
};

/** Called on the engine's stepping thread with each event; it may call submit() and cancel(). */
using EventCallback = std::function<void(const TokenEvent&)>;

/** Queue, pool and throughput figures. */
struct EngineStats {
  int64_t running = 0, waiting = 0;  ///< sequences (waiting includes submitted requests not yet queued)
  int64_t blocks_total = 0, blocks_used = 0, blocks_free = 0, blocks_cached = 0;
  double prefix_hit_rate = 0;  ///< prompt tokens found in the prefix cache / prompt tokens looked up
  int64_t preemptions = 0;
  int64_t steps = 0;              ///< forwards run
  int64_t prompt_tokens = 0;      ///< prompt tokens of the submitted requests' samples
  int64_t computed_tokens = 0;    ///< tokens run through the model (prompt chunks, recomputation, decodes)
  int64_t generated_tokens = 0;   ///< tokens sampled
  int64_t requests_finished = 0;  ///< requests whose samples have all ended
  int64_t tracked_requests = 0;   ///< requests the engine holds state for (0 when idle)
  int64_t tracked_sequences = 0;  ///< sequences the engine holds state for (0 when idle)
  // Where the steps' wall time went (seconds, summed over steps): building the packed inputs, the forward up to
  // the sampled rows' values on the host (the device work and its wait), and sampling + stop rules + bookkeeping.
  double pack_seconds = 0, forward_seconds = 0, sample_seconds = 0;
  int64_t graph_steps = 0;  ///< decode steps replayed from a captured CUDA graph
  std::string last_error;   ///< why the background thread last ended every request ("" when it never did)
};

/** Continuous batching over one model and a paged KV cache. submit(), cancel() and stats() may be called from any
 * thread; step() from one thread at a time (or let start() run it on a thread of its own). */
class Engine {
 public:
  /** An engine over `model` (which must outlive it) with its KV pools allocated on the model's device and dtype. */
  explicit Engine(models::QwenForCausalLM& model, const EngineConfig& cfg = {});
  /** Stops the background thread if it runs. */
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /** Queues a request; returns its id. Throws genesis::Error on an invalid request, a prompt that cannot fit the
   * pool or the context, or a full queue. */
  int64_t submit(Request request, EventCallback callback);
  /** Ends a request (its samples' final events say "cancelled"); its blocks return at the next step. Unknown or
   * finished ids are ignored. */
  void cancel(int64_t id);
  /** One scheduler step; returns whether work remains (queued or running requests). */
  bool step();
  /** Steps until no work remains. */
  void run_until_idle();
  /** Runs step() on a background thread until stop(); a step that throws there ends every request ("cancelled")
   * and leaves its message in stats().last_error. */
  void start();
  /** Stops the background thread (after its current step); unfinished requests stay queued. */
  void stop();
  /** Blocks until no work remains (with the background thread running; without it, only once idle). */
  void wait_idle();
  /** Whether requests are queued or running. */
  bool has_work() const;
  /** Current figures. */
  EngineStats stats() const;
  /** The configuration (num_blocks resolved). */
  const EngineConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace genesis::serving
