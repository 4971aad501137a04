// lr_scheduler.cpp - torch 1.13's scheduler rules (chainable get_lr forms).
#include "genesis/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "checks.h"

namespace genesis::optim {

namespace {

constexpr double kPi = 3.14159265358979323846;

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

// Python's a % m for m > 0.
int64_t py_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// The lr_lambdas of LambdaLR and MultiplicativeLR, which need one per parameter group.
template <class Lambda>
std::vector<Lambda> one_per_group(std::vector<Lambda> lambdas, size_t n_groups) {
  if (lambdas.size() != n_groups)
    throw invalid("Expected " + std::to_string(n_groups) + " lr_lambdas, but got " + std::to_string(lambdas.size()));
  return lambdas;
}

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

void LRScheduler::step_impl(std::optional<int64_t> epoch) {
  ++step_count_;
  std::vector<double> lrs;
  if (epoch) {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    lrs = closed ? *closed : get_lr();
  } else {
    ++last_epoch_;
    lrs = get_lr();
  }
  auto& groups = opt_->param_groups();
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i]["lr"] = lrs[i];
    last_lr_.push_back(lrs[i]);
  }
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> r;
  for (auto& g : opt_->param_groups()) r.push_back(g["lr"]);
  return r;
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
    : LRScheduler(optimizer, last_epoch), lambdas_(one_per_group(std::move(lr_lambdas), base_lrs_.size())) {
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

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  std::vector<double> r;
  const int64_t k = last_epoch_ >= 0 ? last_epoch_ / step_size_ : -((-last_epoch_ + step_size_ - 1) / step_size_);
  for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, (double)k));
  return r;
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> r;
  auto it = milestones_.find(last_epoch_);
  for (auto& g : opt_->param_groups())
    r.push_back(it == milestones_.end() ? g["lr"] : g["lr"] * std::pow(gamma_, it->second));
  return r;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  int passed = 0;  // milestones <= last_epoch, repeats counted (bisect_right over the sorted list)
  for (const auto& [m, n] : milestones_)
    if (m <= last_epoch_) passed += n;
  std::vector<double> r;
  for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, (double)passed));
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

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  std::vector<double> r;
  for (double base : base_lrs_) r.push_back(base * std::pow(gamma_, (double)last_epoch_));
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

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> r;
  for (double base : base_lrs_)
    r.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * (double)last_epoch_ / (double)t_max_)) / 2);
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

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> r;
  const double frac = (double)std::min(total_, last_epoch_) / (double)total_;
  for (double base : base_lrs_) r.push_back(base * (start_ + (end_ - start_) * frac));
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

namespace {

// The entries of sd under "<prefix>" with the prefix removed.
std::map<std::string, double> sub_state(const std::map<std::string, double>& sd, const std::string& prefix) {
  std::map<std::string, double> out;
  for (auto it = sd.lower_bound(prefix); it != sd.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    out[it->first.substr(prefix.size())] = it->second;
  return out;
}

double need(const std::map<std::string, double>& sd, const std::string& k) {
  auto it = sd.find(k);
  if (it == sd.end()) throw invalid("[lr_scheduler] load_state_dict: missing '" + k + "'");
  return it->second;
}

std::vector<double> need_list(const std::map<std::string, double>& sd, const std::string& k, size_t n) {
  if (sd.count(k + "." + std::to_string(n)))
    throw invalid("[lr_scheduler] load_state_dict: state has more parameter groups than the optimizer");
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = need(sd, k + "." + std::to_string(i));
  return v;
}

}  // namespace

// ------------------------------------------- CosineAnnealingWarmRestarts

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      t0_(T_0),
      t_mult_(T_mult),
      eta_min_(eta_min),
      t_i_((double)T_0),
      t_cur_((double)last_epoch) {
  if (T_0 <= 0) throw invalid("Expected positive integer T_0, but got " + std::to_string(T_0));
  if (T_mult < 1) throw invalid("Expected integer T_mult >= 1, but got " + std::to_string(T_mult));
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> r;
  for (double base : base_lrs_) r.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * t_cur_ / t_i_)) / 2);
  return r;
}

