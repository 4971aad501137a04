// genesis/autograd.hpp - reverse-mode autograd: graph nodes, grad mode, the
// gradient checker.  Rules live in frontend/src/autograd/rules.cpp.
#pragma once

#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::autograd {

/** What backward needs to know about one input of a recorded op. */
struct InputMeta {
  Shape shape;
  DType dtype;
  Device device;
  std::weak_ptr<Tensor::Impl> tensor;  ///< the input recorded (Node::save recognises it among saved tensors)
  const gn_tensor* handle = nullptr;   ///< its handle when recorded (compared, never used)
};

/** Counts the in-place writes into one storage; every tensor viewing the storage shares it. */
struct VersionCounter {
  std::atomic<uint32_t> value{0};
};

struct Node;

/** What a node keeps about one saved tensor besides its data: the storage version it was saved
 * at (backward refuses a tensor written in place since) and where it came from, so that a
 * backward that records itself (create_graph) hands rules the tensor with its history. */
struct SavedInfo {
  static constexpr int32_t kConstant = -1;  ///< no history: a constant to the rules
  static constexpr int32_t kOutput = -2;    ///< the node's own output `output_nr`
  static constexpr int32_t kOwn = -3;       ///< a tensor with a history of its own (`edge`, `output_nr`)
  int32_t source = kConstant;               ///< an input's index, or one of the above
  uint32_t output_nr = 0;                   ///< kOutput, kOwn: which output of the producing node
  uint32_t version = 0;                     ///< the storage's version when saved
  std::shared_ptr<VersionCounter> counter;  ///< the storage's counter
  std::shared_ptr<Node> edge;               ///< kOwn: its grad_fn or its leaf's accumulator
  std::weak_ptr<Tensor::Impl> original;     ///< inputs and kOwn: the tensor (errors name its current grad_fn)
};
/** A gradient rule: grads of the inputs (undefined = none) from the output's grad. */
using Rule = std::vector<Tensor> (*)(Node& node, const Tensor& grad);

/** One recorded op with one differentiable output (the graph is a DAG of these).
 *
 * A rule reads what the forward kept by name: saved("out"), attr_ints("dims").  The names of
 * saved tensors are those of the op's row in derivatives.def; attributes are named by the op's
 * schema (keep_attrs) or, for frontend functions without one (views), by keep_attr.  Nothing is
 * read by position, so reordering an ops.def row cannot change what a rule sees. */
