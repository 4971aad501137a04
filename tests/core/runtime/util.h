// tests/core/runtime/util.h - RAII and shorthands over the C API for tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "genesis/genesis.h"

namespace gt {

// Fails the test with the status message if st is not OK.
#define GN_OK_OR_FAIL(expr)                            \
  do {                                                 \
    gn_status* st_ = (expr);                           \
    ASSERT_EQ(st_, nullptr) << gn_status_message(st_); \
  } while (0)

// A runtime over the build tree's plugins (reference only unless told).
struct Runtime {
  gn_runtime* rt = nullptr;
  gn_device cpu{};
  explicit Runtime(const char* plugins = "reference", const char* backends = nullptr) {
    gn_runtime_options o{};
    o.struct_size = sizeof(o);
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_TEST_PLUGIN_DIR;
    o.plugins = plugins;
    o.backends = backends;
    gn_status* st = gn_runtime_create(&o, &rt);
    EXPECT_EQ(st, nullptr) << gn_status_message(st);
    gn_status_free(st);
    st = gn_device_parse(rt, "cpu", &cpu);
    EXPECT_EQ(st, nullptr) << gn_status_message(st);
    gn_status_free(st);
  }
  ~Runtime() { gn_runtime_destroy(rt); }
};

// Owning tensor handle.
struct T {
  gn_tensor* t = nullptr;
  T() = default;
  explicit T(gn_tensor* p) : t(p) {}
  T(const T&) = delete;
  T(T&& o) noexcept : t(o.t) { o.t = nullptr; }
  T& operator=(T&& o) noexcept {
    std::swap(t, o.t);
    return *this;
  }
  ~T() { gn_tensor_release(t); }
  std::vector<int64_t> shape() const { return {gn_tensor_shape(t), gn_tensor_shape(t) + gn_tensor_ndim(t)}; }
};

// f32/f64/i64 host data -> tensor.
template <class V>
T make(gn_runtime* rt, gn_device dev, const std::vector<V>& data, std::vector<int64_t> shape, int32_t dtype) {
  gn_tensor* t = nullptr;
  gn_status* st = gn_tensor_from_host(rt, data.data(), shape.data(), (int32_t)shape.size(), dtype, dev, &t);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return T(t);
}

template <class V>
std::vector<V> values(const T& t) {
  std::vector<V> out((size_t)gn_tensor_numel(t.t));
  gn_status* st = gn_tensor_to_host(t.t, out.data(), out.size() * sizeof(V));
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return out;
}

// Call an op with one output; returns the status (caller frees) and sets out.
inline gn_status* call1(gn_runtime* rt, const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> attrs,
                        T* out) {
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(rt, name, &op);
  if (st) return st;
  gn_tensor* o[1] = {nullptr};
  st = gn_op_call(rt, op, in.data(), in.size(), attrs.data(), attrs.size(), o, 1);
  if (!st) *out = T(o[0]);
  return st;
}

// Status -> (code, message), freeing it.
struct Err {
  int32_t code;
  std::string msg;
};
inline Err take(gn_status* st) {
  Err e{gn_status_code(st), gn_status_message(st)};
  gn_status_free(st);
  return e;
}

}  // namespace gt
