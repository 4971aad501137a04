// model.cpp - the decoder's modules (forward passes, initialisation), the rotary tables and the attention
// contexts built from positions.
//
// Family switches (QwenConfig): (1 + w) RMSNorms in float32 and sandwich norms (Gemma), GeGLU, embedding scaling,
// a custom attention scale, attention and final logit soft-capping, sliding-window layers (their keep-mask
// AttentionContext::mask_sliding, j > i - window besides the causal rule), rope scaling (linear, dynamic, yarn,
// llama3, as transformers' modeling_rope_utils computes inverse frequencies and the attention factor) and Gemma 3's
// second rope for its sliding layers (AttentionContext::cos_local).  The fused attention op serves every layer
// whose scores are not soft-capped (a window is a mask, a scale its argument); soft-capped layers compose
// attention from matmul, tanh, the mask and softmax, so every backend and autograd run them.
//
// Shapes: B batch, T positions in this pass, S cache positions attended, Hq query heads, Hkv
// key/value heads (Hq % Hkv == 0), H = Hq + 2 Hkv, D head_dim, P positions in the rotary table.
//
// One decode path.  Training, scoring, the prefill and every decode step run QwenModel::forward;
// they differ only in their AttentionContext (built here from positions, attention_context) and in
// the kernel set, which QwenModel::kernels() alone picks, once per forward:
//   - training (something is recorded for backward, or a checkpointed region's first pass, whose
//     recomputation in backward must give the same values): separate q/k/v projections, per-head
//     rope, swiglu and plain residual adds, ops that all have backward rules;
//   - inference: one projection over the q/k/v weights (row blocks of one buffer, so training and
//     checkpoints still see HF's separate tensors) viewed as (B, T, H, D), then one rope over all H
//     heads (the value heads rotate by angle 0).  q is heads [0, Hq) and k|v heads [Hq, H) come out
//     as one (B, 2 Hkv, T, D) piece, which one kv_cache_write_ stores in the layer's (B, 2 Hkv, S, D)
//     cache.  gate/up and the activation run as one linear_swiglu, and each residual add is fused
//     with the RMSNorm after it (add_rms_norm: a block hands its MLP output on, not yet added).
//     Qwen3's per-head q/k RMSNorm sits between projection and rope, so it keeps the per-head rope.
//
// Serving runs the same forward over a packed batch (B = 1, the tokens of many sequences one after another) whose
// context points at a PagedBatch: each layer writes its k|v piece into the layer's block pool with paged_kv_write_
// (one slot per token) and attends with paged_attention over each sequence's block table; the rest of the layer
// is unchanged.  forward_paged computes the logits of the sampled rows only.
//
// The rotary table: one per model, rope_ (2, P + 1, D) = cos then sin of positions 0..P-1
// (computed in float64, stored in the parameters' dtype), its row P the identity (cos 1, sin 0).
// Every rope operand is a view of it or a gather from it, each of cos and sin dense (the rope
// kernels read dense operands; a strided one would cost a copy per call):
//   - per head, positions 0..T-1: rope_[:, :T] viewed (1, 1, T, D);
//   - per head, positions (B, T): index_select(rope_, 1, positions) viewed (B, 1, T, D);
//   - all heads: head h of position p reads row max(p, floor[h]), floor 0 on the q/k heads and P
//     on the value heads.  Gathered once for every position into rope_heads_ (2, P, H, D) while
//     that stays under rope_all_heads_max_bytes, so a decode step costs one
//     index_select(rope_heads_, 1, pos) -> (2, B, H, D); beyond it the max and the gather run per
//     forward.
// A context over a cache sizes the table to the cache's capacity (P grows in powers of two), so
// the contexts of the decode steps allocate and upload nothing: a step captured in a CUDA graph
// reads its positions from the fixed tensor it was given, and tables that its context keeps alive
// (AttentionContext::sources) even if a longer pass makes the model regrow them meanwhile.
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
#include "window.h"