void CosineAnnealingWarmRestarts::apply() {
  ++step_count_;
  auto& groups = opt_->param_groups();
  const std::vector<double> lrs = get_lr();
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i]["lr"] = lrs[i];
    last_lr_.push_back(lrs[i]);
  }
}

void CosineAnnealingWarmRestarts::step_impl(std::optional<int64_t> epoch) {
  if (epoch) return step_to((double)*epoch);
  if (last_epoch_ < 0) return step_to(0);
  ++last_epoch_;
  t_cur_ += 1;
  if (t_cur_ >= t_i_) {
    t_cur_ -= t_i_;
    t_i_ *= (double)t_mult_;
  }
  apply();
}

void CosineAnnealingWarmRestarts::step_to(double epoch) {
  if (!(epoch >= 0)) throw invalid("Expected non-negative epoch, but got " + checks::num(epoch));
  const double T0 = (double)t0_, mult = (double)t_mult_;
  if (epoch >= T0) {
    if (t_mult_ == 1) {
      t_cur_ = std::fmod(epoch, T0);
    } else {
      const auto n = (int64_t)(std::log(epoch / T0 * (mult - 1) + 1) / std::log(mult));
      const double mult_n = std::pow(mult, (double)n);
      t_cur_ = epoch - T0 * (mult_n - 1) / (mult - 1);
      t_i_ = T0 * mult_n;
    }
  } else {
    t_i_ = T0;
    t_cur_ = epoch;
  }
  last_epoch_ = (int64_t)std::floor(epoch);
  apply();
}

std::map<std::string, double> CosineAnnealingWarmRestarts::state_dict() const {
  auto sd = LRScheduler::state_dict();
  sd["T_i"] = t_i_;
  sd["T_cur"] = t_cur_;
  return sd;
}

void CosineAnnealingWarmRestarts::load_state_dict(const std::map<std::string, double>& sd) {
  const double t_i = need(sd, "T_i"), t_cur = need(sd, "T_cur");
  LRScheduler::load_state_dict(sd);
  t_i_ = t_i;
  t_cur_ = t_cur;
}

// ----------------------------------------------------- MultiplicativeLR

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch)
    : MultiplicativeLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda), last_epoch) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), lambdas_(one_per_group(std::move(lr_lambdas), base_lrs_.size())) {
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> r = group_lrs();
  if (last_epoch_ > 0)
    for (size_t i = 0; i < r.size(); ++i) r[i] *= lambdas_[i](last_epoch_);
  return r;
}

// ----------------------------------------------------------- ConstantLR

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), factor_(factor), total_(total_iters) {
  if (factor > 1.0 || factor < 0) throw invalid("Constant multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> r = group_lrs();
  for (double& lr : r) {
    if (last_epoch_ == 0)
      lr *= factor_;
    else if (last_epoch_ == total_)
      lr *= 1.0 / factor_;
  }
  return r;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() {
  std::vector<double> r;
  for (double base : base_lrs_) r.push_back(base * (factor_ + (last_epoch_ >= total_ ? 1.0 : 0.0) * (1 - factor_)));
  return r;
}

// --------------------------------------------------------- PolynomialLR

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), total_(total_iters), power_(power) {
  if (total_iters <= 0) throw invalid("PolynomialLR: total_iters must be positive, got " + std::to_string(total_iters));
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> r = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_) return r;
  const double e = (double)last_epoch_, T = (double)total_;
  const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
  for (double& lr : r) lr *= decay;
  return r;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() {
  std::vector<double> r;
  const double T = (double)total_;
  for (double base : base_lrs_) r.push_back(base * std::pow(1.0 - (double)std::min(total_, last_epoch_) / T, power_));
  return r;
}

// --------------------------------------------------------- SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
                           int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch + 1, Bare{}),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    if (!schedulers_[i]) throw invalid("SequentialLR: scheduler " + std::to_string(i) + " is null");
    if (&schedulers_[i]->optimizer() != &optimizer)
      throw invalid(
          "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got schedulers at "
          "index " +
          std::to_string(i) + " to be different than the optimizer passed in.");
  }
  if (schedulers_.empty() || milestones_.size() != schedulers_.size() - 1)
    throw invalid(
        "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
        "points, but got number of schedulers " +
        std::to_string(schedulers_.size()) + " and the number of milestones to be equal to " +
        std::to_string(milestones_.size()));
  // Back to the initial lrs, every scheduler one step back, then the first one starts again.
  for (auto& g : optimizer.param_groups()) g["lr"] = g["initial_lr"];
  for (LRScheduler* s : schedulers_) --s->last_epoch_;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step_impl(std::optional<int64_t> epoch) {
  if (epoch) throw invalid("SequentialLR.step() takes no epoch");
  ++last_epoch_;
  ++step_count_;
  const auto idx =
      static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler* s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s->step(0);
  else
    s->step();
  last_lr_ = s->get_last_lr();
}

