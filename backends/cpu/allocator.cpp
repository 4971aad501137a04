// backends/cpu/allocator.cpp - the caching host allocator (see allocator.h).
#include "allocator.h"

#include <cstdlib>
#include <string>

#include "genesis/sdk/error.h"

namespace gn::cpu {

namespace {
size_t alignment_for(size_t bytes) { return bytes >= (size_t(1) << 20) ? 4096 : 64; }
}  // namespace

size_t HostAllocator::size_class(size_t bytes) {
  if (bytes <= 4096) return (bytes + 511) / 512 * 512;
  // 4 classes per power of two: round up to a multiple of 2^(floor(log2)-2).
  const int log2 = 63 - __builtin_clzll((unsigned long long)bytes);
  const size_t step = size_t(1) << (log2 - 2);
  if (bytes > SIZE_MAX - step) return 0;  // overflow: refused below
  return (bytes + step - 1) / step * step;
}

HostAllocator::~HostAllocator() {
  // Live blocks may still be referenced by tensors of a dying process; only
  // the cache is returned.
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void* HostAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t cls = size_class(bytes);
  if (cls == 0) gn::sdk::fail(GN_ERR_OUT_OF_MEMORY, "[cpu] allocation size overflows");
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  auto it = free_.find(cls);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_ -= cls;
    ++hits_;
  } else {
    p = std::aligned_alloc(alignment_for(cls), cls);
    if (!p && cached_) {  // flush the cache and retry once
      ++oom_retries_;
      release_cached_locked();
      p = std::aligned_alloc(alignment_for(cls), cls);
    }
    if (!p)
      gn::sdk::fail(GN_ERR_OUT_OF_MEMORY, "[cpu] out of host memory allocating " + std::to_string(bytes) + " bytes");
    ++misses_;
  }
  live_.emplace(p, cls);
  allocated_ += cls;
  ++num_allocs_;
  if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
  if (allocated_ + cached_ > peak_reserved_) peak_reserved_ = allocated_ + cached_;
  return p;
}

void HostAllocator::release(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) gn::sdk::fail(GN_ERR_INVALID_ARGUMENT, "[cpu] free of a pointer this allocator does not own");
  const size_t cls = it->second;
  live_.erase(it);
  allocated_ -= cls;
  ++num_frees_;
  if (cached_ + cls <= kMaxCached) {
    free_[cls].push_back(ptr);
    cached_ += cls;
  } else {
    std::free(ptr);
  }
}

void HostAllocator::release_cached_locked() {
  for (auto& [cls, blocks] : free_)
    for (void* p : blocks) std::free(p);
  free_.clear();
  cached_ = 0;
}

void HostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void HostAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_allocated_ = allocated_;
  peak_reserved_ = allocated_ + cached_;
}

gn_memory_stats HostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gn_memory_stats{.struct_size = sizeof(gn_memory_stats),
                         .allocated = allocated_,
                         .reserved = allocated_ + cached_,
                         .peak_allocated = peak_allocated_,
                         .peak_reserved = peak_reserved_,
                         .num_allocs = num_allocs_,
                         .num_frees = num_frees_,
                         .cache_hits = hits_,
                         .cache_misses = misses_,
                         .oom_retries = oom_retries_,
                         .active_blocks = live_.size()};
}

// One allocator per loaded copy of the plugin, shared by the runtimes that loaded it.  Not a
// function-local static: the pointer would live in this library, so a copy unloaded after its
// last runtime would lose the allocator (a leak per load, which LeakSanitizer reports).  The
// last shutdown frees it instead; until then, frees during static destruction still find it.
namespace {
std::mutex g_users_mu;
HostAllocator* g_allocator = nullptr;
int g_users = 0;
}  // namespace

void host_allocator_acquire() {
  std::lock_guard<std::mutex> lock(g_users_mu);
  if (g_users++ == 0) g_allocator = new HostAllocator();
}

void host_allocator_release() {
  std::lock_guard<std::mutex> lock(g_users_mu);
  if (--g_users == 0) {
    delete g_allocator;
    g_allocator = nullptr;
  }
}

HostAllocator& host_allocator() { return *g_allocator; }

}  // namespace gn::cpu