struct Node {
  const char* name = "";                           ///< op name ("mul"); "accumulate_grad" for leaves
  Rule rule = nullptr;                             ///< null for AccumulateGrad
  std::vector<std::shared_ptr<Node>> next;         ///< per input: its grad_fn / accumulator, or null
  std::vector<InputMeta> inputs;                   ///< per input: shape/dtype/device for reduction and casts
  std::vector<Tensor> saved_tensors;               ///< detached tensors the rule reads (freed after use)
  std::vector<const char*> saved_names;            ///< per saved tensor: its name ("x", "out", "index")
  const gn_op* op = nullptr;                       ///< the recorded op whose schema named `attrs`, if any
  std::vector<gn_attr_value> attrs;                ///< the kept attributes (the op's completed with its defaults)
  std::vector<const char*> attr_names;             ///< per kept attribute: its name
  std::vector<std::vector<int64_t>> attr_storage;  ///< the data of the ints attributes in `attrs`
  std::vector<Hook> pre_hooks;         ///< hooks on the output's gradient (non-leaf register_hook/retain_grad)
  std::shared_ptr<Tensor::Impl> leaf;  ///< AccumulateGrad: the leaf it writes
  bool released = false;               ///< saved tensors were freed by a backward
  std::function<std::vector<Tensor>(const Tensor&)> closure;  ///< the rule of a checkpointed region (see checkpoint)
  std::vector<SavedInfo> saved_info;                          ///< per saved tensor: its version and origin
  const gn_tensor* out_handle = nullptr;  ///< the output's handle when recorded (recognises a saved output)
  // ---- nodes with several outputs (Python autograd.Function): `apply` replaces `rule`
  uint32_t n_outputs = 1;         ///< outputs whose gradients the node receives
  std::vector<uint32_t> next_nr;  ///< per input: which output of next[i] it is (empty: output 0 everywhere)
  /** The backward of a node with several outputs: input gradients from one gradient per output (undefined = none). */
  std::function<std::vector<Tensor>(Node& node, std::vector<Tensor>& grads)> apply;
  std::vector<std::pair<uint32_t, Hook>> output_pre_hooks;  ///< pre_hooks of outputs other than 0
  std::string label;                     ///< the display name when set ("MyFunctionBackward"); else it follows `name`
  mutable std::vector<Tensor> unpacked;  ///< saved tensors with their history, while a recording backward runs
  /** Frees the chain of input nodes iteratively (deep graphs would overflow the stack). */
  ~Node();
  /** Keeps the attributes of a call of op: `given` (positional) completed with the schema's
   * defaults, each under its schema name. */
  void keep_attrs(const gn_op* recorded, std::initializer_list<gn_attr_value> given);
  /** Keeps one attribute under `name` (frontend functions without a schema; ints are copied). */
  void keep_attr(const char* attr_name, gn_attr_value value);
  /** The kept attribute named `name` (throws naming the op and the kept names when there is none). */
  const gn_attr_value& attr(const char* attr_name) const;
  /** attr(name) as an integer (throws when it is not one). */
  int64_t attr_int(const char* attr_name) const;
  /** attr(name) as a float (throws when it is not one). */
  double attr_float(const char* attr_name) const;
  /** attr(name) as an integer list (throws when it is not one). */
  std::vector<int64_t> attr_ints(const char* attr_name) const;
  /** The attributes of `backward` taken by name from the kept ones (defaults where not kept). */
  std::vector<gn_attr_value> attrs_for(const gn_op* backward) const;
  /** Saves t for the rule under `name`: its version, and its origin (an input of the node, its
   * output, a tensor with its own history, else a constant) for create_graph. */
  void save(const char* tensor_name, Tensor t);
  /** Saves t as output `output_nr` of this node (nodes with several outputs). */
  void save_output(const char* tensor_name, Tensor t, uint32_t output_nr);
  /** The tensor saved as `name` (throws when none was, when a backward freed it, or when it was
   * written in place since it was saved).  While a backward records itself it carries its history. */
  const Tensor& saved(const char* tensor_name) const;
  /** The i-th saved tensor, as saved() gives it. */
  const Tensor& saved_at(size_t i) const;
  /** Whether a tensor was saved as `name` (optional inputs: a norm's weight, an attention mask). */
  bool has_saved(const char* tensor_name) const;
};

/** Whether ops record for autograd on this thread. */
bool grad_enabled();
/** Turns recording on or off for this thread. */
void set_grad_enabled(bool on);

/** Disables recording for its lifetime (torch.no_grad). */
class NoGradGuard {
 public:
  /** Turns recording off. */
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
  /** Restores the previous mode. */
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/** Records `out` as produced by op `name` from `inputs` when any needs grad; returns the node or null. */
std::shared_ptr<Node> record(const char* name, Rule rule, const Tensor* inputs, size_t n_inputs, Tensor& out);
/** record() over a vector of inputs. */
inline std::shared_ptr<Node> record(const char* name, Rule rule, const std::vector<Tensor>& inputs, Tensor& out) {
  return record(name, rule, inputs.data(), inputs.size(), out);
}
/** record() over a braced list ({a, b}): no heap allocation when nothing needs grad. */
inline std::shared_ptr<Node> record(const char* name, Rule rule, std::initializer_list<Tensor> inputs, Tensor& out) {
  return record(name, rule, inputs.begin(), inputs.size(), out);
}
/** Runs backward from root with its gradient (iterative, topological, frees saved tensors). */
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);
/** torch.autograd.backward: gradients of `tensors` (grad_tensors may hold undefined entries for
 * one-element tensors) summed into the leaves' .grad, or only into the .grad of `inputs` when
 * given; retain_graph defaults to create_graph, which records the backward pass. */
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});
/** torch.autograd.grad: the gradients of `outputs` (weighted by grad_outputs) with respect to
 * `inputs`, returned rather than accumulated; an input the outputs do not reach is an error, or an
 * undefined Tensor with allow_unused. */
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

// ---- in-place ops (frontend/src/autograd/inplace.cpp)

