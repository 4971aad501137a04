// tests/core/ops/infer_test_util.h - calling built-in shape inference from
// tests: a fake host (statuses only), meta builders, and run() which fills an
// op's attributes from its parsed schema defaults plus named overrides.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "../fake_host.h"
#include "builtin.h"
#include "genesis/ops.h"
#include "genesis/plugin.h"
#include "infer.h"

namespace genesis::test {

// A host table with only the status functions (all inference uses).
inline const gn_host_api* fake_host() {
  static const gn_host_api host = test_host::status_host();
  return &host;
}

// A dimensioned (or 0-d, with {}) tensor meta.
inline gn_tensor_meta T(int32_t dtype, std::initializer_list<int64_t> shape) {
  gn_tensor_meta m{};
  m.dtype = dtype;
  m.ndim = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t s : shape) m.shape[i++] = s;
  return m;
}

// A wrapped scalar (a caller's number): 0-d with GN_META_WRAPPED_SCALAR.
inline gn_tensor_meta S(int32_t dtype) {
  gn_tensor_meta m = T(dtype, {});
  m.flags = GN_META_WRAPPED_SCALAR;
  return m;
}

// A named attribute override.
struct Attr {
  std::string name;
  gn_attr_value v{};
  std::vector<int64_t> ints;
};

inline Attr ai(std::string name, int64_t v) { return {std::move(name), gn_attr_int(v), {}}; }
inline Attr af(std::string name, double v) { return {std::move(name), gn_attr_float(v), {}}; }
// (run() points the value at ints.)
inline Attr al(std::string name, std::vector<int64_t> v) {
  return {std::move(name), gn_attr_ints(nullptr, 0), std::move(v)};
}

// What one inference call produced.
struct Result {
  int32_t code = GN_OK;
  std::string msg;
  std::vector<gn_tensor_meta> out;  // result->n_out entries
  std::vector<int32_t> in_dtypes;
  int32_t kernel_dtype = -1;
  bool ok() const { return code == GN_OK; }
};

// The built-in schema named `name` (fails the test and aborts if absent).
inline const gn_op_schema& schema(std::string_view name) {
  for (const gn_op_schema& s : core::builtin_schemas())
    if (name == s.name) return s;
  ADD_FAILURE() << "no built-in op " << name;
  return core::builtin_schemas().front();
}

// Call `fn` as the core would, with raw attribute values; `capacity` outputs.
inline Result call_infer(gn_infer_fn fn, const char* op, const std::vector<gn_tensor_meta>& in,
                         const std::vector<gn_attr_value>& attrs, size_t capacity) {
  gn_infer_ctx ctx{sizeof(gn_infer_ctx), fake_host(), op, nullptr};
  std::vector<gn_tensor_meta> out(capacity);
  for (auto& m : out) {  // garbage that a forgotten field would leak
    m.dtype = -77;
    m.ndim = -77;
    m.flags = 0xdead;
  }
  std::vector<int32_t> in_dtypes;
  for (const auto& m : in) in_dtypes.push_back(m.dtype);
  gn_infer_result res{};
  res.struct_size = sizeof(gn_infer_result);
  res.n_out = capacity;
  res.out = out.data();
  res.in_dtypes = in_dtypes.data();
  res.kernel_dtype = in.empty() ? -1 : in[0].dtype;
  gn_status* st = fn(&ctx, in.data(), in.size(), attrs.data(), attrs.size(), &res);
  Result r;
  if (st) {
    r.code = st->code;
    r.msg = st->msg;
    test_host::status_free(st);
    return r;
  }
  r.out.assign(out.begin(), out.begin() + static_cast<long>(std::min(res.n_out, capacity)));
  EXPECT_LE(res.n_out, capacity) << op;
  r.in_dtypes = in_dtypes;
  r.kernel_dtype = res.kernel_dtype;
  return r;
}

// Run op `name`'s inference: attributes are its schema defaults with the
// overrides applied by name; capacity 0 means max_outputs (16 if variadic).
inline Result run(std::string_view name, const std::vector<gn_tensor_meta>& in, const std::vector<Attr>& overrides = {},
                  size_t capacity = 0) {
  const gn_op_schema& s = schema(name);
  std::vector<gn_attr_value> attrs(s.n_attrs);
  std::vector<bool> given(s.n_attrs);
  for (size_t i = 0; i < s.n_attrs; ++i) {
    attrs[i] = s.attrs[i].default_value;
    given[i] = s.attrs[i].has_default != 0;
  }
  for (const Attr& o : overrides) {
    size_t i = 0;
    while (i < s.n_attrs && o.name != s.attrs[i].name) ++i;
    if (i == s.n_attrs) {
      ADD_FAILURE() << name << " has no attribute " << o.name;
      continue;
    }
    EXPECT_EQ(o.v.kind, s.attrs[i].kind) << name << "." << o.name;
    attrs[i] = o.v;
    if (o.v.kind == GN_ATTR_INTS) {
      attrs[i].u.ints.data = o.ints.data();
      attrs[i].u.ints.size = o.ints.size();
    }
    given[i] = true;
  }
  for (size_t i = 0; i < s.n_attrs; ++i)
    EXPECT_TRUE(given[i]) << name << ": required attribute " << s.attrs[i].name << " not given";
  if (capacity == 0) capacity = s.max_outputs >= 0 ? static_cast<size_t>(s.max_outputs) : 16;
  return call_infer(s.infer, s.name, in, attrs, capacity);
}

inline std::string shape_of(const gn_tensor_meta& m) { return core::shape_str(m); }

// Output k exists with `dtype` and `shape`, flags cleared.
inline ::testing::AssertionResult has_out(const Result& r, size_t k, int32_t dtype, std::vector<int64_t> shape) {
  if (!r.ok()) return ::testing::AssertionFailure() << "inference failed: " << r.msg;
  if (k >= r.out.size()) return ::testing::AssertionFailure() << "only " << r.out.size() << " outputs";
  const gn_tensor_meta& m = r.out[k];
  const std::vector<int64_t> got(m.shape, m.shape + std::max(0, std::min(m.ndim, GN_MAX_DIMS)));
  if (m.dtype != dtype || got != shape || m.ndim != static_cast<int32_t>(shape.size()))
    return ::testing::AssertionFailure() << "output " << k << " is " << gn_dtype_name(m.dtype) << " " << shape_of(m)
                                         << ", expected " << gn_dtype_name(dtype) << " "
                                         << ::testing::PrintToString(shape);
  if (m.flags != 0) return ::testing::AssertionFailure() << "output " << k << " flags " << m.flags;
  return ::testing::AssertionSuccess();
}

// Inference failed with `code`, the message starts with "[op] " and contains every needle.
inline ::testing::AssertionResult fails(const Result& r, int32_t code, std::string_view op,
                                        std::vector<std::string> needles = {}) {
  if (r.ok()) return ::testing::AssertionFailure() << "inference succeeded";
  const std::string prefix = std::string("[").append(op).append("] ");
  if (r.code != code)
    return ::testing::AssertionFailure() << "code " << r.code << " (expected " << code << "): " << r.msg;
  if (r.msg.rfind(prefix, 0) != 0)
    return ::testing::AssertionFailure() << "message does not start with '" << prefix << "': " << r.msg;
  for (const auto& n : needles)
    if (r.msg.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks '" << n << "': " << r.msg;
  return ::testing::AssertionSuccess() << r.msg;
}

}  // namespace genesis::test
