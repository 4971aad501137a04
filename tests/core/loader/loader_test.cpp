// loader_test.cpp - the plugin loader through the public C API only: discovery,
// rejection records and messages, staging (a rejected plugin leaves nothing),
// minor negotiation, provider choice and kernel fallback, and a runtime with
// no plugins at all.  The test plugins are in plugins/*.c.
#include <fstream>
#include <regex>
#include <set>

#include "loader_util.h"

namespace loader_test {
namespace {

// Built-in op names, read from ops.def so the test follows the table.
std::vector<std::string> builtin_op_names() {
  std::ifstream in(std::string(GENESIS_SOURCE_DIR) + "/core/ops/ops.def");
  std::vector<std::string> names;
  const std::regex row(R"(^GN_OP\(\s*(\w+)\s*,)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, row)) names.push_back(m[1]);
  return names;
}

// Op count of a runtime with no plugins: what every rejected plugin must leave.
size_t baseline_op_count() {
  Runtime rt = create("");
  return rt ? gn_op_count(rt.get()) : 0;
}

// Calls add(a, b) on rt: it must fail, with no output and a message containing `expected`.
void expect_add_fails(gn_runtime* rt, gn_tensor* a, gn_tensor* b, const std::string& expected) {
  const gn_op* add = nullptr;
  Status st(gn_op_find(rt, "add", &add));
  ASSERT_EQ(st, nullptr) << msg(st);
  gn_tensor* in[2] = {a, b};
  gn_tensor* out[1] = {nullptr};
  st.reset(gn_op_call(rt, add, in, 2, nullptr, 0, out, 1));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(out[0], nullptr) << "no output on failure";
  EXPECT_TRUE(contains(msg(st), expected)) << msg(st);
}

// ------------------------------------------------------------- no plugins

TEST_F(LoaderTest, NoPluginsRuntimeStillWorks) {
  Runtime rt = create("");
  ASSERT_TRUE(rt);
  EXPECT_EQ(gn_runtime_plugin_count(rt.get()), 0u);

  const std::vector<std::string> names = builtin_op_names();
  ASSERT_GT(names.size(), 50u) << "could not read ops.def";
  EXPECT_EQ(gn_op_count(rt.get()), names.size());
  for (const std::string& name : names) {
    const gn_op* op = nullptr;
    Status st(gn_op_find(rt.get(), name.c_str(), &op));
    ASSERT_EQ(st, nullptr) << name << ": " << msg(st);
    EXPECT_STREQ(gn_op_name(op), name.c_str());
    EXPECT_STREQ(gn_op_origin(op), "core") << name;
    EXPECT_EQ(gn_op_kernel_count(op), 0u) << name;
  }
  std::set<std::string> listed;
  for (size_t i = 0; i < gn_op_count(rt.get()); ++i) listed.insert(gn_op_name(gn_op_at(rt.get(), i)));
  EXPECT_EQ(listed.size(), names.size());

  const gn_op* none = nullptr;
  Status st(gn_op_find(rt.get(), "no_such_op", &none));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(msg(st), "no_such_op")) << msg(st);
}

TEST_F(LoaderTest, NoPluginsOpCallFailsClearly) {
  Runtime rt = create("");
  ASSERT_TRUE(rt);
  // The core itself serves host memory for "cpu", so tensors exist with zero
  // plugins; only the kernels are missing.
  gn_device cpu = device(rt.get(), "cpu");
  Tensor a = f32_tensor(rt.get(), cpu, {1, 2, 3});
  Tensor b = f32_tensor(rt.get(), cpu, {4, 5, 6});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(f32_values(b.get()), (std::vector<float>{4, 5, 6}));
  expect_add_fails(rt.get(), a.get(), b.get(), "[add] no kernel for device type 'cpu'");
}

TEST_F(LoaderTest, NoKernelForDeviceTypeFailsClearly) {
  // testdev has memory but no "add" kernel anywhere.
  Runtime rt = create(case_dir("good"));
  ASSERT_TRUE(rt);
  gn_device dev = device(rt.get(), "testdev");
  Tensor a = f32_tensor(rt.get(), dev, {1, 2, 3});
  ASSERT_TRUE(a);
  expect_add_fails(rt.get(), a.get(), a.get(), "[add] no kernel for device type 'testdev'");
}

// ------------------------------------------------------------- good plugin

TEST_F(LoaderTest, GoodPluginLoadsAndWorks) {
  Runtime rt = create(case_dir("good"));
  ASSERT_TRUE(rt);
  ASSERT_EQ(gn_runtime_plugin_count(rt.get()), 1u);
  const Record r = records(rt.get()).at(0);
  EXPECT_TRUE(r.loaded) << r.error;
  EXPECT_TRUE(same_plugin_file(r.path, "good", "loadertest_good")) << r.path;
  EXPECT_EQ(r.name, "loadertest_good");
  EXPECT_EQ(r.version, "1.0.0");
  EXPECT_EQ(r.description, "loader test: good plugin");
  EXPECT_EQ(r.abi_major, GN_ABI_VERSION_MAJOR);
  EXPECT_EQ(r.abi_minor, GN_ABI_VERSION_MINOR);
  EXPECT_EQ(r.negotiated_minor, GN_ABI_VERSION_MINOR);
  EXPECT_EQ(r.error, "");

  auto dt = device_type(rt.get(), "testdev");
  ASSERT_TRUE(dt);
  EXPECT_STREQ(dt->backend, "loadertest_good");
  EXPECT_STREQ(dt->providers, "loadertest_good");
  EXPECT_EQ(dt->device_count, 1);
  EXPECT_EQ(dt->score, 10);
  EXPECT_TRUE(dt->flags & GN_DEVICE_HOST_MEMORY);
  EXPECT_STREQ(dt->note, "");
  EXPECT_EQ(gn_device_count(rt.get(), "testdev"), 1);
  EXPECT_EQ(gn_device_count(rt.get(), "no_such_type"), 0);

  // A type whose device_count fails shows 0 devices and the reason.
  auto absent = device_type(rt.get(), "testdev_absent");
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->device_count, 0);
  EXPECT_TRUE(contains(absent->note, "deliberate")) << absent->note;

