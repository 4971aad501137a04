// functional.cpp - genesis::nn::functional: fused ops recorded for autograd
// (their rules are in autograd/rules.cpp) and compositions of Tensor ops.
#include "genesis/nn/functional.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../autograd/rules.h"
#include "../internal.h"
#include "genesis/random.hpp"

namespace genesis::nn::functional {

using autograd::record;
using detail::call;
using detail::call1;
namespace R = autograd::rules;

namespace {

Error invalid(const char* op, const std::string& msg) {
  return Error(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] " + msg);
}

// 0 none, 1 mean, 2 sum (the fused ops' reduction attribute).
int64_t reduction_code(const char* op, const std::string& r) {
  if (r == "none") return 0;
  if (r == "mean") return 1;
  if (r == "sum") return 2;
  throw invalid(op, "reduction must be \"none\", \"mean\" or \"sum\", got \"" + r + "\"");
}

// Applies a reduction to an elementwise loss.
Tensor reduce(const char* op, const Tensor& loss, const std::string& r) {
  switch (reduction_code(op, r)) {
    case 0: return loss;
    case 1: return loss.mean();
    default: return loss.sum();
  }
}

// Moves dim 1 (classes) last: (N, C, d1, ...) -> (N, d1, ..., C).
Tensor classes_last(const Tensor& x) {
  if (x.dim() <= 2) return x;
  Shape perm = {0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return x.permute(perm);
}

}  // namespace

// ------------------------------------------------------------- activations

Tensor relu(const Tensor& x) { return x.relu(); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw invalid("gelu", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return x.gelu(approximate == "tanh");
}
Tensor silu(const Tensor& x) { return x.silu(); }
Tensor tanh(const Tensor& x) { return x.tanh(); }
Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }
Tensor dropout(const Tensor& x, double p, bool training) { return genesis::dropout(x, p, training); }

Tensor swiglu(const Tensor& gate_, const Tensor& up_) {
  Tensor gate = gate_, up = up_;
  Tensor y = call1(GN_OP_HANDLE("swiglu"), {&gate, &up});
  if (auto n = record("swiglu", R::swiglu, {gate, up}, y)) {
    n->save("gate", gate.detach());
    n->save("up", up.detach());
  }
  return y;
}

// ----------------------------------------------- linear, conv and pooling

Tensor linear(const Tensor& x_, const Tensor& weight_, const Tensor& bias_) {
  Tensor x = x_, weight = weight_, bias = bias_;
  GN_AUTOCAST("linear", &x, &weight, &bias);  // AMP hook
  if (weight.dim() != 2) throw invalid("linear", "weight must be 2-D (out_features, in_features)");
  // Nothing to record (inference) and one dtype: the linear op, whose backends add the bias
  // inside the product's epilogue where they can (one kernel fewer per projection).
  const bool needs_grad = autograd::grad_enabled() &&
                          (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (bias.defined() && !needs_grad && is_floating(x.dtype()) && weight.dtype() == x.dtype() &&
      bias.dtype() == x.dtype() && bias.dim() == 1)
    return call1(GN_OP_HANDLE("linear"), {&x, &weight, &bias});
  // One matmul with trans_b (no transposed view of the weight): (*, in) @ (out, in)^T.
  Tensor y = call1(GN_OP_HANDLE("matmul"), {&x, &weight}, {gn_attr_int(0), gn_attr_int(1)});
  if (auto n = record("linear", R::linear, {x, weight}, y)) {
    n->save("x", x.detach());
    n->save("w", weight.detach());
  }
  return bias.defined() ? y + bias : y;
}

Tensor embedding(const Tensor& ids, const Tensor& weight) { return genesis::embedding(weight, ids); }

Tensor conv2d(const Tensor& x_, const Tensor& weight_, const Tensor& bias_, IntPair stride, IntPair padding,
              IntPair dilation, int64_t groups) {
  Tensor x = x_, weight = weight_, bias = bias_;
  GN_AUTOCAST("conv2d", &x, &weight, &bias);  // AMP hook
  std::vector<int64_t> a = {stride.h, stride.w, padding.h, padding.w, dilation.h, dilation.w, groups};
  std::vector<Tensor> in = {x, weight};
  if (bias.defined()) in.push_back(bias);
  const gn_op* op = GN_OP_HANDLE("conv2d");
  const auto attrs = {gn_attr_ints(&a[0], 2), gn_attr_ints(&a[2], 2), gn_attr_ints(&a[4], 2), gn_attr_int(groups)};
  Tensor y = std::move(call(op, in, attrs, 1)[0]);
  if (auto n = record("conv2d", R::conv2d, in, y)) {
    n->save("x", x.detach());
    n->save("w", weight.detach());
    n->keep_attrs(op, attrs);
  }
  return y;
}

Tensor max_pool2d(const Tensor& x, IntPair kernel, std::optional<IntPair> stride_, IntPair padding, IntPair dilation,
                  bool ceil_mode) {
  IntPair stride = stride_.value_or(kernel);
  std::vector<int64_t> a = {kernel.h,  kernel.w,   stride.h,   stride.w,         padding.h,
                            padding.w, dilation.h, dilation.w, ceil_mode ? 1 : 0};
  const gn_op* op = GN_OP_HANDLE("max_pool2d");
  const auto attrs = {gn_attr_ints(&a[0], 2), gn_attr_ints(&a[2], 2), gn_attr_ints(&a[4], 2), gn_attr_ints(&a[6], 2),
                      gn_attr_int(a[8])};
  auto out = call(op, {&x}, attrs, 2);
  if (auto n = record("max_pool2d", R::max_pool2d, {x}, out[0])) {
    n->save("x", x.detach());
    n->save("indices", out[1]);
    n->keep_attrs(op, attrs);
  }
  return out[0];
}

Tensor avg_pool2d(const Tensor& x, IntPair kernel, std::optional<IntPair> stride_, IntPair padding, bool ceil_mode,
                  bool count_include_pad) {
  IntPair stride = stride_.value_or(kernel);
  std::vector<int64_t> a = {kernel.h,  kernel.w,  stride.h,          stride.w,
                            padding.h, padding.w, ceil_mode ? 1 : 0, count_include_pad ? 1 : 0};
  const gn_op* op = GN_OP_HANDLE("avg_pool2d");
  const auto attrs = {gn_attr_ints(&a[0], 2), gn_attr_ints(&a[2], 2), gn_attr_ints(&a[4], 2), gn_attr_int(a[6]),
                      gn_attr_int(a[7])};
  Tensor y = call1(op, {&x}, attrs);
  if (auto n = record("avg_pool2d", R::avg_pool2d, {x}, y)) {
    n->save("x", x.detach());
    n->keep_attrs(op, attrs);
  }
  return y;
}

// ------------------------------------------------ attention and norms

Tensor scaled_dot_product_attention(const Tensor& q_, const Tensor& k_, const Tensor& v_, const Tensor& mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale) {
  if (dropout_p != 0) throw Error(GN_ERR_UNSUPPORTED, "[scaled_dot_product_attention] dropout_p > 0 is not supported");
  if (is_causal && mask.defined())
    throw invalid("scaled_dot_product_attention", "give either attn_mask or is_causal, not both");
  Tensor q = q_, k = k_, v = v_;
  GN_AUTOCAST("scaled_dot_product_attention", &q, &k, &v);  // AMP hook
  const bool three_d = q.dim() == 3;                        // (H, S, D): add a batch dim for the fused op
  if (three_d) {
    q = q.unsqueeze(0);
    k = k.unsqueeze(0);
    v = v.unsqueeze(0);
  }
  if (q.dim() != 4)
    throw invalid("scaled_dot_product_attention", "q must be 3-D or 4-D, got rank " + std::to_string(q_.dim()));
  std::vector<Tensor> in = {q, k, v};
  if (mask.defined()) in.push_back(mask);
  const double sc = scale ? *scale : std::nan("");
  const gn_op* op = GN_OP_HANDLE("scaled_dot_product_attention");
  const auto attrs = {gn_attr_int(is_causal ? 1 : 0), gn_attr_float(sc)};
  auto out = call(op, in, attrs, 2);
  if (auto n = record("scaled_dot_product_attention", R::sdpa, in, out[0])) {
    n->save("q", q.detach());
    n->save("k", k.detach());
    n->save("v", v.detach());
    n->save("out", out[0].detach());
    n->save("lse", out[1]);
    if (mask.defined()) n->save("mask", mask.detach());
    n->keep_attrs(op, attrs);
  }
  return three_d ? out[0].squeeze(0) : out[0];
}

std::pair<Tensor, Tensor> add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps) {
  auto out = detail::call(GN_OP_HANDLE("add_rms_norm"), {&x, &residual, &weight}, {gn_attr_float(eps)}, 2);
  return {out[0], out[1]};
}

Tensor linear_swiglu(const Tensor& x, const Tensor& gate_up_weight) {
  return call1(GN_OP_HANDLE("linear_swiglu"), {&x, &gate_up_weight});
}

void kv_cache_write_(const Tensor& cache, const Tensor& src, const Tensor& write_pos) {
  call1(GN_OP_HANDLE("kv_cache_write_"), {&cache, &src, &write_pos});
}

void paged_kv_write_(const Tensor& pool, const Tensor& kv, const Tensor& slots) {
  call1(GN_OP_HANDLE("paged_kv_write_"), {&pool, &kv, &slots});
}

Tensor paged_attention(const Tensor& q, const Tensor& pool, const Tensor& block_tables, const Tensor& seq_lens,
                       const Tensor& query_start, double scale, int64_t window, double softcap) {
  return call1(GN_OP_HANDLE("paged_attention"), {&q, &pool, &block_tables, &seq_lens, &query_start},
               {gn_attr_float(scale), gn_attr_int(window), gn_attr_float(softcap)});
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  Tensor y = call1(GN_OP_HANDLE("rope"), {&x, &cos, &sin});
  if (auto n = record("rope", R::rope, {x, cos, sin}, y)) {
    n->save("cos", cos.detach());
    n->save("sin", sin.detach());
  }
  return y;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  const Shape xs = x.shape();
  if (nd == 0 || nd > x.dim() || !std::equal(normalized_shape.begin(), normalized_shape.end(), xs.end() - nd))
    throw invalid("layer_norm", "normalized_shape does not match the input's trailing dims");
  return genesis::layer_norm(x, weight, bias, nd, eps);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  if (normalized_shape.size() != 1 || x.dim() == 0 || x.size(-1) != normalized_shape[0])
    throw Error(GN_ERR_UNSUPPORTED, "[rms_norm] normalized_shape must be the last dim of the input");
  double e = x.dtype() == DType::f64    ? 2.220446049250313e-16
             : x.dtype() == DType::f16  ? 0.0009765625
             : x.dtype() == DType::bf16 ? 0.0078125
                                        : 1.1920928955078125e-07;
  return genesis::rms_norm(x, weight, eps.value_or(e));
}

// --------------------------------------------------- indexing and joining

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); }

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return x.index_select(dim, index); }

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) throw invalid("cat", "expects at least one tensor");
  const int64_t d = detail::wrap_dim(dim, xs[0].dim());
  const gn_op* op = GN_OP_HANDLE("cat");
  Tensor y = std::move(call(op, xs, {gn_attr_int(d)}, 1)[0]);
  if (auto n = record("cat", R::cat, xs, y)) n->keep_attrs(op, {gn_attr_int(d)});
  return y;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) throw invalid("stack", "expects at least one tensor");
  const int64_t d = detail::wrap_dim(dim, xs[0].dim() + 1);
  const gn_op* op = GN_OP_HANDLE("stack");
  Tensor y = std::move(call(op, xs, {gn_attr_int(d)}, 1)[0]);
  if (auto n = record("stack", R::stack, xs, y)) n->keep_attrs(op, {gn_attr_int(d)});
  return y;
}

