// fake_host.h - the statuses of a fake host, for tests that call plugin kernels or the core's
// shape inference without a runtime.  The ABI keeps gn_status opaque; the test host defines its
// own (identical in every test TU, so the ODR holds).
#pragma once

#include <cstdint>
#include <string>

#include "genesis/plugin.h"

struct gn_status {
  int32_t code;
  std::string msg;
};

namespace test_host {

inline gn_status* status_new(int32_t code, const char* msg) { return new gn_status{code, msg ? msg : ""}; }
inline int32_t status_code(const gn_status* st) { return st ? st->code : GN_OK; }
inline const char* status_message(const gn_status* st) { return st ? st->msg.c_str() : ""; }
inline void status_free(gn_status* st) { delete st; }

// A host table of the current ABI with only the status functions; a test host sets the rest.
inline gn_host_api status_host() {
  return gn_host_api{.struct_size = sizeof(gn_host_api),
                     .abi_major = GN_ABI_VERSION_MAJOR,
                     .abi_minor = GN_ABI_VERSION_MINOR,
                     .host_ctx = nullptr,
                     .status_new = status_new,
                     .status_code = status_code,
                     .status_message = status_message,
                     .status_free = status_free};
}

}  // namespace test_host
