// common.h - shared setup of the io tests: the reference plugin and a temp dir.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "genesis/io.hpp"

namespace iotest {

// Creates the runtime once, with only the reference plugin.
inline void init_runtime() {
  static const bool done = [] {
    genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "reference", .no_default_paths = true});
    return true;
  }();
  (void)done;
}

// A fresh directory under /tmp for one test.
inline std::string temp_dir() {
  std::string t = "/tmp/genesis_io_test.XXXXXX";
  if (!::mkdtemp(t.data())) std::abort();
  return t;
}

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
