// launch.cpp - `genesis launch`: start the ranks of a distributed job on this
// host with torchrun's environment (genesis::distributed::launch does the work).
//
//   genesis launch --nproc-per-node 2 build/bin/train_fashion_mnist --epochs 1
//   genesis launch --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --nproc-per-node 8 genesis train-sft ...
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli.h"
#include "genesis/distributed/launch.hpp"
#include "genesis/tensor.hpp"

namespace genesis::cli {

LaunchCommand::LaunchCommand(CLI::App& app) {
  cmd_ = app.add_subcommand(
      "launch", "run PROGRAM ARGS... as the ranks of a distributed job (torchrun's RANK, WORLD_SIZE, LOCAL_RANK, "
                "LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); when one rank fails, stop the others and exit "
                "with its code");
  cmd_->add_option("--nproc-per-node", o_.nproc_per_node, "ranks on this host")->capture_default_str();
  cmd_->add_option("--nnodes", o_.nnodes, "hosts in the job")->capture_default_str();
  cmd_->add_option("--node-rank", o_.node_rank, "this host's index, 0 .. nnodes-1 (0 serves the store)")
      ->capture_default_str();
  cmd_->add_option("--master-addr", o_.master_addr, "address of the host of node rank 0")->capture_default_str();
  cmd_->add_option("--master-port", o_.master_port, "free TCP port on that host for the store (0: any free one, one host only)")->capture_default_str();
  cmd_->add_option("--grace", grace_s_, "seconds between SIGTERM and SIGKILL when stopping the job")
      ->capture_default_str();
  // Everything from the program on belongs to the program, its options included.
  cmd_->prefix_command();
}

int LaunchCommand::run() {
  if (!*cmd_) return -1;
  o_.argv = cmd_->remaining();
  if (o_.argv.empty()) {
    std::fprintf(stderr, "genesis launch: no program given (genesis launch [options] PROGRAM ARGS...)\n");
    return 2;
  }
  o_.grace = std::chrono::milliseconds((int64_t)(grace_s_ * 1000));
  try {
    return genesis::distributed::launch(o_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "genesis launch: %s\n", e.what());
    return 2;
  }
}

}  // namespace genesis::cli
