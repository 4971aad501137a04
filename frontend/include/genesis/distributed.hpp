// genesis/distributed.hpp - torch.distributed for Genesis: a TCP store,
// process groups over the communicator plugins (gloo for cpu tensors, nccl for
// cuda tensors), collectives on Tensors, rank-aware logging, and
// DistributedDataParallel with a DistributedSampler (genesis/distributed/ddp.hpp).
//
//   genesis::distributed::init_process_group();          // RANK, WORLD_SIZE, MASTER_ADDR, ... from torchrun/genesis
//   launch genesis::distributed::all_reduce(t);                  // sum over the ranks, in place auto g =
//   genesis::distributed::new_group({0, 1});     // every rank calls it; non-members get nullptr
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::distributed {

/** Reduction of all_reduce / reduce_scatter (values of gn_reduce_op). */
enum class ReduceOp : int32_t {
  sum = GN_REDUCE_SUM,
  prod = GN_REDUCE_PROD,
  max = GN_REDUCE_MAX,
  min = GN_REDUCE_MIN,
  avg = GN_REDUCE_AVG
};

// ---------------------------------------------------------------- the store

/** A key-value store over TCP shared by every rank (torch's TCPStore): one
 * process serves it (rank 0, at MASTER_ADDR:MASTER_PORT), every rank is a
 * client.  Values are bytes; get waits until the key is set. */
class TCPStore {
 public:
  /** Connects to host:port, serving it first when is_server (binds every interface);
   * retries the connection until `timeout`. */
  TCPStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout);
  /** Stops the server (when this process serves) and closes the connection. */
  ~TCPStore();
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;
  /** Sets key to value. */
  void set(const std::string& key, const std::string& value);
  /** The value of key, waiting up to timeout (the store's when negative) for it; throws GN_ERR_TIMEOUT. */
  std::string get(const std::string& key, std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));
  /** Adds delta to the integer at key (0 when unset) and returns the sum. */
  int64_t add(const std::string& key, int64_t delta);
  /** The port served (useful with port 0 for an ephemeral one). */
  int port() const { return port_; }
  /** This host's address as the server sees it (the local end of the connection). */
  const std::string& local_address() const { return local_address_; }
  /** The store's default timeout. */
  std::chrono::milliseconds timeout() const { return timeout_; }
  /** The store as the communicator ABI sees it (valid while this object lives). */
  const gn_comm_store* c_store() const { return &c_store_; }

 private:
  struct Server;
  std::string request(char cmd, const std::string& key, const std::string& value, std::chrono::milliseconds timeout);
  std::unique_ptr<Server> server_;
  int fd_ = -1;
  std::string host_;
  int port_ = 0;
  std::string local_address_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  gn_comm_store c_store_{};
};

// ------------------------------------------------------------------ work

/** A pending collective (async_op=true): wait() blocks until it is done and
 * rethrows its error (GN_ERR_TIMEOUT / GN_ERR_ABORTED when a peer failed). */
class Work {
 public:
  struct State;
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : s_(std::move(s)) {}
  /** Blocks until done; throws the collective's error.  For cuda, makes the current stream wait. */
  void wait();
  /** True once finished (successfully or not). */
  bool is_completed() const;

 private:
  std::shared_ptr<State> s_;
};

// --------------------------------------------------------- process groups

/** One communicator over a set of ranks (torch's ProcessGroup).  Collectives
 * must be called by every member in the same order.  Tensors must be on the
 * group's device type (cpu for gloo, cuda for nccl); any layout is accepted
 * (non-contiguous tensors go through a contiguous copy). */
class ProcessGroup {
 public:
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();
  /** This process's rank in the group. */
  int rank() const { return rank_; }
  /** Number of ranks in the group. */
  int size() const { return size_; }
  /** Global ranks of the members, in group-rank order. */
  const std::vector<int>& ranks() const { return ranks_; }
  /** Communicator backend ("gloo", "nccl"). */
  std::string backend() const;
  /** The device whose memory the group moves (cpu, or this rank's cuda device). */
  const Device& device() const { return device_; }

