// inplace.h - what the engine, the Tensor methods and the op callers share about in-place writes,
// views and recording backward passes (not installed).
#pragma once

#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "genesis/autograd.hpp"

namespace genesis::autograd::detail {

// ---- views (inplace.cpp)

// y, made by a view op from x, shares x's storage: x's base becomes y's base, so an in-place
// write into y rewrites the base's history.  Nothing when y has a storage of its own.
void mark_view(const Tensor& y, const Tensor& x);
// A view whose base's history changed since its grad_fn was made gets a fresh one (an as_strided
// node of the base's new history), as torch regenerates a view's grad_fn.
void sync_view(Tensor::Impl& view);

// The rule of an op whose inputs get no gradient (fill_, floor_, ...).
std::vector<Tensor> no_gradient(Node& n, const Tensor& g);

// ---- nodes (engine.cpp)

// record() without the grad-mode check: `out` gets the node as its history.
std::shared_ptr<Node> record_always(const char* name, Rule rule, const Tensor* inputs, size_t n_inputs, Tensor& out);
// The node receiving t's gradient (its grad_fn, or its leaf's accumulator), after sync_view.
std::shared_ptr<Node> edge_of(const Tensor& t);

// ---- backward passes that record themselves (higher_order.cpp)

// Whether op (an ops.def name) has a zero derivative wherever it has one (floor, sign, comparisons,
// random and creation ops: the GN_NO_GRAD rows of derivatives.def with such a reason).
bool zero_derivative_op(std::string_view op);
// The differentiable form of a rule whose usual form calls a backward kernel (matmul, softmax,
// cross_entropy, ...), or null.
Rule differentiable_rule(Rule rule);
// While a recording backward runs a rule: kernel results that depend on a tensor requiring grad
// but were not recorded (the rule used a backward kernel with no derivative of its own).
extern thread_local bool t_track_calls;
// An op call with inputs requiring grad (any_grad) produced out0 (tracked while t_track_calls).
void note_call(const gn_op* op, bool any_grad, gn_tensor* out0);
// out was recorded: its call is accounted for.
void note_recorded(const gn_tensor* out);
// Starts tracking the calls of one rule; returns the previous state for end_tracking.
bool begin_tracking();
// Stops tracking; true when some grad-dependent kernel result went unrecorded.
bool end_tracking(bool previous);
// Gives each of `grads` a history that raises when a further backward reaches it: the rule of
// node was computed by kernels without a derivative, from g and the node's saved tensors.
void mark_first_order(const std::shared_ptr<Node>& node, const Tensor& g, std::vector<Tensor>& grads);

}  // namespace genesis::autograd::detail
