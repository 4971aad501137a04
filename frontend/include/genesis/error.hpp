// genesis/error.hpp - genesis::Error, what every failing Genesis call throws, and check(), which
// turns a C API status into one.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "genesis/status.h"

namespace genesis {

/** Error raised by any failing Genesis call: a gn_code plus a message. */
class Error : public std::runtime_error {
 public:
  /** Error with a gn_code and message. */
  Error(int32_t code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  /** The gn_code (GN_ERR_SHAPE, ...). */
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

/** Throws genesis::Error (and frees st) when st is not NULL; `what` prefixes the message as "[what] ". */
void check(gn_status* st, const char* what = nullptr);

}  // namespace genesis
