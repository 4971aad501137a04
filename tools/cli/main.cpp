// main.cpp - the `genesis` command-line tool: global options, the table of commands and their
// dispatch.  Each command lives in its own file and is registered here once, by its setup
// function; none relies on another having been registered first.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
    {"serve",
     "serve a Qwen model folder over HTTP: an OpenAI-compatible API (chat and text completions, streaming, "
     "tool calls) and a chat page",
     setup_serve},
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

// Edit distance of a and b (a swap of two neighbours counts as one edit).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The option `name` ("--x" or "-x") of app or of an app above it (whose options fall through).
CLI::Option* find_option(CLI::App* app, const std::string& name) {
  for (; app; app = app->get_parent())
    if (CLI::Option* o = app->get_option_no_throw(name)) return o;
  return nullptr;
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

// After a failed parse: the command line walked again, command by command, to find the first
// word no command or option knows; then what it may have meant.  `deepest` is the last command
// the walk entered.
std::string explain_unknown(CLI::App& app, int argc, char** argv, CLI::App*& deepest) {
  CLI::App* cur = &app;
  deepest = cur;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-' && !is_number(a)) {
      const std::string name = a.substr(0, a.find('='));
      if (CLI::Option* o = find_option(cur, name)) {
        if (o->get_items_expected_max() > 0 && name == a) ++i;  // its value (flags take none)
        continue;
      }
      std::vector<std::string> names = {"--help"};
      for (CLI::App* p = cur; p; p = p->get_parent())
        for (const CLI::Option* o : p->get_options()) {
          for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
          for (const std::string& sn : o->get_snames()) names.push_back("-" + sn);
        }
      const std::string best = closest_name(name, names);
      const std::string where = cur == &app ? "genesis" : "genesis " + cur->get_name();
      return "unknown option '" + name + "' of '" + where + "'" +
             (best.empty() ? "" : ": did you mean '" + best + "'?");
    }
    std::vector<CLI::App*> subs = cur->get_subcommands([](CLI::App*) { return true; });
    auto it = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == a; });
    if (it != subs.end()) {
      deepest = cur = *it;
      continue;
    }
    if (cur->get_prefix_command()) break;
    if (!subs.empty() && cur->get_require_subcommand_min() > 0) {
      std::vector<std::string> names;
      for (const CLI::App* s : subs) names.push_back(s->get_name());
      const std::string best = closest_name(a, names);
      const std::string where = cur == &app ? "genesis" : "genesis " + cur->get_name();
      return "'" + a + "' is not a command of '" + where + "'" + (best.empty() ? "" : ": did you mean '" + best + "'?");
    }
  }
  return "";
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = std::max<size_t>(1, std::min<size_t>(3, word.size() / 3)) + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_d) best_d = d, best = n;
  }
  if (best.empty() && word.find_first_not_of('-') != std::string::npos && word.size() >= 4)
    for (const std::string& n : names)
      if (n.compare(0, word.size(), word) == 0) return n;
  return best;
}

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
  app.name("genesis");
  // Every option's default shows in --help (the commands' apps inherit this).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", std::string("genesis ") + gn_version_string());
  app.require_subcommand(1);

  GlobalOptions opts;
  app.add_option("--plugin-path", opts.plugin_path,
                 "colon-separated plugin directories, searched before $GENESIS_PLUGIN_PATH "
                 "and the built-in directory (default: none)");
  CLI::Option* plugins = app.add_option(
      "--plugins", opts.plugins, "comma-separated plugin names to load (default: all found, or $GENESIS_PLUGINS)");
  app.add_option("--backends", opts.backends,
                 "which plugin serves a device type, e.g. cpu=reference (default: the runtime's choice)");
  app.add_flag("-q,--quiet", opts.quiet, "do not print plugin-rejection messages to stderr");
  app.add_flag("--no-default-paths", opts.no_default_paths,
               "search only --plugin-path (skip $GENESIS_PLUGIN_PATH and the built-in directory)");
  app.add_option("--threads", opts.threads,
                 "CPU threads for parallel work (default: $OMP_NUM_THREADS, else $GENESIS_NUM_THREADS, else "
                 "the cores this process may use); ranks started by `launch` inherit it")
      ->check(CLI::Range(1, 4096));

  const genesis::cli::CommandRun run = genesis::cli::add_commands(app, genesis::cli::kCommands);

  if (argc == 1) {  // `genesis` alone: what it can do
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    CLI::App* deepest = nullptr;
    const std::string unknown = genesis::cli::explain_unknown(app, argc, argv, deepest);
    if (!unknown.empty()) {
      std::fprintf(stderr, "genesis: %s\nRun with --help for more information.\n", unknown.c_str());
      return e.get_exit_code();
    }
    if (deepest && deepest->get_require_subcommand_min() > 0 && deepest->get_subcommands().empty() &&
        dynamic_cast<const CLI::RequiredError*>(&e)) {  // `genesis bench`: which commands there are
      const std::string where = deepest == &app ? "genesis" : "genesis " + deepest->get_name();
      std::fprintf(stderr, "genesis: '%s' needs a command\n%s", where.c_str(), deepest->help().c_str());
      return e.get_exit_code();
    }
    return app.exit(e);
  }
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
