// backends/cpu/ops/simd/pool.cpp - max_pool2d (with torch's flat ih*W+iw indices),
// avg_pool2d and both backwards in C++, f32, f64, f16 and bf16, planes (N*C)
// in parallel.  oneDNN's pooling is not used: its max workspace holds offsets
// in its own window order, not torch's indices, and its avg divisor rules
// differ from torch's with ceil_mode; these loops follow the reference's
// definitions (same window walk, same double accumulation order per plane),
// so the results are bit-identical to it.
//   Ho = floor((H + 2p - d(k-1) - 1 + (ceil ? s-1 : 0)) / s) + 1, minus one when
//   ceil_mode's last window would start at or past H + p.
// Bad attributes answer "unsupported" so the reference reports them.
#include "loops.h"

namespace gn::cpu::simd {
namespace {

struct Pool {
  int64_t P, H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo;
  bool ceil_mode, include_pad;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  const int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

bool pair(const gn_attr_value* a, size_t n, size_t i, int64_t& x, int64_t& y, bool may_be_empty = false) {
  std::vector<int64_t> v = attr_v(a, n, i);
  if (v.empty() && may_be_empty) return true;
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) return false;
  x = v[0];
  y = v[1];
  return true;
}

bool pool_params(const gn_tensor_view& x, const gn_attr_value* a, size_t n, bool is_max, Pool& p) {
  if (x.ndim != 3 && x.ndim != 4) return false;
  p.H = x.shape[x.ndim - 2];
  p.W = x.shape[x.ndim - 1];
  p.P = 1;
  for (int32_t d = 0; d < x.ndim - 2; ++d) p.P *= x.shape[d];
  if (!pair(a, n, 0, p.kh, p.kw)) return false;
  p.sh = p.kh;
  p.sw = p.kw;
  if (!pair(a, n, 1, p.sh, p.sw, true) || !pair(a, n, 2, p.ph, p.pw)) return false;
  p.dh = p.dw = 1;
  if (is_max) {
    if (!pair(a, n, 3, p.dh, p.dw)) return false;
    p.ceil_mode = attr_i(a, n, 4, 0) != 0;
    p.include_pad = true;
  } else {
    p.ceil_mode = attr_i(a, n, 3, 0) != 0;
    p.include_pad = attr_i(a, n, 4, 1) != 0;
  }
  if (p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1) return false;
  if (p.ph < 0 || p.pw < 0 || p.ph > p.kh / 2 || p.pw > p.kw / 2) return false;
  p.Ho = out_size(p.H, p.kh, p.sh, p.ph, p.dh, p.ceil_mode);
  p.Wo = out_size(p.W, p.kw, p.sw, p.pw, p.dw, p.ceil_mode);
  return p.Ho >= 1 && p.Wo >= 1;
}

bool shape_is(const gn_tensor_view& v, const gn_tensor_view& like, int64_t h, int64_t w) {
  if (v.ndim != like.ndim) return false;
  for (int32_t d = 0; d < v.ndim - 2; ++d)
    if (v.shape[d] != like.shape[d]) return false;
  return v.shape[v.ndim - 2] == h && v.shape[v.ndim - 1] == w;
}

template <class T>
void max_fwd(const T* x, T* y, int64_t* idx, const Pool& p) {
  parallel_for(p.P, p.H * p.W + p.Ho * p.Wo * p.kh * p.kw, [&](int64_t c) {
    const T* xc = x + c * p.H * p.W;
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
        const int64_t h1 = std::min(h0 + (p.kh - 1) * p.dh + 1, p.H), w1 = std::min(w0 + (p.kw - 1) * p.dw + 1, p.W);
        while (h0 < 0) h0 += p.dh;
        while (w0 < 0) w0 += p.dw;
        int64_t best = h0 * p.W + w0;
        double m = -INFINITY;  // compared in double: exact for every float dtype
        for (int64_t ih = h0; ih < h1; ih += p.dh)
          for (int64_t iw = w0; iw < w1; iw += p.dw) {
            const double v = ld(xc + ih * p.W + iw);
            if (v > m || v != v) {
              m = v;
              best = ih * p.W + iw;
            }
          }
        const int64_t o = (c * p.Ho + oh) * p.Wo + ow;
        y[o] = xc[best];  // the winning element itself
        if (idx) idx[o] = best;
      }
  });
}

template <class T>
void max_bwd(const T* dy, const int64_t* idx, T* dx, const Pool& p) {
  parallel_for(p.P, p.H * p.W + p.Ho * p.Wo, [&](int64_t c) {
    std::vector<double> acc((size_t)(p.H * p.W), 0.0);
    const int64_t o0 = c * p.Ho * p.Wo;
    for (int64_t o = 0; o < p.Ho * p.Wo; ++o) acc[(size_t)idx[o0 + o]] += ld(dy + o0 + o);
    T* d = dx + c * p.H * p.W;
    for (int64_t i = 0; i < p.H * p.W; ++i) st(d + i, acc[(size_t)i]);
  });
}

struct Win {
  int64_t h0, h1, w0, w1;
  double div;
};
inline Win window(const Pool& p, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
  int64_t h1 = std::min(h0 + p.kh, p.H + p.ph), w1 = std::min(w0 + p.kw, p.W + p.pw);
  const int64_t area = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.H);
  w1 = std::min(w1, p.W);
  return {h0, h1, w0, w1, p.include_pad ? (double)area : (double)((h1 - h0) * (w1 - w0))};
}