std::map<std::string, double> SequentialLR::state_dict() const {
  std::map<std::string, double> sd{{"last_epoch", (double)last_epoch_}};
  for (size_t i = 0; i < last_lr_.size(); ++i) sd["_last_lr." + std::to_string(i)] = last_lr_[i];
  for (size_t i = 0; i < milestones_.size(); ++i) sd["_milestones." + std::to_string(i)] = (double)milestones_[i];
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& [k, v] : schedulers_[i]->state_dict()) sd["_schedulers." + std::to_string(i) + "." + k] = v;
  return sd;
}

void SequentialLR::load_state_dict(const std::map<std::string, double>& sd) {
  const auto last = need_list(sd, "_last_lr", opt_->param_groups().size());
  const auto epoch = (int64_t)need(sd, "last_epoch");
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->load_state_dict(sub_state(sd, "_schedulers." + std::to_string(i) + "."));
  last_epoch_ = epoch;
  last_lr_ = last;
}

// ----------------------------------------------------- ChainedScheduler

namespace {

Optimizer& first_optimizer(const std::vector<LRScheduler*>& schedulers) {
  if (schedulers.empty() || !schedulers[0]) throw invalid("ChainedScheduler expects at least one scheduler");
  return schedulers[0]->optimizer();
}

}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers)
    : LRScheduler(first_optimizer(schedulers), 0, Bare{}), schedulers_(std::move(schedulers)) {
  for (size_t i = 1; i < schedulers_.size(); ++i)
    if (!schedulers_[i] || &schedulers_[i]->optimizer() != opt_)
      throw invalid(
          "ChainedScheduler expects all schedulers to belong to the same optimizer, but got schedulers at index 0 "
          "and " +
          std::to_string(i) + " to be different");
  last_lr_ = group_lrs();
}

void ChainedScheduler::step_impl(std::optional<int64_t> epoch) {
  if (epoch) throw invalid("ChainedScheduler.step() takes no epoch");
  ++last_epoch_;
  ++step_count_;
  for (LRScheduler* s : schedulers_) s->step();
  last_lr_ = group_lrs();
}

std::map<std::string, double> ChainedScheduler::state_dict() const {
  std::map<std::string, double> sd;
  for (size_t i = 0; i < last_lr_.size(); ++i) sd["_last_lr." + std::to_string(i)] = last_lr_[i];
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& [k, v] : schedulers_[i]->state_dict()) sd["_schedulers." + std::to_string(i) + "." + k] = v;
  return sd;
}

void ChainedScheduler::load_state_dict(const std::map<std::string, double>& sd) {
  const auto last = need_list(sd, "_last_lr", opt_->param_groups().size());
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->load_state_dict(sub_state(sd, "_schedulers." + std::to_string(i) + "."));
  last_lr_ = last;
}

