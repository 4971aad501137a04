// backends/cuda/allocator.cpp - the caching device allocator (allocator.h).
#include "allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "genesis/sdk/error.h"

namespace gn::cuda {

[[noreturn]] void cuda_fail(cudaError_t err, const char* expr, const char* file, int line);
const cudaDeviceProp& device_prop(int index);

namespace {

std::string mib(uint64_t bytes) {
  char buf[64];
  if (bytes >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(uint64_t(1) << 30));
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / double(uint64_t(1) << 20));
  return buf;
}

#define ALLOC_CHECK(expr)                                            \
  do {                                                               \
    cudaError_t e_ = (expr);                                         \
    if (e_ != cudaSuccess) cuda_fail(e_, #expr, __FILE__, __LINE__); \
  } while (0)

}  // namespace

DeviceAllocator::~DeviceAllocator() {
  // Process exit: the driver may already be shutting down, so errors are ignored.
  for (auto& e : events_) cudaEventDestroy(e.first);
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
  for (Block* b : spare_blocks_) delete b;
}

DeviceAllocator::Block* DeviceAllocator::new_block() {
  if (spare_blocks_.empty()) return new Block;
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  *b = Block{};
  return b;
}

void DeviceAllocator::recycle_block(Block* b) {
  if (spare_blocks_.size() < kSpares)
    spare_blocks_.push_back(b);
  else
    delete b;
}

DeviceAllocator::Block* DeviceAllocator::quick_take(size_t size, cudaStream_t stream) {
  if (size > kQuickMax) return nullptr;
  QuickSlot& q = quick_[size / kRound - 1];
  for (int i = q.n - 1; i >= 0; --i) {
    Block* b = q.b[i];
    if (b->stream != stream) continue;
    q.b[i] = q.b[--q.n];
    b->quick = false;
    return b;
  }
  return nullptr;
}

bool DeviceAllocator::quick_park(Block* b) {
  if (!b->small || b->pool || b->size > kQuickMax) return false;
  QuickSlot& q = quick_[b->size / kRound - 1];
  if (q.n == kQuickDepth) return false;
  b->allocated = false;
  b->quick = true;
  q.b[q.n++] = b;
  return true;
}

void DeviceAllocator::quick_flush() {
  for (QuickSlot& q : quick_) {
    for (int i = 0; i < q.n; ++i) {
      q.b[i]->quick = false;
      free_block(q.b[i]);
    }
    q.n = 0;
  }
}

void DeviceAllocator::pool_insert(Block* b) {
  Pool& p = pool_of(b);
  if (spare_pool_nodes_.empty()) {
    p.insert(b);
    return;
  }
  Pool::node_type n = std::move(spare_pool_nodes_.back());
  spare_pool_nodes_.pop_back();
  n.value() = b;
  p.insert(std::move(n));
}

void DeviceAllocator::pool_remove(Block* b) {
  Pool::node_type n = pool_of(b).extract(b);
  if (n && spare_pool_nodes_.size() < kSpares) spare_pool_nodes_.push_back(std::move(n));
}

cudaEvent_t DeviceAllocator::get_event() {
  if (!spare_events_.empty()) {
    cudaEvent_t e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  cudaEvent_t e;
  ALLOC_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

uint64_t DeviceAllocator::capture_pool(cudaStream_t stream) const {
  if (capturing_.empty()) return 0;
  auto it = capturing_.find(stream);
  return it == capturing_.end() ? 0 : it->second;
}

// Cross-stream frees whose event completed go back to the cache; with wait,
// every pending one does (empty_cache).
void DeviceAllocator::process_events(bool wait) {
  while (!events_.empty()) {
    auto [ev, b] = events_.front();
    if (wait) {
      ALLOC_CHECK(cudaEventSynchronize(ev));
    } else {
      cudaError_t q = cudaEventQuery(ev);
      if (q == cudaErrorNotReady) {
        (void)cudaGetLastError();
        break;
      }
      if (q != cudaSuccess) cuda_fail(q, "cudaEventQuery", __FILE__, __LINE__);
    }
    events_.pop_front();
    spare_events_.push_back(ev);
    if (--b->pending_events == 0) free_block(b);
  }
}

DeviceAllocator::Block* DeviceAllocator::find_free(size_t size, bool small, cudaStream_t stream, uint64_t pool) {
  Pool& p = small ? small_ : large_;
  Block key;
  key.pool = pool;
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto it = p.lower_bound(&key);  // best fit: the smallest block >= size
  if (it == p.end() || (*it)->pool != pool || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  Pool::node_type n = p.extract(it);
  if (spare_pool_nodes_.size() < kSpares) spare_pool_nodes_.push_back(std::move(n));
  return b;
}

DeviceAllocator::Block* DeviceAllocator::new_segment(size_t size, bool small, cudaStream_t stream, uint64_t pool,
                                                     size_t requested) {
  size_t seg = small ? kSmallSegment
                     : (size <= kMidSize ? kLargeSegment : (size + kSegmentRound - 1) / kSegmentRound * kSegmentRound);
  // A request beyond the device's whole memory can never be served: say so
  // at once (no cache flush can help, and the driver is not asked).
  const uint64_t total = device_prop(device_).totalGlobalMem;
  if (seg > total)
    gn::sdk::fail(GN_ERR_OUT_OF_MEMORY,
                  "CUDA out of memory on cuda:" + std::to_string(device_) + ": tried to allocate " + mib(requested) +
                      " (" + std::to_string(requested) + " bytes), more than the device's total memory (" + mib(total) +
                      "); " + mib(allocated_) + " allocated by Genesis, " + mib(reserved_) + " reserved by its cache");
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, seg);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    // Free the cache (waiting for cross-stream frees first) and retry once.
    ++oom_retries_;
    process_events(true);
    release_cached();
    err = cudaMalloc(&p, seg);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      gn::sdk::fail(GN_ERR_OUT_OF_MEMORY,
                    "CUDA out of memory on cuda:" + std::to_string(device_) + ": tried to allocate " + mib(requested) +
                        " (" + std::to_string(requested) + " bytes); " + mib(allocated_) + " allocated by Genesis, " +
                        mib(reserved_) + " reserved by its cache, " + mib(free_b) + " free of " + mib(total_b) +
                        " on the device (the cache was emptied and the request retried once)");
    }
  }
  if (err != cudaSuccess) cuda_fail(err, "cudaMalloc", __FILE__, __LINE__);
  ++misses_;
  reserved_ += seg;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  Block* b = new Block;
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->stream = stream;
  b->pool = pool;
  b->small = small;
  if (pool) pool_segments_[pool].push_back(b);
  return b;
}

void* DeviceAllocator::allocate(size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t pool = capture_pool(stream);
  if (!events_.empty() && !pool) process_events(false);
  Block* b = pool ? nullptr : quick_take(size, stream);  // exact size: nothing to split
  if (!b) b = find_free(size, small, stream, pool);
  if (b) {
    ++hits_;
  } else {
    b = new_segment(size, small, stream, pool, bytes);
  }
  // Split off the rest when it is worth keeping.
  const size_t rest = b->size - size;
  if ((small && rest >= kRound) || (!small && rest > kSmallSize)) {
    Block* r = new_block();
    r->ptr = b->ptr + size;
    r->size = rest;
    r->stream = b->stream;
    r->pool = b->pool;
    r->small = b->small;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool_insert(r);
  }
  b->allocated = true;
  b->req = size;
  if (spare_live_nodes_.empty()) {
    live_.emplace(b->ptr, b);
  } else {
    auto n = std::move(spare_live_nodes_.back());
    spare_live_nodes_.pop_back();
    n.key() = b->ptr;
    n.mapped() = b;
    live_.insert(std::move(n));
  }
  allocated_ += b->req;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  ++num_allocs_;
  return b->ptr;
}

void DeviceAllocator::free_block(Block* b) {
  b->allocated = false;
  // Merge with free neighbours (never with blocks waiting on events).
  auto mergeable = [&](Block* n) { return n && !n->allocated && n->pending_events == 0 && !n->deferred && !n->quick; };
  // a takes over its next neighbour c (out of every pool), which goes back to the spare blocks.
  auto merge_next = [&](Block* a, Block* c) {
    a->size += c->size;
    a->next = c->next;
    if (c->next) c->next->prev = a;
    recycle_block(c);
  };
  if (mergeable(b->prev)) {
    Block* p = b->prev;
    pool_remove(p);
    merge_next(p, b);
    b = p;
  }
  if (mergeable(b->next)) {
    Block* n = b->next;
    pool_remove(n);
    merge_next(b, n);
  }
  pool_insert(b);
}

void DeviceAllocator::release(void* ptr, cudaStream_t stream) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end())
    gn::sdk::fail(GN_ERR_INVALID_ARGUMENT,
                  "[cuda] free of a pointer this allocator did not hand out (cuda:" + std::to_string(device_) + ")");
  Block* b = it->second;
  {
    auto n = live_.extract(it);
    if (spare_live_nodes_.size() < kSpares) spare_live_nodes_.push_back(std::move(n));
  }
  allocated_ -= b->req;
  ++num_frees_;
  const uint64_t cap = capture_pool(stream);
  if (cap && b->pool != cap) {
    // Freed inside a capture but allocated before it: replays may still read it.
    b->deferred = true;
    deferred_[cap].push_back(b);
    return;
  }
  if (!cap && stream != b->stream) {
    // Cross-stream free: usable again once the freeing stream's work is done.
    cudaEvent_t ev = get_event();
    ALLOC_CHECK(cudaEventRecord(ev, stream));
    ++b->pending_events;
    events_.emplace_back(ev, b);
    return;
  }
  if (!cap && quick_park(b)) return;
  free_block(b);
}

