// dataloader.cpp - batching and per-epoch reproducible shuffling.
#include "genesis/data/dataloader.hpp"

#include <string>

#include "genesis/random.hpp"

namespace genesis::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> ds, DataLoaderOptions options)
    : ds_(std::move(ds)), opt_(std::move(options)) {
  if (!ds_) throw Error(GN_ERR_INVALID_ARGUMENT, "[DataLoader] null dataset");
  if (opt_.batch_size < 1)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[DataLoader] batch_size must be >= 1, got " + std::to_string(opt_.batch_size));
  if (opt_.num_replicas < 1 || opt_.rank < 0 || opt_.rank >= opt_.num_replicas)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[DataLoader] rank " + std::to_string(opt_.rank) + " of " +
                                             std::to_string(opt_.num_replicas) + " replicas");
}

namespace {
// Examples of one shard: the order padded to a multiple of the replicas, split evenly.
int64_t shard_size(int64_t n, int replicas) { return (n + replicas - 1) / replicas; }
}  // namespace

int64_t DataLoader::size() const {
  const int64_t n = shard_size(ds_->size(), opt_.num_replicas), b = opt_.batch_size;
  return opt_.drop_last ? n / b : (n + b - 1) / b;
}

int64_t DataLoader::num_examples() const {
  return opt_.drop_last ? size() * opt_.batch_size : shard_size(ds_->size(), opt_.num_replicas);
}

std::vector<int64_t> DataLoader::indices(int64_t epoch) const {
  const int64_t n = ds_->size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (!opt_.shuffle) {
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  } else {
    // A private generator keyed by (seed, epoch): no dependence on earlier epochs or global state.
    Generator g(derive_seed(opt_.seed, static_cast<uint64_t>(epoch)));
    Tensor p = randperm(n, g);
    if (n) check(gn_tensor_to_host(p.handle(), order.data(), order.size() * sizeof(int64_t)), "DataLoader");
  }
  if (opt_.num_replicas == 1 || n == 0) return order;
  // Every rank computed the same order: rank r keeps positions r, r + R, ... of it,
  // padded by repeating its start so that every rank gets as many examples.
  const int64_t per = shard_size(n, opt_.num_replicas);
  std::vector<int64_t> shard(static_cast<size_t>(per));
  for (int64_t k = 0; k < per; ++k) shard[k] = order[(opt_.rank + k * opt_.num_replicas) % n];
  return shard;
}

Example DataLoader::load(const std::vector<int64_t>& order, int64_t b) const {
  if (b < 0 || b >= size())
    throw Error(GN_ERR_INDEX,
                "[DataLoader] batch " + std::to_string(b) + " out of range (" + std::to_string(size()) + " batches)");
  const int64_t lo = b * opt_.batch_size;
  const int64_t hi = std::min<int64_t>(lo + opt_.batch_size, static_cast<int64_t>(order.size()));
  std::vector<int64_t> idx(order.begin() + lo, order.begin() + hi);
  Example e = ds_->get_batch(idx);
  if (opt_.device)
    for (Tensor& t : e) t = t.to(*opt_.device);
  return e;
}

Example DataLoader::batch(int64_t epoch, int64_t b) const { return load(indices(epoch), b); }

DataLoader::Iterator DataLoader::begin() {
  auto order = std::make_shared<const std::vector<int64_t>>(indices(epoch_));
  const int64_t start = std::min(start_batch_, size());
  ++epoch_;
  start_batch_ = 0;
  return Iterator(this, std::move(order), start);
}

DataLoader::Iterator DataLoader::end() const { return Iterator(this, nullptr, size()); }

const Example& DataLoader::Iterator::operator*() const {
  if (!cur_) cur_ = loader_->load(*order_, batch_);
  return *cur_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++batch_;
  cur_.reset();
  return *this;
}

}  // namespace genesis::data