namespace genesis::models {

namespace F = nn::functional;
using namespace window_mask;  // window_keep, both, window_consts (window.h)

namespace {
// Makes the given Linear weights (all (rows_i, in)) row blocks of one buffer so that one matmul
// computes every projection; the old values are kept.  Returns the buffer.
Tensor fuse_rows(const std::vector<nn::Linear*>& ls, const Options& f) {
  int64_t rows = 0;
  for (nn::Linear* l : ls) rows += l->out_features;
  Tensor buf = empty({rows, ls[0]->in_features}, f);
  NoGradGuard no_grad;
  int64_t at = 0;
  for (nn::Linear* l : ls) {
    Tensor part = buf.slice(0, at, at + l->out_features);
    if (!nn::init::skip_init()) part.copy_(l->weight);
    l->weight = l->register_parameter("weight", part);
    at += l->out_features;
  }
  return buf;
}

// Same for the biases (rows_i).
Tensor fuse_bias(const std::vector<nn::Linear*>& ls, const Options& f) {
  int64_t rows = 0;
  for (nn::Linear* l : ls) rows += l->out_features;
  Tensor buf = empty({rows}, f);
  NoGradGuard no_grad;
  int64_t at = 0;
  for (nn::Linear* l : ls) {
    Tensor part = buf.slice(0, at, at + l->out_features);
    if (!nn::init::skip_init()) part.copy_(l->bias);
    l->bias = l->register_parameter("bias", part);
    at += l->out_features;
  }
  return buf;
}

// True while `fused` still holds the parameters' memory (Module::to() or a reassigned parameter
// gives them storage of their own; the forward then runs the projections one by one).
bool still_fused(const Tensor& fused, const std::vector<const Tensor*>& parts) {
  if (!fused.defined()) return false;
  const char* p = static_cast<const char*>(gn_tensor_data_ptr(fused.handle()));
  const size_t es = gn_dtype_size(static_cast<int32_t>(fused.dtype()));
  for (const Tensor* t : parts) {
    if (!t->defined() || t->dtype() != fused.dtype() || !(t->device() == fused.device()) ||
        gn_tensor_data_ptr(t->handle()) != p || !t->is_contiguous())
      return false;
    p += static_cast<size_t>(t->numel()) * es;
  }
  return true;
}

// softmax(tanh(q k^T * scale / cap) * cap under the keep-mask) v from differentiable tensor ops (the fused op has no
// soft-capping): q (B, Hq, T, D), k/v (B, Hkv, S, D) (GQA: each kv head serves Hq / Hkv query heads), mask a bool
// keep-mask broadcastable to (B, 1, T, S), or causal (query t sees keys j <= t + S - T).  The softmax runs in float32
// at least, as transformers' eager attention does.
Tensor softcapped_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                            double scale, double cap) {
  const int64_t B = q.size(0), Hq = q.size(1), T = q.size(2), D = q.size(3), Hkv = k.size(1), S = k.size(2);
  Tensor kk = k, vv = v;
  if (Hq != Hkv) {
    const int64_t G = Hq / Hkv;
    kk = k.unsqueeze(2).expand({B, Hkv, G, S, D}).reshape({B, Hq, S, D});
    vv = v.unsqueeze(2).expand({B, Hkv, G, S, D}).reshape({B, Hq, S, D});
  }
  Tensor s = q.matmul(kk.transpose(-2, -1)) * scale;  // (B, Hq, T, S)
  s = F::tanh(s * (1.0 / cap)) * cap;
  const DType dt = s.dtype(), wide = dt == DType::f64 ? DType::f64 : DType::f32;
  if (dt != wide) s = s.to(wide);
  Tensor keep = mask;
  if (!keep.defined() && causal) {
    const Device dev = q.device();
    const Tensor i = arange(static_cast<double>(T), {.dtype = DType::i64, .device = dev}).view({T, 1});
    const Tensor j = arange(static_cast<double>(S), {.dtype = DType::i64, .device = dev}).view({1, S});
    keep = j.le(i + (S - T)).view({1, 1, T, S});
  }
  if (keep.defined()) s = s.masked_fill(keep.logical_not(), static_cast<double>(std::numeric_limits<float>::lowest()));
  Tensor p = F::softmax(s, -1);
  if (p.dtype() != dt) p = p.to(dt);
  return p.matmul(vv);
}

}  // namespace

