// rmsprop.cpp - RMSprop in in-place tensor ops, torch 1.13's single-tensor update.
#include "genesis/optim/rmsprop.hpp"

#include "checks.h"
#include "genesis/autograd.hpp"

namespace genesis::optim {

using checks::invalid;
using checks::non_negative;

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"alpha", o.alpha},
                                    {"eps", o.eps},
                                    {"weight_decay", o.weight_decay},
                                    {"momentum", o.momentum},
                                    {"centered", o.centered ? 1.0 : 0.0},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  non_negative(o.lr, "learning rate");
  non_negative(o.eps, "epsilon value");
  non_negative(o.momentum, "momentum value");
  non_negative(o.weight_decay, "weight_decay value");
  non_negative(o.alpha, "alpha value");
}

void RMSprop::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], alpha = g["alpha"], eps = g["eps"], wd = g["weight_decay"], mom = g["momentum"];
    const bool centered = g["centered"] != 0, maximize = g["maximize"] != 0;
    for (auto& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& st = state_[p.impl().get()];
      Tensor& square_avg = st.tensors["square_avg"];
      if (!square_avg.defined()) square_avg = zeros_like(p);
      ++st.step;
      if (maximize) grad = grad.neg();
      if (wd != 0) grad = grad.add(p, wd);
      square_avg.mul_(alpha).add_(grad * grad, 1 - alpha);
      Tensor avg;
      if (centered) {
        Tensor& grad_avg = st.tensors["grad_avg"];
        if (!grad_avg.defined()) grad_avg = zeros_like(p);
        grad_avg.mul_(alpha).add_(grad, 1 - alpha);
        avg = square_avg.sub(grad_avg * grad_avg).sqrt();
      } else {
        avg = square_avg.sqrt();
      }
      avg.add_(eps);
      if (mom > 0) {
        Tensor& buf = st.tensors["momentum_buffer"];
        if (!buf.defined()) buf = zeros_like(p);
        buf.mul_(mom).add_(grad / avg);
        p.sub_(buf, lr);
      } else {
        p.sub_(grad / avg, lr);
      }
    }
  }
}

}  // namespace genesis::optim
