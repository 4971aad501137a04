// backends/cpu/ops/onednn/conv.cpp - conv2d forward and backward through oneDNN
// convolution (forward_training, backward_data, backward_weights with bias),
// f32, NCHW user tensors (registered GN_KERNEL_CONTIGUOUS).  f64, f16 and
// bf16 run the direct C++ loops below (as does anything oneDNN refuses).
//
// Primitives are created with format_tag::any so oneDNN picks its blocked
// layouts (nChw8c/16c, OIhw8i8o ...); user tensors are reordered into them
// and the result back, each reorder skipped when the chosen layout is the
// plain one.  Everything (primitive, reorders, buffer sizes) is cached by
// shape, attributes and kind.  Groups map to oneDNN's goihw weights;
// dilation d is oneDNN's d-1; right padding is chosen so oneDNN's output size
// equals torch's floor formula.  Bad arguments answer "unsupported", so the
// reference reports the error.
//
// The direct C++ loops, for what oneDNN does not take here: f64 (oneDNN has no
// f64 convolution), and f16/bf16 on CPUs whose oneDNN refuses them.  NCHW
// x (N,C,H,W), w (O,C/G,KH,KW), optional bias (O), dense.  Every sum is
// in double and rounded once into the output dtype (the reference computes in
// double too; only the summation order differs).  Parallel over independent
// output planes, so nothing is shared between threads:
//   forward       (n, o) planes of y: for each (c, ky, kx) one weight times a
//                 shifted plane of x, accumulated into a double plane
//                 (contiguous along the output row when stride_w == 1)
//   grad_x        (n, c) planes of x: the transposed scatter of the above
//   grad_w/bias   (o, c) weight slices: sums over n and the output plane
#include <algorithm>

#include "loops.h"

namespace gn::cpu::onednn {
namespace {

// NCHW conv geometry: x (N,C,H,W), w (O,Cg,KH,KW) with Cg = C/G, strides,
// paddings, dilations, output (Ho, Wo) by torch's floor formula.
struct ConvShape {
  int64_t N, C, H, W, O, Cg, KH, KW, G, sh, sw, ph, pw, dh, dw, Ho, Wo;
};

// ----------------------------------------------------------------------------
// direct C++ loops

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

// Dense views of the conv's dtype (f32, f64, f16, bf16); bias/gx/gw/gb may be null.
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
        backward<T>(p, (const T*)data_of(gy), (const T*)data_of(x), (const T*)data_of(w),
                    gx ? (T*)data_of(*gx) : nullptr, gw ? (T*)data_of(*gw) : nullptr, gb ? (T*)data_of(*gb) : nullptr);
      }))
    GN_UNSUPPORTED("[conv2d_backward] dtype");
}

// ----------------------------------------------------------------------------
// oneDNN convolution

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

bool conv_shape(const gn_tensor_view& x, const gn_tensor_view& w, const gn_attr_value* attrs, size_t n_attrs,
                ConvShape& p) {
  if (x.ndim != 4 || w.ndim != 4) return false;
  auto pair = [&](size_t i, int64_t d, int64_t& a, int64_t& b) {
    std::vector<int64_t> v = attr_v(attrs, n_attrs, i);
    if (v.size() == 1) v.push_back(v[0]);
    (void)d;
    if (v.size() != 2) return false;
    a = v[0];
    b = v[1];
    return true;
  };
  if (!pair(0, 1, p.sh, p.sw) || !pair(1, 0, p.ph, p.pw) || !pair(2, 1, p.dh, p.dw)) return false;
  p.G = attr_i(attrs, n_attrs, 3, 1);
  p.N = x.shape[0];
  p.C = x.shape[1];
  p.H = x.shape[2];
  p.W = x.shape[3];
  p.O = w.shape[0];
  p.Cg = w.shape[1];
  p.KH = w.shape[2];
  p.KW = w.shape[3];
  if (p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1 || p.ph < 0 || p.pw < 0) return false;
  if (p.G < 1 || p.C % p.G || p.O % p.G || p.Cg != p.C / p.G) return false;
  const int64_t eh = p.H + 2 * p.ph - p.dh * (p.KH - 1) - 1, ew = p.W + 2 * p.pw - p.dw * (p.KW - 1) - 1;
  if (eh < 0 || ew < 0) return false;
  p.Ho = eh / p.sh + 1;
  p.Wo = ew / p.sw + 1;
  return true;
}

