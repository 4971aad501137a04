// backends/reference/pool.cpp - max_pool2d and avg_pool2d with backward, as
// torch's CPU kernels define them.
//
// x (..., H, W): every leading dim is a plane (N*C planes for NCHW).
// Output size, torch's pooling_output_shape:
//   Ho = floor((H + 2p - d(k-1) - 1 + (ceil_mode ? s-1 : 0)) / s) + 1,
//   minus one when ceil_mode and the last window would start at or beyond
//   H + p (it must start inside the input or the left padding).
// padding must be <= kernel/2 (torch's rule).
// max: window rows ih = oh*s - p + i*d inside [0, H); padding acts as -inf.
//   The first maximum wins; NaN propagates (the last NaN's index is kept).
//   indices are flat ih*W + iw offsets into the input plane (torch).
// avg: window [oh*s - p, min(oh*s - p + k, H + p)) clipped to [0, H); the
//   divisor is the unclipped window area (count_include_pad: padding counts,
//   positions past H + p that ceil_mode adds do not) or the clipped area.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {

namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

struct PoolParams {
  int64_t P, H, W;  // planes, input height, width
  Pair k, s, p, d;
  bool ceil_mode = false, count_include_pad = true;
  int64_t Ho, Wo;
};

// torch's pooling_output_shape (floor division rounds toward -inf).
int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// attrs: max: kernel, stride, padding, dilation, ceil_mode; avg: kernel, stride, padding, ceil_mode, count_include_pad
PoolParams pool_params(const char* op, const gn_tensor_view& x, const gn_attr_value* attrs, size_t n_attrs,
                       bool is_max) {
  if (x.ndim != 3 && x.ndim != 4)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] input must be (N,C,H,W) or (C,H,W), got " + shape_str(shape_of(x)));
  PoolParams p{};
  p.H = x.shape[x.ndim - 2];
  p.W = x.shape[x.ndim - 1];
  p.P = prod(shape_of(x), 0, (size_t)x.ndim - 2);
  p.k = attr_pair(op, "kernel", attrs, n_attrs, 0);
  p.s = attr_pair(op, "stride", attrs, n_attrs, 1, p.k);
  p.p = attr_pair(op, "padding", attrs, n_attrs, 2);
  if (is_max) {
    p.d = attr_pair(op, "dilation", attrs, n_attrs, 3);
    p.ceil_mode = attr_int(op, attrs, n_attrs, 4) != 0;
  } else {
    p.d = {1, 1};
    p.ceil_mode = attr_int(op, attrs, n_attrs, 3) != 0;
    p.count_include_pad = attr_int(op, attrs, n_attrs, 4) != 0;
  }
  if (p.k.h < 1 || p.k.w < 1 || p.s.h < 1 || p.s.w < 1 || p.d.h < 1 || p.d.w < 1)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] kernel, stride and dilation must be >= 1");
  if (p.p.h < 0 || p.p.w < 0 || p.p.h > p.k.h / 2 || p.p.w > p.k.w / 2)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] padding must be >= 0 and at most half the kernel size");
  p.Ho = pool_out_size(p.H, p.k.h, p.s.h, p.p.h, p.d.h, p.ceil_mode);
  p.Wo = pool_out_size(p.W, p.k.w, p.s.w, p.p.w, p.d.w, p.ceil_mode);
  if (p.Ho < 1 || p.Wo < 1)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] output size " + std::to_string(p.Ho) + "x" + std::to_string(p.Wo) +
                           " is too small for input " + shape_str(shape_of(x)));
  return p;
}

Shape pool_out_shape(const gn_tensor_view& x, const PoolParams& p) {
  Shape s = shape_of(x);
  s[s.size() - 2] = p.Ho;
  s[s.size() - 1] = p.Wo;
  return s;
}

// ----------------------------------------------------------------------------
// max_pool2d

// x (P,H,W) -> y (P,Ho,Wo), idx (P,Ho,Wo) flat ih*W+iw
void max_pool2d_forward(double* y, int64_t* idx, const double* x, const PoolParams& p) {
  for (int64_t c = 0; c < p.P; ++c)
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        int64_t h0 = oh * p.s.h - p.p.h, w0 = ow * p.s.w - p.p.w;
        int64_t h1 = std::min(h0 + (p.k.h - 1) * p.d.h + 1, p.H), w1 = std::min(w0 + (p.k.w - 1) * p.d.w + 1, p.W);
        while (h0 < 0) h0 += p.d.h;
        while (w0 < 0) w0 += p.d.w;
        int64_t best = h0 * p.W + w0;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t ih = h0; ih < h1; ih += p.d.h)
          for (int64_t iw = w0; iw < w1; iw += p.d.w) {
            double v = x[(c * p.H + ih) * p.W + iw];
            if (v > m || std::isnan(v)) {
              m = v;
              best = ih * p.W + iw;
            }
          }
        y[(c * p.Ho + oh) * p.Wo + ow] = m;
        idx[(c * p.Ho + oh) * p.Wo + ow] = best;
      }
}

// dy (P,Ho,Wo), idx (P,Ho,Wo) -> dx (P,H,W): dx[idx] += dy
void max_pool2d_backward(double* dx, const double* dy, const int64_t* idx, const PoolParams& p) {
  for (int64_t i = 0; i < p.P * p.H * p.W; ++i) dx[i] = 0.0;
  for (int64_t c = 0; c < p.P; ++c)
    for (int64_t o = 0; o < p.Ho * p.Wo; ++o) dx[c * p.H * p.W + idx[c * p.Ho * p.Wo + o]] += dy[c * p.Ho * p.Wo + o];
}

