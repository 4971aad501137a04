// scheduler_simulation_test.cpp - genesis::serving::Scheduler under a randomized simulation checked
// after every step against an independent model (the directed cases are scheduler_test.cpp).
//
// The simulation plays the engine: it keeps its own picture of every sequence (tokens, computed
// count, waiting/running order) and a simulated KV pool in which slot s holds the value a model
// would store for position p of a sequence: a hash of the sequence's tokens [0, p]. Each step it
// applies the plan's copies, checks that every computed position of every running sequence reads
// its own value through its block table (so prefix hits, copy-on-write and eviction returned the
// right blocks, and no block was handed out twice), writes the chunks' positions (each into a block
// nobody else references), recounts every block's references from the tables, and checks the
// policy: token budget, batch size, decodes first, the newest preempted, FCFS admission, progress.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "genesis/serving/scheduler.hpp"
#include "scheduler_test_util.h"

namespace {

using genesis::serving::ScheduledChunk;
using genesis::serving::Scheduler;
using genesis::serving::SchedulerConfig;
using genesis::serving::SchedulerStats;
using genesis::serving::StepPlan;
using scheduler_test::chunk_of;
using scheduler_test::error_of;

// ---- randomized simulation --------------------------------------------------------------------------------

uint64_t value_hash(uint64_t h, int64_t token) {  // FNV-1a over the token's bytes: the oracle's "K/V value"
  for (int i = 0; i < 8; ++i) {
    h ^= (static_cast<uint64_t>(token) >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

struct Totals {
  int64_t steps = 0, preemptions = 0, hit_tokens = 0, copies = 0, forks = 0, finished = 0, cancelled = 0;
  int64_t rejected_full = 0, rejected_big = 0, shrunk_prefills = 0;
};

class Simulation {
 public:
  Simulation(const SchedulerConfig& cfg, uint64_t seed, Totals& totals)
      : cfg_(cfg), s_(cfg), rng_(seed), t_(totals), kv_(static_cast<size_t>(cfg.num_blocks * cfg.block_size), 0) {
    const int64_t cap = cfg.num_blocks * cfg.block_size;
    for (int i = 0; i < 3; ++i) prefixes_.push_back(random_tokens(uniform(1, std::max<int64_t>(1, cap / 2))));
  }

  void run(int64_t arrival_steps) {
    for (int64_t i = 0; i < arrival_steps && !::testing::Test::HasFatalFailure(); ++i) {
      events(true);
      step();
    }
    int64_t guard = 0;
    while (s_.has_work() && !::testing::Test::HasFatalFailure()) {
      ASSERT_LT(++guard, 200000) << "the scheduler stopped making progress";
      step();
    }
    ASSERT_TRUE(seqs_.empty());
    SchedulerStats st = s_.stats();
    EXPECT_EQ(st.blocks_used, 0);
    EXPECT_EQ(st.running, 0);
    EXPECT_EQ(st.waiting, 0);
    EXPECT_EQ(st.blocks_free + st.blocks_cached, cfg_.num_blocks);
    if (!cfg_.prefix_caching) {
      EXPECT_EQ(st.blocks_cached, 0);
    }
  }

 private:
  struct Seq {
    std::vector<int64_t> tokens;
    std::vector<uint64_t> value;  // value[p]: what position p's K/V holds
    int64_t prompt_len = 0, computed = 0, target = 0;
    bool running = false;
  };

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::vector<int64_t> random_tokens(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t& x : v) x = uniform(0, 4);
    return v;
  }
  void push_token(Seq& q, int64_t token) {
    q.value.push_back(value_hash(q.value.empty() ? 0xcbf29ce484222325ULL : q.value.back(), token));
    q.tokens.push_back(token);
  }

  void events(bool arrivals) {
    const int64_t bs = cfg_.block_size, cap = cfg_.num_blocks * bs;
    if (arrivals) {
      for (int64_t k = uniform(0, 2); k > 0; --k) {
        std::vector<int64_t> prompt;
        if (chance(0.6)) prompt = prefixes_[static_cast<size_t>(uniform(0, 2))];
        const std::vector<int64_t> tail = random_tokens(uniform(0, std::max<int64_t>(1, cap / 3)));
        prompt.insert(prompt.end(), tail.begin(), tail.end());
        if (prompt.empty()) prompt.push_back(1);
        const bool too_big = (static_cast<int64_t>(prompt.size()) + bs - 1) / bs > cfg_.num_blocks;
        if (!too_big && static_cast<int64_t>(prompt.size()) >= cap) prompt.resize(static_cast<size_t>(cap - 1));
        if (chance(0.02)) prompt = random_tokens(cap + uniform(1, bs));  // always too big
        const int64_t id = next_id_++;
        const bool big = (static_cast<int64_t>(prompt.size()) + bs - 1) / bs > cfg_.num_blocks;
        const bool full = static_cast<int64_t>(waiting_.size()) >= cfg_.max_waiting;
        if (big || full) {
          const std::string e = error_of([&] { s_.add(id, prompt); });
          if (big) {
            EXPECT_NE(e.find("blocks of"), std::string::npos) << e;
            ++t_.rejected_big;
          } else {
            EXPECT_EQ(e, "[scheduler] the request queue is full (" + std::to_string(waiting_.size()) + " waiting)");
            ++t_.rejected_full;
          }
          EXPECT_FALSE(s_.contains(id));
          continue;
        }
        s_.add(id, prompt);
        Seq q;
        for (int64_t x : prompt) push_token(q, x);
        q.prompt_len = static_cast<int64_t>(prompt.size());
        q.target = std::min(cap, q.prompt_len + uniform(1, std::max<int64_t>(1, cap / 2)));
        seqs_.emplace(id, std::move(q));
        waiting_.push_back(id);
      }
      // n > 1: fork a decoding sequence; half the children get their own last token.
      if (chance(0.1)) {
        std::vector<int64_t> decoding;
        for (int64_t id : running_) {
          const Seq& q = seqs_.at(id);
          if (q.computed + 1 == static_cast<int64_t>(q.tokens.size()) && q.computed >= q.prompt_len) {
            decoding.push_back(id);
          }
        }
        if (!decoding.empty()) {
          const int64_t parent = decoding[static_cast<size_t>(uniform(0, static_cast<int64_t>(decoding.size()) - 1))];
          const int64_t child = next_id_++;
          s_.fork(parent, child);
          Seq q = seqs_.at(parent);
          if (chance(0.5)) {
            const int64_t tok = uniform(0, 4);
            s_.set_last_token(child, tok);
            q.tokens.pop_back();
            q.value.pop_back();
            push_token(q, tok);
          }
          seqs_.emplace(child, std::move(q));
          running_.push_back(child);
          ++t_.forks;
        }
      }
    }
    if (!seqs_.empty() && chance(0.05)) {  // cancel a random sequence
      auto it = seqs_.begin();
      std::advance(it, uniform(0, static_cast<int64_t>(seqs_.size()) - 1));
      drop(it->first);
      ++t_.cancelled;
    }
  }

  void drop(int64_t id) {
    s_.finish(id);
    Seq& q = seqs_.at(id);
    if (q.running) {
      running_.erase(std::find(running_.begin(), running_.end(), id));
    } else {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
    }
    seqs_.erase(id);
  }

  void step() {
    ++t_.steps;
    const int64_t bs = cfg_.block_size;
    const bool had_work = s_.has_work();
    const std::vector<int64_t> running_before = running_;
    std::set<int64_t> decoding_before;
    for (int64_t id : running_) {
      const Seq& q = seqs_.at(id);
      if (q.computed + 1 == static_cast<int64_t>(q.tokens.size())) decoding_before.insert(id);
    }
    const StepPlan plan = s_.schedule();

    // Preemptions: running sequences, newest first, each then waiting at the front with nothing computed.
    std::set<int64_t> preempted(plan.preempted.begin(), plan.preempted.end());
    ASSERT_EQ(preempted.size(), plan.preempted.size());
    for (int64_t id : plan.preempted) {
      ASSERT_TRUE(seqs_.count(id));
      Seq& q = seqs_.at(id);
      ASSERT_TRUE(q.running) << "preempted a waiting sequence";
      q.running = false;
      q.computed = 0;
      running_.erase(std::find(running_.begin(), running_.end(), id));
      waiting_.push_front(id);
      EXPECT_TRUE(s_.block_table(id).empty());
      ++t_.preemptions;
      ++preemptions_;
    }
    std::set<int64_t> with_chunk;
    for (const ScheduledChunk& c : plan.chunks) with_chunk.insert(c.seq);
    for (size_t i = 0; i < running_before.size(); ++i) {
      if (!preempted.count(running_before[i])) continue;
      for (size_t j = i + 1; j < running_before.size(); ++j) {
        EXPECT_TRUE(preempted.count(running_before[j]) || with_chunk.count(running_before[j]))
            << "sequence " << running_before[i] << " was preempted while the newer " << running_before[j]
            << " kept its blocks without running";
      }
    }

    // Chunks: known sequences once each, decodes first, running ones at their computed count, admissions in
    // queue order at a block boundary (their cached prefix), sampling exactly at the last token.
    std::set<int64_t> seen;
    bool past_decodes = false;
    int64_t tokens = 0, admitted = 0, decodes = 0;
    for (const ScheduledChunk& c : plan.chunks) {
      ASSERT_TRUE(seqs_.count(c.seq)) << "a chunk for unknown sequence " << c.seq;
      ASSERT_TRUE(seen.insert(c.seq).second) << "two chunks for sequence " << c.seq;
      Seq& q = seqs_.at(c.seq);
      const int64_t n = static_cast<int64_t>(q.tokens.size());
      ASSERT_GE(c.count, 1);
      ASSERT_LE(c.start + c.count, n);
      EXPECT_EQ(c.sample, c.start + c.count == n);
      if (q.running) {
        ASSERT_EQ(c.start, q.computed);
      } else {
        ASSERT_FALSE(waiting_.empty());
        ASSERT_EQ(waiting_.front(), c.seq) << "admitted out of queue order";
        waiting_.pop_front();
        running_.push_back(c.seq);
        q.running = true;
        EXPECT_EQ(c.start % bs, 0);
        EXPECT_LE(c.start, n - 1) << "the last token must be computed";
        if (!cfg_.prefix_caching) {
          EXPECT_EQ(c.start, 0);
        }
        q.computed = c.start;
        hits_ += c.start;
        t_.hit_tokens += c.start;
        if (cfg_.prefix_caching) queried_ += n;
        ++admitted;
      }
      const bool decode = decoding_before.count(c.seq) > 0;
      if (decode) {
        EXPECT_FALSE(past_decodes) << "a decode after a prompt chunk";
        EXPECT_EQ(c.count, 1);
        ++decodes;
      } else {
        past_decodes = true;
        if (c.count < std::min(n - c.start, cfg_.max_tokens_per_step - tokens)) ++t_.shrunk_prefills;
      }
      tokens += c.count;
    }
    EXPECT_EQ(tokens, plan.num_tokens());
    EXPECT_LE(tokens, cfg_.max_tokens_per_step);
    if (!plan.preempted.empty()) {
      EXPECT_EQ(admitted, 0) << "admitted in a step that preempted";
    }
    EXPECT_LE(static_cast<int64_t>(running_.size()),
              std::max<int64_t>(cfg_.max_running, static_cast<int64_t>(running_before.size())));
    if (admitted > 0) {
      EXPECT_LE(static_cast<int64_t>(running_.size()), cfg_.max_running);
    }
    if (had_work) {
      ASSERT_FALSE(plan.chunks.empty()) << "work left but nothing scheduled";
    }
    // Every decoding sequence runs unless the budget ran out or the pool forced preemptions.
    if (plan.preempted.empty() && decodes < cfg_.max_tokens_per_step) {
      for (int64_t id : decoding_before) EXPECT_TRUE(with_chunk.count(id)) << "decode of " << id << " skipped";
    }
    check_tables(plan);
    if (::testing::Test::HasFatalFailure()) return;

    // Run the step on the simulated pool: copies, then check what every running sequence reads, then write.
    std::vector<uint64_t> before = kv_;
    for (const auto& [src, dst] : plan.copies) {
      ASSERT_NE(src, dst);
      ASSERT_EQ(s_.block_refs(dst), 1) << "a copy's destination is shared";
      std::copy(before.begin() + src * bs, before.begin() + (src + 1) * bs, kv_.begin() + dst * bs);
      ++t_.copies;
    }
    for (int64_t id : running_) {
      const Seq& q = seqs_.at(id);
      for (int64_t p = 0; p < q.computed; ++p) {
        ASSERT_EQ(kv_[static_cast<size_t>(s_.slot(id, p))], q.value[static_cast<size_t>(p)])
            << "sequence " << id << " position " << p << " reads another value";
      }
    }
    std::set<int64_t> written;
    for (const ScheduledChunk& c : plan.chunks) {
      const Seq& q = seqs_.at(c.seq);
      const std::vector<int32_t>& table = s_.block_table(c.seq);
      for (int64_t p = c.start; p < c.start + c.count; ++p) {
        const int32_t b = table[static_cast<size_t>(p / bs)];
        ASSERT_EQ(s_.block_refs(b), 1) << "sequence " << c.seq << " writes into shared block " << b;
        const int64_t slot = s_.slot(c.seq, p);
        ASSERT_EQ(slot, b * bs + p % bs);
        ASSERT_TRUE(written.insert(slot).second);
        kv_[static_cast<size_t>(slot)] = q.value[static_cast<size_t>(p)];
      }
    }

    // Sometimes a sequence is cancelled while its step runs; commit then skips it.
    if (!plan.chunks.empty() && chance(0.02)) {
      drop(plan.chunks[static_cast<size_t>(uniform(0, static_cast<int64_t>(plan.chunks.size()) - 1))].seq);
      ++t_.cancelled;
    }
    std::vector<int64_t> sampled;
    for (size_t i = 0; i < plan.chunks.size(); ++i) sampled.push_back(uniform(0, 4));
    s_.commit(plan, sampled);
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
      const ScheduledChunk& c = plan.chunks[i];
      if (!seqs_.count(c.seq)) continue;
      Seq& q = seqs_.at(c.seq);
      q.computed += c.count;
      if (c.sample) push_token(q, sampled[i]);
    }
    for (const auto& [id, q] : seqs_) {
      ASSERT_EQ(s_.tokens(id), q.tokens);
      ASSERT_EQ(s_.num_computed(id), q.computed);
    }
    int64_t prefilling = 0;  // the scheduler relies on at most one running sequence being mid-prompt
    for (int64_t id : running_) {
      const Seq& q = seqs_.at(id);
      prefilling += q.computed + 1 < static_cast<int64_t>(q.tokens.size());
    }
    EXPECT_LE(prefilling, 1);
    std::vector<int64_t> done;
    for (const auto& [id, q] : seqs_) {
      if (static_cast<int64_t>(q.tokens.size()) >= q.target) done.push_back(id);
    }
    for (int64_t id : done) {
      drop(id);
      ++t_.finished;
    }
    check_tables(plan);
  }

  /** Brute-force recount: references from the tables, block states, stats. */
  void check_tables(const StepPlan& plan) {
    const int64_t bs = cfg_.block_size;
    std::vector<int64_t> refs(static_cast<size_t>(cfg_.num_blocks), 0);
    for (const auto& [id, q] : seqs_) {
      const std::vector<int32_t>& table = s_.block_table(id);
      if (!q.running) {
        ASSERT_TRUE(table.empty()) << "waiting sequence " << id << " holds blocks";
        continue;
      }
      int64_t need = q.computed;
      const ScheduledChunk* c = chunk_of(plan, id);
      if (c) need = std::max(need, c->start + c->count);
      ASSERT_GE(static_cast<int64_t>(table.size()) * bs, need);
      std::set<int32_t> mine;
      for (int32_t b : table) {
        ASSERT_GE(b, 0);
        ASSERT_LT(b, cfg_.num_blocks);
        ASSERT_TRUE(mine.insert(b).second) << "block " << b << " twice in one table";
        ++refs[static_cast<size_t>(b)];
      }
    }
    int64_t used = 0;
    for (int64_t b = 0; b < cfg_.num_blocks; ++b) {
      ASSERT_EQ(s_.block_refs(static_cast<int32_t>(b)), refs[static_cast<size_t>(b)]) << "block " << b;
      used += refs[static_cast<size_t>(b)] > 0;
    }
    SchedulerStats st = s_.stats();
    EXPECT_EQ(st.blocks_used, used);
    EXPECT_EQ(st.blocks_used + st.blocks_cached + st.blocks_free, cfg_.num_blocks);
    EXPECT_EQ(st.running, static_cast<int64_t>(running_.size()));
    EXPECT_EQ(st.waiting, static_cast<int64_t>(waiting_.size()));
    EXPECT_EQ(st.preemptions, preemptions_);
    EXPECT_EQ(st.prefix_hit_tokens, hits_);
    EXPECT_EQ(st.prefix_queried_tokens, queried_);
    EXPECT_TRUE(st.prefix_hit_tokens <= st.prefix_queried_tokens);
  }

  SchedulerConfig cfg_;
  Scheduler s_;
  std::mt19937_64 rng_;
  Totals& t_;
  std::vector<uint64_t> kv_;
  std::vector<std::vector<int64_t>> prefixes_;
  std::map<int64_t, Seq> seqs_;
  std::deque<int64_t> waiting_;
  std::vector<int64_t> running_;
  int64_t next_id_ = 1, hits_ = 0, queried_ = 0, preemptions_ = 0;
};

TEST(Scheduler, RandomizedSimulationKeepsEveryInvariant) {
  Totals t;
  std::mt19937_64 pick(12345);
  for (uint64_t seed = 0; seed < 60 && !HasFatalFailure(); ++seed) {
    auto in = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(pick); };
    SchedulerConfig c;
    c.block_size = std::vector<int64_t>{1, 2, 3, 4, 8, 16}[static_cast<size_t>(in(0, 5))];
    c.num_blocks = in(2, 24);
    c.max_running = in(1, 8);
    c.max_tokens_per_step = in(1, 40);
    if (seed % 10 == 9) {  // roomier: many sequences sharing prefixes, long chunks
      c.num_blocks = in(40, 120);
      c.max_running = in(8, 32);
      c.max_tokens_per_step = in(32, 256);
    }
    c.max_waiting = in(2, 16);
    c.prefix_caching = seed % 3 != 0;
    SCOPED_TRACE("seed " + std::to_string(seed) + ": blocks " + std::to_string(c.num_blocks) + " x " +
                 std::to_string(c.block_size) + ", running " + std::to_string(c.max_running) + ", tokens " +
                 std::to_string(c.max_tokens_per_step) + ", waiting " + std::to_string(c.max_waiting) +
                 (c.prefix_caching ? ", prefix caching" : ""));
    Simulation sim(c, seed, t);
    sim.run(1500);
  }
  // The simulation has to have reached every path it checks.
  EXPECT_GT(t.preemptions, 100);
  EXPECT_GT(t.hit_tokens, 1000);
  EXPECT_GT(t.copies, 20);
  EXPECT_GT(t.forks, 100);
  EXPECT_GT(t.finished, 1000);
  EXPECT_GT(t.cancelled, 100);
  EXPECT_GT(t.rejected_full, 10);
  EXPECT_GT(t.rejected_big, 10);
  EXPECT_GT(t.shrunk_prefills, 10);
  std::printf(
      "simulation: %lld steps, %lld finished, %lld cancelled, %lld forks, %lld preemptions, %lld copies, "
      "%lld shrunk prefill chunks, %lld full-queue and %lld oversize rejections\n",
      static_cast<long long>(t.steps), static_cast<long long>(t.finished), static_cast<long long>(t.cancelled),
      static_cast<long long>(t.forks), static_cast<long long>(t.preemptions), static_cast<long long>(t.copies),
      static_cast<long long>(t.shrunk_prefills), static_cast<long long>(t.rejected_full),
      static_cast<long long>(t.rejected_big));
}

}  // namespace
