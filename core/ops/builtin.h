// core/ops/builtin.h - the built-in op table generated from ops.def.
#pragma once

#include <cstddef>
#include <vector>

#include "genesis/op.h"

namespace genesis::core {

// Op ids of the built-in ops: their row in ops.def.
enum class OpId : int {
#define GN_OP(name, min_in, max_in, max_out, flags, infer, attrs, doc) name,
#include "ops.def"
#undef GN_OP
  count
};

constexpr int kNumBuiltinOps = static_cast<int>(OpId::count);

// The built-in schemas in OpId order, attribute strings parsed once.  Device
// attributes defaulting to "default" carry gn_device{-1, 0}: the runtime's cpu:0.
const std::vector<gn_op_schema>& builtin_schemas();

}  // namespace genesis::core