// The cached pieces of one conv call kind.
struct ConvPrim {
  bool ok = false;
  dnnl::primitive prim;
  memory::desc a_user, b_user, c_user;  // per kind: the user (plain) layouts
  memory::desc a_opt, b_opt, c_opt;     // the primitive's layouts
  dnnl::reorder ra, rb, rc;             // user->opt for a, b; opt->user for c (when they differ)
  bool da = false, db = false, dc = false;
  memory::desc bias_md;
  memory::desc scratch_md;
};

enum Kind { kFwd = 0, kFwdBias = 1, kBwdData = 2, kBwdWeights = 3 };

std::shared_ptr<const ConvPrim> get_prim(Kind kind, const ConvShape& p) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const ConvPrim>> map;
  Key key("conv");
  key.add((int64_t)kind)
      .add(std::vector<int64_t>{p.N, p.C, p.H, p.W, p.O, p.KH, p.KW, p.G, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw});
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = map.find(key.bytes);
    if (it != map.end()) return it->second;
  }
  auto c = std::make_shared<ConvPrim>();
  try {
    const memory::dims src{p.N, p.C, p.H, p.W}, dst{p.N, p.O, p.Ho, p.Wo};
    const memory::dims wei =
        p.G == 1 ? memory::dims{p.O, p.Cg, p.KH, p.KW} : memory::dims{p.G, p.O / p.G, p.Cg, p.KH, p.KW};
    const tag wtag = p.G == 1 ? tag::oihw : tag::goihw;
    const memory::dims strides{p.sh, p.sw}, dil{p.dh - 1, p.dw - 1}, pl{p.ph, p.pw};
    const memory::dims pr{std::max<int64_t>(0, (p.Ho - 1) * p.sh + (p.KH - 1) * p.dh + 1 - p.H - p.ph),
                          std::max<int64_t>(0, (p.Wo - 1) * p.sw + (p.KW - 1) * p.dw + 1 - p.W - p.pw)};
    const memory::desc src_u(src, dt::f32, tag::nchw), dst_u(dst, dt::f32, tag::nchw), wei_u(wei, dt::f32, wtag);
    const memory::desc src_a(src, dt::f32, tag::any), dst_a(dst, dt::f32, tag::any), wei_a(wei, dt::f32, tag::any);
    c->bias_md = memory::desc({p.O}, dt::f32, tag::x);
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::primitive_attr attr = base_attr();
    const bool bias = kind == kFwdBias;
    auto fwd_d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src_a, wei_a,
                                                        c->bias_md, dst_a, strides, dil, pl, pr)
                      : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src_a, wei_a, dst_a,
                                                        strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc fwd(fwd_d, attr, engine());
    if (kind == kFwd || kind == kFwdBias) {
      c->a_user = src_u;
      c->b_user = wei_u;
      c->c_user = dst_u;
      c->a_opt = fwd.src_desc();
      c->b_opt = fwd.weights_desc();
      c->c_opt = fwd.dst_desc();
      c->scratch_md = fwd.scratchpad_desc();
      c->prim = dnnl::convolution_forward(fwd);
    } else if (kind == kBwdData) {  // a = diff_dst, b = weights, c = diff_src
      dnnl::convolution_backward_data::desc d(alg, src_a, wei_a, dst_a, strides, dil, pl, pr);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, engine(), fwd);
      c->a_user = dst_u;
      c->b_user = wei_u;
      c->c_user = src_u;
      c->a_opt = pd.diff_dst_desc();
      c->b_opt = pd.weights_desc();
      c->c_opt = pd.diff_src_desc();
      c->scratch_md = pd.scratchpad_desc();
      c->prim = dnnl::convolution_backward_data(pd);
    } else {  // a = diff_dst, b = src, c = diff_weights (+ diff_bias, plain)
      dnnl::convolution_backward_weights::desc d(alg, src_a, wei_a, c->bias_md, dst_a, strides, dil, pl, pr);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, engine(), fwd);
      c->a_user = dst_u;
      c->b_user = src_u;
      c->c_user = wei_u;
      c->a_opt = pd.diff_dst_desc();
      c->b_opt = pd.src_desc();
      c->c_opt = pd.diff_weights_desc();
      if (pd.diff_bias_desc() != c->bias_md) throw dnnl::error(dnnl_unimplemented, "bias layout");
      c->scratch_md = pd.scratchpad_desc();
      c->prim = dnnl::convolution_backward_weights(pd);
    }
    c->da = c->a_opt != c->a_user;
    c->db = c->b_opt != c->b_user;
    c->dc = c->c_opt != c->c_user;
    if (c->da) c->ra = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), c->a_user, engine(), c->a_opt));
    if (c->db) c->rb = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), c->b_user, engine(), c->b_opt));
    if (c->dc) c->rc = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), c->c_opt, engine(), c->c_user));
    c->ok = true;
  } catch (const dnnl::error&) {
    c->ok = false;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (map.size() > 1024) map.clear();
  return map.emplace(key.bytes, std::move(c)).first->second;
}

