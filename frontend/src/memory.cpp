// memory.cpp - allocator statistics over gn_memory_* (genesis/memory.hpp).
#include <cstdio>
#include <string>

#include "genesis/memory.hpp"

namespace genesis {

MemoryStats memory_stats(const Device& device) {
  gn_memory_stats c{};
  c.struct_size = sizeof c;
  check(gn_memory_stats_get(runtime(), device.c(), &c), "memory_stats");
  MemoryStats s;
  s.allocated = c.allocated;
  s.reserved = c.reserved;
  s.peak_allocated = c.peak_allocated;
  s.peak_reserved = c.peak_reserved;
  s.num_allocs = c.num_allocs;
  s.num_frees = c.num_frees;
  s.cache_hits = c.cache_hits;
  s.cache_misses = c.cache_misses;
  s.oom_retries = c.oom_retries;
  s.active_blocks = c.active_blocks;
  return s;
}

uint64_t memory_allocated(const Device& device) { return memory_stats(device).allocated; }
uint64_t memory_reserved(const Device& device) { return memory_stats(device).reserved; }
uint64_t max_memory_allocated(const Device& device) { return memory_stats(device).peak_allocated; }
uint64_t max_memory_reserved(const Device& device) { return memory_stats(device).peak_reserved; }
void empty_cache(const Device& device) { check(gn_memory_empty_cache(runtime(), device.c()), "empty_cache"); }
void reset_peak_memory_stats(const Device& device) {
  check(gn_memory_reset_peak(runtime(), device.c()), "reset_peak_memory_stats");
}

std::string memory_summary(const Device& device) {
  const MemoryStats s = memory_stats(device);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "memory summary (%s)\n"
                "  allocated       %14.3f MB (peak %.3f MB)\n"
                "  reserved        %14.3f MB (peak %.3f MB)\n"
                "  allocs / frees  %14llu / %llu (live blocks %llu)\n"
                "  cache hit rate  %13.1f %% (%llu hits, %llu misses, %llu OOM retries)\n",
                device.str().c_str(), s.allocated / 1e6, s.peak_allocated / 1e6, s.reserved / 1e6,
                s.peak_reserved / 1e6, (unsigned long long)s.num_allocs, (unsigned long long)s.num_frees,
                (unsigned long long)s.active_blocks, 100.0 * s.cache_hit_rate(), (unsigned long long)s.cache_hits,
                (unsigned long long)s.cache_misses, (unsigned long long)s.oom_retries);
  return buf;
}

}  // namespace genesis
