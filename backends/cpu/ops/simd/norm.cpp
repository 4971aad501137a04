// backends/cpu/ops/simd/norm.cpp - rms_norm, rms_norm_backward and
// layer_norm_backward in C++ (OpenMP over rows / chunks), f32, f64, f16 and
// bf16, dense tensors (GN_KERNEL_CONTIGUOUS).  Row statistics accumulate in
// double (the reference does everything in double), elementwise math is done
// in double too, so f32 outputs differ from the reference by about one
// rounding.  (layer_norm itself runs in onednn/norm.cpp.)
//   rms_norm(x (R,N), [w (N)]) -> (y, rstd (R) f32, f64 for f64 x)
//   rms_norm_backward(dy, x, rstd, [w]) -> (dx, dw): dw sums over rows per
//     thread-independent column blocks (deterministic)
//   layer_norm_backward(dy, x, mean, rstd, [w]) -> (dx, dw, db), same scheme
#include "norm.h"

namespace gn::cpu::simd {

// One row of rms_norm (norm.h): never inlined, so that rms_norm and
// add_rms_norm (simd/llm.cpp) run the same machine code and round identically
// (the simd reduction's lane order depends on how the loop is compiled).
template <class T>
[[gnu::noinline]] double rms_norm_row(const T* xr, const T* w, T* yr, int64_t N, double eps) {
  double ss = 0.0;
#pragma omp simd reduction(+ : ss)
  for (int64_t i = 0; i < N; ++i) ss += (double)xr[i] * (double)xr[i];
  const double s = 1.0 / std::sqrt(ss / (double)N + eps);
  if (w) {
#pragma omp simd
    for (int64_t i = 0; i < N; ++i) yr[i] = to_t<T>((double)xr[i] * s * (double)w[i]);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < N; ++i) yr[i] = to_t<T>((double)xr[i] * s);
  }
  return s;
}
template double rms_norm_row<float>(const float*, const float*, float*, int64_t, double);
template double rms_norm_row<double>(const double*, const double*, double*, int64_t, double);
template double rms_norm_row<f16_t>(const f16_t*, const f16_t*, f16_t*, int64_t, double);
template double rms_norm_row<bf16_t>(const bf16_t*, const bf16_t*, bf16_t*, int64_t, double);

namespace {

template <class T, class S>
void rms_fwd(const T* x, const T* w, T* y, S* rstd, int64_t R, int64_t N, double eps) {
  parallel_for(R, N, [&](int64_t r) {
    const double s = rms_norm_row<T>(x + r * N, w, y + r * N, N, eps);
    if (rstd) rstd[r] = (S)s;
  });
}

template <class T, class S>
void rms_bwd(const T* dy, const T* x, const S* rstd, const T* w, T* dx, T* dw, int64_t R, int64_t N) {
  parallel_for(R, 2 * N, [&](int64_t r) {
    const T* xr = x + r * N;
    const T* gr = dy + r * N;
    const double s = rstd[r];
    double dot = 0.0;
    if (w) {
#pragma omp simd reduction(+ : dot)
      for (int64_t i = 0; i < N; ++i) dot += (double)gr[i] * (double)w[i] * (double)xr[i];
    } else {
#pragma omp simd reduction(+ : dot)
      for (int64_t i = 0; i < N; ++i) dot += (double)gr[i] * (double)xr[i];
    }
    const double c = s * s * s * dot / (double)N;
    T* o = dx + r * N;
#pragma omp simd
    for (int64_t i = 0; i < N; ++i) o[i] = to_t<T>(s * (double)gr[i] * (w ? (double)w[i] : 1.0) - (double)xr[i] * c);
  });
  if (!dw) return;
  // dw[i] = sum_r dy[r,i]*x[r,i]*rstd[r]: column blocks in parallel, rows in order.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  parallel_for(blocks, R * kBlock, [&](int64_t b) {
    const int64_t i0 = b * kBlock, i1 = std::min(N, i0 + kBlock);
    double acc[kBlock] = {};
    for (int64_t r = 0; r < R; ++r) {
      const T* xr = x + r * N;
      const T* gr = dy + r * N;
      const double s = rstd[r];
#pragma omp simd
      for (int64_t i = i0; i < i1; ++i) acc[i - i0] += (double)gr[i] * (double)xr[i] * s;
    }
    for (int64_t i = i0; i < i1; ++i) dw[i] = to_t<T>(acc[i - i0]);
  });
}

