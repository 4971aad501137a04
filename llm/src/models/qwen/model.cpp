// model.cpp - the Qwen modules' forward passes, initialisation and rotary tables.
//
// Shapes: B batch, T positions in this pass, S cache positions attended,
// Hq query heads, Hkv key/value heads (Hq % Hkv == 0), D head_dim.
#include <cmath>
#include <tuple>

#include "genesis/autograd.hpp"
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

// Inference-only fast paths are taken when nothing is being recorded for backward, except in the
// first pass of a checkpointed layer: backward recomputes it with the training ops, and the two
// passes must give the same values.
bool inference_mode(const Tensor& w) {
  return !autograd::in_checkpoint_forward() && (!autograd::grad_enabled() || !w.requires_grad());
}

}  // namespace

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
    kv.kv.push_back(zeros({batch, 2 * c.num_key_value_heads, capacity, c.head_dim}, {.dtype = dtype, .device = device}));
  return kv;
}

Tensor KVCache::keys(int64_t layer, int64_t len) const {
  return kv[static_cast<size_t>(layer)].slice(1, 0, kv_heads).slice(2, 0, len);
}

Tensor KVCache::values(int64_t layer, int64_t len) const {
  return kv[static_cast<size_t>(layer)].slice(1, kv_heads, 2 * kv_heads).slice(2, 0, len);
}

// ---------------------------------------------------------------- attention

QwenAttention::QwenAttention(const QwenConfig& c, const Options& f)
    : num_heads(c.num_attention_heads),
      num_kv_heads(c.num_key_value_heads),
      head_dim(c.head_dim),
      q_proj(c.hidden_size, c.num_attention_heads * c.head_dim, c.attention_bias, f),
      k_proj(c.hidden_size, c.num_key_value_heads * c.head_dim, c.attention_bias, f),
      v_proj(c.hidden_size, c.num_key_value_heads * c.head_dim, c.attention_bias, f),
      o_proj(c.num_attention_heads * c.head_dim, c.hidden_size, false, f) {
  register_module("q_proj", q_proj);
  register_module("k_proj", k_proj);
  register_module("v_proj", v_proj);
  register_module("o_proj", o_proj);
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<nn::RMSNorm>(c.head_dim, c.rms_norm_eps, true, f));
    k_norm = register_module("k_norm", std::make_shared<nn::RMSNorm>(c.head_dim, c.rms_norm_eps, true, f));
  }
  qkv_weight_ = fuse_rows({&q_proj, &k_proj, &v_proj}, f);
  if (c.attention_bias) qkv_bias_ = fuse_bias({&q_proj, &k_proj, &v_proj}, f);
}

