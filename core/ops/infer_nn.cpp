// core/ops/infer_nn.cpp - inference of the linear algebra and fused nn ops:
// matmul, bmm, layer/RMS norm, rope, SwiGLU, cross entropy, attention (each
// with its backward).  Statistics outputs (mean, rstd, lse) are float32, or
// float64 when the computation is in float64.
#include <algorithm>
#include <utility>

#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// dtype of saved statistics for a computation in `dt`.
int32_t stat_dtype(int32_t dt) { return dt == GN_F64 ? GN_F64 : GN_F32; }

// An int attribute that must be one of 0..hi.
int64_t enum_attr(const Args& a, size_t i, const char* name, int64_t hi, const char* meaning) {
  const int64_t v = a.attr_int(i);
  if (v < 0 || v > hi)
    fail(GN_ERR_INVALID_ARGUMENT, std::string(name) + " must be " + meaning + ", got " + std::to_string(v));
  return v;
}

// Either operand of a matrix product must not be bool.
void no_bool_operands(const gn_tensor_meta& x, const gn_tensor_meta& y) {
  if (x.dtype == GN_BOOL || y.dtype == GN_BOOL)
    fail(GN_ERR_DTYPE, std::string("bool operands are not supported (got ") + dtype_str(x.dtype) + " and " +
                           dtype_str(y.dtype) + ")");
}

// " with trans_a" / " with trans_a and trans_b" for messages.
std::string trans_note(bool ta, bool tb) {
  if (ta && tb) return " with trans_a and trans_b";
  if (ta) return " with trans_a";
  if (tb) return " with trans_b";
  return "";
}

// The normalized shape x.shape[-n:] of layer_norm after checking n.
int64_t normalized_ndim(const Args& a, size_t attr, const gn_tensor_meta& x) {
  const int64_t n = a.attr_int(attr);
  if (n < 1 || n > x.ndim)
    fail(GN_ERR_INVALID_ARGUMENT, "normalized_ndim " + std::to_string(n) + " must be in [1, " + std::to_string(x.ndim) +
                                      "] for input shape " + shape_str(x));
  return n;
}

// Input i (if present) must have shape d; `what` describes d in the message.
void need_shape(const gn_tensor_meta& t, const Dims& d, const char* role, const char* what) {
  if (!same_shape(t, d))
    fail(GN_ERR_SHAPE, std::string(role) + " shape " + shape_str(t) + " must equal " + what + " " + dims_str(d));
}

}  // namespace

// matmul(a, b): torch.matmul.  1-D a is (1, K) and 1-D b is (K, 1), the
// added dim dropped from the result; batch dims (all but the last two)
// broadcast.  trans_a/trans_b swap the last two dims of a 2-D+ operand first.
GN_DEFINE_INFER(matmul) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& y = a.at(1);
  const bool ta = enum_attr(a, 0, "trans_a", 1, "0 or 1") != 0;
  const bool tb = enum_attr(a, 1, "trans_b", 1, "0 or 1") != 0;
  if (x.ndim < 1 || y.ndim < 1)
    fail(GN_ERR_SHAPE, "both operands must be at least 1-D, got " + shape_str(x) + " @ " + shape_str(y));
  if (ta && x.ndim < 2) fail(GN_ERR_INVALID_ARGUMENT, "trans_a needs a 2-D or larger a, got " + shape_str(x));
  if (tb && y.ndim < 2) fail(GN_ERR_INVALID_ARGUMENT, "trans_b needs a 2-D or larger b, got " + shape_str(y));
  no_bool_operands(x, y);
  // a: (..., M, K1); b: (..., K2, N).
  int64_t m = 1, k1 = 0, k2 = 0, n = 1;
  if (x.ndim == 1) {
    k1 = x.shape[0];
  } else {
    m = x.shape[x.ndim - 2];
    k1 = x.shape[x.ndim - 1];
    if (ta) std::swap(m, k1);
  }
  if (y.ndim == 1) {
    k2 = y.shape[0];
  } else {
    k2 = y.shape[y.ndim - 2];
    n = y.shape[y.ndim - 1];
    if (tb) std::swap(k2, n);
  }
  if (k1 != k2)
    fail(GN_ERR_SHAPE, "inner dimensions differ: " + shape_str(x) + " @ " + shape_str(y) + trans_note(ta, tb));
  gn_tensor_meta bx{}, by{}, batch{};
  bx.ndim = x.ndim > 2 ? x.ndim - 2 : 0;
  by.ndim = y.ndim > 2 ? y.ndim - 2 : 0;
  std::copy(x.shape, x.shape + bx.ndim, bx.shape);
  std::copy(y.shape, y.shape + by.ndim, by.shape);
  if (!broadcast_shapes(bx, by, &batch))
    fail(GN_ERR_SHAPE, "batch dimensions " + shape_str(bx) + " and " + shape_str(by) +
                           " cannot be broadcast: " + shape_str(x) + " @ " + shape_str(y));
  Dims out = dims_of(batch);
  if (x.ndim >= 2) out.push(m);
  if (y.ndim >= 2) out.push(n);
  const int32_t dt = promote_types(x.dtype, y.dtype);
  a.cast_inputs(0, 2, dt);
  a.set_outputs(dt, {make_meta(dt, out)});
}

