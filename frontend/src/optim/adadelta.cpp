// adadelta.cpp - Adadelta, Rprop and ASGD in in-place tensor ops, torch 1.13's
// single-tensor updates.
#include "genesis/optim/adadelta.hpp"

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "update.h"
#include "genesis/autograd.hpp"

namespace genesis::optim {

namespace {

using checks::invalid;
using checks::non_negative;
using checks::num;
using update::decayed;
using update::with_grads;
using update::zeros_state;

}  // namespace

// -------------------------------------------------------------- Adadelta

Adadelta::Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"rho", o.rho},
                                    {"eps", o.eps},
                                    {"weight_decay", o.weight_decay},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  non_negative(o.lr, "learning rate");
  if (!(o.rho >= 0 && o.rho <= 1)) throw invalid("Invalid rho value: " + num(o.rho));
  non_negative(o.eps, "epsilon value");
  non_negative(o.weight_decay, "weight_decay value");
}

void Adadelta::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], rho = g["rho"], eps = g["eps"], wd = g["weight_decay"];
    const bool maximize = g["maximize"] != 0;
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& square_avg = zeros_state(st, "square_avg", p);
      Tensor& acc_delta = zeros_state(st, "acc_delta", p);
      ++st.step;
      grad = decayed(grad, p, maximize, wd);
      square_avg.mul_(rho).add_(grad * grad, 1 - rho);
      Tensor std_dev = (square_avg + eps).sqrt();
      Tensor delta = (acc_delta + eps).sqrt() / std_dev * grad;
      acc_delta.mul_(rho).add_(delta * delta, 1 - rho);
      p.sub_(delta, lr);
    });
  }
}

// ----------------------------------------------------------------- Rprop

Rprop::Rprop(std::vector<ParamGroup> groups, RpropOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"etaminus", o.etas.first},
                                    {"etaplus", o.etas.second},
                                    {"step_size_min", o.step_sizes.first},
                                    {"step_size_max", o.step_sizes.second},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  non_negative(o.lr, "learning rate");
  if (!(0.0 < o.etas.first && o.etas.first < 1.0 && 1.0 < o.etas.second))
    throw invalid("Invalid eta values: " + num(o.etas.first) + ", " + num(o.etas.second));
}

void Rprop::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], etaminus = g["etaminus"], etaplus = g["etaplus"];
    const double lo = g["step_size_min"], hi = g["step_size_max"];
    const bool maximize = g["maximize"] != 0;
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& prev = zeros_state(st, "prev", p);
      Tensor& step_size = st.tensors["step_size"];
      if (!step_size.defined()) step_size = full_like(p, lr);
      ++st.step;
      if (maximize) grad = grad.neg();
      // The factor of each step size: etaplus where the gradient kept its sign, etaminus where it
      // flipped, 1 where either is zero (NaN stays NaN, as torch's masked writes leave it).
      Tensor sign = (grad * prev).sign();
      Tensor factor = where(sign > 0.0, full_like(sign, etaplus),
                            where(sign < 0.0, full_like(sign, etaminus), where(sign == 0.0, ones_like(sign), sign)));
      step_size.mul_(factor);
      step_size.copy_(step_size.clamp(lo, hi));
      // No step (and no memory of the gradient) where the sign flipped.
      grad = grad.masked_fill(factor == etaminus, 0.0);
      p.sub_(grad.sign() * step_size);
      prev.copy_(grad);
    });
  }
}

// ------------------------------------------------------------------ ASGD

ASGD::ASGD(std::vector<ParamGroup> groups, ASGDOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"lambd", o.lambd},
                                    {"alpha", o.alpha},
                                    {"t0", o.t0},
                                    {"weight_decay", o.weight_decay},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  non_negative(o.lr, "learning rate");
  non_negative(o.weight_decay, "weight_decay value");
}

void ASGD::check_param_state(const ParamState& st, const Tensor& p, int64_t id) const {
  Optimizer::check_param_state(update::without_scalars(st, {"eta", "mu"}, id), p, id);
}

void ASGD::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], lambd = g["lambd"], alpha = g["alpha"], t0 = g["t0"], wd = g["weight_decay"];
    const bool maximize = g["maximize"] != 0;
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      const Options like{.dtype = p.dtype(), .device = p.device()};
      Tensor& eta_t = st.tensors["eta"];
      Tensor& mu_t = st.tensors["mu"];
      if (!eta_t.defined()) eta_t = scalar_tensor(lr, like);
      if (!mu_t.defined()) mu_t = scalar_tensor(1.0, like);
      Tensor& ax = zeros_state(st, "ax", p);
      const double step = static_cast<double>(++st.step);
      grad = decayed(grad, p, maximize, wd);
      const double eta = eta_t.item<double>(), mu = mu_t.item<double>();
      p.mul_(1 - lambd * eta);
      p.sub_(grad, eta);
      if (mu != 1)
        ax.add_(p.sub(ax) * mu);
      else
        ax.copy_(p);
      eta_t.fill_(lr / std::pow(1 + lambd * lr * step, alpha));
      mu_t.fill_(1 / std::max(1.0, step - t0));
    });
  }
}

}  // namespace genesis::optim
