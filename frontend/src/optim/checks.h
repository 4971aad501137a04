// checks.h - argument checks shared by the optimizers (torch's messages).
#pragma once

#include <string>

#include "genesis/error.hpp"

namespace genesis::optim::checks {

inline Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

inline void check_common(double lr, double wd) {
  if (lr < 0) throw invalid("Invalid learning rate: " + std::to_string(lr));
  if (wd < 0) throw invalid("Invalid weight_decay value: " + std::to_string(wd));
}

}  // namespace genesis::optim::checks
