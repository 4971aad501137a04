// rmsprop.cpp - RMSprop in in-place tensor ops, torch 1.13's single-tensor update.
#include "genesis/optim/rmsprop.hpp"

#include "checks.h"
#include "update.h"
#include "genesis/autograd.hpp"

namespace genesis::optim {

using checks::invalid;
using checks::non_negative;
using update::decayed;
using update::with_grads;
using update::zeros_state;

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
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& square_avg = zeros_state(st, "square_avg", p);
      ++st.step;
      grad = decayed(grad, p, maximize, wd);
      square_avg.mul_(alpha).add_(grad * grad, 1 - alpha);
      Tensor avg;
      if (centered) {
        Tensor& grad_avg = zeros_state(st, "grad_avg", p);
        grad_avg.mul_(alpha).add_(grad, 1 - alpha);
        avg = square_avg.sub(grad_avg * grad_avg).sqrt();
      } else {
        avg = square_avg.sqrt();
      }
      avg.add_(eps);
      if (mom > 0) {
        Tensor& buf = zeros_state(st, "momentum_buffer", p);
        buf.mul_(mom).add_(grad / avg);
        p.sub_(buf, lr);
      } else {
        p.sub_(grad / avg, lr);
      }
    });
  }
}

}  // namespace genesis::optim
