// launch.cpp - `genesis launch`: start the ranks of a distributed job on this
// host with torchrun's environment (genesis::distributed::launch does the work).
//
//   genesis launch --nproc-per-node 2 build/bin/train_fashion_mnist --epochs 1
//   genesis launch --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --nproc-per-node 8 genesis train-sft ...
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli.h"
#include "genesis/distributed/launch.hpp"
#include "genesis/tensor.hpp"

namespace genesis::cli {

namespace {

struct LaunchState {
  CLI::App* cmd = nullptr;
  genesis::distributed::LaunchOptions o;
  double grace_s = 5;
};

int run_launch(const GlobalOptions&, LaunchState& s) {
  s.o.argv = s.cmd->remaining();
  if (s.o.argv.empty()) {
    std::fprintf(stderr, "genesis launch: no program given (genesis launch [options] PROGRAM ARGS...)\n");
    return 2;
  }
  if (s.o.argv[0].size() > 1 && s.o.argv[0][0] == '-') {  // a mistyped option, not a program
    std::vector<std::string> names;
    for (const CLI::Option* opt : s.cmd->get_options())
      for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    const std::string word = s.o.argv[0].substr(0, s.o.argv[0].find('='));
    const std::string best = closest_name(word, names);
    std::fprintf(stderr, "genesis launch: unknown option '%s'%s (the program and its options come after launch's)\n",
                 word.c_str(), best.empty() ? "" : (": did you mean '" + best + "'?").c_str());
    return 2;
  }
  s.o.grace = std::chrono::milliseconds((int64_t)(s.grace_s * 1000));
  try {
    return genesis::distributed::launch(s.o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "genesis launch: %s\n", e.what());
    return 2;
  }
}

}  // namespace

CommandRun setup_launch(CLI::App& cmd) {
  auto s = std::make_shared<LaunchState>();
  s->cmd = &cmd;
  genesis::distributed::LaunchOptions& o = s->o;
  cmd.add_option("--nproc-per-node", o.nproc_per_node, "ranks on this host")->capture_default_str();
  cmd.add_option("--nnodes", o.nnodes, "hosts in the job")->capture_default_str();
  cmd.add_option("--node-rank", o.node_rank, "this host's index, 0 .. nnodes-1 (0 serves the store)")
      ->capture_default_str();
  cmd.add_option("--master-addr", o.master_addr, "address of the host of node rank 0")->capture_default_str();
  cmd.add_option("--master-port", o.master_port,
                 "free TCP port on that host for the store (0: any free one, one host only)")
      ->capture_default_str();
  cmd.add_option("--grace", s->grace_s, "seconds between SIGTERM and SIGKILL when stopping the job")
      ->capture_default_str();
  // Everything from the program on belongs to the program, its options included.
  cmd.prefix_command();
  return bind_command(s, run_launch);
}

}  // namespace genesis::cli