// bmm(a (B,M,K), b (B,K,N)) -> (B,M,N); trans_a: a is (B,K,M); trans_b: b is (B,N,K).
GN_DEFINE_INFER(bmm) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& y = a.at(1);
  const bool ta = enum_attr(a, 0, "trans_a", 1, "0 or 1") != 0;
  const bool tb = enum_attr(a, 1, "trans_b", 1, "0 or 1") != 0;
  if (x.ndim != 3 || y.ndim != 3)
    fail(GN_ERR_SHAPE, "both operands must be 3-D, got " + shape_str(x) + " @ " + shape_str(y));
  no_bool_operands(x, y);
  if (x.shape[0] != y.shape[0]) fail(GN_ERR_SHAPE, "batch sizes differ: " + shape_str(x) + " @ " + shape_str(y));
  const int64_t m = ta ? x.shape[2] : x.shape[1], k1 = ta ? x.shape[1] : x.shape[2];
  const int64_t k2 = tb ? y.shape[2] : y.shape[1], n = tb ? y.shape[1] : y.shape[2];
  if (k1 != k2)
    fail(GN_ERR_SHAPE, "inner dimensions differ: " + shape_str(x) + " @ " + shape_str(y) + trans_note(ta, tb));
  const int32_t dt = promote_types(x.dtype, y.dtype);
  a.cast_inputs(0, 2, dt);
  a.set_outputs(dt, {make_meta(dt, dims_of({x.shape[0], m, n}))});
}

// layer_norm(x, [weight, [bias]]) -> (y, mean, rstd) over the last n dims.
GN_DEFINE_INFER(layer_norm) {
  a.need_inputs(1, 3);
  const gn_tensor_meta& x = a.at(0);
  need_float(x, "input");
  const int64_t n = normalized_ndim(a, 0, x);
  const double eps = a.attr_float(1);
  if (!(eps >= 0)) fail(GN_ERR_INVALID_ARGUMENT, "eps must be >= 0, got " + num_str(eps));
  const int lead = x.ndim - static_cast<int>(n);
  const Dims norm = dims_of(x, lead, x.ndim);
  if (a.n_in > 1) need_shape(a.at(1), norm, "weight", "the normalized shape");
  if (a.n_in > 2) need_shape(a.at(2), norm, "bias", "the normalized shape");
  a.cast_inputs(1, a.n_in - 1, x.dtype);
  const Dims stats = dims_of(x, 0, lead);
  a.set_outputs(x.dtype,
                {like(x, x.dtype), make_meta(stat_dtype(x.dtype), stats), make_meta(stat_dtype(x.dtype), stats)});
}

