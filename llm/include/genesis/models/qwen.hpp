// genesis/models/qwen.hpp - the causal-LM decoder (HF transformers layout): Qwen2, Qwen2.5, Qwen3 dense, Llama 3.x,
// Mistral, Gemma 2 and Gemma 3 text, one implementation whose family differences are config switches (see
// QwenConfig and docs/models.md; genesis/models/decoder.hpp gives the family-neutral names).
//
//   auto model = genesis::models::QwenForCausalLM::from_pretrained("Qwen2.5-0.5B-Instruct",
//                                                                  {.device = "cuda", .dtype = genesis::bfloat16});
//   Tensor logits = model->forward(ids);            // ids (B, T) int64 -> (B, T, vocab)
//   Tensor loss = model->loss(ids, labels);         // HF shift: logits[:, :-1] vs labels[:, 1:]
//   model->save_pretrained("out/");                 // a folder transformers loads unchanged
//
// The modules are the frontend's nn layers, so the whole model trains with
// autograd.  Parameter names are HF's ("model.layers.0.self_attn.q_proj.weight").
// q/k/v (and gate/up) weights are row blocks of one buffer, so inference runs a
// single projection per block while training and checkpoints still see HF's
// separate tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "genesis/nn/container.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/nn/module.hpp"
#include "genesis/nn/normalization.hpp"
#include "genesis/tensor.hpp"

namespace genesis::models {

class LoraLayer;  // genesis/models/lora.hpp

/** A rotary embedding as transformers defines it (`rope_parameters` in 5.x, `rope_theta` + `rope_scaling` in 4.x). */
struct RopeParameters {
  std::string rope_type = "default";                     ///< "default", "linear", "dynamic", "yarn" or "llama3"
  double factor = 1.0;                                   ///< linear, dynamic, yarn, llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  ///< llama3
  int64_t original_max_position_embeddings = 0;          ///< llama3, yarn (0: max_position_embeddings)
  std::optional<double> attention_factor;                ///< yarn (unset: 0.1 ln(factor) + 1, or from mscale)
  double beta_fast = 32, beta_slow = 1;                  ///< yarn
  std::optional<double> mscale, mscale_all_dim;          ///< yarn
  bool truncate = true;                                  ///< yarn: floor/ceil the correction range
};

/** The architecture fields of a decoder's config.json (transformers 4.x and 5.x spellings): Qwen2/2.5/3 dense,
 * Llama, Mistral, Gemma 2, Gemma 3 text.  The switches below say how a family differs. */
struct QwenConfig {
  std::string model_type = "qwen2";  ///< "qwen2", "qwen3", "llama", "mistral", "gemma2" or "gemma3_text"
  int64_t vocab_size = 151936;
  int64_t hidden_size = 896;
  int64_t intermediate_size = 4864;
  int64_t num_hidden_layers = 24;
  int64_t num_attention_heads = 14;
  int64_t num_key_value_heads = 2;
  int64_t head_dim = 64;  ///< may differ from hidden/heads (Qwen3)
  int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 1000000.0;  ///< rope_theta (4.x) or rope_parameters.rope_theta (5.x)
  double initializer_range = 0.02;
  bool tie_word_embeddings = true;
  bool attention_bias = true;          ///< q/k/v bias (always on for Qwen2)
  bool qk_norm = false;                ///< per-head RMSNorm on q and k (Qwen3)
  std::string dtype = "bfloat16";      ///< the checkpoint's dtype ("dtype" / "torch_dtype")
  int64_t bos_token_id = -1;           ///< -1 = none
  std::vector<int64_t> eos_token_ids;  ///< empty = none
  std::string source_json;             ///< the file as read: unknown fields are kept on save

