// optimizer.cpp - Optimizer base: groups, zero_grad, state_dict, flat form.
#include <algorithm>
#include <cmath>
#include <set>

#include "../internal.h"
#include "genesis/optim/optimizer.hpp"

namespace genesis::optim {

namespace {

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, "[optim] " + msg); }

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

// Splits "a.b.c" at dots.
std::vector<std::string> split(const std::string& k) {
  std::vector<std::string> out(1);
  for (char c : k) {
    if (c == '.')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

int64_t parse_index(const std::string& s, const std::string& key) {
  try {
    size_t pos = 0;
    int64_t v = std::stoll(s, &pos);
    if (pos == s.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw invalid("load_flat_state: bad index in key '" + key + "'");
}

// The optimizer step count of a "state.<i>.step" entry.  flat_state writes it
// as float64; other writers use integers, read exactly here (not through a
// double).  Anything that is not a count in [0, 2^53] is refused, such as a
// float64's bits read as int64 (3.0 -> 4.6e18).
int64_t parse_step(const Tensor& t, const std::string& key) {
  constexpr int64_t kMaxStep = int64_t(1) << 53;
  if (t.numel() != 1)
    throw invalid("load_flat_state: '" + key + "' must hold one number, not " + std::to_string(t.numel()));
  const DType d = t.dtype();
  int64_t step = -1;
  if (d == DType::i8 || d == DType::u8 || d == DType::i32 || d == DType::i64) {
    gn_tensor* as_i64 = nullptr;
    check(gn_tensor_to_dtype(t.handle(), GN_I64, &as_i64), "load_flat_state");
    const Tensor owned = Tensor::adopt(as_i64);
    check(gn_tensor_to_host(as_i64, &step, sizeof step), "load_flat_state");
    if (step < 0 || step > kMaxStep)
      throw invalid("load_flat_state: '" + key + "' = " + std::to_string(step) + " is not a step count in [0, 2^53]");
  } else if (is_floating(d)) {
    const double v = t.item<double>();
    if (!(v >= 0 && v <= double(kMaxStep)) || v != std::floor(v))
      throw invalid("load_flat_state: '" + key + "' = " + std::to_string(v) + " is not a step count in [0, 2^53]");
    step = static_cast<int64_t>(v);
  } else {
    throw invalid("load_flat_state: '" + key + "' must be an integer or floating tensor, not " + dtype_name(d));
  }
  return step;
}

Options f64() {
  Options o;
  o.dtype = DType::f64;
  return o;
}

}  // namespace

double& ParamGroup::operator[](const std::string& key) {
  auto it = options.find(key);
  if (it == options.end()) throw invalid("parameter group has no option '" + key + "'");
  return it->second;
}

double ParamGroup::operator[](const std::string& key) const {
  auto it = options.find(key);
  if (it == options.end()) throw invalid("parameter group has no option '" + key + "'");
  return it->second;
}

std::vector<ParamGroup> as_groups(std::vector<Tensor> params) { return {ParamGroup(std::move(params))}; }

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::map<std::string, double> defaults)
    : defaults_(std::move(defaults)) {
  if (groups.empty()) throw invalid("optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  std::set<const Tensor::Impl*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params) seen.insert(p.impl().get());
  for (const auto& p : group.params) {
    if (!p.defined()) throw invalid("parameter group contains an undefined tensor");
    if (!p.is_leaf()) throw invalid("can't optimize a non-leaf Tensor");
    if (!seen.insert(p.impl().get()).second) throw invalid("some parameters appear in more than one parameter group");
  }
  for (const auto& [k, v] : defaults_) group.options.emplace(k, v);  // keeps the group's own values
  for (const auto& [k, v] : group.options)
    if (!defaults_.count(k) && k != "initial_lr") throw invalid("unknown option '" + k + "' in a parameter group");
  groups_.push_back(std::move(group));
}

ParamState& Optimizer::state(const Tensor& p) { return state_[p.impl().get()]; }

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (auto& g : groups_)
    for (auto& p : g.params) {
      Tensor gr = p.grad();
      if (!gr.defined()) continue;
      if (set_to_none)
        p.set_grad(Tensor());
      else
        gr.zero_();
    }
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict sd;
  int64_t idx = 0;
  for (const auto& g : groups_) {
    sd.param_groups.push_back(g.options);
    auto& ids = sd.group_params.emplace_back();
    for (const auto& p : g.params) {
      auto it = state_.find(p.impl().get());
      if (it != state_.end()) sd.state[idx] = it->second;
      ids.push_back(idx++);
    }
  }
  return sd;
}

void Optimizer::check_state_dict(const OptimizerStateDict& sd) const {
  if (sd.param_groups.size() != groups_.size() || sd.group_params.size() != groups_.size())
    throw invalid("loaded state dict has a different number of parameter groups (" +
                  std::to_string(sd.param_groups.size()) + " vs " + std::to_string(groups_.size()) + ")");
  std::map<int64_t, const Tensor*> by_id;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (sd.group_params[g].size() != groups_[g].params.size())
      throw invalid("loaded state dict contains a parameter group that doesn't match the size of optimizer's group " +
                    std::to_string(g) + " (" + std::to_string(sd.group_params[g].size()) + " vs " +
                    std::to_string(groups_[g].params.size()) + " parameters)");
    for (size_t i = 0; i < groups_[g].params.size(); ++i) by_id[sd.group_params[g][i]] = &groups_[g].params[i];
  }
  for (const auto& [id, st] : sd.state) {
    auto it = by_id.find(id);
    if (it == by_id.end())
      throw invalid("loaded state dict has state for parameter " + std::to_string(id) +
                    ", which is in no parameter group");
    check_param_state(st, *it->second, id);
  }
}

void Optimizer::check_param_state(const ParamState& st, const Tensor& p, int64_t id) const {
  const auto names = state_names();
  for (const auto& [n, t] : st.tensors) {
    if (std::find(names.begin(), names.end(), n) == names.end())
      throw invalid("loaded state dict has unknown state '" + n + "' for parameter " + std::to_string(id));
    check_state_shape(n, t, p.shape(), id);
  }
}

void Optimizer::check_state_shape(const std::string& name, const Tensor& t, const Shape& want, int64_t id) {
  if (!t.defined() || t.shape() != want)
    throw invalid("loaded state '" + name + "' of parameter " + std::to_string(id) + " has shape " +
                  (t.defined() ? shape_str(t.shape()) : "undefined") + ", expected " + shape_str(want));
}

void Optimizer::load_state_dict(const OptimizerStateDict& sd) {
  check_state_dict(sd);  // validate everything first: a mismatch changes nothing
  std::map<int64_t, const Tensor*> by_id;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i) by_id[sd.group_params[g][i]] = &groups_[g].params[i];
  NoGradGuard ng;
  std::map<const Tensor::Impl*, ParamState> fresh;
  for (const auto& [id, st] : sd.state) {
    const Tensor& p = *by_id[id];
    ParamState& dst = fresh[p.impl().get()];
    dst.step = st.step;
    for (const auto& [n, t] : st.tensors) {
      Tensor c = t.detach().to(p.device());
      if (is_floating(c.dtype())) c = c.to(p.dtype());
      dst.tensors[n] = c.is_same(t) || c.handle() == t.handle() ? c.clone() : c.contiguous();
    }
  }
  state_ = std::move(fresh);
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = sd.param_groups[g];
}