// Scratch memory: the kernel workspace, else a thread-local buffer per slot.
void* scratch(const gn_kernel_ctx* ctx, size_t bytes, int slot) {
  if (!bytes) return nullptr;
  void* p = ctx && ctx->workspace ? ctx->workspace(ctx, bytes + 64) : nullptr;
  if (p) return (void*)(((uintptr_t)p + 63) & ~(uintptr_t)63);
  thread_local std::vector<char> local[5];
  if (local[slot].size() < bytes + 64) local[slot].resize(bytes + 64);
  return (void*)(((uintptr_t)local[slot].data() + 63) & ~(uintptr_t)63);
}

// Run kind on user pointers a, b -> c (bias: in for kFwdBias, out for kBwdWeights).
void run_conv(const gn_kernel_ctx* ctx, const ConvPrim& c, Kind kind, const void* a, const void* b, void* out,
              void* bias) {
  const OmpThreads team(num_threads());
  dnnl::stream& s = stream();
  memory au = mem(c.a_user, a), bu = mem(c.b_user, b), cu = mem(c.c_user, out);
  memory ao = c.da ? mem(c.a_opt, scratch(ctx, c.a_opt.get_size(), 0)) : au;
  memory bo = c.db ? mem(c.b_opt, scratch(ctx, c.b_opt.get_size(), 1)) : bu;
  memory co = c.dc ? mem(c.c_opt, scratch(ctx, c.c_opt.get_size(), 2)) : cu;
  auto body = [&] {
    if (c.da) c.ra.execute(s, au, ao);
    if (c.db) c.rb.execute(s, bu, bo);
    std::unordered_map<int, memory> args;
    if (c.scratch_md.get_size())
      args.emplace(DNNL_ARG_SCRATCHPAD, mem(c.scratch_md, scratch(ctx, c.scratch_md.get_size(), 3)));
    if (kind == kFwd || kind == kFwdBias) {
      args.emplace(DNNL_ARG_SRC, ao);
      args.emplace(DNNL_ARG_WEIGHTS, bo);
      args.emplace(DNNL_ARG_DST, co);
      if (kind == kFwdBias) args.emplace(DNNL_ARG_BIAS, mem(c.bias_md, bias));
    } else if (kind == kBwdData) {
      args.emplace(DNNL_ARG_DIFF_DST, ao);
      args.emplace(DNNL_ARG_WEIGHTS, bo);
      args.emplace(DNNL_ARG_DIFF_SRC, co);
    } else {
      args.emplace(DNNL_ARG_DIFF_DST, ao);
      args.emplace(DNNL_ARG_SRC, bo);
      args.emplace(DNNL_ARG_DIFF_WEIGHTS, co);
      args.emplace(DNNL_ARG_DIFF_BIAS, mem(c.bias_md, bias));
    }
    c.prim.execute(s, args);
    if (c.dc) c.rc.execute(s, co, cu);
    s.wait();
  };
  DNNL_CHECK(body());
}

bool same_shape(const gn_tensor_view& v, std::initializer_list<int64_t> s) {
  if ((size_t)v.ndim != s.size()) return false;
  int32_t d = 0;
  for (int64_t e : s)
    if (v.shape[d++] != e) return false;
  return true;
}

