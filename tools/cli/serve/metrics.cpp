// metrics.cpp - Prometheus text for /metrics (metrics.h).
#include "metrics.h"

#include <cstdio>

namespace genesis::cli::serve {

namespace {
std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}
}  // namespace

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name, const std::string& help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
            0.075, 0.1,    0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1,    2.5}) {}

void Metrics::request_done(const std::string& path, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{path, status}];
}

void Metrics::add_tokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += static_cast<uint64_t>(prompt);
  generated_tokens_ += static_cast<uint64_t>(generated);
}

void Metrics::time_to_first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(seconds);
}

void Metrics::inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

std::string Metrics::render(const BackendStats& e, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string m = "{model_name=\"" + model + "\"}";
  std::string out;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + m + " " + num(v) + "\n";
  };
  auto counter = [&](const std::string& name, const std::string& help, double v) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + m + " " + num(v) + "\n";
  };
  out += "# HELP genesis_requests_total HTTP requests answered, by path and status.\n";
  out += "# TYPE genesis_requests_total counter\n";
  for (const auto& [k, n] : requests_)
    out += "genesis_requests_total{path=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " +
           std::to_string(n) + "\n";
  gauge("genesis_num_requests_running", "Sequences in the engine's running batch.", static_cast<double>(e.running));
  gauge("genesis_num_requests_waiting", "Sequences waiting for the engine.", static_cast<double>(e.waiting));
  gauge("genesis_kv_cache_blocks_used", "KV cache blocks referenced by a sequence.",
        static_cast<double>(e.blocks_used));
  gauge("genesis_kv_cache_blocks_free", "KV cache blocks free (or cached and evictable).",
        static_cast<double>(e.blocks_free));
  gauge("genesis_kv_cache_usage_ratio", "Share of the KV cache blocks in use.",
        e.blocks_total > 0 ? static_cast<double>(e.blocks_used) / static_cast<double>(e.blocks_total) : 0.0);
  gauge("genesis_prefix_cache_hit_rate", "Prompt tokens found in the prefix cache, of those looked up.",
        e.prefix_hit_rate);
  counter("genesis_prompt_tokens_total", "Prompt tokens of the requests run.", static_cast<double>(prompt_tokens_));
  counter("genesis_generation_tokens_total", "Tokens generated.", static_cast<double>(generated_tokens_));
  ttft_.write(out, "genesis_time_to_first_token_seconds", "Time from a request's arrival to its first token.");
  itl_.write(out, "genesis_inter_token_latency_seconds", "Time between two tokens of a stream.");
  return out;
}

}  // namespace genesis::cli::serve