/** The version counter of t's storage (created on first use; shared by every tensor over it). */
std::shared_ptr<VersionCounter> version_counter(const Tensor& t);
/** Counts one in-place write into t's storage. */
void bump_version(const Tensor& t);
/** Refuses an in-place write into a leaf that requires grad (or a view of one) while grad mode is
 * on, as torch does; call before writing. */
void check_inplace(const Tensor& self, const char* op);
/** Makes `node`-to-be the history of self after an in-place write: records op `name` with
 * `inputs` (inputs[0] is self as it was before the write) and self as its output; a view's write
 * becomes part of its base's history (CopySlices).  Bumps self's version.  Returns the node to
 * save tensors on, or null when nothing needs grad. */
std::shared_ptr<Node> record_inplace(const char* name, Rule rule, std::initializer_list<Tensor> inputs, Tensor& self);
/** Records a node computed outside the engine (a Python autograd.Function): each of `outputs`
 * becomes output i of the node (a fresh alias of it, or the tensor itself where dirty[i]: an
 * input the function wrote in place), `apply` computes the inputs' gradients. */
std::shared_ptr<Node> record_function(std::string label, const std::vector<Tensor>& inputs,
                                      std::vector<Tensor>& outputs, const std::vector<bool>& dirty,
                                      std::function<std::vector<Tensor>(Node&, std::vector<Tensor>&)> apply);
/** True while a backward that records itself (create_graph) runs on this thread. */
bool in_create_graph();
/** Runs fn once when the backward pass running on this thread finishes, after every gradient
 * was accumulated (torch's queue_callback; DDP waits for its all-reduces there).  Throws
 * outside a backward pass. */
void queue_callback(std::function<void()> fn);
/** Names (as in core/ops/ops.def) of the built-in ops that have a gradient rule. */
std::vector<std::string> differentiable_ops();
/** "<MulBackward0>" for a node named "mul". */
std::string node_display_name(const Node& n);

/** Activation checkpointing (torch.utils.checkpoint, non-reentrant semantics): runs fn(inputs)
 * without recording and keeps only the inputs; backward runs fn again with recording, under the
 * autocast state of the first call, and backpropagates through it, so the gradients of the
 * inputs and of every parameter fn uses are those of an ordinary call.  fn must compute the same
 * function both times (no random ops). */
Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs);
/** True while checkpoint() runs a region's first, unrecorded pass: code with inference-only fast
 * paths keyed on grad_enabled() must take its training path here, so that backward's recomputation
 * reproduces exactly the values the forward pass handed on. */
bool in_checkpoint_forward();

/** Options of gradcheck. */
struct GradcheckOptions {
  double eps = 1e-6;   ///< central-difference step
  double atol = 1e-5;  ///< absolute tolerance
  double rtol = 1e-3;  ///< relative tolerance
};

/** Compares autograd gradients of sum(fn(inputs) * w) (w random, fixed) with central
 * differences for every floating input that requires grad; inputs should be float64 (float32
 * needs a larger eps and tolerances, as gradcheck_sample uses).
 * Returns "" when they agree, else a description of the first mismatch. */
std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                      GradcheckOptions opts = {});

/** A finite-difference case of one differentiable op through the frontend, on any device and
 * float dtype (`genesis test-ops --mode grad`). */
struct GradSample {
  std::string op;                                             ///< op name in core/ops/ops.def
  std::function<std::vector<Tensor>(const Options&)> inputs;  ///< leaves that require grad, and constants
  std::function<Tensor(const std::vector<Tensor>&)> fn;       ///< calls the op
  bool rounds = false;                                        ///< fn rounds float64 through float32 (cast)
};
/** One sample per op of differentiable_ops() (GN_UNARY_GRAD rows get a generic one). */
const std::vector<GradSample>& grad_samples();
/** The sample of op, or nullptr. */
const GradSample* find_grad_sample(const std::string& op);
/** gradcheck of a sample with float64 or float32 inputs on device, with tolerances to match
 * the dtype; "" when autograd agrees with central differences. */
std::string gradcheck_sample(const GradSample& sample, DType dtype, const Device& device);

}  // namespace genesis::autograd

namespace genesis {
using autograd::NoGradGuard;
}  // namespace genesis