  gn_device dev = device(rt.get(), "testdev:0");
  EXPECT_EQ(dev.type, dt->id);
  EXPECT_EQ(dev.index, 0);
  char buf[64];
  gn_device_format(rt.get(), dev, buf, sizeof buf);
  EXPECT_STREQ(buf, "testdev:0");
  gn_device_props props{};
  props.struct_size = sizeof props;
  Status st(gn_device_properties(rt.get(), dev, &props));
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_STREQ(props.name, "loader-test host memory");
  EXPECT_EQ(props.total_memory, uint64_t{1} << 30);

  Tensor x = f32_tensor(rt.get(), dev, {1, -2, 3.5f});
  ASSERT_TRUE(x);
  EXPECT_EQ(gn_tensor_device(x.get()).type, dev.type);
  Tensor y;
  st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{-1, 2, -3.5f}));

  gn_memory_stats stats{};
  stats.struct_size = sizeof stats;
  st.reset(gn_memory_stats_get(rt.get(), dev, &stats));
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_GE(stats.allocated, 2 * 3 * sizeof(float));

  EXPECT_EQ(kernels_of(rt.get(), "neg"), (std::vector<std::string>{"loadertest_good/testdev/float32"}));

  // Minor 1 but NULL graph slots: capture is unsupported, not a crash.
  st.reset(gn_graph_begin(rt.get(), dev));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_UNSUPPORTED) << msg(st);
}

TEST_F(LoaderTest, NoPluginsFlagThenExplicitLoad) {
  Runtime rt = create(case_dir("good"), kIsolated | GN_RUNTIME_NO_PLUGINS);
  ASSERT_TRUE(rt);
  EXPECT_EQ(gn_runtime_plugin_count(rt.get()), 0u);
  EXPECT_FALSE(device_type(rt.get(), "testdev"));

  Status st(gn_runtime_load_plugin(rt.get(), case_file("good", "loadertest_good").c_str()));
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  Tensor y;
  Tensor x = f32_tensor(rt.get(), device(rt.get(), "testdev"), {2});
  st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), std::vector<float>{-2});

  // The same file again: refused (its name is taken), the first stays usable.
  st.reset(gn_runtime_load_plugin(rt.get(), case_file("good", "loadertest_good").c_str()));
  EXPECT_NE(st, nullptr);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  Tensor y2;
  st = unary(rt.get(), "neg", x.get(), &y2);
  EXPECT_EQ(st, nullptr) << msg(st);
}

