// clip_grad.cpp - clip_grad_norm_ (one fused multi_sum_sq per device, the
// coefficient computed and applied on the device: no host sync) and clip_grad_value_.
#include <algorithm>
#include <cmath>

#include "../internal.h"
#include "genesis/optim/clip_grad.hpp"

namespace genesis::nn::utils {

namespace {

// The defined gradients of params, grouped by device (in first-seen order).
std::vector<std::vector<Tensor>> grads_by_device(const std::vector<Tensor>& params) {
  std::vector<std::vector<Tensor>> out;
  for (const auto& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& v) { return v[0].device() == g.device(); });
    if (it == out.end())
      out.push_back({g});
    else
      it->push_back(g);
  }
  return out;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  NoGradGuard ng;
  const auto groups = grads_by_device(params);
  if (groups.empty()) return scalar_tensor(0.0);
  const Device dev0 = groups[0][0].device();
  Tensor total;
  auto combine = [&](Tensor part, bool use_max) {
    part = part.to(dev0);
    total = !total.defined() ? part : use_max ? total.maximum(part) : total + part;
  };
  if (std::isinf(norm_type)) {
    for (const auto& gs : groups)
      for (const auto& g : gs) combine(g.abs().max(), true);
  } else if (norm_type == 2.0) {
    for (const auto& gs : groups) combine(detail::call(GN_OP_HANDLE("multi_sum_sq"), gs, {}, 1)[0], false);
    total = total.sqrt();
  } else {
    for (const auto& gs : groups)
      for (const auto& g : gs) combine(g.abs().pow(norm_type).sum(), false);
    total = total.pow(1.0 / norm_type);
  }
  if (error_if_nonfinite && !std::isfinite(total.item<double>()))
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "The total norm of order " + std::to_string(norm_type) +
                    " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
                    "and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  // clip_coef = min(max_norm / (total + 1e-6), 1), on the device.
  Tensor coef = wrap_scalar(max_norm, dev0) / (total + 1e-6);
  coef = coef.minimum(ones_like(coef));
  for (const auto& gs : groups) {
    std::vector<Tensor> in{coef.to(gs[0].device())};
    in.insert(in.end(), gs.begin(), gs.end());
    detail::call(GN_OP_HANDLE("multi_scale_"), in, {}, 0);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard ng;
  const gn_op* op = GN_OP_HANDLE("clamp");
  for (const auto& p : params) {
    Tensor g = p.grad();
    if (g.defined()) detail::call_into(op, {&g}, {gn_attr_float(-clip_value), gn_attr_float(clip_value)}, g);
  }
}

}  // namespace genesis::nn::utils
