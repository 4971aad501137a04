// rules.h - declarations of the gradient rules defined in rules.cpp.
#pragma once

#include "genesis/autograd.hpp"

namespace genesis::autograd::rules {

// X(name): std::vector<Tensor> name(Node&, const Tensor& grad_of_output).
#define GN_AUTOGRAD_RULES(X)                                                                  \
  X(neg) X(abs) X(exp) X(log) X(log1p) X(sqrt) X(rsqrt) X(sin) X(cos) X(tanh) X(sigmoid)      \
  X(relu) X(gelu) X(silu) X(reciprocal) X(square) X(clamp) X(pow_scalar) X(pow)               \
  X(add) X(sub) X(mul) X(div) X(maximum) X(minimum) X(where) X(matmul)                       \
  X(sum) X(mean) X(amax) X(var) X(std) X(logsumexp) X(norm)                                   \
  X(softmax) X(log_softmax) X(layer_norm) X(rms_norm) X(cross_entropy) X(embedding)           \
  X(identity) X(to_device) X(reshape) X(permute) X(transpose) X(slice) X(select)              \
  X(conv2d) X(max_pool2d) X(avg_pool2d) X(sdpa) X(rope) X(swiglu)                              \
  X(gather) X(index_select) X(cat) X(stack)                                                   \
  X(prod) X(bmm) X(scatter) X(scatter_add) X(index_add) X(masked_fill) X(triu) X(tril)       \
  X(take_along) X(linear)

#define GN_DECLARE_RULE(name) std::vector<Tensor> name(Node& n, const Tensor& g);
GN_AUTOGRAD_RULES(GN_DECLARE_RULE)
#undef GN_DECLARE_RULE

/** Op name of ops.def -> the rule that differentiates it (the single list the
 * gradcheck coverage test reads; see rules.cpp, rule_table). */
struct OpRule {
  const char* op;
  Rule rule;
};
/** Every op of the built-in set that has a gradient rule. */
const std::vector<OpRule>& rule_table();

}  // namespace genesis::autograd::rules
