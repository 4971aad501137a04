// genesis/optim/adadelta.hpp - torch.optim.Adadelta, Rprop and ASGD: the updates composed
// from tensor ops.  Group options: Adadelta lr, rho, eps, weight_decay, maximize; Rprop lr,
// etaminus, etaplus, step_size_min, step_size_max, maximize; ASGD lr, lambd, alpha, t0,
// weight_decay, maximize.
#pragma once

#include <utility>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Adadelta options, defaults as torch.optim.Adadelta. */
struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;  ///< decay of the running averages
  double eps = 1e-6;
  double weight_decay = 0;
  bool maximize = false;
};

/** Adadelta (Zeiler): steps scaled by the ratio of running RMS of updates and gradients. */
class Adadelta : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(Adadelta, AdadeltaOptions)

 protected:
  /** {"square_avg", "acc_delta"}. */
  std::vector<std::string> state_names() const override { return {"square_avg", "acc_delta"}; }
};

/** Rprop options, defaults as torch.optim.Rprop. */
struct RpropOptions {
  double lr = 1e-2;                                   ///< the initial step size
  std::pair<double, double> etas = {0.5, 1.2};        ///< step-size factors on a sign change / no change
  std::pair<double, double> step_sizes = {1e-6, 50};  ///< least and greatest step size
  bool maximize = false;
};

/** Resilient backpropagation: per-element step sizes adapted from the gradient's sign. */
class Rprop : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(Rprop, RpropOptions)

 protected:
  /** {"prev", "step_size"}. */
  std::vector<std::string> state_names() const override { return {"prev", "step_size"}; }
};

/** ASGD options, defaults as torch.optim.ASGD. */
struct ASGDOptions {
  double lr = 1e-2;
  double lambd = 1e-4;  ///< decay term
  double alpha = 0.75;  ///< power of the eta update
  double t0 = 1e6;      ///< step from which averaging starts
  double weight_decay = 0;
  bool maximize = false;
};

/** Averaged SGD (Polyak-Juditsky): the average of the iterates in state "ax". */
class ASGD : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(ASGD, ASGDOptions)

 protected:
  /** {"eta", "mu", "ax"} (eta and mu hold one number each). */
  std::vector<std::string> state_names() const override { return {"eta", "mu", "ax"}; }
  /** As the base, but "eta" and "mu" hold one number. */
  void check_param_state(const ParamState& st, const Tensor& p, int64_t id) const override;
};

}  // namespace genesis::optim
