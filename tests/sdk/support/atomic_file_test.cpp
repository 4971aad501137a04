// tests/sdk/support/atomic_file_test.cpp - AtomicFileWriter: the target appears whole or not at all,
// overwrite patches written bytes, an abandoned write leaves nothing, and stale temporary files of
// killed writers go while a live writer's stay.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "atomic_file.h"

using genesis::support::AtomicFileWriter;
using genesis::support::FileError;

namespace {

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_plain(const std::string& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// Names in dir (without . and ..).
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = "/tmp/genesis_support_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  }
  std::string dir;
};

}  // namespace

TEST_F(AtomicFile, TheTargetAppearsOnlyAtCommit) {
  const std::string path = dir + "/out.bin";
  write_plain(path, "old");
  {
    AtomicFileWriter w(path);
    w.write("new ", 4);
    w.write("contents", 8);
    EXPECT_EQ(read_file(path), "old");  // readers still see the old file
    w.commit();
  }
  EXPECT_EQ(read_file(path), "new contents");
  EXPECT_EQ(listing(dir), std::vector<std::string>{"out.bin"});  // no temporary file left
}

TEST_F(AtomicFile, OverwritePatchesWrittenBytesEvenPastTheBuffer) {
  const std::string path = dir + "/patched.bin";
  std::string big(3u << 20, 'x');  // larger than the 1 MiB buffer: part is on disk already
  AtomicFileWriter w(path);
  w.write("HEADER--", 8);
  w.write(big.data(), big.size());
  w.write("tail", 4);
  w.overwrite(6, "OK", 2);
  EXPECT_THROW(w.overwrite(8 + big.size() + 3, "zz", 2), FileError);  // beyond what is written
  w.commit();
  const std::string got = read_file(path);
  ASSERT_EQ(got.size(), 8 + big.size() + 4);
  EXPECT_EQ(got.substr(0, 8), "HEADEROK");
  EXPECT_EQ(got.substr(8 + big.size()), "tail");
}

TEST_F(AtomicFile, AnAbandonedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string path = dir + "/kept.bin";
  write_plain(path, "old");
  try {
    AtomicFileWriter w(path);
    w.write("half", 4);
    throw std::runtime_error("the producer failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(listing(dir), std::vector<std::string>{"kept.bin"});
}

TEST_F(AtomicFile, StaleTemporaryFilesGoAndLiveOnesStay) {
  const std::string path = dir + "/trace.json";
  const std::string stale = dir + "/.trace.json.tmp.a1B2c3", live = dir + "/.trace.json.tmp.L1VE00";
  const std::string other = dir + "/.other.json.tmp.a1B2c3", odd = dir + "/.trace.json.tmp.toolong7";
  for (const std::string& p : {stale, live, other, odd}) write_plain(p, "partial");
  const int held = ::open(live.c_str(), O_RDONLY);  // a writer still running holds its lock
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  genesis::support::write_file_atomic(path, "{}");
  EXPECT_FALSE(exists(stale)) << "stale temporary file left behind";
  EXPECT_TRUE(exists(live)) << "a live writer's temporary file was removed";
  EXPECT_TRUE(exists(other)) << "another file's temporary file was removed";
  EXPECT_TRUE(exists(odd)) << "a file not named like a temporary file was removed";
  ::close(held);
  EXPECT_EQ(read_file(path), "{}");
}

TEST_F(AtomicFile, ErrorsSayWhatFailed) {
  try {
    AtomicFileWriter w(dir + "/missing/sub/file.bin");
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create a temporary file in " + dir + "/missing/sub"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(AtomicFileWriter w(dir + "/"), FileError);  // names a directory
}
