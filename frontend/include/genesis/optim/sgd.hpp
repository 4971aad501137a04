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

/** Stochastic gradient descent with momentum, dampening, Nesterov, weight decay, maximize. */
class SGD : public Optimizer {
 public:
  /** SGD over one group of params. */
  SGD(std::vector<Tensor> params, SGDOptions o = {}) : SGD(as_groups(std::move(params)), o) {}
  /** SGD over parameter groups (group options override o). */
  SGD(std::vector<ParamGroup> groups, SGDOptions o = {});
  /** One fused sgd_step per parameter with a gradient. */
  void step() override;
  /** "SGD". */
  const char* name() const override { return "SGD"; }

 protected:
  /** {"momentum_buffer"}. */
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
};

}  // namespace genesis::optim