TEST_F(LoaderTest, LoadMissingFileIsAStatus) {
  Runtime rt = create("", kIsolated | GN_RUNTIME_NO_PLUGINS);
  ASSERT_TRUE(rt);
  const std::string path = case_dir("good") + "/libgenesis_plugin_does_not_exist.so";
  Status st(gn_runtime_load_plugin(rt.get(), path.c_str()));
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(contains(msg(st), "libgenesis_plugin_does_not_exist.so")) << msg(st);
  gn_plugin_record r{};
  r.struct_size = sizeof r;
  st.reset(gn_runtime_plugin_get(rt.get(), 1000, &r));
  EXPECT_NE(st, nullptr) << "out-of-range record index must be an error";
}

// ------------------------------------------------------------ bad plugins

struct BadCase {
  const char* dir;
  const char* stem;
  std::vector<std::string> needles;  // must all appear in the error
  const char* plugin_name;           // "" when rejected before init
  uint32_t claimed_major;            // 0 when unknown
  const char* leaked_type;           // a device type it tried to register
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.dir; }

const BadCase kBadCases[] = {
    {"garbage", "garbage", {"invalid ELF header"}, "", 0, nullptr},
    {"missing_symbol", "loadertest_missing_symbol", {"no gn_plugin_init symbol"}, "", 0, nullptr},
    {"wrong_major",
     "loadertest_wrong_major",
     {"ABI major 2 (plugin) != 1 (host)"},
     "loadertest_wrong_major",
     2,
     "majordev"},
    {"init_error",
     "loadertest_init_error",
     {"deliberate init failure"},
     "loadertest_init_error",
     GN_ABI_VERSION_MAJOR,
     "initerrdev"},
    {"duplicate_op", "loadertest_duplicate_op", {"add"}, "loadertest_duplicate_op", GN_ABI_VERSION_MAJOR, "dupopdev"},
    {"duplicate_kernel",
     "loadertest_duplicate_kernel",
     {"neg"},
     "loadertest_duplicate_kernel",
     GN_ABI_VERSION_MAJOR,
     "dupkdev"},
};

class BadPluginTest : public LoaderTest, public ::testing::WithParamInterface<BadCase> {
 protected:
  // Nothing of the rejected plugin may be visible in rt.
  void expect_nothing_registered(gn_runtime* rt) {
    const BadCase& c = GetParam();
    if (c.leaked_type) {
      EXPECT_FALSE(device_type(rt, c.leaked_type)) << c.leaked_type << " leaked";
    }
    EXPECT_EQ(gn_device_count(rt, "olddev"), 0);
    EXPECT_EQ(gn_op_count(rt), baseline_op_count());
    EXPECT_TRUE(kernels_of(rt, "neg").empty());
    const gn_op* op = nullptr;
    Status st(gn_op_find(rt, "loadertest_initerr_op", &op));
    EXPECT_NE(st, nullptr) << "op of a failed plugin leaked";
    st.reset(gn_op_find(rt, "add", &op));
    ASSERT_EQ(st, nullptr) << msg(st);
    EXPECT_STREQ(gn_op_origin(op), "core");
    EXPECT_STRNE(gn_op_get_schema(op)->doc, "an impostor");
  }
};

TEST_P(BadPluginTest, DiscoverySkipsAndRecords) {
  const BadCase& c = GetParam();
  Runtime rt = create(case_dir(c.dir));
  ASSERT_TRUE(rt) << "a bad plugin must not make runtime creation fail";
  ASSERT_EQ(gn_runtime_plugin_count(rt.get()), 1u);
  const Record r = records(rt.get()).at(0);
  EXPECT_FALSE(r.loaded);
  EXPECT_TRUE(same_plugin_file(r.path, c.dir, c.stem)) << r.path;
  for (const std::string& needle : c.needles)
    EXPECT_TRUE(contains(r.error, needle)) << "error: \"" << r.error << "\" lacks \"" << needle << '"';
  EXPECT_EQ(r.name, c.plugin_name);
  EXPECT_EQ(r.abi_major, c.claimed_major);
  expect_nothing_registered(rt.get());
}

