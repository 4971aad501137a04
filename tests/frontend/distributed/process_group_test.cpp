// tests/frontend/distributed/process_group_test.cpp - process groups over the
// gloo plugin at world sizes 2 and 4 on localhost, the launcher's failure
// handling, and a dead or silent peer turning into an error.  Each test starts
// its ranks with distributed::launch (what `genesis launch` runs); the ranks
// check their results themselves (collectives_worker.cpp) and exit non-zero
// on a mismatch.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
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

// Launch `nproc` ranks of the worker with `which`, capturing stderr.
JobResult launch_worker(int nproc, const std::string& which,
                        std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) {
  dist::LaunchOptions o;
  o.nproc_per_node = nproc;
  o.master_port = 0;  // any free port
  o.argv = {GENESIS_DIST_WORKER, which};
  o.grace = grace;
  const std::string path = testing::TempDir() + "dist_stderr_" + which + "_" + std::to_string(::getpid()) + ".txt";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ::dup2(fd, 2);
  ::close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  int code = dist::launch(o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  std::remove(path.c_str());
  std::fprintf(stderr, "%s", ss.str().c_str());  // keep it in the test log
  return {code, s, ss.str()};
}

}  // namespace

TEST(ProcessGroup, EveryCollectiveMatchesASingleProcessComputationAtWorldSize2) {
  JobResult r = launch_worker(2, "collectives");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("collectives done, world size 2"), std::string::npos) << r.err;
}

TEST(ProcessGroup, EveryCollectiveMatchesASingleProcessComputationAtWorldSize4) {
  JobResult r = launch_worker(4, "collectives");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("FAIL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("collectives done, world size 4"), std::string::npos) << r.err;
}

TEST(ProcessGroup, APeerThatExitsBecomesAnAbortedErrorOnTheOtherRanks) {
  JobResult r = launch_worker(3, "peer_exit");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("got the expected error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("closed its connection"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 30) << r.err;
}

TEST(ProcessGroup, APeerThatNeverJoinsTimesOut) {
  JobResult r = launch_worker(2, "peer_silent");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("did not answer within 2000 ms"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 30) << r.err;
}

TEST(Launch, OneFailingRankStopsTheOthersAndNamesItsExitCode) {
  JobResult r = launch_worker(3, "exit_code", std::chrono::milliseconds(1000));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("rank 1 (local rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 3"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 10) << r.err;  // the others sleep 60 s unless stopped
}

TEST(Launch, RejectsAnEmptyProgramAndBadShapes) {
  dist::LaunchOptions o;
  EXPECT_THROW(dist::launch(o), std::exception);
  o.argv = {"true"};
  o.nproc_per_node = 0;
  EXPECT_THROW(dist::launch(o), std::exception);
  o.nproc_per_node = 2;
  EXPECT_EQ(dist::launch(o), 0);
  o.argv = {"false"};
  EXPECT_EQ(dist::launch(o), 1);
}
