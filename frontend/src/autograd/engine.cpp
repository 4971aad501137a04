// engine.cpp - recording nodes and the backward pass.
//
// The graph: every non-leaf tensor that requires grad owns its grad_fn Node;
// a Node holds strong edges to the nodes of its inputs (their grad_fn, or for
// leaves an AccumulateGrad node that writes .grad).  Backward counts each
// node's consumers with an explicit stack (no recursion), then runs nodes in
// topological order, summing gradients per node (per output, for nodes with
// several) and freeing saved tensors and gradient buffers as soon as they are
// used.  autograd::grad captures the gradients reaching its inputs instead of
// accumulating them and runs only the nodes on the way to them; create_graph
// runs the rules with grad mode on, so the gradients have a history of their
// own (double backward), with saved tensors handed back with theirs.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "../internal.h"
#include "inplace.h"

namespace genesis::autograd {

namespace {

thread_local bool g_grad_enabled = true;
// Callbacks queued during the backward pass running on this thread (null outside one).
thread_local std::vector<std::function<void()>>* g_callbacks = nullptr;
// The backward running on this thread records itself; the node whose rule runs.
thread_local bool t_create_graph = false;
thread_local const std::shared_ptr<Node>* t_running = nullptr;

Error runtime_error(const std::string& msg) { return Error(GN_ERR_UNSUPPORTED, msg); }

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
    // A recording backward copies with clone(), which keeps g's history.
    if (!g_grad_enabled && g.impl().use_count() == 1 && g.is_contiguous() && gn_tensor_is_exclusive(g.handle()))
      leaf.grad = g.impl();
    else
      leaf.grad = g.clone().impl();
    return;
  }
  Tensor cur = Tensor::borrow(leaf.grad->h);
  if (g_grad_enabled && (g.requires_grad() || cur.requires_grad())) {
    leaf.grad = (Tensor::from_impl(leaf.grad) + g).impl();  // out of place: both histories kept
    return;
  }
  NoGradGuard no_grad;
  cur.add_(g);  // in place, as torch: the .grad tensor users hold sees the sum
}

// Reduce/cast a rule's gradient to the input's shape and dtype (broadcasting, promotion).
Tensor conform(Tensor g, const InputMeta& m) {
  if (g.shape() != m.shape) g = sum_to_size(g, m.shape);
  if (g.dtype() != m.dtype) g = g.to(m.dtype);
  return g;
}

// "genesis.FloatTensor", "genesis.cuda.DoubleTensor": torch's legacy names in messages.
std::string type_string(const Tensor& t) {
  std::string base;
  switch (t.dtype()) {
    case DType::f32: base = "FloatTensor"; break;
    case DType::f64: base = "DoubleTensor"; break;
    case DType::f16: base = "HalfTensor"; break;
    case DType::bf16: base = "BFloat16Tensor"; break;
    case DType::i64: base = "LongTensor"; break;
    case DType::i32: base = "IntTensor"; break;
    case DType::i8: base = "CharTensor"; break;
    case DType::u8: base = "ByteTensor"; break;
    default: base = "BoolTensor"; break;
  }
  const std::string dev = t.device().type();
  return dev == "cpu" ? "genesis." + base : "genesis." + dev + "." + base;
}

std::string shape_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

const char* kFreedMessage =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.";

}  // namespace

namespace detail {

std::shared_ptr<Node> edge_of(const Tensor& t) {
  const auto& impl = t.impl();
  if (impl->view_base) sync_view(*impl);
  if (impl->grad_fn) return impl->grad_fn;
  if (auto acc = impl->grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<Node>();
  acc->name = "accumulate_grad";
  acc->leaf = impl;
  impl->grad_accumulator = acc;
  return acc;
}

}  // namespace detail

using detail::edge_of;

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

// ------------------------------------------------------------ saved tensors

namespace {

// Which input of n a detached tensor with handle h is (-1: none); `name` breaks ties between
// inputs sharing a handle (x * x.detach()): "b" is the second operand.
int32_t input_index(const Node& n, const gn_tensor* h, const char* name) {
  int32_t first = -1;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].handle != h) continue;
    if (first < 0) first = static_cast<int32_t>(i);
    if (std::strcmp(name, "b") == 0 && i == 1) return 1;
  }
  return first;
}

}  // namespace

