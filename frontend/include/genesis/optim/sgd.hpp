// genesis/optim/sgd.hpp - torch.optim.SGD on the fused sgd_step op.
#pragma once

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** SGD options, defaults as torch.optim.SGD (lr has no default there; 1e-3 here). */
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/** Stochastic gradient descent with momentum, dampening, Nesterov, weight decay, maximize: one fused
 * sgd_step per parameter. */
class SGD : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(SGD, SGDOptions)

 protected:
  /** {"momentum_buffer"}. */
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
};

}  // namespace genesis::optim
