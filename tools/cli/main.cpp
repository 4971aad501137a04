// main.cpp - the `genesis` command-line tool: option parsing and subcommand
// dispatch.  Each subcommand lives in its own file and only uses the C API.
#include <CLI/CLI.hpp>

#include "cli.h"

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
      "--plugins", opts.plugins,
      "comma-separated plugin names to load (default: all found, or $GENESIS_PLUGINS)");
  app.add_option("--backends", opts.backends,
                 "which plugin serves a device type, e.g. cpu=reference");
  app.add_flag("-q,--quiet", opts.quiet, "do not print plugin-rejection messages to stderr");
  app.add_flag("--no-default-paths", opts.no_default_paths,
               "search only --plugin-path (skip $GENESIS_PLUGIN_PATH and the built-in directory)");

  CLI::App* info = app.add_subcommand(
      "info", "show the ABI and library versions, plugins (loaded or rejected and why), "
              "device types and every op with the backends and dtypes implementing it");
  // Let the global options also follow the subcommand: `genesis info --quiet`.
  info->fallthrough();
  bool no_ops = false;
  info->add_flag("--no-ops", no_ops, "leave out the op table (versions, plugins and devices only)");

  genesis::cli::LlmCommands llm(app);
  genesis::cli::TrainCommands train(app);
  genesis::cli::TokenizeOptions tokenize_opts;
  CLI::App* tokenize = genesis::cli::add_tokenize(app, tokenize_opts);
  genesis::cli::TestOpsOptions test_ops_opts;
  CLI::App* test_ops = genesis::cli::add_test_ops(app, test_ops_opts);
  genesis::cli::LaunchCommand launch(app);

  CLI11_PARSE(app, argc, argv);
  opts.has_plugins = plugins->count() > 0;

  if (*info) return genesis::cli::run_info(opts, !no_ops);
  if (*tokenize) return genesis::cli::run_tokenize(tokenize_opts);
  if (*test_ops) return genesis::cli::run_test_ops(opts, test_ops_opts);
  if (int rc = llm.run(opts); rc >= 0) return rc;
  if (int rc = train.run(opts); rc >= 0) return rc;
  if (int rc = launch.run(); rc >= 0) return rc;
  return 1;  // unreachable: require_subcommand(1)
}
