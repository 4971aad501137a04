// rules.h - declarations of the gradient rules defined in rules.cpp.
#pragma once

#include <string_view>

#include "genesis/autograd.hpp"

namespace genesis::autograd::rules {

// Every rule named in derivatives.def: std::vector<Tensor> rule(Node&, const Tensor& grad_of_output).
// (`none`, the rule of policy-only frontend rows, is declared and never defined or used.)
#define GN_UNARY_GRAD(op, saves, policy, formula) std::vector<Tensor> op(Node& n, const Tensor& g);
#define GN_GRAD(op, rule, saves, policy) std::vector<Tensor> rule(Node& n, const Tensor& g);
#define GN_FRONTEND(name, rule, policy) std::vector<Tensor> rule(Node& n, const Tensor& g);
#include "derivatives.def"

/** Op name of ops.def -> the rule that differentiates it (the GN_GRAD rows of derivatives.def). */
struct OpRule {
  const char* op;
  Rule rule;
};
/** Every op of the built-in set that has a gradient rule. */
const std::vector<OpRule>& rule_table();

/** A GN_UNARY_GRAD row: the generated rule and what the forward saves for it
 * (as "x" and "out"). */
struct UnaryGrad {
  const char* op;
  Rule rule;
  bool save_x, save_out;
};
/** The GN_UNARY_GRAD row of op, or nullptr. */
const UnaryGrad* find_unary_grad(std::string_view op);

}  // namespace genesis::autograd::rules