// ------------------------------------------------------------------ losses

namespace {

// Class weights (C) shaped to broadcast along the class dim of a (N, C, d...) or (C) input.
Tensor class_weight_view(const char* op, const Tensor& weight, const Tensor& input) {
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  if (weight.dim() != 1 || weight.size(0) != input.size(cdim))
    throw invalid(op, "weight must be 1-D with one entry per class (" + std::to_string(input.size(cdim)) + ")");
  Shape s(static_cast<size_t>(input.dim()), 1);
  s[cdim] = weight.size(0);
  return weight.reshape(s);
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, int64_t ignore_index, const std::string& reduction,
                     double label_smoothing, const Tensor& weight) {
  const int64_t r = reduction_code("cross_entropy", reduction);
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  if (is_floating(target.dtype())) {  // class probabilities, same shape as input
    if (target.shape() != input.shape())
      throw invalid("cross_entropy", "probability target must have the input's shape");
    const double C = static_cast<double>(input.size(cdim));
    Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / C : target;
    if (weight.defined()) t = t * class_weight_view("cross_entropy", weight, input);
    Tensor loss = -(input.log_softmax(cdim) * t).sum(cdim);
    if (r == 1) return loss.sum() / static_cast<double>(input.numel() / static_cast<int64_t>(C));
    return r == 2 ? loss.sum() : loss;
  }
  if (!weight.defined()) return genesis::cross_entropy(classes_last(input), target, ignore_index, label_smoothing, r);
  // Class weights: composed from log_softmax and the weighted nll_loss (torch's formula).
  Tensor logp = input.log_softmax(cdim);
  Tensor nll = nll_loss(logp, target, ignore_index, reduction, weight);
  if (label_smoothing <= 0) return nll;
  // The smoothing term -sum_c w_c log p_c per target, zero where ignored; "mean" divides by the
  // summed weights of the non-ignored targets, as nll_loss does.
  const int64_t C = input.size(cdim);
  Tensor ignored = target == ignore_index;
  Tensor smooth = (-(logp * class_weight_view("cross_entropy", weight, input)).sum(cdim)).masked_fill(ignored, 0);
  Tensor term;
  if (r == 0) {
    term = smooth;
  } else if (r == 2) {
    term = smooth.sum();
  } else {
    Tensor t = target.reshape({-1});
    Tensor valid = (t != ignore_index).to(weight.dtype());
    term = smooth.sum() / (weight.index_select(0, where(t != ignore_index, t, zeros_like(t))) * valid).sum();
  }
  return nll * (1 - label_smoothing) + term * (label_smoothing / static_cast<double>(C));
}

Tensor nll_loss(const Tensor& input, const Tensor& target, int64_t ignore_index, const std::string& reduction,
                const Tensor& weight) {
  const int64_t r = reduction_code("nll_loss", reduction);
  if (weight.defined()) class_weight_view("nll_loss", weight, input);  // checks the weight's shape
  Tensor x = classes_last(input);                                      // (..., C)
  const Shape out_shape = target.shape();
  x = x.reshape({-1, x.size(-1)});
  Tensor t = target.reshape({-1});
  Tensor valid = t != ignore_index;
  Tensor safe = where(valid, t, zeros_like(t));
  Tensor picked = gather(x, 1, safe.unsqueeze(1)).squeeze(1);  // (M,)
  // Each target's weight: its class weight, 0 when ignored.
  Tensor w = valid.to(picked.dtype());
  if (weight.defined()) w = w * weight.to(picked.dtype()).index_select(0, safe);
  Tensor loss = -picked * w;
  if (r == 0) return loss.reshape(out_shape);
  if (r == 2) return loss.sum();
  return loss.sum() / w.sum();
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return reduce("mse_loss", (input - target).square(), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  return reduce("l1_loss", (input - target).abs(), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const std::string& reduction,
                            const Tensor& weight) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor log_p = input.log().clamp(-100, inf), log_q = (1 - input).log().clamp(-100, inf);
  Tensor loss = -(target * log_p + (1 - target) * log_q);
  return reduce("binary_cross_entropy", weight.defined() ? loss * weight : loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& t, const std::string& reduction,
                                        const Tensor& pos_weight, const Tensor& weight) {
  // log(1 + exp(-|x|)) + max(-x, 0) = softplus(-x), computed without overflow.
  Tensor softplus_neg = (-x.abs()).exp().log1p() + (-x).relu();
  Tensor loss =
      pos_weight.defined() ? (1 - t) * x + (1 + (pos_weight - 1) * t) * softplus_neg : (1 - t) * x + softplus_neg;
  if (weight.defined()) loss = loss * weight;
  return reduce("binary_cross_entropy_with_logits", loss, reduction);
}

}  // namespace genesis::nn::functional