// layer_norm_backward(grad_y, x, mean, rstd, [weight]) -> (grad_x, grad_w, grad_b).
GN_DEFINE_INFER(layer_norm_backward) {
  a.need_inputs(4, 5);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& x = a.at(1);
  need_float(x, "x");
  const int64_t n = normalized_ndim(a, 0, x);
  if (!same_shape(g, x)) fail(GN_ERR_SHAPE, "grad_y shape " + shape_str(g) + " must equal x shape " + shape_str(x));
  const int lead = x.ndim - static_cast<int>(n);
  const Dims stats = dims_of(x, 0, lead), norm = dims_of(x, lead, x.ndim);
  need_shape(a.at(2), stats, "mean", "x.shape[:-normalized_ndim]");
  need_shape(a.at(3), stats, "rstd", "x.shape[:-normalized_ndim]");
  need_float(a.at(2), "mean");
  need_float(a.at(3), "rstd");
  if (a.n_in > 4) {
    need_shape(a.at(4), norm, "weight", "the normalized shape");
    a.cast_input(4, x.dtype);
  }
  a.cast_input(0, x.dtype);
  a.set_outputs(x.dtype, {like(x, x.dtype), make_meta(x.dtype, norm), make_meta(x.dtype, norm)});
}

// rms_norm(x, [weight (D)]) -> (y, rstd (x.shape[:-1])).
GN_DEFINE_INFER(rms_norm) {
  a.need_inputs(1, 2);
  const gn_tensor_meta& x = a.at(0);
  need_float(x, "input");
  if (x.ndim < 1) fail(GN_ERR_SHAPE, "input must have at least 1 dim, got shape " + shape_str(x));
  const double eps = a.attr_float(0);
  if (!(eps >= 0)) fail(GN_ERR_INVALID_ARGUMENT, "eps must be >= 0, got " + num_str(eps));
  if (a.n_in > 1) {
    need_shape(a.at(1), dims_of(x, x.ndim - 1, x.ndim), "weight", "the last dim of x");
    a.cast_input(1, x.dtype);
  }
  a.set_outputs(x.dtype, {like(x, x.dtype), make_meta(stat_dtype(x.dtype), dims_of(x, 0, x.ndim - 1))});
}

// rms_norm_backward(grad_y, x, rstd, [weight]) -> (grad_x, grad_weight (D)).
GN_DEFINE_INFER(rms_norm_backward) {
  a.need_inputs(3, 4);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& x = a.at(1);
  need_float(x, "x");
  if (x.ndim < 1) fail(GN_ERR_SHAPE, "x must have at least 1 dim, got shape " + shape_str(x));
  if (!same_shape(g, x)) fail(GN_ERR_SHAPE, "grad_y shape " + shape_str(g) + " must equal x shape " + shape_str(x));
  need_shape(a.at(2), dims_of(x, 0, x.ndim - 1), "rstd", "x.shape[:-1]");
  need_float(a.at(2), "rstd");
  const Dims last = dims_of(x, x.ndim - 1, x.ndim);
  if (a.n_in > 3) {
    need_shape(a.at(3), last, "weight", "the last dim of x");
    a.cast_input(3, x.dtype);
  }
  a.cast_input(0, x.dtype);
  a.set_outputs(x.dtype, {like(x, x.dtype), make_meta(x.dtype, last)});
}

// rope(x (..., D), cos, sin) and rope_backward(grad_y, cos, sin): D even,
// cos/sin broadcast to x's shape and are cast to x's dtype.
GN_DEFINE_INFER(rope) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& x = a.at(0);
  const char* role = a.op() == "rope_backward" ? "grad_y" : "x";
  need_float(x, role);
  if (x.ndim < 1) fail(GN_ERR_SHAPE, std::string(role) + " must have at least 1 dim, got shape " + shape_str(x));
  if (x.shape[x.ndim - 1] % 2 != 0)
    fail(GN_ERR_SHAPE, "the last dim of " + std::string(role) + " must be even, got shape " + shape_str(x));
  const char* names[] = {"cos", "sin"};
  for (size_t i = 1; i <= 2; ++i) {
    gn_tensor_meta b{};
    if (!broadcast_shapes(x, a.at(i), &b) || !same_shape(b, x))
      fail(GN_ERR_SHAPE, std::string(names[i - 1]) + " of shape " + shape_str(a.at(i)) + " does not broadcast to " +
                             role + " shape " + shape_str(x));
    a.cast_input(i, x.dtype);
  }
  a.set_outputs(x.dtype, {like(x, x.dtype)});
}

