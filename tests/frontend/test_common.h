// test_common.h - shared setup of the frontend and LLM tests: the backend they run on, the
// message of the error a call throws, a guard for readers of FIFOs, and the GRADCHECK macro.
//
// A test binary runs on the reference plugin of the build tree.  One that registers a
// TestBackend("GENESIS_X", ...) runs on the plugins $GENESIS_X_PLUGINS names ("cpu,reference",
// "cuda,reference") instead, and creates its tensors on the device $GENESIS_X_DEVICE names
// ("cuda"; "cpu" by default).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

namespace genesis_test {

/** $name, or def when it is unset or empty. */
inline const char* env_or(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

/** Creates the runtime on the reference plugin of the build tree only. */
inline bool init_reference() {
  genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "reference", .no_default_paths = true});
  return true;
}

/** The backend one test binary runs on, chosen by $<prefix>_PLUGINS and $<prefix>_DEVICE.  As a
 * global test environment it skips the whole run when this machine lacks the device (the cuda run
 * without a GPU), as gpu-labelled tests do, with "<what> device unavailable: <why>". */
class TestBackend : public ::testing::Environment {
 public:
  /** Creates the runtime: with $<prefix>_PLUGINS set, $GENESIS_PLUGIN_PATH is searched too
   * (after the build tree). */
  TestBackend(const std::string& prefix, std::string what) : device_var_(prefix + "_DEVICE"), what_(std::move(what)) {
    const std::string plugins = prefix + "_PLUGINS";
    const bool chosen = std::getenv(plugins.c_str()) != nullptr;
    genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR,
                   .plugins = env_or(plugins.c_str(), "reference"),
                   .no_default_paths = !chosen});
  }
  /** The device every test tensor is created on (throws when this machine lacks it). */
  const genesis::Device& device() {
    if (!device_) device_.emplace(env_or(device_var_.c_str(), "cpu"));
    return *device_;
  }
  void SetUp() override {
    try {
      (void)device();
    } catch (const std::exception& e) {
      GTEST_SKIP() << what_ << " device unavailable: " << e.what();
    }
  }

 private:
  std::string device_var_, what_;
  std::optional<genesis::Device> device_;
};

/** Registers a TestBackend as a global test environment (gtest owns it). */
inline TestBackend& add_test_backend(const std::string& prefix, const std::string& what) {
  auto* backend = new TestBackend(prefix, what);
  ::testing::AddGlobalTestEnvironment(backend);
  return *backend;
}

/** The message of the genesis::Error fn throws ("" when it throws none). */
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const genesis::Error& e) {
    return e.what();
  }
  return "";
}

/** Keeps a reader of the FIFO at path from hanging a test: unless released within 5 s, opens the
 * FIFO's write side, so that a reader that waits for a writer returns (and its test fails). */
class FifoRescue {
 public:
  explicit FifoRescue(std::string path)
      : path_(std::move(path)), thread_([this] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::seconds(5), [this] { return done_; })) {
            const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
            if (fd >= 0) ::close(fd);
          }
        }) {}
  ~FifoRescue() { release(); }
  /** Stops the rescue: the reads are over. */
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace genesis_test

/** Expects autograd's rule for the expression fn of x (the inputs, seeded with 7) to match central
 * finite differences. */
#define GRADCHECK(fn, ...)                                                                                       \
  do {                                                                                                           \
    genesis::manual_seed(7);                                                                                     \
    std::vector<genesis::Tensor> in_ = {__VA_ARGS__};                                                            \
    EXPECT_EQ(genesis::autograd::gradcheck([&](const std::vector<genesis::Tensor>& x) { return fn; }, in_), ""); \
  } while (0)
