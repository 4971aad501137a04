// lr_scheduler.cpp - torch 1.13's scheduler rules (chainable get_lr forms).
#include "genesis/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>

namespace genesis::optim {

namespace {

constexpr double kPi = 3.14159265358979323846;

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

// Python's a % m for m > 0.
int64_t py_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

// ------------------------------------------------------------------ base

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch) : opt_(&optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].has("initial_lr")) groups[i].set("initial_lr", groups[i]["lr"]);
    } else if (!groups[i].has("initial_lr")) {
      throw invalid("param 'initial_lr' is not specified in param_groups[" + std::to_string(i) +
                    "] when resuming an optimizer");
    }
    base_lrs_.push_back(groups[i]["initial_lr"]);
  }
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  const std::vector<double> lrs = get_lr();
  auto& groups = opt_->param_groups();
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i]["lr"] = lrs[i];
    last_lr_.push_back(lrs[i]);
  }
}

std::map<std::string, double> LRScheduler::state_dict() const {
  std::map<std::string, double> sd{{"last_epoch", (double)last_epoch_}, {"_step_count", (double)step_count_}};
  for (size_t i = 0; i < base_lrs_.size(); ++i) sd["base_lrs." + std::to_string(i)] = base_lrs_[i];
  for (size_t i = 0; i < last_lr_.size(); ++i) sd["_last_lr." + std::to_string(i)] = last_lr_[i];
  return sd;
}

void LRScheduler::load_state_dict(const std::map<std::string, double>& sd) {
  const size_t n = base_lrs_.size();
  auto get = [&](const std::string& k) {
    auto it = sd.find(k);
    if (it == sd.end()) throw invalid("[lr_scheduler] load_state_dict: missing '" + k + "'");
    return it->second;
  };
  if (sd.count("base_lrs." + std::to_string(n)))
    throw invalid("[lr_scheduler] load_state_dict: state has more parameter groups than the optimizer");
  std::vector<double> base(n), last(n);
  for (size_t i = 0; i < n; ++i) {
    base[i] = get("base_lrs." + std::to_string(i));
    last[i] = get("_last_lr." + std::to_string(i));
  }
  last_epoch_ = (int64_t)get("last_epoch");
  step_count_ = (int64_t)get("_step_count");
  base_lrs_ = base;
  last_lr_ = last;
}

// ------------------------------------------------------------- LambdaLR

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), lambdas_(std::move(lr_lambdas)) {
  if (lambdas_.size() != base_lrs_.size())
    throw invalid("Expected " + std::to_string(base_lrs_.size()) + " lr_lambdas, but got " +
                  std::to_string(lambdas_.size()));
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> r;
  for (size_t i = 0; i < base_lrs_.size(); ++i) r.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return r;
}

// ------------------------------------------------------ Step / MultiStep

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) throw invalid("StepLR: step_size must be positive");
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> r;
  for (auto& g : opt_->param_groups())
    r.push_back(last_epoch_ == 0 || last_epoch_ % step_size_ != 0 ? g["lr"] : g["lr"] * gamma_);
  return r;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  for (int64_t m : milestones) ++milestones_[m];
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> r;
  auto it = milestones_.find(last_epoch_);
  for (auto& g : opt_->param_groups())
    r.push_back(it == milestones_.end() ? g["lr"] : g["lr"] * std::pow(gamma_, it->second));
  return r;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> r;
  for (auto& g : opt_->param_groups()) r.push_back(last_epoch_ == 0 ? g["lr"] : g["lr"] * gamma_);
  return r;
}

// ---------------------------------------------------------------- cosine

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), t_max_(T_max), eta_min_(eta_min) {
  if (T_max <= 0) throw invalid("CosineAnnealingLR: T_max must be positive");
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> r;
  auto& groups = opt_->param_groups();
  const double e = (double)last_epoch_, T = (double)t_max_;
  for (size_t i = 0; i < groups.size(); ++i) {
    const double lr = groups[i]["lr"], base = base_lrs_[i];
    if (last_epoch_ == 0)
      r.push_back(lr);
    else if (step_count_ == 1 && last_epoch_ > 0)
      r.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(e * kPi / T)) / 2);
    else if (py_mod(last_epoch_ - 1 - t_max_, 2 * t_max_) == 0)
      r.push_back(lr + (base - eta_min_) * (1 - std::cos(kPi / T)) / 2);
    else
      r.push_back((1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) + eta_min_);
  }
  return r;
}

