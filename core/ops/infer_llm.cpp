// core/ops/infer_llm.cpp - inference of the LLM inference ops: the in-place
// KV-cache write of a decode/prefill step, the fused residual add + RMS norm
// of a transformer block, the projection with its bias (linear) and the
// SwiGLU MLP's gate/up projection with its activation (linear_swiglu).  None
// is differentiable.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

// kv_cache_write_(cache (B,H,S,D), src (B,H,T,D), pos (B) int64) -> ().
// src keeps its dtype (no cast: the cache is written in place and src must
// already be in its dtype); T may exceed S (the rows past S are skipped).
// The cache's layout (contiguous) is checked by the kernels, which see strides.
GN_DEFINE_INFER(kv_cache_write) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& cache = a.at(0);
  const gn_tensor_meta& src = a.at(1);
  const gn_tensor_meta& pos = a.at(2);
  if (cache.ndim != 4) fail(GN_ERR_SHAPE, "cache must be 4-D (B, H, S, D), got shape " + shape_str(cache));
  if (src.ndim != 4) fail(GN_ERR_SHAPE, "src must be 4-D (B, H, T, D), got shape " + shape_str(src));
  if (src.shape[0] != cache.shape[0] || src.shape[1] != cache.shape[1] || src.shape[3] != cache.shape[3])
    fail(GN_ERR_SHAPE, "src shape " + shape_str(src) + " must match the cache shape " + shape_str(cache) +
                           " in B, H and D (dims 0, 1 and 3)");
  if (pos.ndim != 1 || pos.shape[0] != cache.shape[0])
    fail(GN_ERR_SHAPE, "pos must be 1-D of length B = " + std::to_string(cache.shape[0]) +
                           " (the cache's dim 0), got shape " + shape_str(pos));
  if (pos.dtype != GN_I64) fail(GN_ERR_DTYPE, std::string("pos must be int64, got ") + dtype_str(pos.dtype));
  need_float(cache, "cache");
  if (src.dtype != cache.dtype)
    fail(GN_ERR_DTYPE,
         std::string("src dtype ") + dtype_str(src.dtype) + " must equal the cache dtype " + dtype_str(cache.dtype));
  a.set_outputs(cache.dtype, {});
}

// add_rms_norm(x (..., D), residual (x's shape and dtype), weight (D)) -> (y, h),
// both of x's shape and dtype.  weight is cast to x's dtype, as rms_norm does,
// so that y matches rms_norm(h, weight) bit for bit.
GN_DEFINE_INFER(add_rms_norm) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& r = a.at(1);
  const gn_tensor_meta& w = a.at(2);
  need_float(x, "x");
  if (x.ndim < 1) fail(GN_ERR_SHAPE, "x must have at least 1 dim, got shape " + shape_str(x));
  if (!same_shape(x, r))
    fail(GN_ERR_SHAPE, "residual shape " + shape_str(r) + " must equal x shape " + shape_str(x) + " (no broadcasting)");
  if (r.dtype != x.dtype)
    fail(GN_ERR_DTYPE,
         std::string("residual dtype ") + dtype_str(r.dtype) + " must equal x dtype " + dtype_str(x.dtype));
  if (!same_shape(w, dims_of(x, x.ndim - 1, x.ndim)))
    fail(GN_ERR_SHAPE, "weight shape " + shape_str(w) + " must equal the last dim of x " + shape_str(x));
  const double eps = a.attr_float(0);
  if (!(eps >= 0)) fail(GN_ERR_INVALID_ARGUMENT, "eps must be >= 0, got " + num_str(eps));
  a.cast_input(2, x.dtype);
  a.set_outputs(x.dtype, {like(x, x.dtype), like(x, x.dtype)});
}

namespace {
// The checks linear and linear_swiglu share: x (*, K) floating, weight (rows, K)
// 2-D of x's dtype.  PyTorch's F.linear refuses mixed dtypes too, and a cast
// here would hide a copy of the weight on every call.
void check_projection(const gn_tensor_meta& x, const gn_tensor_meta& w) {
  need_float(x, "x");
  if (x.ndim < 1) fail(GN_ERR_SHAPE, "x must have at least 1 dim, got shape " + shape_str(x));
  if (w.ndim != 2) fail(GN_ERR_SHAPE, "weight must be 2-D, got shape " + shape_str(w));
  if (w.shape[1] != x.shape[x.ndim - 1])
    fail(GN_ERR_SHAPE, "weight shape " + shape_str(w) + " does not match x shape " + shape_str(x) +
                           " (weight's dim 1 must equal x's last dim)");
  if (w.dtype != x.dtype)
    fail(GN_ERR_DTYPE, std::string("weight dtype ") + dtype_str(w.dtype) + " must equal x dtype " + dtype_str(x.dtype));
}

// out (*, n) of x's dtype for x (*, K).
void set_projection_out(const Args& a, const gn_tensor_meta& x, int64_t n) {
  Dims d = dims_of(x, 0, x.ndim - 1);
  d.push(n);
  a.set_outputs(x.dtype, {make_meta(x.dtype, d)});
}
}  // namespace

// linear(x (*, K), weight (N, K), [bias (N)]) -> (*, N), all of one float dtype.
GN_DEFINE_INFER(linear) {
  a.need_inputs(2, 3);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& w = a.at(1);
  check_projection(x, w);
  if (a.n_in == 3) {
    const gn_tensor_meta& b = a.at(2);
    if (!same_shape(b, dims_of({w.shape[0]})))
      fail(GN_ERR_SHAPE, "bias shape " + shape_str(b) + " must be (" + std::to_string(w.shape[0]) + ")");
    if (b.dtype != x.dtype)
      fail(GN_ERR_DTYPE, std::string("bias dtype ") + dtype_str(b.dtype) + " must equal x dtype " + dtype_str(x.dtype));
  }
  set_projection_out(a, x, w.shape[0]);
}

// linear_swiglu(x (*, K), weight (2I, K)) -> (*, I), one float dtype.
GN_DEFINE_INFER(linear_swiglu) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& w = a.at(1);
  check_projection(x, w);
  if (w.shape[0] % 2 != 0)
    fail(GN_ERR_SHAPE, "weight must have an even number of rows (gate then up), got shape " + shape_str(w));
  set_projection_out(a, x, w.shape[0] / 2);
}

}  // namespace genesis::core
