// profiler.cpp - the profiler guard over gn_profiler_* (genesis/profiler.hpp).
#include <iostream>
#include <sstream>
#include <string>

#include "genesis/profiler.hpp"

namespace genesis {

void profiler_start() { check(gn_profiler_start(runtime()), "profiler"); }
void profiler_stop() { check(gn_profiler_stop(runtime()), "profiler"); }
void profiler_export_chrome_trace(const std::string& path) {
  check(gn_profiler_export_chrome_trace(runtime(), path.c_str()), ("profiler: " + path).c_str());
}

std::string profiler_summary() {
  size_t needed = 0;
  check(gn_profiler_summary(runtime(), nullptr, 0, &needed), "profiler");
  std::string s(needed, '\0');
  check(gn_profiler_summary(runtime(), s.data(), s.size(), &needed), "profiler");
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

Profiler::Profiler(std::string trace_path, bool print_summary)
    : trace_path_(std::move(trace_path)), print_(print_summary) {
  profiler_start();
  running_ = true;
}

Profiler::~Profiler() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::cerr << "genesis::Profiler: " << e.what() << "\n";
  }
}

void Profiler::stop() {
  if (!running_) return;
  running_ = false;
  profiler_stop();
  if (!trace_path_.empty()) profiler_export_chrome_trace(trace_path_);
  if (print_) print_summary(std::cout);
}

void Profiler::export_chrome_trace(const std::string& path) {
  if (running_) {
    running_ = false;
    profiler_stop();
  }
  profiler_export_chrome_trace(path);
}

std::string Profiler::summary() const { return profiler_summary(); }

void Profiler::print_summary(std::ostream& os) const { os << summary(); }

}  // namespace genesis
