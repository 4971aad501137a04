// genesis/optim/adam_variants.hpp - torch.optim.Adamax, NAdam and RAdam: the updates
// composed from tensor ops.  Group options: lr, beta1, beta2, eps, weight_decay, plus
// maximize (Adamax) and momentum_decay (NAdam).
#pragma once

#include <utility>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Adamax options, defaults as torch.optim.Adamax. */
struct AdamaxOptions {
  double lr = 2e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;
};

/** Adamax: Adam with the infinity norm of the gradients (state "exp_avg", "exp_inf"). */
class Adamax : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(Adamax, AdamaxOptions)

 protected:
  /** {"exp_avg", "exp_inf"}. */
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_inf"}; }
};

/** NAdam options, defaults as torch.optim.NAdam. */
struct NAdamOptions {
  double lr = 2e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;  ///< psi of the momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * psi))
};

/** NAdam: Adam with Nesterov momentum (state "exp_avg", "exp_avg_sq" and the 0-d "mu_product"). */
class NAdam : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(NAdam, NAdamOptions)

 protected:
  /** {"exp_avg", "exp_avg_sq", "mu_product"}. */
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq", "mu_product"}; }
  /** As the base, but "mu_product" holds one number. */
  void check_param_state(const ParamState& st, const Tensor& p, int64_t id) const override;
};

/** RAdam options, defaults as torch.optim.RAdam. */
struct RAdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
};

/** RAdam: Adam with the variance of the adaptive lr rectified (state "exp_avg", "exp_avg_sq"). */
class RAdam : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(RAdam, RAdamOptions)

 protected:
  /** {"exp_avg", "exp_avg_sq"}. */
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
};

}  // namespace genesis::optim