TEST_P(BadPluginTest, ExplicitLoadReturnsStatus) {
  const BadCase& c = GetParam();
  Runtime rt = create("", kIsolated | GN_RUNTIME_NO_PLUGINS);
  ASSERT_TRUE(rt);
  const std::string path = case_file(c.dir, c.stem);
  Status st(gn_runtime_load_plugin(rt.get(), path.c_str()));
  ASSERT_NE(st, nullptr);
  EXPECT_NE(gn_status_code(st.get()), GN_OK);
  const std::string m = msg(st);
  EXPECT_TRUE(contains(m, "libgenesis_plugin_" + std::string(c.stem) + ".so")) << "status should name the file: " << m;
  for (const std::string& needle : c.needles) EXPECT_TRUE(contains(m, needle)) << m;
  ASSERT_EQ(gn_runtime_plugin_count(rt.get()), 1u);
  EXPECT_FALSE(records(rt.get()).at(0).loaded);
  expect_nothing_registered(rt.get());
}

INSTANTIATE_TEST_SUITE_P(Cases, BadPluginTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.dir); });

TEST_F(LoaderTest, WrongMajorIsAVersionError) {
  Runtime rt = create("", kIsolated | GN_RUNTIME_NO_PLUGINS);
  ASSERT_TRUE(rt);
  Status st(gn_runtime_load_plugin(rt.get(), case_file("wrong_major", "loadertest_wrong_major").c_str()));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_VERSION) << msg(st);
}

TEST_F(LoaderTest, RejectionIsPrintedUnlessQuiet) {
  const std::string dir = case_dir("garbage");
  ::testing::internal::CaptureStderr();
  { Runtime rt = create(dir, GN_RUNTIME_NO_DEFAULT_PATHS); }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "genesis: skipping plugin ")) << err;
  EXPECT_TRUE(contains(err, "/garbage/libgenesis_plugin_garbage.so: ")) << err;
  EXPECT_TRUE(contains(err, "invalid ELF header")) << err;

  ::testing::internal::CaptureStderr();
  { Runtime rt = create(dir, kIsolated); }
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(contains(err, "skipping plugin")) << "GN_RUNTIME_QUIET printed: " << err;
}

TEST_F(LoaderTest, GoodPluginWorksAfterBadOnesWereSkipped) {
  Runtime rt = create(search_path(
      {"garbage", "missing_symbol", "wrong_major", "init_error", "duplicate_op", "duplicate_kernel", "good"}));
  ASSERT_TRUE(rt);
  const std::vector<Record> rs = records(rt.get());
  ASSERT_EQ(rs.size(), 7u);
  int loaded = 0;
  for (const Record& r : rs) {
    loaded += r.loaded;
    if (!r.loaded) {
      EXPECT_NE(r.error, "") << r.path;
    }
  }
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  EXPECT_EQ(gn_op_count(rt.get()), baseline_op_count());
  for (const char* t : {"majordev", "initerrdev", "dupopdev", "dupkdev"})
    EXPECT_FALSE(device_type(rt.get(), t)) << t << " leaked";
  EXPECT_EQ(kernels_of(rt.get(), "neg"), (std::vector<std::string>{"loadertest_good/testdev/float32"}));

  Tensor x = f32_tensor(rt.get(), device(rt.get(), "testdev"), {5, -6});
  Tensor y;
  Status st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{-5, 6}));
}

TEST_F(LoaderTest, DuplicatePluginNameRejected) {
  Runtime rt = create(search_path({"good", "dup_name"}));
  ASSERT_TRUE(rt);
  auto good = record_of(rt.get(), "good", "loadertest_good");
  auto dup = record_of(rt.get(), "dup_name", "loadertest_dup_name");
  ASSERT_TRUE(good && dup);
  EXPECT_TRUE(good->loaded) << good->error;
  EXPECT_FALSE(dup->loaded);
  // In discovery the clash is caught by the file-name rule; an explicit load of
  // the same file is refused as a clash (NameClashIsAlreadyExistsNamingBothFiles).
  EXPECT_TRUE(contains(dup->error, "'loadertest_good'")) << dup->error;
  EXPECT_TRUE(contains(dup->error, "named after its file")) << dup->error;
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  EXPECT_EQ(kernels_of(rt.get(), "neg").size(), 1u) << "the duplicate's kernels leaked";
  auto dt = device_type(rt.get(), "testdev");
  ASSERT_TRUE(dt);
  EXPECT_STREQ(dt->providers, "loadertest_good");
}

// ------------------------------------------------------ minor negotiation

