// null_walk_fixture.h - the runtime, handles and checks the generated NULL
// walk (null_walk_test.cpp) calls every public function with.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "genesis/genesis.h"

namespace {

struct NullWalk : ::testing::Test {
  gn_runtime* rt_ = nullptr;
  gn_device cpu_{};
  const gn_op* op_ = nullptr;
  gn_tensor* t_ = nullptr;
  gn_tensor* ins_[8] = {};
  gn_attr_value attrs_[8];
  const int64_t i64s_[8] = {2, 3, 1, 1, 1, 1, 1, 1};

  void SetUp() override {
    gn_runtime_options o{};
    o.struct_size = sizeof o;
    o.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET;
    o.plugin_path = GENESIS_TEST_PLUGIN_DIR;
    o.plugins = "reference";
    ASSERT_EQ(gn_runtime_create(&o, &rt_), nullptr);
    ASSERT_EQ(gn_device_parse(rt_, "cpu", &cpu_), nullptr);
    ASSERT_EQ(gn_op_find(rt_, "add", &op_), nullptr);
    const float data[6] = {1, 2, 3, 4, 5, 6};
    ASSERT_EQ(gn_tensor_from_host(rt_, data, i64s_, 2, GN_F32, cpu_, &t_), nullptr);
    for (gn_tensor*& in : ins_) in = t_;
    for (gn_attr_value& a : attrs_) a = gn_attr_int(0);
  }
  void TearDown() override {
    gn_tensor_release(t_);
    gn_runtime_destroy(rt_);
  }
};

// A NULL the function cannot use: GN_ERR_INVALID_ARGUMENT, with a message that
// names one of the NULL parameters.  (The message's prefix is the function's
// established one: "gn_x:", "[op]" for op calls, "view:" for views.)
inline void expect_null_refused(gn_status* st, const char* fn, std::initializer_list<const char*> nulls) {
  ASSERT_NE(st, nullptr) << fn << " accepted NULL";
  const std::string msg = gn_status_message(st);
  EXPECT_EQ(gn_status_code(st), GN_ERR_INVALID_ARGUMENT) << msg;
  bool named = false;
  for (const char* p : nulls) named = named || msg.find(p) != std::string::npos;
  EXPECT_TRUE(named) << "message names none of the NULL parameters: " << msg;
  gn_status_free(st);
}

}  // namespace
