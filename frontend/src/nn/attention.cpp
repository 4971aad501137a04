// attention.cpp - MultiheadAttention: in-projection, the fused
// scaled_dot_product_attention op over (N, H, L, D) heads, out-projection.
#include "genesis/nn/attention.hpp"

#include <cmath>
#include <limits>

#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"

namespace genesis::nn {

namespace F = functional;

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, double p, bool bias, bool bf)
    : embed_dim(e), num_heads(h), head_dim(h > 0 ? e / h : 0), dropout(p), batch_first(bf), out_proj(e, e, bias) {
  if (h <= 0 || e % h)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[MultiheadAttention] embed_dim must be divisible by num_heads");
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  init::xavier_uniform_(in_proj_weight);
  if (bias) {
    in_proj_bias = register_parameter("in_proj_bias", zeros({3 * e}));
    init::zeros_(out_proj.bias);
  }
  register_module("out_proj", out_proj);
}

namespace {

// A bool "not allowed" mask as an additive float mask (true -> -inf).
Tensor additive(const Tensor& m, DType dt) {
  if (is_floating(m.dtype())) return m.to(dt);
  const Options o{.dtype = dt, .device = m.device()};
  return where(m, full({}, -std::numeric_limits<double>::infinity(), o), zeros({}, o));
}

}  // namespace

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& key_padding_mask, bool need_weights, const Tensor& attn_mask,
                                   bool is_causal) {
  if (need_weights)
    throw Error(GN_ERR_UNSUPPORTED,
                "[MultiheadAttention] need_weights=true is not supported: the fused attention "
                "op does not form the attention weights");
  if (training_ && dropout > 0)
    throw Error(GN_ERR_UNSUPPORTED, "[MultiheadAttention] attention dropout > 0 is not supported in training");
  const bool unbatched = query.dim() == 2;
  // Everything below works on (N, L, E).
  auto batch = [&](const Tensor& t) { return unbatched ? t.unsqueeze(0) : batch_first ? t : t.transpose(0, 1); };
  Tensor q = batch(query), k = batch(key), v = batch(value);
  if (q.size(-1) != embed_dim)
    throw Error(GN_ERR_SHAPE, "[MultiheadAttention] expected embed_dim " + std::to_string(embed_dim) + ", got " +
                                  std::to_string(q.size(-1)));
  const int64_t N = q.size(0), L = q.size(1), S = k.size(1), E = embed_dim;
  auto proj = [&](const Tensor& x, int64_t i) {  // (N, T, E) -> (N, H, T, D)
    Tensor w = in_proj_weight.slice(0, i * E, (i + 1) * E);
    Tensor b = in_proj_bias.defined() ? in_proj_bias.slice(0, i * E, (i + 1) * E) : Tensor();
    return F::linear(x, w, b).reshape({N, x.size(1), num_heads, head_dim}).transpose(1, 2);
  };
  Tensor qh = proj(q, 0), kh = proj(k, 1), vh = proj(v, 2);

  // Masks become one additive float mask broadcast to (N, H, L, S).
  Tensor mask;
  bool causal = is_causal && !attn_mask.defined();
  if (attn_mask.defined()) {
    mask = additive(attn_mask, qh.dtype());
    if (mask.dim() == 3) mask = mask.reshape({N, num_heads, L, S});
  }
  if (key_padding_mask.defined()) {
    Tensor kp =
        additive(unbatched ? key_padding_mask.unsqueeze(0) : key_padding_mask, qh.dtype()).reshape({N, 1, 1, S});
    mask = mask.defined() ? mask + kp : kp;
    if (causal) {  // the fused op takes a mask or the causal flag: build the causal part
      const Options o{.dtype = DType::i64, .device = mask.device()};
      Tensor i = arange(0, L, 1, o).unsqueeze(1), j = arange(0, S, 1, o).unsqueeze(0);
      mask = mask + additive(j > i, qh.dtype());
      causal = false;
    }
  }
  Tensor out = F::scaled_dot_product_attention(qh, kh, vh, mask, 0, causal);  // (N, H, L, D)
  out = out_proj(out.transpose(1, 2).reshape({N, L, E}));
  return unbatched ? out.squeeze(0) : batch_first ? out : out.transpose(0, 1);
}

}  // namespace genesis::nn
