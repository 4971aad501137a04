// axpby_plugin_test.cpp - the third-party C plugin in backends/examples/axpby,
// loaded the three ways its README promises and exercised through the public
// C API: a new op schema, its inference errors, its kernels and attributes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../core/c_api_handles.h"
#include "genesis/genesis.h"

namespace {

const std::string kPlugin = GENESIS_EXAMPLE_AXPBY_PLUGIN;  // full path of the .so
const std::string kPluginDir = GENESIS_EXAMPLE_AXPBY_PLUGIN_DIR;

using c_api_handles::msg;
using c_api_handles::Runtime;
using c_api_handles::Status;
using c_api_handles::Tensor;

// A runtime over the built-in plugin dir plus `extra_path`, quiet.
Runtime make_runtime(const std::string& extra_path, uint32_t flags, const char* plugins) {
  const std::string path = std::string(GENESIS_TEST_PLUGIN_DIR) + ":" + extra_path;
  gn_runtime_options o{};
  o.struct_size = sizeof o;
  o.flags = flags | GN_RUNTIME_QUIET;
  o.plugin_path = path.c_str();
  o.plugins = plugins;
  gn_runtime* rt = nullptr;
  Status st(gn_runtime_create(&o, &rt));
  EXPECT_EQ(st, nullptr) << msg(st);
  return Runtime(rt);
}

bool axpby_loaded(const gn_runtime* rt) {
  for (size_t i = 0; i < gn_runtime_plugin_count(rt); ++i) {
    gn_plugin_record r{};
    r.struct_size = sizeof r;
    Status st(gn_runtime_plugin_get(rt, i, &r));
    if (!st && r.loaded && std::string(r.name) == "example_axpby") return true;
  }
  return false;
}

template <class V>
Tensor make(gn_runtime* rt, const std::vector<V>& v, std::vector<int64_t> shape, int32_t dtype) {
  gn_device cpu{};
  Status st(gn_device_parse(rt, "cpu", &cpu));
  EXPECT_EQ(st, nullptr) << msg(st);
  gn_tensor* t = nullptr;
  st.reset(gn_tensor_from_host(rt, v.data(), shape.data(), static_cast<int32_t>(shape.size()), dtype, cpu, &t));
  EXPECT_EQ(st, nullptr) << msg(st);
  return Tensor(t);
}

template <class V>
std::vector<V> values(const gn_tensor* t) {
  std::vector<V> out(static_cast<size_t>(gn_tensor_numel(t)));
  Status st(gn_tensor_to_host(t, out.data(), out.size() * sizeof(V)));
  EXPECT_EQ(st, nullptr) << msg(st);
  return out;
}

// example_axpby(x, y, attrs...) -> status; *out set on success.
Status axpby(gn_runtime* rt, gn_tensor* x, gn_tensor* y, std::vector<gn_attr_value> attrs, Tensor* out) {
  const gn_op* op = nullptr;
  Status st(gn_op_find(rt, "example_axpby", &op));
  if (st) return st;
  gn_tensor* in[2] = {x, y};
  gn_tensor* res[1] = {nullptr};
  st.reset(gn_op_call(rt, op, in, 2, attrs.data(), attrs.size(), res, 1));
  if (!st) out->reset(res[0]);
  return st;
}

class AxpbyPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GENESIS_PLUGIN_PATH");
    unsetenv("GENESIS_PLUGINS");
    rt_ = make_runtime(kPluginDir, GN_RUNTIME_NO_DEFAULT_PATHS, nullptr);
    ASSERT_TRUE(rt_);
    ASSERT_TRUE(axpby_loaded(rt_.get()));
  }
  Runtime rt_;
};

TEST_F(AxpbyPlugin, RegistersSchemaAndKernels) {
  const gn_op* op = nullptr;
  Status st(gn_op_find(rt_.get(), "example_axpby", &op));
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_STREQ(gn_op_origin(op), "example_axpby");
  const gn_op_schema* s = gn_op_get_schema(op);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->min_inputs, 2);
  EXPECT_EQ(s->max_inputs, 2);
  ASSERT_EQ(s->n_attrs, 2u);
  EXPECT_STREQ(s->attrs[0].name, "a");
  EXPECT_STREQ(s->attrs[1].name, "b");
  EXPECT_EQ(s->attrs[1].default_value.u.f, 1.0);
  std::vector<std::string> kernels;
  for (size_t i = 0; i < gn_op_kernel_count(op); ++i) {
    gn_kernel_record k{};
    k.struct_size = sizeof k;
    Status ks(gn_op_kernel_get(op, i, &k));
    ASSERT_EQ(ks, nullptr) << msg(ks);
    kernels.push_back(std::string(k.backend) + "/" + k.device_type + "/" + gn_dtype_name(k.dtype));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"example_axpby/cpu/float32", "example_axpby/cpu/float64"}));
}

TEST_F(AxpbyPlugin, ComputesWithDefaultAndGivenAttributes) {
  gn_runtime* rt = rt_.get();
  Tensor x = make<float>(rt, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  Tensor y = make<float>(rt, {10, 20, 30, 40, 50, 60}, {2, 3}, GN_F32);
  Tensor out;
  Status st = axpby(rt, x.get(), y.get(), {}, &out);  // a = b = 1
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(gn_tensor_dtype(out.get()), GN_F32);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  st = axpby(rt, x.get(), y.get(), {gn_attr_float(2), gn_attr_float(-0.5)}, &out);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{-3, -6, -9, -12, -15, -18}));
  st = axpby(rt, x.get(), y.get(), {gn_attr_float(3)}, &out);  // b keeps its default
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{13, 26, 39, 52, 65, 78}));

  Tensor xd = make<double>(rt, {0.1, 0.2}, {2}, GN_F64);
  Tensor yd = make<double>(rt, {1e-3, 2e-3}, {2}, GN_F64);
  st = axpby(rt, xd.get(), yd.get(), {gn_attr_float(10), gn_attr_float(1000)}, &out);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(gn_tensor_dtype(out.get()), GN_F64);
  const std::vector<double> got = values<double>(out.get());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_DOUBLE_EQ(got[0], 2.0);
  EXPECT_DOUBLE_EQ(got[1], 4.0);
}

