// genesis/nn/functional.hpp - stateless layer functions with autograd
// (torch.nn.functional).  Typical use:
//
//   namespace F = genesis::nn::functional;
//   Tensor y = F::relu(F::linear(x, w, b));
//   Tensor loss = F::cross_entropy(logits, target);
//
// Argument order follows torch; keyword-only options become trailing
// parameters with torch's defaults.  Reductions are "none", "mean" or "sum".
// Gradients of the fused ops (conv2d, pooling, attention, rope, swiglu,
// gather, index_select, cat, stack) are rules in frontend/src/autograd/rules.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::nn {

/** A 2-D size such as a kernel or stride: 3 means (3, 3); {2, 1} means (2, 1). */
struct IntPair {
  int64_t h, w;
  /** Both dims = v. */
  IntPair(int64_t v) : h(v), w(v) {}  // NOLINT: implicit, as torch's int-or-tuple
  /** (h, w). */
  IntPair(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

namespace functional {

// ---- activations
/** max(x, 0). */
Tensor relu(const Tensor& x);
/** x * Phi(x); approximate "tanh" uses the tanh form. */
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/** x * sigmoid(x). */
Tensor silu(const Tensor& x);
/** tanh(x). */
Tensor tanh(const Tensor& x);
/** 1 / (1 + exp(-x)). */
Tensor sigmoid(const Tensor& x);
/** Softmax along dim. */
Tensor softmax(const Tensor& x, int64_t dim);
/** Log-softmax along dim. */
Tensor log_softmax(const Tensor& x, int64_t dim);
/** silu(gate) * up, fused (same shapes). */
Tensor swiglu(const Tensor& gate, const Tensor& up);
/** Inverted dropout drawn from the default generator; identity when !training. */
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// ---- linear, embedding, convolution, pooling
/** x (*, in) @ weight (out, in)^T + bias (out) -> (*, out). */
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
/** Rows of weight (V, D) picked by integer ids (*) -> (*, D). */
Tensor embedding(const Tensor& ids, const Tensor& weight);
/** x (N, C, H, W) * weight (O, C/groups, kh, kw) + bias (O) -> (N, O, Ho, Wo). */
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, IntPair stride = 1, IntPair padding = 0,
              IntPair dilation = 1, int64_t groups = 1);
/** Max over kernel windows of x (N, C, H, W); stride defaults to the kernel. */
Tensor max_pool2d(const Tensor& x, IntPair kernel, std::optional<IntPair> stride = {}, IntPair padding = 0,
                  IntPair dilation = 1, bool ceil_mode = false);
/** Mean over kernel windows of x (N, C, H, W); stride defaults to the kernel. */
Tensor avg_pool2d(const Tensor& x, IntPair kernel, std::optional<IntPair> stride = {}, IntPair padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);

// ---- attention and normalisation
/** softmax(q k^T * scale + mask) v on the fused op; q (B, H, Sq, D) or (H, Sq, D); k, v may have fewer
 * heads (GQA); bool mask true = attend, float mask is added; dropout_p must be 0. */
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = {},
                                    double dropout_p = 0, bool is_causal = false, std::optional<double> scale = {});
/** Rotary embedding x * cos + rotate_half(x) * sin (cos/sin broadcast to x). */
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
/** Layer norm over the trailing normalized_shape dims with optional affine weight/bias. */
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/** RMS norm over the last dim; eps unset = machine epsilon of x's dtype (torch). */
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = {});

// ---- inference fast paths (no gradient: training records the unfused ops)
/** (y, h): h = x + residual (rounded to x's dtype), y = rms_norm(h over the last dim) * weight (D). */
std::pair<Tensor, Tensor> add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps);
/** silu(x @ Wg^T) * (x @ Wu^T) for x (*, K) and the stacked weight (2I, K) = [Wg; Wu] -> (*, I). */
Tensor linear_swiglu(const Tensor& x, const Tensor& gate_up_weight);
/** In place: cache[b, :, write_pos[b] + t] = src[b, :, t] for cache (B, H, S, D) and src (B, H, T, D);
 * write_pos (B) int64 on the device, so a captured graph replays with new offsets. */
void kv_cache_write_(const Tensor& cache, const Tensor& src, const Tensor& write_pos);
/** In place: pool[s / BS, :, s % BS] = kv[t] for s = slots[t] (int64), pool (NB, 2*Hkv, BS, D), kv (T, 2*Hkv, D);
 * slots outside [0, NB*BS) are skipped (padding). */
void paged_kv_write_(const Tensor& pool, const Tensor& kv, const Tensor& slots);
/** Causal attention (T, Hq, D) of q over a paged KV pool: sequence b's queries are rows [query_start[b],
 * query_start[b+1]), the last of its seq_lens[b] positions, its keys/values in the blocks block_tables[b] (int32);
 * scale NaN = 1/sqrt(D); window > 0 keeps the keys j > i - window of a query at position i (sliding window);
 * softcap > 0 soft-caps the scaled scores (softcap * tanh(s / softcap)). */
Tensor paged_attention(const Tensor& q, const Tensor& pool, const Tensor& block_tables, const Tensor& seq_lens,
                       const Tensor& query_start, double scale = std::numeric_limits<double>::quiet_NaN(),
                       int64_t window = 0, double softcap = 0);

// ---- indexing and joining
/** out[i][j] = x[index[i][j]][j] for dim 0 (torch.gather). */
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** x gathered along dim by a 1-D integer index. */
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** Concatenation along dim. */
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
/** Stack along a new dim. */
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);

// ---- losses
/** Cross-entropy of logits (N, C) or (N, C, d1, ...) or (C) against class ids, or against class
 * probabilities of the input's shape; ignore_index, label_smoothing and the class weights (C) as torch
 * (with weights, "mean" over class ids divides by the summed weights of the non-ignored targets). */
Tensor cross_entropy(const Tensor& input, const Tensor& target, int64_t ignore_index = -100,
                     const std::string& reduction = "mean", double label_smoothing = 0, const Tensor& weight = {});
/** Negative log-likelihood of log-probabilities (N, C[, d...]) at target ids, each scaled by its class
 * weight (C) when given; "mean" divides by the summed weights of the non-ignored targets. */
Tensor nll_loss(const Tensor& input, const Tensor& target, int64_t ignore_index = -100,
                const std::string& reduction = "mean", const Tensor& weight = {});
/** (input - target)^2, reduced. */
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
/** |input - target|, reduced. */
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
/** -(t log p + (1 - t) log(1 - p)) with logs clamped at -100, times weight (broadcast) when given, as torch. */
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                            const Tensor& weight = {});
/** Stable BCE on logits: max(x, 0) - x t + log1p(exp(-|x|)); pos_weight scales the positive term and
 * weight (broadcast) the whole loss. */
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {},
                                        const Tensor& weight = {});

}  // namespace functional
}  // namespace genesis::nn
