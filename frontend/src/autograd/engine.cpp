// engine.cpp - recording nodes and the backward pass.
//
// The graph: every non-leaf tensor that requires grad owns its grad_fn Node;
// a Node holds strong edges to the nodes of its inputs (their grad_fn, or for
// leaves an AccumulateGrad node that writes .grad).  Backward counts each
// node's consumers with an explicit stack (no recursion), then runs nodes in
// topological order, summing gradients per node and freeing saved tensors
// and gradient buffers as soon as they are used.
#include <cctype>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "../internal.h"

namespace genesis::autograd {

namespace {

thread_local bool g_grad_enabled = true;
// Callbacks queued during the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* g_callbacks = nullptr;

// The node that receives t's gradient: its grad_fn, or its (cached) accumulator.
std::shared_ptr<Node> edge_of(const Tensor& t) {
  const auto& impl = t.impl();
  if (impl->grad_fn) return impl->grad_fn;
  if (auto acc = impl->grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<Node>();
  acc->name = "accumulate_grad";
  acc->leaf = impl;
  impl->grad_accumulator = acc;
  return acc;
}

// Leaf hooks run first (they may replace g), then g is added into .grad, then
// the post-accumulate hooks see the leaf.
void add_to_grad(Tensor::Impl& leaf, Tensor g);

void accumulate(const std::shared_ptr<Tensor::Impl>& leaf, Tensor g) {
  add_to_grad(*leaf, std::move(g));
  if (leaf->post_accumulate_hooks.empty()) return;
  Tensor t = Tensor::from_impl(leaf);
  for (const auto& h : leaf->post_accumulate_hooks) h(t);
}

void add_to_grad(Tensor::Impl& leaf, Tensor g) {
  for (const Hook& h : leaf.hooks) {
    Tensor r = h(g);
    if (r.defined()) g = r;
  }
  if (!leaf.grad) {
    // Take g over when nothing else can reach its data (no other Tensor, handle or
    // view: torch steals such gradients too); else a private dense copy, since g
    // may alias a user's tensor, another leaf's gradient or be a broadcast view.
    if (g.impl().use_count() == 1 && g.is_contiguous() && gn_tensor_is_exclusive(g.handle()))
      leaf.grad = g.impl();
    else
      leaf.grad = g.clone().impl();
    return;
  }
  Tensor cur = Tensor::borrow(leaf.grad->h);
  cur.add_(g);  // in place, as torch: the .grad tensor users hold sees the sum
}

// Reduce/cast a rule's gradient to the input's shape and dtype (broadcasting, promotion).
Tensor conform(Tensor g, const InputMeta& m) {
  if (g.shape() != m.shape) g = sum_to_size(g, m.shape);
  if (g.dtype() != m.dtype) g = g.to(m.dtype);
  return g;
}

}  // namespace

Node::~Node() {
  // Nodes this one owns alone are parked and destroyed in a loop here, so a
  // chain of N nodes costs O(1) stack instead of N nested destructors.
  thread_local std::vector<std::shared_ptr<Node>> pending;
  thread_local bool draining = false;
  for (auto& n : next)
    if (n && n.use_count() == 1) pending.push_back(std::move(n));
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();  // its destructor parks its own inputs
  }
  draining = false;
}

void Node::keep_attrs(const gn_op* recorded, std::initializer_list<gn_attr_value> given) {
  op = recorded;
  const gn_op_schema* s = gn_op_get_schema(recorded);
  attrs.clear();
  attr_names.clear();
  attr_storage.clear();
  for (size_t i = 0; i < s->n_attrs; ++i)
    keep_attr(s->attrs[i].name, i < given.size() ? given.begin()[i] : s->attrs[i].default_value);
}

void Node::keep_attr(const char* attr_name, gn_attr_value value) {
  // Own the ints data: the caller's arrays die with the call.  (A vector moved by
  // attr_storage's growth keeps its buffer, so earlier data pointers stay valid.)
  if (value.kind == GN_ATTR_INTS) {
    attr_storage.emplace_back(value.u.ints.data, value.u.ints.data + value.u.ints.size);
    value.u.ints.data = attr_storage.back().data();
  }
  attrs.push_back(value);
  attr_names.push_back(attr_name);
}

namespace {
// "a, b, c" of a list of names.
std::string joined(const std::vector<const char*>& names) {
  std::string r;
  for (const char* n : names) r += (r.empty() ? "" : ", ") + std::string(n);
  return r.empty() ? "none" : r;
}
const char* kind_name(int32_t kind) {
  switch (kind) {
    case GN_ATTR_INT: return "int";
    case GN_ATTR_FLOAT: return "float";
    case GN_ATTR_INTS: return "ints";
    case GN_ATTR_STRING: return "str";
    default: return "device";
  }
}
}  // namespace

const gn_attr_value& Node::attr(const char* attr_name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (std::strcmp(attr_names[i], attr_name) == 0) return attrs[i];
  throw Error(GN_ERR_INTERNAL, std::string("[") + name + "] the recorded node has no attribute '" + attr_name +
                                   "' (kept: " + joined(attr_names) + ")");
}

namespace {
const gn_attr_value& of_kind(const Node& n, const char* attr_name, int32_t kind) {
  const gn_attr_value& a = n.attr(attr_name);
  if (a.kind != kind)
    throw Error(GN_ERR_INTERNAL, std::string("[") + n.name + "] attribute '" + attr_name + "' is " + kind_name(a.kind) +
                                     ", read as " + kind_name(kind));
  return a;
}
}  // namespace

int64_t Node::attr_int(const char* attr_name) const { return of_kind(*this, attr_name, GN_ATTR_INT).u.i; }
double Node::attr_float(const char* attr_name) const { return of_kind(*this, attr_name, GN_ATTR_FLOAT).u.f; }
std::vector<int64_t> Node::attr_ints(const char* attr_name) const {
  const gn_attr_value& a = of_kind(*this, attr_name, GN_ATTR_INTS);
  return std::vector<int64_t>(a.u.ints.data, a.u.ints.data + a.u.ints.size);
}

std::vector<gn_attr_value> Node::attrs_for(const gn_op* backward) const {
  const gn_op_schema* s = gn_op_get_schema(backward);
  std::vector<gn_attr_value> r;
  for (size_t i = 0; i < s->n_attrs; ++i) {
    gn_attr_value v = s->attrs[i].default_value;
    for (size_t j = 0; j < attrs.size(); ++j)
      if (std::strcmp(attr_names[j], s->attrs[i].name) == 0) v = attrs[j];
    r.push_back(v);
  }
  return r;
}

void Node::save(const char* tensor_name, Tensor t) {
  saved_tensors.push_back(std::move(t));
  saved_names.push_back(tensor_name);
}

bool Node::has_saved(const char* tensor_name) const {
  for (const char* n : saved_names)
    if (std::strcmp(n, tensor_name) == 0) return true;
  return false;
}

const Tensor& Node::saved(const char* tensor_name) const {
  for (size_t i = 0; i < saved_names.size(); ++i) {
    if (std::strcmp(saved_names[i], tensor_name) != 0) continue;
    if (i >= saved_tensors.size())
      throw Error(GN_ERR_INVALID_ARGUMENT, std::string("[") + name + "] saved tensor '" + tensor_name +
                                               "' was freed by a backward pass (use retain_graph)");
    return saved_tensors[i];
  }
  throw Error(GN_ERR_INTERNAL, std::string("[") + name + "] the recorded node saved no tensor '" + tensor_name +
                                   "' (saved: " + joined(saved_names) + ")");
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

std::shared_ptr<Node> record(const char* name, Rule rule, const Tensor* inputs, size_t n_inputs, Tensor& out) {
  if (!g_grad_enabled) return nullptr;
  bool any = false;
  for (size_t i = 0; i < n_inputs; ++i) any = any || inputs[i].requires_grad();
  if (!any || !is_floating(out.dtype())) return nullptr;
  auto n = std::make_shared<Node>();
  n->name = name;
  n->rule = rule;
  n->next.reserve(n_inputs);
  n->inputs.reserve(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    const Tensor& t = inputs[i];
    n->next.push_back(t.requires_grad() ? edge_of(t) : nullptr);
    n->inputs.push_back(t.defined() ? InputMeta{t.shape(), t.dtype(), t.device()}
                                    : InputMeta{{}, DType::f32, Device()});
  }
  out.impl()->requires_grad = true;
  out.impl()->grad_fn = n;
  return n;
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  if (!root.requires_grad())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[backward] tensor does not require grad and has no grad_fn");
  Tensor grad = gradient;
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[backward] grad can be implicitly created only for one-element outputs");
    grad = ones_like(root);
  } else if (grad.shape() != root.shape()) {
    throw Error(GN_ERR_SHAPE, "[backward] gradient shape does not match the tensor's shape");
  }
  NoGradGuard no_grad;  // rules build plain tensors (no higher-order graphs)
  std::shared_ptr<Node> start = edge_of(root);
  // Callbacks queued by hooks run once the outermost backward is done: a nested
  // one (activation checkpointing recomputes and backpropagates a region inside
  // the outer backward) queues into the outer list.
  std::vector<std::function<void()>> callbacks;
  struct CallbackScope {
    bool outer;
    explicit CallbackScope(std::vector<std::function<void()>>* mine) : outer(!g_callbacks) {
      if (outer) g_callbacks = mine;
    }
    ~CallbackScope() {
      if (outer) g_callbacks = nullptr;
    }
  } scope(&callbacks);

  // 1. How many edges reach each node (iterative DFS).
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack = {start.get()};
  std::unordered_set<Node*> seen = {start.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& nx : n->next) {
      if (!nx) continue;
      ++deps[nx.get()];
      if (seen.insert(nx.get()).second) stack.push_back(nx.get());
    }
  }

