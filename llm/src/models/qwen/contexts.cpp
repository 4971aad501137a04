// contexts.cpp - the decoder's rotary tables (every rope variant, Gemma 3's local rope, dynamic scaling) and the
// attention contexts built from positions (model.cpp's header comment describes both).
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
using namespace window_mask;  // window_keep, both, window_consts

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
