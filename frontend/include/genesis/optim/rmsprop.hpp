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
  /** RMSprop over one group of params. */
  RMSprop(std::vector<Tensor> params, RMSpropOptions o = {}) : RMSprop(as_groups(std::move(params)), o) {}
  /** RMSprop over parameter groups (group options override o). */
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions o = {});
  /** One update of every parameter with a gradient. */
  void step() override;
  /** "RMSprop". */
  const char* name() const override { return "RMSprop"; }

 protected:
  /** {"square_avg", "momentum_buffer", "grad_avg"} (the last two only when used). */
  std::vector<std::string> state_names() const override { return {"square_avg", "momentum_buffer", "grad_avg"}; }
};

}  // namespace genesis::optim