  // Family switches (the defaults are Qwen's).
  RopeParameters rope_scaling;           ///< the rope of full-attention layers (theta: rope_theta)
  double rope_local_theta = 0;           ///< sliding layers' own default rope theta (Gemma 3); 0 = the rope above
  bool norm_offset = false;              ///< RMSNorm scales by (1 + w), computed in float32 (Gemma)
  bool sandwich_norms = false;           ///< norms after attention and around the MLP (Gemma 2/3)
  std::string hidden_act = "silu";       ///< "silu" (SwiGLU) or "gelu_pytorch_tanh" (GeGLU)
  bool scale_embeddings = false;         ///< embeddings times sqrt(hidden_size) in their dtype (Gemma)
  double query_pre_attn_scalar = 0;      ///< attention scale query_pre_attn_scalar^-0.5 (Gemma); 0 = head_dim
  double attn_logit_softcapping = 0;     ///< attention scores tanh(s / c) * c before the mask; 0 = off
  double final_logit_softcapping = 0;    ///< logits tanh(x / c) * c; 0 = off
  int64_t sliding_window = 0;            ///< window of the sliding layers (key j seen from query i if i - j < w)
  std::vector<std::string> layer_types;  ///< per layer "full_attention" or "sliding_attention" (empty: all full)
  // Mixture of experts (qwen3_moe; genesis/models/moe.hpp): the sparse layers' feed-forward is a SparseMoeBlock.
  int64_t num_experts = 0;               ///< experts per sparse layer ("num_experts" / "num_local_experts"); 0 = dense
  int64_t num_experts_per_tok = 0;       ///< experts each token is routed to
  int64_t moe_intermediate_size = 0;     ///< each expert's SwiGLU width
  int64_t decoder_sparse_step = 1;       ///< layer l is sparse when (l + 1) % decoder_sparse_step == 0 ...
  std::vector<int64_t> mlp_only_layers;  ///< ... and l is not listed here (those run the dense MLP)
  bool norm_topk_prob = false;           ///< renormalise the top-k routing weights to sum 1
  double router_aux_loss_coef = 0.001;   ///< weight of the load-balancing loss in loss()
  bool output_router_logits = false;     ///< loss() adds router_aux_loss_coef * router_aux_loss()

  /** True when layer l's feed-forward is a mixture of experts. */
  bool is_sparse_layer(int64_t l) const;

  /** True when layer l attends within sliding_window. */
  bool is_sliding(int64_t l) const {
    return sliding_window > 0 && l >= 0 && static_cast<size_t>(l) < layer_types.size() &&
           layer_types[static_cast<size_t>(l)] == "sliding_attention";
  }
  /** The attention scale: query_pre_attn_scalar^-0.5, or head_dim^-0.5. */
  double attention_scale() const;
  /** Positions a sequence may reach (max_position_embeddings; unbounded under dynamic rope scaling). */
  int64_t context_length() const;
  /** Features the paged serving path lacks that this config needs ("" = none): dynamic rope scaling. */
  std::string paged_unsupported() const;

