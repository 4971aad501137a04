// engine.cpp - genesis/serving/engine.hpp: the inbox of submitted and cancelled requests, one step (plan, block
// copies, packed tensors, paged forward, sampling, stop rules, commit) and the background thread.
//
// Threads: submit() and cancel() only append to the inbox under the mutex; the stepping thread drains it at the
// start of each step and owns the scheduler, the requests' state and the pools. Callbacks run on the stepping
// thread with no lock held.
#include "genesis/serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <utility>

#include "genesis/autograd.hpp"
#include "genesis/random.hpp"

#include "decode_graph.h"

namespace genesis::serving {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int64_t> ints_to_host(const Tensor& t) {
  Tensor c = t.dtype() == DType::i64 ? t.contiguous() : t.to(DType::i64);
  std::vector<int64_t> out(static_cast<size_t>(c.numel()));
  check(gn_tensor_to_host(c.handle(), out.data(), out.size() * sizeof(int64_t)), "serving engine");
  return out;
}

std::vector<float> floats_to_host(const Tensor& t) {
  Tensor f = t.dtype() == DType::f32 ? t.contiguous() : t.to(DType::f32);
  std::vector<float> out(static_cast<size_t>(f.numel()));
  check(gn_tensor_to_host(f.handle(), out.data(), out.size() * sizeof(float)), "serving engine");
  return out;
}

// log_softmax of the raw logits: the chosen token's value and the k largest, most likely first (ties by id).
void fill_logprobs(const float* row, int64_t V, int64_t token, int64_t k, TokenEvent& e) {
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < V; ++i) top = std::max(top, static_cast<double>(row[i]));
  double z = 0;
  for (int64_t i = 0; i < V; ++i) z += std::exp(static_cast<double>(row[i]) - top);
  const double lse = top + std::log(z);
  e.logprob = static_cast<double>(row[token]) - lse;
  std::vector<int32_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  const auto kk = static_cast<size_t>(std::min(k, V));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<int64_t>(kk), idx.end(),
                    [&](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  e.top.clear();
  for (size_t i = 0; i < kk; ++i) e.top.push_back({idx[i], static_cast<double>(row[idx[i]]) - lse});
}

}  // namespace

struct Engine::Impl {
  // One sample of a request: a scheduler sequence.
  struct Sample {
    int64_t seq = -1;  // -1: not yet queued (samples after the first wait for the first one's prompt)
    HostRng rng{0};
    std::vector<int64_t> output;
    bool done = false;
  };
  struct RequestState {
    Request req;
    EventCallback cb;
    std::vector<Sample> samples;
    std::vector<int64_t> stop;  // stop ids (the model's eos ids added unless ignore_eos)
    int64_t max_new = 0;        // max_new_tokens capped by the model's context
    int64_t open = 0;           // samples not yet done
  };
  struct Inbox {
    std::vector<std::pair<int64_t, std::pair<Request, EventCallback>>> submitted;
    std::vector<int64_t> cancelled;
  };

