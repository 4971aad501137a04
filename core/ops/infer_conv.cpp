// core/ops/infer_conv.cpp - inference of 2-D convolution and pooling (NCHW)
// and their backward ops.  Output sizes follow PyTorch's formulas exactly.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// A (height, width) pair from an ints attribute of 1 (both) or 2 values,
// each >= min_value.
struct Pair {
  int64_t h = 0, w = 0;
};

Pair pair_attr(const Args& a, size_t i, const char* name, int64_t min_value) {
  const std::span<const int64_t> v = a.attr_ints(i);
  if (v.size() != 1 && v.size() != 2)
    fail(GN_ERR_INVALID_ARGUMENT, std::string(name) + " must have 1 or 2 values, got " + ints_str(v));
  const Pair p{v[0], v.size() == 2 ? v[1] : v[0]};
  if (p.h < min_value || p.w < min_value)
    fail(GN_ERR_INVALID_ARGUMENT,
         std::string(name) + " values must be >= " + std::to_string(min_value) + ", got " + ints_str(v));
  // Keeps the size arithmetic below far from int64 overflow.
  constexpr int64_t kMax = int64_t{1} << 31;
  if (p.h > kMax || p.w > kMax)
    fail(GN_ERR_INVALID_ARGUMENT, std::string(name) + " values must be <= 2^31, got " + ints_str(v));
  return p;
}

std::string pair_str(const Pair& p) {
  // Appended piece by piece: g++ 12 misreports "(" + std::string&& as an overlapping memcpy (-Wrestrict).
  std::string s = "(";
  s += std::to_string(p.h);
  s += ", ";
  s += std::to_string(p.w);
  s += ")";
  return s;
}

// Floor division (div_rtn in torch) for a possibly negative numerator.
int64_t floor_div(int64_t num, int64_t den) {
  int64_t q = num / den;
  if ((num % den != 0) && ((num < 0) != (den < 0))) --q;
  return q;
}

// Convolution attributes and geometry.
struct ConvGeom {
  Pair stride, padding, dilation;
  int64_t groups = 1;
  int64_t ho = 0, wo = 0;
};

// Checks x (N,C,H,W) against w (O,C/g,kh,kw) and computes the output size.
ConvGeom conv_geometry(const Args& a, const gn_tensor_meta& x, const gn_tensor_meta& w) {
  ConvGeom g;
  g.stride = pair_attr(a, 0, "stride", 1);
  g.padding = pair_attr(a, 1, "padding", 0);
  g.dilation = pair_attr(a, 2, "dilation", 1);
  g.groups = a.attr_int(3);
  if (g.groups < 1) fail(GN_ERR_INVALID_ARGUMENT, "groups must be >= 1, got " + std::to_string(g.groups));
  if (x.ndim != 4) fail(GN_ERR_SHAPE, "input must be 4-D (N, C, H, W), got shape " + shape_str(x));
  if (w.ndim != 4) fail(GN_ERR_SHAPE, "weight must be 4-D (O, C/groups, kh, kw), got shape " + shape_str(w));
  const int64_t c = x.shape[1], o = w.shape[0];
  if (c % g.groups != 0)
    fail(GN_ERR_SHAPE, "input channels " + std::to_string(c) + " are not divisible by groups " +
                           std::to_string(g.groups) + " (input " + shape_str(x) + ")");
  if (o % g.groups != 0)
    fail(GN_ERR_SHAPE, "output channels " + std::to_string(o) + " are not divisible by groups " +
                           std::to_string(g.groups) + " (weight " + shape_str(w) + ")");
  if (w.shape[1] != c / g.groups)
    fail(GN_ERR_SHAPE, "weight " + shape_str(w) + " expects " + std::to_string(w.shape[1] * g.groups) +
                           " input channels but the input " + shape_str(x) + " has " + std::to_string(c) + " (groups " +
                           std::to_string(g.groups) + ")");
  const int64_t nh = x.shape[2] + 2 * g.padding.h - g.dilation.h * (w.shape[2] - 1) - 1;
  const int64_t nw = x.shape[3] + 2 * g.padding.w - g.dilation.w * (w.shape[3] - 1) - 1;
  g.ho = floor_div(nh, g.stride.h) + 1;
  g.wo = floor_div(nw, g.stride.w) + 1;
  if (g.ho < 1 || g.wo < 1)
    fail(GN_ERR_SHAPE, "input " + shape_str(x) + " padded by " + pair_str(g.padding) + " is smaller than the kernel " +
                           pair_str({w.shape[2], w.shape[3]}) + " dilated by " + pair_str(g.dilation) +
                           " (output would be " + pair_str({g.ho, g.wo}) + ")");
  return g;
}

}  // namespace

// conv2d(x (N,C,H,W), w (O,C/g,kh,kw), [bias (O)]) -> (N,O,Ho,Wo), all cast to
// the promoted float dtype; Ho = floor((H + 2p - d(kh-1) - 1)/s) + 1.
GN_DEFINE_INFER(conv2d) {
  a.need_inputs(2, 3);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& w = a.at(1);
  const ConvGeom g = conv_geometry(a, x, w);
  need_float(x, "input");
  need_float(w, "weight");
  int32_t dt = promote_types(x.dtype, w.dtype);
  if (a.n_in > 2) {
    const gn_tensor_meta& b = a.at(2);
    need_float(b, "bias");
    if (!same_shape(b, dims_of({w.shape[0]})))
      fail(GN_ERR_SHAPE,
           "bias shape " + shape_str(b) + " must be (" + std::to_string(w.shape[0]) + ") for weight " + shape_str(w));
    dt = promote_types(dt, b.dtype);
  }
  a.cast_inputs(0, a.n_in, dt);
  a.set_outputs(dt, {make_meta(dt, dims_of({x.shape[0], w.shape[0], g.ho, g.wo}))});
}

