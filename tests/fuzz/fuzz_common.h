// fuzz_common.h - what every harness shares: a runtime with no plugins (the
// core's host memory serves "cpu", so nothing is loaded per run) and a
// check that whatever goes wrong is a genesis::Error, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "genesis/tensor.hpp"

namespace fuzz {

// Once per process: an isolated runtime (no plugin directory is searched).
inline void init_runtime() {
  static const bool done = [] {
    genesis::init({.plugin_path = "", .plugins = "", .no_default_paths = true, .quiet = true});
    return true;
  }();
  (void)done;
}

inline std::string bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace fuzz
