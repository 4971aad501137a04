// genesis/optim/optimizer.hpp - the Optimizer base (torch.optim.Optimizer):
// parameter groups with their own options, per-parameter state, zero_grad,
// state_dict / load_state_dict and a flat tensor form for checkpoints.
//
// Flat key scheme (flat_state / load_flat_state), every value a Tensor:
//   "state.<i>.<name>"       per-parameter state tensor (exp_avg, exp_avg_sq, momentum_buffer, ...)
//   "state.<i>.step"         0-d float64 step count (written once a parameter has taken a step)
//   "param_groups.<g>.<key>" 0-d float64 group option (lr, weight_decay, beta1, ...)
//   "param_groups.<g>.params" 1-D int64 parameter indices of group g
// <i> numbers parameters across groups in order, as torch's state_dict does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::optim {

/** One parameter group: its tensors plus its options (torch's param_group dict). */
struct ParamGroup {
  std::vector<Tensor> params;             ///< the tensors this group updates
  std::map<std::string, double> options;  ///< lr, weight_decay, ... (booleans as 0/1)

  /** A group of params; options not given here come from the optimizer's defaults. */
  ParamGroup(std::vector<Tensor> p, std::map<std::string, double> o = {})
      : params(std::move(p)), options(std::move(o)) {}
  /** Option `key` (throws genesis::Error when the group has no such option). */
  double& operator[](const std::string& key);
  /** Option `key`, read only (throws when absent). */
  double operator[](const std::string& key) const;
  /** True when the group has option `key`. */
  bool has(const std::string& key) const { return options.count(key) != 0; }
  /** Sets (or adds) option `key`. */
  void set(const std::string& key, double v) { options[key] = v; }
  /** The learning rate (shorthand for (*this)["lr"]). */
  double& lr() { return (*this)["lr"]; }
};

/** State of one parameter: a step count and named tensors (exp_avg, momentum_buffer, ...). */
struct ParamState {
  int64_t step = 0;                       ///< optimizer steps taken for this parameter
  std::map<std::string, Tensor> tensors;  ///< state tensors by name
};

/** torch's optimizer state_dict: state keyed by parameter index plus group options. */
struct OptimizerStateDict {
  std::map<int64_t, ParamState> state;                      ///< by parameter index across groups
  std::vector<std::map<std::string, double>> param_groups;  ///< options per group
  std::vector<std::vector<int64_t>> group_params;           ///< parameter indices per group
};

/** Base of all optimizers (torch.optim.Optimizer). */
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /** Performs one update of every parameter that has a gradient (no autograd recording). */
  virtual void step() = 0;
  /** The class name: "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop",
   * "ASGD", "LBFGS". */
  virtual const char* name() const = 0;
  /** Clears gradients: sets them undefined (default) or zeroes them in place. */
  void zero_grad(bool set_to_none = true);
  /** The parameter groups (options may be changed, e.g. by schedulers). */
  std::vector<ParamGroup>& param_groups() { return groups_; }
  /** The parameter groups, read only. */
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /** Appends a group; missing options come from the defaults. */
  void add_param_group(ParamGroup group);
  /** The default options of new groups. */
  const std::map<std::string, double>& defaults() const { return defaults_; }
  /** The state of parameter p (created empty when absent). */
  ParamState& state(const Tensor& p);

  /** Snapshot of the state (tensors shared, not copied) and group options. */
  OptimizerStateDict state_dict() const;
  /** Restores a state_dict (tensors copied onto each parameter's device/dtype); throws on mismatch. */
  void load_state_dict(const OptimizerStateDict& sd);
  /** The state_dict as flat named tensors (key scheme at the top of this header). */
  std::map<std::string, Tensor> flat_state() const;
  /** Restores from flat_state()'s form; throws genesis::Error on missing or mismatched entries. */
  void load_flat_state(const std::map<std::string, Tensor>& flat);
  /** Throws what load_state_dict would throw, changing nothing. */
  void check_state_dict(const OptimizerStateDict& sd) const;
  /** Parses flat_state()'s form and checks it (throws what load_flat_state would), changing nothing. */
  OptimizerStateDict check_flat_state(const std::map<std::string, Tensor>& flat) const;

 protected:
  /** Builds groups, filling missing options from defaults. */
  Optimizer(std::vector<ParamGroup> groups, std::map<std::string, double> defaults);
  /** Names of the per-parameter state tensors this optimizer keeps. */
  virtual std::vector<std::string> state_names() const = 0;
  /** Throws genesis::Error when loaded state `st` does not fit parameter p (index id): by default every
   * tensor must be named in state_names() and have p's shape. */
  virtual void check_param_state(const ParamState& st, const Tensor& p, int64_t id) const;
  /** Throws genesis::Error unless state tensor `name` of parameter id is defined with shape `want`. */
  static void check_state_shape(const std::string& name, const Tensor& t, const Shape& want, int64_t id);

  std::vector<ParamGroup> groups_;
  std::map<std::string, double> defaults_;
  std::map<const Tensor::Impl*, ParamState> state_;  ///< keyed by parameter identity
};

/** One group holding all of params (torch: a plain parameter list). */
std::vector<ParamGroup> as_groups(std::vector<Tensor> params);

/** The public members every torch-style optimizer class declares: a constructor over one plain
 * parameter list, one over parameter groups (group options override o), step() (one update of every
 * parameter with a gradient) and name() (the class name, as torch's). */
#define GENESIS_OPTIMIZER_MEMBERS(Class, Options)                                               \
  Class(std::vector<Tensor> params, Options o = {}) : Class(as_groups(std::move(params)), o) {} \
  Class(std::vector<ParamGroup> groups, Options o = {});                                        \
  void step() override;                                                                         \
  const char* name() const override { return #Class; }

}  // namespace genesis::optim
