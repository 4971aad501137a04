// internal.h - helpers shared by the frontend's sources (not installed).
#pragma once

#include <initializer_list>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

namespace genesis::detail {

// Looks an op up by name in the process runtime (throws when absent).
const gn_op* find_op(const char* name);

// The op handle for a literal name, looked up once per call site.
#define GN_OP_HANDLE(name)                                      \
  ([]() -> const gn_op* {                                       \
    static const gn_op* op_ = ::genesis::detail::find_op(name); \
    return op_;                                                 \
  }())

// Calls op; returns n_out new outputs (errors name the op).
std::vector<Tensor> call(const gn_op* op, std::initializer_list<const Tensor*> in,
                         std::initializer_list<gn_attr_value> attrs, size_t n_out);
// Calls op with a tensor list (variadic inputs).
std::vector<Tensor> call(const gn_op* op, const std::vector<Tensor>& in, std::initializer_list<gn_attr_value> attrs,
                         size_t n_out);
// Calls op with a tensor list and an attribute vector (a rule's backward call, Node::attrs_for).
std::vector<Tensor> call(const gn_op* op, const std::vector<Tensor>& in, const std::vector<gn_attr_value>& attrs,
                         size_t n_out);
// One-output shorthand.
Tensor call1(const gn_op* op, std::initializer_list<const Tensor*> in, std::initializer_list<gn_attr_value> attrs = {});
// Writes op(in) into `out` in place (out must have the inferred shape/dtype).
void call_into(const gn_op* op, std::initializer_list<const Tensor*> in, std::initializer_list<gn_attr_value> attrs,
               const Tensor& out);

// Refuses an in-place write into a leaf that requires grad (or a view of one) while recording
// (autograd::check_inplace).
void check_inplace(const Tensor& t, const char* op);
// Device of opts or the CPU.
Device device_of(const Options& o);

// ---- AMP hook (frontend/src/amp/autocast.cpp) --------------------------
// Enabled autocast regions on this thread (the op wrappers' fast check).
extern thread_local int t_autocast_enabled;
// Casts op inputs in place following the autocast policy table.
void autocast_inputs(const char* op, std::initializer_list<Tensor*> ts);
// Called first by an op wrapper on its (by-value) inputs: no-op outside autocast.
#define GN_AUTOCAST(op, ...) \
  if (::genesis::detail::t_autocast_enabled) ::genesis::detail::autocast_inputs(op, {__VA_ARGS__})

// Normalises a possibly negative dim against rank n.
inline int64_t wrap_dim(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

}  // namespace genesis::detail