  /** Parses config.json text; unsupported values (qwen2_moe, unknown rope types or activations, biased MLPs, ...) are
   * refused with a genesis::Error naming the field. `where` names the file. */
  static QwenConfig from_json(const std::string& text, const std::string& where = "config.json");
  /** Reads and parses a config.json file. */
  static QwenConfig from_file(const std::string& path);
  /** A named shape with the real model's dimensions: qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-3b,
   * qwen2.5-7b, qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b, qwen3-30b-a3b (MoE). */
  static QwenConfig preset(const std::string& name);
  /** Names accepted by preset(). */
  static std::vector<std::string> preset_names();
  /** config.json text (source_json's fields kept, ours written over them). */
  std::string to_json() const;
  /** Parameters in the model (the tied head counted once). */
  int64_t num_parameters() const;
};

/** Generation defaults from generation_config.json (fields absent in the file stay unset). */
struct QwenGenerationDefaults {
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1, pad_token_id = -1;
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
  std::string source_json;  ///< the file as read ("" when absent)
  /** Parses generation_config.json text. */
  static QwenGenerationDefaults from_json(const std::string& text, const std::string& where);
};

/** Per-layer key/value buffers for incremental decoding, preallocated to a capacity.  Keys and
 * values of a layer share one tensor so that one kv_cache_write_ stores both. */
struct KVCache {
  std::vector<Tensor> kv;  ///< per layer: (B, 2*num_key_value_heads, capacity, head_dim): keys, then values
  int64_t batch = 0, capacity = 0, kv_heads = 0;
  /** Allocates zeroed buffers for `batch` sequences of up to `capacity` positions. */
  static KVCache allocate(const QwenConfig& c, int64_t batch, int64_t capacity, const Device& device, DType dtype);
  /** Keys of a layer at positions [0, len): (B, Hkv, len, D), a view. */
  Tensor keys(int64_t layer, int64_t len) const;
  /** Values of a layer at positions [0, len): (B, Hkv, len, D), a view. */
  Tensor values(int64_t layer, int64_t len) const;
};

/** A paged key/value cache for serving: one block pool per layer, each (num_blocks, 2*Hkv, block_size, head_dim)
 * (keys of kv head g in [:, g], values in [:, Hkv + g]).  Position p of a sequence lives at slot
 * block_table[p / block_size] * block_size + p % block_size of every layer's pool. */
struct PagedKVCache {
  std::vector<Tensor> pools;  ///< per layer: (num_blocks, 2*num_key_value_heads, block_size, head_dim)
  int64_t num_blocks = 0, block_size = 0;
  /** Allocates zeroed pools of num_blocks blocks of block_size positions for every layer of c. */
  static PagedKVCache allocate(const QwenConfig& c, int64_t num_blocks, int64_t block_size, const Device& device,
                               DType dtype);
  /** Bytes one block takes over all layers. */
  static int64_t block_bytes(const QwenConfig& c, int64_t block_size, DType dtype);
  /** Blocks that fit in `bytes` (over all layers; at least 0). */
  static int64_t blocks_for_bytes(const QwenConfig& c, int64_t block_size, DType dtype, int64_t bytes);
  /** Blocks that fit in `fraction` of the device's free memory as its runtime reports it; throws genesis::Error on
   * cpu (host memory: give a byte budget) and where the device reports no free memory. */
  static int64_t blocks_for_free_memory(const QwenConfig& c, int64_t block_size, DType dtype, const Device& device,
                                        double fraction);
  /** Copies block src's positions to block dst in every layer's pool (copy-on-write). */
  void copy_block(int64_t src, int64_t dst);
};

/** Where a packed batch's tokens sit in a paged cache: B sequences, T tokens, sequence b's tokens at rows
 * [query_start[b], query_start[b + 1]) and positions seq_lens[b] - n_b .. seq_lens[b] - 1. */
struct PagedBatch {
  PagedKVCache* cache = nullptr;
  Tensor slots;         ///< (T) int64: the pool slot each token's key/value is written to (< 0: skipped)
  Tensor block_tables;  ///< (B, M) int32: each sequence's blocks
  Tensor seq_lens;      ///< (B) int64: each sequence's length including this pass's tokens
  Tensor query_start;   ///< (B + 1) int64: each sequence's first row in the pass
};

/** What one forward pass attends to and where its tokens sit.  QwenForCausalLM::attention_context
 * builds it from positions (rotary rows, cache offsets, mask); a caller may also fill it by hand
 * (cos/sin from rope_tables() and a mask).  One of the two rotary forms is enough. */
struct AttentionContext {
  Tensor cos, sin;                 ///< per-head rotary rows broadcastable to (B, 1, T, head_dim)
  Tensor cos_local, sin_local;     ///< sliding layers' per-head rows when they have a rope of their own (Gemma 3)
  Tensor mask_sliding;             ///< the keep-mask of sliding-window layers (causal rule and window included)
  Tensor cos_all, sin_all;         ///< (B|1, T, Hq + 2*Hkv, head_dim): the rows of every head of the fused q/k/v
                                   ///< projection, identity (1, 0) on the value heads: one rope call
  KVCache* cache = nullptr;        ///< null: no cache (training, scoring)
  Tensor write_pos;                ///< (B) int64 on the device: cache offset of this pass's first position
  int64_t kv_len = 0;              ///< cache positions attended (the first kv_len)
  Tensor mask;                     ///< (B, 1, T, kv_len) bool keep-mask (without a cache: (B, 1, T, T), the causal
                                   ///< rule included, e.g. packed sequences); undefined = causal
  bool prefill_from_zero = false;  ///< cache mode, every row starts at 0: attend causally to this pass's k/v
  std::vector<Tensor> sources;     ///< model tables the tensors above were gathered from, kept alive with the
                                   ///< context (a captured step reads them by address, even if the model regrows them)
  const PagedBatch* paged = nullptr;  ///< a packed batch (B = 1) over a paged cache: each layer writes its k/v
                                      ///< with paged_kv_write_ and attends with paged_attention (cache unused)
};

/** The kernels one forward runs.  QwenModel::kernels() picks them once per forward (the only place
 * that decides; see model.cpp); the default is the training set, whose ops all have backward rules. */
struct QwenKernels {
  bool inference = false;  ///< nothing is recorded for backward: residual adds fused with the next norm (add_rms_norm)
  bool fused_qkv = false;  ///< one projection over the q/k/v weights (row blocks of one buffer)
  bool rope_all = false;   ///< one rope over every head of that projection (no q/k norm; the context has cos_all)
  bool fused_mlp = false;  ///< gate/up projection and activation as one linear_swiglu
};

/** RMSNorm with the decoder's switch: y = norm(x) * w, or (Gemma) norm(x) * (1 + w) computed in float32 (at least)
 * and rounded once to x's dtype. */
class DecoderRMSNorm : public nn::RMSNorm {
 public:
  /** Over a last dim of size n; offset: scale by (1 + w). */
  DecoderRMSNorm(int64_t n, double eps, bool offset, const Options& factory)
      : nn::RMSNorm(n, eps, true, factory), offset(offset) {}
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override;
  bool offset;
};

/** Self-attention with GQA/MQA (K/V never repeated), optional q/k/v bias and q/k RMSNorm, a custom scale, logit
 * soft-capping and a sliding window (the fused attention op where it serves; else composed of tensor ops). */
class QwenAttention : public nn::Module {
 public:
  /** Layers of config c (layer number layer_index) with parameters created per factory (dtype, device). */
  QwenAttention(const QwenConfig& c, const Options& factory, int64_t layer_index = 0);
  /** x (B, T, hidden) -> (B, T, hidden) with the kernels k. */
  Tensor forward(const Tensor& x, const AttentionContext& ctx, int64_t layer, const QwenKernels& k = {});
  using nn::Module::forward;  // Module's one-tensor form stays visible (it throws: this one needs a context)
  /** True while q/k/v weights (and biases) are still row blocks of one buffer (Module::to() or a
   * reassigned parameter gives them storage of their own). */
  bool weights_fused() const;
  /** "QwenAttention". */
  std::string name() const override { return "QwenAttention"; }
  int64_t num_heads, num_kv_heads, head_dim;
  bool sliding = false;     ///< attends within the config's sliding window (ctx.mask_sliding)
  bool local_rope = false;  ///< rotates with the sliding layers' own rope (ctx.cos_local)
  int64_t window = 0;       ///< the sliding window
  double scale = 0;         ///< the score scale
  double softcap = 0;       ///< attention logit soft-capping (0 = off)
  nn::Linear q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<DecoderRMSNorm> q_norm, k_norm;             ///< Qwen3, Gemma 3 only
  std::shared_ptr<LoraLayer> q_lora, k_lora, v_lora, o_lora;  ///< LoRA adapters (LoraModel sets them; null = none)

