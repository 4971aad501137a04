// adam_variants.cpp - Adamax, NAdam and RAdam in in-place tensor ops, torch 1.13's
// single-tensor updates.
#include "genesis/optim/adam_variants.hpp"

#include <cmath>

#include "checks.h"
#include "update.h"
#include "genesis/autograd.hpp"

namespace genesis::optim {

namespace {

using checks::check_adam_like;
using checks::non_negative;
using update::decayed;
using update::with_grads;
using update::zeros_state;

std::map<std::string, double> adam_like(double lr, std::pair<double, double> betas, double eps, double wd) {
  check_adam_like(lr, betas, eps, wd);
  return {{"lr", lr}, {"beta1", betas.first}, {"beta2", betas.second}, {"eps", eps}, {"weight_decay", wd}};
}

std::map<std::string, double> with(std::map<std::string, double> m, const std::string& k, double v) {
  m[k] = v;
  return m;
}

}  // namespace

// ---------------------------------------------------------------- Adamax

Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions o)
    : Optimizer(std::move(groups),
                with(adam_like(o.lr, o.betas, o.eps, o.weight_decay), "maximize", o.maximize ? 1.0 : 0.0)) {}

void Adamax::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], b1 = g["beta1"], b2 = g["beta2"], eps = g["eps"], wd = g["weight_decay"];
    const bool maximize = g["maximize"] != 0;
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& exp_avg = zeros_state(st, "exp_avg", p);
      Tensor& exp_inf = zeros_state(st, "exp_inf", p);
      const double step = static_cast<double>(++st.step);
      grad = decayed(grad, p, maximize, wd);
      exp_avg.mul_(b1).add_(grad, 1 - b1);
      Tensor bound = grad.abs();
      bound.add_(eps);
      exp_inf.mul_(b2);
      exp_inf.copy_(exp_inf.maximum(bound));
      const double clr = lr / (1 - std::pow(b1, step));
      p.sub_(exp_avg / exp_inf, clr);
    });
  }
}

// ----------------------------------------------------------------- NAdam

NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions o)
    : Optimizer(std::move(groups),
                with(adam_like(o.lr, o.betas, o.eps, o.weight_decay), "momentum_decay", o.momentum_decay)) {
  non_negative(o.momentum_decay, "momentum_decay value");
}

void NAdam::check_param_state(const ParamState& st, const Tensor& p, int64_t id) const {
  Optimizer::check_param_state(update::without_scalars(st, {"mu_product"}, id), p, id);
}

void NAdam::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], b1 = g["beta1"], b2 = g["beta2"], eps = g["eps"], wd = g["weight_decay"];
    const double psi = g["momentum_decay"];
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& exp_avg = zeros_state(st, "exp_avg", p);
      Tensor& exp_avg_sq = zeros_state(st, "exp_avg_sq", p);
      Tensor& mu_product = st.tensors["mu_product"];
      if (!mu_product.defined()) mu_product = scalar_tensor(1.0, {.dtype = p.dtype(), .device = p.device()});
      const double step = static_cast<double>(++st.step);
      const double bias_correction2 = 1 - std::pow(b2, step);
      if (wd != 0) grad = grad.add(p, wd);
      const double mu = b1 * (1. - 0.5 * std::pow(0.96, step * psi));
      const double mu_next = b1 * (1. - 0.5 * std::pow(0.96, (step + 1) * psi));
      mu_product.mul_(mu);
      const double mu_prod = mu_product.item<double>();
      const double mu_prod_next = mu_prod * mu * mu_next;
      exp_avg.mul_(b1).add_(grad, 1 - b1);
      exp_avg_sq.mul_(b2).add_(grad * grad, 1 - b2);
      Tensor denom = (exp_avg_sq / bias_correction2).sqrt();
      denom.add_(eps);
      p.sub_(grad / denom, lr * (1. - mu) / (1. - mu_prod));
      p.sub_(exp_avg / denom, lr * mu_next / (1. - mu_prod_next));
    });
  }
}

// ----------------------------------------------------------------- RAdam

RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions o)
    : Optimizer(std::move(groups), adam_like(o.lr, o.betas, o.eps, o.weight_decay)) {}

void RAdam::step() {
  NoGradGuard ng;
  for (auto& g : groups_) {
    const double lr = g["lr"], b1 = g["beta1"], b2 = g["beta2"], eps = g["eps"], wd = g["weight_decay"];
    with_grads(g, state_, [&](Tensor& p, Tensor grad, ParamState& st) {
      Tensor& exp_avg = zeros_state(st, "exp_avg", p);
      Tensor& exp_avg_sq = zeros_state(st, "exp_avg_sq", p);
      const double step = static_cast<double>(++st.step);
      const double bias_correction1 = 1 - std::pow(b1, step);
      const double bias_correction2 = 1 - std::pow(b2, step);
      if (wd != 0) grad = grad.add(p, wd);
      exp_avg.mul_(b1).add_(grad, 1 - b1);
      exp_avg_sq.mul_(b2).add_(grad * grad, 1 - b2);
      Tensor corrected = exp_avg / bias_correction1;
      // The length of the approximated simple moving average; the variance is tractable above 5.
      const double rho_inf = 2 / (1 - b2) - 1;
      const double rho_t = rho_inf - 2 * step * std::pow(b2, step) / bias_correction2;
      if (rho_t > 5.) {
        const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        Tensor denom = exp_avg_sq.sqrt();
        denom.add_(eps);
        Tensor adaptive_lr = std::sqrt(bias_correction2) / denom;
        p.sub_(corrected * lr * adaptive_lr * rect);
      } else {
        p.sub_(corrected * lr);
      }
    });
  }
}

}  // namespace genesis::optim
