// scheduler.cpp - the serving scheduler (genesis/serving/scheduler.hpp): paged KV block bookkeeping
// and the continuous-batching policy.
//
// A sequence's tokens are its prompt and what it generated; `computed` of them have their keys and
// values in the pool (at rest, computed <= tokens - 1: the last token is the next one to compute).
// Its block table holds the blocks of positions [0, computed) and, between schedule() and commit(),
// those of the step's chunk. Blocks are written only while their sequence holds the only reference
// (copy-on-write otherwise), and only full blocks enter the prefix cache, so a block shared through
// the cache is never written.
//
// A sequence can only run while its tokens fit the pool (tokens <= num_blocks * block_size); the
// caller ends sequences before they outgrow it (otherwise one alone would preempt itself forever).
#include "genesis/serving/scheduler.hpp"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_map>

#include "block_pool.h"
#include "genesis/error.hpp"

namespace genesis::serving {

namespace {

[[noreturn]] void fail(int32_t code, const std::string& msg) { throw Error(code, "[scheduler] " + msg); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t StepPlan::num_tokens() const {
  int64_t n = 0;
  for (const ScheduledChunk& c : chunks) n += c.count;
  return n;
}

struct Scheduler::Impl {
  struct Seq {
    int64_t id = 0;
    std::vector<int64_t> tokens;
    int64_t prompt_len = 0;
    int64_t computed = 0;
    std::vector<int32_t> table;
    std::vector<uint64_t> hashes;  // chain hashes of the first hashes.size() full blocks (of computed tokens)
    bool running = false;
    uint64_t planned = 0;  // the step that last gave it a chunk
  };

  SchedulerConfig cfg;
  BlockPool pool;
  std::unordered_map<int64_t, Seq> seqs;
  std::deque<int64_t> waiting;   // oldest first; preempted sequences re-enter at the front
  std::vector<int64_t> running;  // in the order they started running: the newest at the back
  uint64_t step = 0;
  int64_t queried = 0, hits = 0, preemptions = 0;

  explicit Impl(const SchedulerConfig& c) : cfg(c), pool(c.num_blocks, c.block_size) {}

  Seq& get(int64_t id) {
    auto it = seqs.find(id);
    if (it == seqs.end()) fail(GN_ERR_NOT_FOUND, "unknown sequence " + std::to_string(id));
    return it->second;
  }

  /** Extends s.hashes to the first n full blocks of s.tokens. */
  void hash_blocks(Seq& s, int64_t n) {
    const int64_t bs = cfg.block_size;
    while (static_cast<int64_t>(s.hashes.size()) < n) {
      const int64_t k = static_cast<int64_t>(s.hashes.size());
      const uint64_t parent = k == 0 ? kRootBlockHash : s.hashes[static_cast<size_t>(k - 1)];
      s.hashes.push_back(block_chain_hash(parent, s.tokens.data() + k * bs, bs));
    }
  }
  uint64_t parent_hash(const Seq& s, int64_t k) const {
    return k == 0 ? kRootBlockHash : s.hashes[static_cast<size_t>(k - 1)];
  }

  /** Blocks that writing positions [start, start + count) takes from the pool: new ones past the table, plus
   * a copy of each existing one someone else also references. */
  int64_t blocks_needed(const Seq& s, int64_t start, int64_t count) const {
    const int64_t bs = cfg.block_size, have = static_cast<int64_t>(s.table.size());
    const int64_t first = start / bs, end = ceil_div(start + count, bs);
    int64_t n = std::max<int64_t>(0, end - std::max(first, have));
    for (int64_t k = first; k < std::min(end, have); ++k) n += pool.refs(s.table[static_cast<size_t>(k)]) > 1;
    return n;
  }

  /** The most positions from `start` (<= count) whose blocks the pool can provide now. */
  int64_t fitting_count(const Seq& s, int64_t start, int64_t count) const {
    if (blocks_needed(s, start, count) <= pool.available()) return count;
    int64_t lo = 0, hi = count;  // blocks_needed grows with count: the largest fitting count
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (blocks_needed(s, start, mid) <= pool.available()) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Gives s writable blocks for positions [start, start + count); blocks_needed() must be available. */
  void prepare_write(Seq& s, int64_t start, int64_t count, StepPlan& plan) {
    const int64_t bs = cfg.block_size;
    const int64_t first = start / bs, end = ceil_div(start + count, bs);
    for (int64_t k = first; k < end; ++k) {
      if (k < static_cast<int64_t>(s.table.size())) {
        int32_t& b = s.table[static_cast<size_t>(k)];
        if (pool.refs(b) == 1) continue;
        const int32_t copy = pool.allocate();
        plan.copies.emplace_back(b, copy);
        pool.unref(b);
        b = copy;
      } else {
        s.table.push_back(pool.allocate());
      }
    }
  }

  /** Drops s's blocks, the last first (so a sequence's tail leaves the prefix cache before its head). */
  void release(Seq& s) {
    for (auto it = s.table.rbegin(); it != s.table.rend(); ++it) pool.unref(*it);
    s.table.clear();
  }

  void preempt(int64_t id, StepPlan& plan) {
    Seq& s = seqs.at(id);
    release(s);
    s.computed = 0;
    s.running = false;
    running.erase(std::find(running.begin(), running.end(), id));
    waiting.push_front(id);
    plan.preempted.push_back(id);
    ++preemptions;
  }

  void add_chunk(Seq& s, int64_t count, StepPlan& plan, int64_t& budget) {
    plan.chunks.push_back({s.id, s.computed, count, s.computed + count == static_cast<int64_t>(s.tokens.size())});
    s.planned = step;
    budget -= count;
  }

  /** Admits the front waiting sequence with its cached prefix and a first chunk; false (nothing changed) when
   * the pool cannot hold the chunk. */
  bool admit(int64_t& budget, StepPlan& plan) {
    Seq& s = seqs.at(waiting.front());
    const int64_t bs = cfg.block_size, n = static_cast<int64_t>(s.tokens.size());
    std::vector<int32_t> hit;
    if (cfg.prefix_caching) {
      const int64_t max_blocks = (n - 1) / bs;  // the last token is always computed
      hash_blocks(s, max_blocks);
      for (int64_t k = 0; k < max_blocks; ++k) {
        const int32_t b = pool.lookup(s.hashes[static_cast<size_t>(k)], parent_hash(s, k), s.tokens.data() + k * bs);
        if (b < 0) break;
        hit.push_back(b);
      }
    }
    const int64_t start = static_cast<int64_t>(hit.size()) * bs;
    const int64_t count = std::min(n - start, budget);
    int64_t available = pool.available();
    for (int32_t b : hit) available -= pool.refs(b) == 0;  // taking a cached block makes it used
    if (ceil_div(start + count, bs) - static_cast<int64_t>(hit.size()) > available) return false;
    for (int32_t b : hit) pool.ref(b);
    s.table = std::move(hit);
    s.computed = start;
    if (cfg.prefix_caching) {
      queried += n;
      hits += start;
    }
    prepare_write(s, start, count, plan);
    s.running = true;
    waiting.pop_front();
    running.push_back(s.id);
    add_chunk(s, count, plan, budget);
    return true;
  }

  StepPlan schedule() {
    StepPlan plan;
    ++step;
    int64_t budget = cfg.max_tokens_per_step;
    // 1. One decode token for every running sequence whose tokens are all computed but the last, oldest
    //    first; when the pool runs dry, the newest running sequence is preempted (possibly this one).
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Seq& s = seqs.at(running[i]);
      if (s.computed + 1 != static_cast<int64_t>(s.tokens.size())) continue;
      bool self = false;
      while (blocks_needed(s, s.computed, 1) > pool.available()) {
        const int64_t victim = running.back();
        preempt(victim, plan);
        if (victim == s.id) {
          self = true;
          break;
        }
      }
      if (self) break;  // it was the newest: nothing after it runs
      prepare_write(s, s.computed, 1, plan);
      add_chunk(s, 1, plan, budget);
    }
    // 2. The next prompt chunk of running sequences still prefilling, oldest first, shrunk to the blocks the pool
    //    has. (There is at most one: a sequence is only admitted with budget left after every running one had its
    //    chunk, so the prompts of the others were complete. It holds fewer blocks than the pool, so whenever it
    //    gets nothing the step still runs the decodes that took the blocks.)
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Seq& s = seqs.at(running[i]);
      if (s.planned == step || s.computed + 1 >= static_cast<int64_t>(s.tokens.size())) continue;
      const int64_t count =
          fitting_count(s, s.computed, std::min(static_cast<int64_t>(s.tokens.size()) - s.computed, budget));
      if (count == 0) continue;
      prepare_write(s, s.computed, count, plan);
      add_chunk(s, count, plan, budget);
    }
    // 3. Waiting sequences, oldest first, while the batch, the budget and the pool allow (not in a step that
    //    had to preempt: the pool is short).
    if (plan.preempted.empty()) {
      while (!waiting.empty() && budget > 0 && static_cast<int64_t>(running.size()) < cfg.max_running) {
        if (!admit(budget, plan)) break;
      }
    }
    return plan;
  }
};

Scheduler::Scheduler(const SchedulerConfig& cfg) {
  if (cfg.num_blocks <= 0 || cfg.num_blocks > INT32_MAX) {
    fail(GN_ERR_INVALID_ARGUMENT, "num_blocks must be in [1, 2^31), got " + std::to_string(cfg.num_blocks));
  }
  if (cfg.block_size <= 0)
    fail(GN_ERR_INVALID_ARGUMENT, "block_size must be > 0, got " + std::to_string(cfg.block_size));
  if (cfg.num_blocks > INT64_MAX / cfg.block_size) fail(GN_ERR_INVALID_ARGUMENT, "num_blocks * block_size overflows");
  if (cfg.max_running <= 0) {
    fail(GN_ERR_INVALID_ARGUMENT, "max_running must be > 0, got " + std::to_string(cfg.max_running));
  }
  if (cfg.max_tokens_per_step <= 0) {
    fail(GN_ERR_INVALID_ARGUMENT, "max_tokens_per_step must be > 0, got " + std::to_string(cfg.max_tokens_per_step));
  }
  if (cfg.max_waiting < 0) {
    fail(GN_ERR_INVALID_ARGUMENT, "max_waiting must be >= 0, got " + std::to_string(cfg.max_waiting));
  }
  impl_ = std::make_unique<Impl>(cfg);
}

Scheduler::~Scheduler() = default;

void Scheduler::add(int64_t seq, const std::vector<int64_t>& prompt) {
  Impl& m = *impl_;
  if (prompt.empty()) fail(GN_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(seq) + " has an empty prompt");
  if (m.seqs.count(seq)) fail(GN_ERR_ALREADY_EXISTS, "sequence " + std::to_string(seq) + " already exists");
  const int64_t need = ceil_div(static_cast<int64_t>(prompt.size()), m.cfg.block_size);
  if (need > m.cfg.num_blocks) {
    fail(GN_ERR_INVALID_ARGUMENT, "a prompt of " + std::to_string(prompt.size()) + " tokens needs " +
                                      std::to_string(need) + " blocks of " + std::to_string(m.cfg.block_size) +
                                      " positions; the pool has " + std::to_string(m.cfg.num_blocks));
  }
  if (static_cast<int64_t>(m.waiting.size()) >= m.cfg.max_waiting) {
    fail(GN_ERR_OUT_OF_MEMORY, "the request queue is full (" + std::to_string(m.waiting.size()) + " waiting)");
  }
  Impl::Seq s;
  s.id = seq;
  s.tokens = prompt;
  s.prompt_len = static_cast<int64_t>(prompt.size());
  m.seqs.emplace(seq, std::move(s));
  m.waiting.push_back(seq);
}

void Scheduler::fork(int64_t parent, int64_t child) {
  Impl& m = *impl_;
  Impl::Seq& p = m.get(parent);
  if (m.seqs.count(child)) fail(GN_ERR_ALREADY_EXISTS, "sequence " + std::to_string(child) + " already exists");
  if (!p.running || p.computed + 1 != static_cast<int64_t>(p.tokens.size()) ||
      static_cast<int64_t>(p.tokens.size()) <= p.prompt_len) {
    fail(GN_ERR_INVALID_ARGUMENT,
         "sequence " + std::to_string(parent) + " cannot be forked: it is not running with its prompt computed");
  }
  Impl::Seq c = p;
  c.id = child;
  c.planned = 0;
  for (int32_t b : c.table) m.pool.ref(b);
  m.seqs.emplace(child, std::move(c));
  m.running.push_back(child);
}

StepPlan Scheduler::schedule() { return impl_->schedule(); }

void Scheduler::commit(const StepPlan& plan, const std::vector<int64_t>& sampled) {
  Impl& m = *impl_;
  const int64_t bs = m.cfg.block_size;
  // Check everything first: a bad plan changes nothing.
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    auto it = m.seqs.find(c.seq);
    if (it == m.seqs.end() || !it->second.running) continue;  // finished (cancelled) while its step ran
    const Impl::Seq& s = it->second;
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (c.start != s.computed || c.count <= 0 || c.start + c.count > n ||
        ceil_div(c.start + c.count, bs) > static_cast<int64_t>(s.table.size()) ||
        c.sample != (c.start + c.count == n)) {
      fail(GN_ERR_INVALID_ARGUMENT, "the plan's chunk for sequence " + std::to_string(c.seq) +
                                        " does not match its state (a plan commits once, after its schedule())");
    }
    if (c.sample && i >= sampled.size()) {
      fail(GN_ERR_INVALID_ARGUMENT, "no sampled token for chunk " + std::to_string(i) + " (sequence " +
                                        std::to_string(c.seq) + "): " + std::to_string(sampled.size()) + " given");
    }
  }
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    auto it = m.seqs.find(c.seq);
    if (it == m.seqs.end() || !it->second.running) continue;
    Impl::Seq& s = it->second;
    const int64_t before = s.computed;
    s.computed += c.count;
    if (m.cfg.prefix_caching) {
      m.hash_blocks(s, s.computed / bs);
      for (int64_t k = before / bs; k < s.computed / bs; ++k) {
        m.pool.register_full(s.table[static_cast<size_t>(k)], s.hashes[static_cast<size_t>(k)], m.parent_hash(s, k),
                             s.tokens.data() + k * bs);
      }
    }
    if (c.sample) s.tokens.push_back(sampled[i]);
  }
}