  Impl(models::QwenForCausalLM& m, const EngineConfig& c) : model(m), cfg(c) {
    const Tensor& w = model.model.embed_tokens.weight;
    device = w.device();
    if (cfg.block_size < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] block_size must be >= 1");
    if (cfg.max_running < 1 || cfg.max_tokens_per_step < 1 || cfg.max_waiting < 0)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[serving] need max_running >= 1, max_tokens_per_step >= 1 and max_waiting >= 0");
    if (cfg.num_blocks <= 0) {
      cfg.num_blocks =
          cfg.kv_cache_bytes > 0
              ? models::PagedKVCache::blocks_for_bytes(model.config, cfg.block_size, w.dtype(), cfg.kv_cache_bytes)
              : models::PagedKVCache::blocks_for_free_memory(model.config, cfg.block_size, w.dtype(), device,
                                                             cfg.kv_cache_memory_fraction);
      if (cfg.num_blocks < 1)
        throw Error(GN_ERR_OUT_OF_MEMORY,
                    "[serving] the KV cache budget holds no block of " +
                        std::to_string(models::PagedKVCache::block_bytes(model.config, cfg.block_size, w.dtype())) +
                        " bytes");
    }
    cache = models::PagedKVCache::allocate(model.config, cfg.num_blocks, cfg.block_size, device, w.dtype());
    SchedulerConfig sc;
    sc.num_blocks = cfg.num_blocks;
    sc.block_size = cfg.block_size;
    sc.max_running = cfg.max_running;
    sc.max_tokens_per_step = cfg.max_tokens_per_step;
    // The engine enforces max_waiting at submit; preempted sequences come back to the queue on top of it.
    sc.max_waiting = cfg.max_waiting + cfg.max_running;
    sc.prefix_caching = cfg.prefix_caching;
    sched = std::make_unique<Scheduler>(sc);
    if (device.type() == "cuda") {
      // The engine's own stream: graph capture needs one, and eager steps run there as well.
      check(gn_stream_create(runtime(), device.c(), &stream), "serving engine");
      if (cfg.cuda_graph) graphs = std::make_unique<DecodeGraphs>(model, cache, 0, cfg.max_running);
    }
    refresh_stats();
  }

  ~Impl() {
    graphs.reset();
    if (stream) {
      gn_status_free(gn_stream_synchronize(stream));
      gn_status_free(gn_stream_destroy(stream));
    }
  }

  // Makes the engine's stream current for one step (on cuda) and restores the caller's afterwards.
  struct StreamScope {
    explicit StreamScope(Impl& e) : e_(e) {
      if (!e.stream) return;
      prev_ = gn_stream_get_current(runtime(), e.device.c());
      check(gn_stream_set_current(runtime(), e.device.c(), e.stream), "serving engine");
    }
    ~StreamScope() {
      if (e_.stream) gn_status_free(gn_stream_set_current(runtime(), e_.device.c(), prev_));
    }
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;
    Impl& e_;
    gn_stream* prev_ = nullptr;
  };

  // ---- called under mu

  int64_t queued_locked() const {
    int64_t n = snap.waiting;
    for (const auto& s : inbox.submitted) n += s.second.first.n;
    return n;
  }

  // ---- the stepping thread

