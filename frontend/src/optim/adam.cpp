// adam.cpp - Adam and AdamW: one fused in-place adamw_step call per parameter
// (semantics in backends/reference/optim.cpp); amsgrad in plain tensor ops.
#include <cmath>

#include "../internal.h"
#include "checks.h"
#include "genesis/optim/adam.hpp"

namespace genesis::optim {

namespace {

using checks::check_adam_like;

std::map<std::string, double> adam_defaults(double lr, std::pair<double, double> betas, double eps, double wd,
                                            bool amsgrad, bool maximize) {
  check_adam_like(lr, betas, eps, wd);
  return {{"lr", lr},           {"beta1", betas.first},           {"beta2", betas.second},           {"eps", eps},
          {"weight_decay", wd}, {"amsgrad", amsgrad ? 1.0 : 0.0}, {"maximize", maximize ? 1.0 : 0.0}};
}

// One Adam/AdamW step with amsgrad, torch 1.13's single-tensor update: the denominator uses the
// running max of exp_avg_sq.  The fused adamw_step kernel has no amsgrad input, so this path is
// plain in-place tensor ops (several kernels per parameter: correct, not fast).
void amsgrad_step(Tensor& p, Tensor g, Tensor& m, Tensor& v, Tensor& vmax, double lr, double b1, double b2, double eps,
                  double wd, int64_t step, bool decoupled) {
  if (wd != 0) {
    if (decoupled)
      p.mul_(1 - lr * wd);  // AdamW: decay the weights
    else
      g = g.add(p, wd);  // Adam: L2 term in the gradient
  }
  m.mul_(b1).add_(g, 1 - b1);
  v.mul_(b2).add_(g * g, 1 - b2);
  vmax.copy_(vmax.maximum(v));
  const double bias1 = 1 - std::pow(b1, static_cast<double>(step));
  const double bias2_sqrt = std::sqrt(1 - std::pow(b2, static_cast<double>(step)));
  Tensor denom = vmax.sqrt() / bias2_sqrt + eps;
  p.add_(m / denom, -lr / bias1);
}

}  // namespace

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions o)
    : Adam(std::move(groups), adam_defaults(o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize), false) {}

Adam::Adam(std::vector<ParamGroup> groups, const std::map<std::string, double>& defaults, bool decoupled)
    : Optimizer(std::move(groups), defaults), decoupled_(decoupled) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions o)
    : Adam(std::move(groups), adam_defaults(o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize), true) {}

void Adam::step() {
  NoGradGuard ng;
  const gn_op* op = GN_OP_HANDLE("adamw_step");
  for (auto& g : groups_) {
    const double lr = g["lr"], b1 = g["beta1"], b2 = g["beta2"], eps = g["eps"], wd = g["weight_decay"];
    const int64_t maximize = g["maximize"] != 0;
    // Checkpoints from before the option have no "amsgrad": it was off.
    const bool amsgrad = g.has("amsgrad") && g["amsgrad"] != 0;
    for (auto& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& st = state_[p.impl().get()];
      Tensor& m = st.tensors["exp_avg"];
      Tensor& v = st.tensors["exp_avg_sq"];
      if (!m.defined()) m = zeros_like(p);
      if (!v.defined()) v = zeros_like(p);
      ++st.step;
      if (amsgrad) {
        Tensor& vmax = st.tensors["max_exp_avg_sq"];
        if (!vmax.defined()) vmax = zeros_like(p);
        amsgrad_step(p, maximize ? grad.neg() : grad, m, v, vmax, lr, b1, b2, eps, wd, st.step, decoupled_);
        continue;
      }
      detail::call(op, {&p, &grad, &m, &v},
                   {gn_attr_float(lr), gn_attr_float(b1), gn_attr_float(b2), gn_attr_float(eps), gn_attr_float(wd),
                    gn_attr_int(st.step), gn_attr_int(decoupled_ ? 1 : 0), gn_attr_int(maximize)},
                   0);
    }
  }
}

}  // namespace genesis::optim
