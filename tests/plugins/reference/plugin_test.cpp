// plugin_test.cpp - the reference plugin's init, registrations and device type.
#include <cstring>
#include <string>

#include "harness.h"

using namespace reftest;

TEST(ReferencePlugin, InitSucceeds) {
  const Registry& r = registry();
  ASSERT_EQ(r.init_status, nullptr) << r.init_status->msg;
  EXPECT_STREQ(r.info.name, "reference");
  EXPECT_EQ(r.info.abi_major, (uint32_t)GN_ABI_VERSION_MAJOR);
  EXPECT_FALSE(r.kernels.empty());
}