TEST_F(LoaderTest, OldMinorPluginWithShortVtable) {
  Runtime rt = create(case_dir("old_minor"));
  ASSERT_TRUE(rt);
  auto r = record_of(rt.get(), "old_minor", "loadertest_old_minor");
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->loaded) << r->error;
  EXPECT_EQ(r->abi_major, 1u);
  EXPECT_EQ(r->abi_minor, 0u);
  EXPECT_EQ(r->negotiated_minor, 0u);

  gn_device dev = device(rt.get(), "olddev");
  gn_device_props props{};
  props.struct_size = sizeof props;
  Status st(gn_device_properties(rt.get(), dev, &props));
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_STREQ(props.name, "loader-test host memory");
  Tensor x = f32_tensor(rt.get(), dev, {1, 2});
  Tensor y;
  st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{-1, -2}));

  // The graph slots lie beyond struct_size: capture is unsupported.  (The
  // memory behind holds poison slots answering GN_ERR_INTERNAL if read.)
  st.reset(gn_graph_begin(rt.get(), dev));
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(gn_status_code(st.get()), GN_ERR_UNSUPPORTED) << msg(st);
  gn_graph* g = nullptr;
  st.reset(gn_graph_end(rt.get(), dev, &g));
  EXPECT_NE(st, nullptr);
  EXPECT_NE(gn_status_code(st.get()), GN_ERR_INTERNAL) << msg(st);
  EXPECT_EQ(g, nullptr);
}

TEST_F(LoaderTest, NewMinorPluginWithLongerVtable) {
  Runtime rt = create(case_dir("new_minor"));
  ASSERT_TRUE(rt);
  auto r = record_of(rt.get(), "new_minor", "loadertest_new_minor");
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->loaded) << r->error;
  EXPECT_EQ(r->abi_minor, uint32_t{GN_ABI_VERSION_MINOR + 1});
  EXPECT_EQ(r->negotiated_minor, uint32_t{GN_ABI_VERSION_MINOR});

  gn_device dev = device(rt.get(), "newdev:0");
  Tensor x = f32_tensor(rt.get(), dev, {3});
  Tensor y;
  Status st = unary(rt.get(), "neg", x.get(), &y);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), std::vector<float>{-3});

  // Negotiated minor 1 has graph slots, and this plugin fills them.
  st.reset(gn_graph_begin(rt.get(), dev));
  ASSERT_EQ(st, nullptr) << msg(st);
  gn_graph* g = nullptr;
  st.reset(gn_graph_end(rt.get(), dev, &g));
  ASSERT_EQ(st, nullptr) << msg(st);
  ASSERT_NE(g, nullptr);
  st.reset(gn_graph_launch(g));
  EXPECT_EQ(st, nullptr) << msg(st);
  gn_graph_destroy(g);
}

// ------------------------------------------- struct_size of schemas and kernels

// Loads the struct_size test plugin of case c into an isolated runtime.
Status load_sized(gn_runtime* rt, const char* c) {
  return Status(gn_runtime_load_plugin(rt, case_file(c, "loadertest_struct_size").c_str()));
}

TEST_F(LoaderTest, ExactAndLongerSchemaAndKernelStructsLoad) {
  for (const char* c : {"size_exact", "size_long"}) {
    SCOPED_TRACE(c);
    Runtime rt = create("");
    ASSERT_TRUE(rt);
    Status st = load_sized(rt.get(), c);
    ASSERT_EQ(st, nullptr) << msg(st);
    const gn_op* op = nullptr;
    st.reset(gn_op_find(rt.get(), "sized_neg", &op));
    ASSERT_EQ(st, nullptr) << msg(st);
    // The host keeps its own copy of the fields it knows and nothing beyond.
    const gn_op_schema* schema = gn_op_get_schema(op);
    ASSERT_NE(schema, nullptr);
    EXPECT_EQ(schema->struct_size, sizeof(gn_op_schema));
    EXPECT_EQ(schema->flags, 0u);
    EXPECT_EQ(schema->n_attrs, 0u);
    EXPECT_STREQ(schema->doc, "negation, registered with a chosen struct_size");
    gn_device dev = device(rt.get(), "sizedev");
    Tensor x = f32_tensor(rt.get(), dev, {1, -2});
    Tensor y;
    st = unary(rt.get(), "sized_neg", x.get(), &y);
    ASSERT_EQ(st, nullptr) << msg(st);
    EXPECT_EQ(f32_values(y.get()), (std::vector<float>{-1, 2}));
  }
}

