// lbfgs.cpp - L-BFGS, torch 1.13's algorithm step for step (two-loop recursion,
// optional strong-Wolfe line search with cubic interpolation), over the parameters
// seen as one flat vector; scalars on the host as doubles, vectors as tensors.
#include "genesis/optim/lbfgs.hpp"

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"

namespace genesis::optim {

namespace {

using checks::invalid;

// Turns gradient recording on for its lifetime (the closure runs a backward pass).
class GradEnabled {
 public:
  GradEnabled() : prev_(autograd::grad_enabled()) { autograd::set_grad_enabled(true); }
  ~GradEnabled() { autograd::set_grad_enabled(prev_); }
  GradEnabled(const GradEnabled&) = delete;
  GradEnabled& operator=(const GradEnabled&) = delete;

 private:
  bool prev_;
};

double dot(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }
double abs_max(const Tensor& a) { return a.abs().max().item<double>(); }

// Minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to the bounds
// (by default the interval between x1 and x2); the midpoint when the cubic has no minimum.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2, const double* bounds) {
  double lo = 0, hi = 0;
  if (bounds) {
    lo = bounds[0];
    hi = bounds[1];
  } else if (x1 <= x2) {
    lo = x1;
    hi = x2;
  } else {
    lo = x2;
    hi = x1;
  }
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2.;
}

struct Eval {
  double loss;
  Tensor flat_grad;
};

struct LineSearch {
  double loss;
  Tensor flat_grad;
  double t;
  int64_t func_evals;
};

// torch's _strong_wolfe: a bracketing phase, then zoom until the strong Wolfe conditions hold.
template <class Obj>
LineSearch strong_wolfe(const Obj& obj, double t, const Tensor& d, double f, Tensor g, double gtd, double c1 = 1e-4,
                        double c2 = 0.9, double tolerance_change = 1e-9, int64_t max_ls = 25) {
  const double d_norm = abs_max(d);
  g = g.clone();
  Eval e = obj(t);
  double f_new = e.loss;
  Tensor g_new = e.flat_grad;
  int64_t ls_func_evals = 1;
  double gtd_new = dot(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  // One more evaluation of the search: the loss, gradient and slope at step length `at`.
  auto evaluate_at = [&](double at) {
    e = obj(at);
    f_new = e.loss;
    g_new = e.flat_grad;
    ++ls_func_evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  };
  while (ls_iter < max_ls) {
    if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev) ||
        (std::fabs(gtd_new) > -c2 * gtd && gtd_new >= 0)) {
      // Sufficient decrease fails, or the slope turned: the minimum lies in [t_prev, t].
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::fabs(gtd_new) <= -c2 * gtd) {  // the strong Wolfe conditions hold at t
      bracket = {t};
      bracket_f = {f_new};
      bracket_g = {g_new};
      done = true;
      break;
    }
    // Extrapolate within [t + 0.01 (t - t_prev), 10 t].
    const double bounds[2] = {t + 0.01 * (t - t_prev), t * 10};
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
    t_prev = tmp;
    f_prev = f_new;
    g_prev = g_new.clone();
    gtd_prev = gtd_new;
    evaluate_at(t);
  }
  if (ls_iter == max_ls) {
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // Zoom: shrink the bracket until a point satisfies the strong Wolfe conditions.
  bool insuf_progress = false;
  size_t low_pos = 0, high_pos = 1;
  if (!(bracket_f[0] <= bracket_f.back())) std::swap(low_pos, high_pos);
  while (!done && ls_iter < max_ls) {
    if (std::fabs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1], nullptr);
    const double b_max = std::max(bracket[0], bracket[1]), b_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (std::min(b_max - t, t - b_min) < eps) {
      // Interpolation close to a boundary: move away from it when progress is insufficient.
      if (insuf_progress || t >= b_max || t <= b_min) {
        t = std::fabs(t - b_max) < std::fabs(t - b_min) ? b_max - eps : b_min + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    evaluate_at(t);
    if (f_new > (f + c1 * t * gtd) || f_new >= bracket_f[low_pos]) {
      bracket[high_pos] = t;
      bracket_f[high_pos] = f_new;
      bracket_g[high_pos] = g_new.clone();
      bracket_gtd[high_pos] = gtd_new;
      low_pos = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high_pos = 1 - low_pos;
    } else {
      if (std::fabs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0) {
        bracket[high_pos] = bracket[low_pos];
        bracket_f[high_pos] = bracket_f[low_pos];
        bracket_g[high_pos] = bracket_g[low_pos];
        bracket_gtd[high_pos] = bracket_gtd[low_pos];
      }
      bracket[low_pos] = t;
      bracket_f[low_pos] = f_new;
      bracket_g[low_pos] = g_new.clone();
      bracket_gtd[low_pos] = gtd_new;
    }
  }
  return {bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals};
}

const std::vector<std::string> kStateNames = {"func_evals", "n_iter", "d",        "t",        "H_diag",
                                              "prev_loss",  "ro",     "old_dirs", "old_stps", "prev_flat_grad"};

}  // namespace

LBFGS::LBFGS(std::vector<ParamGroup> groups, LBFGSOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"max_iter", static_cast<double>(o.max_iter)},
                                    {"max_eval", static_cast<double>(o.max_eval.value_or(o.max_iter * 5 / 4))},
                                    {"tolerance_grad", o.tolerance_grad},
                                    {"tolerance_change", o.tolerance_change},
                                    {"history_size", static_cast<double>(o.history_size)},
                                    {"line_search_fn", o.line_search_fn.empty() ? 0.0 : 1.0}}) {
  if (!o.line_search_fn.empty() && o.line_search_fn != "strong_wolfe")
    throw Error(GN_ERR_UNSUPPORTED, "only 'strong_wolfe' is supported");
  if (groups_.size() != 1) throw invalid("LBFGS doesn't support per-parameter options (parameter groups)");
  if (o.history_size < 1) throw invalid("LBFGS: history_size must be positive, got " + std::to_string(o.history_size));
}

