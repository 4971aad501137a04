// moe.cpp - the sparse mixture-of-experts block: router, top-k routing, experts over their grouped tokens, and
// the router's load-balancing loss.
//
// Shapes: N tokens, H hidden, E experts, k experts per token, I each expert's width.
//
// Grouping.  The N*k (token, slot) pairs are sorted by expert id (a stable sort, so each expert's tokens stay in
// token order); one index_select gathers their hidden rows into an (N*k, H) matrix whose rows are contiguous per
// expert.  Each expert with at least one token runs its SwiGLU MLP once over its row block (three matmuls and the
// activation over all its tokens); the outputs are concatenated, scaled by their routing weights and summed into
// their tokens with one index_add.  The host reads only the E per-expert counts to cut the row blocks (a copy of E
// integers per layer and forward); nothing on the host loops over tokens.
//
// Gathered path.  The experts' weights are slices of two stacked buffers, gate|up (E, 2I, H) and down (E, H, I).  At
// inference over few (token, slot) pairs (a decode step: N*k <= gathered_max_pairs, E by default) each pair's
// expert weights are gathered with index_select and two batched matmuls run them; the k outputs of a token are
// summed.  Nothing is read on the host, so the step can be captured in a CUDA graph.
#include "genesis/models/moe.hpp"

#include "genesis/autograd.hpp"
#include "genesis/error.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/tensor_algorithms.hpp"

namespace genesis::models {

namespace F = nn::functional;

namespace {
// Routing math runs in float32, or float64 for float64 inputs.
DType routing_dtype(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}
}  // namespace

void MoeConfig::validate() const {
  auto positive = [](int64_t v, const char* field) {
    if (v < 1)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  std::string("[moe] ") + field + " must be at least 1, got " + std::to_string(v));
  };
  positive(hidden_size, "hidden_size");
  positive(num_experts, "num_experts");
  positive(num_experts_per_tok, "num_experts_per_tok");
  positive(moe_intermediate_size, "moe_intermediate_size");
  if (num_experts_per_tok > num_experts)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[moe] num_experts_per_tok (" + std::to_string(num_experts_per_tok) +
                                             ") exceeds num_experts (" + std::to_string(num_experts) + ")");
}

// ---------------------------------------------------------------- expert

MoeExpert::MoeExpert(int64_t hidden_size, int64_t intermediate_size, const Options& f)
    : gate_proj(hidden_size, intermediate_size, false, f),
      up_proj(hidden_size, intermediate_size, false, f),
      down_proj(intermediate_size, hidden_size, false, f) {
  register_module("gate_proj", gate_proj);
  register_module("up_proj", up_proj);
  register_module("down_proj", down_proj);
}

Tensor MoeExpert::forward(const Tensor& x) { return down_proj(F::swiglu(gate_proj(x), up_proj(x))); }

// ---------------------------------------------------------------- block

SparseMoeBlock::SparseMoeBlock(const MoeConfig& c, const Options& f)
    : config((c.validate(), c)), gate(c.hidden_size, c.num_experts, false, f) {
  register_module("gate", gate);
  const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size;
  gate_up_ = empty({E, 2 * I, H}, f);
  down_ = empty({E, H, I}, f);
  NoGradGuard no_grad;
  for (int64_t e = 0; e < E; ++e) {
    auto x = std::make_shared<MoeExpert>(H, I, f);
    // The expert's weights become slices of the stacked buffers (their values kept).
    Tensor g = gate_up_.select(0, e).slice(0, 0, I), u = gate_up_.select(0, e).slice(0, I, 2 * I),
           d = down_.select(0, e);
    if (!nn::init::skip_init()) {
      g.copy_(x->gate_proj.weight);
      u.copy_(x->up_proj.weight);
      d.copy_(x->down_proj.weight);
    }
    x->gate_proj.weight = x->gate_proj.register_parameter("weight", g);
    x->up_proj.weight = x->up_proj.register_parameter("weight", u);
    x->down_proj.weight = x->down_proj.register_parameter("weight", d);
    experts.push_back(x);
    expert_list_.push_back(x);
  }
  register_module("experts", expert_list_);
}

