// genesis/distributed/fsdp.hpp - FullyShardedDataParallel: ZeRO stages 1-3
// (DeepSpeed's names) / torch's FSDP, with a sharded AdamW built in.
//
//   distributed::init_process_group();
//   distributed::FSDPOptions o;
//   o.strategy = distributed::ShardingStrategy::full;   // ZeRO-3
//   o.units = {&model.layer0, &model.layer1};           // each all-gathered on its own
//   distributed::FullyShardedDataParallel fsdp(model, o);
//   for (...) {
//     fsdp.zero_grad();
//     loss_fn(fsdp(x), y).backward();                   // gradients reduce-scattered unit by unit
//     fsdp.clip_grad_norm_(1.0);                         // the global norm over every shard
//     fsdp.step();                                       // AdamW on this rank's shard
//   }
//
// The parameters of each unit (the modules named in FSDPOptions::units, and a
// root unit holding every other parameter) are laid out in one flat buffer,
// padded to a multiple of the world size N; rank r owns elements
// [r*S, (r+1)*S) with S = padded / N: the master copy of those parameters
// (float32, or float64 for float64 parameters) and AdamW's two moments.
//
//   optimizer       (ZeRO-1) parameters replicated as views of a flat buffer per
//                   unit; gradients all-reduced into a full flat buffer; each rank
//                   updates its shard; the shards are all-gathered into the
//                   parameters after the step.
//   grad_optimizer  (ZeRO-2) as optimizer, but each unit's gradient is
//                   reduce-scattered as soon as its backward is done: only the
//                   shard is kept.
//   full            (ZeRO-3) parameters sharded too: between uses a parameter
//                   holds no elements; a unit is all-gathered into a new flat
//                   buffer before its forward (unit_forward) and again before its
//                   backward (an autograd node on its output), and released after
//                   each; its gradient is reduce-scattered as its backward ends.
//
// A unit's forward must run through distributed::unit_forward(unit, fn) (a
// plain call of fn when the module is not a unit of a live FSDP), so that the
// model's code names where a unit starts and ends; the root unit is gathered
// for the whole of forward() and backward.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "genesis/distributed.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::distributed {

/** Named tensors, in order. */
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/** Which state is sharded over the ranks (ZeRO stage 1, 2 or 3). */
enum class ShardingStrategy {
  optimizer,       ///< ZeRO-1: AdamW state (and master weights)
  grad_optimizer,  ///< ZeRO-2: + gradients
  full             ///< ZeRO-3: + parameters
};

/** "optimizer", "grad_optimizer" or "full" (throws genesis::Error on anything else). */
ShardingStrategy sharding_strategy_from_string(const std::string& name);
/** The name of s. */
const char* to_string(ShardingStrategy s);

/** FSDP options: the strategy, the units, AdamW's hyperparameters (torch's AdamW defaults). */
struct FSDPOptions {
  ShardingStrategy strategy = ShardingStrategy::full;
  /// Submodules sharded and gathered one at a time (e.g. each decoder layer), disjoint; the
  /// parameters of no unit form the root unit.  Empty: the whole module is one unit.
  std::vector<nn::Module*> units;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool average = true;  ///< divide the summed gradients by the world size
  /// full: when a unit is gathered, start all-gathering the next one (in `units` order in forward,
  /// the previous one in backward) asynchronously, so that its communication overlaps this one's compute.
  bool prefetch = true;
  /// Mixed precision (torch's MixedPrecisionPolicy.param_dtype): the dtype (bf16, f16) the parameters
  /// are all-gathered in and compute in, and their gradients are reduced in; the master shards and
  /// AdamW's state keep the module's precision (float32, or float64).  Unset: the module's dtype.
  std::optional<DType> param_dtype;
};