// -------------------------------------------------------------- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), start_(start_factor), end_(end_factor), total_(total_iters) {
  if (start_factor > 1.0 || start_factor <= 0)
    throw invalid("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  if (end_factor > 1.0 || end_factor < 0) throw invalid("Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> r;
  for (auto& g : opt_->param_groups()) {
    const double lr = g["lr"];
    if (last_epoch_ == 0)
      r.push_back(lr * start_);
    else if (last_epoch_ > total_)
      r.push_back(lr);
    else
      r.push_back(lr * (1.0 + (end_ - start_) / (total_ * start_ + (last_epoch_ - 1) * (end_ - start_))));
  }
  return r;
}

LambdaLR get_cosine_schedule_with_warmup(Optimizer& optimizer, int64_t num_warmup_steps, int64_t num_training_steps,
                                         double num_cycles, int64_t last_epoch) {
  auto f = [=](int64_t step) {
    if (step < num_warmup_steps) return (double)step / (double)std::max<int64_t>(1, num_warmup_steps);
    const double progress =
        (double)(step - num_warmup_steps) / (double)std::max<int64_t>(1, num_training_steps - num_warmup_steps);
    return std::max(0.0, 0.5 * (1.0 + std::cos(kPi * num_cycles * 2.0 * progress)));
  };
  return LambdaLR(optimizer, f, last_epoch);
}

// ------------------------------------------------------------ OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleOptions o, int64_t last_epoch)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.param_groups().size(), max_lr), o, last_epoch) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, OneCycleOptions o, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), o_(o) {
  auto& groups = optimizer.param_groups();
  if (o.total_steps > 0)
    total_ = o.total_steps;
  else if (o.epochs > 0 && o.steps_per_epoch > 0)
    total_ = o.epochs * o.steps_per_epoch;
  else
    throw invalid("You must define either total_steps OR (epochs AND steps_per_epoch)");
  if (o.pct_start < 0 || o.pct_start > 1)
    throw invalid("Expected float between 0 and 1 pct_start, but got " + std::to_string(o.pct_start));
  if (max_lrs.size() != groups.size())
    throw invalid("expected " + std::to_string(groups.size()) + " values for max_lr, got " +
                  std::to_string(max_lrs.size()));
  const double T = (double)total_;
  if (o.three_phase)
    phases_ = {{o.pct_start * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * o.pct_start * T - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {T - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  else
    phases_ = {{o.pct_start * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {T - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  if (last_epoch == -1) {
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i].set("initial_lr", max_lrs[i] / o.div_factor);
      groups[i].set("max_lr", max_lrs[i]);
      groups[i].set("min_lr", max_lrs[i] / o.div_factor / o.final_div_factor);
      base_lrs_[i] = groups[i]["initial_lr"];
    }
  }
  if (o.cycle_momentum) {
    const auto& d = optimizer.defaults();
    if (!d.count("momentum") && !d.count("beta1"))
      throw invalid("optimizer must support momentum with `cycle_momentum` option enabled");
    use_beta1_ = d.count("beta1") != 0;
    if (last_epoch == -1)
      for (auto& g : groups) {
        g.set(use_beta1_ ? "beta1" : "momentum", o.max_momentum);
        g.set("max_momentum", o.max_momentum);
        g.set("base_momentum", o.base_momentum);
      }
  }
  initial_step();
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  if (step_num > total_)
    throw invalid("Tried to step " + std::to_string(step_num) + " times. The specified number of total steps is " +
                  std::to_string(total_));
  auto anneal = [&](double start, double end, double pct) {
    if (o_.anneal_cos) return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
    return (end - start) * pct + start;
  };
  std::vector<double> r;
  for (auto& g : opt_->param_groups()) {
    double start_step = 0, lr = 0, mom = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step_num <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (step_num - start_step) / (ph.end_step - start_step);
        lr = anneal(g[ph.start_lr], g[ph.end_lr], pct);
        if (o_.cycle_momentum) mom = anneal(g[ph.start_m], g[ph.end_m], pct);
        break;
      }
      start_step = ph.end_step;
    }
    r.push_back(lr);
    if (o_.cycle_momentum) g[use_beta1_ ? "beta1" : "momentum"] = mom;
  }
  return r;
}

}  // namespace genesis::optim