std::vector<std::string> LBFGS::state_names() const { return kStateNames; }

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const auto& p : groups_.at(0).params) n += p.numel();
  return n;
}

void LBFGS::check_param_state(const ParamState& st, const Tensor& p, int64_t id) const {
  if (st.tensors.empty()) return;
  if (!p.is_same(groups_.at(0).params.at(0)))
    throw invalid(
        "[optim] LBFGS keeps its state on the first parameter, the loaded state dict has state for parameter " +
        std::to_string(id));
  const int64_t n = numel();
  int64_t pairs = -1;
  for (const auto& [name, t] : st.tensors) {
    if (std::find(kStateNames.begin(), kStateNames.end(), name) == kStateNames.end())
      throw invalid("[optim] loaded state dict has unknown state '" + name + "' for parameter " + std::to_string(id));
    if (!t.defined()) check_state_shape(name, t, {}, id);
    if (name == "d" || name == "prev_flat_grad") {
      check_state_shape(name, t, {n}, id);
    } else if (name == "old_dirs" || name == "old_stps" || name == "ro") {
      const int64_t k = t.dim() >= 1 ? t.size(0) : -1;
      check_state_shape(name, t, name == "ro" ? Shape{k} : Shape{k, n}, id);
      if (pairs >= 0 && k != pairs)
        throw invalid("[optim] loaded LBFGS state has " + std::to_string(pairs) + " and " + std::to_string(k) +
                      " curvature pairs in 'old_dirs', 'old_stps' and 'ro'");
      pairs = k;
    } else if (t.numel() != 1) {
      throw invalid("[optim] loaded state '" + name + "' of parameter " + std::to_string(id) + " must hold one number");
    }
  }
  const bool any_pair = st.tensors.count("old_dirs") || st.tensors.count("old_stps") || st.tensors.count("ro");
  if (any_pair && !(st.tensors.count("old_dirs") && st.tensors.count("old_stps") && st.tensors.count("ro")))
    throw invalid("[optim] loaded LBFGS state needs all of 'old_dirs', 'old_stps' and 'ro', or none");
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const auto& p : groups_.at(0).params) {
    Tensor g = p.grad();
    views.push_back(g.defined() ? g.reshape({p.numel()})
                                : zeros({p.numel()}, {.dtype = p.dtype(), .device = p.device()}));
  }
  return views.size() == 1 ? views[0].clone() : nn::functional::cat(views, 0);
}

void LBFGS::add_grad(double step_size, const Tensor& update) {
  int64_t offset = 0;
  for (auto& p : groups_.at(0).params) {
    const int64_t n = p.numel();
    p.add_(update.slice(0, offset, offset + n).reshape(p.shape()), step_size);
    offset += n;
  }
}

void LBFGS::step() { throw invalid("LBFGS.step() needs a closure that re-evaluates the model and returns the loss"); }