// ---------------------------------------------------------------- norms

Tensor DecoderRMSNorm::forward(const Tensor& x) {
  if (!offset) return nn::RMSNorm::forward(x);
  // Gemma: norm(x.float()) * (1 + w.float()), rounded once to x's dtype.
  const DType dt = x.dtype(), wide = dt == DType::f64 ? DType::f64 : DType::f32;
  const Tensor xw = dt == wide ? x : x.to(wide);
  const Tensor w = weight.dtype() == wide ? weight : weight.to(wide);
  const Tensor y = F::rms_norm(xw, {normalized_shape}, {}, eps) * (w + 1.0);
  return y.dtype() == dt ? y : y.to(dt);
}

// ---------------------------------------------------------------- attention

QwenAttention::QwenAttention(const QwenConfig& c, const Options& f, int64_t layer_index)
    : num_heads(c.num_attention_heads),
      num_kv_heads(c.num_key_value_heads),
      head_dim(c.head_dim),
      sliding(c.is_sliding(layer_index)),
      local_rope(sliding && c.rope_local_theta > 0),
      window(c.sliding_window),
      scale(c.attention_scale()),
      softcap(c.attn_logit_softcapping),
      q_proj(c.hidden_size, c.num_attention_heads * c.head_dim, c.attention_bias, f),
      k_proj(c.hidden_size, c.num_key_value_heads * c.head_dim, c.attention_bias, f),
      v_proj(c.hidden_size, c.num_key_value_heads * c.head_dim, c.attention_bias, f),
      o_proj(c.num_attention_heads * c.head_dim, c.hidden_size, false, f) {
  register_module("q_proj", q_proj);
  register_module("k_proj", k_proj);
  register_module("v_proj", v_proj);
  register_module("o_proj", o_proj);
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<DecoderRMSNorm>(c.head_dim, c.rms_norm_eps, c.norm_offset, f));
    k_norm = register_module("k_norm", std::make_shared<DecoderRMSNorm>(c.head_dim, c.rms_norm_eps, c.norm_offset, f));
  }
  qkv_weight_ = fuse_rows({&q_proj, &k_proj, &v_proj}, f);
  if (c.attention_bias) qkv_bias_ = fuse_bias({&q_proj, &k_proj, &v_proj}, f);
}

bool QwenAttention::weights_fused() const {
  return still_fused(qkv_weight_, {&q_proj.weight, &k_proj.weight, &v_proj.weight}) &&
         (!qkv_bias_.defined() || still_fused(qkv_bias_, {&q_proj.bias, &k_proj.bias, &v_proj.bias}));
}

