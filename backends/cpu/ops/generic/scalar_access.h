// generic/scalar_access.h - what the generic tier's loops share: the SDK's typed loads and stores, the
// shared scalar formulas (sc::), and the dtypes computed through exact int64.
#pragma once

#include <cstdint>

#include "genesis/sdk/sdk.h"

namespace gn::cpu::generic {

using gn::sdk::load;
using gn::sdk::load_int;
using gn::sdk::store;
using gn::sdk::store_int;

namespace sc = gn::sdk::scalar;

// Integers and bool: computed through int64, never through double.
inline bool intlike(int32_t dt) { return gn_dtype_is_int(dt) || dt == GN_BOOL; }

}  // namespace gn::cpu::generic
