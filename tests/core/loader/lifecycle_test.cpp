// lifecycle_test.cpp - what the loader promises a plugin about its life: shutdown
// runs exactly once for every init that succeeded, also when the host rejects
// the plugin afterwards; gn_runtime_load_plugin keeps the plugin's own error
// code and uses one code per kind of rejection; plugin names must match their
// file names in discovery; options.backends must name a loaded provider.  The
// plugin plugins/lifecycle.c writes its events to a log file we read back.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "loader_util.h"

namespace loader_test {
namespace {

// A fresh log path, removed on scope exit.
class Log {
 public:
  Log() {
    path_ = ::testing::TempDir() + "genesis_lifecycle_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter_++) + ".log";
    std::remove(path_.c_str());
  }
  ~Log() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  // Every event written so far, one per line.
  std::string events() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

// A runtime whose plugins see the option lifecycle_log=<log>.  Returns the
// status of gn_runtime_create; *out is set on success.
Status create_logged(const Log& log, const std::string& plugin_path, uint32_t flags, Runtime* out,
                     const char* plugins = nullptr, const char* backends = nullptr) {
  const char* keys[1] = {"lifecycle_log"};
  const char* values[1] = {log.path().c_str()};
  gn_runtime_options o{};
  o.struct_size = sizeof o;
  o.flags = flags;
  o.plugin_path = plugin_path.c_str();
  o.plugins = plugins;
  o.backends = backends;
  o.n_options = 1;
  o.option_keys = keys;
  o.option_values = values;
  gn_runtime* rt = nullptr;
  Status st(gn_runtime_create(&o, &rt));
  out->reset(rt);
  return st;
}

const char* code_name(const Status& st) { return gn_status_code_name(gn_status_code(st.get())); }

// Loads the library of test-plugin case c (plugin loadertest_<c>) into a new runtime without
// plugins, logging to log: the load must fail with this code and a message containing `text`.
void expect_load_fails(const Log& log, const std::string& c, Runtime* rt, int32_t code, const std::string& text) {
  Status st = create_logged(log, "", kIsolated | GN_RUNTIME_NO_PLUGINS, rt);
  ASSERT_EQ(st, nullptr) << msg(st);
  st.reset(gn_runtime_load_plugin(rt->get(), case_file(c, "loadertest_" + c).c_str()));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), code) << code_name(st) << ": " << msg(st);
  EXPECT_TRUE(contains(msg(st), text)) << msg(st);
}

TEST_F(LoaderTest, GoodPluginIsShutDownOnceWhenTheRuntimeDies) {
  Log log;
  {
    Runtime rt;
    Status st = create_logged(log, case_dir("lifecycle"), kIsolated, &rt);
    ASSERT_EQ(st, nullptr) << msg(st);
    EXPECT_EQ(loaded_named(rt.get(), "loadertest_lifecycle"), 1);
    EXPECT_EQ(log.events(), "init loadertest_lifecycle\n");
  }
  EXPECT_EQ(log.events(), "init loadertest_lifecycle\nshutdown\n");
}

TEST_F(LoaderTest, PluginRejectedAfterInitIsShutDown) {
  Log log;
  Runtime rt;
  Status st = create_logged(log, case_dir("life_badreg"), kIsolated, &rt);
  ASSERT_EQ(st, nullptr) << msg(st);
  auto r = record_of(rt.get(), "life_badreg", "loadertest_life_badreg");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->loaded);
  EXPECT_TRUE(contains(r->error, "loadertest_no_such_op")) << r->error;
  // Shut down at rejection, before its library was unloaded, and only then.
  EXPECT_EQ(log.events(), "init loadertest_life_badreg\nshutdown\n");
  rt.reset();
  EXPECT_EQ(log.events(), "init loadertest_life_badreg\nshutdown\n");
}

TEST_F(LoaderTest, FailedInitKeepsItsCodeAndIsNotShutDown) {
  Log log;
  Runtime rt;
  expect_load_fails(log, "life_initfail", &rt, GN_ERR_DEVICE, "lifedev hardware is missing");
  rt.reset();
  EXPECT_EQ(log.events(), "init-failed\n") << "shutdown ran for a failed init";
}

TEST_F(LoaderTest, NameClashIsAlreadyExistsNamingBothFiles) {
  Log log;
  Runtime rt;
  Status st = create_logged(log, case_dir("good"), kIsolated, &rt);
  ASSERT_EQ(st, nullptr) << msg(st);
  const std::string clash = case_file("life_clash", "loadertest_life_clash");
  st.reset(gn_runtime_load_plugin(rt.get(), clash.c_str()));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_ALREADY_EXISTS) << code_name(st) << ": " << msg(st);
  EXPECT_TRUE(contains(msg(st), clash)) << msg(st);
  EXPECT_TRUE(contains(msg(st), "/good/libgenesis_plugin_loadertest_good.so")) << msg(st);
  EXPECT_EQ(log.events(), "init loadertest_good\nshutdown\n");
  // The first plugin is untouched.
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  EXPECT_FALSE(device_type(rt.get(), "lifedev"));
  Tensor x = f32_tensor(rt.get(), device(rt.get(), "testdev"), {2});
  Tensor y;
  st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{-2}));
}