Tensor QwenAttention::forward(const Tensor& x, const AttentionContext& ctx, int64_t layer, const QwenKernels& kn) {
  const int64_t B = x.size(0), T = x.size(1), D = head_dim, Hq = num_heads, Hkv = num_kv_heads;
  const int64_t nq = Hq * D, nkv = Hkv * D;
  Tensor q, k, v;  // (B, H, T, D), rotated
  Tensor kv;       // (B, 2 Hkv, T, D): rotated keys then values, when they come out as one piece
  if (kn.rope_all) {
    // One projection and one rope over all Hq + 2 Hkv heads (the value heads' rows are 1, 0).
    Tensor y =
        F::rope(lora_add_fused(F::linear(x, qkv_weight_, qkv_bias_), {&q_lora, &k_lora, &v_lora}, {nq, nkv, nkv}, x)
                    .view({B, T, Hq + 2 * Hkv, D}),
                ctx.cos_all, ctx.sin_all);
    q = y.slice(2, 0, Hq).transpose(1, 2);
    kv = y.slice(2, Hq, Hq + 2 * Hkv).transpose(1, 2);
    k = kv.slice(1, 0, Hkv);
    v = kv.slice(1, Hkv, 2 * Hkv);
  } else {
    if (kn.fused_qkv) {  // one (B, T, hidden) @ (nq + 2 nkv, hidden)^T projection
      Tensor qkv = lora_add_fused(F::linear(x, qkv_weight_, qkv_bias_), {&q_lora, &k_lora, &v_lora}, {nq, nkv, nkv}, x);
      q = qkv.slice(-1, 0, nq);
      k = qkv.slice(-1, nq, nq + nkv);
      v = qkv.slice(-1, nq + nkv, nq + 2 * nkv);
    } else {
      q = lora_add(q_proj(x), q_lora, x);
      k = lora_add(k_proj(x), k_lora, x);
      v = lora_add(v_proj(x), v_lora, x);
    }
    q = q.reshape({B, T, Hq, D});
    k = k.reshape({B, T, Hkv, D});
    v = v.reshape({B, T, Hkv, D});
    if (q_norm) {  // Qwen3: RMSNorm over each head's D before rope
      q = (*q_norm)(q);
      k = (*k_norm)(k);
    }
    // Per-head rows; a context holding only the all-heads form gives them as head 0's (a strided view).  Sliding
    // layers read their own rope where the model has one.
    const bool local = sliding && local_rope;
    if (local && !ctx.cos_local.defined())
      throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] layer " + std::to_string(layer) +
                                               " has a rope of its own (sliding layers) but the context has no "
                                               "cos_local/sin_local (build it with attention_context)");
    const Tensor cos = local ? ctx.cos_local : ctx.cos.defined() ? ctx.cos : ctx.cos_all.slice(2, 0, 1).transpose(1, 2);
    const Tensor sin = local ? ctx.sin_local : ctx.sin.defined() ? ctx.sin : ctx.sin_all.slice(2, 0, 1).transpose(1, 2);
    q = F::rope(q.transpose(1, 2), cos, sin);  // (B, Hq, T, D)
    k = F::rope(k.transpose(1, 2), cos, sin);  // (B, Hkv, T, D)
    v = v.transpose(1, 2);                     // (B, Hkv, T, D)
  }

  const bool plain_scale = scale == 1.0 / std::sqrt(static_cast<double>(D));
  if (ctx.paged) {
    // Packed tokens of many sequences (B = 1): k/v rows into the layer's pool, then each sequence's queries
    // attend its own blocks.
    if (!kv.defined()) kv = F::cat({k, v}, 1);
    Tensor& pool = ctx.paged->cache->pools[static_cast<size_t>(layer)];
    F::paged_kv_write_(pool, kv.select(0, 0).transpose(0, 1), ctx.paged->slots);  // (T, 2 Hkv, D)
    // The family's switches: its scale, the window of sliding layers, attention soft-capping.
    Tensor out = F::paged_attention(q.select(0, 0).transpose(0, 1).contiguous(), pool, ctx.paged->block_tables,
                                    ctx.paged->seq_lens, ctx.paged->query_start,
                                    plain_scale ? std::numeric_limits<double>::quiet_NaN() : scale,
                                    sliding ? window : 0, softcap);  // (T, Hq, D)
    const Tensor o = out.reshape({B, T, nq});
    return lora_add(o_proj(o), o_lora, o);
  }
  if (ctx.cache) {
    if (!kv.defined()) kv = F::cat({k, v}, 1);
    // cache[b, :, write_pos[b] + t] = kv[b, :, t] (device-side offsets: graph-replayable)
    F::kv_cache_write_(ctx.cache->kv[static_cast<size_t>(layer)], kv, ctx.write_pos);
  }
  Tensor mask = sliding ? ctx.mask_sliding : ctx.mask;
  if (sliding && !mask.defined()) {
    // A context built by hand: within the pass the window is over the row index (packed rows restart their
    // positions, and ctx.mask keeps each conversation to itself).
    if (ctx.cache)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[qwen] layer " + std::to_string(layer) +
                      " attends within a sliding window but the context has no mask_sliding (build it with "
                      "attention_context)");
    const Tensor i = arange(static_cast<double>(T), {.dtype = DType::i64, .device = x.device()});
    const Tensor consts = window_consts(window, x.device());
    mask = window_keep(i.view({T, 1}), i, consts).view({1, 1, T, T});
    if (ctx.mask.defined()) mask = both(ctx.mask, mask, consts);
  }
  const bool from_cache = ctx.cache && !ctx.prefill_from_zero;
  // Within the pass without a mask: causal; otherwise the mask holds the causal rule (packed rows, the cache).
  const Tensor keys = from_cache ? ctx.cache->keys(layer, ctx.kv_len) : k;
  const Tensor values = from_cache ? ctx.cache->values(layer, ctx.kv_len) : v;
  const bool causal = !from_cache && !mask.defined();
  Tensor out;
  if (softcap > 0) {
    out = softcapped_attention(q, keys, values, mask, causal, scale, softcap);
  } else {
    out = F::scaled_dot_product_attention(q, keys, values, mask, 0, causal,
                                          plain_scale ? std::optional<double>() : std::optional<double>(scale));
  }
  const Tensor o = out.transpose(1, 2).reshape({B, T, nq});
  return lora_add(o_proj(o), o_lora, o);
}