  /** t = op over the ranks' t, in place. */
  Work all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum, bool async_op = false);
  /** out = op over the ranks' in (out contiguous, in's shape and dtype; in is only read). */
  Work all_reduce_into(Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::sum, bool async_op = false);
  /** t = the src rank's t (src is a rank of this group). */
  Work broadcast(Tensor& t, int src, bool async_op = false);
  /** out (size * numel(in) elements, any shape) = the ranks' in, in rank order. */
  Work all_gather_into_tensor(Tensor& out, const Tensor& in, bool async_op = false);
  /** The ranks' in, one tensor per rank. */
  std::vector<Tensor> all_gather(const Tensor& in);
  /** out = chunk `rank` of op over the ranks' in (numel(in) = size * numel(out)). */
  Work reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::sum, bool async_op = false);
  /** Chunk j of in goes to rank j; chunk i of out comes from rank i. */
  Work all_to_all_single(Tensor& out, const Tensor& in, bool async_op = false);
  /** Sends t to rank dst of this group (blocks until it is handed over). */
  void send(const Tensor& t, int dst, int tag = 0);
  /** Receives into t from rank src of this group. */
  void recv(Tensor& t, int src, int tag = 0);
  /** Waits until every member reached it. */
  void barrier();
  /** Aborts the communicator: pending and later calls fail with GN_ERR_ABORTED. */
  void abort();
  /** The C communicator. */
  gn_comm* c_comm() const { return comm_; }

 private:
  friend std::shared_ptr<ProcessGroup> make_group(const std::string&, const Device&, int, const std::vector<int>&,
                                                  TCPStore&, const std::string&, std::chrono::milliseconds);
  ProcessGroup() = default;
  Work run(const char* what, bool async_op, std::function<void(gn_stream*)> fn, std::function<void()> finish = {});
  gn_comm* comm_ = nullptr;
  int rank_ = 0, size_ = 1;
  std::vector<int> ranks_;
  Device device_;
  std::chrono::milliseconds timeout_{0};
  struct Worker;
  std::unique_ptr<Worker> worker_;    // runs the calls in order, off the caller's thread
  gn_stream* side_stream_ = nullptr;  // cuda: the calls run here
};

// ---------------------------------------------------------- default group

/** How to start (torchrun's environment fills what is left unset). */
struct InitOptions {
  std::string backend;                    ///< "gloo", "nccl", or "" = by device ("nccl" for cuda, else "gloo")
  std::string device;                     ///< "cpu" or "cuda" ("" = $GENESIS_DIST_DEVICE, else cpu)
  int rank = -1;                          ///< -1 = $RANK
  int world_size = -1;                    ///< -1 = $WORLD_SIZE
  std::string master_addr;                ///< "" = $MASTER_ADDR (default 127.0.0.1)
  int master_port = -1;                   ///< -1 = $MASTER_PORT (default 29500)
  std::chrono::milliseconds timeout{-1};  ///< -1 = $GENESIS_DIST_TIMEOUT seconds, else 300 s
};

/** Joins the job: serves (rank 0) or reaches the store and creates the world group. */
void init_process_group(const InitOptions& options = {});
/** The one line a single-process trainer adds to run under `genesis launch`: when torchrun's
 * WORLD_SIZE says there are several ranks, joins the job once (the group moves `device`'s type:
 * gloo for cpu, nccl for cuda) and returns true; else returns false and does nothing. */
bool init_from_env(const Device& device);
/** The device this rank should train on: cuda:$LOCAL_RANK for "cuda" under a launcher, else spec. */
Device local_device(const std::string& spec);
/** True between init_process_group and destroy_process_group. */
bool is_initialized();
/** Leaves the job: destroys every group and the store. */
void destroy_process_group();
/** The world group (throws unless initialized). */
ProcessGroup& world();
/** The store of the job (throws unless initialized). */
TCPStore& store();
/** Global rank (0 when not initialized). */
int get_rank();
/** World size (1 when not initialized). */
int get_world_size();
/** $LOCAL_RANK (0 when unset): this process's index on its host. */
int local_rank();
/** $LOCAL_WORLD_SIZE (1 when unset). */
int local_world_size();
/** A group of these global ranks; every rank must call it, in the same order.
 * Returns nullptr on ranks outside it. */
std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks);

/** all_reduce on the world group (or g). */
Work all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum, ProcessGroup* g = nullptr, bool async_op = false);
/** broadcast from global rank src on the world group (or g, with its group rank). */
Work broadcast(Tensor& t, int src, ProcessGroup* g = nullptr, bool async_op = false);
/** all_gather on the world group (or g): one tensor per rank. */
std::vector<Tensor> all_gather(const Tensor& t, ProcessGroup* g = nullptr);
/** barrier on the world group (or g). */
void barrier(ProcessGroup* g = nullptr);

// ----------------------------------------------------------------- logging

/** Writes "[rank R/W] msg" to stderr (one line, whole, even from many processes). */
void log(const std::string& msg);
/** log() on rank 0 only. */
void log0(const std::string& msg);

}  // namespace genesis::distributed
