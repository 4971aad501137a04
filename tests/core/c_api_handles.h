// c_api_handles.h - owning handles over the public C API for tests: a status, a runtime and a
// tensor freed when they go out of scope, and a status's message.
#pragma once

#include <memory>
#include <string>

#include "genesis/genesis.h"

namespace c_api_handles {

struct StatusFree {
  void operator()(gn_status* s) const { gn_status_free(s); }
};
using Status = std::unique_ptr<gn_status, StatusFree>;

// Message of a status ("" for OK).
inline std::string msg(const Status& s) { return gn_status_message(s.get()); }

struct RuntimeFree {
  void operator()(gn_runtime* rt) const { gn_runtime_destroy(rt); }
};
using Runtime = std::unique_ptr<gn_runtime, RuntimeFree>;

struct TensorFree {
  void operator()(gn_tensor* t) const { gn_tensor_release(t); }
};
using Tensor = std::unique_ptr<gn_tensor, TensorFree>;

}  // namespace c_api_handles
