// backends/reference/conv.cpp - conv2d (NCHW, stride / padding / dilation /
// groups, optional bias) and its backward.
//
// y[n,o,oh,ow] = bias[o] + sum_{c,i,j} x[n, g*Cg + c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] * w[o,c,i,j]
// where g = o / (O/groups) is o's group, Cg = C/groups, and x is 0 outside.
// Ho = (H + 2*ph - dh*(kh-1) - 1) / sh + 1 (likewise Wo), as torch.
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

struct ConvParams {
  int64_t N, C, H, W;     // input
  int64_t O, Cg, KH, KW;  // weight (O, C/groups, KH, KW)
  int64_t G;              // groups
  Pair stride, pad, dil;
  int64_t Ho, Wo;
};

int64_t conv_out_size(const char* op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] kernel (dilated size " + std::to_string(d * (k - 1) + 1) +
                           ") is larger than the padded input (" + std::to_string(in + 2 * p) + ")");
  return span / s + 1;
}

// Shapes and attributes: x (N,C,H,W), w (O,C/groups,KH,KW); attrs stride, padding, dilation, groups.
ConvParams conv_params(const char* op, const gn_tensor_view& x, const gn_tensor_view& w, const gn_attr_value* attrs,
                       size_t n_attrs) {
  expect_ndim(op, "x", x, 4);
  expect_ndim(op, "weight", w, 4);
  ConvParams p{};
  p.N = x.shape[0];
  p.C = x.shape[1];
  p.H = x.shape[2];
  p.W = x.shape[3];
  p.O = w.shape[0];
  p.Cg = w.shape[1];
  p.KH = w.shape[2];
  p.KW = w.shape[3];
  p.stride = attr_pair(op, "stride", attrs, n_attrs, 0);
  p.pad = attr_pair(op, "padding", attrs, n_attrs, 1);
  p.dil = attr_pair(op, "dilation", attrs, n_attrs, 2);
  p.G = attr_int(op, attrs, n_attrs, 3);
  if (p.stride.h < 1 || p.stride.w < 1 || p.dil.h < 1 || p.dil.w < 1 || p.pad.h < 0 || p.pad.w < 0)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] stride and dilation must be >= 1, padding >= 0");
  if (p.G < 1 || p.C % p.G != 0 || p.O % p.G != 0)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] groups " + std::to_string(p.G) +
                                      " must divide in channels " + std::to_string(p.C) + " and out channels " +
                                      std::to_string(p.O));
  if (p.Cg != p.C / p.G)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] weight has " + std::to_string(p.Cg) + " input channels, expected " +
                           std::to_string(p.C / p.G));
  p.Ho = conv_out_size(op, p.H, p.KH, p.stride.h, p.pad.h, p.dil.h);
  p.Wo = conv_out_size(op, p.W, p.KW, p.stride.w, p.pad.w, p.dil.w);
  return p;
}

// ----------------------------------------------------------------------------
// forward

// The loops of conv2d_forward and conv2d_backward: for every output element yi =
// (n, o, oh, ow), start(yi, o), then tap(xi, wi) for every product x[xi] * w[wi] of it.
template <class Start, class Tap>
void for_each_tap(const ConvParams& p, Start start, Tap tap) {
  int64_t Og = p.O / p.G;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t o = 0; o < p.O; ++o) {
      int64_t c0 = (o / Og) * p.Cg;  // first input channel of o's group
      for (int64_t oh = 0; oh < p.Ho; ++oh)
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
          start(((n * p.O + o) * p.Ho + oh) * p.Wo + ow, o);
          for (int64_t c = 0; c < p.Cg; ++c)
            for (int64_t i = 0; i < p.KH; ++i) {
              int64_t ih = oh * p.stride.h - p.pad.h + i * p.dil.h;
              if (ih < 0 || ih >= p.H) continue;
              for (int64_t j = 0; j < p.KW; ++j) {
                int64_t iw = ow * p.stride.w - p.pad.w + j * p.dil.w;
                if (iw < 0 || iw >= p.W) continue;
                tap(((n * p.C + c0 + c) * p.H + ih) * p.W + iw, ((o * p.Cg + c) * p.KH + i) * p.KW + j);
              }
            }
        }
    }
}