Tensor QwenAttention::forward(const Tensor& x, const AttentionContext& ctx, int64_t layer) {
  const int64_t B = x.size(0), T = x.size(1), D = head_dim;
  const int64_t nq = num_heads * D, nkv = num_kv_heads * D;
  const bool fused = inference_mode(q_proj.weight) &&
                     still_fused(qkv_weight_, {&q_proj.weight, &k_proj.weight, &v_proj.weight}) &&
                     (!qkv_bias_.defined() || still_fused(qkv_bias_, {&q_proj.bias, &k_proj.bias, &v_proj.bias}));
  Tensor q, k, v;  // (B, H, T, D), rotated
  Tensor kv;       // (B, 2 Hkv, T, D): rotated keys then values, when they come out as one piece
  if (fused && !q_norm && ctx.cos_all.defined()) {
    // One projection and one rope over all Hq + 2 Hkv heads (the value heads' table is 1, 0).
    Tensor y = F::rope(F::linear(x, qkv_weight_, qkv_bias_).view({B, T, num_heads + 2 * num_kv_heads, D}),
                       ctx.cos_all, ctx.sin_all);
    q = y.slice(2, 0, num_heads).transpose(1, 2);
    kv = y.slice(2, num_heads, num_heads + 2 * num_kv_heads).transpose(1, 2);
    k = kv.slice(1, 0, num_kv_heads);
    v = kv.slice(1, num_kv_heads, 2 * num_kv_heads);
  } else {
    if (fused) {  // one (B, T, hidden) @ (nq + 2 nkv, hidden)^T projection
      Tensor qkv = F::linear(x, qkv_weight_, qkv_bias_);
      q = qkv.slice(-1, 0, nq);
      k = qkv.slice(-1, nq, nq + nkv);
      v = qkv.slice(-1, nq + nkv, nq + 2 * nkv);
    } else {
      q = q_proj(x);
      k = k_proj(x);
      v = v_proj(x);
    }
    q = q.reshape({B, T, num_heads, D});
    k = k.reshape({B, T, num_kv_heads, D});
    v = v.reshape({B, T, num_kv_heads, D});
    if (q_norm) {  // Qwen3: RMSNorm over each head's D before rope
      q = (*q_norm)(q);
      k = (*k_norm)(k);
    }
    q = F::rope(q.transpose(1, 2), ctx.cos, ctx.sin);  // (B, Hq, T, D)
    k = F::rope(k.transpose(1, 2), ctx.cos, ctx.sin);  // (B, Hkv, T, D)
    v = v.transpose(1, 2);                             // (B, Hkv, T, D)
  }

  Tensor out;
  if (!ctx.cache) {
    // A mask (packed conversations) already holds the causal rule.
    out = F::scaled_dot_product_attention(q, k, v, ctx.mask, 0, !ctx.mask.defined());
  } else {
    if (!kv.defined()) kv = F::cat({k, v}, 1);
    // cache[b, :, write_pos[b] + t] = kv[b, :, t] (device-side offsets: graph-replayable)
    Tensor& cache = ctx.cache->kv[static_cast<size_t>(layer)];
    F::kv_cache_write_(cache, kv, ctx.write_pos);
    if (ctx.prefill_from_zero) {
      out = F::scaled_dot_product_attention(q, k, v, {}, 0, true);
    } else {
      out = F::scaled_dot_product_attention(q, ctx.cache->keys(layer, ctx.kv_len), ctx.cache->values(layer, ctx.kv_len),
                                            ctx.mask, 0, false);
    }
  }
  return o_proj(out.transpose(1, 2).reshape({B, T, nq}));
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
}

Tensor QwenMLP::forward(const Tensor& x) {
  if (inference_mode(gate_proj.weight) && still_fused(gate_up_weight_, {&gate_proj.weight, &up_proj.weight})) {
    // silu(x Wg^T) * (x Wu^T) in one op: the backends apply the activation in the product's epilogue
    return down_proj(F::linear_swiglu(x, gate_up_weight_));  // (B, T, I)
  }
  return down_proj(F::swiglu(gate_proj(x), up_proj(x)));
}

// ---------------------------------------------------------------- block

QwenDecoderLayer::QwenDecoderLayer(const QwenConfig& c, const Options& f)
    : self_attn(c, f),
      mlp(c, f),
      input_layernorm(c.hidden_size, c.rms_norm_eps, true, f),
      post_attention_layernorm(c.hidden_size, c.rms_norm_eps, true, f) {
  register_module("self_attn", self_attn);
  register_module("mlp", mlp);
  register_module("input_layernorm", input_layernorm);
  register_module("post_attention_layernorm", post_attention_layernorm);
}

Tensor QwenDecoderLayer::forward(const Tensor& x, const AttentionContext& ctx, int64_t layer) {
  Tensor h = x + self_attn.forward(input_layernorm(x), ctx, layer);
  return h + mlp(post_attention_layernorm(h));
}

// ---------------------------------------------------------------- model

QwenModel::QwenModel(const QwenConfig& c, const Options& f)
    : embed_tokens(c.vocab_size, c.hidden_size, std::nullopt, f), norm(c.hidden_size, c.rms_norm_eps, true, f) {
  register_module("embed_tokens", embed_tokens);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(std::make_shared<QwenDecoderLayer>(c, f));
    layer_list_.push_back(layers.back());
  }
  register_module("layers", layer_list_);
  register_module("norm", norm);
}

namespace {
// (y, h) = add_rms_norm(x, residual, norm.weight): h = x + residual, y = rms_norm(h) * weight.
std::pair<Tensor, Tensor> add_norm(const Tensor& x, const Tensor& residual, const nn::RMSNorm& n) {
  return F::add_rms_norm(x, residual, n.weight, *n.eps);
}
}  // namespace

