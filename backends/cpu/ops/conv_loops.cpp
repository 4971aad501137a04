// backends/cpu/ops/conv_loops.cpp - conv2d forward and backward as direct
// C++ loops, for what oneDNN does not take here: f64 (oneDNN has no f64
// convolution), and f16/bf16 on CPUs whose oneDNN refuses them.
//
// NCHW x (N,C,H,W), w (O,C/G,KH,KW), optional bias (O), dense.  Every sum is
// in double and rounded once into the output dtype (the reference computes in
// double too; only the summation order differs).  Parallel over independent
// output planes, so nothing is shared between threads:
//   forward       (n, o) planes of y: for each (c, ky, kx) one weight times a
//                 shifted plane of x, accumulated into a double plane
//                 (contiguous along the output row when stride_w == 1)
//   grad_x        (n, c) planes of x: the transposed scatter of the above
//   grad_w/bias   (o, c) weight slices: sums over n and the output plane
#include "conv_loops.h"

#include <algorithm>

namespace gn::cpu {
namespace {

// Output range [lo, hi) of ox for which ix = ox*s - p + k*d lies in [0, W).
void valid_range(int64_t W, int64_t Wo, int64_t s, int64_t p, int64_t kd, int64_t& lo, int64_t& hi) {
  // ix >= 0  <=>  ox >= (p - kd) / s (ceil);  ix < W  <=>  ox <= (W - 1 + p - kd) / s (floor)
  const int64_t a = p - kd, b = W - 1 + p - kd;
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = b < 0 ? 0 : std::min(Wo, b / s + 1);
  if (hi < lo) hi = lo;
}

template <class T>
void forward(const ConvShape& p, const T* x, const T* w, const T* bias, T* y) {
  const int64_t plane = p.Ho * p.Wo, Og = p.O / p.G;
  parallel_for(p.N * p.O, p.Cg * p.KH * p.KW * plane, [&](int64_t no) {
    const int64_t n = no / p.O, o = no % p.O, g = o / Og;
    thread_local std::vector<double> acc;
    acc.assign((size_t)plane, bias ? ld(bias + o) : 0.0);
    for (int64_t c = 0; c < p.Cg; ++c) {
      const T* xp = x + (n * p.C + g * p.Cg + c) * p.H * p.W;
      for (int64_t ky = 0; ky < p.KH; ++ky) {
        int64_t oy0, oy1;
        valid_range(p.H, p.Ho, p.sh, p.ph, ky * p.dh, oy0, oy1);
        for (int64_t kx = 0; kx < p.KW; ++kx) {
          const double wv = ld(w + ((o * p.Cg + c) * p.KH + ky) * p.KW + kx);
          int64_t ox0, ox1;
          valid_range(p.W, p.Wo, p.sw, p.pw, kx * p.dw, ox0, ox1);
          for (int64_t oy = oy0; oy < oy1; ++oy) {
            const T* xr = xp + (oy * p.sh - p.ph + ky * p.dh) * p.W - p.pw + kx * p.dw;
            double* ar = acc.data() + oy * p.Wo;
            if (p.sw == 1) {
#pragma omp simd
              for (int64_t ox = ox0; ox < ox1; ++ox) ar[ox] += wv * ld(xr + ox);
            } else {
              for (int64_t ox = ox0; ox < ox1; ++ox) ar[ox] += wv * ld(xr + ox * p.sw);
            }
          }
        }
      }
    }
    T* yp = y + no * plane;
    for (int64_t i = 0; i < plane; ++i) st(yp + i, acc[(size_t)i]);
  });
}

template <class T>
void backward(const ConvShape& p, const T* gy, const T* x, const T* w, T* gx, T* gw, T* gb) {
  const int64_t plane = p.Ho * p.Wo, Og = p.O / p.G;
  // grad_x: (n, ci) planes
  if (gx)
    parallel_for(p.N * p.C, Og * p.KH * p.KW * plane, [&](int64_t nc) {
      const int64_t n = nc / p.C, ci = nc % p.C, g = ci / p.Cg, c = ci % p.Cg;
      thread_local std::vector<double> acc;
      acc.assign((size_t)(p.H * p.W), 0.0);
      for (int64_t o = g * Og; o < (g + 1) * Og; ++o) {
        const T* gp = gy + (n * p.O + o) * plane;
        for (int64_t ky = 0; ky < p.KH; ++ky) {
          int64_t oy0, oy1;
          valid_range(p.H, p.Ho, p.sh, p.ph, ky * p.dh, oy0, oy1);
          for (int64_t kx = 0; kx < p.KW; ++kx) {
            const double wv = ld(w + ((o * p.Cg + c) * p.KH + ky) * p.KW + kx);
            int64_t ox0, ox1;
            valid_range(p.W, p.Wo, p.sw, p.pw, kx * p.dw, ox0, ox1);
            for (int64_t oy = oy0; oy < oy1; ++oy) {
              double* ar = acc.data() + (oy * p.sh - p.ph + ky * p.dh) * p.W - p.pw + kx * p.dw;
              const T* gr = gp + oy * p.Wo;
              if (p.sw == 1) {
#pragma omp simd
                for (int64_t ox = ox0; ox < ox1; ++ox) ar[ox] += wv * ld(gr + ox);
              } else {
                for (int64_t ox = ox0; ox < ox1; ++ox) ar[ox * p.sw] += wv * ld(gr + ox);
              }
            }
          }
        }
      }
      T* xp = gx + nc * p.H * p.W;
      for (int64_t i = 0; i < p.H * p.W; ++i) st(xp + i, acc[(size_t)i]);
    });
  // grad_w: (o, c) slices of KH*KW
  if (gw)
    parallel_for(p.O * p.Cg, p.N * p.KH * p.KW * plane, [&](int64_t oc) {
      const int64_t o = oc / p.Cg, c = oc % p.Cg, g = o / Og;
      for (int64_t ky = 0; ky < p.KH; ++ky) {
        int64_t oy0, oy1;
        valid_range(p.H, p.Ho, p.sh, p.ph, ky * p.dh, oy0, oy1);
        for (int64_t kx = 0; kx < p.KW; ++kx) {
          int64_t ox0, ox1;
          valid_range(p.W, p.Wo, p.sw, p.pw, kx * p.dw, ox0, ox1);
          double s = 0.0;
          for (int64_t n = 0; n < p.N; ++n) {
            const T* gp = gy + (n * p.O + o) * plane;
            const T* xp = x + (n * p.C + g * p.Cg + c) * p.H * p.W;
            for (int64_t oy = oy0; oy < oy1; ++oy) {
              const T* xr = xp + (oy * p.sh - p.ph + ky * p.dh) * p.W - p.pw + kx * p.dw;
              const T* gr = gp + oy * p.Wo;
              for (int64_t ox = ox0; ox < ox1; ++ox) s += ld(gr + ox) * ld(xr + ox * p.sw);
            }
          }
          st(gw + (oc * p.KH + ky) * p.KW + kx, s);
        }
      }
    });
  if (gb)
    parallel_for(p.O, p.N * plane, [&](int64_t o) {
      double s = 0.0;
      for (int64_t n = 0; n < p.N; ++n) {
        const T* gp = gy + (n * p.O + o) * plane;
        for (int64_t i = 0; i < plane; ++i) s += ld(gp + i);
      }
      st(gb + o, s);
    });
}

}  // namespace

void conv2d_loops(const ConvShape& p, const gn_tensor_view& x, const gn_tensor_view& w, const gn_tensor_view* bias,
                  const gn_tensor_view& y) {
  if (!dispatch_float_h(x.dtype, [&](auto t) {
        using T = decltype(t);
        forward<T>(p, (const T*)data_of(x), (const T*)data_of(w), bias ? (const T*)data_of(*bias) : nullptr,
                   (T*)data_of(y));
      }))
    GN_UNSUPPORTED("[conv2d] dtype");
}

void conv2d_backward_loops(const ConvShape& p, const gn_tensor_view& gy, const gn_tensor_view& x,
                           const gn_tensor_view& w, const gn_tensor_view* gx, const gn_tensor_view* gw,
                           const gn_tensor_view* gb) {
  if (!dispatch_float_h(x.dtype, [&](auto t) {
        using T = decltype(t);
        backward<T>(p, (const T*)data_of(gy), (const T*)data_of(x), (const T*)data_of(w), gx ? (T*)data_of(*gx) : nullptr,
                    gw ? (T*)data_of(*gw) : nullptr, gb ? (T*)data_of(*gb) : nullptr);
      }))
    GN_UNSUPPORTED("[conv2d_backward] dtype");
}

}  // namespace gn::cpu
