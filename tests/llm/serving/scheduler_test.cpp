// scheduler_test.cpp - genesis::serving::Scheduler: directed cases (prefix hits, LRU eviction,
// copy-on-write, preemption, chunked prefill, errors). The randomized simulation checked after every
// step against an independent model is scheduler_simulation_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "genesis/error.hpp"
#include "block_pool.h"
#include "genesis/serving/scheduler.hpp"
#include "scheduler_test_util.h"

namespace {

using genesis::Error;
using genesis::serving::block_chain_hash;
using genesis::serving::BlockPool;
using genesis::serving::kRootBlockHash;
using genesis::serving::ScheduledChunk;
using genesis::serving::Scheduler;
using genesis::serving::SchedulerConfig;
using genesis::serving::SchedulerStats;
using genesis::serving::StepPlan;
using scheduler_test::chunk_of;
using scheduler_test::error_of;

SchedulerConfig config(int64_t num_blocks, int64_t block_size, int64_t max_tokens = 2048, bool caching = true) {
  SchedulerConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.max_tokens_per_step = max_tokens;
  c.prefix_caching = caching;
  return c;
}

std::vector<int64_t> iota(int64_t n, int64_t first) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + i;
  return v;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/** Commits a plan with token 7 (or `token`) for every sampled chunk. */
void commit_all(Scheduler& s, const StepPlan& plan, int64_t token = 7) {
  s.commit(plan, std::vector<int64_t>(plan.chunks.size(), token));
}

// ---- directed cases ---------------------------------------------------------------------------------------

TEST(Scheduler, SharedPrefixIsComputedOnce) {
  Scheduler s(config(64, 16));
  const std::vector<int64_t> prefix = iota(64, 1000);
  const std::vector<int64_t> a = concat(prefix, iota(10, 1)), b = concat(prefix, iota(7, 50));
  s.add(1, a);
  StepPlan p1 = s.schedule();
  ASSERT_EQ(p1.chunks.size(), 1u);
  EXPECT_EQ(p1.chunks[0].start, 0);
  EXPECT_EQ(p1.chunks[0].count, 74);
  EXPECT_TRUE(p1.chunks[0].sample);
  commit_all(s, p1);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 0);
  EXPECT_EQ(s.stats().prefix_queried_tokens, 74);

  s.add(2, b);
  StepPlan p2 = s.schedule();
  const ScheduledChunk* c = chunk_of(p2, 2);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->start, 64);  // only the remainder
  EXPECT_EQ(c->count, 7);
  EXPECT_TRUE(c->sample);
  EXPECT_EQ(s.num_computed(2), 64);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 64);
  EXPECT_EQ(s.stats().prefix_queried_tokens, 74 + 71);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(s.block_table(2)[static_cast<size_t>(k)], s.block_table(1)[static_cast<size_t>(k)]);
    EXPECT_EQ(s.block_refs(s.block_table(1)[static_cast<size_t>(k)]), 2);
  }
  EXPECT_NE(s.block_table(2)[4], s.block_table(1)[4]);
  EXPECT_EQ(s.slot(2, 63), s.slot(1, 63));
  EXPECT_NE(s.slot(2, 64), s.slot(1, 64));
  commit_all(s, p2);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 64);  // counted once, at admission

  // Without prefix caching nothing is looked up or shared.
  Scheduler off(config(64, 16, 2048, false));
  off.add(1, a);
  commit_all(off, off.schedule());
  off.add(2, b);
  StepPlan q = off.schedule();
  ASSERT_NE(chunk_of(q, 2), nullptr);
  EXPECT_EQ(chunk_of(q, 2)->start, 0);
  EXPECT_EQ(off.stats().prefix_hit_tokens, 0);
  EXPECT_EQ(off.stats().prefix_queried_tokens, 0);
}