int64_t last_dim(const gn_tensor_view& v) { return v.ndim ? v.shape[v.ndim - 1] : 1; }

GN_SDK_KERNEL(rms_norm_kernel) {
  if (n_in < 1 || n_out < 1) GN_UNSUPPORTED("[rms_norm] arity");
  const gn_tensor_view& x = in[0];
  const int32_t dt = x.dtype, sdt = dt == GN_F64 ? GN_F64 : GN_F32;
  const int64_t N = last_dim(x), R = N ? gn_view_numel(&x) / N : 0;
  if (!is_float_dt(dt)) GN_UNSUPPORTED("[rms_norm] dtype");
  if (x.ndim == 0 || out[0].dtype != dt || gn_view_numel(&out[0]) != gn_view_numel(&x))
    GN_UNSUPPORTED("[rms_norm] shapes");
  if (n_in > 1 && (in[1].dtype != dt || gn_view_numel(&in[1]) != N)) GN_UNSUPPORTED("[rms_norm] weight");
  if (n_out > 1 && (out[1].dtype != sdt || gn_view_numel(&out[1]) != R)) GN_UNSUPPORTED("[rms_norm] rstd");
  const double eps = attr_d(attrs, n_attrs, 0, 1e-6);
  dispatch_float_h(dt, [&](auto t) {
    using T = decltype(t);
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    rms_fwd<T, S>((const T*)data_of(x), n_in > 1 ? (const T*)data_of(in[1]) : nullptr, (T*)data_of(out[0]),
                  n_out > 1 ? (S*)data_of(out[1]) : nullptr, R, N, eps);
  });
}

GN_SDK_KERNEL(rms_norm_backward_kernel) {
  if (n_in < 3 || n_out < 1) GN_UNSUPPORTED("[rms_norm_backward] arity");
  const gn_tensor_view &dy = in[0], &x = in[1], &rs = in[2];
  const int32_t dt = x.dtype, sdt = dt == GN_F64 ? GN_F64 : GN_F32;
  const int64_t N = last_dim(x), R = N ? gn_view_numel(&x) / N : 0;
  if (!is_float_dt(dt)) GN_UNSUPPORTED("[rms_norm_backward] dtype");
  if (x.ndim == 0 || dy.dtype != dt || gn_view_numel(&dy) != gn_view_numel(&x) || rs.dtype != sdt ||
      gn_view_numel(&rs) != R || out[0].dtype != dt || gn_view_numel(&out[0]) != gn_view_numel(&x))
    GN_UNSUPPORTED("[rms_norm_backward] shapes or dtypes");
  if (n_in > 3 && (in[3].dtype != dt || gn_view_numel(&in[3]) != N)) GN_UNSUPPORTED("[rms_norm_backward] weight");
  if (n_out > 1 && (out[1].dtype != dt || gn_view_numel(&out[1]) != N))
    GN_UNSUPPORTED("[rms_norm_backward] grad_weight");
  dispatch_float_h(dt, [&](auto t) {
    using T = decltype(t);
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    rms_bwd<T, S>((const T*)data_of(dy), (const T*)data_of(x), (const S*)data_of(rs),
                  n_in > 3 ? (const T*)data_of(in[3]) : nullptr, (T*)data_of(out[0]),
                  n_out > 1 ? (T*)data_of(out[1]) : nullptr, R, N);
  });
}