void Node::save(const char* tensor_name, Tensor t) {
  SavedInfo info;
  if (t.defined()) {
    // The counter is looked up through the tensor saved when it is known (an input: a weight saved
    // by every step finds it cached there), else through the detached alias.
    std::shared_ptr<Tensor::Impl> source;
    if (t.requires_grad()) {  // not detached: the tensor's own history
      source = t.impl();
      if (t.impl()->grad_fn.get() == this) {
        info.source = SavedInfo::kOutput;
        info.output_nr = t.impl()->output_nr;
      } else {
        info.source = SavedInfo::kOwn;
        info.edge = edge_of(t);
        info.output_nr = t.impl()->grad_fn ? t.impl()->output_nr : 0;
        info.original = t.impl();
      }
    } else if (out_handle && t.handle() == out_handle) {
      info.source = SavedInfo::kOutput;
    } else if (int32_t i = input_index(*this, t.handle(), tensor_name); i >= 0) {
      info.source = i;
      info.original = inputs[static_cast<size_t>(i)].tensor;
      source = info.original.lock();
    }
    info.counter = version_counter(source && source->h == t.handle() ? Tensor::from_impl(source) : t);
    info.version = info.counter->value.load(std::memory_order_relaxed);
    if (t.requires_grad()) t = t.detach();  // the rule reads data; the history stays in `info`
  }
  saved_tensors.push_back(std::move(t));
  saved_names.push_back(tensor_name);
  saved_info.push_back(std::move(info));
}

void Node::save_output(const char* tensor_name, Tensor t, uint32_t output_nr) {
  SavedInfo info;
  if (t.defined()) {
    info.counter = version_counter(t);
    info.version = info.counter->value.load(std::memory_order_relaxed);
    info.source = SavedInfo::kOutput;
    info.output_nr = output_nr;
    t = t.detach();
  }
  saved_tensors.push_back(std::move(t));
  saved_names.push_back(tensor_name);
  saved_info.push_back(std::move(info));
}

bool Node::has_saved(const char* tensor_name) const {
  for (const char* n : saved_names)
    if (std::strcmp(n, tensor_name) == 0) return true;
  return false;
}

const Tensor& Node::saved(const char* tensor_name) const {
  for (size_t i = 0; i < saved_names.size(); ++i)
    if (std::strcmp(saved_names[i], tensor_name) == 0) return saved_at(i);
  throw Error(GN_ERR_INTERNAL, std::string("[") + name + "] the recorded node saved no tensor '" + tensor_name +
                                   "' (saved: " + joined(saved_names) + ")");
}