TEST_F(LoaderTest, ZeroOrShortSchemaAndKernelStructsAreRejected) {
  const size_t base = baseline_op_count();
  struct Case {
    const char* dir;
    const char* what;
  };
  for (Case c : {Case{"size_schema_zero", "gn_op_schema.struct_size is 0"},
                 Case{"size_schema_short", "gn_op_schema.struct_size is 64"},
                 Case{"size_kernel_zero", "gn_kernel_desc.struct_size is 0"},
                 Case{"size_kernel_short", "gn_kernel_desc.struct_size is 40"}}) {
    SCOPED_TRACE(c.dir);
    Runtime rt = create("");
    ASSERT_TRUE(rt);
    Status st = load_sized(rt.get(), c.dir);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(gn_status_code(st.get()), GN_ERR_INVALID_ARGUMENT) << msg(st);
    EXPECT_TRUE(contains(msg(st), c.what)) << msg(st);
    EXPECT_TRUE(contains(msg(st), "smallest valid size")) << msg(st);
    // Staged registrations of the rejected plugin are dropped.
    EXPECT_EQ(gn_op_count(rt.get()), base);
  }
}

// A runtime destroyed during static destruction, after the loader's own
// statics would have been destroyed (this object is constructed before main,
// so it is destroyed after every function-local static): exit must be clean.
struct RuntimeAtExit {
  gn_runtime* rt = nullptr;
  ~RuntimeAtExit() { gn_runtime_destroy(rt); }
};
RuntimeAtExit g_runtime_at_exit;

TEST_F(LoaderTest, RuntimeDestroyedDuringStaticDestruction) {
  Runtime rt = create(case_dir("good"));
  ASSERT_TRUE(rt);
  ASSERT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  gn_runtime_destroy(g_runtime_at_exit.rt);
  g_runtime_at_exit.rt = rt.release();
}

TEST_F(LoaderTest, MixedMinorsInOneRuntime) {
  Runtime rt = create(search_path({"old_minor", "new_minor", "good"}));
  ASSERT_TRUE(rt);
  auto old_r = record_of(rt.get(), "old_minor", "loadertest_old_minor");
  auto new_r = record_of(rt.get(), "new_minor", "loadertest_new_minor");
  auto good_r = record_of(rt.get(), "good", "loadertest_good");
  ASSERT_TRUE(old_r && new_r && good_r);
  EXPECT_TRUE(old_r->loaded && new_r->loaded && good_r->loaded);
  EXPECT_EQ(old_r->negotiated_minor, 0u);
  EXPECT_EQ(new_r->negotiated_minor, uint32_t{GN_ABI_VERSION_MINOR});
  EXPECT_EQ(good_r->negotiated_minor, uint32_t{GN_ABI_VERSION_MINOR});
  EXPECT_EQ(kernels_of(rt.get(), "neg").size(), 3u);
}

// ------------------------------------------------ providers and dispatch

TEST_F(LoaderTest, HighestScoreServesAndUnsupportedFallsThrough) {
  Runtime rt = create(search_path({"good", "fallback"}));
  ASSERT_TRUE(rt);
  auto dt = device_type(rt.get(), "testdev");
  ASSERT_TRUE(dt);
  EXPECT_STREQ(dt->backend, "loadertest_good");
  EXPECT_STREQ(dt->providers, "loadertest_good,loadertest_fallback");
  EXPECT_EQ(dt->score, 10);

  gn_device dev = device(rt.get(), "testdev");
  Tensor x = f32_tensor(rt.get(), dev, {-1, 2});
  Tensor y;
  Status st = unary(rt.get(), "neg", x.get(), &y);  // good's kernel first
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{1, -2}));
  Tensor z;
  st = unary(rt.get(), "abs", x.get(), &z);  // good declines, fallback computes
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(z.get()), (std::vector<float>{1, 2}));
}

TEST_F(LoaderTest, BackendsOptionPicksTheProvider) {
  Runtime rt = create(search_path({"good", "fallback"}), kIsolated, nullptr, "testdev=loadertest_fallback");
  ASSERT_TRUE(rt);
  auto dt = device_type(rt.get(), "testdev");
  ASSERT_TRUE(dt);
  EXPECT_STREQ(dt->backend, "loadertest_fallback");
  EXPECT_EQ(dt->score, 5);

  Tensor x = f32_tensor(rt.get(), device(rt.get(), "testdev"), {-1, 2});
  Tensor y;
  Status st = unary(rt.get(), "neg", x.get(), &y);  // fallback's marker kernel now first
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(f32_values(y.get()), (std::vector<float>{42, 42}));
}

