// limits_test.cpp - safetensors input that is large, hostile or not a file:
// many keys (linear time), the header-size and key-count bounds, FIFOs and
// devices (refused, never waited on), and temporary files of killed writes
// (removed by the next write, unless a live writer holds them).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <chrono>

#include "../../sanitizers.h"
#include "common.h"

using namespace genesis;
using iotest::craft;
using iotest::expect_error;

namespace {

// A header of n one-byte U8 tensors "t<i>", tiling n bytes of data.
std::string many_keys(size_t n) {
  std::string h = "{";
  for (size_t i = 0; i < n; ++i)
    h.append(i ? "," : "")
        .append("\"t")
        .append(std::to_string(i))
        .append("\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[")
        .append(std::to_string(i))
        .append(",")
        .append(std::to_string(i + 1))
        .append("]}");
  return h + "}";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class SafetensorsLimits : public iotest::TempDirTest {};

}  // namespace

// Sanitizer builds run several times slower (scripts/sanitize.sh): time bounds scale with it.
constexpr double kSlowdown = GENESIS_TEST_ASAN || GENESIS_TEST_TSAN ? 5 : 1;

// Parsing used to insert into an ordered object, one linear search per key:
// 100k keys took about 20 s.  The bound is generous for a loaded machine;
// linear parsing takes well under a second.
TEST_F(SafetensorsLimits, HundredThousandKeysParseQuickly) {
  constexpr size_t kKeys = 100000;
  const std::string path = dir + "/many.safetensors";
  std::string data(kKeys, '\0');
  for (size_t i = 0; i < kKeys; ++i) data[i] = static_cast<char>(i * 7);
  iotest::write_file(path, craft(many_keys(kKeys), data));
  auto t0 = std::chrono::steady_clock::now();
  const StringMap meta = load_safetensors_metadata(path);
  const double parse_s = seconds_since(t0);
  EXPECT_TRUE(meta.empty());
  EXPECT_LT(parse_s, 3.0 * kSlowdown) << "header of " << kKeys << " keys";

  t0 = std::chrono::steady_clock::now();
  SafetensorsFile f = load_safetensors(path);
  const double load_s = seconds_since(t0);
  ASSERT_EQ(f.tensors.size(), kKeys);
  for (size_t i : {size_t(0), size_t(1), size_t(4321), kKeys - 1})
    EXPECT_EQ(f.tensors.at(std::string("t").append(std::to_string(i))).item<double>(),
              static_cast<unsigned char>(i * 7))
        << i;
  EXPECT_LT(load_s, 10.0 * kSlowdown);

  // Writing as many tensors is linear too, and reads back the same.
  t0 = std::chrono::steady_clock::now();
  const std::string copy = dir + "/copy.safetensors";
  save_safetensors(copy, f.tensors, {{"k", "v"}});
  EXPECT_LT(seconds_since(t0), 10.0);
  SafetensorsFile g = load_safetensors(copy);
  EXPECT_EQ(g.tensors.size(), kKeys);
  EXPECT_EQ(g.metadata.at("k"), "v");
  EXPECT_EQ(g.tensors.at("t4321").item<double>(), static_cast<unsigned char>(4321 * 7));
}

TEST_F(SafetensorsLimits, HeaderSizeAndKeyCountAreBounded) {
  // A length beyond 100 MB is refused before the file size is even looked at.
  std::string huge = craft("{}", "");
  for (int i = 0; i < 8; ++i) huge[i] = static_cast<char>((uint64_t(1) << 40) >> (8 * i));
  iotest::write_file(dir + "/huge.safetensors", huge);
  expect_error([&] { load_safetensors(dir + "/huge.safetensors"); },
               {"huge.safetensors", "header length 1099511627776", "100 MB limit"});

  // More tensors than the key limit: refused while parsing, naming the limit.
  const size_t limit = safetensors_max_tensors();
  ASSERT_GE(limit, size_t(100000));
  std::string h = "{";
  for (size_t i = 0; i <= limit; ++i) h += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  h += "}";
  iotest::write_file(dir + "/keys.safetensors", craft(h, ""));
  expect_error([&] { load_safetensors_metadata(dir + "/keys.safetensors"); },
               {"keys.safetensors", "more than " + std::to_string(limit) + " entries"});

  // A name given twice is an error, not a silent overwrite.
  iotest::write_file(dir + "/twice.safetensors", craft(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                                       R"("w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                                                       std::string(1, '\0')));
  expect_error([&] { load_safetensors(dir + "/twice.safetensors"); }, {"'w'", "twice"});
}

// A FIFO used to block forever in open(); devices are refused as well.
TEST_F(SafetensorsLimits, OnlyRegularFilesAreRead) {
  const std::string fifo = dir + "/pipe.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // If the reader blocks, the rescue opens the write side after 5 s to free it,
  // so the test fails instead of hanging.
  genesis_test::FifoRescue rescue(fifo);
  const auto t0 = std::chrono::steady_clock::now();
  expect_error([&] { load_safetensors(fifo); }, {"pipe.safetensors", "not a regular file"});
  expect_error([&] { load_safetensors_metadata(fifo); }, {"pipe.safetensors", "not a regular file"});
  expect_error([&] { load_checkpoint(fifo); }, {"pipe.safetensors", "not a regular file"});
  const double s = seconds_since(t0);
  rescue.release();
  EXPECT_LT(s, 4.0) << "the reader waited on the FIFO";
  expect_error([&] { load_safetensors("/dev/zero"); }, {"/dev/zero", "not a regular file"});
}

// A write killed between creating its temporary file and renaming it leaves
// ".<name>.tmp.XXXXXX" behind; the next write of the same file removes such
// files unless a live writer holds them (a lock on the file).
TEST_F(SafetensorsLimits, StaleTempFilesAreRemovedOnTheNextWrite) {
  const std::string path = dir + "/ckpt.safetensors";
  const std::string stale1 = dir + "/.ckpt.safetensors.tmp.a1B2c3";
  const std::string stale2 = dir + "/.ckpt.safetensors.tmp.zzzzzz";
  const std::string live = dir + "/.ckpt.safetensors.tmp.L1VE00";
  const std::string other = dir + "/.other.safetensors.tmp.a1B2c3";  // another file's: kept
  for (const std::string& p : {stale1, stale2, live, other}) iotest::write_file(p, "partial");
  const int held = ::open(live.c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);

  save_safetensors(path, {{"w", ones({2})}});
  EXPECT_NE(::access(stale1.c_str(), F_OK), 0) << "stale temp file left behind";
  EXPECT_NE(::access(stale2.c_str(), F_OK), 0) << "stale temp file left behind";
  EXPECT_EQ(::access(live.c_str(), F_OK), 0) << "a live writer's temp file was removed";
  EXPECT_EQ(::access(other.c_str(), F_OK), 0) << "another file's temp file was removed";
  ::close(held);
  EXPECT_EQ(load_safetensors(path).tensors.at("w").numel(), 2);
}