// Discovery selects files by name (the allow-list, shadowing), and `genesis
// info` shows the name a plugin reports: the two must be the same, or a file
// could slip past the allow-list or take the name of a real backend.
TEST_F(LoaderTest, DiscoveredPluginMustBeNamedAfterItsFile) {
  Log log;
  Runtime rt;
  Status st = create_logged(log, search_path({"life_clash", "good"}), kIsolated, &rt);
  ASSERT_EQ(st, nullptr) << msg(st);
  auto impostor = record_of(rt.get(), "life_clash", "loadertest_life_clash");
  ASSERT_TRUE(impostor);
  EXPECT_FALSE(impostor->loaded);
  EXPECT_TRUE(contains(impostor->error, "'loadertest_good'")) << impostor->error;
  EXPECT_TRUE(contains(impostor->error, "libgenesis_plugin_loadertest_life_clash.so")) << impostor->error;
  auto good = record_of(rt.get(), "good", "loadertest_good");
  ASSERT_TRUE(good);
  EXPECT_TRUE(good->loaded) << good->error;
  EXPECT_EQ(log.events(), "init loadertest_good\nshutdown\n");
}

TEST_F(LoaderTest, CommWithZeroStructSizeIsRejected) {
  Log log;
  Runtime rt;
  expect_load_fails(log, "life_comm_zero", &rt, GN_ERR_INVALID_ARGUMENT, "gn_comm_vtable.struct_size is 0");
  EXPECT_FALSE(device_type(rt.get(), "lifedev"));
}

// One code per kind of rejection (the table in docs/abi.md).
TEST_F(LoaderTest, LoadPluginErrorCodes) {
  struct Case {
    std::string path;
    int32_t code;
  };
  const std::vector<Case> cases = {
      {case_dir("good") + "/libgenesis_plugin_does_not_exist.so", GN_ERR_NOT_FOUND},
      {case_file("garbage", "garbage"), GN_ERR_IO},
      {case_file("missing_symbol", "loadertest_missing_symbol"), GN_ERR_NOT_FOUND},
      {case_file("wrong_major", "loadertest_wrong_major"), GN_ERR_VERSION},
      {case_file("init_error", "loadertest_init_error"), GN_ERR_INTERNAL},  // the plugin's own code
      {case_file("duplicate_op", "loadertest_duplicate_op"), GN_ERR_ALREADY_EXISTS},
      {case_file("duplicate_kernel", "loadertest_duplicate_kernel"), GN_ERR_ALREADY_EXISTS},
      {case_file("size_schema_zero", "loadertest_struct_size"), GN_ERR_INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    Runtime rt = create("", kIsolated | GN_RUNTIME_NO_PLUGINS);
    ASSERT_TRUE(rt);
    Status st(gn_runtime_load_plugin(rt.get(), c.path.c_str()));
    ASSERT_NE(st, nullptr) << c.path;
    EXPECT_EQ(gn_status_code(st.get()), c.code)
        << c.path << ": got " << code_name(st) << ", want " << gn_status_code_name(c.code) << ": " << msg(st);
  }
}

TEST_F(LoaderTest, BackendsNamingAnUnknownPluginIsAnError) {
  Log log;
  for (const char* spec : {"testdev=nope", "nodev=loadertest_good"}) {
    Runtime rt;
    Status st = create_logged(log, search_path({"good", "lifecycle"}), kIsolated, &rt, nullptr, spec);
    ASSERT_NE(st, nullptr) << spec << " was accepted";
    EXPECT_EQ(rt, nullptr);
    EXPECT_EQ(gn_status_code(st.get()), GN_ERR_NOT_FOUND) << code_name(st) << ": " << msg(st);
    const std::string entry(spec);
    EXPECT_TRUE(contains(msg(st), "'" + entry.substr(entry.find('=') + 1) + "'")) << msg(st);
    EXPECT_TRUE(contains(msg(st), "'" + entry.substr(0, entry.find('=')) + "'")) << msg(st);
  }
  // Every plugin loaded for a failed create was shut down again.
  EXPECT_EQ(log.events(), "init loadertest_lifecycle\nshutdown\ninit loadertest_lifecycle\nshutdown\n");
  Runtime ok;
  Status st = create_logged(log, case_dir("good"), kIsolated, &ok, nullptr, "testdev=loadertest_good");
  EXPECT_EQ(st, nullptr) << msg(st);
}

}  // namespace
}  // namespace loader_test
