// error.cpp - genesis::check: a C API status as a genesis::Error.
#include "genesis/error.hpp"

#include <string>

#include "genesis/genesis.h"

namespace genesis {

void check(gn_status* st, const char* what) {
  if (!st) return;
  const int32_t code = gn_status_code(st);
  std::string msg = gn_status_message(st);
  gn_status_free(st);
  // Name the op unless the core already did ("mul: ..." or "[mul] ...").
  if (what && msg.rfind(what, 0) != 0 && msg.rfind(std::string("[") + what + "]", 0) != 0)
    msg = std::string("[") + what + "] " + msg;
  throw Error(code, msg);
}

}  // namespace genesis