// The README's promise: the plugin needs no backend, the core's own host
// memory serves "cpu" when it is loaded alone.
TEST(AxpbyPluginAlone, RunsOnTheCoresHostMemory) {
  unsetenv("GENESIS_PLUGIN_PATH");
  unsetenv("GENESIS_PLUGINS");
  Runtime rt = make_runtime(kPluginDir, GN_RUNTIME_NO_DEFAULT_PATHS, "example_axpby");
  ASSERT_TRUE(rt);
  ASSERT_TRUE(axpby_loaded(rt.get()));
  ASSERT_EQ(gn_runtime_plugin_count(rt.get()), 1u) << "only the example plugin may be loaded";
  Tensor x = make<float>(rt.get(), {1, 2, 3}, {3}, GN_F32);
  Tensor y = make<float>(rt.get(), {10, 20, 30}, {3}, GN_F32);
  Tensor out;
  Status st = axpby(rt.get(), x.get(), y.get(), {gn_attr_float(2), gn_attr_float(0.5)}, &out);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{7, 14, 21}));
}

TEST_F(AxpbyPlugin, NonContiguousInputsAreMadeDense) {
  gn_runtime* rt = rt_.get();
  Tensor x = make<float>(rt, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  Tensor y = make<float>(rt, {1, 1, 1, 1, 1, 1}, {3, 2}, GN_F32);
  gn_tensor* xt = nullptr;
  Status st(gn_tensor_transpose(x.get(), 0, 1, &xt));
  ASSERT_EQ(st, nullptr) << msg(st);
  Tensor x_t(xt);  // [[1,4],[2,5],[3,6]]
  Tensor out;
  st = axpby(rt, x_t.get(), y.get(), {gn_attr_float(1), gn_attr_float(-1)}, &out);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST_F(AxpbyPlugin, InferenceErrorsAreClear) {
  gn_runtime* rt = rt_.get();
  Tensor x = make<float>(rt, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  Tensor y3 = make<float>(rt, {1, 2, 3}, {3}, GN_F32);
  Tensor out;
  Status st = axpby(rt, x.get(), y3.get(), {}, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_SHAPE);
  EXPECT_NE(msg(st).find("[example_axpby] x and y must have the same shape, got [2, 3] and [3]"), std::string::npos)
      << msg(st);
  EXPECT_EQ(out, nullptr);

  Tensor yd = make<double>(rt, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F64);
  st = axpby(rt, x.get(), yd.get(), {}, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_DTYPE);
  EXPECT_NE(msg(st).find("same dtype, got float32 and float64"), std::string::npos) << msg(st);

  Tensor xi = make<int32_t>(rt, {1, 2}, {2}, GN_I32);
  st = axpby(rt, xi.get(), xi.get(), {}, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_DTYPE);
  EXPECT_NE(msg(st).find("[example_axpby] supports float32 and float64 only, got int32"), std::string::npos) << msg(st);

  // The core checks attributes against the plugin's schema before the kernel.
  st = axpby(rt, x.get(), x.get(), {gn_attr_string("two")}, &out);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg(st).find("[example_axpby] attribute 'a'"), std::string::npos) << msg(st);
}

TEST_F(AxpbyPlugin, IntegerAttributeIsConvertedToFloat) {
  // An int for a float attribute is accepted (like a Python int); the kernel
  // still sees a GN_ATTR_FLOAT, or it would answer with an error.
  gn_runtime* rt = rt_.get();
  Tensor x = make<float>(rt, {1, 2}, {2}, GN_F32);
  Tensor out;
  Status st = axpby(rt, x.get(), x.get(), {gn_attr_int(2)}, &out);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(values<float>(out.get()), (std::vector<float>{3, 6}));
}

TEST(AxpbyPluginLoading, ExplicitPathAndEnvironment) {
  unsetenv("GENESIS_PLUGINS");
  unsetenv("GENESIS_PLUGIN_PATH");
  {  // gn_runtime_load_plugin with the file's path
    Runtime rt = make_runtime("", GN_RUNTIME_NO_DEFAULT_PATHS, nullptr);
    ASSERT_TRUE(rt);
    EXPECT_FALSE(axpby_loaded(rt.get())) << "must not be in the default plugin directory";
    Status st(gn_runtime_load_plugin(rt.get(), kPlugin.c_str()));
    ASSERT_EQ(st, nullptr) << msg(st);
    EXPECT_TRUE(axpby_loaded(rt.get()));
  }
  {  // $GENESIS_PLUGIN_PATH, with the default directory still searched
    setenv("GENESIS_PLUGIN_PATH", kPluginDir.c_str(), 1);
    gn_runtime_options o{};
    o.struct_size = sizeof o;
    o.flags = GN_RUNTIME_QUIET;
    gn_runtime* raw = nullptr;
    Status st(gn_runtime_create(&o, &raw));
    Runtime rt(raw);
    unsetenv("GENESIS_PLUGIN_PATH");
    ASSERT_EQ(st, nullptr) << msg(st);
    EXPECT_TRUE(axpby_loaded(rt.get()));
  }
}

}  // namespace
