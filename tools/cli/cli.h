// cli.h - what the `genesis` subcommands share: global options, runtime creation over the C
// API, the command table, and the frontend's device and dtype flags.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "genesis/genesis.h"
#include "genesis/models/qwen.hpp"
#include "genesis/tensor.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace genesis::cli {

// Options accepted before or after any subcommand.
struct GlobalOptions {
  std::string plugin_path;   // colon-separated dirs searched first
  std::string plugins;       // comma-separated allow-list; see has_plugins
  bool has_plugins = false;  // --plugins given (else $GENESIS_PLUGINS applies)
  std::string backends;      // "cpu=reference,cuda=cuda"
  bool quiet = false;
  bool no_default_paths = false;
  int threads = 0;  // --threads: CPU threads (0 = $OMP_NUM_THREADS, $GENESIS_NUM_THREADS, else the cores)
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

// ---------------------------------------------------------------- the command table
// main.cpp lists every command once (kCommands); `bench` lists its own (kBenchCommands).  A
// command's setup sees only the CLI::App made for it, so no command depends on another's
// registration or on the table's order.

// Runs the chosen command with the parsed global options and returns its exit status.
using CommandRun = std::function<int(const GlobalOptions&)>;

// One subcommand: its name, its one-line help, and setup, which adds its options (and its own
// subcommands) to the App made for it and returns what runs it.  The options' storage lives in
// what setup returns.
struct Command {
  const char* name;
  const char* help;
  CommandRun (*setup)(CLI::App& cmd);
};

// What a setup returns for a command whose options live in *state: runs run(g, *state).
template <class State>
CommandRun bind_command(std::shared_ptr<State> state, int (*run)(const GlobalOptions&, State&)) {
  return [state = std::move(state), run](const GlobalOptions& g) { return run(g, *state); };
}

// Adds every command of `table` under `parent`; what it returns runs the chosen one (-1 when none
// was chosen; an exception escaping a command is printed as "genesis: ..." and gives 1).
CommandRun add_commands(CLI::App& parent, std::span<const Command> table);

// The name of `names` closest to `word` ("did you mean ..."), "" when none is close: a few edits
// (about one in three characters), or a name that `word` starts (--max-new for --max-new-tokens).
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

CommandRun setup_info(CLI::App& cmd);             // info.cpp: versions, plugins, device types, ops
CommandRun setup_tokenize(CLI::App& cmd);         // tokenize.cpp: text <-> ids, needs no runtime
CommandRun setup_op_check(CLI::App& cmd);         // op_check.cpp: `test-ops`, a plugin's ops against the reference
CommandRun setup_generate(CLI::App& cmd);         // llm.cpp
CommandRun setup_chat(CLI::App& cmd);             // llm.cpp
CommandRun setup_convert(CLI::App& cmd);          // llm.cpp
CommandRun setup_bench_llm(CLI::App& cmd);        // llm.cpp: `bench llm`
CommandRun setup_train_tokenizer(CLI::App& cmd);  // train.cpp
CommandRun setup_train_sft(CLI::App& cmd);        // train.cpp
CommandRun setup_eval_chat(CLI::App& cmd);        // train.cpp
CommandRun setup_bench_train(CLI::App& cmd);      // train.cpp: `bench train`
CommandRun setup_launch(CLI::App& cmd);           // launch.cpp: the ranks of a distributed job
CommandRun setup_bench(CLI::App& cmd);            // main.cpp: `bench llm`, `bench train`
CommandRun setup_serve(CLI::App& cmd);            // serve/server.cpp: the OpenAI-compatible HTTP server

// ---------------------------------------------------------------- the frontend (device.cpp)

// Initialises the C++ frontend's runtime as the global options say (the commands built on the
// frontend: llm.cpp, train.cpp, test-ops --mode grad).
void init_frontend(const GlobalOptions& g);

// --device and --dtype of a command that places a model.
struct DeviceFlags {
  std::string device;  // "" = the command's default
  std::string dtype;   // "" = the command's default
};

// Help of --device when its default is cuda when available, else cpu.
inline constexpr const char* kDeviceHelp =
    "device (default: cuda when available, else cpu; under genesis launch cuda is cuda:$LOCAL_RANK)";

// The dtype names every command takes (--dtype, --autocast), in any letter case.
inline constexpr const char* kDtypeNames = "float32 (fp32, f32, float), bfloat16 (bf16) or float16 (fp16, f16, half)";

// The floating dtype a name of kDtypeNames means (any case); nullopt for anything else.
std::optional<DType> float_dtype_from_name(std::string name);

// Adds --device (help device_help) and, when dtype_help is given, --dtype to cmd; --dtype is
// checked while parsing (kDtypeNames) and kept as the dtype's full name (float16, ...).
void add_device_options(CLI::App& cmd, DeviceFlags& f, const char* device_help, const char* dtype_help = nullptr);

// Adds --autocast: none, or bfloat16 / float16 in any spelling of kDtypeNames; stored as "" (none),
// "bf16" or "fp16".
void add_autocast_option(CLI::App& cmd, std::string& autocast, const char* help);

// Requires an option's value to be an existing folder ("folder 'x' does not exist").
CLI::Option* existing_folder(CLI::Option* opt);

// The help of --config everywhere it is taken.
inline constexpr const char* kConfigHelp =
    "a config.json file, a model folder holding one, or a named shape (qwen2.5-0.5b, "
    "qwen2.5-1.5b, qwen3-0.6b, ...)";

// The shape --config names: a config.json file, a folder holding config.json, or a preset name;
// an Error saying which of them was tried for anything else.
models::QwenConfig config_from_name_or_file(const std::string& what);

// The device --device names, else `fallback` ("": cuda when available, else cpu).  Under
// `genesis launch` (LOCAL_RANK set), "cuda" is this rank's GPU: cuda:$LOCAL_RANK.  Needs
// init_frontend first.
Device pick_device(const DeviceFlags& f, const std::string& fallback = "");

// The dtype --dtype names: float32, bfloat16 or float16, in any spelling genesis::dtype_from_name
// accepts (f32, fp32, bf16, f16, fp16, half, ...); nullopt when not given; an Error listing the
// accepted names for anything else.
std::optional<DType> pick_dtype(const DeviceFlags& f);

}  // namespace genesis::cli
