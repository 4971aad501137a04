// frontend/src/distributed/ddp.cpp - DistributedDataParallel: gradient buckets
// all-reduced from autograd hooks while backward runs, DistributedSampler,
// save_on_rank0.
//
// Per synchronised backward:
//   1. the first post-accumulate hook queues finalize() to run when the
//      backward ends;
//   2. each hook marks its parameter ready; buckets are launched strictly in
//      bucket order (the same on every rank whatever order gradients arrive
//      in), each as soon as it and every bucket before it are complete.  A
//      bucket of several parameters copies their gradients into one flat
//      tensor and all-reduces (averages) it in place; a bucket of one
//      parameter (a large embedding) all-reduces its gradient straight into a
//      new tensor, with no copy.  Either runs asynchronously;
//   3. finalize() launches what is left (with find_unused_parameters, missing
//      gradients count as zeros; else it is an error naming them), waits for
//      the buckets in order and makes the results the parameters' .grad: views
//      of the flat tensor (gradient_as_bucket_view), or copies into the
//      existing .grad tensors.
//
// The end of backward is the one part no all-reduce can hide behind, and the
// bucket launched last there is the largest (a tied embedding is ready only
// when the embedding lookup's gradient arrives): step 2's no-copy path and
// step 3's views keep every memory pass off that tail.
#include <cstdlib>
#include <numeric>
#include <unordered_set>

#include "genesis/autograd.hpp"
#include "genesis/distributed/ddp.hpp"
#include "genesis/random.hpp"

namespace genesis::distributed {

struct DistributedDataParallel::Reducer {
  ProcessGroup* group = nullptr;
  DDPOptions opt;
  const bool* sync = nullptr;  // the DDP's no_sync state
  std::vector<Tensor> params;  // registration order, those that require grad
  std::vector<std::string> names;
  struct Bucket {
    std::vector<size_t> params;   // parameter indices
    std::vector<int64_t> offset;  // element offset of each in the flat tensor
    int64_t numel = 0;
    DType dtype = DType::f32;  // the parameters'
    DType comm = DType::f32;   // what the all-reduce moves (dtype, or the reduce_dtype)
    Device device;
    size_t pending = 0;  // parameters still without a gradient this backward
    Tensor flat;         // the all-reduce's output (one parameter: shaped like it)
    Tensor input;        // one parameter: the gradient the all-reduce reads
    Work work;
    bool launched = false;
    bool stale = false;  // a gradient grew after the launch: all-reduce again in finalize
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;  // parameter -> bucket
  std::vector<bool> ready;
  size_t next_launch = 0;
  bool armed = false;  // a synchronised backward is under way
  std::vector<std::string> unused;

  void arm() {
    armed = true;
    std::fill(ready.begin(), ready.end(), false);
    for (Bucket& b : buckets)
      b.pending = b.params.size(), b.launched = false, b.stale = false, b.flat = Tensor(), b.input = Tensor(),
      b.work = Work();
    next_launch = 0;
  }

  void launch(Bucket& b) {
    NoGradGuard ng;
    const ReduceOp op = opt.average ? ReduceOp::avg : ReduceOp::sum;
    const Options o{b.comm, b.device};
    if (b.params.size() == 1) {
      // Out of place from the gradient itself: nothing to copy in or out (but the cast, if any).
      const Tensor& p = params[b.params[0]];
      Tensor g = p.grad();
      b.input = !g.defined() ? zeros(p.shape(), o) : g.dtype() == b.comm ? g : g.to(b.comm);
      b.flat = empty(p.shape(), o);
      b.work = group->all_reduce_into(b.flat, b.input, op, /*async_op=*/true);
      b.launched = true;
      return;
    }
    bool all = true;  // every gradient present: the copies fill the whole buffer
    for (size_t i : b.params) all = all && params[i].grad().defined();
    b.flat = all ? empty({b.numel}, o) : zeros({b.numel}, o);
    for (size_t k = 0; k < b.params.size(); ++k) {
      Tensor g = params[b.params[k]].grad();
      if (g.defined()) b.flat.slice(0, b.offset[k], b.offset[k] + g.numel()).copy_(g.reshape({g.numel()}));
    }
    b.work = group->all_reduce(b.flat, op, /*async_op=*/true);
    b.launched = true;
  }

  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) launch(buckets[next_launch++]);
  }

