// backend_engine.cpp - the Backend over genesis::serving::Engine (continuous batching on a paged KV
// cache), running on the engine's own thread.
//
// For tests, GENESIS_SERVE_FAIL_REQUESTS=N[,M...] makes the N-th (M-th, ...) request submitted (counted
// from 1) end as a failing engine step ends a request: the server must answer 500 and keep serving; and
// GENESIS_SERVE_TOKEN_DELAY_MS=D holds the engine D ms after each token, so that a stream's tokens reach
// the client one by one rather than several to a chunk.
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "backend.h"
#include "genesis/serving/engine.hpp"

namespace genesis::cli::serve {
namespace {

class EngineBackend : public Backend {
 public:
  EngineBackend(models::QwenForCausalLM& model, const EngineLimits& l) : engine_(model, config(model, l)) {
    if (const char* f = std::getenv("GENESIS_SERVE_FAIL_REQUESTS")) {
      std::stringstream in(f);
      std::string n;
      while (std::getline(in, n, ','))
        if (!n.empty()) fail_at_.insert(std::stoll(n));
    }
    if (const char* d = std::getenv("GENESIS_SERVE_TOKEN_DELAY_MS")) delay_ms_ = std::stoll(d);
    engine_.start();
  }
  ~EngineBackend() override { shutdown(); }

  int64_t submit(Submission s, EventCallback on_event) override {
    serving::Request r;
    r.prompt = std::move(s.prompt);
    r.sampling = std::move(s.cfg);
    r.n = s.n;
    // The engine reports the chosen token's log-probability with the top k, k >= 1: trim to what was asked.
    r.logprobs = s.logprobs < 0 ? 0 : std::max(1, s.logprobs);
    const size_t top = s.logprobs < 0 ? 0 : static_cast<size_t>(s.logprobs);
    auto ids = ids_;
    auto cb = [on_event = std::move(on_event), top, ids, delay = delay_ms_](const serving::TokenEvent& te) {
      Event e;
      e.index = static_cast<int>(te.sample);
      e.has_token = te.token >= 0;
      e.token = te.token;
      e.logprob = te.logprob;
      for (size_t i = 0; i < te.top.size() && i < top; ++i) e.top.push_back({te.top[i].token, te.top[i].logprob});
      e.finished = te.finished;
      e.finish_reason = te.finish_reason;
      if (te.finished || te.request_finished) {
        std::lock_guard<std::mutex> lock(ids->mu);
        // "cancelled" that nobody asked for: the engine's step failed and ended every request.
        if (te.finish_reason == "cancelled")
          e.finish_reason = ids->cancelled.count(te.request) && !ids->failed.count(te.request) ? "abort" : "error";
        if (te.request_finished) {
          ids->live.erase(te.request);
          ids->cancelled.erase(te.request);
          ids->failed.erase(te.request);
        }
      }
      on_event(e);
      if (delay > 0 && e.has_token) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    };
    std::unique_lock<std::mutex> lock(ids_->mu);  // the id is live before its first event can end it
    if (stopping_) throw QueueFull("the server is shutting down");
    int64_t id = 0;
    try {
      id = engine_.submit(std::move(r), std::move(cb));
    } catch (const Error& e) {
      if (std::string(e.what()).find("queue is full") != std::string::npos) throw QueueFull(e.what());
      throw;
    }
    ids_->live.insert(id);
    if (fail_at_.count(++submitted_)) {  // a test's injected failure: the engine drops the request
      ids_->cancelled.insert(id);
      ids_->failed.insert(id);
      lock.unlock();
      engine_.cancel(id);
    }
    return id;
  }

  void cancel(int64_t id) override {
    {
      std::lock_guard<std::mutex> lock(ids_->mu);
      if (!ids_->live.count(id)) return;
      ids_->cancelled.insert(id);
    }
    engine_.cancel(id);
  }

  BackendStats stats() const override {
    const serving::EngineStats s = engine_.stats();
    BackendStats b;
    b.running = s.running;
    b.waiting = s.waiting;
    b.blocks_used = s.blocks_used;
    b.blocks_free = s.blocks_free + s.blocks_cached;
    b.blocks_total = s.blocks_total;
    b.prefix_hit_rate = s.prefix_hit_rate;
    return b;
  }

  bool supports_logprobs() const override { return true; }

  void shutdown() override {
    std::vector<int64_t> live;
    {
      std::lock_guard<std::mutex> lock(ids_->mu);
      if (stopping_) return;
      stopping_ = true;
      live.assign(ids_->live.begin(), ids_->live.end());
      ids_->cancelled.insert(live.begin(), live.end());
    }
    for (int64_t id : live) engine_.cancel(id);
    engine_.wait_idle();
    engine_.stop();
  }

 private:
  static serving::EngineConfig config(models::QwenForCausalLM& model, const EngineLimits& l) {
    serving::EngineConfig c;
    c.block_size = l.block_size;
    c.num_blocks = l.kv_cache_blocks;
    c.kv_cache_memory_fraction = l.kv_cache_memory;
    if (c.num_blocks == 0 && model.model.embed_tokens.weight.device().type() == "cpu")
      c.kv_cache_bytes = int64_t{512} << 20;
    c.max_running = l.max_running;
    c.max_tokens_per_step = l.max_tokens_per_step;
    c.max_waiting = l.max_waiting;
    c.prefix_caching = l.prefix_caching;
    return c;
  }

  struct Live {
    std::mutex mu;
    std::unordered_set<int64_t> live, cancelled, failed;
  };
  serving::Engine engine_;
  std::shared_ptr<Live> ids_ = std::make_shared<Live>();
  bool stopping_ = false;      // under ids_->mu
  std::set<int64_t> fail_at_;  // GENESIS_SERVE_FAIL_REQUESTS
  int64_t submitted_ = 0;      // under ids_->mu
  int64_t delay_ms_ = 0;       // GENESIS_SERVE_TOKEN_DELAY_MS
};

}  // namespace

std::unique_ptr<Backend> make_backend(models::QwenForCausalLM& model, const EngineLimits& limits) {
  return std::make_unique<EngineBackend>(model, limits);
}

}  // namespace genesis::cli::serve
