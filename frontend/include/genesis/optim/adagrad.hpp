// genesis/optim/adagrad.hpp - torch.optim.Adagrad: the update composed from tensor ops.
// Group options: lr, lr_decay, weight_decay, initial_accumulator_value, eps, maximize.
#pragma once

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Adagrad options, defaults as torch.optim.Adagrad. */
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;  ///< step k uses lr / (1 + (k - 1) * lr_decay)
  double weight_decay = 0;
  double initial_accumulator_value = 0;  ///< start of the squared-gradient sum (state "sum")
  double eps = 1e-10;
  bool maximize = false;
};

/** Adagrad: per-element steps scaled by the root of the summed squared gradients. */
class Adagrad : public Optimizer {
 public:
  /** Adagrad over one group of params. */
  Adagrad(std::vector<Tensor> params, AdagradOptions o = {}) : Adagrad(as_groups(std::move(params)), o) {}
  /** Adagrad over parameter groups (group options override o); the state starts here, as torch's does. */
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions o = {});
  /** One update of every parameter with a gradient. */
  void step() override;
  /** "Adagrad". */
  const char* name() const override { return "Adagrad"; }

 protected:
  /** {"sum"}. */
  std::vector<std::string> state_names() const override { return {"sum"}; }
};

}  // namespace genesis::optim