std::map<std::string, Tensor> Optimizer::flat_state() const {
  std::map<std::string, Tensor> flat;
  const OptimizerStateDict sd = state_dict();
  for (const auto& [id, st] : sd.state) {
    const std::string pre = "state." + std::to_string(id) + ".";
    if (st.step > 0) flat[pre + "step"] = scalar_tensor((double)st.step, f64());
    for (const auto& [n, t] : st.tensors) flat[pre + n] = t;
  }
  for (size_t g = 0; g < sd.param_groups.size(); ++g) {
    const std::string pre = "param_groups." + std::to_string(g) + ".";
    for (const auto& [k, v] : sd.param_groups[g]) flat[pre + k] = scalar_tensor(v, f64());
    flat[pre + "params"] = tensor(sd.group_params[g], {(int64_t)sd.group_params[g].size()});
  }
  return flat;
}

void Optimizer::load_flat_state(const std::map<std::string, Tensor>& flat) { load_state_dict(check_flat_state(flat)); }

OptimizerStateDict Optimizer::check_flat_state(const std::map<std::string, Tensor>& flat) const {
  OptimizerStateDict sd;
  std::map<int64_t, std::map<std::string, double>> opts;
  std::map<int64_t, std::vector<int64_t>> params;
  for (const auto& [key, t] : flat) {
    auto parts = split(key);
    if (parts.size() != 3 || (parts[0] != "state" && parts[0] != "param_groups"))
      throw invalid("load_flat_state: unexpected key '" + key + "'");
    int64_t i = parse_index(parts[1], key);
    if (!t.defined()) throw invalid("load_flat_state: undefined tensor for '" + key + "'");
    if (parts[0] == "state") {
      if (parts[2] == "step")
        sd.state[i].step = parse_step(t, key);
      else
        sd.state[i].tensors[parts[2]] = t;
    } else if (parts[2] == "params") {
      std::vector<int64_t> ids;
      for (double d : t.tolist()) ids.push_back((int64_t)d);
      params[i] = ids;
    } else {
      opts[i][parts[2]] = t.item<double>();
    }
  }
  for (int64_t g = 0; g < (int64_t)params.size(); ++g) {
    if (!params.count(g)) throw invalid("load_flat_state: missing 'param_groups." + std::to_string(g) + ".params'");
    sd.group_params.push_back(params[g]);
    sd.param_groups.push_back(opts[g]);
  }
  if (opts.size() > params.size()) throw invalid("load_flat_state: group options without a 'params' entry");
  for (size_t g = 0; g < sd.param_groups.size(); ++g)
    for (const auto& [k, v] : defaults_) {
      if (sd.param_groups[g].count(k)) continue;
      // Checkpoints written before Adam had amsgrad lack the option: it was off.
      if (k == "amsgrad") {
        sd.param_groups[g][k] = 0;
        continue;
      }
      throw invalid("load_flat_state: missing 'param_groups." + std::to_string(g) + "." + k + "'");
    }
  check_state_dict(sd);
  return sd;
}

}  // namespace genesis::optim
