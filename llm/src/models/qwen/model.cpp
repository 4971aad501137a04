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

namespace genesis::models {

namespace F = nn::functional;

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

// Keep-masks j > i - window (besides j <= i) from query positions qp (..., T, 1) and key positions kp (1, S) or (S);
// consts (3) int64 on the device holds 0, window, 1 (device operands: a captured decode step uploads nothing).
Tensor window_keep(const Tensor& qp, const Tensor& kp, const Tensor& consts) {
  const Tensor d = qp - kp;                                        // i - j
  return d.ge(consts.select(0, 0)).eq(d.lt(consts.select(0, 1)));  // 0 <= i - j < window
}

// a and b (bool keep-masks), with window_keep's consts.
Tensor both(const Tensor& a, const Tensor& b, const Tensor& consts) {
  return (a.to(DType::i64) + b.to(DType::i64)).gt(consts.select(0, 2));
}

// window_keep's constants on device d.
Tensor window_consts(int64_t window, const Device& d) {
  return tensor(std::vector<int64_t>{0, window, 1}, {3}, {.device = d});
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

// ---------------------------------------------------------------- rotary table and contexts

namespace {

// The inverse frequencies (head_dim / 2) of a rope of base theta scaled per r, and the factor cos/sin are multiplied
// by (yarn's attention factor, else 1), as transformers' modeling_rope_utils computes them (in float64 here).
// seq_len: dynamic scaling's current length.
std::vector<double> inv_freqs(const QwenConfig& c, double theta, const RopeParameters& r, int64_t seq_len,
                              double* attention) {
  const int64_t D = c.head_dim, half = D / 2;
  const double dim = static_cast<double>(D);
  std::vector<double> inv(static_cast<size_t>(half));
  *attention = 1.0;
  double base = theta;
  if (r.rope_type == "dynamic") {
    const double L = static_cast<double>(c.max_position_embeddings);
    const double s = std::max(static_cast<double>(seq_len), L);
    base = theta * std::pow(r.factor * s / L - (r.factor - 1), dim / (dim - 2));
  }
  for (int64_t i = 0; i < half; ++i)
    inv[static_cast<size_t>(i)] = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) / dim);
  if (r.rope_type == "linear") {
    for (double& f : inv) f /= r.factor;
  } else if (r.rope_type == "llama3") {
    const double old_len = static_cast<double>(r.original_max_position_embeddings);
    const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= r.factor;
      } else if (!(wavelen < high_wavelen)) {  // medium: interpolate
        const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
  } else if (r.rope_type == "yarn") {
    const double orig = static_cast<double>(r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings
                                                                                   : c.max_position_embeddings);
    const double factor = r.factor;
    auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    if (r.attention_factor)
      *attention = *r.attention_factor;
    else if (r.mscale && r.mscale_all_dim && *r.mscale != 0 && *r.mscale_all_dim != 0)
      *attention = mscale(factor, *r.mscale) / mscale(factor, *r.mscale_all_dim);
    else
      *attention = mscale(factor, 1.0);
    auto correction_dim = [&](double rotations) {
      return dim * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(theta));
    };
    double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
    if (r.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1);
    if (low == high) high += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      const double pos_freq = std::pow(theta, 2.0 * static_cast<double>(i) / dim);
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double extrapolation = 1 - ramp;
      inv[static_cast<size_t>(i)] =
          (1.0 / (factor * pos_freq)) * (1 - extrapolation) + (1.0 / pos_freq) * extrapolation;
    }
  }
  return inv;
}

// The table (2, rows + 1, D): cos then sin of positions 0..rows-1 times `attention`, row `rows` the identity.
Tensor rope_table(const std::vector<double>& inv, double attention, int64_t rows, int64_t D, const Options& o) {
  const int64_t half = D / 2;
  std::vector<double> t(static_cast<size_t>(2 * (rows + 1) * D));
  double* cs = t.data();
  double* sn = cs + (rows + 1) * D;
  for (int64_t i = 0; i < half; ++i) {
    // The table repeats each frequency for both halves (cat(freqs, freqs)).
    for (int64_t p = 0; p < rows; ++p) {
      const double a = static_cast<double>(p) * inv[static_cast<size_t>(i)];
      cs[p * D + i] = cs[p * D + i + half] = std::cos(a) * attention;
      sn[p * D + i] = sn[p * D + i + half] = std::sin(a) * attention;
    }
  }
  std::fill(cs + rows * D, cs + (rows + 1) * D, 1.0);  // row P: the identity rotation
  return tensor(t, {2, rows + 1, D}, o);
}

}  // namespace