void DeviceAllocator::release_cached() {
  quick_flush();  // parked blocks merge back, so their segments can go
  for (Pool* p : {&small_, &large_}) {
    for (auto it = p->begin(); it != p->end();) {
      Block* b = *it;
      if (!b->prev && !b->next && b->pool == 0) {
        ALLOC_CHECK(cudaFree(b->ptr));
        reserved_ -= b->size;
        delete b;
        it = p->erase(it);
      } else {
        ++it;
      }
    }
  }
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  process_events(true);
  release_cached();
}

void DeviceAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

gn_memory_stats DeviceAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return gn_memory_stats{.struct_size = sizeof(gn_memory_stats),
                         .allocated = allocated_,
                         .reserved = reserved_,
                         .peak_allocated = peak_allocated_,
                         .peak_reserved = peak_reserved_,
                         .num_allocs = num_allocs_,
                         .num_frees = num_frees_,
                         .cache_hits = hits_,
                         .cache_misses = misses_,
                         .oom_retries = oom_retries_,
                         .active_blocks = live_.size()};
}

uint64_t DeviceAllocator::begin_capture(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_pool_++;
  capturing_[stream] = id;
  return id;
}

uint64_t DeviceAllocator::end_capture(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = capturing_.find(stream);
  if (it == capturing_.end()) return 0;
  const uint64_t id = it->second;
  capturing_.erase(it);
  return id;
}

