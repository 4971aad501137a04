// autocast.cpp - the autocast policy table, the thread-local region state and
// the hook the op wrappers call (detail::autocast_inputs, see internal.h).
#include <algorithm>
#include <map>
#include <utility>

#include "../internal.h"
#include "genesis/amp.hpp"

namespace genesis {
namespace detail {
thread_local int t_autocast_enabled = 0;
}  // namespace detail

namespace amp {

namespace {

using P = CastPolicy;

// The policy of every op and frontend function: the rows of derivatives.def.
constexpr std::pair<std::string_view, CastPolicy> kRows[] = {
#define GN_UNARY_GRAD(op, saves, policy, formula) {#op, P::policy},
#define GN_GRAD(op, rule, saves, policy) {#op, P::policy},
#define GN_NO_GRAD(op, policy, reason) {#op, P::policy},
#define GN_FRONTEND(name, rule, policy) {#name, P::policy},
#include "../autograd/derivatives.def"
};

// The rows with a policy other than none (the ones cast_policy searches).
const std::vector<std::pair<std::string_view, CastPolicy>>& policies() {
  static const std::vector<std::pair<std::string_view, CastPolicy>> v = [] {
    std::vector<std::pair<std::string_view, CastPolicy>> r;
    for (const auto& row : kRows)
      if (row.second != P::none) r.push_back(row);
    return r;
  }();
  return v;
}

struct Slot {
  bool enabled = false;
  DType dtype = DType::f16;
};

struct State {
  std::vector<Slot> slots;  // by device type id
  int depth = 0;            // nested autocast guards (enabled or not)
  bool cache_enabled = true;
  // (parameter, dtype) -> (parameter kept alive, its cast)
  std::map<std::pair<const Tensor::Impl*, DType>, std::pair<Tensor, Tensor>> cache;
  Slot& slot(int32_t type) {
    if (type >= (int32_t)slots.size()) slots.resize(type + 1);
    return slots[type];
  }
};

thread_local State t_state;

int32_t type_id(const std::string& device_type) {
  try {
    return Device(device_type).c().type;
  } catch (const Error&) {
    return -1;  // unknown device type: autocast for it is disabled (torch warns and disables)
  }
}

int rank(DType d) { return d == DType::f64 ? 3 : d == DType::f32 ? 2 : 1; }

Tensor cast(const Tensor& t, DType to, bool may_cache) {
  State& s = t_state;
  if (may_cache && s.cache_enabled && t.dtype() == DType::f32 && t.is_leaf() && t.requires_grad() &&
      autograd::grad_enabled()) {
    auto key = std::make_pair(t.impl().get(), to);
    auto it = s.cache.find(key);
    if (it != s.cache.end()) return it->second.second;
    Tensor c = t.to(to);
    s.cache.emplace(key, std::make_pair(t, c));
    return c;
  }
  return t.to(to);
}

}  // namespace

CastPolicy cast_policy(std::string_view name) {
  for (const auto& [n, p] : policies())
    if (n == name) return p;
  return CastPolicy::none;
}

bool is_autocast_enabled(const std::string& device_type) {
  const int32_t t = type_id(device_type);
  return t >= 0 && t < (int32_t)t_state.slots.size() && t_state.slots[t].enabled;
}

DType get_autocast_dtype(const std::string& device_type) {
  const int32_t t = type_id(device_type);
  if (t >= 0 && t < (int32_t)t_state.slots.size() && t_state.slots[t].enabled) return t_state.slots[t].dtype;
  return device_type == "cpu" ? DType::bf16 : DType::f16;
}

void clear_autocast_cache() { t_state.cache.clear(); }

autocast::autocast(const std::string& device_type, std::optional<DType> dtype, bool enabled, bool cache_enabled) {
  const DType d = dtype.value_or(device_type == "cpu" ? DType::bf16 : DType::f16);
  if (d != DType::bf16 && d != DType::f16)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                std::string("[autocast] dtype must be bfloat16 or float16, got ") + dtype_name(d));
  State& s = t_state;
  ++s.depth;
  prev_cache_ = s.cache_enabled;
  s.cache_enabled = cache_enabled;
  type_ = type_id(device_type);
  if (type_ < 0) return;
  Slot& sl = s.slot(type_);
  prev_enabled_ = sl.enabled;
  prev_dtype_ = sl.dtype;
  detail::t_autocast_enabled += (enabled ? 1 : 0) - (sl.enabled ? 1 : 0);
  sl.enabled = enabled;
  sl.dtype = d;
}

autocast::~autocast() {
  State& s = t_state;
  if (type_ >= 0) {
    Slot& sl = s.slot(type_);
    detail::t_autocast_enabled += (prev_enabled_ ? 1 : 0) - (sl.enabled ? 1 : 0);
    sl.enabled = prev_enabled_;
    sl.dtype = prev_dtype_;
  }
  s.cache_enabled = prev_cache_;
  if (--s.depth == 0) s.cache.clear();
}

}  // namespace amp

namespace detail {

void autocast_inputs(const char* op, std::initializer_list<Tensor*> ts) {
  const amp::CastPolicy p = amp::cast_policy(op);
  if (p == amp::CastPolicy::none) return;
  // The region of the first floating input's device type decides.
  const Tensor* first = nullptr;
  for (Tensor* t : ts)
    if (t->defined() && is_floating(t->dtype())) {
      first = t;
      break;
    }
  if (!first) return;
  const int32_t type = first->device().c().type;
  auto& slots = amp::t_state.slots;
  if (type >= (int32_t)slots.size() || !slots[type].enabled) return;
  const DType low = slots[type].dtype;
  auto eligible = [type](const Tensor* t) {
    return t->defined() && is_floating(t->dtype()) && t->device().c().type == type;
  };
  if (p == amp::CastPolicy::lower_precision) {
    for (Tensor* t : ts)
      if (eligible(t) && t->dtype() != DType::f64 && t->dtype() != low) *t = amp::cast(*t, low, true);
  } else if (p == amp::CastPolicy::fp32) {
    for (Tensor* t : ts)
      if (eligible(t) && (t->dtype() == DType::f16 || t->dtype() == DType::bf16)) *t = t->to(DType::f32);
  } else {  // promote: widest floating dtype among the non-0-d inputs (0-d follow type promotion)
    int best = 0;
    bool f16 = false, bf16 = false;
    for (Tensor* t : ts) {
      if (!eligible(t) || t->dim() == 0) continue;
      best = std::max(best, amp::rank(t->dtype()));
      f16 |= t->dtype() == DType::f16;
      bf16 |= t->dtype() == DType::bf16;
    }
    if (best == 0) return;
    const DType to = best == 3                      ? DType::f64
                     : (best == 2 || (f16 && bf16)) ? DType::f32
                     : f16                          ? DType::f16
                                                    : DType::bf16;
    for (Tensor* t : ts)
      if (eligible(t) && t->dim() > 0 && t->dtype() != to) *t = t->to(to);
  }
}

}  // namespace detail
}  // namespace genesis
