// main.cpp - the `genesis` command-line tool: global options, the table of commands and their
// dispatch.  Each command lives in its own file and is registered here once, by its setup
// function; none relies on another having been registered first.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <memory>
#include <utility>

#include "cli.h"

namespace genesis::cli {
namespace {

// Every top-level command (help order: as listed).
constexpr Command kCommands[] = {
    {"info",
     "show the ABI and library versions, plugins (loaded or rejected and why), device types and every op "
     "with the backends and dtypes implementing it",
     setup_info},
    {"generate", "generate text (or ids) after a prompt with a Qwen model folder", setup_generate},
    {"chat", "interactive multi-turn chat with streaming output", setup_chat},
    {"convert", "rewrite a model folder in another dtype or shard size (Hugging Face layout)", setup_convert},
    {"bench", "benchmarks", setup_bench},
    {"train-tokenizer", "learn a byte-level BPE tokenizer from text or chat JSONL files", setup_train_tokenizer},
    {"train-sft", "supervised fine-tuning on chat JSONL (assistant turns learned)", setup_train_sft},
    {"eval-chat", "exact match of greedy answers to the last assistant turn of each conversation", setup_eval_chat},
    {"tokenize",
     "encode text to token ids (one line, space-separated) or decode ids to text, with the "
     "tokenizer.json of a model folder",
     setup_tokenize},
    {"test-ops",
     "run every op a plugin implements against the reference backend (or time it), from the ops' "
     "schemas: no source tree needed",
     setup_op_check},
    {"launch",
     "run PROGRAM ARGS... as the ranks of a distributed job (torchrun's RANK, WORLD_SIZE, LOCAL_RANK, "
     "LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); when one rank fails, stop the others and exit "
     "with its code",
     setup_launch},
};

// `genesis bench ...`.
constexpr Command kBenchCommands[] = {
    {"llm", "prefill and decode tokens/s and peak memory of a Qwen model", setup_bench_llm},
    {"train", "training tokens/s and peak memory of a Qwen shape (random weights and tokens)", setup_bench_train},
};

}  // namespace

CommandRun add_commands(CLI::App& parent, std::span<const Command> table) {
  std::vector<std::pair<CLI::App*, CommandRun>> runs;
  for (const Command& c : table) {
    CLI::App* app = parent.add_subcommand(c.name, c.help);
    runs.emplace_back(app, c.setup(*app));
    // The global options (--threads, --plugins, ...) may come after a command too, except in one
    // that hands the rest of the line to a program (`launch`).
    if (!app->get_prefix_command()) app->fallthrough();
  }
  return [runs = std::move(runs)](const GlobalOptions& g) {
    for (const auto& [app, run] : runs) {
      if (!*app) continue;
      try {
        return run(g);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "genesis: %s\n", e.what());
        return 1;
      }
    }
    return -1;
  };
}

CommandRun setup_bench(CLI::App& cmd) {
  cmd.require_subcommand(1);
  cmd.fallthrough();
  return add_commands(cmd, kBenchCommands);
}

}  // namespace genesis::cli

int main(int argc, char** argv) {
  using genesis::cli::GlobalOptions;
  CLI::App app{"genesis - the Genesis deep-learning framework's command-line tool"};
  app.set_version_flag("--version", std::string("genesis ") + gn_version_string());
  app.require_subcommand(1);

  GlobalOptions opts;
  app.add_option("--plugin-path", opts.plugin_path,
                 "colon-separated plugin directories, searched before $GENESIS_PLUGIN_PATH "
                 "and the built-in directory");
  CLI::Option* plugins = app.add_option(
      "--plugins", opts.plugins, "comma-separated plugin names to load (default: all found, or $GENESIS_PLUGINS)");
  app.add_option("--backends", opts.backends, "which plugin serves a device type, e.g. cpu=reference");
  app.add_flag("-q,--quiet", opts.quiet, "do not print plugin-rejection messages to stderr");
  app.add_flag("--no-default-paths", opts.no_default_paths,
               "search only --plugin-path (skip $GENESIS_PLUGIN_PATH and the built-in directory)");
  app.add_option("--threads", opts.threads,
                 "CPU threads for parallel work (default: $OMP_NUM_THREADS, else $GENESIS_NUM_THREADS, else "
                 "the cores this process may use); ranks started by `launch` inherit it")
      ->check(CLI::Range(1, 4096));

  const genesis::cli::CommandRun run = genesis::cli::add_commands(app, genesis::cli::kCommands);

  CLI11_PARSE(app, argc, argv);
  opts.has_plugins = plugins->count() > 0;
  if (opts.threads > 0) {
    // Before any backend loads: the cpu backend reads these at load, and so
    // does OpenMP, and `launch` hands them to its ranks.
    const std::string n = std::to_string(opts.threads);
    ::setenv("OMP_NUM_THREADS", n.c_str(), 1);
    ::setenv("GENESIS_NUM_THREADS", n.c_str(), 1);
  }
  const int rc = run(opts);
  return rc >= 0 ? rc : 1;  // -1 is unreachable: require_subcommand(1)
}
