// backends/cpu/tiers.h - which (op, dtype) an earlier kernel tier already
// serves, so the generic tier can take the rest (plugin.cpp, kTiers).
#pragma once

#include <cstdint>

namespace gn::cpu {

// Whether a family registered before this call already has a "cpu" kernel for (op, dtype).
bool tier_serves(const char* op, int32_t dtype);

}  // namespace gn::cpu
