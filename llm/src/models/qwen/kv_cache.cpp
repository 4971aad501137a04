// kv_cache.cpp - the decoder's KV caches: the contiguous per-batch cache of generate() and the paged block pools
// of the serving engine (sizes from a byte budget or the device's free memory, copy-on-write block copies).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "genesis/autograd.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/moe.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"

namespace genesis::models {

// ---------------------------------------------------------------- KV cache

KVCache KVCache::allocate(const QwenConfig& c, int64_t batch, int64_t capacity, const Device& device, DType dtype) {
  if (batch < 1 || capacity < 1)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] KV cache needs batch >= 1 and capacity >= 1, got " +
                                             std::to_string(batch) + " and " + std::to_string(capacity));
  KVCache kv;
  kv.batch = batch;
  kv.capacity = capacity;
  kv.kv_heads = c.num_key_value_heads;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    kv.kv.push_back(
        zeros({batch, 2 * c.num_key_value_heads, capacity, c.head_dim}, {.dtype = dtype, .device = device}));
  return kv;
}

Tensor KVCache::keys(int64_t layer, int64_t len) const {
  return kv[static_cast<size_t>(layer)].slice(1, 0, kv_heads).slice(2, 0, len);
}

Tensor KVCache::values(int64_t layer, int64_t len) const {
  return kv[static_cast<size_t>(layer)].slice(1, kv_heads, 2 * kv_heads).slice(2, 0, len);
}

// ---------------------------------------------------------------- paged KV cache

PagedKVCache PagedKVCache::allocate(const QwenConfig& c, int64_t num_blocks, int64_t block_size, const Device& device,
                                    DType dtype) {
  if (num_blocks < 1 || block_size < 1)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] paged KV cache needs num_blocks >= 1 and block_size >= 1, got " +
                                             std::to_string(num_blocks) + " and " + std::to_string(block_size));
  PagedKVCache kv;
  kv.num_blocks = num_blocks;
  kv.block_size = block_size;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    kv.pools.push_back(
        zeros({num_blocks, 2 * c.num_key_value_heads, block_size, c.head_dim}, {.dtype = dtype, .device = device}));
  return kv;
}

int64_t PagedKVCache::block_bytes(const QwenConfig& c, int64_t block_size, DType dtype) {
  return c.num_hidden_layers * 2 * c.num_key_value_heads * block_size * c.head_dim *
         static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(dtype)));
}

int64_t PagedKVCache::blocks_for_bytes(const QwenConfig& c, int64_t block_size, DType dtype, int64_t bytes) {
  const int64_t per = block_bytes(c, block_size, dtype);
  if (per <= 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] paged KV cache: a block holds no bytes");
  return std::max<int64_t>(bytes, 0) / per;
}

int64_t PagedKVCache::blocks_for_free_memory(const QwenConfig& c, int64_t block_size, DType dtype, const Device& device,
                                             double fraction) {
  if (!(fraction > 0 && fraction <= 1))
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] paged KV cache: the memory fraction must be in (0, 1]");
  if (device.type() == "cpu")  // host memory is everyone's: a fraction of what is free now is no budget
    throw Error(GN_ERR_UNSUPPORTED, "[qwen] paged KV cache: on " + device.str() +
                                        " give the cache a size in bytes (or blocks), not a fraction of free memory");
  gn_device_props p{};
  p.struct_size = sizeof p;
  check(gn_device_properties(runtime(), device.c(), &p), "paged KV cache");
  if (p.free_memory == 0)
    throw Error(GN_ERR_UNSUPPORTED,
                "[qwen] paged KV cache: " + device.str() + " reports no free memory; give the cache a size in bytes");
  return blocks_for_bytes(c, block_size, dtype, static_cast<int64_t>(static_cast<double>(p.free_memory) * fraction));
}

void PagedKVCache::copy_block(int64_t src, int64_t dst) {
  if (src < 0 || src >= num_blocks || dst < 0 || dst >= num_blocks)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] paged KV cache: block copy " + std::to_string(src) + " -> " +
                                             std::to_string(dst) + " outside [0, " + std::to_string(num_blocks) + ")");
  NoGradGuard no_grad;
  for (Tensor& pool : pools) pool.select(0, dst).copy_(pool.select(0, src));
}

}  // namespace genesis::models
