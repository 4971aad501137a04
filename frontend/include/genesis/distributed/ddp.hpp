// genesis/distributed/ddp.hpp - DistributedDataParallel (torch's DDP) and
// DistributedSampler.
//
//   distributed::init_process_group();
//   distributed::DistributedDataParallel ddp(model);   // broadcasts rank 0's parameters and buffers
//   Tensor loss = loss_fn(ddp(x), y);
//   loss.backward();                                     // gradients averaged over the ranks
//   optimizer.step();
//
// Gradients are packed in buckets of about bucket_cap_mb, filled in reverse
// registration order (the order backward usually produces them).  A hook on
// each parameter fires when its gradient is accumulated; when the last
// gradient of a bucket arrives, the bucket's all-reduce starts at once, on the
// group's worker thread (cpu) or side stream (cuda), while backward goes on.
// When backward ends, every bucket is waited for and the averaged gradients
// become .grad (views of the bucket, or copies into the existing tensors).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "genesis/distributed.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::distributed {

/** DDP options (torch's names). */
struct DDPOptions {
  double bucket_cap_mb = 25;            ///< bucket size in MiB ($GENESIS_DDP_BUCKET_MB overrides it)
  bool find_unused_parameters = false;  ///< allow parameters without a gradient in some backward passes
  bool broadcast_buffers = true;        ///< copy rank 0's buffers to every rank before each forward
  bool average = true;                  ///< divide the summed gradients by the world size
  /// After backward each .grad is a view of the all-reduce's output (no copy back; a .grad tensor
  /// held from before backward is not updated). false: the results are copied into the existing
  /// .grad tensors. $GENESIS_DDP_BUCKET_VIEW=0/1 overrides it.
  bool gradient_as_bucket_view = true;
  /// Gradient compression: floating gradients are cast to this dtype (bf16 or f16) for the
  /// all-reduce and back afterwards, halving the bytes moved at the cost of rounding the average to
  /// 8 (bf16) or 11 (f16) significant bits, as torch's bf16/fp16_compress_hook.  Unset: no cast.
  /// $GENESIS_DDP_REDUCE_DTYPE=bf16|f16|none overrides it.
  std::optional<DType> reduce_dtype;
};

/** Wraps a module so that backward averages its gradients over the ranks. */
class DistributedDataParallel {
 public:
  /** Broadcasts module's parameters and buffers from rank 0 of group (world when null) and
   * installs the gradient hooks.  The module must outlive this object. */
  explicit DistributedDataParallel(nn::Module& module, DDPOptions options = {}, ProcessGroup* group = nullptr);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /** module.forward(x), after syncing buffers; the next backward synchronises gradients. */
  Tensor forward(const Tensor& x);
  /** forward(x). */
  Tensor operator()(const Tensor& x) { return forward(x); }
  /** For modules called some other way (several inputs): call before their forward. */
  void prepare_forward();
  /** All-reduces the current gradients now, as a backward would (missing ones count as zeros): for a
   * rank with nothing to backward in a step (no targets) while the others run backward. */
  void reduce_gradients();
  /** The wrapped module (its state_dict has no "module." prefix: it loads at any world size). */
  nn::Module& module() { return module_; }

  /** Gradient accumulation without communication (torch's no_sync): while the guard lives,
   * backward only accumulates local gradients; the first backward after it all-reduces the sum. */
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& d) : d_(d), prev_(d.sync_) { d.sync_ = false; }
    ~NoSyncGuard() { d_.sync_ = prev_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& d_;
    bool prev_;
  };
  /** A NoSyncGuard for this DDP. */
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /** Names of the parameters that got no gradient in the last synchronised backward (on every
   * rank; find_unused_parameters only). */
  const std::vector<std::string>& unused_parameters() const;
  /** Bucket layout: parameter indices (registration order) per bucket, in launch order. */
  std::vector<std::vector<size_t>> bucket_indices() const;

  struct Reducer;

 private:
  nn::Module& module_;
  bool sync_ = true;
  std::shared_ptr<Reducer> reducer_;  // the hooks hold it weakly
};

/** Which examples each rank reads (torch's DistributedSampler): a permutation keyed by
 * (seed, epoch), identical on every rank, padded by repeating its start to a multiple of
 * num_replicas (or cut, with drop_last), of which rank r takes positions r, r + R, r + 2R, ... */
class DistributedSampler {
 public:
  /** num_replicas/rank < 0: the world size and rank of the default group. */
  DistributedSampler(int64_t dataset_size, int num_replicas = -1, int rank = -1, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  /** Sets the epoch (changes the permutation when shuffling). */
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /** This rank's indices for the current epoch. */
  std::vector<int64_t> indices() const;
  /** Indices per rank. */
  int64_t num_samples() const { return num_samples_; }

 private:
  int64_t n_, num_samples_;
  int replicas_, rank_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  int64_t epoch_ = 0;
};

/** Runs save on rank 0 only, then waits for it on every rank (checkpoints of replicated state). */
void save_on_rank0(const std::function<void()>& save, ProcessGroup* group = nullptr);

}  // namespace genesis::distributed