void Scheduler::finish(int64_t seq) {
  Impl& m = *impl_;
  Impl::Seq& s = m.get(seq);
  if (s.running) {
    m.release(s);
    m.running.erase(std::find(m.running.begin(), m.running.end(), seq));
  } else {
    m.waiting.erase(std::find(m.waiting.begin(), m.waiting.end(), seq));
  }
  m.seqs.erase(seq);
}

const std::vector<int64_t>& Scheduler::tokens(int64_t seq) const { return impl_->get(seq).tokens; }

const std::vector<int32_t>& Scheduler::block_table(int64_t seq) const { return impl_->get(seq).table; }

int64_t Scheduler::slot(int64_t seq, int64_t position) const {
  const Impl::Seq& s = impl_->get(seq);
  const int64_t bs = impl_->cfg.block_size;
  if (position < 0 || position / bs >= static_cast<int64_t>(s.table.size())) {
    fail(GN_ERR_INDEX, "position " + std::to_string(position) + " of sequence " + std::to_string(seq) +
                           " has no block (it holds " + std::to_string(s.table.size()) + ")");
  }
  return static_cast<int64_t>(s.table[static_cast<size_t>(position / bs)]) * bs + position % bs;
}

int64_t Scheduler::num_computed(int64_t seq) const { return impl_->get(seq).computed; }