void DeviceAllocator::release_pool(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  // Deferred frees of shared blocks: back to the cache now.
  auto d = deferred_.find(id);
  if (d != deferred_.end()) {
    for (Block* b : d->second) {
      b->deferred = false;
      free_block(b);
    }
    deferred_.erase(d);
  }
  // The private segments join the shared pools (live blocks stay live and
  // return to the shared pools when freed).
  auto s = pool_segments_.find(id);
  if (s == pool_segments_.end()) return;
  for (Block* head : s->second) {
    for (Block* b = head; b; b = b->next) {
      const bool cached = !b->allocated && !b->deferred && b->pending_events == 0;
      if (cached) pool_of(b).erase(b);
      b->pool = 0;
      if (cached) pool_of(b).insert(b);
    }
  }
  pool_segments_.erase(s);
}

DeviceAllocator& device_allocator(int index) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<DeviceAllocator>> all;
  // Fast path without the lock once created: `all` is filled once, then
  // published through the release store of n_ready.
  static std::atomic<int> n_ready{0};
  const int ready = n_ready.load(std::memory_order_acquire);
  if (index >= 0 && index < ready) return *all[index];
  std::lock_guard<std::mutex> lock(mu);
  if (all.empty()) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    all.resize(n > 0 ? n : 1);
    for (int i = 0; i < (int)all.size(); ++i) all[i] = std::make_unique<DeviceAllocator>(i);
    n_ready.store((int)all.size(), std::memory_order_release);
  }
  if (index < 0 || index >= (int)all.size())
    gn::sdk::fail(GN_ERR_DEVICE, "[cuda] no device cuda:" + std::to_string(index));
  return *all[index];
}

}  // namespace gn::cuda
