// higher_order.cpp - backward passes that record themselves (create_graph, double backward).
//
// Most rules are made of differentiable Tensor ops: run with grad mode on, they record their own
// graph, and the saved tensors they read carry their history (Node::saved), so the gradient they
// return can be differentiated again.  Rules that call a backward kernel (matmul's transposed
// products, softmax_backward, cross_entropy_backward, ...) have a differentiable twin here,
// used when the backward records itself.  Any other rule that hands a kernel's result on is
// caught (a result of an op call that depended on a tensor requiring grad and was never recorded):
// its gradients get a node that raises if a further backward reaches it, rather than a silently
// missing term.
#include <string>
#include <unordered_set>

#include "../internal.h"
#include "inplace.h"
#include "matmul_grad.h"
#include "rules.h"

namespace genesis::autograd::detail {

namespace {

using V = std::vector<Tensor>;

bool needs(const Node& n, size_t i) { return i < n.next.size() && n.next[i] != nullptr; }

// The last two dims swapped.
Tensor mT(const Tensor& t) { return t.transpose(t.dim() - 2, t.dim() - 1); }

// a (..., M, K) @ b (..., K, N); 1-D operands were promoted to (1, K) / (K, 1) as matmul does.
V matmul(Node& n, const Tensor& g) {
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  const auto [A, B, G] = matmul_operands(a, b, g);
  Tensor ga, gb;
  if (needs(n, 0)) {
    ga = G.matmul(mT(B));
    if (a.dim() == 1) ga = ga.squeeze(-2);
  }
  if (needs(n, 1)) {
    gb = mT(A).matmul(G);
    if (b.dim() == 1) gb = gb.squeeze(-1);
  }
  return {ga, gb};
}

// y = x @ w^T: inputs (x (*, in), w (out, in)).
V linear(Node& n, const Tensor& g) {
  const Tensor &x = n.saved("x"), &w = n.saved("w");
  Tensor gx, gw;
  if (needs(n, 0)) gx = g.matmul(w);
  if (needs(n, 1)) gw = g.reshape({-1, w.size(0)}).t().matmul(x.reshape({-1, w.size(1)}));
  return {gx, gw};
}

// out = A B with A = a or a^T (trans_a), B = b or b^T (trans_b), batched over dim 0.
V bmm(Node& n, const Tensor& g) {
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  const bool ta = n.attr_int("trans_a") != 0, tb = n.attr_int("trans_b") != 0;
  Tensor A = ta ? mT(a) : a, B = tb ? mT(b) : b;
  Tensor ga, gb;
  if (needs(n, 0)) {
    ga = g.matmul(mT(B));
    if (ta) ga = mT(ga);
  }
  if (needs(n, 1)) {
    gb = mT(A).matmul(g);
    if (tb) gb = mT(gb);
  }
  return {ga, gb};
}

V softmax(Node& n, const Tensor& g) {
  const Tensor& y = n.saved("out");
  const int64_t d = n.attr_int("dim");
  return {y * (g - (g * y).sum(d, true))};
}

V log_softmax(Node& n, const Tensor& g) {
  const Tensor& y = n.saved("out");
  return {g - y.exp() * g.sum(n.attr_int("dim"), true)};
}

// logits (*, C), integer target (*): (softmax - smoothed one-hot) per row, scaled by the reduction.
V cross_entropy(Node& n, const Tensor& g) {
  const Tensor &logits = n.saved("logits"), &target = n.saved("target");
  const int64_t ignore = n.attr_int("ignore_index"), reduction = n.attr_int("reduction");
  const double smoothing = n.attr_float("label_smoothing");
  const int64_t C = logits.size(-1);
  const DType dt = logits.dtype();
  Tensor valid = target != Scalar(ignore);
  Tensor safe = where(valid, target, zeros_like(target));
  Tensor q = one_hot(safe, C).to(dt);
  if (smoothing > 0) q = q * (1 - smoothing) + smoothing / static_cast<double>(C);
  Tensor d = (logits.softmax(-1) - q) * valid.to(dt).unsqueeze(-1);
  Tensor scale = reduction == 0 ? g.unsqueeze(-1) : reduction == 2 ? g : g / valid.to(dt).sum();
  return {d * scale, Tensor()};
}

// inputs (x, index): g added back where it was gathered from.
V gather(Node& n, const Tensor& g) {
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {scatter_add(z, n.attr_int("dim"), n.saved("index"), g), Tensor()};
}

V index_select(Node& n, const Tensor& g) {
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {index_add(z, n.attr_int("dim"), n.saved("index"), g), Tensor()};
}

// inputs (weight (V, D), ids (*)).
V embedding(Node& n, const Tensor& g) {
  const Shape& ws = n.inputs[0].shape;
  Tensor z = zeros(ws, {.dtype = g.dtype(), .device = g.device()});
  return {index_add(z, 0, n.saved("ids").reshape({-1}), g.reshape({-1, ws.at(1)})), Tensor()};
}

// The rule of a gradient that a kernel computed: a further backward cannot go through it.
V not_implemented(Node& n, const Tensor&) {
  throw Error(GN_ERR_UNSUPPORTED, "double backward through " + n.label.substr(15, n.label.size() - 16) +
                                      " is not implemented: its gradient comes from a backward kernel without a "
                                      "derivative of its own");
}

thread_local std::vector<const gn_tensor*> t_pending;

}  // namespace

thread_local bool t_track_calls = false;

Rule differentiable_rule(Rule rule) {
  static const std::pair<Rule, Rule> kTwins[] = {
      {&rules::matmul, &matmul},
      {&rules::linear, &linear},
      {&rules::bmm, &bmm},
      {&rules::softmax, &softmax},
      {&rules::log_softmax, &log_softmax},
      {&rules::cross_entropy, &cross_entropy},
      {&rules::gather, &gather},
      {&rules::index_select, &index_select},
      {&rules::embedding, &embedding},
  };
  for (const auto& [usual, twin] : kTwins)
    if (usual == rule) return twin;
  return nullptr;
}

bool zero_derivative_op(std::string_view op) {
  struct Row {
    const char* op;
    const char* reason;
  };
  static const Row kRows[] = {
#define GN_NO_GRAD(op, policy, reason) {#op, reason},
#include "derivatives.def"
  };
  static const std::unordered_set<std::string> kZero = [] {
    std::unordered_set<std::string> s;
    for (const Row& r : kRows) {
      const std::string why = r.reason;
      for (const char* word : {"piecewise constant", "bool output", "integer output", "creation", "sampling"})
        if (why.find(word) != std::string::npos) s.insert(r.op);
    }
    return s;
  }();
  return kZero.count(std::string(op)) > 0;
}

void note_call(const gn_op* op, bool any_grad, gn_tensor* out0) {
  if (!any_grad || !out0 || !gn_dtype_is_float(gn_tensor_dtype(out0)) || zero_derivative_op(gn_op_name(op))) return;
  t_pending.push_back(out0);
}

void note_recorded(const gn_tensor* out) {
  for (size_t i = 0; i < t_pending.size(); ++i)
    if (t_pending[i] == out) {
      t_pending[i] = t_pending.back();
      t_pending.pop_back();
      return;
    }
}

bool begin_tracking() {
  const bool prev = t_track_calls;
  if (!prev) t_pending.clear();
  t_track_calls = true;
  return prev;
}

bool end_tracking(bool previous) {
  const bool unrecorded = !t_pending.empty();
  if (!previous) t_pending.clear();
  t_track_calls = previous;
  return unrecorded;
}

void mark_first_order(const std::shared_ptr<Node>& node, const Tensor& g, std::vector<Tensor>& grads) {
  std::vector<Tensor> deps;  // what the gradients depend on
  if (g.defined() && g.requires_grad()) deps.push_back(g);
  for (const Tensor& u : node->unpacked)
    if (u.defined() && u.requires_grad()) deps.push_back(u);
  if (deps.empty()) return;
  const std::string label = "NotImplemented(" + node_display_name(*node) + ")";
  for (Tensor& gi : grads) {
    if (!gi.defined() || !is_floating(gi.dtype())) continue;
    Tensor alias = Tensor::borrow(gi.handle());
    auto n = record_always("not_implemented", &not_implemented, deps.data(), deps.size(), alias);
    n->label = label;
    gi = alias;
  }
}

}  // namespace genesis::autograd::detail
