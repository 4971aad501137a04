// genesis/serving/scheduler.hpp - which tokens the serving engine runs next, and where their
// keys and values live (docs/serving.md).
//
// Keys and values sit in fixed-size blocks of block_size positions: one pool per layer of shape
// (num_blocks, 2*Hkv, block_size, D) (keys in heads [0, Hkv), values in [Hkv, 2*Hkv)). Position p
// of a sequence is slot block_table[p / block_size] * block_size + p % block_size of every layer's
// pool. Blocks are reference-counted: forks (n > 1 samples) and equal prompt prefixes share them,
// and the last, partly filled block is copied before a sharer writes into it (copy-on-write).
//
// Each step the scheduler picks, under max_tokens_per_step, first one decode token of every
// running sequence, then prompt chunks of waiting ones (chunked prefill), oldest first. When the
// pool has no free block for a running sequence, the newest running sequence is preempted: its
// blocks are freed and it waits again at the front of the queue, to be recomputed from its tokens.
//
// With prefix caching, each full block is keyed by a hash chain over its token ids (and those of
// every block before it); a new sequence takes the cached blocks of its longest cached prefix and
// only computes the rest (at least its last prompt token is always computed, for its logits). Blocks nobody references stay cached until evicted (least recently used).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace genesis::serving {

/** Sizes and limits of a scheduler. */
struct SchedulerConfig {
  int64_t num_blocks = 0;              ///< blocks in each layer's pool (> 0)
  int64_t block_size = 16;             ///< positions per block (> 0)
  int64_t max_running = 256;           ///< sequences in the running batch at most
  int64_t max_tokens_per_step = 2048;  ///< tokens one step computes at most (decode tokens + prompt chunks)
  int64_t max_waiting = 4096;          ///< sequences waiting at most; add() beyond it throws genesis::Error
  bool prefix_caching = true;          ///< reuse cached full blocks of equal token prefixes
};

/** One sequence's share of a step: compute its tokens [start, start + count). */
struct ScheduledChunk {
  int64_t seq = 0;       ///< sequence id
  int64_t start = 0;     ///< first position computed (= the tokens already in the cache)
  int64_t count = 0;     ///< tokens computed this step (1 for a decode)
  bool sample = false;   ///< the chunk ends at the sequence's last token: its last logits row is sampled
};

/** What one step runs: chunks in the order their tokens are packed (decodes first). */
struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<int64_t> preempted;  ///< sequences preempted while planning (their blocks are free again)
  /** (source block, destination block) pairs whose positions the engine copies in every layer's pool before
   * the step runs: copy-on-write of a shared, partly filled last block. */
  std::vector<std::pair<int32_t, int32_t>> copies;
  int64_t num_tokens() const;      ///< sum of the chunks' counts
};

/** Pool and queue figures. */
struct SchedulerStats {
  int64_t running = 0, waiting = 0;
  int64_t blocks_used = 0;    ///< blocks referenced by a sequence
  int64_t blocks_cached = 0;  ///< unreferenced blocks kept for prefix reuse (free to evict)
  int64_t blocks_free = 0;    ///< blocks holding nothing
  int64_t prefix_queried_tokens = 0;  ///< prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;      ///< of those, tokens found cached
  int64_t preemptions = 0;
};

/** The block pool's bookkeeping and the continuous-batching policy; single-threaded (the engine's thread). */
class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& cfg);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /** Queues a new sequence with these prompt ids (non-empty); throws genesis::Error when the queue is full or
   * the prompt alone needs more blocks than the pool has. */
  void add(int64_t seq, const std::vector<int64_t>& prompt);
  /** A new sequence `child` sharing every block and token of `parent` (a running sequence whose prompt is
   * fully computed): n > 1 samples of one prompt. */
  void fork(int64_t parent, int64_t child);
  /** Plans the next step (may preempt); an empty plan when nothing can run. */
  StepPlan schedule();
  /** After a step ran `plan`: marks the chunks' tokens computed and appends each sampled chunk's new token
   * (`sampled[i]` for plan.chunks[i]; ignored where !sample). Registers newly filled blocks in the prefix
   * cache. */
  void commit(const StepPlan& plan, const std::vector<int64_t>& sampled);
  /** Ends a sequence (finished or cancelled), waiting or running: its blocks go back to the pool. */
  void finish(int64_t seq);

  /** The sequence's tokens (prompt + generated). */
  const std::vector<int64_t>& tokens(int64_t seq) const;
  /** The sequence's block ids, position p in block p / block_size. */
  const std::vector<int32_t>& block_table(int64_t seq) const;
  /** The pool slot of the sequence's position p. */
  int64_t slot(int64_t seq, int64_t position) const;
  /** How many of the sequence's tokens have their keys and values in the pool (0 while it waits). */
  int64_t num_computed(int64_t seq) const;
  /** Replaces a running sequence's last, generated and not yet computed token: a fork's own first sample. */
  void set_last_token(int64_t seq, int64_t token);
  /** References to a pool block: the block tables holding it (diagnostics and tests). */
  int64_t block_refs(int32_t block) const;
  /** Whether a sequence with this id is known (waiting or running). */
  bool contains(int64_t seq) const;
  /** Waiting or running sequences. */
  bool has_work() const;
  SchedulerStats stats() const;
  const SchedulerConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace genesis::serving