  void validate(const Request& r) const {
    const models::GenerationConfig& g = r.sampling;
    const int64_t V = model.config.vocab_size, max_pos = model.config.max_position_embeddings;
    if (r.prompt.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] the prompt is empty");
    for (int64_t id : r.prompt)
      if (id < 0 || id >= V)
        throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] the prompt holds id " + std::to_string(id) +
                                                 " outside the vocabulary [0, " + std::to_string(V) + ")");
    if (static_cast<int64_t>(r.prompt.size()) >= max_pos)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] the prompt has " + std::to_string(r.prompt.size()) +
                                               " tokens; the model's context (max_position_embeddings) is " +
                                               std::to_string(max_pos) + " positions");
    if (r.n < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] n must be >= 1");
    if (r.logprobs < 0 || r.logprobs > 20)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] logprobs must be in [0, 20]");
    if (g.max_new_tokens < 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] max_new_tokens must be >= 0");
    if (g.temperature < 0 || !(g.top_p > 0 && g.top_p <= 1) || g.min_p < 0 || g.min_p > 1 || g.top_k < 0 ||
        !(g.repetition_penalty > 0))
      throw Error(
          GN_ERR_INVALID_ARGUMENT,
          "[serving] need temperature >= 0, 0 < top_p <= 1, 0 <= min_p <= 1, top_k >= 0, repetition_penalty > 0");
    if (!g.stop_strings.empty() && !g.decode)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] stop_strings need a decode function (a tokenizer)");
    const int64_t len = static_cast<int64_t>(r.prompt.size()) + std::min(g.max_new_tokens, max_pos - 1);
    const int64_t need = (std::min(len, max_pos) + cfg.block_size - 1) / cfg.block_size;
    if (need > cfg.num_blocks)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[serving] the prompt and its new tokens need " + std::to_string(need) +
                                               " KV blocks; the pool has " + std::to_string(cfg.num_blocks));
  }

  void admit(int64_t id, Request&& r, EventCallback&& cb) {
    RequestState st;
    st.req = std::move(r);
    st.cb = std::move(cb);
    const models::GenerationConfig& g = st.req.sampling;
    st.stop = g.stop_ids;
    if (!g.ignore_eos) {
      for (int64_t e : model.generation_defaults.eos_token_ids) st.stop.push_back(e);
      for (int64_t e : model.config.eos_token_ids) st.stop.push_back(e);
    }
    const int64_t plen = static_cast<int64_t>(st.req.prompt.size());
    st.max_new = std::min<int64_t>(g.max_new_tokens, model.config.max_position_embeddings - plen);
    st.samples.resize(static_cast<size_t>(st.req.n));
    for (size_t k = 0; k < st.samples.size(); ++k) st.samples[k].rng = HostRng(g.seed + k);
    st.open = st.req.n;
    totals.prompt_tokens += plen * st.req.n;
    auto& slot = requests[id] = std::move(st);
    if (slot.max_new <= 0) {
      for (size_t k = 0; k < slot.samples.size(); ++k) end_sample(id, slot, k, "length", -1);
      return;
    }
    try {
      queue_sample(id, slot, 0);  // the other samples are forked from it once its prompt is computed
    } catch (const Error&) {      // the scheduler's queue is full (preempted sequences came back on top)
      for (size_t k = 0; k < slot.samples.size(); ++k) end_sample(id, slot, k, "cancelled", -1);
    }
  }

  void queue_sample(int64_t id, RequestState& st, size_t k) {
    const int64_t seq = next_seq++;
    sched->add(seq, st.req.prompt);
    st.samples[k].seq = seq;
    seqs[seq] = {id, k};
  }

  // Ends sample k (with an optional last token already recorded by the caller's event) and reports it.
  void end_sample(int64_t id, RequestState& st, size_t k, const std::string& reason, int64_t token,
                  TokenEvent* carried = nullptr) {
    Sample& s = st.samples[k];
    if (s.done) return;
    s.done = true;
    if (s.seq >= 0) {
      if (sched->contains(s.seq)) sched->finish(s.seq);
      seqs.erase(s.seq);
      s.seq = -1;
    }
    --st.open;
    TokenEvent e;
    if (carried) e = std::move(*carried);
    e.request = id;
    e.sample = static_cast<int64_t>(k);
    e.token = token;
    e.finished = true;
    e.finish_reason = reason;
    e.request_finished = st.open == 0;
    pending_events.push_back({st.cb, std::move(e)});
  }

  void drain_inbox() {
    Inbox in;
    {
      std::lock_guard<std::mutex> lk(mu);
      std::swap(in, inbox);
      work = work || !in.submitted.empty();  // wait_idle() must not see the drained requests as done
    }
    for (auto& [id, rc] : in.submitted) admit(id, std::move(rc.first), std::move(rc.second));
    for (int64_t id : in.cancelled) {
      auto it = requests.find(id);
      if (it == requests.end()) continue;
      for (size_t k = 0; k < it->second.samples.size(); ++k) end_sample(id, it->second, k, "cancelled", -1);
    }
  }

  // Releases finished requests and runs the collected callbacks (no lock held).
  void flush_events() {
    for (auto it = requests.begin(); it != requests.end();)
      if (it->second.open == 0) {
        it = requests.erase(it);
        ++totals.requests_finished;
      } else {
        ++it;
      }
    std::vector<std::pair<EventCallback, TokenEvent>> ev;
    ev.swap(pending_events);
    for (auto& [cb, e] : ev)
      if (cb) cb(e);
  }

  bool step() {
    std::lock_guard<std::mutex> step_lock(step_mu);
    NoGradGuard no_grad;
    StreamScope on_stream(*this);
    drain_inbox();
    StepPlan plan = sched->schedule();
    totals.preemptions += static_cast<int64_t>(plan.preempted.size());
    if (!plan.chunks.empty()) run_plan(plan);
    refresh_stats();
    flush_events();
    refresh_stats();
    idle_cv.notify_all();
    return has_work();
  }

  // Whether sample k of a request takes the device's argmax: greedy, no repetition penalty, no log-probabilities
  // (those need the whole row on the host).
  static bool device_greedy(const RequestState& st) {
    const models::GenerationConfig& g = st.req.sampling;
    return g.temperature == 0 && g.repetition_penalty == 1.0 && st.req.logprobs == 0;
  }

  void run_plan(const StepPlan& plan) {
    const auto t_pack = Clock::now();
    for (const auto& [src, dst] : plan.copies) cache.copy_block(src, dst);
    const int64_t B = static_cast<int64_t>(plan.chunks.size());
    std::vector<int64_t> ids, pos, slots, seq_lens(static_cast<size_t>(B)), qstart(static_cast<size_t>(B + 1), 0), rows;
    std::vector<const std::vector<int32_t>*> tabs;  // each sequence's block table
    int64_t max_pos = 1;
    for (int64_t b = 0; b < B; ++b) {
      const ScheduledChunk& c = plan.chunks[static_cast<size_t>(b)];
      const std::vector<int64_t>& toks = sched->tokens(c.seq);
      for (int64_t p = c.start; p < c.start + c.count; ++p) {
        ids.push_back(toks[static_cast<size_t>(p)]);
        pos.push_back(p);
        slots.push_back(sched->slot(c.seq, p));
      }
      tabs.push_back(&sched->block_table(c.seq));
      seq_lens[static_cast<size_t>(b)] = c.start + c.count;
      qstart[static_cast<size_t>(b + 1)] = qstart[static_cast<size_t>(b)] + c.count;
      max_pos = std::max(max_pos, c.start + c.count);
      if (c.sample) rows.push_back(qstart[static_cast<size_t>(b + 1)] - 1);
    }
    const int64_t T = static_cast<int64_t>(ids.size());
    const Options i64{.dtype = DType::i64, .device = device};
    totals.computed_tokens += T;
    ++totals.steps;
    // A decode step (one token per sequence, every row sampled) replays a captured graph where one serves it.
    if (graphs && graphs->usable() && T == B && static_cast<int64_t>(rows.size()) == B) {
      Tensor lg, top;
      totals.pack_seconds += seconds_since(t_pack);
      const auto t_forward = Clock::now();
      if (graphs->run(ids, pos, slots, tabs, seq_lens, &lg, &top)) {
        ++totals.graph_steps;
        finish_plan(plan, lg.slice(0, 0, B), top.slice(0, 0, B), t_forward);
        return;
      }
      totals.forward_seconds += seconds_since(t_forward);
    }
    // The eager step: the block tables as one dense (B, M) tensor, zero-padded.
    size_t M = 1;
    for (const auto* t : tabs) M = std::max(M, t->size());
    std::vector<int64_t> tables(static_cast<size_t>(B) * M, 0);
    for (size_t b = 0; b < tabs.size(); ++b) std::copy(tabs[b]->begin(), tabs[b]->end(), tables.begin() + b * M);
    models::PagedBatch batch;
    batch.cache = &cache;
    batch.slots = tensor(slots, {T}, i64);
    batch.block_tables = tensor(tables, {B, static_cast<int64_t>(M)}, i64).to(DType::i32);
    batch.seq_lens = tensor(seq_lens, {B}, i64);
    batch.query_start = tensor(qstart, {B + 1}, i64);
    const Tensor ids_t = tensor(ids, {T}, i64), pos_t = tensor(pos, {T}, i64);
    totals.pack_seconds += seconds_since(t_pack);
    const auto t_forward = Clock::now();
    if (rows.empty()) {
      // Prompt chunks only: keys and values are written, no logits needed (one row computed anyway).
      model.forward_paged(ids_t, pos_t, batch, tensor(std::vector<int64_t>{0}, {1}, i64), max_pos);
      sched->commit(plan, std::vector<int64_t>(plan.chunks.size(), -1));
      totals.forward_seconds += seconds_since(t_forward);
      return;
    }
    const int64_t R = static_cast<int64_t>(rows.size());
    const Tensor lg = model.forward_paged(ids_t, pos_t, batch, tensor(rows, {R}, i64), max_pos);  // (R, V)
    finish_plan(plan, lg, Tensor(), t_forward);
  }

  // Samples the plan's rows from their logits lg (R, V) on the device (top: their argmax when already computed),
  // commits the step to the scheduler and queues the events.
  void finish_plan(const StepPlan& plan, const Tensor& lg, const Tensor& top_ids, Clock::time_point t_forward) {
    const int64_t R = lg.size(0);
    const Options i64{.dtype = DType::i64, .device = device};
    std::vector<int64_t> sampled(plan.chunks.size(), -1);
    // Only what sampling needs comes to the host: the argmax of the greedy rows (R ids) and the full rows of the
    // others (temperature, penalties, log-probabilities) -- not R x vocabulary floats every step.
    std::vector<char> greedy(static_cast<size_t>(R));
    std::vector<int64_t> host_rows;  // indices into the R sampled rows
    {
      int64_t r = 0;
      for (const ScheduledChunk& c : plan.chunks) {
        if (!c.sample) continue;
        greedy[static_cast<size_t>(r)] = device_greedy(requests.at(seqs.at(c.seq).first));
        if (!greedy[static_cast<size_t>(r)]) host_rows.push_back(r);
        ++r;
      }
    }
    const int64_t V = lg.size(-1);
    const std::vector<int64_t> argmax = static_cast<int64_t>(host_rows.size()) < R
                                            ? ints_to_host(top_ids.defined() ? top_ids : lg.argmax(-1))
                                            : std::vector<int64_t>();
    const std::vector<float> logits =
        host_rows.empty() ? std::vector<float>()
        : static_cast<int64_t>(host_rows.size()) == R
            ? floats_to_host(lg)
            : floats_to_host(lg.index_select(0, tensor(host_rows, {static_cast<int64_t>(host_rows.size())}, i64)));
    std::vector<const float*> row_of(static_cast<size_t>(R), nullptr);
    for (size_t h = 0; h < host_rows.size(); ++h)
      row_of[static_cast<size_t>(host_rows[h])] = logits.data() + static_cast<int64_t>(h) * V;
    totals.forward_seconds += seconds_since(t_forward);
    const auto t_sample = Clock::now();
    std::vector<TokenEvent> events(plan.chunks.size());
    struct Fork {
      int64_t request, parent;
      size_t sample;
      int64_t token;
      TokenEvent event;
    };
    std::vector<Fork> forks;  // samples 1..n-1 drawn from their first sample's prompt logits
    int64_t r = 0;
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
      const ScheduledChunk& c = plan.chunks[i];
      if (!c.sample) continue;
      const float* row = row_of[static_cast<size_t>(r)];
      const int64_t top = greedy[static_cast<size_t>(r)] ? argmax[static_cast<size_t>(r)] : -1;
      ++r;
      const auto [id, k] = seqs.at(c.seq);
      RequestState& st = requests.at(id);
      sampled[i] = row ? draw(st, k, row, V, sched->tokens(c.seq), events[i]) : top;
      if (k == 0 && st.samples[0].output.empty())
        for (size_t j = 1; j < st.samples.size(); ++j) {
          Fork f{id, c.seq, j, 0, {}};
          f.token = row ? draw(st, j, row, V, sched->tokens(c.seq), f.event) : top;
          forks.push_back(std::move(f));
        }
    }
    sched->commit(plan, sampled);
    totals.generated_tokens += R;
    for (Fork& f : forks) {
      const int64_t child = next_seq++;
      sched->fork(f.parent, child);
      sched->set_last_token(child, f.token);
      requests.at(f.request).samples[f.sample].seq = child;
      seqs[child] = {f.request, f.sample};
      ++totals.generated_tokens;
    }
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
      if (!plan.chunks[i].sample) continue;
      const auto [id, k] = seqs.at(plan.chunks[i].seq);
      accept(id, k, sampled[i], std::move(events[i]));
    }
    for (Fork& f : forks) accept(f.request, f.sample, f.token, std::move(f.event));
    totals.sample_seconds += seconds_since(t_sample);
  }

  // Sample k's next token from a row of logits (and its log-probabilities when asked).
  int64_t draw(RequestState& st, size_t k, const float* row, int64_t V, const std::vector<int64_t>& history,
               TokenEvent& e) {
    std::vector<float> work(row, row + V);
    const int64_t tok = models::sample_token(work, history, st.req.sampling, st.samples[k].rng.uniform());
    if (st.req.logprobs > 0) fill_logprobs(row, V, tok, st.req.logprobs, e);
    return tok;
  }

  // Records sample k's new token, applies the stop rules and queues its event.
  void accept(int64_t id, size_t k, int64_t tok, TokenEvent&& e) {
    RequestState& st = requests.at(id);
    Sample& s = st.samples[k];
    if (s.done) return;
    s.output.push_back(tok);
    std::string reason;
    if (std::find(st.stop.begin(), st.stop.end(), tok) != st.stop.end()) {
      reason = "stop";
    } else if (!st.req.sampling.stop_strings.empty()) {
      const std::string text = st.req.sampling.decode(s.output);
      for (const std::string& stop : st.req.sampling.stop_strings)
        if (!stop.empty() && text.find(stop) != std::string::npos) reason = "stop";
    }
    if (reason.empty() && static_cast<int64_t>(s.output.size()) >= st.max_new) reason = "length";
    if (!reason.empty()) {
      end_sample(id, st, k, reason, tok, &e);
      return;
    }
    e.request = id;
    e.sample = static_cast<int64_t>(k);
    e.token = tok;
    pending_events.push_back({st.cb, std::move(e)});
  }

  void refresh_stats() {
    const SchedulerStats s = sched->stats();
    int64_t unqueued = 0;
    for (const auto& [id, st] : requests)
      for (const Sample& smp : st.samples) unqueued += smp.seq < 0 && !smp.done;
    std::lock_guard<std::mutex> lk(mu);
    const std::string err = snap.last_error;
    snap = totals;
    snap.last_error = err;
    snap.running = s.running;
    snap.waiting = s.waiting + unqueued;
    snap.blocks_total = cfg.num_blocks;
    snap.blocks_used = s.blocks_used;
    snap.blocks_free = s.blocks_free;
    snap.blocks_cached = s.blocks_cached;
    snap.prefix_hit_rate = s.prefix_queried_tokens > 0
                               ? static_cast<double>(s.prefix_hit_tokens) / static_cast<double>(s.prefix_queried_tokens)
                               : 0.0;
    snap.tracked_requests = static_cast<int64_t>(requests.size());
    snap.tracked_sequences = static_cast<int64_t>(seqs.size());
    work = !requests.empty() || sched->has_work();
  }

  bool has_work() const {
    std::lock_guard<std::mutex> lk(mu);
    return work || !inbox.submitted.empty() || !inbox.cancelled.empty();
  }

  void loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu);
        wake_cv.wait(lk, [&] { return stopping || work || !inbox.submitted.empty() || !inbox.cancelled.empty(); });
        if (stopping) return;
      }
      try {
        step();
      } catch (const std::exception& e) {  // a failed forward or a throwing callback: end every request
        abort_all(e.what());
      }
    }
  }

  // Ends every request ("cancelled") after a step failed on the background thread; the error is kept in stats().
  void abort_all(const std::string& what) {
    std::lock_guard<std::mutex> step_lock(step_mu);
    {
      std::lock_guard<std::mutex> lk(mu);
      snap.last_error = what;
    }
    drain_inbox();
    for (auto& [id, st] : requests)
      for (size_t k = 0; k < st.samples.size(); ++k) end_sample(id, st, k, "cancelled", -1);
    refresh_stats();
    try {
      flush_events();
    } catch (const std::exception&) {  // a callback that throws again: its events are dropped
      pending_events.clear();
      for (auto it = requests.begin(); it != requests.end();) it = it->second.open == 0 ? requests.erase(it) : ++it;
    }
    refresh_stats();
    idle_cv.notify_all();
  }

  models::QwenForCausalLM& model;
  EngineConfig cfg;
  Device device;
  models::PagedKVCache cache;
  std::unique_ptr<Scheduler> sched;
  gn_stream* stream = nullptr;           // cuda: the steps' stream
  std::unique_ptr<DecodeGraphs> graphs;  // cuda: decode-step graphs (cfg.cuda_graph)
  // Owned by the stepping thread.
  std::map<int64_t, RequestState> requests;
  std::unordered_map<int64_t, std::pair<int64_t, size_t>> seqs;  // sequence -> (request, sample)
  std::vector<std::pair<EventCallback, TokenEvent>> pending_events;
  EngineStats totals;
  int64_t next_seq = 0;
  std::mutex step_mu;
  // Shared, under mu.
  mutable std::mutex mu;
  std::condition_variable wake_cv, idle_cv;
  Inbox inbox;
  EngineStats snap;
  bool work = false, stopping = false;
  int64_t next_id = 1;
  std::thread worker;
};

