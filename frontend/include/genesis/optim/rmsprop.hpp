// genesis/optim/rmsprop.hpp - torch.optim.RMSprop: the update composed from tensor ops.
// Group options: lr, alpha, eps, weight_decay, momentum, centered, maximize.
#pragma once

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** RMSprop options, defaults as torch.optim.RMSprop. */
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;  ///< smoothing constant of the squared-gradient average
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;  ///< divide by an estimate of the gradient's variance (state "grad_avg")
  bool maximize = false;
};

/** RMSprop (Hinton), optionally centered (Graves) and with momentum. */
class RMSprop : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(RMSprop, RMSpropOptions)

 protected:
  /** {"square_avg", "momentum_buffer", "grad_avg"} (the last two only when used). */
  std::vector<std::string> state_names() const override { return {"square_avg", "momentum_buffer", "grad_avg"}; }
};

}  // namespace genesis::optim