/** Wraps a module for sharded data-parallel training with a sharded AdamW. */
class FullyShardedDataParallel {
 public:
  /** Broadcasts rank 0's parameters and buffers over group (world when null), lays out the
   * units, keeps this rank's master shard and installs the gradient hooks.  The module (and
   * the units) must outlive this object; every parameter of a unit must have one dtype. */
  explicit FullyShardedDataParallel(nn::Module& module, FSDPOptions options = {}, ProcessGroup* group = nullptr);
  /** Over lists of named parameters instead of a module (modules written in another language):
   * units[k] = (name, parameters) is unit k, the one named "" the root unit; options.units is
   * ignored.  Call prepare_forward, the module, finish_forward; unit_forward(k, fn) for unit k. */
  FullyShardedDataParallel(const std::vector<std::pair<std::string, NamedTensors>>& units, const NamedTensors& buffers,
                           FSDPOptions options = {}, ProcessGroup* group = nullptr);
  /** Unregisters the units; under full the parameters stay without elements (take full_state_dict() before). */
  ~FullyShardedDataParallel();
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  /** module.forward(x) with the root unit gathered (full); the next backward reduces gradients. */
  Tensor forward(const Tensor& x);
  /** forward(x). */
  Tensor operator()(const Tensor& x) { return forward(x); }
  /** For modules called some other way (several inputs): call before their forward. */
  void prepare_forward();
  /** For modules called some other way: the module's output, made to gather the root unit before its backward. */
  Tensor finish_forward(const Tensor& y);
  /** Runs fn as the forward of unit k (its index in options.units or in the constructor's lists), as
   * distributed::unit_forward does for a unit's module. */
  Tensor unit_forward(size_t k, const std::function<Tensor()>& fn);
  /** The gradient norm over every shard (2-norm, all-reduced), after scaling the gradient
   * shards by min(1, max_norm / (norm + 1e-6)) as torch's clip_grad_norm_; returns the norm. */
  double clip_grad_norm_(double max_norm);
  /** One AdamW step of this rank's shard of every unit that has a gradient; then the
   * parameters are all-gathered (optimizer, grad_optimizer) or left sharded (full). */
  void step();
  /** Drops the reduced gradients (and any local .grad of the parameters). */
  void zero_grad();
  /** Sets the learning rate of later steps. */
  void set_lr(double lr) { opt_.lr = lr; }
  /** Every parameter, whole (all-gathered: every rank must call it), and the persistent buffers,
   * by state_dict name: a checkpoint any world size loads. */
  std::map<std::string, Tensor> full_state_dict();
  /** Writes this rank's shard of parameters and AdamW state to dir/shard-R-of-N.safetensors and
   * (rank 0) the flat layout to dir/manifest.json and the buffers to dir/buffers.safetensors, each
   * through a temporary file renamed into place; a collective. */
  void save_sharded(const std::string& dir);
  /** Loads what save_sharded wrote, at any world size (the shards are cut anew); a collective. */
  void load_sharded(const std::string& dir);
  /** The wrapped module (throws when built over parameter lists). */
  nn::Module& module();
  /** The strategy. */
  ShardingStrategy strategy() const { return opt_.strategy; }
  /** Number of units (the root unit last, when it has parameters). */
  size_t num_units() const;
  /** Elements of unit k's flat buffer (padded to a multiple of the world size). */
  int64_t unit_numel(size_t k) const;
  /** AdamW steps taken. */
  int64_t steps() const;
  /** Bytes this rank holds now for parameters (gathered or replicated), master shards, gradients
   * (reduced and local) and AdamW state, for checking the memory arithmetic. */
  struct Memory {
    int64_t params = 0, master = 0, grads = 0, optimizer_state = 0;
  };
  /** What this rank holds now (see Memory). */
  Memory memory() const;

  /** Gradient accumulation without communication (torch's no_sync): while the guard lives,
   * backward only accumulates local gradients; the first backward after it reduces the sum. */
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(FullyShardedDataParallel& f) : f_(f), prev_(f.sync_) { f.sync_ = false; }
    ~NoSyncGuard() { f_.sync_ = prev_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    FullyShardedDataParallel& f_;
    bool prev_;
  };
  /** A NoSyncGuard for this FSDP. */
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  struct State;

 private:
  nn::Module* module_ = nullptr;
  FSDPOptions opt_;
  bool sync_ = true;
  std::shared_ptr<State> state_;  // the hooks hold it weakly
};

/** Runs fn, the forward of `unit`: when unit is a unit of a live FullyShardedDataParallel with
 * the full strategy, its parameters are all-gathered first and released after, and the result
 * gathers them again before its backward; otherwise just fn(). */
Tensor unit_forward(nn::Module& unit, const std::function<Tensor()>& fn);

}  // namespace genesis::distributed
