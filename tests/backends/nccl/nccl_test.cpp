// tests/backends/nccl/nccl_test.cpp - the nccl communicator on cuda tensors:
// every collective against a single-process computation, DDP against a
// float64 single-process oracle, and a dead or silent peer turning into an
// error, at world size 1 and, with two GPUs, 2.  The ranks are the worker
// programs of tests/frontend/distributed, run with GENESIS_DIST_DEVICE=cuda.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "genesis/distributed/launch.hpp"
#include "genesis/tensor.hpp"

namespace dist = genesis::distributed;

namespace {

int gpus() { return genesis::cuda_available() ? gn_device_count(genesis::runtime(), "cuda") : 0; }

int run(int nproc, const char* program, const char* which, double* seconds = nullptr) {
  const std::string dir = testing::TempDir() + "nccl_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ::setenv("GENESIS_DDP_TEST_DIR", dir.c_str(), 1);
  ::setenv("GENESIS_DIST_DEVICE", "cuda", 1);
  dist::LaunchOptions o;
  o.nproc_per_node = nproc;
  o.master_port = 0;
  o.argv = {program};
  if (which) o.argv.push_back(which);
  const auto t0 = std::chrono::steady_clock::now();
  const int code = dist::launch(o);
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove_all(dir);
  return code;
}

#define NEED_GPUS(n) \
  if (gpus() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << gpus()

}  // namespace

TEST(Nccl, EveryCollectiveMatchesASingleProcessComputationAtWorldSize1) {
  NEED_GPUS(1);
  EXPECT_EQ(run(1, GENESIS_DIST_WORKER, "collectives"), 0) << "a rank reported a mismatch (FAIL lines above)";
}

TEST(Nccl, DdpMatchesASingleProcessRunAtWorldSize1) {
  NEED_GPUS(1);
  EXPECT_EQ(run(1, GENESIS_DDP_WORKER, nullptr), 0) << "a rank reported a mismatch (FAIL lines above)";
}

TEST(Nccl, EveryCollectiveMatchesASingleProcessComputationAtWorldSize2) {
  NEED_GPUS(2);
  EXPECT_EQ(run(2, GENESIS_DIST_WORKER, "collectives"), 0) << "a rank reported a mismatch (FAIL lines above)";
}

TEST(Nccl, DdpMatchesASingleProcessRunAtWorldSize2) {
  NEED_GPUS(2);
  EXPECT_EQ(run(2, GENESIS_DDP_WORKER, nullptr), 0) << "a rank reported a mismatch (FAIL lines above)";
}

TEST(Nccl, APeerThatExitsBecomesAnErrorNotAHang) {
  NEED_GPUS(2);
  double s = 0;
  EXPECT_EQ(run(2, GENESIS_DIST_WORKER, "peer_exit", &s), 0) << "the surviving rank saw no error (lines above)";
  EXPECT_LT(s, 60);  // the worker's timeout is 10 s
}

TEST(Nccl, APeerThatNeverJoinsTimesOut) {
  NEED_GPUS(2);
  double s = 0;
  EXPECT_EQ(run(2, GENESIS_DIST_WORKER, "peer_silent", &s), 0) << "no timeout error (lines above)";
  EXPECT_LT(s, 60);
}