// ------------------------------------------------------------- CyclicLR

namespace {

// One value per group: a single value repeats (torch's _format_param).
std::vector<double> per_group(const std::vector<double>& v, size_t n, const char* name) {
  if (v.size() == n) return v;
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  throw invalid("expected " + std::to_string(n) + " values for " + name + ", got " + std::to_string(v.size()));
}

// Sets the groups' lr to base_lr before the base constructor records initial_lr (as torch does).
Optimizer& start_at(Optimizer& optimizer, const std::vector<double>& base_lrs, int64_t last_epoch) {
  auto& groups = optimizer.param_groups();
  const auto lrs = per_group(base_lrs, groups.size(), "base_lr");
  if (last_epoch == -1)
    for (size_t i = 0; i < groups.size(); ++i) groups[i]["lr"] = lrs[i];
  return optimizer;
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, CyclicLROptions o, int64_t last_epoch)
    : CyclicLR(optimizer, std::vector<double>{base_lr}, std::vector<double>{max_lr}, std::move(o), last_epoch) {}

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lrs, std::vector<double> max_lrs, CyclicLROptions o,
                   int64_t last_epoch)
    : LRScheduler(start_at(optimizer, base_lrs, last_epoch), last_epoch), o_(std::move(o)) {
  auto& groups = optimizer.param_groups();
  const size_t n = groups.size();
  const std::vector<double> bases = per_group(base_lrs, n, "base_lr");
  max_lrs_ = per_group(max_lrs, n, "max_lr");
  const double up = o_.step_size_up, down = o_.step_size_down.value_or(up);
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  if (o_.scale_fn) {
    scale_by_cycle_ = o_.scale_mode == "cycle";
  } else if (o_.mode == "triangular" || o_.mode == "triangular2") {
    scale_by_cycle_ = true;
  } else if (o_.mode == "exp_range") {
    scale_by_cycle_ = false;
  } else {
    throw invalid("mode is invalid and scale_fn is None");
  }
  if (o_.cycle_momentum) {
    if (!optimizer.defaults().count("momentum"))
      throw invalid("optimizer must support momentum with `cycle_momentum` option enabled");
    const auto base_m = per_group(o_.base_momentum, n, "base_momentum");
    if (last_epoch == -1)
      for (size_t i = 0; i < n; ++i) groups[i]["momentum"] = base_m[i];
    for (auto& g : groups) base_momentums_.push_back(g["momentum"]);
    max_momentums_ = per_group(o_.max_momentum, n, "max_momentum");
  }
  initial_step();
  base_lrs_ = bases;
}

double CyclicLR::scale(double x) const {
  if (o_.scale_fn) return o_.scale_fn(x);
  if (o_.mode == "triangular") return 1.;
  if (o_.mode == "triangular2") return 1 / std::pow(2., x - 1);
  return std::pow(o_.gamma, x);  // exp_range
}

std::vector<double> CyclicLR::get_lr() {
  const double e = (double)last_epoch_;
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1. + e / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double s = scale(scale_by_cycle_ ? cycle : e);
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    const double base_height = (max_lrs_[i] - base_lrs_[i]) * scale_factor;
    lrs.push_back(base_lrs_[i] + base_height * s);
  }
  if (o_.cycle_momentum) {
    auto& groups = opt_->param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * scale_factor;
      groups[i]["momentum"] = max_momentums_[i] - base_height * s;
    }
  }
  return lrs;
}