  // 2. Run nodes whose consumers have all contributed.
  std::unordered_map<Node*, Tensor> buffers;
  buffers[start.get()] = grad;
  std::vector<std::shared_ptr<Node>> ready = {start};
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    Tensor g;
    if (auto it = buffers.find(node.get()); it != buffers.end()) {
      g = std::move(it->second);
      buffers.erase(it);
    }
    std::vector<Tensor> grads;
    if (g.defined()) {
      for (const Hook& h : node->pre_hooks) {
        Tensor r = h(g);
        if (r.defined()) g = r;
      }
      if (node->leaf) {
        accumulate(node->leaf, std::move(g));
      } else {
        if (node->released)
          throw Error(GN_ERR_INVALID_ARGUMENT, std::string("[backward] trying to backward through ") +
                                                   node_display_name(*node) +
                                                   " a second time; pass retain_graph=true the first time");
        grads = node->rule(*node, g);
        if (!retain_graph) {
          node->saved_tensors.clear();
          node->released = true;
        }
      }
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* nx = node->next[i].get();
      if (!nx) continue;
      if (i < grads.size() && grads[i].defined()) {
        Tensor gi = conform(std::move(grads[i]), node->inputs[i]);
        Tensor& buf = buffers[nx];
        buf = buf.defined() ? buf + gi : gi;
      }
      if (--deps[nx] == 0) ready.push_back(node->next[i]);
    }
  }
  if (scope.outer)
    for (size_t i = 0; i < callbacks.size(); ++i) callbacks[i]();  // a callback may queue more
}

void queue_callback(std::function<void()> fn) {
  if (!g_callbacks) throw Error(GN_ERR_INVALID_ARGUMENT, "[queue_callback] no backward pass is running on this thread");
  g_callbacks->push_back(std::move(fn));
}

std::string node_display_name(const Node& n) {
  // "log_softmax" -> "LogSoftmaxBackward0", "accumulate_grad" -> "AccumulateGrad"
  std::string out;
  bool up = true;
  for (const char* p = n.name; *p; ++p) {
    if (*p == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p;
    up = false;
  }
  return n.leaf ? out : out + "Backward0";
}

}  // namespace genesis::autograd

namespace genesis {

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> f) const {
  if (!requires_grad() || !is_leaf())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[register_post_accumulate_grad_hook] needs a leaf that requires grad");
  impl_->post_accumulate_hooks.push_back(std::move(f));
}

}  // namespace genesis
