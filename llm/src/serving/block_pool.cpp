// block_pool.cpp - the serving scheduler's block allocator (block_pool.h).
#include "block_pool.h"

#include <algorithm>
#include <cassert>

namespace genesis::serving {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t block_chain_hash(uint64_t parent, const int64_t* tokens, int64_t block_size) {
  uint64_t h = mix(parent ^ 0x9e3779b97f4a7c15ULL);
  for (int64_t i = 0; i < block_size; ++i) h = mix(h + 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(tokens[i]));
  return h;
}

BlockPool::BlockPool(int64_t num_blocks, int64_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      info_(static_cast<size_t>(num_blocks)),
      tokens_(static_cast<size_t>(num_blocks * block_size)) {
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));  // block 0 first
}

int32_t BlockPool::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    unhash(b);
  } else {
    return -1;
  }
  Info& in = info_[static_cast<size_t>(b)];
  assert(in.refs == 0 && !in.hashed);
  in.refs = 1;
  return b;
}

void BlockPool::ref(int32_t block) {
  Info& in = info_[static_cast<size_t>(block)];
  if (in.refs == 0) {
    assert(in.hashed);
    lru_.erase(in.lru);
  }
  ++in.refs;
}

void BlockPool::unref(int32_t block) {
  Info& in = info_[static_cast<size_t>(block)];
  assert(in.refs > 0);
  if (--in.refs > 0) return;
  if (in.hashed) {
    in.lru = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

bool BlockPool::same_content(int32_t block, uint64_t parent, const int64_t* tokens) const {
  const Info& in = info_[static_cast<size_t>(block)];
  const int64_t* mine = tokens_.data() + static_cast<int64_t>(block) * block_size_;
  return in.parent == parent && std::equal(mine, mine + block_size_, tokens);
}

void BlockPool::register_full(int32_t block, uint64_t hash, uint64_t parent, const int64_t* tokens) {
  Info& in = info_[static_cast<size_t>(block)];
  assert(in.refs > 0);
  if (in.hashed || by_hash_.count(hash)) return;
  in.hashed = true;
  in.hash = hash;
  in.parent = parent;
  std::copy(tokens, tokens + block_size_, tokens_.begin() + static_cast<int64_t>(block) * block_size_);
  by_hash_.emplace(hash, block);
}

int32_t BlockPool::lookup(uint64_t hash, uint64_t parent, const int64_t* tokens) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || !same_content(it->second, parent, tokens)) return -1;
  return it->second;
}

void BlockPool::unhash(int32_t block) {
  Info& in = info_[static_cast<size_t>(block)];
  if (!in.hashed) return;
  by_hash_.erase(in.hash);
  in.hashed = false;
}

}  // namespace genesis::serving
