// metrics.h - the server's counters and latency histograms, written as Prometheus text.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"

namespace genesis::cli::serve {

/** A Prometheus histogram (cumulative buckets in seconds). */
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double seconds);
  void write(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

/** What /metrics reports; every method is thread-safe. */
class Metrics {
 public:
  Metrics();
  void request_done(const std::string& path, int status);
  void add_tokens(int64_t prompt, int64_t generated);
  void time_to_first_token(double seconds);
  void inter_token(double seconds);
  /** The Prometheus text exposition, with the engine's figures. */
  std::string render(const BackendStats& engine, const std::string& model) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  Histogram ttft_, itl_;
};

}  // namespace genesis::cli::serve