// layer_norm_backward: dx per row (rows in parallel); dw = sum_r dy*xhat and
// db = sum_r dy over column blocks in parallel, rows in order (deterministic).
template <class T, class S>
void ln_bwd(const T* dy, const T* x, const S* mean, const S* rstd, const T* w, T* dx, T* dw, T* db, int64_t R,
            int64_t N) {
  parallel_for(R, 3 * N, [&](int64_t r) {
    const T* xr = x + r * N;
    const T* gr = dy + r * N;
    const double m = mean[r], s = rstd[r];
    double sum_d = 0.0, sum_dx = 0.0;
#pragma omp simd reduction(+ : sum_d, sum_dx)
    for (int64_t i = 0; i < N; ++i) {
      const double d = (double)gr[i] * (w ? (double)w[i] : 1.0);
      sum_d += d;
      sum_dx += d * (((double)xr[i] - m) * s);
    }
    const double md = sum_d / (double)N, mdx = sum_dx / (double)N;
    T* o = dx + r * N;
#pragma omp simd
    for (int64_t i = 0; i < N; ++i) {
      const double d = (double)gr[i] * (w ? (double)w[i] : 1.0);
      o[i] = to_t<T>(s * (d - md - (((double)xr[i] - m) * s) * mdx));
    }
  });
  if (!dw && !db) return;
  constexpr int64_t kBlock = 128;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  parallel_for(blocks, R * kBlock, [&](int64_t b) {
    const int64_t i0 = b * kBlock, i1 = std::min(N, i0 + kBlock);
    double aw[kBlock] = {}, ab[kBlock] = {};
    for (int64_t r = 0; r < R; ++r) {
      const T* xr = x + r * N;
      const T* gr = dy + r * N;
      const double m = mean[r], s = rstd[r];
#pragma omp simd
      for (int64_t i = i0; i < i1; ++i) {
        aw[i - i0] += (double)gr[i] * (((double)xr[i] - m) * s);
        ab[i - i0] += (double)gr[i];
      }
    }
    for (int64_t i = i0; i < i1; ++i) {
      if (dw) dw[i] = to_t<T>(aw[i - i0]);
      if (db) db[i] = to_t<T>(ab[i - i0]);
    }
  });
}

GN_SDK_KERNEL(layer_norm_backward_kernel) {
  if (n_in < 4 || n_out < 1) GN_UNSUPPORTED("[layer_norm_backward] arity");
  const gn_tensor_view &dy = in[0], &x = in[1];
  const int32_t dt = x.dtype, sdt = dt == GN_F64 ? GN_F64 : GN_F32;
  const int64_t nd = attr_i(attrs, n_attrs, 0, 1);
  if (!is_float_dt(dt) || nd < 1 || nd > x.ndim) GN_UNSUPPORTED("[layer_norm_backward] arguments");
  int64_t N = 1;
  for (int32_t d = x.ndim - (int32_t)nd; d < x.ndim; ++d) N *= x.shape[d];
  const int64_t R = N ? gn_view_numel(&x) / N : 0;
  if (dy.dtype != dt || gn_view_numel(&dy) != gn_view_numel(&x) || in[2].dtype != sdt || in[3].dtype != sdt ||
      gn_view_numel(&in[2]) != R || gn_view_numel(&in[3]) != R || out[0].dtype != dt ||
      gn_view_numel(&out[0]) != gn_view_numel(&x) || (n_in > 4 && (in[4].dtype != dt || gn_view_numel(&in[4]) != N)))
    GN_UNSUPPORTED("[layer_norm_backward] shapes or dtypes");
  for (size_t k = 1; k < n_out && k < 3; ++k)
    if (out[k].dtype != dt || gn_view_numel(&out[k]) != N) GN_UNSUPPORTED("[layer_norm_backward] grads");
  if (N == 0) return;
  dispatch_float_h(dt, [&](auto t) {
    using T = decltype(t);
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    ln_bwd<T, S>((const T*)data_of(dy), (const T*)data_of(x), (const S*)data_of(in[2]), (const S*)data_of(in[3]),
                 n_in > 4 ? (const T*)data_of(in[4]) : nullptr, (T*)data_of(out[0]),
                 n_out > 1 ? (T*)data_of(out[1]) : nullptr, n_out > 2 ? (T*)data_of(out[2]) : nullptr, R, N);
  });
}

}  // namespace

void register_norm(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("rms_norm", dtypes, rms_norm_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rms_norm_backward", dtypes, rms_norm_backward_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("layer_norm_backward", dtypes, layer_norm_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
