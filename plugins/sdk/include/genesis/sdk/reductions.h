// genesis/sdk/reductions.h - the reduction ops of core/ops/ops.def as one
// list, so every backend's reduce family names and codes them alike; their
// per-element and finishing steps are in scalar_ops.h (beats, var_finish,
// norm_term, norm_finish).
#pragma once

namespace gn::sdk {

// (ops.def name) of every reduction, in the order of Reduction below.
#define GN_SCALAR_REDUCE_OPS(X) \
  X(sum) X(mean) X(prod) X(max) X(min) X(argmax) X(argmin) X(var) X(std) X(logsumexp) X(norm)

// One code per reduction.
enum class Reduction {
#define GN_SCALAR_REDUCE_ENUM(name) name,
  GN_SCALAR_REDUCE_OPS(GN_SCALAR_REDUCE_ENUM)
#undef GN_SCALAR_REDUCE_ENUM
};

// A reduction's ops.def name and code.
struct ReductionDef {
  const char* name;
  Reduction kind;
};

// Every reduction, for a backend's registration loop.
inline constexpr ReductionDef kReductions[] = {
#define GN_SCALAR_REDUCE_DEF(name) {#name, Reduction::name},
    GN_SCALAR_REDUCE_OPS(GN_SCALAR_REDUCE_DEF)
#undef GN_SCALAR_REDUCE_DEF
};

}  // namespace gn::sdk