bool SparseMoeBlock::weights_stacked() const {
  if (!gate_up_.defined()) return false;
  const int64_t I = config.moe_intermediate_size;
  auto at = [](const Tensor& t) { return gn_tensor_data_ptr(t.handle()); };
  for (size_t e = 0; e < experts.size(); ++e) {
    const MoeExpert& x = *experts[e];
    const Tensor gu = gate_up_.select(0, static_cast<int64_t>(e)), d = down_.select(0, static_cast<int64_t>(e));
    for (const Tensor* w : {&x.gate_proj.weight, &x.up_proj.weight, &x.down_proj.weight})
      if (!w->defined() || w->dtype() != gate_up_.dtype() || !(w->device() == gate_up_.device())) return false;
    if (at(x.gate_proj.weight) != at(gu) || at(x.up_proj.weight) != at(gu.slice(0, I, 2 * I)) ||
        at(x.down_proj.weight) != at(d))
      return false;
  }
  return true;
}

MoeRouting SparseMoeBlock::route(const Tensor& x2d) {
  MoeRouting r;
  r.logits = gate(x2d);  // (N, E)
  const Tensor probs = F::softmax(r.logits.to(routing_dtype(x2d.dtype())), -1);
  auto [top, ids] = probs.topk(config.num_experts_per_tok, -1);  // (N, k), ties: the lower expert id first
  if (config.norm_topk_prob) top = top / top.sum({-1}, true);
  r.weights = top.to(x2d.dtype());
  r.experts = ids;
  return r;
}

std::pair<Tensor, Tensor> SparseMoeBlock::forward_with_router_logits(const Tensor& x) {
  const int64_t H = config.hidden_size, E = config.num_experts, K = config.num_experts_per_tok;
  if (x.dim() < 1 || x.size(-1) != H)
    throw Error(GN_ERR_SHAPE, "[moe] expected input (*, " + std::to_string(H) + "), got " + shape_str(x.shape()));
  const Shape shape = x.shape();
  const Tensor xf = x.reshape({-1, H});
  const int64_t N = xf.size(0);
  const MoeRouting r = route(xf);
  if (N == 0) return {zeros(shape, {.dtype = x.dtype(), .device = x.device()}), r.logits};

  const int64_t max_pairs = gathered_max_pairs < 0 ? E : gathered_max_pairs;
  const bool recording = autograd::in_checkpoint_forward() ||
                         (autograd::grad_enabled() && (x.requires_grad() || gate.weight.requires_grad() ||
                                                       experts[0]->gate_proj.weight.requires_grad()));
  if (gate_up_.defined() && !weights_stacked()) gate_up_ = down_ = Tensor();  // stale buffers: free their memory
  if (!recording && N * K <= max_pairs && weights_stacked()) {
    // Each (token, slot) pair with its expert's weights: (N*k, 2I, H) @ (N*k, H, 1), then (N*k, H, I) @ (N*k, I, 1).
    const int64_t I = config.moe_intermediate_size;
    const Tensor ids = r.experts.reshape({-1});
    const Tensor rows = xf.unsqueeze(1).expand({N, K, H}).reshape({N * K, H, 1});
    const Tensor gu = gate_up_.index_select(0, ids).matmul(rows).reshape({N * K, 2 * I});
    const Tensor h = F::swiglu(gu.slice(1, 0, I), gu.slice(1, I, 2 * I)).reshape({N * K, I, 1});
    const Tensor y = down_.index_select(0, ids).matmul(h).reshape({N, K, H}) * r.weights.unsqueeze(2);
    return {y.sum({1}).reshape(shape), r.logits};
  }

  // The (token, slot) pairs sorted by expert: row j of the grouped matrix is token tokens[j] for expert
  // sorted_experts[j] with weight weights[j].
  const Tensor flat = r.experts.reshape({-1});  // (N*k)
  const Tensor order = flat.argsort(0);         // stable
  const Tensor tokens = arange(static_cast<double>(N), {.dtype = DType::i64, .device = x.device()})
                            .unsqueeze(1)
                            .expand({N, K})
                            .reshape({-1})
                            .index_select(0, order);
  const Tensor weights = r.weights.reshape({-1}).index_select(0, order);  // (N*k)
  const Tensor rows = xf.index_select(0, tokens);                         // (N*k, H), grouped by expert
  const std::vector<double> counts = bincount(flat, Tensor(), E).to(Device("cpu")).tolist();

  std::vector<Tensor> outs;
  int64_t at = 0;
  for (int64_t e = 0; e < E; ++e) {
    const auto n = static_cast<int64_t>(counts[static_cast<size_t>(e)]);
    if (n == 0) continue;
    outs.push_back(experts[static_cast<size_t>(e)]->forward(rows.slice(0, at, at + n)));
    at += n;
  }
  const Tensor y = (outs.size() == 1 ? outs[0] : F::cat(outs, 0)) * weights.unsqueeze(1);  // (N*k, H)
  const Tensor out = index_add(zeros({N, H}, {.dtype = x.dtype(), .device = x.device()}), 0, tokens, y);
  return {out.reshape(shape), r.logits};
}

