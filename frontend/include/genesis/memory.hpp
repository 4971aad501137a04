// genesis/memory.hpp - allocator statistics of a device (torch.cuda.memory_*).
//
//   auto dev = genesis::Device("cuda");
//   std::cout << genesis::memory_allocated(dev) / 1e6 << " MB\n";
//   auto s = genesis::memory_stats(dev);  // s.peak_allocated, s.cache_hit_rate(), ...
#pragma once

#include <cstdint>
#include <string>

#include "genesis/tensor.hpp"

namespace genesis {

/** Allocator statistics of one device (bytes and counts; see gn_memory_stats). */
struct MemoryStats {
  uint64_t allocated = 0;       ///< bytes handed out and not yet freed
  uint64_t reserved = 0;        ///< bytes held from the system (allocated + cached)
  uint64_t peak_allocated = 0;  ///< max of allocated since the last reset
  uint64_t peak_reserved = 0;   ///< max of reserved since the last reset
  uint64_t num_allocs = 0;      ///< allocations
  uint64_t num_frees = 0;       ///< frees
  uint64_t cache_hits = 0;      ///< allocations served from the cache
  uint64_t cache_misses = 0;    ///< allocations that went to the system
  uint64_t oom_retries = 0;     ///< times the cache was flushed to retry an allocation
  uint64_t active_blocks = 0;   ///< live allocations
  /** cache_hits / (cache_hits + cache_misses), 0 when nothing was allocated. */
  double cache_hit_rate() const {
    const uint64_t n = cache_hits + cache_misses;
    return n ? static_cast<double>(cache_hits) / static_cast<double>(n) : 0.0;
  }
};

/** All allocator statistics of a device. */
MemoryStats memory_stats(const Device& device = Device());
/** Bytes currently allocated by tensors on the device. */
uint64_t memory_allocated(const Device& device = Device());
/** Bytes held by the allocator (allocated + cached); torch's memory_reserved / memory_cached. */
uint64_t memory_reserved(const Device& device = Device());
/** Peak of memory_allocated since the start or the last reset_peak_memory_stats. */
uint64_t max_memory_allocated(const Device& device = Device());
/** Peak of memory_reserved since the start or the last reset_peak_memory_stats. */
uint64_t max_memory_reserved(const Device& device = Device());
/** Returns cached, unused blocks to the system. */
void empty_cache(const Device& device = Device());
/** Resets the peaks to the current values. */
void reset_peak_memory_stats(const Device& device = Device());
/** A short human-readable table of the statistics (torch.cuda.memory_summary). */
std::string memory_summary(const Device& device = Device());

}  // namespace genesis