 private:
  Tensor qkv_weight_, qkv_bias_;  // (Hq*D + 2*Hkv*D, hidden): q/k/v weights are row blocks of it
};

/** Gated feed-forward: down(act(gate(x)) * up(x)), act silu (SwiGLU) or gelu tanh (GeGLU). */
class QwenMLP : public nn::Module {
 public:
  /** Layers of config c with parameters created per factory. */
  QwenMLP(const QwenConfig& c, const Options& factory);
  bool geglu = false;  ///< gelu (tanh form) instead of silu
  /** x (B, T, hidden) -> (B, T, hidden) with the training kernels. */
  Tensor forward(const Tensor& x) override { return forward(x, QwenKernels{}); }
  /** x (B, T, hidden) -> (B, T, hidden) with the kernels k. */
  Tensor forward(const Tensor& x, const QwenKernels& k);
  /** True while the gate/up weights are still row blocks of one buffer. */
  bool weights_fused() const;
  /** "QwenMLP". */
  std::string name() const override { return "QwenMLP"; }
  nn::Linear gate_proj, up_proj, down_proj;
  std::shared_ptr<LoraLayer> gate_lora, up_lora, down_lora;  ///< LoRA adapters (LoraModel sets them; null = none)

 private:
  Tensor gate_up_weight_;  // (2*intermediate, hidden): gate and up weights are row blocks of it
};

/** Pre-norm decoder block: x + attn(norm(x)), then h + mlp(norm(h)); with sandwich norms (Gemma 2/3)
 * x + post_attention_layernorm(attn(input_layernorm(x))), then h +
 * post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h))). */
class QwenDecoderLayer : public nn::Module {
 public:
  /** Block layer_index of config c. */
  QwenDecoderLayer(const QwenConfig& c, const Options& factory, int64_t layer_index = 0);
  /** x (B, T, hidden) -> (B, T, hidden) with the kernels k. */
  Tensor forward(const Tensor& x, const AttentionContext& ctx, int64_t layer, const QwenKernels& k = {});
  /** The block over h + pending (pending: the previous block's MLP output, not yet added; may be
   * undefined): returns (h', its MLP output), whose sum is the block's output.  Carrying the last add
   * into the next block lets inference fuse it with that block's first norm. */
  std::pair<Tensor, Tensor> forward(const Tensor& h, const Tensor& pending, const AttentionContext& ctx, int64_t layer,
                                    const QwenKernels& k);
  using nn::Module::forward;  // Module's one-tensor form stays visible (it throws: this one needs a context)
  /** "QwenDecoderLayer". */
  std::string name() const override { return "QwenDecoderLayer"; }
  /** The feed-forward of normed input x: feed_forward_block when set, else the dense mlp. */
  Tensor feed_forward(const Tensor& x, const QwenKernels& k);
  QwenAttention self_attn;
  QwenMLP mlp;  ///< the dense feed-forward ("mlp"), unless feed_forward_block replaces it
  /** A feed-forward module that replaces the dense mlp (e.g. a sparse mixture of experts), registered as "mlp" by
   * the constructor that sets it (the dense one then stays unregistered); null = the dense mlp. */
  std::shared_ptr<nn::Module> feed_forward_block;
  DecoderRMSNorm input_layernorm, post_attention_layernorm;
  std::shared_ptr<DecoderRMSNorm> pre_feedforward_layernorm, post_feedforward_layernorm;  ///< sandwich norms only
};

/** Embedding, the decoder stack and the final norm ("model." in HF names). */
class QwenModel : public nn::Module {
 public:
  /** Stack of config c. */
  QwenModel(const QwenConfig& c, const Options& factory);
  /** ids (B, T) int64 -> hidden states (B, T, hidden) after the final norm.  Training, scoring, prefill
   * and decode steps all run here, with the kernels kernels(&ctx) picks. */
  Tensor forward(const Tensor& ids, const AttentionContext& ctx);
  using nn::Module::forward;  // Module's one-tensor form stays visible (it throws: this one needs a context)
  /** The kernels a forward runs now: the inference set when nothing is recorded for backward (grad
   * mode off or no parameter requiring grad, and not a checkpointed region's first pass), each fused
   * op where the fused weights still hold the parameters; rope_all also needs ctx->cos_all (ctx null:
   * what a context should hold). */
  QwenKernels kernels(const AttentionContext* ctx) const;
  /** "QwenModel". */
  std::string name() const override { return "QwenModel"; }
  nn::Embedding embed_tokens;
  std::vector<std::shared_ptr<QwenDecoderLayer>> layers;  ///< registered as layers.0, layers.1, ...
  DecoderRMSNorm norm;
  double embed_scale = 0;   ///< embeddings times this, rounded to their dtype (Gemma: sqrt(hidden)); 0 = none
  bool single_rope = true;  ///< one rotary table serves every layer and position set (rope_all allowed)
  bool gradient_checkpointing = false;  ///< training: each layer keeps only its input and recomputes in backward

