// genesis/optim/lr_scheduler.hpp - learning-rate schedulers with torch 1.13's
// update rules (torch.optim.lr_scheduler) and HF's cosine-with-warmup.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** Base of the schedulers (torch's _LRScheduler): sets each group's "lr" on step(). */
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  /** Advances one epoch/step and writes the new lr into every group. */
  void step() { step_impl(std::nullopt); }
  /** Jumps to `epoch` (torch's deprecated step(epoch)): the closed form where the scheduler has one. */
  void step(int64_t epoch) { step_impl(epoch); }
  /** The lr of every group after the last step(). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** The epoch counter (-1 before the constructor's initial step). */
  int64_t last_epoch() const { return last_epoch_; }
  /** The initial lr of each group. */
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /** The optimizer whose groups this scheduler drives. */
  Optimizer& optimizer() const { return *opt_; }
  /** last_epoch, _step_count, base_lrs.<g>, _last_lr.<g> (JSON-able numbers). */
  virtual std::map<std::string, double> state_dict() const;
  /** Restores state_dict()'s numbers (throws when the group count differs). */
  virtual void load_state_dict(const std::map<std::string, double>& sd);

 protected:
  /** Records initial_lr per group (or checks it when resuming with last_epoch >= 0). */
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /** Tag of the constructor that leaves the groups alone (schedulers of schedulers). */
  struct Bare {};
  /** Attaches to optimizer without touching its groups; last_epoch as given. */
  LRScheduler(Optimizer& optimizer, int64_t last_epoch, Bare) : opt_(&optimizer), last_epoch_(last_epoch) {}
  /** Runs the first step (call at the end of derived constructors, as torch does). */
  void initial_step() {
    step_count_ = 0;
    step();
  }
  /** One step: the next epoch (nullopt) or a given one; writes the lrs into the groups. */
  virtual void step_impl(std::optional<int64_t> epoch);
  /** The lrs for the current last_epoch_ (torch's get_lr, chainable form). */
  virtual std::vector<double> get_lr() = 0;
  /** The lrs of last_epoch_ computed from base_lrs alone (torch's _get_closed_form_lr), where one exists. */
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  /** The current "lr" of every group. */
  std::vector<double> group_lrs() const;

  friend class SequentialLR;

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
  /** base_lr * gamma^(epoch // step_size). */
  std::optional<std::vector<double>> closed_form_lr() override;

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
  /** base_lr * gamma^(milestones passed). */
  std::optional<std::vector<double>> closed_form_lr() override;

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
  /** base_lr * gamma^epoch. */
  std::optional<std::vector<double>> closed_form_lr() override;

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
  /** eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2. */
  std::optional<std::vector<double>> closed_form_lr() override;

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
  /** base_lr * (start + (end - start) * min(total_iters, epoch) / total_iters). */
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double start_, end_;
  int64_t total_;
};

/** Cosine annealing with warm restarts (SGDR): periods T_0, T_0 * T_mult, ...; epochs may be fractional. */
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  /** CosineAnnealingWarmRestarts(optimizer, T_0, T_mult=1, eta_min=0). */
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0,
                              int64_t last_epoch = -1);
  /** Moves to a possibly fractional epoch (epoch + i / iters within an epoch), as torch's step(epoch). */
  void step_to(double epoch);
  /** The base state plus T_i and T_cur. */
  std::map<std::string, double> state_dict() const override;
  /** Restores state_dict()'s numbers. */
  void load_state_dict(const std::map<std::string, double>& sd) override;

 protected:
  /** The next epoch (restarting at the end of a period) or the given one. */
  void step_impl(std::optional<int64_t> epoch) override;
  /** eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2. */
  std::vector<double> get_lr() override;

 private:
  void apply();
  int64_t t0_, t_mult_;
  double eta_min_, t_i_, t_cur_;
};

/** lr multiplied by lambda(epoch) on every step after the first (one lambda, or one per group). */
class MultiplicativeLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  /** Same lambda for every group. */
  MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda, int64_t last_epoch = -1);
  /** One lambda per group. */
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  /** lr * lambda(last_epoch), lr unchanged at epoch 0. */
  std::vector<double> get_lr() override;

 private:
  std::vector<Lambda> lambdas_;
};

/** lr scaled by factor until epoch total_iters, then back to base_lr. */
class ConstantLR : public LRScheduler {
 public:
  /** ConstantLR(optimizer, factor=1/3, total_iters=5). */
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;
  /** base_lr * (factor, or 1 from total_iters on). */
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  double factor_;
  int64_t total_;
};

/** lr decayed by (1 - epoch / total_iters)^power, reaching 0 at total_iters. */
class PolynomialLR : public LRScheduler {
 public:
  /** PolynomialLR(optimizer, total_iters=5, power=1). */
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0, int64_t last_epoch = -1);

 protected:
  /** torch's chainable rule. */
  std::vector<double> get_lr() override;
  /** base_lr * (1 - min(total_iters, epoch) / total_iters)^power. */
  std::optional<std::vector<double>> closed_form_lr() override;

 private:
  int64_t total_;
  double power_;
};

/** Runs schedulers one after another, switching at the milestones (torch.optim.lr_scheduler.SequentialLR).
 * The schedulers are not owned: they must outlive this one. */