const Tensor& Node::saved_at(size_t i) const {
  if (i >= saved_tensors.size()) throw runtime_error(kFreedMessage);
  if (i >= saved_info.size()) return saved_tensors[i];
  const SavedInfo& info = saved_info[i];
  const Tensor& t = saved_tensors[i];
  if (info.counter) {
    const uint32_t now = info.counter->value.load(std::memory_order_relaxed);
    if (now != info.version) {
      // torch's message: the tensor, the node that produced it (its current history), the versions.
      std::string producer;
      if (info.source == SavedInfo::kOutput) {
        producer = node_display_name(*this);
      } else if (auto orig = info.original.lock(); orig && orig->grad_fn) {
        producer = node_display_name(*orig->grad_fn);
      }
      const uint32_t nr = info.source == SavedInfo::kOutput ? info.output_nr
                          : info.original.lock()            ? info.original.lock()->output_nr
                                                            : 0;
      std::ostringstream os;
      os << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
         << type_string(t) << " " << shape_string(t.shape()) << "]";
      if (!producer.empty()) os << ", which is output " << nr << " of " << producer << ",";
      os << " is at version " << now << "; expected version " << info.version
         << " instead. Hint: the tensor was written in place (add_, mul_, x[...] = ..., ...) after "
         << (label.empty() ? std::string(name) : label) << " saved it; write into a clone() instead.";
      throw runtime_error(os.str());
    }
  }
  if (!t_create_graph || !g_grad_enabled || info.source == SavedInfo::kConstant || !t.defined()) return t;
  // A recording backward: the tensor with its history, so the gradient the rule builds has one.
  std::shared_ptr<Node> edge;
  uint32_t nr = info.output_nr;
  if (info.source == SavedInfo::kOutput) {
    if (!t_running || t_running->get() != this) return t;
    edge = *t_running;
  } else if (info.source == SavedInfo::kOwn) {
    edge = info.edge;
  } else {
    const size_t k = static_cast<size_t>(info.source);
    edge = k < next.size() ? next[k] : nullptr;
    nr = next_nr.empty() ? 0 : next_nr[k];
  }
  if (!edge) return t;
  if (unpacked.size() != saved_tensors.size()) unpacked.assign(saved_tensors.size(), Tensor());
  Tensor& u = unpacked[i];
  if (!u.defined()) {
    u = Tensor::borrow(t.handle());
    u.impl()->version = info.counter;
    u.impl()->version_storage = gn_tensor_storage_id(t.handle());
    u.impl()->requires_grad = true;
    if (edge->leaf) {
      u.impl()->grad_accumulator = edge;
    } else {
      u.impl()->grad_fn = edge;
      u.impl()->output_nr = nr;
    }
  }
  return u;
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }
bool in_create_graph() { return t_create_graph; }

// ---------------------------------------------------------------- recording

namespace {

// The edges and metadata of n's inputs.
void connect(Node* n, const Tensor* inputs, size_t n_inputs) {
  n->next.reserve(n_inputs);
  n->inputs.reserve(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    const Tensor& t = inputs[i];
    if (t.requires_grad()) {
      n->next.push_back(edge_of(t));
      if (const uint32_t nr = t.impl()->grad_fn ? t.impl()->output_nr : 0) {
        n->next_nr.resize(n_inputs, 0);
        n->next_nr[i] = nr;
      }
    } else {
      n->next.push_back(nullptr);
    }
    if (t.defined())
      n->inputs.push_back(InputMeta{t.shape(), t.dtype(), t.device(), t.impl(), t.handle()});
    else
      n->inputs.push_back(InputMeta{{}, DType::f32, Device(), {}, nullptr});
  }
}

}  // namespace

namespace detail {

std::shared_ptr<Node> record_always(const char* name, Rule rule, const Tensor* inputs, size_t n_inputs, Tensor& out) {
  auto n = std::make_shared<Node>();
  n->name = name;
  n->rule = rule;
  connect(n.get(), inputs, n_inputs);
  Tensor::Impl& o = *out.impl();
  o.requires_grad = true;
  o.grad_fn = n;
  o.output_nr = 0;
  n->out_handle = o.h;
  if (t_track_calls) note_recorded(o.h);
  return n;
}

}  // namespace detail

std::shared_ptr<Node> record(const char* name, Rule rule, const Tensor* inputs, size_t n_inputs, Tensor& out) {
  if (!g_grad_enabled) return nullptr;
  bool any = false;
  for (size_t i = 0; i < n_inputs && !any; ++i) any = inputs[i].requires_grad();
  if (!any || !is_floating(out.dtype())) return nullptr;
  return detail::record_always(name, rule, inputs, n_inputs, out);
}

