// genesis/data/dataloader.hpp - batches of a Dataset, optionally shuffled.
//
//   data::DataLoader loader(ds, {.batch_size = 64, .shuffle = true, .seed = 0});
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     loader.set_epoch(epoch);
//     for (const data::Example& b : loader) { auto x = b[0], y = b[1]; ... }
//   }
//
// The order of epoch e depends only on (seed, e): resuming at epoch e (and
// batch k with set_start_batch) replays exactly what an uninterrupted run sees.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "genesis/data/dataset.hpp"

namespace genesis::data {

/** DataLoader options. */
struct DataLoaderOptions {
  int64_t batch_size = 1;        ///< examples per batch
  bool shuffle = false;          ///< a fresh permutation per epoch
  bool drop_last = false;        ///< drop the last, incomplete batch
  uint64_t seed = 0;             ///< shuffle seed: epoch e's order depends only on (seed, e)
  std::optional<Device> device;  ///< move batches here (unset: leave them where the dataset made them)
  int num_replicas = 1;          ///< shard every epoch's order over this many ranks (distributed training)
  int rank = 0;                  ///< the shard served: positions rank, rank + num_replicas, ... of the order padded
                                 ///< to a multiple of num_replicas (torch's DistributedSampler)
};

/** Iterates over a dataset in batches (torch.utils.data.DataLoader, single process). */
class DataLoader {
 public:
  /** A loader over ds (shared). */
  DataLoader(std::shared_ptr<const Dataset> ds, DataLoaderOptions options = {});

  /** Input iterator over the batches of one epoch. */
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = const Example*;
    using reference = const Example&;
    /** The current batch (loaded lazily). */
    const Example& operator*() const;
    /** Next batch. */
    Iterator& operator++();
    /** Same position. */
    bool operator!=(const Iterator& o) const { return batch_ != o.batch_; }
    /** Same position. */
    bool operator==(const Iterator& o) const { return batch_ == o.batch_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* l, std::shared_ptr<const std::vector<int64_t>> order, int64_t batch)
        : loader_(l), order_(std::move(order)), batch_(batch) {}
    const DataLoader* loader_;
    std::shared_ptr<const std::vector<int64_t>> order_;
    int64_t batch_;
    mutable std::optional<Example> cur_;
  };

  /** First batch of the current epoch (from the start batch); then the epoch advances by one. */
  Iterator begin();
  /** Past the last batch. */
  Iterator end() const;

  /** Sets the epoch the next begin() iterates (torch's sampler.set_epoch). */
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /** The epoch the next begin() iterates. */
  int64_t epoch() const { return epoch_; }
  /** Makes the next begin() start at batch k (resume mid-epoch); reset to 0 after that. */
  void set_start_batch(int64_t k) { start_batch_ = k; }
  /** Batches per epoch. */
  int64_t size() const;
  /** Examples per epoch actually served (drop_last aware). */
  int64_t num_examples() const;
  /** Example indices of epoch e in order (0..n-1 without shuffle). */
  std::vector<int64_t> indices(int64_t epoch) const;
  /** Batch b of epoch e. */
  Example batch(int64_t epoch, int64_t b) const;
  /** The dataset. */
  const Dataset& dataset() const { return *ds_; }
  /** The options. */
  const DataLoaderOptions& options() const { return opt_; }

 private:
  Example load(const std::vector<int64_t>& order, int64_t b) const;
  std::shared_ptr<const Dataset> ds_;
  DataLoaderOptions opt_;
  int64_t epoch_ = 0;
  int64_t start_batch_ = 0;
};

}  // namespace genesis::data
