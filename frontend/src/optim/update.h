// update.h - the step loop and state checks shared by the optimizers composed from tensor ops.
#pragma once

#include <initializer_list>
#include <map>
#include <string>

#include "checks.h"
#include "genesis/optim/optimizer.hpp"

namespace genesis::optim::update {

/** State tensor `name` of st, created as zeros like p on first use. */
inline Tensor& zeros_state(ParamState& st, const char* name, const Tensor& p) {
  Tensor& t = st.tensors[name];
  if (!t.defined()) t = zeros_like(p);
  return t;
}

/** f(p, grad, state of p) for every parameter p of group g that has a gradient. */
template <class F>
void with_grads(ParamGroup& g, std::map<const Tensor::Impl*, ParamState>& state, F f) {
  for (auto& p : g.params) {
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    f(p, grad, state[p.impl().get()]);
  }
}

/** The gradient an update follows: negated when maximizing, plus wd * p (L2 weight decay). */
inline Tensor decayed(Tensor grad, const Tensor& p, bool maximize, double wd) {
  if (maximize) grad = grad.neg();
  if (wd != 0) grad = grad.add(p, wd);
  return grad;
}

/** Loaded state st without its tensors `names`, each of which must hold one number when present
 * (throws genesis::Error naming parameter id otherwise). */
inline ParamState without_scalars(const ParamState& st, std::initializer_list<const char*> names, int64_t id) {
  ParamState rest = st;
  for (const char* name : names) {
    auto it = rest.tensors.find(name);
    if (it == rest.tensors.end()) continue;
    if (!it->second.defined() || it->second.numel() != 1)
      throw checks::invalid("[optim] loaded state '" + std::string(name) + "' of parameter " + std::to_string(id) +
                            " must hold one number");
    rest.tensors.erase(it);
  }
  return rest;
}

}  // namespace genesis::optim::update
