// sgd.cpp - SGD with momentum/nesterov: one fused in-place sgd_step call per parameter
// (semantics in backends/reference/optim.cpp).
#include "../internal.h"
#include "checks.h"
#include "genesis/optim/sgd.hpp"

namespace genesis::optim {

using checks::check_common;
using checks::invalid;

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions o)
    : Optimizer(std::move(groups), {{"lr", o.lr},
                                    {"momentum", o.momentum},
                                    {"dampening", o.dampening},
                                    {"weight_decay", o.weight_decay},
                                    {"nesterov", o.nesterov ? 1.0 : 0.0},
                                    {"maximize", o.maximize ? 1.0 : 0.0}}) {
  check_common(o.lr, o.weight_decay);
  checks::non_negative(o.momentum, "momentum value");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw invalid("Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard ng;
  const gn_op* op = GN_OP_HANDLE("sgd_step");
  for (auto& g : groups_) {
    const double lr = g["lr"], mom = g["momentum"], damp = g["dampening"], wd = g["weight_decay"];
    const int64_t nesterov = g["nesterov"] != 0, maximize = g["maximize"] != 0;
    for (auto& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      int64_t step = 2;  // > 1: the buffer exists and is updated
      Tensor buf;
      if (mom != 0) {
        auto& st = state_[p.impl().get()].tensors;
        auto it = st.find("momentum_buffer");
        if (it == st.end()) {
          buf = zeros_like(p);  // the op initialises it to the gradient on step 1
          st["momentum_buffer"] = buf;
          step = 1;
        } else {
          buf = it->second;
        }
      }
      const auto attrs = {gn_attr_float(lr),     gn_attr_float(mom),    gn_attr_float(damp), gn_attr_float(wd),
                          gn_attr_int(nesterov), gn_attr_int(maximize), gn_attr_int(step)};
      if (mom != 0)
        detail::call(op, {&p, &grad, &buf}, attrs, 0);
      else
        detail::call(op, {&p, &grad}, attrs, 0);
    }
  }
}

}  // namespace genesis::optim