template <class T>
void avg_fwd(const T* x, T* y, const Pool& p) {
  parallel_for(p.P, p.Ho * p.Wo * p.kh * p.kw, [&](int64_t c) {
    const T* xc = x + c * p.H * p.W;
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        const Win a = window(p, oh, ow);
        double s = 0.0;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) s += ld(xc + ih * p.W + iw);
        st(y + (c * p.Ho + oh) * p.Wo + ow, (a.h0 >= a.h1 || a.w0 >= a.w1) ? 0.0 : s / a.div);
      }
  });
}

template <class T>
void avg_bwd(const T* dy, T* dx, const Pool& p) {
  parallel_for(p.P, p.H * p.W + p.Ho * p.Wo * p.kh * p.kw, [&](int64_t c) {
    std::vector<double> acc((size_t)(p.H * p.W), 0.0);
    for (int64_t oh = 0; oh < p.Ho; ++oh)
      for (int64_t ow = 0; ow < p.Wo; ++ow) {
        const Win a = window(p, oh, ow);
        const double g = ld(dy + (c * p.Ho + oh) * p.Wo + ow) / a.div;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) acc[(size_t)(ih * p.W + iw)] += g;
      }
    T* d = dx + c * p.H * p.W;
    for (int64_t i = 0; i < p.H * p.W; ++i) st(d + i, acc[(size_t)i]);
  });
}

GN_SDK_KERNEL(max_pool2d_kernel) {
  Pool p{};
  if (n_in < 1 || n_out < 1 || !pool_params(in[0], attrs, n_attrs, true, p) || out[0].dtype != in[0].dtype ||
      !shape_is(out[0], in[0], p.Ho, p.Wo) ||
      (n_out > 1 && (out[1].dtype != GN_I64 || !shape_is(out[1], in[0], p.Ho, p.Wo))))
    GN_UNSUPPORTED("[max_pool2d] these arguments");
  if (!dispatch_float_h(in[0].dtype, [&](auto z) {
        using T = decltype(z);
        max_fwd<T>((const T*)data_of(in[0]), (T*)data_of(out[0]), n_out > 1 ? (int64_t*)data_of(out[1]) : nullptr, p);
      }))
    GN_UNSUPPORTED("[max_pool2d] dtype");
}

GN_SDK_KERNEL(max_pool2d_backward_kernel) {
  Pool p{};
  if (n_in < 3 || n_out < 1 || !pool_params(in[1], attrs, n_attrs, true, p) || in[0].dtype != in[1].dtype ||
      out[0].dtype != in[1].dtype || in[2].dtype != GN_I64 || !shape_is(in[0], in[1], p.Ho, p.Wo) ||
      !shape_is(in[2], in[1], p.Ho, p.Wo) || !shape_is(out[0], in[1], p.H, p.W))
    GN_UNSUPPORTED("[max_pool2d_backward] these arguments");
  const int64_t* idx = (const int64_t*)data_of(in[2]);
  const int64_t n = gn_view_numel(&in[2]);
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= p.H * p.W) GN_UNSUPPORTED("[max_pool2d_backward] index out of range");
  if (!dispatch_float_h(in[1].dtype, [&](auto z) {
        using T = decltype(z);
        max_bwd<T>((const T*)data_of(in[0]), idx, (T*)data_of(out[0]), p);
      }))
    GN_UNSUPPORTED("[max_pool2d_backward] dtype");
}

GN_SDK_KERNEL(avg_pool2d_kernel) {
  Pool p{};
  if (n_in < 1 || n_out < 1 || !pool_params(in[0], attrs, n_attrs, false, p) || out[0].dtype != in[0].dtype ||
      !shape_is(out[0], in[0], p.Ho, p.Wo))
    GN_UNSUPPORTED("[avg_pool2d] these arguments");
  if (!dispatch_float_h(in[0].dtype, [&](auto z) {
        using T = decltype(z);
        avg_fwd<T>((const T*)data_of(in[0]), (T*)data_of(out[0]), p);
      }))
    GN_UNSUPPORTED("[avg_pool2d] dtype");
}

GN_SDK_KERNEL(avg_pool2d_backward_kernel) {
  Pool p{};
  if (n_in < 2 || n_out < 1 || !pool_params(in[1], attrs, n_attrs, false, p) || in[0].dtype != in[1].dtype ||
      out[0].dtype != in[1].dtype || !shape_is(in[0], in[1], p.Ho, p.Wo) || !shape_is(out[0], in[1], p.H, p.W))
    GN_UNSUPPORTED("[avg_pool2d_backward] these arguments");
  if (!dispatch_float_h(in[1].dtype, [&](auto z) {
        using T = decltype(z);
        avg_bwd<T>((const T*)data_of(in[0]), (T*)data_of(out[0]), p);
      }))
    GN_UNSUPPORTED("[avg_pool2d_backward] dtype");
}

}  // namespace

void register_pool(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("max_pool2d", dtypes, max_pool2d_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("max_pool2d_backward", dtypes, max_pool2d_backward_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("avg_pool2d", dtypes, avg_pool2d_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("avg_pool2d_backward", dtypes, avg_pool2d_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