// ---------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions o)
    : opt_(&optimizer), o_(std::move(o)) {
  if (o_.factor >= 1.0) throw invalid("Factor should be < 1.0.");
  const size_t n = optimizer.param_groups().size();
  if (o_.min_lr.size() != 1 && o_.min_lr.size() != n)
    throw invalid("expected " + std::to_string(n) + " min_lrs, got " + std::to_string(o_.min_lr.size()));
  min_lrs_ = per_group(o_.min_lr, n, "min_lr");
  if (o_.mode != "min" && o_.mode != "max") throw invalid("mode " + o_.mode + " is unknown!");
  if (o_.threshold_mode != "rel" && o_.threshold_mode != "abs")
    throw invalid("threshold mode " + o_.threshold_mode + " is unknown!");
  max_mode_ = o_.mode == "max";
  abs_mode_ = o_.threshold_mode == "abs";
  best_ = max_mode_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  for (auto& g : optimizer.param_groups()) last_lr_.push_back(g["lr"]);
}

bool ReduceLROnPlateau::is_better(double a) const {
  if (!max_mode_) return abs_mode_ ? a < best_ - o_.threshold : a < best_ * (1. - o_.threshold);
  return abs_mode_ ? a > best_ + o_.threshold : a > best_ * (o_.threshold + 1.);
}

void ReduceLROnPlateau::step(double metric) { step(metric, last_epoch_ + 1); }

void ReduceLROnPlateau::step(double metric, int64_t epoch) {
  last_epoch_ = epoch;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = opt_->param_groups();
  reduced_.assign(groups.size(), false);
  if (num_bad_epochs_ > o_.patience) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i]["lr"];
      const double new_lr = std::max(old_lr * o_.factor, min_lrs_[i]);
      if (old_lr - new_lr > o_.eps) {
        groups[i]["lr"] = new_lr;
        reduced_[i] = true;
      }
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (auto& g : groups) last_lr_.push_back(g["lr"]);
}

std::map<std::string, double> ReduceLROnPlateau::state_dict() const {
  std::map<std::string, double> sd{{"factor", o_.factor},
                                   {"patience", (double)o_.patience},
                                   {"threshold", o_.threshold},
                                   {"cooldown", (double)o_.cooldown},
                                   {"eps", o_.eps},
                                   {"mode", max_mode_ ? 1.0 : 0.0},
                                   {"threshold_mode", abs_mode_ ? 1.0 : 0.0},
                                   {"best", best_},
                                   {"num_bad_epochs", (double)num_bad_epochs_},
                                   {"cooldown_counter", (double)cooldown_counter_},
                                   {"last_epoch", (double)last_epoch_}};
  for (size_t i = 0; i < min_lrs_.size(); ++i) sd["min_lrs." + std::to_string(i)] = min_lrs_[i];
  for (size_t i = 0; i < last_lr_.size(); ++i) sd["_last_lr." + std::to_string(i)] = last_lr_[i];
  return sd;
}

void ReduceLROnPlateau::load_state_dict(const std::map<std::string, double>& sd) {
  const size_t n = opt_->param_groups().size();
  const auto min_lrs = need_list(sd, "min_lrs", n), last = need_list(sd, "_last_lr", n);
  ReduceLROnPlateauOptions o = o_;
  o.factor = need(sd, "factor");
  o.patience = (int64_t)need(sd, "patience");
  o.threshold = need(sd, "threshold");
  o.cooldown = (int64_t)need(sd, "cooldown");
  o.eps = need(sd, "eps");
  const double mode = need(sd, "mode"), threshold_mode = need(sd, "threshold_mode");
  const double best = need(sd, "best"), bad = need(sd, "num_bad_epochs"), cool = need(sd, "cooldown_counter");
  const double epoch = need(sd, "last_epoch");
  o_ = o;
  max_mode_ = mode != 0;
  abs_mode_ = threshold_mode != 0;
  o_.mode = max_mode_ ? "max" : "min";
  o_.threshold_mode = abs_mode_ ? "abs" : "rel";
  best_ = best;
  num_bad_epochs_ = (int64_t)bad;
  cooldown_counter_ = (int64_t)cool;
  last_epoch_ = (int64_t)epoch;
  min_lrs_ = min_lrs;
  last_lr_ = last;
}

}  // namespace genesis::optim