Tensor QwenModel::forward(const Tensor& ids, const AttentionContext& ctx) {
  Tensor h = embed_tokens(ids);
  if (!inference_mode(embed_tokens.weight)) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (gradient_checkpointing) {  // keep only the layer's input; backward recomputes the rest
        auto layer = layers[i];
        const int64_t at = static_cast<int64_t>(i);
        h = autograd::checkpoint([layer, ctx, at](const std::vector<Tensor>& x) { return layer->forward(x[0], ctx, at); },
                                 {h});
      } else {
        h = layers[i]->forward(h, ctx, static_cast<int64_t>(i));
      }
    }
    return norm(h);
  }
  // Inference: each residual add is fused with the norm that follows it, so the hidden state
  // is read once per sublayer.  `pending` is the sublayer output not yet added to h.
  Tensor pending;
  for (size_t i = 0; i < layers.size(); ++i) {
    QwenDecoderLayer& L = *layers[i];
    Tensor normed;
    if (pending.defined()) std::tie(normed, h) = add_norm(pending, h, L.input_layernorm);
    else normed = L.input_layernorm(h);
    Tensor a = L.self_attn.forward(normed, ctx, static_cast<int64_t>(i));
    std::tie(normed, h) = add_norm(a, h, L.post_attention_layernorm);
    pending = L.mlp(normed);
  }
  if (!pending.defined()) return norm(h);
  return add_norm(pending, h, norm).first;
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
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(c.hidden_size, c.vocab_size, false,
                                                                      factory_or_default(c, factory)));
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
    } else if (auto* n = dynamic_cast<nn::RMSNorm*>(m)) {
      if (n->weight.defined()) nn::init::ones_(n->weight);
    }
  }
}

std::pair<Tensor, Tensor> QwenForCausalLM::rope_tables(int64_t n) {
  const Tensor& w = model.embed_tokens.weight;
  if (rope_cos_.defined() && rope_cos_.size(0) >= n && rope_cos_.dtype() == w.dtype() &&
      rope_cos_.device() == w.device())
    return {rope_cos_, rope_sin_};
  // Grow in powers of two so a long generation rebuilds the table O(log n) times.
  int64_t rows = 64;
  while (rows < n) rows *= 2;
  const int64_t D = config.head_dim, half = D / 2;
  std::vector<double> cs(static_cast<size_t>(rows * D)), sn(cs.size());
  for (int64_t i = 0; i < half; ++i) {
    // inv_freq[i] = theta^(-2i/D); the table repeats it for both halves (cat(freqs, freqs)).
    const double inv = std::pow(config.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    for (int64_t p = 0; p < rows; ++p) {
      const double a = static_cast<double>(p) * inv;
      const size_t at = static_cast<size_t>(p * D + i);
      cs[at] = cs[at + static_cast<size_t>(half)] = std::cos(a);
      sn[at] = sn[at + static_cast<size_t>(half)] = std::sin(a);
    }
  }
  rope_cos_ = tensor(cs, {rows, D}, {.dtype = w.dtype(), .device = w.device()});
  rope_sin_ = tensor(sn, {rows, D}, {.dtype = w.dtype(), .device = w.device()});
  return {rope_cos_, rope_sin_};
}

Tensor QwenForCausalLM::hidden_states(const Tensor& ids, const AttentionContext& ctx) {
  return model.forward(ids, ctx);
}

Tensor QwenForCausalLM::logits(const Tensor& h) {
  return lm_head ? (*lm_head)(h) : F::linear(h, model.embed_tokens.weight);
}

Tensor QwenForCausalLM::forward(const Tensor& ids) {
  if (ids.dim() != 2)
    throw Error(GN_ERR_SHAPE, "[qwen] forward expects ids (B, T), got rank " + std::to_string(ids.dim()));
  const int64_t T = ids.size(1);
  auto [cos, sin] = rope_tables(T);
  AttentionContext ctx;
  ctx.cos = cos.slice(0, 0, T).view({1, 1, T, config.head_dim});
  ctx.sin = sin.slice(0, 0, T).view({1, 1, T, config.head_dim});
  return logits(hidden_states(ids, ctx));
}

Tensor QwenForCausalLM::loss(const Tensor& ids, const Tensor& labels) {
  if (labels.shape() != ids.shape())
    throw Error(GN_ERR_SHAPE, "[qwen] labels must have the shape of ids");
  const int64_t T = ids.size(1);
  if (T < 2) throw Error(GN_ERR_SHAPE, "[qwen] loss needs at least 2 positions");
  Tensor lg = forward(ids);
  const int64_t V = lg.size(-1);
  Tensor pred = lg.slice(1, 0, T - 1).reshape({-1, V});
  Tensor tgt = labels.slice(1, 1, T).reshape({-1});
  return F::cross_entropy(pred.to(DType::f32), tgt);
}

}  // namespace genesis::models