// conv2d_backward(grad_y, x, w) -> (grad_x, grad_w, grad_bias (O)) in promote(x, w).
GN_DEFINE_INFER(conv2d_backward) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& gy = a.at(0);
  const gn_tensor_meta& x = a.at(1);
  const gn_tensor_meta& w = a.at(2);
  const ConvGeom g = conv_geometry(a, x, w);
  need_float(gy, "grad_y");
  need_float(x, "input");
  need_float(w, "weight");
  const Dims y = dims_of({x.shape[0], w.shape[0], g.ho, g.wo});
  if (!same_shape(gy, y))
    fail(GN_ERR_SHAPE, "grad_y shape " + shape_str(gy) + " must equal the output shape " + dims_str(y));
  const int32_t dt = promote_types(x.dtype, w.dtype);
  a.cast_inputs(0, 3, dt);
  a.set_outputs(dt, {like(x, dt), like(w, dt), make_meta(dt, dims_of({w.shape[0]}))});
}

namespace {

// Pooling attributes (max: kernel stride padding dilation ceil_mode;
// avg: kernel stride padding ceil_mode count_include_pad) and the output size.
struct PoolGeom {
  bool is_max = false;
  Pair kernel, stride, padding, dilation{1, 1};
  bool ceil_mode = false;
  Dims out;  // y's shape
};

// torch's pooling_output_shape: with ceil_mode the last window must start
// inside the input or the left padding.
int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t out = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolGeom pool_geometry(const Args& a, const gn_tensor_meta& x) {
  PoolGeom g;
  g.is_max = a.op().starts_with("max_pool2d");
  g.kernel = pair_attr(a, 0, "kernel", 1);
  g.stride = a.attr_ints(1).empty() ? g.kernel : pair_attr(a, 1, "stride", 1);
  g.padding = pair_attr(a, 2, "padding", 0);
  if (g.is_max) g.dilation = pair_attr(a, 3, "dilation", 1);
  g.ceil_mode = a.attr_int(g.is_max ? 4 : 3) != 0;
  if (g.padding.h > g.kernel.h / 2 || g.padding.w > g.kernel.w / 2)
    fail(GN_ERR_INVALID_ARGUMENT,
         "padding " + pair_str(g.padding) + " must be at most half of the kernel " + pair_str(g.kernel));
  if (x.ndim != 3 && x.ndim != 4)
    fail(GN_ERR_SHAPE, "input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape " + shape_str(x));
  for (int i = x.ndim - 3; i < x.ndim; ++i)
    if (x.shape[i] == 0) fail(GN_ERR_SHAPE, "input " + shape_str(x) + " must have non-empty C, H and W");
  const int64_t h = x.shape[x.ndim - 2], w = x.shape[x.ndim - 1];
  const int64_t ho = pool_out_size(h, g.kernel.h, g.padding.h, g.stride.h, g.dilation.h, g.ceil_mode);
  const int64_t wo = pool_out_size(w, g.kernel.w, g.padding.w, g.stride.w, g.dilation.w, g.ceil_mode);
  if (ho < 1 || wo < 1)
    fail(GN_ERR_SHAPE, "input " + shape_str(x) + " is too small for kernel " + pair_str(g.kernel) +
                           " (output would be " + pair_str({ho, wo}) + ")");
  g.out = dims_of(x, 0, x.ndim - 2);
  g.out.push(ho);
  g.out.push(wo);
  return g;
}

// max pooling needs float inputs (as torch); average pooling any but bool.
void pool_dtype(const PoolGeom& g, const gn_tensor_meta& x) {
  if (g.is_max)
    need_float(x, "input");
  else if (x.dtype == GN_BOOL)
    fail(GN_ERR_DTYPE, "bool inputs are not supported");
}

}  // namespace

// max_pool2d(x) -> (y, int64 indices into H*W); avg_pool2d(x) -> y.
GN_DEFINE_INFER(pool2d) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const PoolGeom g = pool_geometry(a, x);
  pool_dtype(g, x);
  a.set_n_out(g.is_max ? 2 : 1);
  a.set_out(0, make_meta(x.dtype, g.out));
  if (g.is_max) a.set_out(1, make_meta(GN_I64, g.out));
  a.set_kernel(x.dtype);
}

// max_pool2d_backward(grad_y, x, indices) / avg_pool2d_backward(grad_y, x) -> grad_x.
GN_DEFINE_INFER(pool2d_backward) {
  const bool is_max = a.op().starts_with("max_pool2d");
  if (is_max)
    a.need_inputs(3, 3);
  else
    a.need_inputs(2, 2);
  const gn_tensor_meta& gy = a.at(0);
  const gn_tensor_meta& x = a.at(1);
  const PoolGeom g = pool_geometry(a, x);
  pool_dtype(g, x);
  if (!same_shape(gy, g.out))
    fail(GN_ERR_SHAPE, "grad_y shape " + shape_str(gy) + " must equal the pooled shape " + dims_str(g.out));
  if (is_max) {
    const gn_tensor_meta& idx = a.at(2);
    if (idx.dtype != GN_I64) fail(GN_ERR_DTYPE, std::string("indices must be int64, got ") + dtype_str(idx.dtype));
    if (!same_shape(idx, g.out))
      fail(GN_ERR_SHAPE, "indices shape " + shape_str(idx) + " must equal the pooled shape " + dims_str(g.out));
  }
  a.cast_input(0, x.dtype);
  a.set_outputs(x.dtype, {like(x, x.dtype)});
}

}  // namespace genesis::core