  void on_grad(size_t i) {
    if (!*sync) return;  // no_sync: gradients only accumulate
    if (!armed) {
      arm();
      std::weak_ptr<Reducer> self = self_weak;
      autograd::queue_callback([self] {
        if (auto r = self.lock()) r->finalize();
      });
    }
    if (ready[i]) {
      // A second accumulation in one backward (a parameter used inside and outside an
      // activation-checkpointed region, e.g. tied embeddings): a bucket not launched yet
      // copies the sum; a launched one is all-reduced again at the end (every rank does).
      Bucket& b = buckets[bucket_of[i]];
      if (b.launched) b.stale = true;
      return;
    }
    ready[i] = true;
    --buckets[bucket_of[i]].pending;
    launch_ready();
  }

  void finalize() {
    armed = false;
    std::vector<size_t> missing;
    for (size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) missing.push_back(i);
    if (!missing.empty() && !opt.find_unused_parameters) {
      std::string list;
      for (size_t k = 0; k < missing.size() && k < 10; ++k) list += (k ? ", " : "") + names[missing[k]];
      if (missing.size() > 10) list += ", ... (" + std::to_string(missing.size()) + " in all)";
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[DistributedDataParallel] rank " + std::to_string(get_rank()) +
                      ": these parameters got no gradient in this backward: " + list +
                      ". Pass find_unused_parameters=true when some parameters are not used in every step, or "
                      "leave them out of the module (the other ranks will stop with a timeout)");
    }
    for (size_t i : missing) --buckets[bucket_of[i]].pending;
    launch_ready();
    // Globally unused parameters keep no gradient (as torch): max over ranks of "used here".
    std::vector<bool> used_anywhere(params.size(), true);
    if (opt.find_unused_parameters) {
      std::vector<double> mask(params.size());
      for (size_t i = 0; i < params.size(); ++i) mask[i] = ready[i] ? 1 : 0;
      Tensor m = tensor(mask, {(int64_t)mask.size()}, Options{DType::i32, group->device()});
      group->all_reduce(m, ReduceOp::max);
      std::vector<double> any = m.tolist();
      unused.clear();
      for (size_t i = 0; i < params.size(); ++i)
        if (any[i] == 0) used_anywhere[i] = false, unused.push_back(names[i]);
    }
    for (Bucket& b : buckets)
      if (b.stale) {
        b.work.wait();
        launch(b);
      }
    NoGradGuard ng;
    for (Bucket& b : buckets) {
      b.work.wait();
      for (size_t k = 0; k < b.params.size(); ++k) {
        const size_t i = b.params[k];
        if (!used_anywhere[i]) continue;
        Tensor& p = params[i];
        Tensor avg =
            b.params.size() == 1 ? b.flat : b.flat.slice(0, b.offset[k], b.offset[k] + p.numel()).view(p.shape());
        Tensor g = p.grad();
        if (g.defined() && (!opt.gradient_as_bucket_view || b.comm != b.dtype))
          g.copy_(avg);  // converts from the reduce_dtype
        else
          p.set_grad(b.comm == b.dtype ? avg : avg.to(b.dtype));
      }
      b.flat = Tensor();
      b.input = Tensor();
      b.work = Work();
    }
  }

  std::weak_ptr<Reducer> self_weak;
};

