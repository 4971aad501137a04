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

/** Adagrad: per-element steps scaled by the root of the summed squared gradients.  The state starts
 * in the constructor, as torch's does. */
class Adagrad : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(Adagrad, AdagradOptions)

 protected:
  /** {"sum"}. */
  std::vector<std::string> state_names() const override { return {"sum"}; }
};

}  // namespace genesis::optim
