// block_pool.h - the serving scheduler's block allocator: reference counts, a free list, and the
// prefix cache (a chain hash -> block map plus an LRU list of cached blocks nobody references).
//
// A block is in exactly one of three states:
// - used: referenced by at least one sequence (it may also be hashed, i.e. findable by lookup());
// - cached: no reference, but full and hashed: kept for prefix reuse, evicted least recently used first;
// - free: no reference, nothing findable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace genesis::serving {

/** Chain hash of one full block: its token ids combined with the hash of every block before it. */
uint64_t block_chain_hash(uint64_t parent, const int64_t* tokens, int64_t block_size);

/** Hash of the (empty) prefix before a sequence's first block. */
inline constexpr uint64_t kRootBlockHash = 0x6a09e667f3bcc908ULL;

/** Reference-counted blocks of one pool geometry (every layer's pool shares the ids). */
class BlockPool {
 public:
  BlockPool(int64_t num_blocks, int64_t block_size);

  /** A block with one reference: a free one, else the least recently used cached one (evicted); -1 when none. */
  int32_t allocate();
  /** Adds a reference; a cached block leaves the LRU list (becomes used). */
  void ref(int32_t block);
  /** Drops a reference; at zero the block becomes cached (when hashed) or free. */
  void unref(int32_t block);
  /** Makes a used, full block findable by lookup() under `hash` (parent hash and tokens kept to rule out
   * collisions); no-op when it is already hashed or another block holds this content. */
  void register_full(int32_t block, uint64_t hash, uint64_t parent, const int64_t* tokens);
  /** The used or cached block holding this content, or -1. */
  int32_t lookup(uint64_t hash, uint64_t parent, const int64_t* tokens) const;

  int32_t refs(int32_t block) const { return info_[static_cast<size_t>(block)].refs; }
  /** Blocks allocate() can still hand out (free or cached). */
  int64_t available() const { return num_free() + num_cached(); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_cached() const { return static_cast<int64_t>(lru_.size()); }
  int64_t num_used() const { return num_blocks_ - num_free() - num_cached(); }
  int64_t num_blocks() const { return num_blocks_; }

 private:
  struct Info {
    int32_t refs = 0;
    bool hashed = false;
    uint64_t hash = 0, parent = 0;
    std::list<int32_t>::iterator lru;  // valid while cached
  };
  bool same_content(int32_t block, uint64_t parent, const int64_t* tokens) const;
  void unhash(int32_t block);

  int64_t num_blocks_, block_size_;
  std::vector<Info> info_;
  std::vector<int64_t> tokens_;  // block b's token ids at [b * block_size, (b + 1) * block_size) while hashed
  std::vector<int32_t> free_;    // a stack: the next free block at the back
  std::list<int32_t> lru_;       // cached blocks, least recently used at the front
  std::unordered_map<uint64_t, int32_t> by_hash_;
};

}  // namespace genesis::serving
