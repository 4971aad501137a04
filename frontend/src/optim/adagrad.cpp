// adagrad.cpp - Adagrad in in-place tensor ops, torch 1.13's single-tensor update.
#include "genesis/optim/adagrad.hpp"

#include "checks.h"
#include "update.h"
#include "genesis/autograd.hpp"

namespace genesis::optim {

using checks::non_negative;
using update::decayed;
using update::with_grads;

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"lr_decay", o.lr_decay},
                                    {"weight_decay", o.weight_decay},
                                    {"initial_accumulator_value", o.initial_accumulator_value},
                                    {"eps", o.eps},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  non_negative(o.lr, "learning rate");
  non_negative(o.lr_decay, "lr_decay value");
  non_negative(o.weight_decay, "weight_decay value");
  non_negative(o.initial_accumulator_value, "initial_accumulator_value value");
  non_negative(o.eps, "epsilon value");
  // torch fills every sum at construction, with the constructor's initial_accumulator_value.
  NoGradGuard ng;
  for (auto& g : groups_)
    for (auto& p : g.params) state_[p.impl().get()].tensors["sum"] = full_like(p, o.initial_accumulator_value);
}

void Adagrad::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], lr_decay = g["lr_decay"], wd = g["weight_decay"], eps = g["eps"];
    const bool maximize = g["maximize"] != 0;
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& sum = st.tensors["sum"];
      if (!sum.defined()) sum = full_like(p, defaults_.at("initial_accumulator_value"));  // a group added later
      ++st.step;
      grad = decayed(grad, p, maximize, wd);
      const double clr = lr / (1 + static_cast<double>(st.step - 1) * lr_decay);
      sum.add_(grad * grad);
      Tensor denom = sum.sqrt();
      denom.add_(eps);
      p.sub_(grad / denom, clr);
    });
  }
}

}  // namespace genesis::optim
