// decode_graph.h - CUDA graphs of the serving engine's decode steps.
//
// A decode step (every scheduled sequence computes one token and samples) is the engine's common case, and at small
// batches its time is the host launching a few hundred kernels. Such steps replay a captured graph instead: one
// graph per batch bucket (1, 2, 4, ... rows), capturing forward_paged over fixed device input buffers plus the
// argmax of every row. A step of B rows uses the smallest bucket >= B; rows B.. are padding that write nothing
// (slot -1) and attend one key of a block they only read. The block-table width is fixed per graph
// (a power of two of blocks); a step that needs a wider table recaptures its bucket wider.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "genesis/models/qwen.hpp"

namespace genesis::serving {

class DecodeGraphs {
 public:
  /** Graphs over `model` and `cache` (both outlive this); padding rows read `scratch_block` (any block of the pool:
   * they never write); buckets go up to `max_rows` rows. */
  DecodeGraphs(models::QwenForCausalLM& model, models::PagedKVCache& cache, int64_t scratch_block, int64_t max_rows);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  /** Whether graphs can serve this model at all (a cuda device; no rope that is rebuilt as sequences grow). */
  bool usable() const { return usable_; }

  /** One decode step of B = ids.size() rows: token ids, their positions, their KV slots, the rows' block tables
   * (tables[b] the blocks of row b) and their lengths (keys, the new token's included). On success `logits` is
   * (bucket, V) and `argmax` (bucket) int64 on the device (rows >= B are padding) and it returns true; false when
   * no graph serves the step (capture failed before, or graphs are off), the caller then runs it eagerly. */
  bool run(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions, const std::vector<int64_t>& slots,
           const std::vector<const std::vector<int32_t>*>& tables, const std::vector<int64_t>& seq_lens, Tensor* logits,
           Tensor* argmax);

  /** Graphs captured so far (all buckets and widths). */
  int64_t captures() const { return captures_; }

 private:
  struct Graph;
  Graph* graph_for(int64_t bucket, int64_t width);

  models::QwenForCausalLM& model_;
  models::PagedKVCache& cache_;
  int64_t scratch_, max_rows_;
  bool usable_ = false, broken_ = false;
  int64_t captures_ = 0;
  std::map<int64_t, std::unique_ptr<Graph>> graphs_;  // by bucket
};

}  // namespace genesis::serving
