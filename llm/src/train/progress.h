// progress.h - the training progress display: one line redrawn in place on a terminal (step,
// loss, lr, tokens/s, memory, ETA), plain lines otherwise, or nothing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace genesis::train {

/** Shortest readable form of a loss or rate ("2.3041", "1.2e-05"). */
inline std::string format_number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, (v != 0 && (v < 1e-3 && v > -1e-3)) ? "%.2e" : "%.4f", v);
  return b;
}

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  /** mode: "auto" (bar on a terminal, else lines), "bar", "lines" or "none"; steps counted from `first`. */
  Progress(const std::string& mode, int64_t total, int64_t first)
      : total_(total), first_(first), start_(Clock::now()), last_(start_) {
    const bool tty = isatty(fileno(stderr)) != 0;
    bar_ = mode == "bar" || (mode == "auto" && tty);
    quiet_ = mode == "none";
  }

  /** Shows step `step` (1-based) when due: every 100 ms on a terminal, 20 lines per run otherwise. */
  void update(int64_t step, double loss, double lr, double tokens_per_second, uint64_t memory) {
    if (quiet_) return;
    const auto now = Clock::now();
    const bool last = step == total_;
    if (bar_) {
      if (!last && now - last_ < std::chrono::milliseconds(100)) return;
    } else {
      const int64_t every = std::max<int64_t>(1, total_ / 20);
      if (!last && step % every != 0) return;
    }
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double per_step = step > first_ ? secs / static_cast<double>(step - first_) : 0.0;
    const double eta = per_step * static_cast<double>(total_ - step);
    char line[320];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %s  lr %s  %.0f tok/s  mem %.1f MB  eta %s",
                  static_cast<long long>(step), static_cast<long long>(total_), format_number(loss).c_str(),
                  format_number(lr).c_str(), tokens_per_second, static_cast<double>(memory) / 1e6,
                  clock_text(eta).c_str());
    if (bar_) {
      const int width = 24;
      const int fill = static_cast<int>(width * step / std::max<int64_t>(1, total_));
      std::string b(static_cast<size_t>(fill), '=');
      if (fill < width) b += '>';
      b.resize(width, ' ');
      std::fprintf(stderr, "\r\033[K[%s] %s", b.c_str(), line);
    } else {
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  }

  /** Prints a message on its own line (the bar is redrawn by the next update). */
  void message(const std::string& text) {
    if (quiet_) return;
    if (bar_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
  }

  /** Ends the bar's line. */
  void finish() {
    if (bar_ && !quiet_) std::fputs("\n", stderr);
  }

 private:
  static std::string clock_text(double s) {
    char b[32];
    const long long t = static_cast<long long>(s + 0.5);
    if (t >= 3600)
      std::snprintf(b, sizeof b, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
      std::snprintf(b, sizeof b, "%lld:%02lld", t / 60, t % 60);
    return b;
  }
  int64_t total_, first_;
  Clock::time_point start_, last_;
  bool bar_ = false, quiet_ = false;
};

}  // namespace genesis::train