 private:
  nn::ModuleList layer_list_;  // the layers again, registered under the name "layers"
};

/** Where and how a checkpoint is loaded. */
struct LoadOptions {
  Device device = Device();                   ///< where the parameters live
  std::optional<DType> dtype = std::nullopt;  ///< unset = the config's dtype (float32 for unknown ones)
};

/** The causal LM: QwenModel plus the lm_head (tied to the embedding or its own Linear). */
class QwenForCausalLM : public nn::Module {
 public:
  /** A model of config c with parameters created per factory (dtype, device), initialised as
   * transformers does (normal(0, initializer_range), zero biases, unit norms) from the device's
   * default generator. */
  QwenForCausalLM(const QwenConfig& c, const Options& factory = {});
  /** ids (B, T) int64 -> logits (B, T, vocab) in the parameters' dtype. */
  Tensor forward(const Tensor& ids) override;
  /** Mean next-token cross entropy: logits[:, :-1] against labels[:, 1:], -100 ignored (HF). */
  Tensor loss(const Tensor& ids, const Tensor& labels);
  /** The load-balancing loss (genesis/models/moe.hpp, load_balancing_loss) of the router logits the sparse layers
   * kept in their last forward (they keep them while config.output_router_logits, or while loss() computes it);
   * throws genesis::Error for a dense model or when none were kept. */
  Tensor router_aux_loss() const;
  /** Hidden states (after the final norm) for ids with an attention context. */
  Tensor hidden_states(const Tensor& ids, const AttentionContext& ctx);
  /** Logits of hidden states h (*, hidden) -> (*, vocab). */
  Tensor logits(const Tensor& h);
  /** Rotary tables cos, sin (positions, head_dim) covering at least n positions, in the parameters'
   * dtype and device; computed in float64 and cached (views of the model's one table). */
  std::pair<Tensor, Tensor> rope_tables(int64_t n);
  /** The context of a forward over positions 0..T-1 in every row: training and scoring (mask: an
   * optional (B, 1, T, T) keep-mask holding the causal rule, e.g. packed rows), or with a cache a
   * prefill from position 0 that writes each row's K/V at 0 and attends its own K/V.  With a cache
   * the model's tables are sized to its capacity, so later contexts over it allocate nothing. */
  AttentionContext attention_context(int64_t T, KVCache* cache = nullptr, const Tensor& mask = {});
  /** The context of a forward whose token (b, t) sits at positions[b, t]: positions (B, T) int64 on
   * the device, or (B) for one token per row (a decode step); every position below T without a
   * cache, below the cache's capacity with one.  Without a cache it attends within the pass
   * (causally, or under mask).  With one it writes the pass's K/V at positions[b, 0] and attends
   * cache positions [0, kv_len) (0: the capacity) under the mask j <= positions[b, t].  Over a cache
   * that a context has sized, it runs only device ops reading storage that stays in place: a
   * captured decode step replays with whatever positions then holds. */
  AttentionContext attention_context(const Tensor& positions, KVCache* cache = nullptr, int64_t kv_len = 0,
                                     const Tensor& mask = {});
  /** The context of a packed forward over a paged cache: token t at positions[t] ((T) int64 on the device,
   * each below max_position, which sizes the rotary table); `batch` must outlive the context. */
  AttentionContext paged_context(const Tensor& positions, const PagedBatch& batch, int64_t max_position);
  /** A packed forward of many sequences over a paged cache (serving): ids (1, T) or (T) int64 at positions (T),
   * their keys/values written to batch.slots, each sequence attending its own blocks; returns logits (R, vocab)
   * of the rows (R) int64 only (the rows whose next token is sampled).  max_position: 1 + the largest position. */
  Tensor forward_paged(const Tensor& ids, const Tensor& positions, const PagedBatch& batch, const Tensor& rows,
                       int64_t max_position);
  /** "QwenForCausalLM". */
  std::string name() const override { return "QwenForCausalLM"; }
  /** Redraws every parameter as transformers' _init_weights does. */
  void init_weights();

