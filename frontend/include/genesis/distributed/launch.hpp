// genesis/distributed/launch.hpp - start the ranks of a job on this host
// (torchrun's agent, without elasticity): what `genesis launch` runs.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace genesis::distributed {

/** A job's shape and the program each rank runs. */
struct LaunchOptions {
  int nproc_per_node = 1;                 ///< ranks started on this host
  int nnodes = 1;                         ///< hosts in the job
  int node_rank = 0;                      ///< this host's index (0 serves the store)
  std::string master_addr = "127.0.0.1";  ///< host of global rank 0
  int master_port = 29500;                ///< port of the store on master_addr (0: any free one, one host only)
  std::vector<std::string> argv;          ///< program and its arguments (PATH is searched)
  std::chrono::milliseconds grace{5000};  ///< after a failure: SIGTERM, then SIGKILL after this
};

/** Starts nproc_per_node processes with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT (and GENESIS_NUM_THREADS = cores / nproc when unset), forwards
 * SIGINT/SIGTERM/SIGHUP to them, and waits.  When a rank fails (non-zero exit or a signal) it
 * reports "rank R exited with code C" on stderr, stops the others (SIGTERM, then SIGKILL after
 * grace) and returns that code (128 + signal for a signal); 0 when every rank succeeded. */
int launch(const LaunchOptions& options);

}  // namespace genesis::distributed