void QwenForCausalLM::dynamic_rope_update(int64_t seq_len) {
  // transformers' dynamic_rope_update: the table grows with the longest sequence seen and returns to the original
  // frequencies when a sequence shorter than max_position_embeddings follows a longer one.
  if (config.rope_scaling.rope_type != "dynamic") return;
  const int64_t L = config.max_position_embeddings;
  if (dynamic_len_ == 0) dynamic_len_ = L;
  if (seq_len > dynamic_len_) dynamic_len_ = seq_len;
  if (seq_len < L && dynamic_len_ > L) dynamic_len_ = L;
}

void QwenForCausalLM::add_sliding(AttentionContext& ctx, const Tensor& q_pos, const Tensor& k_pos,
                                  const Tensor& base_mask) {
  bool any = false;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) any = any || config.is_sliding(l);
  if (!any) return;
  const Device d = model.embed_tokens.weight.device();
  if (!window_consts_.defined() || !(window_consts_.device() == d))
    window_consts_ = window_consts(config.sliding_window, d);
  Tensor keep = window_keep(q_pos, k_pos, window_consts_);
  if (base_mask.defined()) keep = both(base_mask, keep, window_consts_);
  ctx.mask_sliding = keep;
  ctx.sources.push_back(window_consts_);
}

void QwenForCausalLM::ensure_rope(int64_t n, bool all_heads) {
  const Tensor& w = model.embed_tokens.weight;
  const Options o{.dtype = w.dtype(), .device = w.device()};
  const int64_t D = config.head_dim, hqk = config.num_attention_heads + config.num_key_value_heads,
                H = hqk + config.num_key_value_heads;
  if (!rope_.defined() || rope_.size(1) - 1 < n || rope_.dtype() != w.dtype() || !(rope_.device() == w.device()) ||
      rope_built_len_ != dynamic_len_) {
    // Grow in powers of two so a long generation rebuilds the table O(log n) times.
    int64_t rows = 64;
    while (rows < std::max(n, rope_.defined() ? rope_.size(1) - 1 : 0)) rows *= 2;
    double attention = 1;
    const std::vector<double> inv = inv_freqs(config, config.rope_theta, config.rope_scaling, dynamic_len_, &attention);
    rope_ = rope_table(inv, attention, rows, D, o);
    rope_built_len_ = dynamic_len_;
    rope_local_ = Tensor();
    if (config.rope_local_theta > 0) {
      double local_attention = 1;
      const std::vector<double> local_inv =
          inv_freqs(config, config.rope_local_theta, RopeParameters{}, 0, &local_attention);
      rope_local_ = rope_table(local_inv, local_attention, rows, D, o);
    }
    std::vector<int64_t> floor(static_cast<size_t>(H), 0);
    std::fill(floor.begin() + hqk, floor.end(), rows);
    rope_floor_ = tensor(floor, {1, H}, {.device = w.device()});
    positions_ = arange(static_cast<double>(rows), {.dtype = DType::i64, .device = w.device()});
    rope_heads_ = Tensor();
  }
  const int64_t P = rope_.size(1) - 1;
  if (all_heads && !rope_heads_.defined() &&
      2 * P * H * D * static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(rope_.dtype()))) <=
          rope_all_heads_max_bytes)
    rope_heads_ = all_heads_rows(positions_);
}

Tensor QwenForCausalLM::all_heads_rows(const Tensor& positions) const {
  const int64_t N = positions.size(0), H = rope_floor_.size(1), D = config.head_dim;
  if (rope_heads_.defined()) return rope_heads_.index_select(1, positions);
  return rope_.index_select(1, positions.view({N, 1}).maximum(rope_floor_).view({N * H})).view({2, N, H, D});
}

