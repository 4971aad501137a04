// tests/frontend/distributed/fsdp_test.cpp - FullyShardedDataParallel over
// gloo: every strategy at world sizes 2 and 4 against a single-process float64
// run (fsdp_worker.cpp checks itself and exits non-zero on a mismatch), the
// negative controls, a checkpoint saved by 4 ranks resumed by 2 and by 1, and
// a rank that leaves.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "genesis/distributed/launch.hpp"

namespace dist = genesis::distributed;

namespace {

struct JobResult {
  int code;
  double seconds;
  std::string err;  // what the launcher and the ranks wrote to stderr
};

std::string test_dir() {
  static const std::string dir = testing::TempDir() + "fsdp_test_" + std::to_string(::getpid());
  return dir;
}

// Launches `nproc` ranks of the worker with args, capturing stderr.
JobResult run(int nproc, std::vector<std::string> args) {
  std::filesystem::create_directories(test_dir());
  ::setenv("GENESIS_FSDP_TEST_DIR", test_dir().c_str(), 1);
  dist::LaunchOptions o;
  o.nproc_per_node = nproc;
  o.master_port = 0;
  o.argv = {GENESIS_FSDP_WORKER};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.grace = std::chrono::milliseconds(2000);
  const std::string path = test_dir() + "/stderr.txt";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ::dup2(fd, 2);
  ::close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  const int code = dist::launch(o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  std::fprintf(stderr, "%s", ss.str().c_str());  // keep it in the test log
  return {code, s, ss.str()};
}

}  // namespace

TEST(FullyShardedDataParallel, EveryStrategyMatchesASingleProcessRunAtWorldSize2) {
  JobResult r = run(2, {"main"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fsdp done, world size 2"), std::string::npos) << r.err;
}

TEST(FullyShardedDataParallel, EveryStrategyMatchesASingleProcessRunAtWorldSize4) {
  JobResult r = run(4, {"main"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fsdp done, world size 4"), std::string::npos) << r.err;
}

TEST(FullyShardedDataParallel, ASkippedReductionFailsTheComparison) {
  for (const char* s : {"optimizer", "grad_optimizer", "full"}) {
    JobResult r = run(2, {"negative", s});
    EXPECT_EQ(r.code, 0) << s << "\n" << r.err;
    EXPECT_NE(r.err.find("the comparison caught the skipped reduction"), std::string::npos) << s << "\n" << r.err;
  }
}

TEST(FullyShardedDataParallel, ACheckpointSavedBy4RanksResumesAt2AndAt1) {
  std::filesystem::remove_all(test_dir());
  JobResult saved = run(4, {"save"});
  ASSERT_EQ(saved.code, 0) << saved.err;
  ASSERT_TRUE(std::filesystem::exists(test_dir() + "/ckpt/manifest.json"));
  for (int r = 0; r < 4; ++r)
    ASSERT_TRUE(std::filesystem::exists(test_dir() + "/ckpt/shard-" + std::to_string(r) + "-of-4.safetensors"));
  for (int n : {2, 1}) {
    JobResult r = run(n, {"resume"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("resumed at world size " + std::to_string(n)), std::string::npos) << r.err;
  }
  std::filesystem::remove_all(test_dir());
}

TEST(FullyShardedDataParallel, ARankThatLeavesBecomesAClearErrorNotAHang) {
  JobResult r = run(3, {"dead"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("got the expected error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 40) << r.err;
}