// ---------------------------------------------------------------- MLP

QwenMLP::QwenMLP(const QwenConfig& c, const Options& f)
    : gate_proj(c.hidden_size, c.intermediate_size, false, f),
      up_proj(c.hidden_size, c.intermediate_size, false, f),
      down_proj(c.intermediate_size, c.hidden_size, false, f) {
  register_module("gate_proj", gate_proj);
  register_module("up_proj", up_proj);
  register_module("down_proj", down_proj);
  gate_up_weight_ = fuse_rows({&gate_proj, &up_proj}, f);
  geglu = c.hidden_act == "gelu_pytorch_tanh";
}

bool QwenMLP::weights_fused() const { return still_fused(gate_up_weight_, {&gate_proj.weight, &up_proj.weight}); }

Tensor QwenMLP::forward(const Tensor& x, const QwenKernels& k) {
  // silu(x Wg^T) * (x Wu^T) in one op: the backends apply the activation in the product's epilogue
  Tensor h;     // (B, T, I)
  if (geglu) {  // gelu_pytorch_tanh(gate) * up
    Tensor g, u;
    if (k.fused_mlp) {
      const int64_t I = gate_proj.out_features;
      const Tensor gu = lora_add_fused(F::linear(x, gate_up_weight_), {&gate_lora, &up_lora}, {I, I}, x);
      g = gu.slice(-1, 0, I);
      u = gu.slice(-1, I, 2 * I);
    } else {
      g = lora_add(gate_proj(x), gate_lora, x);
      u = lora_add(up_proj(x), up_lora, x);
    }
    h = F::gelu(g, "tanh") * u;
  } else if (k.fused_mlp && !gate_lora && !up_lora) {
    h = F::linear_swiglu(x, gate_up_weight_);
  } else if (k.fused_mlp) {  // adapters: one projection over gate/up, the adapters added to its row blocks
    const int64_t I = gate_proj.out_features;
    const Tensor gu = lora_add_fused(F::linear(x, gate_up_weight_), {&gate_lora, &up_lora}, {I, I}, x);
    h = F::swiglu(gu.slice(-1, 0, I), gu.slice(-1, I, 2 * I));
  } else {
    h = F::swiglu(lora_add(gate_proj(x), gate_lora, x), lora_add(up_proj(x), up_lora, x));
  }
  return lora_add(down_proj(h), down_lora, h);
}

// ---------------------------------------------------------------- block

namespace {
// A sparse layer's dense mlp is a placeholder that is never registered nor run: one unit wide.
QwenConfig dense_or_placeholder(const QwenConfig& c, bool sparse) {
  QwenConfig d = c;
  if (sparse) d.intermediate_size = 1;
  return d;
}
}  // namespace

