// checks.h - argument checks shared by the optimizers (torch's messages).
#pragma once

#include <charconv>
#include <string>
#include <utility>

#include "genesis/error.hpp"

namespace genesis::optim::checks {

inline Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

/** v as Python's repr writes a float: the shortest form that reads back ("0.1", "-1e-08"). */
inline std::string num(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s = ec == std::errc() ? std::string(buf, end) : std::to_string(v);
  if (s.find_first_of(".einn") == std::string::npos) s += ".0";  // 2 -> "2.0", as Python
  return s;
}

/** Throws torch's "Invalid <what>: <v>" unless v >= 0. */
inline void non_negative(double v, const std::string& what) {
  if (!(v >= 0)) throw invalid("Invalid " + what + ": " + num(v));
}

inline void check_common(double lr, double wd) {
  non_negative(lr, "learning rate");
  non_negative(wd, "weight_decay value");
}

/** torch's checks of Adam-like optimizers: lr, eps, both betas in [0, 1), weight_decay. */
inline void check_adam_like(double lr, std::pair<double, double> betas, double eps, double wd) {
  non_negative(lr, "learning rate");
  non_negative(eps, "epsilon value");
  if (!(betas.first >= 0 && betas.first < 1)) throw invalid("Invalid beta parameter at index 0: " + num(betas.first));
  if (!(betas.second >= 0 && betas.second < 1))
    throw invalid("Invalid beta parameter at index 1: " + num(betas.second));
  non_negative(wd, "weight_decay value");
}

}  // namespace genesis::optim::checks