std::pair<Tensor, Tensor> QwenForCausalLM::rope_tables(int64_t n) {
  ensure_rope(n, false);
  const int64_t P = rope_.size(1) - 1;
  return {rope_.select(0, 0).slice(0, 0, P), rope_.select(0, 1).slice(0, 0, P)};
}

AttentionContext QwenForCausalLM::attention_context(int64_t T, KVCache* cache, const Tensor& mask) {
  if (T < 1 || (cache && T > cache->capacity))
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[qwen] attention_context: " + std::to_string(T) + " positions" +
                    (cache ? " for a cache of " + std::to_string(cache->capacity) : std::string()));
  const QwenKernels k = model.kernels(nullptr);
  dynamic_rope_update(T);
  ensure_rope(cache ? cache->capacity : T, k.rope_all);
  const int64_t D = config.head_dim;
  AttentionContext ctx;
  ctx.sources = {rope_, rope_heads_, rope_floor_, positions_, rope_local_};
  if (rope_local_.defined()) {
    ctx.cos_local = rope_local_.select(0, 0).slice(0, 0, T).view({1, 1, T, D});
    ctx.sin_local = rope_local_.select(0, 1).slice(0, 0, T).view({1, 1, T, D});
  }
  if (k.rope_all) {
    const Tensor rows = rope_heads_.defined() ? rope_heads_.slice(1, 0, T) : all_heads_rows(positions_.slice(0, 0, T));
    const int64_t H = rows.size(2);
    ctx.cos_all = rows.select(0, 0).view({1, T, H, D});
    ctx.sin_all = rows.select(0, 1).view({1, T, H, D});
  } else {
    ctx.cos = rope_.select(0, 0).slice(0, 0, T).view({1, 1, T, D});
    ctx.sin = rope_.select(0, 1).slice(0, 0, T).view({1, 1, T, D});
  }
  ctx.mask = mask;
  const Tensor pos = positions_.slice(0, 0, T);
  add_sliding(ctx, pos.view({T, 1}), pos, mask.defined() ? mask : Tensor());
  if (ctx.mask_sliding.defined() && ctx.mask_sliding.dim() == 2) ctx.mask_sliding = ctx.mask_sliding.view({1, 1, T, T});
  if (cache) {
    ctx.cache = cache;
    ctx.write_pos = zeros({cache->batch}, {.dtype = DType::i64, .device = model.embed_tokens.weight.device()});
    ctx.prefill_from_zero = true;
  }
  return ctx;
}

