// genesis/sdk/scalar_tables.h - the shared formulas and op lists of
// scalar_ops.h as host tables, for kernels that load every element as double
// (or int64) and look an op up by name once (the reference plugin and the cpu
// generic paths).
#pragma once

#include <cstdint>
#include <cstring>

#include "genesis/sdk/scalar_ops.h"

namespace gn::sdk::scalar {

// One plain unary op: its double form, its exact int64 form (nullptr: none) and whether it takes bool.
struct UnaryFormula {
  const char* name;
  double (*f)(double);
  int64_t (*exact)(int64_t);
  bool takes_bool;
};

template <class F>
double double_form(double x) {
  return F{}(x);
}
template <class F>
int64_t exact_form(int64_t x) {
  return F{}.exact(x);
}

// Every op of GN_SCALAR_UNARY_OPS.
inline constexpr UnaryFormula kUnaryFormulas[] = {
#define GN_SCALAR_UNARY_ROW(op, F) {#op, double_form<F>, F::kExact ? exact_form<F> : nullptr, F::kBool},
    GN_SCALAR_UNARY_OPS(GN_SCALAR_UNARY_ROW)
#undef GN_SCALAR_UNARY_ROW
};

// A binary or comparison op: its name, its code (BinaryOp) and whether it serves bool operands.
struct BinaryOpName {
  const char* name;
  int op;
  bool takes_bool;
};

// Every op of GN_SCALAR_BINARY_OPS and GN_SCALAR_COMPARE_OPS, in code order.
inline constexpr BinaryOpName kBinaryOps[] = {
#define GN_SCALAR_BINARY_ROW(name, F) {#name, kBin_##name, F::kBool},
    GN_SCALAR_BINARY_OPS(GN_SCALAR_BINARY_ROW) GN_SCALAR_COMPARE_OPS(GN_SCALAR_BINARY_ROW)
#undef GN_SCALAR_BINARY_ROW
};

// A reduction: its name, its code and the dtypes its kernels must take.
struct ReductionDef {
  const char* name;
  Reduction op;
  ReduceInputs inputs;
};
// Every op of GN_SCALAR_REDUCE_OPS.
inline constexpr ReductionDef kReductions[] = {
#define GN_SCALAR_REDUCE_ROW(name, inputs) {#name, Reduction::name, ReduceInputs::inputs},
    GN_SCALAR_REDUCE_OPS(GN_SCALAR_REDUCE_ROW)
#undef GN_SCALAR_REDUCE_ROW
};

// Whether the kernels of a reduction with these inputs take dtype (numeric: every dtype but bool).
inline bool reduce_takes(ReduceInputs inputs, int32_t dtype) {
  if (inputs == ReduceInputs::any) return true;
  return inputs == ReduceInputs::numeric ? dtype != GN_BOOL : gn_dtype_is_float(dtype) != 0;
}

// The unary row of `name`, or nullptr.
inline const UnaryFormula* find_unary_formula(const char* name) {
  for (const UnaryFormula& u : kUnaryFormulas)
    if (std::strcmp(u.name, name) == 0) return &u;
  return nullptr;
}

// The binary row of `name`, or nullptr.
inline const BinaryOpName* find_binary_op(const char* name) {
  for (const BinaryOpName& b : kBinaryOps)
    if (std::strcmp(b.name, name) == 0) return &b;
  return nullptr;
}

}  // namespace gn::sdk::scalar
