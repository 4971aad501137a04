// backends/cpu/ops/simd/llm.cpp - the LLM inference ops in C++ (OpenMP over rows):
//   kv_cache_write_(cache (B,H,S,D) dense, src (B,H,T,D) any strides, pos (B) int64):
//     one (b, h, t) row of D elements per item, a memcpy when src's last dim is
//     dense; rows whose target pos[b]+t lies outside [0, S) are skipped.  No
//     GN_KERNEL_CONTIGUOUS: the core would otherwise write a dense copy of a
//     strided cache, not the cache, and src is read through its strides.
//   add_rms_norm(x (R,N), residual (R,N), weight (N)) -> (y, h), dense
//     (GN_KERNEL_CONTIGUOUS): per row, h = x + residual in double rounded once
//     to the dtype (the correctly rounded sum, as add gives on every backend),
//     then norm.cpp's rms_norm row on h, so y equals rms_norm(h, weight).y bit
//     for bit.  h is still in cache when the norm reads it.
#include <cstring>

#include "norm.h"

namespace gn::cpu::simd {
namespace {

std::string dims_str(const int64_t* d, int32_t n) {
  std::string r = "(";
  for (int32_t i = 0; i < n; ++i) r += (i ? ", " : "") + std::to_string(d[i]);
  return r + (n == 1 ? ",)" : ")");
}

// ---------------------------------------------------------------- kv_cache_write_

GN_SDK_KERNEL(kv_cache_write_kernel) {
  const char* op = "kv_cache_write_";
  if (n_in != 3) GN_UNSUPPORTED("[kv_cache_write_] arity");
  const gn_tensor_view &cache = in[0], &src = in[1], &pos = in[2];
  // Shapes and dtypes were checked by inference; the layout only a kernel sees.
  if (!gn_view_is_contiguous(&cache))
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "cache must be contiguous (it is written in place), got shape " + dims_str(cache.shape, cache.ndim) +
                " with strides " + dims_str(cache.strides, cache.ndim));
  if (cache.ndim != 4 || src.ndim != 4 || pos.ndim != 1 || pos.dtype != GN_I64 || src.dtype != cache.dtype)
    GN_UNSUPPORTED("[kv_cache_write_] these shapes/dtypes");
  const int64_t B = cache.shape[0], H = cache.shape[1], S = cache.shape[2], D = cache.shape[3], T = src.shape[2];
  const int64_t es = (int64_t)gn_dtype_size(cache.dtype);
  char* dst = (char*)data_of(cache);
  const char* sp = (const char*)data_of(src);
  const int64_t* pp = (const int64_t*)data_of(pos);
  const int64_t sb = src.strides[0], sh = src.strides[1], st = src.strides[2], sd = src.strides[3];
  parallel_for(B * H * T, D, [&](int64_t row) {
    const int64_t t = row % T, bh = row / T, h = bh % H, b = bh / H;
    const int64_t p = pp[b * pos.strides[0]];
    if (p < 0 || p >= S - t) return;  // p + t >= S, without overflow
    char* o = dst + ((bh * S + p + t) * D) * es;
    const char* s = sp + (b * sb + h * sh + t * st) * es;
    if (sd == 1 || D == 1) {
      copy_bytes(o, s, (size_t)(D * es));
      return;
    }
    for (int64_t d = 0; d < D; ++d) copy_bytes(o + d * es, s + d * sd * es, (size_t)es);
  });
}

// ---------------------------------------------------------------- add_rms_norm

template <class T>
void add_rms_rows(const T* x, const T* res, const T* w, T* y, T* h, int64_t R, int64_t N, double eps) {
  parallel_for(R, 2 * N, [&](int64_t r) {
    const T* xr = x + r * N;
    const T* rr = res + r * N;
    T* hr = h + r * N;
#pragma omp simd
    for (int64_t i = 0; i < N; ++i) hr[i] = to_t<T>(ld(xr + i) + ld(rr + i));
    rms_norm_row<T>(hr, w, y + r * N, N, eps);
  });
}

GN_SDK_KERNEL(add_rms_norm_kernel) {
  if (n_in != 3 || n_out != 2) GN_UNSUPPORTED("[add_rms_norm] arity");
  const gn_tensor_view& x = in[0];
  const int32_t dt = x.dtype;
  const int64_t N = x.ndim ? x.shape[x.ndim - 1] : 1, n = gn_view_numel(&x), R = N ? n / N : 0;
  if (!is_float_dt(dt) || x.ndim == 0) GN_UNSUPPORTED("[add_rms_norm] dtype/rank");
  for (const gn_tensor_view* v : {&in[1], &out[0], &out[1]})
    if (v->dtype != dt || gn_view_numel(v) != n) GN_UNSUPPORTED("[add_rms_norm] residual/outputs");
  if (in[2].dtype != dt || gn_view_numel(&in[2]) != N) GN_UNSUPPORTED("[add_rms_norm] weight");
  const double eps = attr_d(attrs, n_attrs, 0, 1e-6);
  dispatch_float_h(dt, [&](auto t) {
    using T = decltype(t);
    add_rms_rows<T>((const T*)data_of(x), (const T*)data_of(in[1]), (const T*)data_of(in[2]), (T*)data_of(out[0]),
                    (T*)data_of(out[1]), R, N, eps);
  });
}

}  // namespace

void register_llm(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("kv_cache_write_", dtypes, kv_cache_write_kernel);
  r.kernel("add_rms_norm", dtypes, add_rms_norm_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