TEST(Scheduler, WholePromptHitStillComputesTheLastToken) {
  Scheduler s(config(16, 16));
  const std::vector<int64_t> prompt = iota(64, 3);
  s.add(1, prompt);
  commit_all(s, s.schedule());
  s.finish(1);
  EXPECT_EQ(s.stats().blocks_cached, 4);
  EXPECT_EQ(s.stats().blocks_used, 0);

  s.add(2, prompt);  // all 4 blocks are cached; the last one holds the last token, so it is recomputed
  StepPlan p = s.schedule();
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].start, 48);
  EXPECT_EQ(p.chunks[0].count, 16);
  EXPECT_TRUE(p.chunks[0].sample);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 48);
  commit_all(s, p);

  s.add(3, concat(prompt, {9}));  // 65 tokens: the 4 full blocks are a hit, only the 65th is computed
  StepPlan q = s.schedule();
  const ScheduledChunk* c = chunk_of(q, 3);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->start, 64);
  EXPECT_EQ(c->count, 1);
  EXPECT_TRUE(c->sample);
  EXPECT_EQ(s.stats().prefix_hit_tokens, 48 + 64);

  s.add(4, {5});  // a one-token prompt has nothing to look up
  StepPlan r = s.schedule();
  ASSERT_NE(chunk_of(r, 4), nullptr);
  EXPECT_EQ(chunk_of(r, 4)->start, 0);
  EXPECT_EQ(chunk_of(r, 4)->count, 1);
}

// Two finished 9-token sequences (block size 4, 5 blocks) leave their full blocks A0 A1 B0 B1 cached, least
// recently used first: A1, A0, B1, B0 (a sequence's tail leaves before its head), and one block free.
struct LruFixture {
  Scheduler s{config(5, 4)};
  std::vector<int64_t> a = iota(9, 100), b = iota(9, 200);
  std::vector<int32_t> ta, tb;
  LruFixture() {
    s.add(1, a);
    commit_all(s, s.schedule());
    ta = s.block_table(1);
    s.finish(1);
    s.add(2, b);
    commit_all(s, s.schedule());
    tb = s.block_table(2);
    s.finish(2);
    SchedulerStats st = s.stats();
    EXPECT_EQ(st.blocks_cached, 4);
    EXPECT_EQ(st.blocks_free, 1);
    EXPECT_EQ(st.blocks_used, 0);
  }
  /** The prefix hit of a new sequence with this prompt, run for one step and finished. */
  int64_t hit_of(int64_t id, const std::vector<int64_t>& prompt) {
    const int64_t before = s.stats().prefix_hit_tokens;
    s.add(id, prompt);
    commit_all(s, s.schedule());
    const int64_t hit = s.stats().prefix_hit_tokens - before;
    s.finish(id);
    return hit;
  }
  /** The blocks a 20-token sequence (the whole pool) gets: the free one, then the cached ones as evicted. */
  std::vector<int32_t> eviction_order(int64_t id) {
    s.add(id, iota(20, 500));
    StepPlan p = s.schedule();
    EXPECT_EQ(p.chunks.size(), 1u);
    std::vector<int32_t> t = s.block_table(id);
    s.finish(id);
    return std::vector<int32_t>(t.begin() + 1, t.end());
  }
};

TEST(Scheduler, CachedBlocksAreEvictedLeastRecentlyUsedFirst) {
  {
    LruFixture f;
    EXPECT_EQ(f.eviction_order(3), (std::vector<int32_t>{f.ta[1], f.ta[0], f.tb[1], f.tb[0]}));
    EXPECT_EQ(f.s.stats().blocks_cached, 0);  // its blocks left the cache: nothing of A or B is found
    EXPECT_EQ(f.hit_of(4, f.a), 0);
    EXPECT_EQ(f.hit_of(5, f.b), 0);
  }
  {
    LruFixture f;
    EXPECT_EQ(f.hit_of(3, f.a), 8);  // a hit makes A's blocks the most recently used
    EXPECT_EQ(f.eviction_order(4), (std::vector<int32_t>{f.tb[1], f.tb[0], f.ta[1], f.ta[0]}));
  }
  {
    LruFixture f;
    f.s.add(3, iota(8, 300));  // 2 blocks: the free one and A1
    commit_all(f.s, f.s.schedule());
    f.s.finish(3);
    EXPECT_EQ(f.hit_of(4, f.a), 4);  // A0 is still there
  }
}