QwenDecoderLayer::QwenDecoderLayer(const QwenConfig& c, const Options& f, int64_t layer_index)
    : self_attn(c, f, layer_index),
      mlp(dense_or_placeholder(c, c.is_sparse_layer(layer_index)), f),
      input_layernorm(c.hidden_size, c.rms_norm_eps, c.norm_offset, f),
      post_attention_layernorm(c.hidden_size, c.rms_norm_eps, c.norm_offset, f) {
  register_module("self_attn", self_attn);
  if (c.is_sparse_layer(layer_index)) {  // Qwen3-MoE: the mixture of experts is this layer's "mlp"
    auto moe = std::make_shared<SparseMoeBlock>(
        MoeConfig{c.hidden_size, c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size, c.norm_topk_prob}, f);
    moe->keep_router_logits = c.output_router_logits;
    feed_forward_block = register_module("mlp", moe);
  } else {
    register_module("mlp", mlp);
  }
  register_module("input_layernorm", input_layernorm);
  register_module("post_attention_layernorm", post_attention_layernorm);
  if (c.sandwich_norms) {
    pre_feedforward_layernorm = register_module(
        "pre_feedforward_layernorm", std::make_shared<DecoderRMSNorm>(c.hidden_size, c.rms_norm_eps, c.norm_offset, f));
    post_feedforward_layernorm =
        register_module("post_feedforward_layernorm",
                        std::make_shared<DecoderRMSNorm>(c.hidden_size, c.rms_norm_eps, c.norm_offset, f));
  }
}

Tensor QwenDecoderLayer::feed_forward(const Tensor& x, const QwenKernels& k) {
  return feed_forward_block ? feed_forward_block->forward(x) : mlp.forward(x, k);
}

namespace {
// (norm(h + pending), h + pending), or (norm(h), h) when nothing is pending; one add_rms_norm at
// inference.
std::pair<Tensor, Tensor> add_norm(const Tensor& pending, const Tensor& h, DecoderRMSNorm& n, const QwenKernels& k) {
  if (!pending.defined()) return {n(h), h};
  if (k.inference && !n.offset) return F::add_rms_norm(pending, h, n.weight, *n.eps);
  Tensor sum = h + pending;
  return {n(sum), sum};
}
}  // namespace

std::pair<Tensor, Tensor> QwenDecoderLayer::forward(const Tensor& h, const Tensor& pending, const AttentionContext& ctx,
                                                    int64_t layer, const QwenKernels& k) {
  auto [normed, x] = add_norm(pending, h, input_layernorm, k);
  Tensor a = self_attn.forward(normed, ctx, layer, k);
  if (pre_feedforward_layernorm) {  // sandwich: the attention and MLP outputs are normed before their adds
    x = x + post_attention_layernorm(a);
    return {x, (*post_feedforward_layernorm)(feed_forward((*pre_feedforward_layernorm)(x), k))};
  }
  std::tie(normed, x) = add_norm(a, x, post_attention_layernorm, k);
  return {x, feed_forward(normed, k)};
}

Tensor QwenDecoderLayer::forward(const Tensor& x, const AttentionContext& ctx, int64_t layer, const QwenKernels& k) {
  auto [h, m] = forward(x, Tensor(), ctx, layer, k);
  return h + m;
}

// ---------------------------------------------------------------- model

QwenModel::QwenModel(const QwenConfig& c, const Options& f)
    : embed_tokens(c.vocab_size, c.hidden_size, std::nullopt, f),
      norm(c.hidden_size, c.rms_norm_eps, c.norm_offset, f),
      embed_scale(c.scale_embeddings ? std::sqrt(static_cast<double>(c.hidden_size)) : 0.0),
      single_rope(c.rope_local_theta == 0 && c.rope_scaling.rope_type != "dynamic") {
  register_module("embed_tokens", embed_tokens);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(std::make_shared<QwenDecoderLayer>(c, f, i));
    layer_list_.push_back(layers.back());
  }
  register_module("layers", layer_list_);
  register_module("norm", norm);
}