Engine::Engine(models::QwenForCausalLM& model, const EngineConfig& cfg) : impl_(std::make_unique<Impl>(model, cfg)) {}

Engine::~Engine() { stop(); }

int64_t Engine::submit(Request request, EventCallback callback) {
  impl_->validate(request);
  std::lock_guard<std::mutex> lk(impl_->mu);
  const int64_t queued = impl_->queued_locked();
  if (queued + request.n > impl_->cfg.max_waiting)
    throw Error(GN_ERR_OUT_OF_MEMORY, "[serving] the queue is full: " + std::to_string(queued) + " sequences wait (" +
                                          "max_waiting " + std::to_string(impl_->cfg.max_waiting) + ")");
  const int64_t id = impl_->next_id++;
  impl_->inbox.submitted.push_back({id, {std::move(request), std::move(callback)}});
  impl_->wake_cv.notify_all();
  return id;
}

void Engine::cancel(int64_t id) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->inbox.cancelled.push_back(id);
  impl_->wake_cv.notify_all();
}

bool Engine::step() { return impl_->step(); }

void Engine::run_until_idle() {
  while (step()) {
  }
}

void Engine::start() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (impl_->worker.joinable()) return;
  impl_->stopping = false;
  impl_->worker = std::thread([this] { impl_->loop(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (!impl_->worker.joinable()) return;
    impl_->stopping = true;
    impl_->wake_cv.notify_all();
  }
  impl_->worker.join();
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->worker = std::thread();
  impl_->stopping = false;
}

void Engine::wait_idle() {
  std::unique_lock<std::mutex> lk(impl_->mu);
  impl_->idle_cv.wait(lk,
                      [&] { return !impl_->work && impl_->inbox.submitted.empty() && impl_->inbox.cancelled.empty(); });
}

bool Engine::has_work() const { return impl_->has_work(); }

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  EngineStats s = impl_->snap;
  s.waiting = impl_->queued_locked();
  return s;
}

const EngineConfig& Engine::config() const { return impl_->cfg; }

}  // namespace genesis::serving