TEST(Scheduler, EqualBlocksComputedTogetherAreCachedOnce) {
  Scheduler s(config(16, 4));
  const std::vector<int64_t> prompt = iota(9, 100);
  s.add(1, prompt);
  s.add(2, prompt);  // admitted in the same step: neither finds the other's blocks
  StepPlan p = s.schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[1].start, 0);
  commit_all(s, p);
  EXPECT_EQ(s.stats().blocks_used, 6);
  s.finish(1);
  s.finish(2);
  EXPECT_EQ(s.stats().blocks_cached, 2);  // one copy of the two full blocks; the duplicates are free
  EXPECT_EQ(s.stats().blocks_free, 14);
  s.add(3, prompt);
  StepPlan q = s.schedule();
  ASSERT_EQ(q.chunks.size(), 1u);
  EXPECT_EQ(q.chunks[0].start, 8);
}

TEST(BlockPool, StatesReferencesAndLookup) {
  BlockPool pool(3, 2);
  EXPECT_EQ(pool.num_free(), 3);
  const int32_t a = pool.allocate(), b = pool.allocate();
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.refs(a), 1);
  const int64_t ta[2] = {1, 2}, tb[2] = {3, 4};
  const uint64_t ha = block_chain_hash(kRootBlockHash, ta, 2);
  EXPECT_EQ(ha, block_chain_hash(kRootBlockHash, ta, 2));
  EXPECT_NE(ha, block_chain_hash(kRootBlockHash, tb, 2));
  EXPECT_NE(ha, block_chain_hash(ha, ta, 2));  // the chain: same tokens after another block hash differently
  pool.register_full(a, ha, kRootBlockHash, ta);
  EXPECT_EQ(pool.lookup(ha, kRootBlockHash, ta), a);
  EXPECT_EQ(pool.lookup(ha, kRootBlockHash, tb), -1);  // a hash collision is no hit
  EXPECT_EQ(pool.lookup(ha, ha, ta), -1);
  pool.register_full(b, ha, kRootBlockHash, ta);  // the content is already held: b stays unhashed
  pool.ref(a);
  EXPECT_EQ(pool.refs(a), 2);
  pool.unref(a);
  pool.unref(a);
  pool.unref(b);
  EXPECT_EQ(pool.num_cached(), 1);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.lookup(ha, kRootBlockHash, ta), a);  // cached blocks stay findable
  pool.ref(a);                                        // a hit takes it out of the cache
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.num_used(), 1);
  pool.unref(a);
  std::set<int32_t> got;
  for (int i = 0; i < 3; ++i) got.insert(pool.allocate());  // the free ones first, then the cached one
  EXPECT_EQ(got, (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.lookup(ha, kRootBlockHash, ta), -1);  // evicted
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.available(), 0);
}

TEST(Scheduler, ForkSharesBlocksAndCopiesTheSharedLastBlockOnce) {
  Scheduler s(config(16, 4));
  s.add(1, iota(6, 10));
  StepPlan p = s.schedule();
  commit_all(s, p, 42);  // tokens 0..6, positions 0..5 computed: block 1 is half full
  ASSERT_EQ(s.num_computed(1), 6);
  s.fork(1, 2);
  EXPECT_EQ(s.tokens(2), s.tokens(1));
  EXPECT_EQ(s.block_table(2), s.block_table(1));
  EXPECT_EQ(s.num_computed(2), 6);
  const int32_t shared_last = s.block_table(1)[1];
  EXPECT_EQ(s.block_refs(s.block_table(1)[0]), 2);
  EXPECT_EQ(s.block_refs(shared_last), 2);
  EXPECT_EQ(s.stats().blocks_used, 2);
  s.set_last_token(2, 43);
  EXPECT_EQ(s.tokens(2).back(), 43);
  EXPECT_EQ(s.tokens(1).back(), 42);

  StepPlan d = s.schedule();
  ASSERT_EQ(d.chunks.size(), 2u);
  ASSERT_EQ(d.copies.size(), 1u);  // the first writer copies; the second then holds the block alone
  EXPECT_EQ(d.copies[0].first, shared_last);
  EXPECT_EQ(d.copies[0].second, s.block_table(1)[1]);
  EXPECT_EQ(s.block_table(2)[1], shared_last);
  EXPECT_EQ(s.block_table(1)[0], s.block_table(2)[0]);  // the full block stays shared
  EXPECT_EQ(s.block_refs(shared_last), 1);
  EXPECT_EQ(s.block_refs(d.copies[0].second), 1);
  EXPECT_EQ(s.stats().blocks_used, 3);
  commit_all(s, d);
  EXPECT_TRUE(s.schedule().copies.empty());

  // A fork at a block boundary shares only full blocks: nothing to copy.
  Scheduler t(config(16, 4));
  t.add(1, iota(7, 10));
  commit_all(t, t.schedule());  // 8 tokens, 7 computed
  commit_all(t, t.schedule());  // 9 tokens, 8 computed: two full blocks
  t.fork(1, 2);
  StepPlan e = t.schedule();
  EXPECT_EQ(e.chunks.size(), 2u);
  EXPECT_TRUE(e.copies.empty());
  EXPECT_NE(t.block_table(1)[2], t.block_table(2)[2]);

  // Finishing both returns every block.
  s.finish(1);
  s.finish(2);
  EXPECT_EQ(s.stats().blocks_used, 0);
  EXPECT_EQ(s.stats().blocks_free + s.stats().blocks_cached, 16);
}