// swiglu(gate, up) -> silu(gate)*up: same shapes, float, promoted.
GN_DEFINE_INFER(swiglu) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& gate = a.at(0);
  const gn_tensor_meta& up = a.at(1);
  need_float(gate, "gate");
  need_float(up, "up");
  if (!same_shape(gate, up))
    fail(GN_ERR_SHAPE, "gate shape " + shape_str(gate) + " must equal up shape " + shape_str(up));
  const int32_t dt = promote_types(gate.dtype, up.dtype);
  a.cast_inputs(0, 2, dt);
  a.set_outputs(dt, {like(gate, dt)});
}

// swiglu_backward(grad, gate, up) -> (grad_gate, grad_up) in promote(gate, up);
// grad is cast to it (gradients take their inputs' dtype).
GN_DEFINE_INFER(swiglu_backward) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& gate = a.at(1);
  const gn_tensor_meta& up = a.at(2);
  need_float(g, "grad");
  need_float(gate, "gate");
  need_float(up, "up");
  if (!same_shape(gate, up) || !same_shape(g, gate))
    fail(GN_ERR_SHAPE, "grad " + shape_str(g) + ", gate " + shape_str(gate) + " and up " + shape_str(up) +
                           " must have the same shape");
  const int32_t dt = promote_types(gate.dtype, up.dtype);
  a.cast_inputs(0, 3, dt);
  a.set_outputs(dt, {like(gate, dt), like(gate, dt)});
}

namespace {

// Checks shared by cross_entropy and its backward; returns the reduction.
int64_t check_cross_entropy(const Args& a, const gn_tensor_meta& logits, const gn_tensor_meta& target) {
  need_float(logits, "logits");
  if (logits.ndim < 1)
    fail(GN_ERR_SHAPE, "logits must have at least 1 dim (classes last), got shape " + shape_str(logits));
  if (target.dtype != GN_I32 && target.dtype != GN_I64)
    fail(GN_ERR_DTYPE, std::string("target must be int32 or int64 class indices, got ") + dtype_str(target.dtype));
  need_shape(target, dims_of(logits, 0, logits.ndim - 1), "target", "the logits shape without the class dim");
  const double ls = a.attr_float(1);
  if (!(ls >= 0 && ls <= 1)) fail(GN_ERR_INVALID_ARGUMENT, "label_smoothing must be in [0, 1], got " + num_str(ls));
  return enum_attr(a, 2, "reduction", 2, "0 (none), 1 (mean) or 2 (sum)");
}

}  // namespace

// cross_entropy(logits (*, C), target (*) int) -> (loss, lse (*)).
GN_DEFINE_INFER(cross_entropy) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& logits = a.at(0);
  const gn_tensor_meta& target = a.at(1);
  const int64_t reduction = check_cross_entropy(a, logits, target);
  const Dims rows = dims_of(target);
  a.set_outputs(logits.dtype,
                {make_meta(logits.dtype, reduction == 0 ? rows : Dims{}), make_meta(stat_dtype(logits.dtype), rows)});
}

// cross_entropy_backward(grad_loss, logits, target, lse) -> grad_logits;
// grad_loss (cast to the logits dtype) has the loss shape of the reduction.
GN_DEFINE_INFER(cross_entropy_backward) {
  a.need_inputs(4, 4);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& logits = a.at(1);
  const gn_tensor_meta& target = a.at(2);
  const gn_tensor_meta& lse = a.at(3);
  const int64_t reduction = check_cross_entropy(a, logits, target);
  need_shape(lse, dims_of(target), "lse", "the target shape");
  need_float(lse, "lse");
  need_float(g, "grad_loss");
  if (reduction == 0)
    need_shape(g, dims_of(target), "grad_loss", "the loss shape (reduction 0)");
  else
    need_shape(g, Dims{}, "grad_loss", "the loss shape for a reduced loss");
  a.cast_input(0, logits.dtype);
  a.set_outputs(logits.dtype, {like(logits, logits.dtype)});
}