GN_SDK_KERNEL(conv2d_kernel) {
  if (n_in < 2 || n_out < 1) GN_UNSUPPORTED("[conv2d] arity");
  ConvShape p{};
  if (!conv_shape(in[0], in[1], attrs, n_attrs, p)) GN_UNSUPPORTED("[conv2d] these arguments");
  const int32_t dt = in[0].dtype;
  for (size_t i = 0; i < n_in; ++i)
    if (in[i].dtype != dt) GN_UNSUPPORTED("[conv2d] mixed dtypes");
  const bool bias = n_in > 2;
  if (bias && !same_shape(in[2], {p.O})) GN_UNSUPPORTED("[conv2d] bias shape");
  if (!same_shape(out[0], {p.N, p.O, p.Ho, p.Wo}) || out[0].dtype != dt) GN_UNSUPPORTED("[conv2d] output");
  if (gn_view_numel(&out[0]) == 0) return;
  if (p.C == 0 || p.KH == 0 || p.KW == 0) GN_UNSUPPORTED("[conv2d] empty reduction");
  // f64 (and any other non-f32 dtype): the direct loops
  if (dt != GN_F32) return conv2d_loops(p, in[0], in[1], bias ? &in[2] : nullptr, out[0]);
  const Kind kind = bias ? kFwdBias : kFwd;
  auto c = get_prim(kind, p);
  if (!c->ok) return conv2d_loops(p, in[0], in[1], bias ? &in[2] : nullptr, out[0]);
  run_conv(ctx, *c, kind, data_of(in[0]), data_of(in[1]), data_of(out[0]), bias ? data_of(in[2]) : nullptr);
}

GN_SDK_KERNEL(conv2d_backward_kernel) {
  if (n_in < 3 || n_out < 3) GN_UNSUPPORTED("[conv2d_backward] arity");
  ConvShape p{};
  if (!conv_shape(in[1], in[2], attrs, n_attrs, p)) GN_UNSUPPORTED("[conv2d_backward] these arguments");
  const int32_t dt = in[1].dtype;
  for (size_t i = 0; i < 3; ++i)
    if (in[i].dtype != dt || out[i].dtype != dt) GN_UNSUPPORTED("[conv2d_backward] mixed dtypes");
  if (!same_shape(in[0], {p.N, p.O, p.Ho, p.Wo}) || !same_shape(out[0], {p.N, p.C, p.H, p.W}) ||
      !same_shape(out[1], {p.O, p.Cg, p.KH, p.KW}) || !same_shape(out[2], {p.O}))
    GN_UNSUPPORTED("[conv2d_backward] shapes");
  const size_t es = gn_dtype_size(dt);
  if (p.N == 0 && p.C > 0 && p.KH > 0 && p.KW > 0) {  // empty batch: no gradient flows (zero bits are 0.0)
    set_bytes(data_of(out[1]), 0, (size_t)gn_view_numel(&out[1]) * es);
    set_bytes(data_of(out[2]), 0, (size_t)gn_view_numel(&out[2]) * es);
    return;
  }
  if (gn_view_numel(&in[0]) == 0 || gn_view_numel(&out[0]) == 0 || gn_view_numel(&out[1]) == 0)
    GN_UNSUPPORTED("[conv2d_backward] empty tensors");
  if (dt != GN_F32) return conv2d_backward_loops(p, in[0], in[1], in[2], &out[0], &out[1], &out[2]);
  auto cd = get_prim(kBwdData, p);
  auto cw = get_prim(kBwdWeights, p);
  if (!cd->ok || !cw->ok) return conv2d_backward_loops(p, in[0], in[1], in[2], &out[0], &out[1], &out[2]);
  run_conv(ctx, *cd, kBwdData, data_of(in[0]), data_of(in[2]), data_of(out[0]), nullptr);
  run_conv(ctx, *cw, kBwdWeights, data_of(in[0]), data_of(in[1]), data_of(out[1]), data_of(out[2]));
}

}  // namespace

void register_conv(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("conv2d", dtypes, conv2d_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("conv2d_backward", dtypes, conv2d_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::onednn