std::shared_ptr<Node> record_function(std::string label, const std::vector<Tensor>& inputs,
                                      std::vector<Tensor>& outputs, const std::vector<bool>& dirty,
                                      std::function<std::vector<Tensor>(Node&, std::vector<Tensor>&)> apply) {
  auto n = std::make_shared<Node>();
  n->name = "function";
  n->label = std::move(label);
  n->apply = std::move(apply);
  n->n_outputs = static_cast<uint32_t>(std::max<size_t>(outputs.size(), 1));
  connect(n.get(), inputs.data(), inputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    Tensor& o = outputs[j];
    if (!o.defined()) continue;
    Tensor::Impl* impl;
    if (j < dirty.size() && dirty[j]) {  // an input written in place: its own history changes
      Tensor::Impl& d = *o.impl();
      if (d.view_base)
        throw runtime_error("mark_dirty() of a view is not supported: write into the base tensor instead");
      if (d.requires_grad && !d.grad_fn)
        throw runtime_error("a leaf Variable that requires grad is being used in an in-place operation.");
      ++d.history_gen;
      impl = &d;
    } else {  // a fresh alias: the function's own result (or an input it returned) keeps its identity
      Tensor alias = Tensor::borrow(o.handle());
      alias.impl()->version = o.impl()->version;
      alias.impl()->version_storage = o.impl()->version_storage;
      o = alias;
      impl = o.impl().get();
    }
    impl->requires_grad = true;
    impl->grad_fn = n;
    impl->output_nr = static_cast<uint32_t>(j);
    if (j == 0) n->out_handle = impl->h;
    if (detail::t_track_calls) detail::note_recorded(impl->h);
  }
  return n;
}

// --------------------------------------------------------------- the engine

namespace {

// What one backward pass does besides running rules.
enum class Mode {
  all,     // backward(): every leaf reached accumulates into .grad
  grad,    // autograd::grad: capture the gradients of `inputs`, accumulate nothing
  inputs,  // backward(inputs=): accumulate only into the .grad of `inputs`
};

// An input of grad()/backward(inputs=): the gradient reaching output nr of node goes to slot.
struct Capture {
  uint32_t nr;
  size_t slot;
};

// Per-node gradient sums, one per output.
struct Buffer {
  std::vector<Tensor> g;
  void add(uint32_t nr, Tensor gi) {
    if (g.size() <= nr) g.resize(nr + 1);
    g[nr] = g[nr].defined() ? g[nr] + gi : std::move(gi);
  }
};

// Sets the thread's recording mode and running node for one rule or one pass, restoring them after.
struct RunScope {
  bool prev_create;
  const std::shared_ptr<Node>* prev_running;
  RunScope(bool create, const std::shared_ptr<Node>* running) : prev_create(t_create_graph), prev_running(t_running) {
    t_create_graph = create;
    t_running = running;
  }
  ~RunScope() {
    t_create_graph = prev_create;
    t_running = prev_running;
  }
};

// Runs n's pre-hooks on its output gradients.
void run_pre_hooks(Node& n, std::vector<Tensor>& g) {
  if (!g.empty() && g[0].defined())
    for (const Hook& h : n.pre_hooks) {
      Tensor r = h(g[0]);
      if (r.defined()) g[0] = r;
    }
  for (const auto& [nr, h] : n.output_pre_hooks)
    if (nr < g.size() && g[nr].defined()) {
      Tensor r = h(g[nr]);
      if (r.defined()) g[nr] = r;
    }
}

// The gradients of n's inputs from its outputs' gradients g.
std::vector<Tensor> run_node(const std::shared_ptr<Node>& node, std::vector<Tensor>& g, bool create_graph) {
  Node& n = *node;
  RunScope scope(create_graph, &node);
  std::vector<Tensor> grads;
  if (n.apply) {
    g.resize(n.n_outputs);
    grads = n.apply(n, g);
  } else {
    Rule rule = n.rule;
    bool first_order = false;
    if (create_graph) {
      if (Rule alt = detail::differentiable_rule(rule)) rule = alt;
      const bool prev = detail::begin_tracking();
      try {
        grads = rule(n, g[0]);
      } catch (...) {
        detail::end_tracking(prev);
        throw;
      }
      first_order = detail::end_tracking(prev) || static_cast<bool>(n.closure);
    } else {
      grads = rule(n, g[0]);
    }
    if (first_order) detail::mark_first_order(node, g[0], grads);
  }
  n.unpacked.clear();
  return grads;
}

std::vector<Tensor> execute(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads, bool keep_graph,
                            bool create_graph, const std::vector<Tensor>& inputs, Mode mode, bool allow_unused) {
  // Root gradients: ones for one-element roots, else given with the root's shape.
  std::vector<Tensor> grads(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r.defined() || !r.requires_grad())
      throw runtime_error("element " + std::to_string(i) +
                          " of tensors does not require grad and does not have a "
                          "grad_fn");
    Tensor g = i < root_grads.size() ? root_grads[i] : Tensor();
    if (!g.defined()) {
      if (r.numel() != 1) throw runtime_error("grad can be implicitly created only for scalar outputs");
      g = ones_like(r);
    } else if (g.shape() != r.shape()) {
      throw Error(GN_ERR_SHAPE, "Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " +
                                    shape_string(g.shape()) + " and output[" + std::to_string(i) + "] has a shape of " +
                                    shape_string(r.shape()) + ".");
    }
    grads[i] = g;
  }
  // Rules build plain tensors, or record themselves (create_graph).
  const bool prev_grad = g_grad_enabled;
  g_grad_enabled = create_graph;
  struct GradModeRestore {
    bool prev;
    ~GradModeRestore() { g_grad_enabled = prev; }
  } restore{prev_grad};

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
  RunScope run_scope(create_graph, nullptr);