AttentionContext QwenForCausalLM::attention_context(const Tensor& positions, KVCache* cache, int64_t kv_len,
                                                    const Tensor& mask) {
  if (positions.dim() < 1 || positions.dim() > 2 || positions.dtype() != DType::i64)
    throw Error(GN_ERR_SHAPE, "[qwen] attention_context expects positions (B, T) or (B) int64");
  if (cache && mask.defined())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] attention_context: with a cache the mask is j <= position; pass none");
  const int64_t B = positions.size(0), T = positions.dim() == 2 ? positions.size(1) : 1, D = config.head_dim;
  if (cache && (kv_len < 0 || kv_len > cache->capacity))
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] attention_context: kv_len " + std::to_string(kv_len) +
                                             " outside [0, " + std::to_string(cache->capacity) + "]");
  const QwenKernels k = model.kernels(nullptr);
  if (config.rope_scaling.rope_type == "dynamic") dynamic_rope_update(positions.max().item<int64_t>() + 1);
  ensure_rope(cache ? cache->capacity : T, k.rope_all);
  const Tensor flat = positions.reshape({B * T});
  AttentionContext ctx;
  ctx.sources = {rope_, rope_heads_, rope_floor_, positions_, rope_local_};
  if (rope_local_.defined()) {
    const Tensor rows = rope_local_.index_select(1, flat);  // (2, B T, D)
    ctx.cos_local = rows.select(0, 0).view({B, 1, T, D});
    ctx.sin_local = rows.select(0, 1).view({B, 1, T, D});
  }
  if (k.rope_all) {
    const Tensor rows = all_heads_rows(flat);  // (2, B T, H, D)
    const int64_t H = rows.size(2);
    ctx.cos_all = rows.select(0, 0).view({B, T, H, D});
    ctx.sin_all = rows.select(0, 1).view({B, T, H, D});
  } else {
    const Tensor rows = rope_.index_select(1, flat);  // (2, B T, D)
    ctx.cos = rows.select(0, 0).view({B, 1, T, D});
    ctx.sin = rows.select(0, 1).view({B, 1, T, D});
  }
  ctx.mask = mask;
  if (cache) {
    if (kv_len == 0) kv_len = cache->capacity;
    ctx.cache = cache;
    ctx.kv_len = kv_len;
    ctx.write_pos = T == 1 ? flat : positions.select(1, 0).contiguous();
    // Row b's token t attends cache positions j <= positions[b, t] (right padding leaves stale
    // entries beyond a row's own positions).
    ctx.mask = positions_.slice(0, 0, kv_len).le(positions.reshape({B, T, 1})).view({B, 1, T, kv_len});
    add_sliding(ctx, positions.reshape({B, T, 1}), positions_.slice(0, 0, kv_len), Tensor());
    if (ctx.mask_sliding.defined()) ctx.mask_sliding = ctx.mask_sliding.view({B, 1, T, kv_len});
  } else {
    // Within the pass (query t sees keys j <= t): the window over the same index.
    const Tensor pos = positions_.slice(0, 0, T);
    add_sliding(ctx, pos.view({T, 1}), pos, mask);
    if (ctx.mask_sliding.defined() && ctx.mask_sliding.dim() == 2)
      ctx.mask_sliding = ctx.mask_sliding.view({1, 1, T, T});
  }
  return ctx;
}

AttentionContext QwenForCausalLM::paged_context(const Tensor& positions, const PagedBatch& batch,
                                                int64_t max_position) {
  if (positions.dim() != 1 || positions.dtype() != DType::i64)
    throw Error(GN_ERR_SHAPE, "[qwen] paged_context expects positions (T) int64");
  if (!batch.cache || batch.cache->pools.size() != model.layers.size())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] paged_context needs a paged cache with one pool per layer");
  const int64_t T = positions.size(0), D = config.head_dim;
  const QwenKernels k = model.kernels(nullptr);
  ensure_rope(std::max<int64_t>(max_position, 1), k.rope_all);
  AttentionContext ctx;
  ctx.sources = {rope_, rope_heads_, rope_floor_, positions_, rope_local_};
  if (rope_local_.defined()) {
    const Tensor rows = rope_local_.index_select(1, positions);  // (2, T, D)
    ctx.cos_local = rows.select(0, 0).view({1, 1, T, D});
    ctx.sin_local = rows.select(0, 1).view({1, 1, T, D});
  }
  if (k.rope_all) {
    const Tensor rows = all_heads_rows(positions);  // (2, T, H, D)
    const int64_t H = rows.size(2);
    ctx.cos_all = rows.select(0, 0).view({1, T, H, D});
    ctx.sin_all = rows.select(0, 1).view({1, T, H, D});
  } else {
    const Tensor rows = rope_.index_select(1, positions);  // (2, T, D)
    ctx.cos = rows.select(0, 0).view({1, 1, T, D});
    ctx.sin = rows.select(0, 1).view({1, 1, T, D});
  }
  ctx.paged = &batch;
  return ctx;
}