Tensor LBFGS::step(const Closure& closure) {
  if (!closure) step();  // throws
  if (groups_.size() != 1) throw invalid("LBFGS doesn't support per-parameter options (parameter groups)");
  NoGradGuard ng;
  ParamGroup& group = groups_[0];
  std::vector<Tensor>& params = group.params;
  const double lr = group["lr"], tolerance_grad = group["tolerance_grad"];
  const double tolerance_change = group["tolerance_change"];
  const auto max_iter = static_cast<int64_t>(group["max_iter"]), max_eval = static_cast<int64_t>(group["max_eval"]);
  const auto history_size = static_cast<size_t>(group["history_size"]);
  const bool line_search = group["line_search_fn"] != 0;
  const Tensor& p0 = params.at(0);
  const Options f64{.dtype = DType::f64, .device = p0.device()};
  const Options i64{.dtype = DType::i64, .device = p0.device()};

  auto evaluate = [&]() {
    GradEnabled on;
    return closure();
  };

  // The state, read into host scalars and lists of vectors.
  ParamState& st = state_[p0.impl().get()];
  auto& S = st.tensors;
  auto number = [&](const char* k, double dflt) { return S.count(k) ? S.at(k).item<double>() : dflt; };
  auto func_evals = static_cast<int64_t>(number("func_evals", 0));
  auto state_n_iter = static_cast<int64_t>(number("n_iter", 0));
  auto save_counts = [&] {
    S["func_evals"] = scalar_tensor(static_cast<double>(func_evals), i64);
    S["n_iter"] = scalar_tensor(static_cast<double>(state_n_iter), i64);
  };

  const Tensor orig_loss = evaluate();
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  ++func_evals;
  Tensor flat_grad = gather_flat_grad();
  bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
  if (opt_cond) {  // already optimal
    save_counts();
    return orig_loss;
  }

  Tensor d = S.count("d") ? S.at("d") : Tensor();
  Tensor prev_flat_grad = S.count("prev_flat_grad") ? S.at("prev_flat_grad") : Tensor();
  double t = number("t", 0), h_diag = number("H_diag", 1), prev_loss = number("prev_loss", 0);
  std::vector<Tensor> old_dirs, old_stps;
  std::vector<double> ro;
  if (S.count("old_dirs")) {
    for (int64_t i = 0; i < S.at("old_dirs").size(0); ++i) {
      old_dirs.push_back(S.at("old_dirs").select(0, i));
      old_stps.push_back(S.at("old_stps").select(0, i));
    }
    ro = S.at("ro").tolist();
  }
  std::vector<double> al(history_size);

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++state_n_iter;
    // The direction: steepest descent first, then the two-loop recursion over the history.
    if (state_n_iter == 1) {
      d = flat_grad.neg();
      old_dirs.clear();
      old_stps.clear();
      ro.clear();
      h_diag = 1;
    } else {
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor s = d * t;
      const double ys = dot(y, s);
      if (ys > 1e-10) {  // keep the pair only with positive curvature
        if (old_dirs.size() == history_size) {
          old_dirs.erase(old_dirs.begin());
          old_stps.erase(old_stps.begin());
          ro.erase(ro.begin());
        }
        old_dirs.push_back(y);
        old_stps.push_back(s);
        ro.push_back(1. / ys);
        h_diag = ys / dot(y, y);
      }
      const size_t num_old = old_dirs.size();
      Tensor q = flat_grad.neg();
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot(old_stps[i], q) * ro[i];
        q.sub_(old_dirs[i], al[i]);
      }
      d = q * h_diag;
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot(old_dirs[i], d) * ro[i];
        d.add_(old_stps[i], al[i] - be_i);
      }
    }
    prev_flat_grad = flat_grad.clone();
    prev_loss = loss;

    // The step size: scaled by the gradient on the very first iteration, lr afterwards.
    t = state_n_iter == 1 ? std::min(1., 1. / flat_grad.abs().sum().item<double>()) * lr : lr;
    const double gtd = dot(flat_grad, d);
    if (gtd > -tolerance_change) break;  // not a descent direction

    int64_t ls_func_evals = 0;
    if (line_search) {
      std::vector<Tensor> x_init;
      for (const auto& p : params) x_init.push_back(p.clone());
      auto obj = [&](double step) {
        add_grad(step, d);
        const double f = evaluate().item<double>();
        Tensor g = gather_flat_grad();
        for (size_t i = 0; i < params.size(); ++i) params[i].copy_(x_init[i]);
        return Eval{f, g};
      };
      LineSearch ls = strong_wolfe(obj, t, d, loss, flat_grad, gtd);
      loss = ls.loss;
      flat_grad = ls.flat_grad;
      t = ls.t;
      ls_func_evals = ls.func_evals;
      add_grad(t, d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      add_grad(t, d);
      if (n_iter != max_iter) {  // re-evaluate, except after the last iteration
        loss = evaluate().item<double>();
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    func_evals += ls_func_evals;

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(d * t) <= tolerance_change) break;              // the step is too small
    if (std::fabs(loss - prev_loss) < tolerance_change) break;  // the loss stopped changing
  }

  save_counts();
  if (d.defined()) {
    S["d"] = d;
    S["t"] = scalar_tensor(t, f64);
    S["H_diag"] = scalar_tensor(h_diag, f64);
    S["prev_loss"] = scalar_tensor(prev_loss, f64);
    S["prev_flat_grad"] = prev_flat_grad;
  }
  if (old_dirs.empty()) {
    S.erase("old_dirs");
    S.erase("old_stps");
    S.erase("ro");
  } else {
    S["old_dirs"] = nn::functional::stack(old_dirs, 0);
    S["old_stps"] = nn::functional::stack(old_stps, 0);
    S["ro"] = tensor(ro, {static_cast<int64_t>(ro.size())}, f64);
  }
  return orig_loss;
}

}  // namespace genesis::optim
