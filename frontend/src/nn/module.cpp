// module.cpp - nn::Module: registration, traversal, modes, to(), state dicts.
#include "genesis/nn/module.hpp"

#include <set>
#include <sstream>

#include "genesis/autograd.hpp"

namespace genesis::nn {

namespace {

// "(10, 5)"
std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

// Points t's Impl at src's data: every holder of t (members, optimizers) sees it.
void replace_data(Tensor::Impl& t, const Tensor& src) {
  gn_tensor* h = src.handle();
  gn_tensor_retain(h);
  gn_tensor_release(t.h);
  t.h = h;
}

// Converts t (and its gradient) in place with fn.
template <class F>
void convert_in_place(const Tensor& t, F fn) {
  if (!t.defined()) return;
  replace_data(*t.impl(), fn(t.detach()));
  if (const auto& g = t.impl()->grad) replace_data(*g, fn(Tensor::borrow(g->h)));
}

}  // namespace

// ------------------------------------------------------------------ StateDict

void StateDict::insert(const std::string& key, const Tensor& t) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = t;
    return;
  }
  index_[key] = items_.size();
  items_.emplace_back(key, t);
}

const Tensor& StateDict::at(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) throw Error(GN_ERR_INVALID_ARGUMENT, "[StateDict] no key \"" + key + "\"");
  return items_[it->second].second;
}

Tensor& StateDict::operator[](const std::string& key) {
  if (!index_.count(key)) insert(key, Tensor());
  return items_[index_[key]].second;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  for (const auto& it : items_) k.push_back(it.first);
  return k;
}

// --------------------------------------------------------------- registration

Tensor Module::forward(const Tensor&) {
  throw Error(GN_ERR_UNSUPPORTED, "[" + name() + "] forward(x) is not implemented by this module");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& t, bool requires_grad) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[register_parameter] invalid name \"" + name + "\"");
  Tensor p = t.defined() ? t.detach() : Tensor();
  if (p.defined()) p.requires_grad_(requires_grad);
  for (auto& [n, v] : params_)
    if (n == name) return v = p;
  params_.emplace_back(name, p);
  return p;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& t, bool persistent) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[register_buffer] invalid name \"" + name + "\"");
  for (auto& b : buffers_)
    if (b.name == name) {
      b.persistent = persistent;
      return b.t = t;
    }
  buffers_.push_back({name, t, persistent});
  return t;
}

void Module::add_child(const std::string& name, Module* m, std::shared_ptr<Module> owned) {
  if (!m) throw Error(GN_ERR_INVALID_ARGUMENT, "[register_module] null module \"" + name + "\"");
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[register_module] invalid name \"" + name + "\"");
  if (owned) owned_.push_back(std::move(owned));
  for (auto& [n, c] : children_)
    if (n == name) {
      c = m;
      return;
    }
  children_.emplace_back(name, m);
}

// ------------------------------------------------------------------ traversal

void Module::collect(const std::string& prefix, bool recurse, bool params, bool persistent_only,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  if (params) {
    for (const auto& [n, t] : params_)
      if (t.defined()) out.emplace_back(prefix + n, t);
  } else {
    for (const auto& b : buffers_)
      if (b.t.defined() && (b.persistent || !persistent_only)) out.emplace_back(prefix + b.name, b.t);
  }
  if (recurse)
    for (const auto& [n, c] : children_) c->collect(prefix + n + ".", true, params, persistent_only, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> all, out;
  collect("", recurse, true, false, all);
  std::set<const Tensor::Impl*> seen;  // shared (tied) parameters appear once, as in torch
  for (auto& it : all)
    if (seen.insert(it.second.impl().get()).second) out.push_back(std::move(it));
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& it : named_parameters(recurse)) out.push_back(it.second);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, false, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& it : named_buffers(recurse)) out.push_back(it.second);
  return out;
}

std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (const auto& it : children_) out.push_back(it.second);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const { return children_; }

std::vector<std::pair<std::string, Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, Module*>> out = {{"", const_cast<Module*>(this)}};
  for (const auto& [n, c] : children_)
    for (auto& [cn, m] : c->named_modules()) out.emplace_back(cn.empty() ? n : n + "." + cn, m);
  return out;
}

// ------------------------------------------------------ modes and placement

Module& Module::train(bool on) {
  training_ = on;
  for (auto& it : children_) it.second->train(on);
  return *this;
}

Module& Module::to(const Device& device) {
  NoGradGuard no_grad;
  auto fn = [&](const Tensor& t) { return t.to(device); };
  for (auto& it : named_parameters()) convert_in_place(it.second, fn);
  for (auto& it : named_buffers()) convert_in_place(it.second, fn);
  return *this;
}

Module& Module::to(DType dtype) {
  NoGradGuard no_grad;
  auto fn = [&](const Tensor& t) { return t.to(dtype); };
  for (auto& it : named_parameters())
    if (is_floating(it.second.dtype())) convert_in_place(it.second, fn);
  for (auto& it : named_buffers())
    if (is_floating(it.second.dtype())) convert_in_place(it.second, fn);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      g.zero_();
    }
  }
}

// ---------------------------------------------------------------------- state

StateDict Module::state_dict() const {
  // Module by module, parameters then buffers, as torch orders them.
  StateDict sd;
  for (const auto& [prefix, m] : named_modules()) {
    const std::string p = prefix.empty() ? "" : prefix + ".";
    for (const auto& [n, t] : m->params_)
      if (t.defined()) sd.insert(p + n, t.detach());
    for (const auto& b : m->buffers_)
      if (b.t.defined() && b.persistent) sd.insert(p + b.name, b.t.detach());
  }
  return sd;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  LoadResult r;
  std::vector<std::string> errors;
  for (const auto& [k, t] : own) {
    if (!state.count(k)) {
      r.missing_keys.push_back(k);
      continue;
    }
    const Tensor& src = state.at(k);
    if (!src.defined()) {
      errors.push_back("undefined tensor for " + k);
    } else if (src.shape() != t.shape()) {
      errors.push_back("size mismatch for " + k + ": checkpoint " + shape_str(src.shape()) + ", model " +
                       shape_str(t.shape()));
    } else if (src.dtype() != t.dtype()) {
      errors.push_back("dtype mismatch for " + k + ": checkpoint " + dtype_name(src.dtype()) + ", model " +
                       dtype_name(t.dtype()));
    }
  }
  for (const auto& [k, t] : state)
    if (!own.count(k)) r.unexpected_keys.push_back(k);
  auto quoted = [](const std::vector<std::string>& ks) {
    std::string s;
    for (size_t i = 0; i < ks.size(); ++i) s += (i ? ", \"" : "\"") + ks[i] + "\"";
    return s;
  };
  if (strict && !r.missing_keys.empty()) errors.insert(errors.begin(), "missing keys: " + quoted(r.missing_keys));
  if (strict && !r.unexpected_keys.empty()) errors.push_back("unexpected keys: " + quoted(r.unexpected_keys));
  if (!errors.empty()) {
    std::string msg = "[load_state_dict] " + errors[0];
    for (size_t i = 1; i < errors.size(); ++i) msg += "; " + errors[i];
    throw Error(GN_ERR_INVALID_ARGUMENT, msg);
  }
  NoGradGuard no_grad;
  for (const auto& [k, t] : own) {
    if (!state.count(k)) continue;
    Tensor dst = t;  // shares data with the parameter/buffer
    dst.copy_(state.at(k));
  }
  return r;
}

}  // namespace genesis::nn
