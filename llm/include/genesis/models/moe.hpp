// genesis/models/moe.hpp - the sparse mixture-of-experts feed-forward block (Qwen3-MoE, HF transformers layout).
//
//   genesis::models::MoeConfig c{.hidden_size = 2048, .num_experts = 128, .num_experts_per_tok = 8,
//                                .moe_intermediate_size = 768, .norm_topk_prob = true};
//   genesis::models::SparseMoeBlock moe(c, {.dtype = genesis::bfloat16});
//   auto [y, router_logits] = moe.forward_with_router_logits(x);  // x (B, T, H) -> y (B, T, H), logits (B*T, E)
//   Tensor aux = genesis::models::load_balancing_loss({router_logits}, c.num_experts, c.num_experts_per_tok);
//
// Routing: logits = x W_gate^T (E experts), probabilities softmax(logits) in float32 (float64 for float64
// inputs), the top-k experts of each token, their probabilities renormalised to sum 1 when norm_topk_prob,
// then cast back to x's dtype.  Each expert is a SwiGLU MLP down(silu(gate(x)) * up(x)).  The tokens are grouped
// per expert (one gather of every routed token, sorted by expert), each expert runs once over its rows, the rows
// are scaled by their routing weights and summed back into their tokens with one index_add.  Everything is
// genesis tensor ops, so autograd and every backend work; the router gets its gradient through the routing
// weights.  Parameter names are HF's: gate.weight (E, H), experts.{e}.{gate,up,down}_proj.weight.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "genesis/nn/container.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/nn/module.hpp"
#include "genesis/tensor.hpp"

namespace genesis::models {

/** The shape and routing rule of a sparse MoE block (Qwen3-MoE's config.json fields). */
struct MoeConfig {
  int64_t hidden_size = 0;
  int64_t num_experts = 0;            ///< E ("num_experts", or "num_local_experts")
  int64_t num_experts_per_tok = 0;    ///< k: experts each token is routed to
  int64_t moe_intermediate_size = 0;  ///< each expert's SwiGLU width
  bool norm_topk_prob = false;        ///< renormalise the k routing weights to sum 1
  /** Throws genesis::Error naming the field when a size is not positive or k > E. */
  void validate() const;
};

/** One expert: the SwiGLU MLP down(silu(gate(x)) * up(x)), without biases. */
class MoeExpert : public nn::Module {
 public:
  /** An expert of hidden_size -> intermediate_size -> hidden_size with parameters created per factory. */
  MoeExpert(int64_t hidden_size, int64_t intermediate_size, const Options& factory);
  /** x (*, H) -> (*, H). */
  Tensor forward(const Tensor& x) override;
  /** "MoeExpert". */
  std::string name() const override { return "MoeExpert"; }
  nn::Linear gate_proj, up_proj, down_proj;
};

/** Where each token goes: the router's output for N tokens. */
struct MoeRouting {
  Tensor logits;   ///< (N, E) router logits in x's dtype (what the load-balancing loss reads)
  Tensor weights;  ///< (N, k) routing weights in x's dtype (renormalised when norm_topk_prob)
  Tensor experts;  ///< (N, k) int64 expert ids, by decreasing probability (ties: the lower id first)
};

/** The sparse MoE feed-forward block: a linear router, top-k routing and E SwiGLU experts. */
class SparseMoeBlock : public nn::Module {
 public:
  /** A block of config c with parameters created per factory (dtype, device). */
  SparseMoeBlock(const MoeConfig& c, const Options& factory = {});
  /** x (*, H) -> (*, H).  With keep_router_logits set, router_logits holds this forward's (N, E) logits. */
  Tensor forward(const Tensor& x) override;
  /** x (*, H) -> (y (*, H), router logits (N, E)), N the number of tokens in x. */
  std::pair<Tensor, Tensor> forward_with_router_logits(const Tensor& x);
  /** The router's decision for tokens x2d (N, H). */
  MoeRouting route(const Tensor& x2d);
  /** True while the experts' weights are still slices of the stacked buffers (Module::to() or a reassigned
   * parameter gives them storage of their own; the gathered path then stays off). */
  bool weights_stacked() const;
  /** "SparseMoeBlock". */
  std::string name() const override { return "SparseMoeBlock"; }

  MoeConfig config;
  nn::Linear gate;                                  ///< the router: (E, H) weight, no bias
  std::vector<std::shared_ptr<MoeExpert>> experts;  ///< registered as experts.0, experts.1, ...
  bool keep_router_logits = false;                  ///< forward() stores its router logits below
  Tensor router_logits;                             ///< the last forward's (N, E) logits (keep_router_logits)
  /** Inference (nothing recorded for backward) over at most this many (token, slot) pairs (default: E) gathers
   * each pair's expert weights from the stacked buffers and runs batched matmuls: no host synchronisation, so a
   * decode step can be captured in a graph.  0 = always group the tokens per expert. */
  int64_t gathered_max_pairs = -1;

 private:
  nn::ModuleList expert_list_;  // the experts again, registered under the name "experts"
  Tensor gate_up_, down_;       // (E, 2I, H), (E, H, I): each expert's gate/up rows and down weight are slices
};

/** The Switch-Transformer load-balancing loss over the router logits of every sparse layer (each (N, E)), as
 * transformers' load_balancing_loss_func: p = softmax(logits) over all E experts, f_e the fraction of
 * (token, slot) pairs whose top-k choice is e (mean over tokens of the top-k one-hot), P_e the mean of p_e over
 * tokens; returns E * sum_e f_e * P_e (a 0-dim tensor in float32, float64 for float64 logits).
 * attention_mask (B, T) of 0/1 (optional, N = L*B*T rows layer-major): padded tokens are left out of both means.
 * The gradient flows through P only (f is a count). */
Tensor load_balancing_loss(const std::vector<Tensor>& router_logits, int64_t num_experts, int64_t top_k,
                           const Tensor& attention_mask = {});

}  // namespace genesis::models
