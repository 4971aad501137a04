// core/ops/attr_spec.h - the parser of ops.def attribute strings (internal;
// builtin_schemas() uses it, tests call it on malformed strings).
#pragma once

#include <vector>

#include "genesis/op.h"

namespace genesis::core {

// Parse "name:kind[=default] ..." (kinds int float ints str device) into
// specs whose names, strings and default arrays live for the whole program;
// throws std::logic_error naming `op` and the bad token when malformed.
std::vector<gn_attr_spec> parse_attr_specs(const char* op, const char* spec);

}  // namespace genesis::core