  // The inputs whose gradients are captured (grad) or accumulated (backward(inputs=)).
  std::unordered_map<Node*, std::vector<Capture>> captures;
  std::vector<std::shared_ptr<Node>> capture_nodes;  // keeps accumulators made here alive
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad())
      throw runtime_error("One of the differentiated Tensors does not require grad");
    std::shared_ptr<Node> e = edge_of(t);
    captures[e.get()].push_back({t.impl()->grad_fn ? t.impl()->output_nr : 0, i});
    capture_nodes.push_back(std::move(e));
  }

  std::vector<std::shared_ptr<Node>> starts;
  std::vector<uint32_t> start_nr;
  for (const Tensor& r : roots) {
    starts.push_back(edge_of(r));
    start_nr.push_back(r.impl()->grad_fn ? r.impl()->output_nr : 0);
  }

  // 1. How many edges reach each node (iterative DFS), and the nodes in order found.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const auto& s : starts)
    if (seen.insert(s.get()).second) stack.push_back(s.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const auto& nx : n->next) {
      if (!nx) continue;
      ++deps[nx.get()];
      if (seen.insert(nx.get()).second) stack.push_back(nx.get());
    }
  }
  // Which nodes lead to a captured input (grad, backward(inputs=)): only those run.
  std::unordered_set<Node*> needed;
  if (mode != Mode::all) {
    // Reverse topological order: a node is needed when one of its next is captured or needed.
    std::unordered_map<Node*, int> left = deps;
    std::vector<Node*> topo;
    std::vector<Node*> ready_nodes;
    for (const auto& s : starts)
      if (left[s.get()] == 0 && std::find(ready_nodes.begin(), ready_nodes.end(), s.get()) == ready_nodes.end())
        ready_nodes.push_back(s.get());
    while (!ready_nodes.empty()) {
      Node* n = ready_nodes.back();
      ready_nodes.pop_back();
      topo.push_back(n);
      for (const auto& nx : n->next)
        if (nx && --left[nx.get()] == 0) ready_nodes.push_back(nx.get());
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Node* n = *it;
      for (const auto& nx : n->next)
        if (nx && (captures.count(nx.get()) || needed.count(nx.get()))) {
          needed.insert(n);
          break;
        }
    }
  }

  // 2. Run nodes whose consumers have all contributed.
  std::vector<Tensor> captured(inputs.size());
  std::vector<bool> reached(inputs.size(), false);
  std::unordered_map<Node*, Buffer> buffers;
  std::vector<std::shared_ptr<Node>> ready;
  for (size_t i = 0; i < starts.size(); ++i) {
    buffers[starts[i].get()].add(start_nr[i], grads[i]);
    if (deps[starts[i].get()] == 0 && std::find(ready.begin(), ready.end(), starts[i]) == ready.end())
      ready.push_back(starts[i]);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    std::vector<Tensor> g;
    if (auto it = buffers.find(node.get()); it != buffers.end()) {
      g = std::move(it->second.g);
      buffers.erase(it);
    }
    g.resize(std::max<size_t>(node->n_outputs, 1));
    bool any = false;
    for (const Tensor& x : g) any = any || x.defined();
    // Captured inputs see the summed gradient arriving at their node (before its hooks, as torch).
    if (auto it = captures.find(node.get()); it != captures.end()) {
      for (const Capture& c : it->second) {
        if (c.nr >= g.size() || !g[c.nr].defined()) continue;
        reached[c.slot] = true;
        if (mode == Mode::grad) {
          captured[c.slot] = g[c.nr];
        } else if (!node->leaf) {  // backward(inputs=) on a non-leaf: its .grad, as a leaf's
          auto impl = inputs[c.slot].impl();
          Tensor cur = Tensor::from_impl(impl->grad);
          impl->grad = (cur.defined() ? cur + g[c.nr] : g[c.nr].clone()).impl();
        }
      }
    }
    std::vector<Tensor> in_grads;
    const bool runs = mode == Mode::all || needed.count(node.get()) ||
                      (mode == Mode::inputs && node->leaf && captures.count(node.get()));
    if (any && runs) {
      run_pre_hooks(*node, g);
      if (node->leaf) {
        accumulate(node->leaf, std::move(g[0]));
      } else {
        in_grads = run_node(node, g, create_graph);
        if (!keep_graph) {
          node->saved_tensors.clear();
          node->saved_info.clear();
          node->released = true;
        }
      }
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      const std::shared_ptr<Node>& nx = node->next[i];
      if (!nx) continue;
      if (i < in_grads.size() && in_grads[i].defined()) {
        Tensor gi = conform(std::move(in_grads[i]), node->inputs[i]);
        buffers[nx.get()].add(node->next_nr.empty() ? 0 : node->next_nr[i], std::move(gi));
      }
      if (--deps[nx.get()] == 0) ready.push_back(nx);
    }
  }
  if (mode == Mode::grad)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!reached[i] && !allow_unused)
        throw runtime_error(
            "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if "
            "this is the desired behavior.");
  if (scope.outer)
    for (size_t i = 0; i < callbacks.size(); ++i) callbacks[i]();  // a callback may queue more
  return captured;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  execute({root}, {gradient}, retain_graph, false, {}, Mode::all, false);
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  if (!grad_tensors.empty() && grad_tensors.size() != tensors.size())
    throw Error(GN_ERR_INVALID_ARGUMENT, "grad_tensors should have the same length as tensors (" +
                                             std::to_string(grad_tensors.size()) + " vs " +
                                             std::to_string(tensors.size()) + ")");
  execute(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph, inputs,
          inputs.empty() ? Mode::all : Mode::inputs, true);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw Error(GN_ERR_INVALID_ARGUMENT, "grad requires one grad_output per output (" +
                                             std::to_string(grad_outputs.size()) + " vs " +
                                             std::to_string(outputs.size()) + ")");
  if (inputs.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "grad requires at least one input");
  return execute(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, inputs, Mode::grad,
                 allow_unused);
}

void queue_callback(std::function<void()> fn) {
  if (!g_callbacks) throw Error(GN_ERR_INVALID_ARGUMENT, "[queue_callback] no backward pass is running on this thread");
  g_callbacks->push_back(std::move(fn));
}

std::string node_display_name(const Node& n) {
  if (!n.label.empty()) return n.label;
  if (std::strcmp(n.name, "copy_slices") == 0) return "CopySlices";
  if (std::strcmp(n.name, "copy_") == 0) return "CopyBackwards";
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
