// grad_scaler.cpp - GradScaler: dynamic loss scaling as torch.cuda.amp.GradScaler.
// unscale_ is one fused multi_unscale_check_ per device (found_inf stays on the
// device); step() syncs once to decide; update() runs on the device.
#include <algorithm>

#include "../internal.h"
#include "genesis/amp.hpp"

namespace genesis::amp {

namespace {

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, "[GradScaler] " + msg); }

}  // namespace

GradScaler::GradScaler(GradScalerOptions o) : o_(o) {
  if (o.growth_factor <= 1.0) throw invalid("The growth factor must be > 1.0.");
  if (o.backoff_factor >= 1.0 || o.backoff_factor <= 0) throw invalid("The backoff factor must be < 1.0 and > 0.");
  if (o.growth_interval <= 0) throw invalid("growth_interval must be a positive integer.");
}

void GradScaler::lazy_init(const Device& d) {
  scale_ = scalar_tensor(o_.init_scale, {.dtype = DType::f32, .device = d});
  growth_tracker_ = scalar_tensor(init_tracker_, {.dtype = DType::f32, .device = d});
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!o_.enabled) return outputs;
  if (!scale_.defined()) lazy_init(outputs.device());
  return outputs * scale_.to(outputs.device());
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!o_.enabled) return;
  OptState& st = per_opt_[&optimizer];
  if (st.stage == Stage::unscaled)
    throw invalid("unscale_() has already been called on this optimizer since the last update().");
  if (st.stage == Stage::stepped) throw invalid("unscale_() is being called after step().");
  if (!scale_.defined())
    throw invalid("Attempted unscale_ but the scale is not set: call scaler.scale(loss) earlier in the iteration.");
  NoGradGuard ng;
  const Tensor inv_scale = scale_.to(DType::f64).reciprocal().to(DType::f32);
  // Gradients grouped by device: one fused unscale-and-check per device.
  std::vector<std::vector<Tensor>> by_dev;
  for (auto& g : optimizer.param_groups())
    for (auto& p : g.params) {
      Tensor gr = p.grad();
      if (!gr.defined()) continue;
      if (gr.dtype() == DType::f16) throw invalid("Attempting to unscale FP16 gradients.");
      auto it = std::find_if(by_dev.begin(), by_dev.end(), [&](const auto& v) { return v[0].device() == gr.device(); });
      if (it == by_dev.end())
        by_dev.push_back({gr});
      else
        it->push_back(gr);
    }
  for (const auto& grads : by_dev) {
    const Device d = grads[0].device();
    Tensor found = scalar_tensor(0.0, {.dtype = DType::f32, .device = d});
    std::vector<Tensor> in{inv_scale.to(d), found};
    in.insert(in.end(), grads.begin(), grads.end());
    detail::call(GN_OP_HANDLE("multi_unscale_check_"), in, {}, 0);
    st.found_inf.push_back(found);
  }
  st.stage = Stage::unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!o_.enabled) {
    optimizer.step();
    return true;
  }
  if (per_opt_[&optimizer].stage == Stage::stepped)
    throw invalid("step() has already been called since the last update().");
  if (per_opt_[&optimizer].stage == Stage::ready) unscale_(optimizer);
  OptState& st = per_opt_[&optimizer];
  if (st.found_inf.empty()) throw invalid("No inf checks were recorded for this optimizer.");
  double found = 0;
  for (const auto& f : st.found_inf) found += f.item<double>();  // the one host sync, as torch
  const bool ok = found == 0;
  if (ok) optimizer.step();
  st.stage = Stage::stepped;
  return ok;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!o_.enabled) return;
  if (!scale_.defined()) throw invalid("update() called before scale(): the scale is not set.");
  NoGradGuard ng;
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    Tensor found;
    for (const auto& [opt, st] : per_opt_)
      for (const auto& f : st.found_inf)
        found = found.defined() ? found + f.to(scale_.device()) : f.to(scale_.device());
    if (!found.defined()) throw invalid("No inf checks were recorded prior to update.");
    // torch._amp_update_scale_ on the device: backoff on inf/nan, else grow every growth_interval clean steps.
    const Tensor inf = (found > 0.0).to(DType::f32);
    const Tensor clean = 1.0 - inf;
    const Tensor tracker = (growth_tracker_ + 1.0) * clean;
    const Tensor grow = (tracker >= (double)o_.growth_interval).to(DType::f32);
    const Tensor factor = inf * o_.backoff_factor + clean * (grow * o_.growth_factor + (1.0 - grow));
    scale_.mul_(factor);
    growth_tracker_.copy_(tracker * (1.0 - grow));
  }
  per_opt_.clear();
}

double GradScaler::get_scale() const {
  if (!o_.enabled) return 1.0;
  return scale_.defined() ? scale_.item<double>() : o_.init_scale;
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!o_.enabled) return {};
  return {{"scale", get_scale()},
          {"growth_factor", o_.growth_factor},
          {"backoff_factor", o_.backoff_factor},
          {"growth_interval", (double)o_.growth_interval},
          {"_growth_tracker", growth_tracker_.defined() ? growth_tracker_.item<double>() : init_tracker_}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& sd) {
  if (!o_.enabled) return;
  if (sd.empty())
    throw invalid(
        "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  auto get = [&](const char* k) {
    auto it = sd.find(k);
    if (it == sd.end()) throw invalid(std::string("load_state_dict: missing '") + k + "'");
    return it->second;
  };
  const double scale = get("scale"), gf = get("growth_factor"), bf = get("backoff_factor"), gi = get("growth_interval"),
               tracker = get("_growth_tracker");
  o_.init_scale = scale;
  o_.growth_factor = gf;
  o_.backoff_factor = bf;
  o_.growth_interval = (int64_t)gi;
  init_tracker_ = tracker;
  if (scale_.defined()) {
    NoGradGuard ng;
    scale_.fill_(scale);
    growth_tracker_.fill_(tracker);
  }
}

}  // namespace genesis::amp
