// genesis/optim/lbfgs.hpp - torch.optim.LBFGS: limited-memory BFGS over all parameters
// as one flat vector, with an optional strong-Wolfe line search; step() takes a closure
// that re-evaluates the loss.  One parameter group only.
//
// State (on the first parameter, as torch keeps it), every value a Tensor:
//   "func_evals", "n_iter"   0-d int64 counts of closure calls and iterations
//   "d", "prev_flat_grad"     1-D (N) last direction and flat gradient, N = total numel
//   "t", "H_diag", "prev_loss" 0-d last step size, Hessian diagonal estimate, loss
//   "old_dirs", "old_stps"    (k, N) curvature pairs y and s, oldest first (absent while k = 0)
//   "ro"                      (k) 1 / (y . s)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

/** LBFGS options, defaults as torch.optim.LBFGS. */
struct LBFGSOptions {
  double lr = 1;
  int64_t max_iter = 20;            ///< iterations per step()
  std::optional<int64_t> max_eval;  ///< closure calls per step() (default max_iter * 5 / 4)
  double tolerance_grad = 1e-7;     ///< stop when max |gradient| <= this
  double tolerance_change = 1e-9;   ///< stop when the loss or the step changes less than this
  int64_t history_size = 100;       ///< curvature pairs kept
  std::string line_search_fn;       ///< "" (fixed step lr) or "strong_wolfe"
};

/** L-BFGS (torch's port of minFunc). */
class LBFGS : public Optimizer {
 public:
  /** Re-evaluates the model: zero the gradients, compute the loss, backward, return the loss. */
  using Closure = std::function<Tensor()>;

  /** LBFGS over params. */
  LBFGS(std::vector<Tensor> params, LBFGSOptions o = {}) : LBFGS(as_groups(std::move(params)), o) {}
  /** LBFGS over one parameter group (more than one throws, as in torch). */
  LBFGS(std::vector<ParamGroup> groups, LBFGSOptions o = {});
  /** Runs up to max_iter iterations, calling closure with gradients enabled; returns its first loss. */
  Tensor step(const Closure& closure);
  /** Throws: LBFGS needs a closure. */
  void step() override;
  /** "LBFGS". */
  const char* name() const override { return "LBFGS"; }

 protected:
  /** The state entries listed at the top of this header. */
  std::vector<std::string> state_names() const override;
  /** Shapes of the entries above against the total numel of the parameters. */
  void check_param_state(const ParamState& st, const Tensor& p, int64_t id) const override;

 private:
  int64_t numel() const;
  Tensor gather_flat_grad() const;
  void add_grad(double step_size, const Tensor& update);
};

}  // namespace genesis::optim
