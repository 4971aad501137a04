// core/src/profiler.cpp - op-call recording, Chrome-trace export (written atomically by
// sdk/support/atomic_file.h, as the frontend writes its files), summary.
#include "profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "atomic_file.h"
#include "runtime.h"

namespace genesis::core {

int64_t Profiler::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Profiler::start() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  origin_ns_ = now_ns();
  enabled_.store(true);
}

void Profiler::stop() { enabled_.store(false); }

void Profiler::record(ProfileEvent ev) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(ev));
}

std::string Profiler::chrome_trace_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : events_) {
    events.push_back({{"name", e.name},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"ts", (double)(e.start_ns - origin_ns_) / 1000.0},
                      {"dur", (double)e.dur_ns / 1000.0},
                      {"pid", 0},
                      {"tid", 0},
                      {"args", {{"device", e.device}, {"input_shapes", e.shapes}}}});
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return doc.dump(1);
}

std::string Profiler::summary() const {
  struct Row {
    int64_t calls = 0, total = 0;
  };
  std::map<std::string, Row> rows;
  int64_t all = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : events_) {
      auto& r = rows[e.name];
      r.calls++;
      r.total += e.dur_ns;
      all += e.dur_ns;
    }
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second.total > b.second.total; });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-40s %10s %14s %12s %8s\n", "op", "calls", "total (ms)", "mean (us)", "share");
  out += line;
  for (auto& [name, r] : sorted) {
    std::snprintf(line, sizeof line, "%-40s %10lld %14.3f %12.3f %7.1f%%\n", name.c_str(), (long long)r.calls,
                  r.total / 1e6, r.total / 1e3 / (double)r.calls, all ? 100.0 * r.total / all : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-40s %10s %14.3f\n", "total", "", all / 1e6);
  out += line;
  return out;
}

}  // namespace genesis::core

using namespace genesis::core;

extern "C" gn_status* gn_profiler_export_chrome_trace(gn_runtime* rt, const char* path) {
  return guarded([&] {
    require_non_null("gn_profiler_export_chrome_trace", {{"rt", rt}, {"path", path}});
    const std::string json = rt->profiler.chrome_trace_json();
    try {
      genesis::support::write_file_atomic(path, json);
    } catch (const genesis::support::FileError& e) {
      fail(GN_ERR_IO, std::string("gn_profiler_export_chrome_trace: cannot write '") + path + "': " + e.what());
    }
  });
}
