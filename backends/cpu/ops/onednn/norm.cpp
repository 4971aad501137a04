// backends/cpu/ops/onednn/norm.cpp - layer_norm forward through oneDNN layer normalization.
//
// x (..., N) normalised over its last normalized_ndim dims (N = their product),
// optional weight/bias (N) -> y (x's shape and dtype), mean (R), rstd (R) in
// f32, R = numel / N.  Dense (GN_KERNEL_CONTIGUOUS), so x is (R, N).  oneDNN
// (forward_training) writes mean and the biased variance (f32) itself; rstd =
// 1/sqrt(var + eps) is computed here.  Scale/shift must be f32 for oneDNN 2.6:
// bf16/f16 weights are widened into a scratch buffer first.
// C++ rows (f64, and f16 where oneDNN has no f16 layer norm): the reference's
// two-pass double statistics, rows in parallel, mean/rstd in the output's
// dtype (f64 for f64).
#include <cmath>

#include "loops.h"

namespace gn::cpu::onednn {
namespace {

// Widen n elements of a dense float view into f32 at dst (a plain copy for f32).
void to_f32(const gn_tensor_view& v, int64_t n, float* dst) {
  const char* p = (const char*)data_of(v);
  switch (v.dtype) {
    case GN_F32: copy_bytes(dst, p, (size_t)n * 4); break;
    case GN_BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = gn::sdk::bf16_to_float(((const uint16_t*)p)[i]);
      break;
    case GN_F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = gn::sdk::half_to_float(((const uint16_t*)p)[i]);
      break;
    default: break;
  }
}

// x (R, N) -> y, mean (R), rstd (R); w/b widened to double (nullptr: none).
template <class T, class TS>
void layer_norm_rows(const T* x, T* y, TS* mean, TS* rstd, const double* w, const double* b, int64_t R, int64_t N,
                     double eps) {
  parallel_for(R, 4 * N, [&](int64_t r) {
    const T* xr = x + r * N;
    double m = 0.0;
    for (int64_t i = 0; i < N; ++i) m += ld(xr + i);
    m /= (double)N;
    double v = 0.0;
    for (int64_t i = 0; i < N; ++i) {
      const double d = ld(xr + i) - m;
      v += d * d;
    }
    v /= (double)N;
    const double s = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < N; ++i) {
      double o = (ld(xr + i) - m) * s;
      if (w) o *= w[i];
      if (b) o += b[i];
      st(y + r * N + i, o);
    }
    st(mean + r, m);
    st(rstd + r, s);
  });
}

void layer_norm_cpp(const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out, int64_t R, int64_t N,
                    double eps) {
  std::vector<double> w, b;
  for (size_t k = 1; k < n_in; ++k) {
    std::vector<double>& v = k == 1 ? w : b;
    v.resize((size_t)N);
    for (int64_t i = 0; i < N; ++i)
      v[(size_t)i] = gn::sdk::load((const char*)data_of(in[k]) + i * gn_dtype_size(in[k].dtype), in[k].dtype);
  }
  const double* wp = n_in > 1 ? w.data() : nullptr;
  const double* bp = n_in > 2 ? b.data() : nullptr;
  const gn_tensor_view& x = in[0];
  auto stats = [&](auto t) {
    using T = decltype(t);
    if (out[1].dtype == GN_F64)
      layer_norm_rows<T, double>((const T*)data_of(x), (T*)data_of(out[0]), (double*)data_of(out[1]),
                                 (double*)data_of(out[2]), wp, bp, R, N, eps);
    else
      layer_norm_rows<T, float>((const T*)data_of(x), (T*)data_of(out[0]), (float*)data_of(out[1]),
                                (float*)data_of(out[2]), wp, bp, R, N, eps);
  };
  switch (x.dtype) {
    case GN_F64: stats(double{}); break;
    case GN_F32: stats(float{}); break;
    case GN_F16: stats(f16_t{}); break;
    case GN_BF16: stats(bf16_t{}); break;
    default: GN_UNSUPPORTED(std::string("[layer_norm] ") + gn_dtype_name(x.dtype));
  }
}

GN_SDK_KERNEL(layer_norm_kernel) {
  const char* op = "layer_norm";
  if (n_in < 1 || n_in > 3 || n_out != 3) GN_UNSUPPORTED("[layer_norm] this input/output count");
  const gn_tensor_view& x = in[0];
  const int32_t dt = x.dtype;
  if (dt != GN_F32 && dt != GN_BF16 && dt != GN_F16 && dt != GN_F64)
    GN_UNSUPPORTED(std::string("[layer_norm] ") + gn_dtype_name(dt));
  const int32_t sdt = dt == GN_F64 ? GN_F64 : GN_F32;
  if (out[0].dtype != dt || out[1].dtype != sdt || out[2].dtype != sdt) GN_UNSUPPORTED("[layer_norm] output dtypes");
  bool cpp = dt == GN_F64;
  for (size_t i = 1; i < n_in; ++i)
    if (in[i].dtype != GN_F32 && in[i].dtype != GN_BF16 && in[i].dtype != GN_F16) cpp = true;
  const int64_t nd = n_attrs > 0 && attrs[0].kind == GN_ATTR_INT ? attrs[0].u.i : 1;
  const double eps = n_attrs > 1 && attrs[1].kind == GN_ATTR_FLOAT ? attrs[1].u.f : 1e-5;
  if (nd < 1 || nd > x.ndim) GN_UNSUPPORTED("[layer_norm] normalized_ndim outside 1..ndim");
  int64_t N = 1;
  for (int32_t d = x.ndim - (int32_t)nd; d < x.ndim; ++d) N *= x.shape[d];
  const int64_t numel = gn_view_numel(&x);
  if (N == 0) GN_UNSUPPORTED("[layer_norm] empty normalized dims");  // NaN stats: the reference's call
  const int64_t R = numel / N;
  if (gn_view_numel(&out[0]) != numel || gn_view_numel(&out[1]) != R || gn_view_numel(&out[2]) != R)
    fail_op(GN_ERR_SHAPE, op, "output sizes do not match x");
  for (size_t i = 1; i < n_in; ++i)
    if (gn_view_numel(&in[i]) != N) fail_op(GN_ERR_SHAPE, op, "weight/bias must have N elements");
  if (R == 0) return;
  if (cpp) return layer_norm_cpp(in, n_in, out, R, N, eps);

  const bool has_w = n_in > 1, has_b = n_in > 2;
  auto flags = dnnl::normalization_flags::none;
  if (has_w) flags |= dnnl::normalization_flags::use_scale;
  if (has_b) flags |= dnnl::normalization_flags::use_shift;
  Key key("layer_norm");
  key.add((int64_t)dt).add(R).add(N).add(eps).add((int64_t)has_w).add((int64_t)has_b);
  auto c = cached(key, [&](Cached& e) {
    e.src_md = make_md({R, N}, {N, 1}, dt);
    e.aux_md = make_md({R}, {1}, GN_F32);   // mean / variance
    e.src1_md = make_md({N}, {1}, GN_F32);  // scale / shift
    dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_training, e.src_md, e.aux_md, (float)eps, flags);
    dnnl::layer_normalization_forward::primitive_desc pd(d, base_attr(), engine());
    finish(e, pd);
    e.prim = dnnl::layer_normalization_forward(pd);
  });
  if (!c->supported) return layer_norm_cpp(in, n_in, out, R, N, eps);

