// backend_generate.cpp - a Backend over models::generate: one request at a time on a worker thread,
// its n choices as one batch. Used where the paged serving engine is not built in.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "backend.h"

namespace genesis::cli::serve {
namespace {

class GenerateBackend : public Backend {
 public:
  GenerateBackend(models::QwenForCausalLM& model, const EngineLimits& limits) : model_(model), limits_(limits) {
    worker_ = std::thread([this] { loop(); });
  }
  ~GenerateBackend() override { shutdown(); }

  int64_t submit(Submission s, EventCallback on_event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw QueueFull("the server is shutting down");
    if (static_cast<int64_t>(queue_.size()) >= limits_.max_waiting)
      throw QueueFull("the queue is full (" + std::to_string(limits_.max_waiting) + " requests waiting)");
    const int64_t id = next_id_++;
    queue_.push_back(Job{id, std::move(s), std::move(on_event)});
    cv_.notify_all();
    return id;
  }

  void cancel(int64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.insert(id);
  }

  BackendStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    BackendStats st;
    st.running = running_;
    st.waiting = static_cast<int64_t>(queue_.size());
    return st;
  }

  bool supports_logprobs() const override { return false; }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && !worker_.joinable()) return;
      stopping_ = true;
      for (const Job& j : queue_) cancelled_.insert(j.id);
      if (current_ >= 0) cancelled_.insert(current_);
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

 private:
  struct Job {
    int64_t id;
    Submission sub;
    EventCallback on_event;
  };

  bool is_cancelled(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_.count(id) > 0;
  }

  void run(Job& job) {
    const int n = job.sub.n;
    std::vector<bool> aborted(static_cast<size_t>(n), false);
    models::GenerationResult r;
    try {
      std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(n), job.sub.prompt);
      r = models::generate(model_, prompts, job.sub.cfg, [&](size_t row, int64_t id) {
        if (is_cancelled(job.id)) {
          aborted[row] = true;
          return false;
        }
        Event e;
        e.index = static_cast<int>(row);
        e.has_token = true;
        e.token = id;
        job.on_event(e);
        return true;
      });
    } catch (const std::exception&) {
      for (int i = 0; i < n; ++i) {
        Event e;
        e.index = i;
        e.finished = true;
        e.finish_reason = "error";
        job.on_event(e);
      }
      return;
    }
    for (int i = 0; i < n; ++i) {
      Event e;
      e.index = i;
      e.finished = true;
      const std::string& why = i < static_cast<int>(r.finish_reasons.size()) ? r.finish_reasons[i] : "abort";
      e.finish_reason = aborted[static_cast<size_t>(i)] || why == "callback" ? "abort" : why;
      job.on_event(e);
    }
  }

  void loop() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        current_ = job.id;
        running_ = job.sub.n;
      }
      if (is_cancelled(job.id)) {
        for (int i = 0; i < job.sub.n; ++i) {
          Event e;
          e.index = i;
          e.finished = true;
          e.finish_reason = "abort";
          job.on_event(e);
        }
      } else {
        run(job);
      }
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_.erase(job.id);
      current_ = -1;
      running_ = 0;
    }
  }

  models::QwenForCausalLM& model_;
  EngineLimits limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::unordered_set<int64_t> cancelled_;
  int64_t next_id_ = 1, current_ = -1, running_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace

std::unique_ptr<Backend> make_generate_backend(models::QwenForCausalLM& model, const EngineLimits& limits) {
  return std::make_unique<GenerateBackend>(model, limits);
}

}  // namespace genesis::cli::serve

namespace genesis::cli::serve {
std::unique_ptr<Backend> make_backend(models::QwenForCausalLM& model, const EngineLimits& limits) {
  return make_generate_backend(model, limits);
}
}  // namespace genesis::cli::serve