QwenKernels QwenModel::kernels(const AttentionContext* ctx) const {
  QwenKernels k;
  // The fused ops have no backward rules, and a checkpointed region's first pass must compute what
  // backward's recomputation (with grad) computes.
  if (autograd::in_checkpoint_forward()) return k;
  if (autograd::grad_enabled()) {
    for (const Tensor& p : parameters())
      if (p.requires_grad()) return k;
    for (const auto& l : layers)
      if (lora_requires_grad(*l)) return k;  // adapters sit outside the module tree
  }
  k.inference = k.fused_qkv = k.fused_mlp = true;
  bool qk_norm = false;
  for (const auto& l : layers) {
    k.fused_qkv = k.fused_qkv && l->self_attn.weights_fused();
    k.fused_mlp = k.fused_mlp && l->mlp.weights_fused();
    qk_norm = qk_norm || l->self_attn.q_norm;
  }
  k.rope_all = k.fused_qkv && !qk_norm && single_rope && (!ctx || ctx->cos_all.defined());
  return k;
}

Tensor QwenModel::forward(const Tensor& ids, const AttentionContext& ctx) {
  const QwenKernels k = kernels(&ctx);
  Tensor h = embed_tokens(ids), pending;  // pending: the last block's MLP output, not yet added to h
  if (embed_scale > 0)                    // Gemma: the scale rounded to the embeddings' dtype first
    h = h * full({}, embed_scale, {.dtype = h.dtype(), .device = h.device()});
  for (size_t i = 0; i < layers.size(); ++i) {
    const int64_t at = static_cast<int64_t>(i);
    if (gradient_checkpointing && !k.inference) {  // keep only the layer's input; backward recomputes the rest
      auto layer = layers[i];
      // A checkpoint records only when an input requires grad: under a frozen base only the adapters do.
      if (!h.requires_grad() && lora_requires_grad(*layer)) h = h.detach().requires_grad_(true);
      h = autograd::checkpoint(
          [layer, ctx, at, k](const std::vector<Tensor>& x) { return layer->forward(x[0], ctx, at, k); }, {h});
    } else {
      std::tie(h, pending) = layers[i]->forward(h, pending, ctx, at, k);
    }
  }
  return add_norm(pending, h, norm, k).first;
}

// ---------------------------------------------------------------- causal LM

namespace {
Options factory_or_default(const QwenConfig& c, const Options& f) {
  (void)c;
  Options o = f;
  o.requires_grad = false;
  return o;
}
}  // namespace

QwenForCausalLM::QwenForCausalLM(const QwenConfig& c, const Options& factory)
    : config(c), model(c, factory_or_default(c, factory)) {
  register_module("model", model);
  if (!c.tie_word_embeddings) {
    lm_head = register_module(
        "lm_head", std::make_shared<nn::Linear>(c.hidden_size, c.vocab_size, false, factory_or_default(c, factory)));
  }
  if (!nn::init::skip_init()) init_weights();
}

void QwenForCausalLM::init_weights() {
  NoGradGuard no_grad;
  const double std_ = config.initializer_range;
  for (auto& [name, m] : named_modules()) {
    if (auto* l = dynamic_cast<nn::Linear*>(m)) {
      nn::init::normal_(l->weight, 0, std_);
      if (l->bias.defined()) nn::init::zeros_(l->bias);
    } else if (auto* e = dynamic_cast<nn::Embedding*>(m)) {
      nn::init::normal_(e->weight, 0, std_);
    } else if (auto* d = dynamic_cast<DecoderRMSNorm*>(m); d && d->offset) {
      nn::init::zeros_(d->weight);  // (1 + w): unit scale at w = 0
    } else if (auto* n = dynamic_cast<nn::RMSNorm*>(m)) {
      if (n->weight.defined()) nn::init::ones_(n->weight);
    }
  }
}

}  // namespace genesis::models
