// backends/cpu/ops/simd/loss.cpp - cross_entropy forward and backward in C++
// (class dim LAST, ignore_index, label smoothing, reductions none/mean/sum),
// f32 and f64 logits, int32/int64 targets, rows in parallel.
//
// Per row: lse = logsumexp(x) in double (max pass, exp-sum pass), loss =
// (1-ls)*(lse - x[t]) + ls*mean_c(lse - x[c]); ignored rows give 0 and do not
// count for the mean; the reduced sum adds the per-row losses in row order
// (deterministic).  Backward recomputes softmax from the logits in double:
// grad = scale*(exp(x - lse) - (1-ls)*onehot(t) - ls/C).  Out-of-range targets
// and bad attributes answer "unsupported" so the reference reports them.
#include "loops.h"

namespace gn::cpu::simd {
namespace {

template <class T>
double row_lse(const T* x, int64_t C) {
  double m = -INFINITY;
  for (int64_t c = 0; c < C; ++c) {
    const double v = x[c];
    if (v != v) return v;
    m = v > m ? v : m;
  }
  if (std::isinf(m)) return m;
  double s = 0.0;
  for (int64_t c = 0; c < C; ++c) s += std::exp((double)x[c] - m);
  return m + std::log(s);
}

bool load_targets(const gn_tensor_view& t, std::vector<int64_t>& out, int64_t C, int64_t ignore) {
  const int64_t n = gn_view_numel(&t);
  out.resize((size_t)n);
  if (t.dtype == GN_I64) {
    if (n) copy_bytes(out.data(), data_of(t), (size_t)n * 8);  // empty: data may be NULL
  } else if (t.dtype == GN_I32)
    for (int64_t i = 0; i < n; ++i) out[(size_t)i] = ((const int32_t*)data_of(t))[i];
  else
    return false;
  for (int64_t v : out)
    if (v != ignore && (v < 0 || v >= C)) return false;
  return true;
}

void store_scalar(const gn_tensor_view& v, int64_t i, double x) {
  gn::sdk::store((char*)data_of(v) + i * (int64_t)gn_dtype_size(v.dtype), v.dtype, x);
}
double load_scalar(const gn_tensor_view& v, int64_t i) {
  return gn::sdk::load((const char*)data_of(v) + i * (int64_t)gn_dtype_size(v.dtype), v.dtype);
}
bool f32_or_f64(const gn_tensor_view& v) { return is_float_dt(v.dtype); }  // and f16/bf16

// Shapes: logits (*, C), target (*) -> R rows.
bool ce_shapes(const gn_tensor_view& x, const gn_tensor_view& t, int64_t& R, int64_t& C) {
  if (x.ndim < 1 || t.ndim != x.ndim - 1) return false;
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] != x.shape[d]) return false;
  C = x.shape[x.ndim - 1];
  R = gn_view_numel(&t);
  return true;
}

GN_SDK_KERNEL(cross_entropy_kernel) {
  if (n_in < 2 || n_out < 1) GN_UNSUPPORTED("[cross_entropy] arity");
  const gn_tensor_view &x = in[0], &t = in[1];
  const int64_t ignore = attr_i(attrs, n_attrs, 0, -100), red = attr_i(attrs, n_attrs, 2, 1);
  const double ls = attr_d(attrs, n_attrs, 1, 0.0);
  int64_t R = 0, C = 0;
  std::vector<int64_t> tg;
  if (!f32_or_f64(x) || !ce_shapes(x, t, R, C) || red < 0 || red > 2 || !load_targets(t, tg, C, ignore))
    GN_UNSUPPORTED("[cross_entropy] these arguments");
  if (!f32_or_f64(out[0]) || gn_view_numel(&out[0]) != (red == 0 ? R : 1)) GN_UNSUPPORTED("[cross_entropy] loss");
  if (n_out > 1 && (!f32_or_f64(out[1]) || gn_view_numel(&out[1]) != R)) GN_UNSUPPORTED("[cross_entropy] lse");
  std::vector<double> loss((size_t)R);
  dispatch_float_h(x.dtype, [&](auto z) {
    using T = decltype(z);
    const T* px = (const T*)data_of(x);
    parallel_for(R, 3 * C, [&](int64_t r) {
      const T* xr = px + r * C;
      const double lse = row_lse(xr, C);
      if (n_out > 1) store_scalar(out[1], r, lse);
      const int64_t tr = tg[(size_t)r];
      if (tr == ignore) {
        loss[(size_t)r] = 0.0;
        return;
      }
      double smooth = 0.0;
      if (ls != 0.0) {
        for (int64_t c = 0; c < C; ++c) smooth += lse - (double)xr[c];
        smooth /= (double)C;
      }
      loss[(size_t)r] = (1.0 - ls) * (lse - (double)xr[tr]) + ls * smooth;
    });
  });
  if (red == 0) {
    for (int64_t r = 0; r < R; ++r) store_scalar(out[0], r, loss[(size_t)r]);
    return;
  }
  double sum = 0.0;
  int64_t count = 0;
  for (int64_t r = 0; r < R; ++r) {
    sum += loss[(size_t)r];
    count += tg[(size_t)r] != ignore;
  }
  store_scalar(out[0], 0, red == 1 ? sum / (double)count : sum);
}

GN_SDK_KERNEL(cross_entropy_backward_kernel) {
  if (n_in < 4 || n_out < 1) GN_UNSUPPORTED("[cross_entropy_backward] arity");
  const gn_tensor_view &g = in[0], &x = in[1], &t = in[2], &dx = out[0];
  const int64_t ignore = attr_i(attrs, n_attrs, 0, -100), red = attr_i(attrs, n_attrs, 2, 1);
  const double ls = attr_d(attrs, n_attrs, 1, 0.0);
  int64_t R = 0, C = 0;
  std::vector<int64_t> tg;
  if (!f32_or_f64(x) || !f32_or_f64(g) || dx.dtype != x.dtype || !ce_shapes(x, t, R, C) || red < 0 || red > 2 ||
      !load_targets(t, tg, C, ignore) || gn_view_numel(&in[3]) != R || gn_view_numel(&dx) != gn_view_numel(&x) ||
      gn_view_numel(&g) != (red == 0 ? R : 1))
    GN_UNSUPPORTED("[cross_entropy_backward] these arguments");
  int64_t count = 0;
  for (int64_t v : tg) count += v != ignore;
  const double g0 = red == 0 ? 0.0 : load_scalar(g, 0);
  dispatch_float_h(x.dtype, [&](auto z) {
    using T = decltype(z);
    const T* px = (const T*)data_of(x);
    T* pd = (T*)data_of(dx);
    parallel_for(R, 3 * C, [&](int64_t r) {
      const T* xr = px + r * C;
      T* dr = pd + r * C;
      const int64_t tr = tg[(size_t)r];
      if (tr == ignore) {
        for (int64_t c = 0; c < C; ++c) dr[c] = to_t<T>(0.0);
        return;
      }
      const double scale = red == 0 ? load_scalar(g, r) : red == 1 ? g0 / (double)count : g0;
      const double lse = row_lse(xr, C), off = ls / (double)C;
      for (int64_t c = 0; c < C; ++c)
        dr[c] = to_t<T>(scale * (std::exp((double)xr[c] - lse) - (c == tr ? 1.0 - ls : 0.0) - off));
    });
  });
}

}  // namespace

void register_loss(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("cross_entropy", dtypes, cross_entropy_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cross_entropy_backward", dtypes, cross_entropy_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
