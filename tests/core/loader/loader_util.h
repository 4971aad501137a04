// loader_util.h - small RAII helpers over the public C API for loader_test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../c_api_handles.h"
#include "genesis/genesis.h"

namespace loader_test {

inline const std::string kPluginRoot = GENESIS_LOADER_TEST_PLUGIN_DIR;

// Runtime flags of an isolated test runtime: only the paths we pass, no noise.
constexpr uint32_t kIsolated = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;

// Directory of one test-plugin case.
inline std::string case_dir(const std::string& c) { return kPluginRoot + "/" + c; }

// Full path of libgenesis_plugin_<stem>.so in case directory c.
inline std::string case_file(const std::string& c, const std::string& stem) {
  return case_dir(c) + "/libgenesis_plugin_" + stem + ".so";
}

// Colon-joined case directories, searched in this order.
inline std::string search_path(std::initializer_list<const char*> cases) {
  std::string out;
  for (const char* c : cases) {
    if (!out.empty()) out += ':';
    out += case_dir(c);
  }
  return out;
}

// True when s contains needle.
inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// True when path names the same file as case_file(c, stem), tolerating a
// canonicalised or relative spelling of the directory part.
inline bool same_plugin_file(const std::string& path, const std::string& c, const std::string& stem) {
  const std::string tail = "/" + c + "/libgenesis_plugin_" + stem + ".so";
  return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
}

using c_api_handles::msg;
using c_api_handles::Runtime;
using c_api_handles::Status;
using c_api_handles::Tensor;

// Create a runtime; a failure is a test failure and yields nullptr.
inline Runtime create(const char* plugin_path, uint32_t flags = kIsolated, const char* plugins = nullptr,
                      const char* backends = nullptr) {
  gn_runtime_options o{};
  o.struct_size = sizeof o;
  o.flags = flags;
  o.plugin_path = plugin_path;
  o.plugins = plugins;
  o.backends = backends;
  gn_runtime* rt = nullptr;
  Status st(gn_runtime_create(&o, &rt));
  EXPECT_EQ(st, nullptr) << "gn_runtime_create failed: " << msg(st);
  return Runtime(rt);
}

inline Runtime create(const std::string& plugin_path, uint32_t flags = kIsolated, const char* plugins = nullptr,
                      const char* backends = nullptr) {
  return create(plugin_path.c_str(), flags, plugins, backends);
}

// A gn_plugin_record with owned strings.
struct Record {
  std::string path, name, version, description, error;
  uint32_t abi_major = 0, abi_minor = 0, negotiated_minor = 0;
  bool loaded = false;
};

// Entry i of a runtime's table read by get (gn_runtime_plugin_get, gn_device_type_get); nothing,
// and a test failure, when it cannot be read.
template <class R>
std::optional<R> record_at(gn_status* (*get)(const gn_runtime*, size_t, R*), const gn_runtime* rt, size_t i) {
  R r{};
  r.struct_size = sizeof r;
  Status st(get(rt, i, &r));
  EXPECT_EQ(st, nullptr) << msg(st);
  if (st) return std::nullopt;
  return r;
}

inline std::vector<Record> records(const gn_runtime* rt) {
  std::vector<Record> out;
  const size_t n = gn_runtime_plugin_count(rt);
  for (size_t i = 0; i < n; ++i) {
    const std::optional<gn_plugin_record> r = record_at(gn_runtime_plugin_get, rt, i);
    if (!r) continue;
    auto s = [](const char* p) { return std::string(p ? p : "<null>"); };
    out.push_back({s(r->path), s(r->name), s(r->version), s(r->description), s(r->error), r->abi_major, r->abi_minor,
                   r->negotiated_minor, r->loaded != 0});
  }
  return out;
}

// The record of case c / stem, if any.
inline std::optional<Record> record_of(const gn_runtime* rt, const std::string& c, const std::string& stem) {
  for (const Record& r : records(rt))
    if (same_plugin_file(r.path, c, stem)) return r;
  return std::nullopt;
}

// Number of loaded plugins named `name`.
inline int loaded_named(const gn_runtime* rt, const std::string& name) {
  int n = 0;
  for (const Record& r : records(rt)) n += (r.loaded && r.name == name);
  return n;
}

// The device-type record named `name`, if registered.
inline std::optional<gn_device_type_record> device_type(const gn_runtime* rt, const std::string& name) {
  const size_t n = gn_device_type_count(rt);
  for (size_t i = 0; i < n; ++i) {
    const std::optional<gn_device_type_record> r = record_at(gn_device_type_get, rt, i);
    if (r && r->name && name == r->name) return r;
  }
  return std::nullopt;
}

// Kernels of op `name`: "backend/device_type/dtype" strings.
inline std::vector<std::string> kernels_of(gn_runtime* rt, const char* name) {
  std::vector<std::string> out;
  const gn_op* op = nullptr;
  Status st(gn_op_find(rt, name, &op));
  EXPECT_EQ(st, nullptr) << msg(st);
  if (!op) return out;
  for (size_t i = 0; i < gn_op_kernel_count(op); ++i) {
    gn_kernel_record k{};
    k.struct_size = sizeof k;
    Status ks(gn_op_kernel_get(op, i, &k));
    EXPECT_EQ(ks, nullptr) << msg(ks);
    if (!ks) out.push_back(std::string(k.backend) + "/" + k.device_type + "/" + gn_dtype_name(k.dtype));
  }
  return out;
}

// Parse a device spec; failure is a test failure.
inline gn_device device(const gn_runtime* rt, const char* spec) {
  gn_device d{-1, 0};
  Status st(gn_device_parse(rt, spec, &d));
  EXPECT_EQ(st, nullptr) << spec << ": " << msg(st);
  return d;
}

// 1-D float32 tensor on dev holding v.
inline Tensor f32_tensor(gn_runtime* rt, gn_device dev, const std::vector<float>& v) {
  const int64_t shape[1] = {static_cast<int64_t>(v.size())};
  gn_tensor* t = nullptr;
  Status st(gn_tensor_from_host(rt, v.data(), shape, 1, GN_F32, dev, &t));
  EXPECT_EQ(st, nullptr) << msg(st);
  return Tensor(t);
}

// Contents of a float32 tensor.
inline std::vector<float> f32_values(const gn_tensor* t) {
  std::vector<float> v(static_cast<size_t>(gn_tensor_numel(t)));
  Status st(gn_tensor_to_host(t, v.data(), v.size() * sizeof(float)));
  EXPECT_EQ(st, nullptr) << msg(st);
  return v;
}

// Call a one-input one-output op; the status is returned, *out set on success.
inline Status unary(gn_runtime* rt, const char* name, gn_tensor* x, Tensor* out) {
  const gn_op* op = nullptr;
  Status st(gn_op_find(rt, name, &op));
  if (st) return st;
  gn_tensor* in[1] = {x};
  gn_tensor* res[1] = {nullptr};
  st.reset(gn_op_call(rt, op, in, 1, nullptr, 0, res, 1));
  if (!st) out->reset(res[0]);
  return st;
}

// Sets (or unsets, value == nullptr) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Base fixture: the caller's GENESIS_PLUGIN_PATH / GENESIS_PLUGINS must not
// leak into the tests.
class LoaderTest : public ::testing::Test {
 protected:
  ScopedEnv path_env_{"GENESIS_PLUGIN_PATH", nullptr};
  ScopedEnv plugins_env_{"GENESIS_PLUGINS", nullptr};
};

}  // namespace loader_test
