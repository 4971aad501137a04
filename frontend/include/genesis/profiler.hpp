// genesis/profiler.hpp - records every op call and writes a Chrome trace.
//
//   {
//     genesis::Profiler prof("trace.json");   // starts recording
//     auto y = genesis::matmul(x, x.t());
//   }                                         // stops, writes trace.json (open in Perfetto)
//   std::cout << genesis::profiler_summary(); // per-op table of the last recording
#pragma once

#include <iosfwd>
#include <string>

#include "genesis/tensor.hpp"

namespace genesis {

/** RAII profiler (genesis.profiler.profile): records op calls from construction to stop(). */
class Profiler {
 public:
  /** Starts recording; on stop writes a Chrome-trace JSON to trace_path (when not empty) and prints the summary to
   * stdout when print_summary. */
  explicit Profiler(std::string trace_path = "", bool print_summary = false);
  /** Stops if still running (errors are swallowed: destructors do not throw). */
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /** Stops recording, then writes the trace / prints the summary as configured (idempotent). */
  void stop();
  /** True until stop(). */
  bool running() const { return running_; }
  /** Writes the recorded events as Chrome-trace JSON (stops first if running). */
  void export_chrome_trace(const std::string& path);
  /** The per-op summary table (name, calls, total and mean host time). */
  std::string summary() const;
  /** Prints summary() to os. */
  void print_summary(std::ostream& os) const;

 private:
  std::string trace_path_;
  bool print_ = false;
  bool running_ = false;
};

/** Starts the process profiler (prefer the Profiler guard). */
void profiler_start();
/** Stops the process profiler. */
void profiler_stop();
/** Writes the last recording as Chrome-trace JSON (atomically). */
void profiler_export_chrome_trace(const std::string& path);
/** Per-op summary table of the last recording. */
std::string profiler_summary();

}  // namespace genesis
