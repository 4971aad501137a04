// genesis/nn/attention.hpp - MultiheadAttention on the fused attention op.
#pragma once

#include "genesis/nn/linear.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** torch.nn.MultiheadAttention (same parameter names, so state dicts interchange).
 * Returns only the attention output: need_weights = true is not supported (the fused op
 * never forms the weights) and throws; attention dropout > 0 in training throws. */
class MultiheadAttention : public Module {
 public:
  /** embed_dim split into num_heads heads; batch_first: inputs (N, L, E), else (L, N, E). */
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0, bool bias = true,
                     bool batch_first = false);
  /** Attention of query (N, L, E) over key/value (N, S, E) (unbatched (L, E) too).  key_padding_mask
   * (N, S) bool: true = ignore that key; attn_mask (L, S) or (N*H, L, S): bool true = NOT allowed,
   * float added to the scores; is_causal without attn_mask = causal mask. */
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask = {},
                 bool need_weights = false, const Tensor& attn_mask = {}, bool is_causal = false);
  /** Self-attention forward(x, x, x). */
  Tensor forward(const Tensor& x) override { return forward(x, x, x); }
  /** Calls forward. */
  Tensor operator()(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask = {},
                    bool need_weights = false, const Tensor& attn_mask = {}, bool is_causal = false) {
    return forward(query, key, value, key_padding_mask, need_weights, attn_mask, is_causal);
  }
  using Module::operator();
  /** "MultiheadAttention". */
  std::string name() const override { return "MultiheadAttention"; }

  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight;  // (3E, E): q, k, v projections stacked
  Tensor in_proj_bias;    // (3E) or undefined
  Linear out_proj;        // weight (E, E), bias (E)
};

}  // namespace genesis::nn