  // Scratch: variance (R) then widened weight/bias (N each) where needed.
  const bool widen_w = has_w && in[1].dtype != GN_F32, widen_b = has_b && in[2].dtype != GN_F32;
  const size_t scratch_n = (size_t)R + (widen_w ? (size_t)N : 0) + (widen_b ? (size_t)N : 0);
  std::vector<float> local;
  float* scratch = ctx->workspace ? (float*)ctx->workspace(ctx, scratch_n * sizeof(float)) : nullptr;
  if (!scratch) {
    local.resize(scratch_n);
    scratch = local.data();
  }
  float* var = scratch;
  float* w32 = var + R;
  float* b32 = w32 + (widen_w ? N : 0);
  const void* wp = has_w ? data_of(in[1]) : nullptr;
  const void* bp = has_b ? data_of(in[2]) : nullptr;
  if (widen_w) {
    to_f32(in[1], N, w32);
    wp = w32;
  }
  if (widen_b) {
    to_f32(in[2], N, b32);
    bp = b32;
  }

  float* mean = (float*)data_of(out[1]);
  float* rstd = (float*)data_of(out[2]);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(c->src_md, data_of(x))},
                                             {DNNL_ARG_DST, mem(c->src_md, data_of(out[0]))},
                                             {DNNL_ARG_MEAN, mem(c->aux_md, mean)},
                                             {DNNL_ARG_VARIANCE, mem(c->aux_md, var)}};
  if (has_w) args.emplace(DNNL_ARG_SCALE, mem(c->src1_md, wp));
  if (has_b) args.emplace(DNNL_ARG_SHIFT, mem(c->src1_md, bp));
  execute(ctx, *c, std::move(args));
  const float feps = (float)eps;
  parallel_range(R, [&](int64_t r0, int64_t r1) {
#pragma omp simd
    for (int64_t r = r0; r < r1; ++r) rstd[r] = 1.0f / std::sqrt(var[r] + feps);
  });
}

}  // namespace

void register_norm(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16, GN_F64};
  r.kernel("layer_norm", dtypes, layer_norm_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::onednn