namespace {

// Validates q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv) at inputs
// [first, first+3), causal/scale and an optional mask at input mask_i;
// returns promote(q, k, v).
int32_t check_attention(const Args& a, size_t first, size_t mask_i) {
  const gn_tensor_meta& q = a.at(first);
  const gn_tensor_meta& k = a.at(first + 1);
  const gn_tensor_meta& v = a.at(first + 2);
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4)
    fail(GN_ERR_SHAPE,
         "q, k and v must be 4-D (B, H, S, D), got q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v));
  need_float(q, "q");
  need_float(k, "k");
  need_float(v, "v");
  if (q.shape[0] != k.shape[0] || q.shape[0] != v.shape[0])
    fail(GN_ERR_SHAPE, "batch sizes differ: q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v));
  if (k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2])
    fail(GN_ERR_SHAPE, "k " + shape_str(k) + " and v " + shape_str(v) + " must agree in heads and sequence length");
  if (q.shape[3] != k.shape[3])
    fail(GN_ERR_SHAPE, "q and k head dims differ: q " + shape_str(q) + ", k " + shape_str(k));
  const int64_t hq = q.shape[1], hkv = k.shape[1];
  if (hkv == 0 ? hq != 0 : hq % hkv != 0)
    fail(GN_ERR_SHAPE, "query heads " + std::to_string(hq) + " must be a multiple of key/value heads " +
                           std::to_string(hkv) + " (q " + shape_str(q) + ", k " + shape_str(k) + ")");
  enum_attr(a, 0, "causal", 2, "0 (none), 1 (top-left) or 2 (bottom-right)");
  a.attr_float(1);  // scale: nan = 1/sqrt(D); any value allowed
  if (a.n_in > mask_i) {
    const gn_tensor_meta& mask = a.at(mask_i);
    if (mask.dtype != GN_BOOL && !is_float(mask.dtype))
      fail(GN_ERR_DTYPE, std::string("mask must be bool or floating point, got ") + dtype_str(mask.dtype));
    gn_tensor_meta scores{}, b{};
    scores.ndim = 4;
    const int64_t sdims[4] = {q.shape[0], hq, q.shape[2], k.shape[2]};
    std::copy(sdims, sdims + 4, scores.shape);
    if (mask.ndim > 4 || !broadcast_shapes(scores, mask, &b) || !same_shape(b, scores))
      fail(GN_ERR_SHAPE,
           "mask of shape " + shape_str(mask) + " does not broadcast to (B, Hq, Sq, Sk) = " + shape_str(scores));
  }
  return promote_types(promote_types(q.dtype, k.dtype), v.dtype);
}

}  // namespace

// sdpa(q, k, v, [mask]) -> (out (B,Hq,Sq,Dv), lse (B,Hq,Sq)); q/k/v cast to
// their promoted dtype, the mask is not cast.
GN_DEFINE_INFER(sdpa) {
  a.need_inputs(3, 4);
  const int32_t dt = check_attention(a, 0, 3);
  const gn_tensor_meta& q = a.at(0);
  const gn_tensor_meta& v = a.at(2);
  a.cast_inputs(0, 3, dt);
  a.set_outputs(dt, {make_meta(dt, dims_of({q.shape[0], q.shape[1], q.shape[2], v.shape[3]})),
                     make_meta(stat_dtype(dt), dims_of({q.shape[0], q.shape[1], q.shape[2]}))});
}

// sdpa_backward(grad_out, q, k, v, out, lse, [mask]) -> (grad_q, grad_k, grad_v);
// grad_out and out are cast to promote(q, k, v) too; lse keeps its dtype.
GN_DEFINE_INFER(sdpa_backward) {
  a.need_inputs(6, 7);
  const int32_t dt = check_attention(a, 1, 6);
  const gn_tensor_meta& q = a.at(1);
  const gn_tensor_meta& k = a.at(2);
  const gn_tensor_meta& v = a.at(3);
  const Dims out_shape = dims_of({q.shape[0], q.shape[1], q.shape[2], v.shape[3]});
  need_float(a.at(0), "grad_out");
  need_float(a.at(4), "out");
  need_float(a.at(5), "lse");
  need_shape(a.at(0), out_shape, "grad_out", "the attention output shape");
  need_shape(a.at(4), out_shape, "out", "the attention output shape");
  need_shape(a.at(5), dims_of({q.shape[0], q.shape[1], q.shape[2]}), "lse", "(B, Hq, Sq)");
  a.cast_inputs(0, 5, dt);
  a.set_outputs(dt, {like(q, dt), like(k, dt), like(v, dt)});
}

}  // namespace genesis::core