TEST_F(LoaderTest, EveryKernelDecliningIsAnError) {
  Runtime rt = create(case_dir("good"));
  ASSERT_TRUE(rt);
  Tensor x = f32_tensor(rt.get(), device(rt.get(), "testdev"), {-1});
  Tensor y;
  Status st = unary(rt.get(), "abs", x.get(), &y);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(y, nullptr);
  EXPECT_TRUE(contains(msg(st), "abs")) << msg(st);
}

// ------------------------------------------------- search path and lists

TEST_F(LoaderTest, EarlierDirectoryShadowsSameFileName) {
  Runtime rt = create(search_path({"shadow", "good"}));
  ASSERT_TRUE(rt);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  auto shadow = record_of(rt.get(), "shadow", "loadertest_good");
  ASSERT_TRUE(shadow);
  EXPECT_TRUE(shadow->loaded) << shadow->error;
  EXPECT_EQ(shadow->version, "shadow");
  auto hidden = record_of(rt.get(), "good", "loadertest_good");
  EXPECT_FALSE(hidden && hidden->loaded) << "the shadowed file was loaded too";
}

TEST_F(LoaderTest, AllowListFromOptions) {
  Runtime rt = create(search_path({"good", "fallback"}), kIsolated, "loadertest_fallback");
  ASSERT_TRUE(rt);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_fallback"), 1);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 0);
  auto dt = device_type(rt.get(), "testdev");
  ASSERT_TRUE(dt);
  EXPECT_STREQ(dt->providers, "loadertest_fallback");
}

TEST_F(LoaderTest, AllowListFromEnvironment) {
  ScopedEnv env("GENESIS_PLUGINS", "loadertest_good,loadertest_new_minor");
  Runtime rt = create(search_path({"good", "fallback", "new_minor"}));
  ASSERT_TRUE(rt);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_new_minor"), 1);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_fallback"), 0);

  // options->plugins wins over the environment.
  Runtime rt2 = create(search_path({"good", "fallback"}), kIsolated, "loadertest_fallback");
  ASSERT_TRUE(rt2);
  EXPECT_EQ(loaded_named(rt2.get(), "loadertest_fallback"), 1);
  EXPECT_EQ(loaded_named(rt2.get(), "loadertest_good"), 0);
}

TEST_F(LoaderTest, PluginPathEnvironmentVariable) {
  ScopedEnv env("GENESIS_PLUGIN_PATH", search_path({"good", "new_minor"}).c_str());
  // Default paths on, restricted to our plugins so the built-in directory's
  // plugins (if built) do not matter here.
  Runtime rt = create(nullptr, GN_RUNTIME_QUIET, "loadertest_good,loadertest_new_minor");
  ASSERT_TRUE(rt);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_good"), 1);
  EXPECT_EQ(loaded_named(rt.get(), "loadertest_new_minor"), 1);

  // options->plugin_path is searched first: its file shadows the env's.
  Runtime rt2 = create(case_dir("shadow"), GN_RUNTIME_QUIET, "loadertest_good");
  ASSERT_TRUE(rt2);
  auto r = record_of(rt2.get(), "shadow", "loadertest_good");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->loaded) << r->error;
  EXPECT_EQ(loaded_named(rt2.get(), "loadertest_good"), 1);

  // GN_RUNTIME_NO_DEFAULT_PATHS skips $GENESIS_PLUGIN_PATH too.
  Runtime rt3 = create(nullptr, kIsolated);
  ASSERT_TRUE(rt3);
  EXPECT_EQ(gn_runtime_plugin_count(rt3.get()), 0u);
}

TEST_F(LoaderTest, DefaultDirectoryNextToLibrary) {
  const std::string reference = std::string(GENESIS_TEST_PLUGIN_DIR) + "/libgenesis_plugin_reference.so";
  if (!std::ifstream(reference)) GTEST_SKIP() << "reference plugin not built: " << reference;
  gn_runtime* raw = nullptr;
  Status st(gn_runtime_create(nullptr, &raw));
  Runtime rt(raw);
  ASSERT_EQ(st, nullptr) << msg(st);
  EXPECT_EQ(loaded_named(rt.get(), "reference"), 1);
  EXPECT_GE(gn_device_count(rt.get(), "cpu"), 1);
}

}  // namespace
}  // namespace loader_test