class SequentialLR : public LRScheduler {
 public:
  /** schedulers.size() == milestones.size() + 1, all on optimizer; restarts the first one. */
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
               int64_t last_epoch = -1);
  /** last_epoch, _last_lr.<g>, and every scheduler's state under "_schedulers.<i>.". */
  std::map<std::string, double> state_dict() const override;
  /** Restores state_dict()'s numbers, the schedulers' included. */
  void load_state_dict(const std::map<std::string, double>& sd) override;

 protected:
  /** Steps the scheduler of the current interval (from epoch 0 at a milestone); no explicit epoch. */
  void step_impl(std::optional<int64_t> epoch) override;
  /** The current lrs (the work is done by the schedulers). */
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

/** Steps several schedulers together, each on the lr the previous one left (torch's ChainedScheduler).
 * The schedulers are not owned: they must outlive this one. */
class ChainedScheduler : public LRScheduler {
 public:
  /** Chains schedulers (at least one, all on one optimizer); takes no initial step. */
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers);
  /** _last_lr.<g>, and every scheduler's state under "_schedulers.<i>.". */
  std::map<std::string, double> state_dict() const override;
  /** Restores state_dict()'s numbers, the schedulers' included. */
  void load_state_dict(const std::map<std::string, double>& sd) override;

 protected:
  /** Steps every scheduler in order; no explicit epoch. */
  void step_impl(std::optional<int64_t> epoch) override;
  /** The current lrs (the work is done by the schedulers). */
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  std::vector<LRScheduler*> schedulers_;
};

/** CyclicLR options, defaults as torch. */
struct CyclicLROptions {
  double step_size_up = 2000;                 ///< iterations of the rising half of a cycle
  std::optional<double> step_size_down;       ///< of the falling half (default step_size_up)
  std::string mode = "triangular";            ///< "triangular", "triangular2" or "exp_range" (ignored with scale_fn)
  double gamma = 1.0;                         ///< exp_range's factor gamma^iterations
  std::function<double(double)> scale_fn;     ///< custom amplitude scale, replaces mode
  std::string scale_mode = "cycle";           ///< scale_fn's argument: "cycle" number or "iterations"
  bool cycle_momentum = true;                 ///< cycle the groups' "momentum" inversely to the lr
  std::vector<double> base_momentum = {0.8};  ///< one value for all groups or one per group
  std::vector<double> max_momentum = {0.9};   ///< one value for all groups or one per group
};

/** The cyclical learning-rate policy (Smith): lr between base_lr and max_lr, momentum inversely. */
class CyclicLR : public LRScheduler {
 public:
  /** One base_lr / max_lr for all groups. */
  CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, CyclicLROptions o = {}, int64_t last_epoch = -1);
  /** One base_lr / max_lr per group (or one value for all). */
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lrs, std::vector<double> max_lrs, CyclicLROptions o = {},
           int64_t last_epoch = -1);

 protected:
  /** The lr of the current iteration; also writes the cycled momentum into the groups. */
  std::vector<double> get_lr() override;

 private:
  double scale(double x) const;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  CyclicLROptions o_;
  double total_size_ = 0, step_ratio_ = 0;
  bool scale_by_cycle_ = true;
};

/** ReduceLROnPlateau options, defaults as torch. */
struct ReduceLROnPlateauOptions {
  std::string mode = "min";            ///< "min": lower metric is better; "max": higher is better
  double factor = 0.1;                 ///< new_lr = lr * factor
  int64_t patience = 10;               ///< epochs without improvement tolerated
  double threshold = 1e-4;             ///< least improvement that counts
  std::string threshold_mode = "rel";  ///< "rel": relative to the best; "abs": absolute
  int64_t cooldown = 0;                ///< epochs to wait after a reduction
  std::vector<double> min_lr = {0};    ///< lower bound per group (one value for all, or one per group)
  double eps = 1e-8;                   ///< reductions smaller than this are skipped
};

/** Reduces the lr when a metric stops improving (torch 1.13's ReduceLROnPlateau; step takes the metric). */
class ReduceLROnPlateau {
 public:
  /** Watches optimizer's groups. */
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions o = {});
  /** Records this epoch's metric and reduces the lrs after more than `patience` bad epochs. */
  void step(double metric);
  /** step(metric) as epoch `epoch` (torch's deprecated form). */
  void step(double metric, int64_t epoch);
  /** The lr of every group after the last step() (the current ones before any). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** The epoch counter (0 before the first step). */
  int64_t last_epoch() const { return last_epoch_; }
  /** The best metric seen (inf or -inf before any). */
  double best() const { return best_; }
  /** Epochs since the last improvement. */
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  /** Epochs of cooldown left. */
  int64_t cooldown_counter() const { return cooldown_counter_; }
  /** Whether the last step reduced the lr of group i (for messages). */
  bool reduced(size_t i) const { return i < reduced_.size() && reduced_[i]; }
  /** The optimizer whose groups this scheduler drives. */
  Optimizer& optimizer() const { return *opt_; }
  /** Every setting and counter as numbers (mode 0 min / 1 max, threshold_mode 0 rel / 1 abs). */
  std::map<std::string, double> state_dict() const;
  /** Restores state_dict()'s numbers. */
  void load_state_dict(const std::map<std::string, double>& sd);

 private:
  bool is_better(double a) const;
  Optimizer* opt_;
  ReduceLROnPlateauOptions o_;
  std::vector<double> min_lrs_, last_lr_;
  std::vector<bool> reduced_;
  bool max_mode_ = false, abs_mode_ = false;
  double best_ = std::numeric_limits<double>::infinity();
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
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
