// common.h - shared setup of the io tests: the reference plugin and a temp dir.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../test_common.h"
#include "genesis/io.hpp"

namespace iotest {

// Creates the runtime once, with only the reference plugin.
inline void init_runtime() {
  static const bool done = genesis_test::init_reference();
  (void)done;
}

// A fresh directory under /tmp for one test.
inline std::string temp_dir() {
  std::string t = "/tmp/genesis_io_test.XXXXXX";
  if (!::mkdtemp(t.data())) std::abort();
  return t;
}

// A test with the runtime and a fresh directory `dir`.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    init_runtime();
    dir = temp_dir();
  }
  std::string dir;
};

inline std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_file(const std::string& p, const std::string& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << b;
}

// A safetensors image made of a literal header and data: 8-byte little-endian length, the header
// (padded with spaces to a multiple of 8), the data.
inline std::string craft(const std::string& header, const std::string& data) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t(h.size()) >> (8 * i));
  return out + h + data;
}

// Expects fn to throw genesis::Error whose message contains every part.
template <class F>
void expect_error(F fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const genesis::Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace iotest