  /** Loads a Hugging Face model folder (config.json, generation_config.json, model.safetensors or
   * sharded model-0000N-of-0000M.safetensors + index), converting to opts.dtype. A missing, extra
   * or wrongly shaped tensor is an error naming it and both shapes. */
  static std::unique_ptr<QwenForCausalLM> from_pretrained(const std::string& dir, const LoadOptions& opts = {});
  /** Writes config.json, generation_config.json and the weights (sharded above max_shard_bytes,
   * with model.safetensors.index.json), each file atomically. */
  void save_pretrained(const std::string& dir, int64_t max_shard_bytes = int64_t{5} << 30) const;

  QwenConfig config;
  QwenGenerationDefaults generation_defaults;
  QwenModel model;
  std::shared_ptr<nn::Linear> lm_head;  ///< null when tied to model.embed_tokens
  /** Largest all-heads rotary table (every position x every head) kept per model; above it each
   * forward gathers its rows from the per-position table (one op more per forward). */
  int64_t rope_all_heads_max_bytes = int64_t{64} << 20;

 private:
  void ensure_rope(int64_t n, bool all_heads);
  void dynamic_rope_update(int64_t seq_len);
  void add_sliding(AttentionContext& ctx, const Tensor& q_pos, const Tensor& k_pos, const Tensor& base_mask);
  Tensor all_heads_rows(const Tensor& positions) const;
  Tensor rope_local_;            // sliding layers' table (2, P + 1, D) when they have their own rope
  Tensor window_consts_;         // (3) int64 on the device: 0, sliding_window, 1 (the window masks' operands)
  int64_t dynamic_len_ = 0;      // dynamic rope: the sequence length the table was computed for
  int64_t rope_built_len_ = -1;  // dynamic_len_ when rope_ was built
  // The rotary table and what is derived from it (model.cpp): rope_ (2, P + 1, D), rope_heads_
  // (2, P, Hq + 2 Hkv, D) or undefined, rope_floor_ (1, Hq + 2 Hkv) int64, positions_ (P) int64.
  Tensor rope_, rope_heads_, rope_floor_, positions_;
};

/** Reads a whole text file; throws genesis::Error (GN_ERR_NOT_FOUND / GN_ERR_IO) naming it. */
std::string read_text_file(const std::string& path);

}  // namespace genesis::models
