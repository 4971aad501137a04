// backends/cpu/allocator.h - an aligned caching host allocator with statistics.
//
// Requests are rounded up to a size class (4 classes per power of two above
// 4 KiB, 512-byte steps below), so a freed block can serve any later request
// of the same class.  Freed blocks go to per-class free lists instead of the
// system, up to kMaxCached bytes; empty_cache() hands them all back.  Blocks
// are 64-byte aligned (4 KiB for blocks of 1 MiB and more, so large tensors
// start on a page).  Statistics count class sizes (what a block really holds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "genesis/device.h"

namespace gn::cpu {

class HostAllocator {
 public:
  static constexpr size_t kMaxCached = size_t(4) << 30;  // bytes kept in free lists at most

  ~HostAllocator();
  // nullptr for bytes == 0; throws gn::sdk::Error (GN_ERR_OUT_OF_MEMORY) on failure.
  void* allocate(size_t bytes);
  // nullptr is fine; throws on a pointer this allocator did not hand out.
  void release(void* ptr);
  void empty_cache();
  void reset_peak();
  gn_memory_stats stats() const;

  static size_t size_class(size_t bytes);

 private:
  void release_cached_locked();

  mutable std::mutex mu_;
  std::unordered_map<void*, size_t> live_;               // ptr -> class size
  std::unordered_map<size_t, std::vector<void*>> free_;  // class size -> cached blocks
  uint64_t allocated_ = 0, cached_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  uint64_t num_allocs_ = 0, num_frees_ = 0, hits_ = 0, misses_ = 0, oom_retries_ = 0;
};

// The plugin's allocator: acquired by each init, released by each shutdown (the last frees it).
void host_allocator_acquire();
void host_allocator_release();
HostAllocator& host_allocator();

}  // namespace gn::cpu