TEST(Scheduler, PreemptsTheNewestAndRecomputesIt) {
  Scheduler s(config(4, 4, 2048, false));
  s.add(1, iota(7, 10));
  s.add(2, iota(7, 20));
  StepPlan p = s.schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  commit_all(s, p);             // 8 tokens each, 7 computed, 2 blocks each: the pool is full
  commit_all(s, s.schedule());  // position 7 still fits their second blocks
  EXPECT_EQ(s.stats().blocks_free, 0);
  StepPlan q = s.schedule();  // position 8 needs a third block each
  ASSERT_EQ(q.preempted, std::vector<int64_t>{2});
  ASSERT_EQ(q.chunks.size(), 1u);
  EXPECT_EQ(q.chunks[0].seq, 1);
  EXPECT_EQ(q.chunks[0].start, 8);
  EXPECT_EQ(s.stats().preemptions, 1);
  EXPECT_EQ(s.stats().waiting, 1);
  EXPECT_EQ(s.stats().running, 1);
  EXPECT_TRUE(s.block_table(2).empty());
  EXPECT_EQ(s.num_computed(2), 0);
  EXPECT_EQ(s.tokens(2).size(), 9u);  // its tokens are kept
  commit_all(s, q, 5);
  s.finish(1);
  StepPlan r = s.schedule();  // recomputed from its tokens, sampling after the last one
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].seq, 2);
  EXPECT_EQ(r.chunks[0].start, 0);
  EXPECT_EQ(r.chunks[0].count, 9);
  EXPECT_TRUE(r.chunks[0].sample);

  // The preempted sequence waits at the front of the queue, ahead of older arrivals.
  Scheduler t(config(4, 4, 2048, false));
  t.add(1, iota(7, 10));
  t.add(2, iota(7, 20));
  commit_all(t, t.schedule());
  commit_all(t, t.schedule());
  t.add(3, {1});
  StepPlan u = t.schedule();
  ASSERT_EQ(u.preempted, std::vector<int64_t>{2});
  commit_all(t, u);
  t.finish(1);
  StepPlan v = t.schedule();
  ASSERT_GE(v.chunks.size(), 1u);
  EXPECT_EQ(v.chunks[0].seq, 2);
}

TEST(Scheduler, ChunkedPrefillDecodesFirstAndRespectsLimits) {
  SchedulerConfig c = config(64, 4, 10);
  c.max_running = 2;
  Scheduler s(c);
  s.add(1, iota(3, 1));
  commit_all(s, s.schedule());  // 1 decodes from now on
  s.add(2, iota(25, 100));
  s.add(3, iota(5, 200));
  StepPlan p = s.schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(p.chunks[0].seq, 1);
  EXPECT_EQ(p.chunks[0].count, 1);
  EXPECT_TRUE(p.chunks[0].sample);
  EXPECT_EQ(p.chunks[1].seq, 2);
  EXPECT_EQ(p.chunks[1].start, 0);
  EXPECT_EQ(p.chunks[1].count, 9);
  EXPECT_FALSE(p.chunks[1].sample);
  EXPECT_EQ(p.num_tokens(), 10);
  commit_all(s, p);
  EXPECT_EQ(s.tokens(2).size(), 25u);  // nothing sampled mid-prompt
  EXPECT_EQ(s.stats().waiting, 1);     // max_running = 2 keeps 3 waiting
  s.finish(1);
  StepPlan q = s.schedule();  // the budget goes to 2's next chunk: 3 still waits
  ASSERT_EQ(q.chunks.size(), 1u);
  EXPECT_EQ(q.chunks[0].seq, 2);
  EXPECT_EQ(q.chunks[0].start, 9);
  EXPECT_EQ(q.chunks[0].count, 10);
  EXPECT_FALSE(q.chunks[0].sample);
  commit_all(s, q);
  StepPlan r = s.schedule();
  ASSERT_EQ(r.chunks.size(), 2u);
  EXPECT_EQ(r.chunks[0].seq, 2);
  EXPECT_EQ(r.chunks[0].start, 19);
  EXPECT_EQ(r.chunks[0].count, 6);
  EXPECT_TRUE(r.chunks[0].sample);
  EXPECT_EQ(r.chunks[1].seq, 3);
  EXPECT_EQ(r.chunks[1].start, 0);
  EXPECT_EQ(r.chunks[1].count, 4);
  EXPECT_FALSE(r.chunks[1].sample);
}