// x (N,C,H,W), w (O,Cg,KH,KW), b (O) or empty -> y (N,O,Ho,Wo)
void conv2d_forward(double* y, const double* x, const double* w, const double* b, const ConvParams& p) {
  double* acc = nullptr;  // the output element being summed
  for_each_tap(
      p,
      [&](int64_t yi, int64_t o) {
        acc = &y[yi];
        *acc = b ? b[o] : 0.0;
      },
      [&](int64_t xi, int64_t wi) { *acc += x[xi] * w[wi]; });
}

// in: x, weight, [bias]; out: y; attrs: stride, padding, dilation, groups
GN_SDK_KERNEL(conv2d_kernel) {
  const char* op = "conv2d";
  expect_io(op, n_in, 2, n_out, 1);
  ConvParams p = conv_params(op, in[0], in[1], attrs, n_attrs);
  Vec b;
  if (n_in > 2) {
    expect_shape(op, "bias", in[2], {p.O});
    b = load_all(in[2]);
  }
  expect_shape(op, "y", out[0], {p.N, p.O, p.Ho, p.Wo});
  Vec x = load_all(in[0]), w = load_all(in[1]), y((size_t)(p.N * p.O * p.Ho * p.Wo));
  conv2d_forward(y.data(), x.data(), w.data(), n_in > 2 ? b.data() : nullptr, p);
  store_all(out[0], y);
}

// ----------------------------------------------------------------------------
// backward

// dy (N,O,Ho,Wo), x (N,C,H,W), w (O,Cg,KH,KW) -> dx (N,C,H,W), dw (O,Cg,KH,KW), db (O)
// the transpose of conv2d_forward's loop: every product x*w sends dy to both sides
void conv2d_backward(double* dx, double* dw, double* db, const double* dy, const double* x, const double* w,
                     const ConvParams& p) {
  for (int64_t i = 0; i < p.N * p.C * p.H * p.W; ++i) dx[i] = 0.0;
  for (int64_t i = 0; i < p.O * p.Cg * p.KH * p.KW; ++i) dw[i] = 0.0;
  for (int64_t o = 0; o < p.O; ++o) db[o] = 0.0;
  double g = 0.0;  // dy of the output element being visited
  for_each_tap(
      p,
      [&](int64_t yi, int64_t o) {
        g = dy[yi];
        db[o] += g;
      },
      [&](int64_t xi, int64_t wi) {
        dx[xi] += g * w[wi];
        dw[wi] += g * x[xi];
      });
}

// in: grad_y, x, weight; out: grad_x, grad_weight, grad_bias; attrs as conv2d
GN_SDK_KERNEL(conv2d_backward_kernel) {
  const char* op = "conv2d_backward";
  expect_io(op, n_in, 3, n_out, 1);
  ConvParams p = conv_params(op, in[1], in[2], attrs, n_attrs);
  expect_shape(op, "grad_y", in[0], {p.N, p.O, p.Ho, p.Wo});
  expect_shape(op, "grad_x", out[0], shape_of(in[1]));
  if (n_out > 1) expect_shape(op, "grad_weight", out[1], shape_of(in[2]));
  if (n_out > 2) expect_shape(op, "grad_bias", out[2], {p.O});
  Vec dy = load_all(in[0]), x = load_all(in[1]), w = load_all(in[2]);
  Vec dx(x.size()), dw(w.size()), db((size_t)p.O);
  conv2d_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), p);
  store_all(out[0], dx);
  if (n_out > 1) store_all(out[1], dw);
  if (n_out > 2) store_all(out[2], db);
}

}  // namespace

void register_conv(const gn::sdk::Registrar& r) {
  r.kernel("conv2d", kFloatDtypes, conv2d_kernel);
  r.kernel("conv2d_backward", kFloatDtypes, conv2d_backward_kernel);
}

}  // namespace gn::reference