DistributedDataParallel::DistributedDataParallel(nn::Module& module, DDPOptions options, ProcessGroup* group)
    : module_(module), reducer_(std::make_shared<Reducer>()) {
  Reducer& r = *reducer_;
  r.self_weak = reducer_;
  r.group = group ? group : &world();
  r.opt = options;
  r.sync = &sync_;
  // 1. Every rank starts from rank 0's parameters and buffers.
  {
    NoGradGuard ng;
    for (auto& [name, p] : module.named_parameters()) {
      Tensor t = p;
      r.group->broadcast(t, 0);
    }
    for (auto& [name, b] : module.named_buffers()) {
      Tensor t = b;
      r.group->broadcast(t, 0);
    }
  }
  for (auto& [name, p] : module.named_parameters())
    if (p.requires_grad()) r.params.push_back(p), r.names.push_back(name);
  // 2. Buckets of about bucket_cap_mb, in reverse registration order, one dtype and device each.
  double cap_mb = options.bucket_cap_mb;
  if (const char* e = std::getenv("GENESIS_DDP_BUCKET_MB"); e && *e) cap_mb = std::atof(e);
  if (const char* e = std::getenv("GENESIS_DDP_BUCKET_VIEW"); e && *e)
    r.opt.gradient_as_bucket_view = std::atoi(e) != 0;
  if (const char* e = std::getenv("GENESIS_DDP_REDUCE_DTYPE"); e && *e) {
    const std::string v = e;
    if (v == "none")
      r.opt.reduce_dtype.reset();
    else if (v == "bf16" || v == "f16")
      r.opt.reduce_dtype = v == "bf16" ? DType::bf16 : DType::f16;
    else
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[DistributedDataParallel] $GENESIS_DDP_REDUCE_DTYPE='" + v + "': expected bf16, f16 or none");
  }
  if (r.opt.reduce_dtype && *r.opt.reduce_dtype != DType::bf16 && *r.opt.reduce_dtype != DType::f16)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[DistributedDataParallel] reduce_dtype must be bf16 or f16");
  const double cap = cap_mb * 1024 * 1024;
  r.bucket_of.assign(r.params.size(), 0);
  r.ready.assign(r.params.size(), false);
  for (size_t n = r.params.size(); n-- > 0;) {
    const Tensor& p = r.params[n];
    const DType moved = r.opt.reduce_dtype && is_floating(p.dtype()) ? *r.opt.reduce_dtype : p.dtype();
    const double bytes = double(p.numel()) * double(gn_dtype_size((int32_t)moved));
    if (r.buckets.empty() || !(r.buckets.back().dtype == p.dtype()) || !(r.buckets.back().device == p.device()) ||
        (r.buckets.back().numel > 0 &&
         double(r.buckets.back().numel) * gn_dtype_size((int32_t)r.buckets.back().comm) + bytes > cap)) {
      r.buckets.emplace_back();
      r.buckets.back().dtype = p.dtype();
      r.buckets.back().comm = r.opt.reduce_dtype && is_floating(p.dtype()) ? *r.opt.reduce_dtype : p.dtype();
      r.buckets.back().device = p.device();
    }
    Reducer::Bucket& b = r.buckets.back();
    r.bucket_of[n] = r.buckets.size() - 1;
    b.params.push_back(n);
    b.offset.push_back(b.numel);
    b.numel += p.numel();
  }
  // 3. A hook per parameter; it holds the reducer weakly (the DDP may die first).
  for (size_t i = 0; i < r.params.size(); ++i) {
    std::weak_ptr<Reducer> weak = reducer_;
    r.params[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto rr = weak.lock()) rr->on_grad(i);
    });
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::prepare_forward() {
  if (!reducer_->opt.broadcast_buffers) return;
  NoGradGuard ng;
  for (auto& [name, b] : module_.named_buffers()) {
    Tensor t = b;
    reducer_->group->broadcast(t, 0);
  }
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  prepare_forward();
  return module_.forward(x);
}

void DistributedDataParallel::reduce_gradients() {
  // The same buckets in the same order as the hooks would launch them.
  Reducer& r = *reducer_;
  r.arm();
  std::fill(r.ready.begin(), r.ready.end(), true);
  for (auto& b : r.buckets) b.pending = 0;
  r.launch_ready();
  r.finalize();
}

const std::vector<std::string>& DistributedDataParallel::unused_parameters() const { return reducer_->unused; }

std::vector<std::vector<size_t>> DistributedDataParallel::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : reducer_->buckets) out.push_back(b.params);
  return out;
}

// ---- DistributedSampler

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : n_(dataset_size),
      replicas_(num_replicas < 0 ? get_world_size() : num_replicas),
      rank_(rank < 0 ? get_rank() : rank),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed) {
  if (n_ < 0 || replicas_ < 1 || rank_ < 0 || rank_ >= replicas_)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[DistributedSampler] dataset size " + std::to_string(n_) + ", rank " +
                                             std::to_string(rank_) + " of " + std::to_string(replicas_));
  num_samples_ = drop_last_ ? n_ / replicas_ : (n_ + replicas_ - 1) / replicas_;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle_ && n_ > 0) {
    // Keyed by (seed, epoch) only, as DataLoader's shuffle: every rank draws the same order.
    Generator g(derive_seed(seed_, static_cast<uint64_t>(epoch_)));
    Tensor p = randperm(n_, g);
    check(gn_tensor_to_host(p.handle(), order.data(), order.size() * sizeof(int64_t)), "DistributedSampler");
  }
  std::vector<int64_t> mine(static_cast<size_t>(num_samples_));
  for (int64_t k = 0; k < num_samples_; ++k) mine[k] = order[(rank_ + k * replicas_) % std::max<int64_t>(n_, 1)];
  return mine;
}

void save_on_rank0(const std::function<void()>& save, ProcessGroup* group) {
  if (!is_initialized()) {
    save();
    return;
  }
  ProcessGroup& g = group ? *group : world();
  std::exception_ptr err;
  if (g.rank() == 0) {
    try {
      save();
    } catch (...) {
      err = std::current_exception();
    }
  }
  g.barrier();  // nobody reads the checkpoint before it is complete
  if (err) std::rethrow_exception(err);
}

}  // namespace genesis::distributed