void Scheduler::set_last_token(int64_t seq, int64_t token) {
  Impl::Seq& s = impl_->get(seq);
  if (s.computed + 1 != static_cast<int64_t>(s.tokens.size()) ||
      static_cast<int64_t>(s.tokens.size()) <= s.prompt_len) {
    fail(GN_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(seq) +
                                      "'s last token is not a generated one waiting "
                                      "to be computed");
  }
  s.tokens.back() = token;
}

int64_t Scheduler::block_refs(int32_t block) const {
  if (block < 0 || block >= impl_->cfg.num_blocks) {
    fail(GN_ERR_INDEX,
         "block " + std::to_string(block) + " is outside [0, " + std::to_string(impl_->cfg.num_blocks) + ")");
  }
  return impl_->pool.refs(block);
}

bool Scheduler::contains(int64_t seq) const { return impl_->seqs.count(seq) > 0; }

bool Scheduler::has_work() const { return !impl_->seqs.empty(); }

SchedulerStats Scheduler::stats() const {
  const Impl& m = *impl_;
  SchedulerStats st;
  st.running = static_cast<int64_t>(m.running.size());
  st.waiting = static_cast<int64_t>(m.waiting.size());
  st.blocks_used = m.pool.num_used();
  st.blocks_cached = m.pool.num_cached();
  st.blocks_free = m.pool.num_free();
  st.prefix_queried_tokens = m.queried;
  st.prefix_hit_tokens = m.hits;
  st.preemptions = m.preemptions;
  return st;
}

const SchedulerConfig& Scheduler::config() const { return impl_->cfg; }

}  // namespace genesis::serving