// in: x; out: y, indices (int64); attrs: kernel, stride, padding, dilation, ceil_mode
GN_SDK_KERNEL(max_pool2d_kernel) {
  const char* op = "max_pool2d";
  expect_io(op, n_in, 1, n_out, 1);
  PoolParams p = pool_params(op, in[0], attrs, n_attrs, true);
  Shape os = pool_out_shape(in[0], p);
  expect_shape(op, "y", out[0], os);
  if (n_out > 1) expect_shape(op, "indices", out[1], os);
  Vec x = load_all(in[0]), y((size_t)prod(os));
  std::vector<int64_t> idx(y.size());
  max_pool2d_forward(y.data(), idx.data(), x.data(), p);
  store_all(out[0], y);
  if (n_out > 1) {
    Vec idx_d(idx.begin(), idx.end());  // exact: < 2^53
    store_all(out[1], idx_d);
  }
}

// in: grad_y, x, indices; out: grad_x; attrs as max_pool2d
GN_SDK_KERNEL(max_pool2d_backward_kernel) {
  const char* op = "max_pool2d_backward";
  expect_io(op, n_in, 3, n_out, 1);
  PoolParams p = pool_params(op, in[1], attrs, n_attrs, true);
  Shape os = pool_out_shape(in[1], p);
  expect_shape(op, "grad_y", in[0], os);
  expect_shape(op, "indices", in[2], os);
  expect_shape(op, "grad_x", out[0], shape_of(in[1]));
  if (!gn_dtype_is_int(in[2].dtype)) fail(GN_ERR_DTYPE, "[max_pool2d_backward] indices must be an integer tensor");
  std::vector<int64_t> idx = load_ints(in[2]);
  for (int64_t v : idx)
    if (v < 0 || v >= p.H * p.W)
      fail(GN_ERR_INDEX,
           "[max_pool2d_backward] index " + std::to_string(v) + " out of range [0, " + std::to_string(p.H * p.W) + ")");
  Vec dy = load_all(in[0]), dx((size_t)(p.P * p.H * p.W));
  max_pool2d_backward(dx.data(), dy.data(), idx.data(), p);
  store_all(out[0], dx);
}

// ----------------------------------------------------------------------------
// avg_pool2d

// The clipped window [h0,h1) x [w0,w1) of output (oh, ow) and its divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
AvgWindow avg_window(const PoolParams& p, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.s.h - p.p.h, w0 = ow * p.s.w - p.p.w;
  int64_t h1 = std::min(h0 + p.k.h, p.H + p.p.h), w1 = std::min(w0 + p.k.w, p.W + p.p.w);
  int64_t area = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.H);
  w1 = std::min(w1, p.W);
  double div = p.count_include_pad ? (double)area : (double)((h1 - h0) * (w1 - w0));
  return {h0, h1, w0, w1, div};
}

// x (P,H,W) -> y (P,Ho,Wo) = window sum / divisor (0 for a window with no input)
void avg_pool2d_forward(double* y, const double* x, const PoolParams& p) {
  for (int64_t c = 0; c < p.P; ++c)
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        AvgWindow a = avg_window(p, oh, ow);
        double sum = 0.0;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) sum += x[(c * p.H + ih) * p.W + iw];
        y[(c * p.Ho + oh) * p.Wo + ow] = (a.h0 >= a.h1 || a.w0 >= a.w1) ? 0.0 : sum / a.divisor;
      }
}

// dy (P,Ho,Wo) -> dx (P,H,W): each window position gets dy / divisor
void avg_pool2d_backward(double* dx, const double* dy, const PoolParams& p) {
  for (int64_t i = 0; i < p.P * p.H * p.W; ++i) dx[i] = 0.0;
  for (int64_t c = 0; c < p.P; ++c)
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        AvgWindow a = avg_window(p, oh, ow);
        double g = dy[(c * p.Ho + oh) * p.Wo + ow] / a.divisor;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) dx[(c * p.H + ih) * p.W + iw] += g;
      }
}

// in: x; out: y; attrs: kernel, stride, padding, ceil_mode, count_include_pad
GN_SDK_KERNEL(avg_pool2d_kernel) {
  const char* op = "avg_pool2d";
  expect_io(op, n_in, 1, n_out, 1);
  PoolParams p = pool_params(op, in[0], attrs, n_attrs, false);
  Shape os = pool_out_shape(in[0], p);
  expect_shape(op, "y", out[0], os);
  Vec x = load_all(in[0]), y((size_t)prod(os));
  avg_pool2d_forward(y.data(), x.data(), p);
  store_all(out[0], y);
}

// in: grad_y, x; out: grad_x; attrs as avg_pool2d
GN_SDK_KERNEL(avg_pool2d_backward_kernel) {
  const char* op = "avg_pool2d_backward";
  expect_io(op, n_in, 2, n_out, 1);
  PoolParams p = pool_params(op, in[1], attrs, n_attrs, false);
  expect_shape(op, "grad_y", in[0], pool_out_shape(in[1], p));
  expect_shape(op, "grad_x", out[0], shape_of(in[1]));
  Vec dy = load_all(in[0]), dx((size_t)(p.P * p.H * p.W));
  avg_pool2d_backward(dx.data(), dy.data(), p);
  store_all(out[0], dx);
}

}  // namespace

void register_pool(const gn::sdk::Registrar& r) {
  r.kernel("max_pool2d", kFloatDtypes, max_pool2d_kernel);
  r.kernel("max_pool2d_backward", kFloatDtypes, max_pool2d_backward_kernel);
  r.kernel("avg_pool2d", kFloatDtypes, avg_pool2d_kernel);
  r.kernel("avg_pool2d_backward", kFloatDtypes, avg_pool2d_backward_kernel);
}

}  // namespace gn::reference
