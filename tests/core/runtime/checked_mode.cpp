// checked_mode.cpp - GENESIS_CHECKED=1: a second gn_tensor_release, a stream,
// event or runtime destroyed twice, and handles used after their end are
// reported by name and abort (death tests), instead of touching freed memory.
// Correct programs run unchanged.  The variable is set before the first
// Genesis call (the core reads it then), so this is a binary of its own.
#include <cstdlib>

#include "util.h"

namespace {

const bool g_checked_env = [] {
  setenv("GENESIS_CHECKED", "1", 1);
  return true;
}();

using gt::Runtime;

class CheckedMode : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_checked_env);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

gn_tensor* make_tensor(gn_runtime* rt, gn_device dev) {
  const float v[2] = {1, 2};
  const int64_t shape[1] = {2};
  gn_tensor* t = nullptr;
  gn_status* st = gn_tensor_from_host(rt, v, shape, 1, GN_F32, dev, &t);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return t;
}

const char* kPrefix = "genesis: GENESIS_CHECKED: ";

TEST_F(CheckedMode, CorrectProgramRunsUnchanged) {
  Runtime r;
  gn_tensor* a = make_tensor(r.rt, r.cpu);
  gn_tensor_retain(a);
  gn_tensor_release(a);  // one reference left
  const gn_op* neg = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "neg", &neg));
  gn_tensor* in[1] = {a};
  gn_tensor* out[1] = {nullptr};
  GN_OK_OR_FAIL(gn_op_call(r.rt, neg, in, 1, nullptr, 0, out, 1));
  float got[2] = {0, 0};
  GN_OK_OR_FAIL(gn_tensor_to_host(out[0], got, sizeof got));
  EXPECT_EQ(got[0], -1.0f);
  EXPECT_EQ(got[1], -2.0f);
  gn_stream* s = nullptr;
  GN_OK_OR_FAIL(gn_stream_create(r.rt, r.cpu, &s));
  GN_OK_OR_FAIL(gn_stream_synchronize(s));
  GN_OK_OR_FAIL(gn_stream_destroy(s));
  gn_tensor_release(out[0]);
  gn_tensor_release(a);
}

// A tensor outliving gn_runtime_destroy stays usable (documented), also here.
TEST_F(CheckedMode, TensorsOutliveTheirRuntime) {
  gn_tensor* a = nullptr;
  {
    Runtime r;
    a = make_tensor(r.rt, r.cpu);
  }
  float got[2] = {0, 0};
  GN_OK_OR_FAIL(gn_tensor_to_host(a, got, sizeof got));
  EXPECT_EQ(got[1], 2.0f);
  gn_tensor_release(a);
}

TEST_F(CheckedMode, DoubleTensorReleaseAborts) {
  EXPECT_DEATH(
      {
        Runtime r;
        gn_tensor* a = make_tensor(r.rt, r.cpu);
        gn_tensor_release(a);
        gn_tensor_release(a);
      },
      std::string(kPrefix) + "gn_tensor_release: tensor 0x[0-9a-f]+ was already released");
}

TEST_F(CheckedMode, ReleasedTensorUsedInAnOpAborts) {
  EXPECT_DEATH(
      {
        Runtime r;
        gn_tensor* a = make_tensor(r.rt, r.cpu);
        gn_tensor_release(a);
        const gn_op* neg = nullptr;
        gn_status_free(gn_op_find(r.rt, "neg", &neg));
        gn_tensor* in[1] = {a};
        gn_tensor* out[1] = {nullptr};
        gn_status_free(gn_op_call(r.rt, neg, in, 1, nullptr, 0, out, 1));
      },
      std::string(kPrefix) + "neg: input tensor 0x[0-9a-f]+ was already released");
  EXPECT_DEATH(
      {
        Runtime r;
        gn_tensor* a = make_tensor(r.rt, r.cpu);
        gn_tensor_release(a);
        float got[2];
        gn_status_free(gn_tensor_to_host(a, got, sizeof got));
      },
      std::string(kPrefix) + "gn_tensor_to_host: tensor 0x[0-9a-f]+ was already released");
}

TEST_F(CheckedMode, RuntimeDestroyedTwiceAborts) {
  EXPECT_DEATH(
      {
        Runtime r;
        gn_runtime_destroy(r.rt);
        gn_runtime_destroy(r.rt);  // and the fixture's destructor would be a third
      },
      std::string(kPrefix) + "gn_runtime_destroy: runtime 0x[0-9a-f]+ was (destroyed twice|already released)");
}

TEST_F(CheckedMode, DestroyedRuntimeUsedAborts) {
  // Gone entirely (no tensor kept it alive).
  EXPECT_DEATH(
      {
        Runtime r;
        gn_runtime* rt = r.rt;
        r.rt = nullptr;
        gn_runtime_destroy(rt);
        const gn_op* op = nullptr;
        gn_status_free(gn_op_find(rt, "neg", &op));
      },
      std::string(kPrefix) + "gn_op_find: runtime 0x[0-9a-f]+ was already released or destroyed");
  // Kept alive by a tensor, but destroyed by its owner.
  EXPECT_DEATH(
      {
        Runtime r;
        gn_runtime* rt = r.rt;
        r.rt = nullptr;
        gn_tensor* a = make_tensor(rt, r.cpu);
        gn_runtime_destroy(rt);
        gn_tensor* b = nullptr;
        const int64_t shape[1] = {2};
        gn_status_free(gn_tensor_empty(rt, shape, 1, GN_F32, r.cpu, &b));
        gn_tensor_release(a);
      },
      std::string(kPrefix) + "gn_tensor_empty: runtime 0x[0-9a-f]+ is used after gn_runtime_destroy");
}

TEST_F(CheckedMode, StreamDestroyedTwiceAborts) {
  EXPECT_DEATH(
      {
        Runtime r;
        gn_stream* s = nullptr;
        gn_status_free(gn_stream_create(r.rt, r.cpu, &s));
        gn_status_free(gn_stream_destroy(s));
        gn_status_free(gn_stream_destroy(s));
      },
      std::string(kPrefix) + "gn_stream_destroy: stream 0x[0-9a-f]+ was already released or destroyed");
  EXPECT_DEATH(
      {
        Runtime r;
        gn_stream* s = nullptr;
        gn_status_free(gn_stream_create(r.rt, r.cpu, &s));
        gn_status_free(gn_stream_destroy(s));
        gn_status_free(gn_stream_synchronize(s));
      },
      std::string(kPrefix) + "gn_stream_synchronize: stream 0x[0-9a-f]+ was already released");
}

TEST_F(CheckedMode, EventDestroyedTwiceAborts) {
  EXPECT_DEATH(
      {
        Runtime r;
        gn_event* e = nullptr;
        gn_status_free(gn_event_create(r.rt, r.cpu, &e));
        gn_status_free(gn_event_destroy(e));
        gn_status_free(gn_event_destroy(e));
      },
      std::string(kPrefix) + "gn_event_destroy: event 0x[0-9a-f]+ was already released or destroyed");
}

}  // namespace
