// core/src/profiler.h - records op calls and writes Chrome-trace JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace genesis::core {

struct ProfileEvent {
  std::string name;
  std::string device;
  std::string shapes;  // "(2, 3), (3)" of the inputs
  int64_t start_ns;
  int64_t dur_ns;
};

class Profiler {
 public:
  // Cheap check on the hot path.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void start();
  void stop();
  void record(ProfileEvent ev);
  // Chrome trace ("traceEvents" with complete "X" events, microseconds).
  std::string chrome_trace_json() const;
  // Per-op table: calls, total, mean, share.
  std::string summary() const;
  static int64_t now_ns();

 private:
  std::atomic<bool> enabled_{false};
  mutable std::mutex mu_;
  std::vector<ProfileEvent> events_;
  int64_t origin_ns_ = 0;
};

}  // namespace genesis::core