TEST(Scheduler, CommitChecksThePlanAndSkipsCancelledSequences) {
  Scheduler s(config(8, 4));
  s.add(1, iota(5, 1));
  s.add(2, iota(5, 10));
  StepPlan p = s.schedule();
  s.finish(2);  // cancelled while the step ran, and its id taken again
  s.add(2, iota(3, 20));
  commit_all(s, p);
  EXPECT_EQ(s.num_computed(1), 5);
  EXPECT_EQ(s.num_computed(2), 0);
  EXPECT_EQ(s.tokens(2), iota(3, 20));
  EXPECT_NE(error_of([&] { commit_all(s, p); }).find("does not match"), std::string::npos);  // twice
  EXPECT_EQ(s.num_computed(1), 5);
  StepPlan q = s.schedule();
  EXPECT_NE(error_of([&] { s.commit(q, {}); }).find("no sampled token"), std::string::npos);
  EXPECT_EQ(s.tokens(1).size(), 6u);
  ASSERT_EQ(q.chunks.size(), 2u);  // 1 decodes, the new 2 is admitted
  s.commit(q, {3, 4});
  EXPECT_EQ(s.tokens(1).back(), 3);
  EXPECT_EQ(s.tokens(2).back(), 4);
}

TEST(Scheduler, Errors) {
  SchedulerConfig c = config(4, 4);
  c.max_waiting = 2;
  Scheduler s(c);
  s.add(1, {1});
  s.add(2, {2});
  try {
    s.add(3, {3});
    ADD_FAILURE() << "a full queue accepted a request";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the request queue is full (2 waiting)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(s.contains(3));
  EXPECT_NE(error_of([&] { s.add(1, {1}); }).find("sequence 1 already exists"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add(5, {}); }).find("empty prompt"), std::string::npos);
  s.finish(2);
  EXPECT_NE(error_of([&] { s.add(6, iota(17, 0)); }).find("needs 5 blocks of 4 positions; the pool has 4"),
            std::string::npos);
  s.add(6, iota(16, 0));  // exactly the pool
  for (const std::string& e :
       {error_of([&] { s.finish(9); }), error_of([&] { s.tokens(9); }), error_of([&] { s.block_table(9); }),
        error_of([&] { s.slot(9, 0); }), error_of([&] { s.num_computed(9); }), error_of([&] { s.fork(9, 10); })}) {
    EXPECT_NE(e.find("unknown sequence 9"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { s.fork(1, 11); }).find("cannot be forked"), std::string::npos);  // still waiting
  EXPECT_NE(error_of([&] { s.slot(1, 0); }).find("has no block"), std::string::npos);
  EXPECT_NE(error_of([&] { s.block_refs(4); }).find("outside [0, 4)"), std::string::npos);
  commit_all(s, s.schedule());
  EXPECT_NE(error_of([&] { s.fork(1, 6); }).find("already exists"), std::string::npos);
  EXPECT_NE(error_of([&] { s.slot(1, 4); }).find("has no block"), std::string::npos);
  EXPECT_NE(error_of([&] { s.slot(1, -1); }).find("has no block"), std::string::npos);
  EXPECT_NE(error_of([&] { s.set_last_token(6, 1); }).find("not a generated one"), std::string::npos);
  for (auto bad : {config(0, 4), config(4, 0), config(4, 4, 0)}) {
    EXPECT_NE(error_of([&] { Scheduler x(bad); }), "(no error)");
  }
}

}  // namespace