Tensor QwenForCausalLM::forward_paged(const Tensor& ids, const Tensor& positions, const PagedBatch& batch,
                                      const Tensor& rows, int64_t max_position) {
  const int64_t T = ids.dim() == 1 ? ids.size(0) : ids.dim() == 2 ? ids.size(1) : -1;
  if (T < 1 || (ids.dim() == 2 && ids.size(0) != 1) || ids.dtype() != DType::i64)
    throw Error(GN_ERR_SHAPE, "[qwen] forward_paged expects ids (1, T) or (T) int64 with T >= 1");
  if (positions.dim() != 1 || positions.size(0) != T)
    throw Error(GN_ERR_SHAPE, "[qwen] forward_paged expects positions (T) for ids of " + std::to_string(T) + " tokens");
  if (rows.dim() != 1 || rows.dtype() != DType::i64)
    throw Error(GN_ERR_SHAPE, "[qwen] forward_paged expects rows (R) int64");
  if (const std::string missing = config.paged_unsupported(); !missing.empty())
    throw Error(GN_ERR_UNSUPPORTED, "[qwen] forward_paged: the paged path has no " + missing + ", which this " +
                                        config.model_type +
                                        " config needs; use generate() (the KV-cache path) instead");
  NoGradGuard no_grad;
  const AttentionContext ctx = paged_context(positions, batch, max_position);
  const Tensor h = model.forward(ids.dim() == 1 ? ids.view({1, T}) : ids, ctx);  // (1, T, hidden)
  return logits(h.view({T, h.size(-1)}).index_select(0, rows));
}

Tensor QwenForCausalLM::hidden_states(const Tensor& ids, const AttentionContext& ctx) {
  return model.forward(ids, ctx);
}

Tensor QwenForCausalLM::logits(const Tensor& h) {
  Tensor out = lm_head ? (*lm_head)(h) : F::linear(h, model.embed_tokens.weight);
  const double c = config.final_logit_softcapping;
  if (c > 0) out = F::tanh(out * (1.0 / c)) * c;  // Gemma 2: tanh(x / c) * c
  return out;
}

Tensor QwenForCausalLM::forward(const Tensor& ids) {
  if (ids.dim() != 2)
    throw Error(GN_ERR_SHAPE, "[qwen] forward expects ids (B, T), got rank " + std::to_string(ids.dim()));
  return logits(hidden_states(ids, attention_context(ids.size(1))));
}

Tensor QwenForCausalLM::loss(const Tensor& ids, const Tensor& labels) {
  if (labels.shape() != ids.shape()) throw Error(GN_ERR_SHAPE, "[qwen] labels must have the shape of ids");
  const int64_t T = ids.size(1);
  if (T < 2) throw Error(GN_ERR_SHAPE, "[qwen] loss needs at least 2 positions");
  // config.output_router_logits (MoE): the sparse layers keep their router logits for the load-balancing loss.
  const bool aux = config.output_router_logits && config.num_experts > 0;
  if (aux && model.gradient_checkpointing && autograd::grad_enabled())
    throw Error(GN_ERR_UNSUPPORTED,
                "[qwen] the router's load-balancing loss (output_router_logits) with gradient checkpointing is not "
                "supported");
  if (aux)
    for (auto& l : model.layers)
      if (auto m = std::dynamic_pointer_cast<SparseMoeBlock>(l->feed_forward_block)) m->keep_router_logits = true;
  Tensor lg = forward(ids);
  const int64_t V = lg.size(-1);
  Tensor pred = lg.slice(1, 0, T - 1).reshape({-1, V});
  Tensor tgt = labels.slice(1, 1, T).reshape({-1});
  Tensor out = F::cross_entropy(pred.to(DType::f32), tgt);
  if (aux) out = out + router_aux_loss().to(out.dtype()) * config.router_aux_loss_coef;
  return out;
}

Tensor QwenForCausalLM::router_aux_loss() const {
  std::vector<Tensor> logits;
  for (const auto& l : model.layers) {
    auto m = std::dynamic_pointer_cast<SparseMoeBlock>(l->feed_forward_block);
    if (!m) continue;
    if (!m->router_logits.defined())
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[qwen] router_aux_loss: the sparse layers kept no router logits (set config.output_router_logits, "
                  "or keep_router_logits on the layers' SparseMoeBlock, before the forward)");
    logits.push_back(m->router_logits);
  }
  if (logits.empty())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] router_aux_loss: the model has no mixture-of-experts layer");
  return load_balancing_loss(logits, config.num_experts, config.num_experts_per_tok);
}

}  // namespace genesis::models
