// tests/frontend/distributed/ddp_test.cpp - DistributedDataParallel over gloo
// at world sizes 2 and 4: the ranks (ddp_worker.cpp) compare themselves with a
// single-process run on the concatenated batch and exit non-zero on a mismatch.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "genesis/distributed/launch.hpp"

namespace dist = genesis::distributed;

namespace {

int run_ddp(int nproc) {
  const std::string dir = testing::TempDir() + "ddp_test_" + std::to_string(::getpid()) + "_" + std::to_string(nproc);
  std::filesystem::create_directories(dir);
  ::setenv("GENESIS_DDP_TEST_DIR", dir.c_str(), 1);
  dist::LaunchOptions o;
  o.nproc_per_node = nproc;
  o.master_port = 0;
  o.argv = {GENESIS_DDP_WORKER};
  const int code = dist::launch(o);
  std::filesystem::remove_all(dir);
  return code;
}

}  // namespace

TEST(DistributedDataParallel, MatchesASingleProcessRunOnTheConcatenatedBatchAtWorldSize2) {
  EXPECT_EQ(run_ddp(2), 0) << "a rank reported a mismatch (its FAIL lines are above)";
}

TEST(DistributedDataParallel, MatchesASingleProcessRunOnTheConcatenatedBatchAtWorldSize4) {
  EXPECT_EQ(run_ddp(4), 0) << "a rank reported a mismatch (its FAIL lines are above)";
}
