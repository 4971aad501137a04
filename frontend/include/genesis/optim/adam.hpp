// genesis/optim/adam.hpp - torch.optim.Adam and AdamW on the fused adamw_step op.
// Group options: lr, beta1, beta2, eps, weight_decay, amsgrad, maximize.
#pragma once

#include <utility>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Adam options, defaults as torch.optim.Adam. */
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;
  bool amsgrad = false;  ///< use the running max of the second moments (state "max_exp_avg_sq")
};

/** AdamW options, defaults as torch.optim.AdamW (weight_decay 0.01). */
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool maximize = false;
  bool amsgrad = false;  ///< use the running max of the second moments (state "max_exp_avg_sq")
};

/** Adam (L2 weight decay added to the gradient): one fused adamw_step per parameter (amsgrad groups:
 * plain tensor ops). */
class Adam : public Optimizer {
 public:
  GENESIS_OPTIMIZER_MEMBERS(Adam, AdamOptions)

 protected:
  /** AdamW's constructor path. */
  Adam(std::vector<ParamGroup> groups, const std::map<std::string, double>& defaults, bool decoupled);
  /** {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"} (the last only in amsgrad groups). */
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}; }

 private:
  bool decoupled_ = false;
};

/** AdamW (decoupled weight decay). */
class AdamW : public Adam {
 public:
  /** AdamW over one group of params. */
  AdamW(std::vector<Tensor> params, AdamWOptions o = {}) : AdamW(as_groups(std::move(params)), o) {}
  /** AdamW over parameter groups (group options override o). */
  AdamW(std::vector<ParamGroup> groups, AdamWOptions o = {});
  /** "AdamW". */
  const char* name() const override { return "AdamW"; }
};

}  // namespace genesis::optim
