// genesis/optim/lr_scheduler.hpp - learning-rate schedulers with torch 1.13's
// update rules (torch.optim.lr_scheduler) and HF's cosine-with-warmup.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Base of the schedulers (torch's _LRScheduler): sets each group's "lr" on step(). */
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  /** Advances one epoch/step and writes the new lr into every group. */
  void step();
  /** The lr of every group after the last step(). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** The epoch counter (-1 before the constructor's initial step). */
  int64_t last_epoch() const { return last_epoch_; }
  /** The initial lr of each group. */
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /** last_epoch, _step_count, base_lrs.<g>, _last_lr.<g> (JSON-able numbers). */
  virtual std::map<std::string, double> state_dict() const;
  /** Restores state_dict()'s numbers (throws when the group count differs). */
  virtual void load_state_dict(const std::map<std::string, double>& sd);

 protected:
  /** Records initial_lr per group (or checks it when resuming with last_epoch >= 0). */
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /** Runs the first step (call at the end of derived constructors, as torch does). */
  void initial_step() { step(); }
  /** The lrs for the current last_epoch_ (torch's get_lr, chainable form). */
  virtual std::vector<double> get_lr() = 0;

  Optimizer* opt_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

/** lr = base_lr * lambda(epoch), one lambda for all groups or one per group. */
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  /** Same lambda for every group. */
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch = -1);
  /** One lambda per group. */
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  /** base_lr * lambda(last_epoch). */
  std::vector<double> get_lr() override;

 private:
  std::vector<Lambda> lambdas_;
};

/** Multiplies the lr by gamma every step_size epochs. */
class StepLR : public LRScheduler {
 public:
  /** StepLR(optimizer, step_size, gamma=0.1). */
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

/** Multiplies the lr by gamma at each milestone (repeated milestones multiply again). */
class MultiStepLR : public LRScheduler {
 public:
  /** MultiStepLR(optimizer, milestones, gamma=0.1). */
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;

 private:
  std::map<int64_t, int> milestones_;
  double gamma_;
};

/** Multiplies the lr by gamma every epoch. */
class ExponentialLR : public LRScheduler {
 public:
  /** ExponentialLR(optimizer, gamma). */
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;

 private:
  double gamma_;
};

/** Cosine annealing from base_lr to eta_min over T_max epochs (SGDR without restarts). */
class CosineAnnealingLR : public LRScheduler {
 public:
  /** CosineAnnealingLR(optimizer, T_max, eta_min=0). */
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0, int64_t last_epoch = -1);

 protected:
  /** torch's recursive cosine rule. */
  std::vector<double> get_lr() override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/** Linearly scales the lr factor from start_factor to end_factor over total_iters. */
class LinearLR : public LRScheduler {
 public:
  /** LinearLR(optimizer, start_factor=1/3, end_factor=1, total_iters=5). */
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5,
           int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;

 private:
  double start_, end_;
  int64_t total_;
};

/** HF transformers' get_cosine_schedule_with_warmup: linear warmup, then cosine to 0. */
LambdaLR get_cosine_schedule_with_warmup(Optimizer& optimizer, int64_t num_warmup_steps, int64_t num_training_steps,
                                         double num_cycles = 0.5, int64_t last_epoch = -1);

/** OneCycleLR options, defaults as torch (total_steps or epochs * steps_per_epoch). */
struct OneCycleOptions {
  int64_t total_steps = 0;
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  double pct_start = 0.3;
  bool anneal_cos = true;  ///< anneal_strategy 'cos' (true) or 'linear'
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

/** The 1cycle policy: lr up to max_lr then down; momentum (or beta1) cycled inversely. */
class OneCycleLR : public LRScheduler {
 public:
  /** OneCycleLR with one max_lr for all groups. */
  OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleOptions o, int64_t last_epoch = -1);
  /** OneCycleLR with one max_lr per group. */
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, OneCycleOptions o, int64_t last_epoch = -1);
  /** The total number of steps of the cycle. */
  int64_t total_steps() const { return total_; }

 protected:
  /** torch's phase interpolation; also writes momentum/beta1 into the groups. */
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    const char *start_lr, *end_lr, *start_m, *end_m;
  };
  OneCycleOptions o_;
  int64_t total_ = 0;
  std::vector<Phase> phases_;
  bool use_beta1_ = false;
};

}  // namespace genesis::optim
