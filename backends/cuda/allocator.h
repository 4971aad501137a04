// backends/cuda/allocator.h - the stream-ordered caching device allocator.
//
// Design (close to PyTorch's CUDACachingAllocator, simplified):
// - Sizes round up to 512 bytes.  Requests of at most 1 MiB come from the
//   small pool, carved out of 2 MiB segments; larger ones from the large pool,
//   carved out of 20 MiB segments (requests up to 10 MiB) or a segment of their
//   own rounded to 2 MiB.
// - A free block is cached in its pool, keyed (graph pool, stream, size, ptr):
//   a later request on the same stream takes the smallest block that fits
//   (best fit) and splits off the rest when it is worth keeping (>= 512 B in
//   the small pool, > 1 MiB in the large pool).  Freed blocks merge with free
//   neighbours of their segment (coalescing).
// - Stream order: a block is reused without synchronisation only by work on
//   the stream it was allocated on.  A free on another stream records an event
//   there; the block returns to the cache once the event completes (polled on
//   the next allocation, waited for by empty_cache).
// - Graph capture: blocks allocated while a stream is being captured belong
//   to that capture's private pool (replays write into them, so eager work
//   never gets them) until the graph is destroyed; frees during capture of
//   blocks allocated before it are deferred to the graph's destruction.
// - Out of memory: the cache is released (cudaFree of every free segment) and
//   the cudaMalloc retried once; then GN_ERR_OUT_OF_MEMORY says how much was
//   asked, allocated and reserved.
// - Statistics: `allocated` counts the rounded requests of live blocks (a
//   block may be larger when the rest was too small to split off),
//   `reserved` the segments held from cudaMalloc.
// - No cudaMalloc, no synchronisation on a cache hit; one mutex per device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "genesis/device.h"

namespace gn::cuda {

class DeviceAllocator {
 public:
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallSize = size_t(1) << 20;  // <= : small pool
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kMidSize = size_t(10) << 20;  // <= : shares a 20 MiB segment
  static constexpr size_t kSegmentRound = size_t(2) << 20;

  explicit DeviceAllocator(int device) : device_(device) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // nullptr for bytes == 0; throws gn::sdk::Error (GN_ERR_OUT_OF_MEMORY) when
  // even an emptied cache cannot serve the request.
  void* allocate(size_t bytes, cudaStream_t stream);
  // nullptr is fine; an unknown pointer is GN_ERR_INVALID_ARGUMENT.
  void release(void* ptr, cudaStream_t stream);
  void empty_cache();
  void reset_peak();
  gn_memory_stats stats();

  // Graph capture of `stream` starts / ends: both return its private pool id.
  uint64_t begin_capture(cudaStream_t stream);
  uint64_t end_capture(cudaStream_t stream);
  // The graph of pool `id` is gone: its blocks return to the shared pools.
  void release_pool(uint64_t id);

  static size_t round_size(size_t bytes) { return bytes < kRound ? kRound : (bytes + kRound - 1) / kRound * kRound; }

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    size_t req = 0;  // rounded request of a live block (what `allocated` counts)
    cudaStream_t stream = nullptr;
    uint64_t pool = 0;  // 0 = shared, else a graph capture's private pool
    bool small = false;
    bool allocated = false;
    bool deferred = false;   // freed during a capture that reads it: held until the graph dies
    bool quick = false;      // free, parked whole in the quick cache (not in a pool, not merged)
    int pending_events = 0;  // cross-stream frees not yet complete
    Block* prev = nullptr;   // neighbours inside the segment
    Block* next = nullptr;
  };
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const {
      if (a->pool != b->pool) return a->pool < b->pool;
      if (a->stream != b->stream) return (uintptr_t)a->stream < (uintptr_t)b->stream;
      if (a->size != b->size) return a->size < b->size;
      return (uintptr_t)a->ptr < (uintptr_t)b->ptr;
    }
  };
  using Pool = std::set<Block*, BlockLess>;

  Pool& pool_of(const Block* b) { return b->small ? small_ : large_; }
  // The hot path (a cache hit that splits, a free that merges back) reuses
  // Block objects and the tree/hash nodes that index them instead of going
  // through the heap: a tiny op's allocation + free is on every launch.
  Block* new_block();
  void recycle_block(Block* b);
  void pool_insert(Block* b);
  void pool_remove(Block* b);  // b must be in its pool
  Block* find_free(size_t size, bool small, cudaStream_t stream, uint64_t pool);
  Block* new_segment(size_t size, bool small, cudaStream_t stream, uint64_t pool, size_t requested);
  void free_block(Block* b);  // back into its pool, merged with free neighbours
  void process_events(bool wait);
  void release_cached();  // cudaFree every fully free shared segment
  uint64_t capture_pool(cudaStream_t stream) const;
  cudaEvent_t get_event();

  int device_;
  std::mutex mu_;
  Pool small_, large_;
  // Quick cache: the last few freed small blocks of each size up to kQuickMax,
  // parked whole (not merged, not in a pool) and handed to the next request of
  // that exact size on the same stream.  A tiny op's output then costs a hash
  // insert and erase, no tree work.  Flushed into the pools (merging) before
  // anything that needs whole segments: empty_cache and the OOM retry.
  static constexpr size_t kQuickMax = size_t(64) << 10;
  static constexpr int kQuickDepth = 4;
  struct QuickSlot {
    Block* b[kQuickDepth];
    int n = 0;
  };
  QuickSlot quick_[kQuickMax / kRound];  // slot i: blocks of (i + 1) * kRound bytes
  Block* quick_take(size_t size, cudaStream_t stream);
  bool quick_park(Block* b);
  void quick_flush();

  std::unordered_map<void*, Block*> live_;
  static constexpr size_t kSpares = 64;  // bound on each recycling list below
  std::vector<Block*> spare_blocks_;
  std::vector<Pool::node_type> spare_pool_nodes_;
  std::vector<std::unordered_map<void*, Block*>::node_type> spare_live_nodes_;
  std::deque<std::pair<cudaEvent_t, Block*>> events_;  // cross-stream frees in flight
  std::vector<cudaEvent_t> spare_events_;
  std::unordered_map<cudaStream_t, uint64_t> capturing_;             // stream -> private pool
  std::unordered_map<uint64_t, std::vector<Block*>> pool_segments_;  // private pool -> segment heads
  std::unordered_map<uint64_t, std::vector<Block*>> deferred_;       // pool -> blocks freed during its capture
  uint64_t next_pool_ = 1;
  uint64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  uint64_t num_allocs_ = 0, num_frees_ = 0, hits_ = 0, misses_ = 0, oom_retries_ = 0;
};

// The allocator of device `index` (created on first use; valid until unload).
DeviceAllocator& device_allocator(int index);

}  // namespace gn::cuda
