// cli.h - what the `genesis` subcommands share: global options and runtime
// creation over the C API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "genesis/distributed/launch.hpp"
#include "genesis/genesis.h"

namespace CLI {
class App;
}  // namespace CLI

namespace genesis::cli {

// Options accepted before or after any subcommand.
struct GlobalOptions {
  std::string plugin_path;  // colon-separated dirs searched first
  std::string plugins;      // comma-separated allow-list; see has_plugins
  bool has_plugins = false; // --plugins given (else $GENESIS_PLUGINS applies)
  std::string backends;     // "cpu=reference,cuda=cuda"
  bool quiet = false;
  bool no_default_paths = false;
};

// One directory the runtime searches, and why.
struct SearchDir {
  std::string path;
  std::string source;  // "--plugin-path", "$GENESIS_PLUGIN_PATH", "default"
};

// Owns a gn_runtime.
class Runtime {
 public:
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime() { gn_runtime_destroy(rt_); }
  gn_runtime* get() const { return rt_; }
  gn_runtime** out() { return &rt_; }

 private:
  gn_runtime* rt_ = nullptr;
};

// Create the runtime the options describe; on failure print why and return false.
bool create_runtime(const GlobalOptions& opts, Runtime& rt);

// The plugin directories the runtime will search, in order.
std::vector<SearchDir> plugin_search_dirs(const GlobalOptions& opts);

// File system path of the loaded libgenesis ("" if unknown).
std::string library_path();

// `genesis info`: versions, plugins, device types, ops.
int run_info(const GlobalOptions& opts, bool with_ops = true);

// Options of `genesis test-ops`.
struct TestOpsOptions {
  std::string backend;        // plugin under test
  std::string op;             // only this op ("" = all)
  std::string mode = "test";  // test | perf | grad
  bool verbose = false;
};

// Registers the `test-ops` subcommand and its options on app.
CLI::App* add_test_ops(CLI::App& app, TestOpsOptions& opts);

// `genesis test-ops`: a plugin's ops against the reference backend (test_ops.cpp); 1 when a case fails.
int run_test_ops(const GlobalOptions& opts, const TestOpsOptions& test_opts);

// Options of `genesis tokenize` (exactly one of text, file, decode).
struct TokenizeOptions {
  std::string model;          // folder with tokenizer.json
  std::string text, file;     // what to encode
  std::string decode;         // ids to decode: "1 2 3" or "1,2,3"
  bool no_special = false;    // encode without the post-processor's special tokens
  bool skip_special = false;  // decode without special tokens
};

// Registers the `tokenize` subcommand and its options on app.
CLI::App* add_tokenize(CLI::App& app, TokenizeOptions& opts);

// `genesis tokenize`: prints ids (one line) or decoded text; needs no runtime.
int run_tokenize(const TokenizeOptions& opts);

// `genesis generate`, `genesis chat` and `genesis bench llm` (llm.cpp).
class LlmCommands {
 public:
  // Adds the subcommands and their options to app.
  explicit LlmCommands(CLI::App& app);
  ~LlmCommands();
  LlmCommands(const LlmCommands&) = delete;
  LlmCommands& operator=(const LlmCommands&) = delete;
  // Runs the chosen one of these subcommands and returns its exit code; -1 when none was chosen.
  int run(const GlobalOptions& opts);
  struct State;

 private:
  std::unique_ptr<State> s_;
};

// Initialises the C++ frontend's runtime as the global options say (the commands built on the
// frontend: llm.cpp, train.cpp).
void init_frontend(const GlobalOptions& g);

// `genesis train-tokenizer`, `genesis train-sft` and `genesis eval-chat` (train.cpp).
class TrainCommands {
 public:
  // Adds the subcommands and their options to app.
  explicit TrainCommands(CLI::App& app);
  ~TrainCommands();
  TrainCommands(const TrainCommands&) = delete;
  TrainCommands& operator=(const TrainCommands&) = delete;
  // Runs the chosen one of these subcommands and returns its exit code; -1 when none was chosen.
  int run(const GlobalOptions& opts);
  struct State;

 private:
  std::unique_ptr<State> s_;
};

// `genesis launch` (launch.cpp): the ranks of a distributed job on this host.
class LaunchCommand {
 public:
  // Adds the subcommand and its options to app.
  explicit LaunchCommand(CLI::App& app);
  // Runs the job if this subcommand was chosen and returns its exit code; -1 when not chosen.
  int run();

 private:
  CLI::App* cmd_ = nullptr;
  genesis::distributed::LaunchOptions o_;
  double grace_s_ = 5;
};

}  // namespace genesis::cli