Tensor SparseMoeBlock::forward(const Tensor& x) {
  auto [y, logits] = forward_with_router_logits(x);
  router_logits = keep_router_logits ? logits : Tensor();
  return y;
}

// ---------------------------------------------------------------- load-balancing loss

Tensor load_balancing_loss(const std::vector<Tensor>& router_logits, int64_t num_experts, int64_t top_k,
                           const Tensor& attention_mask) {
  if (router_logits.empty())
    throw Error(GN_ERR_INVALID_ARGUMENT, "[moe] load_balancing_loss needs the router logits of at least one layer");
  if (top_k < 1 || top_k > num_experts)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[moe] load_balancing_loss: top_k " + std::to_string(top_k) +
                                             " outside [1, num_experts = " + std::to_string(num_experts) + "]");
  const Device dev = router_logits[0].device();
  std::vector<Tensor> parts;
  for (const Tensor& l : router_logits) {
    if (l.dim() != 2 || l.size(1) != num_experts)
      throw Error(GN_ERR_SHAPE, "[moe] load_balancing_loss: router logits must be (N, " + std::to_string(num_experts) +
                                    "), got " + shape_str(l.shape()));
    parts.push_back(l.to(dev));
  }
  const Tensor logits = parts.size() == 1 ? parts[0] : F::cat(parts, 0);  // (M, E)
  const DType rd = routing_dtype(logits.dtype());
  const Tensor p = F::softmax(logits.to(rd), -1);                               // (M, E)
  const Tensor chosen = one_hot(p.topk(top_k, -1).second, num_experts).to(rd);  // (M, k, E)
  Tensor tokens_per_expert, prob_per_expert;                                    // (k, E), (E)
  if (!attention_mask.defined()) {
    tokens_per_expert = chosen.mean({0});
    prob_per_expert = p.mean({0});
  } else {
    const int64_t M = logits.size(0), BT = attention_mask.numel();
    if (attention_mask.dim() != 2 || BT == 0 || M % BT != 0)
      throw Error(GN_ERR_SHAPE, "[moe] load_balancing_loss: attention_mask must be (B, T) with the router logits' " +
                                    std::to_string(M) + " rows a multiple of B*T, got " +
                                    shape_str(attention_mask.shape()));
    const Tensor m = attention_mask.to(dev).to(rd).reshape({1, BT}).expand({M / BT, BT}).reshape({M});
    const Tensor count = m.sum();
    tokens_per_expert = (chosen * m.reshape({M, 1, 1})).sum({0}) / count;
    prob_per_expert = (p * m.reshape({M, 1})).sum({0}) / count;
  }
  return (tokens_per_expert * prob_per_expert.unsqueeze(0)).sum() * static_cast<double>(num_experts);
}

}  // namespace genesis::models
