// backends/reference/llm.cpp - the LLM inference ops: kv_cache_write_ (the
// in-place KV-cache update of a prefill or decode step), add_rms_norm (a
// transformer block's residual add fused with the next RMS norm), linear
// (a projection with its bias) and linear_swiglu (a SwiGLU MLP's gate and up
// projections with the activation).
#include <cmath>
#include <cstring>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

std::string strides_str(const gn_tensor_view& v) {
  std::string r = "(";
  for (int32_t d = 0; d < v.ndim; ++d) r += (d ? ", " : "") + std::to_string(v.strides[d]);
  return r + (v.ndim == 1 ? ",)" : ")");
}

// ----------------------------------------------------------------------------
// kv_cache_write_

// in: cache (B,H,S,D) dense, src (B,H,T,D) any strides, pos (B) int64; no outputs.
// cache[b,h,pos[b]+t,:] = src[b,h,t,:] for every row whose target lies in
// [0, S); the others are skipped (the op's contract on every backend).
// Elements are copied as bytes: the write is exact for every dtype.
GN_SDK_KERNEL(kv_cache_write_kernel) {
  const char* op = "kv_cache_write_";
  expect_io(op, n_in, 3, n_out, 0);
  const gn_tensor_view& cache = in[0];
  const gn_tensor_view& src = in[1];
  const gn_tensor_view& pos = in[2];
  expect_ndim(op, "cache", cache, 4);
  expect_ndim(op, "src", src, 4);
  if (!gn_view_is_contiguous(&cache))
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op +
                                      "] cache must be contiguous (it is written in place), got shape " +
                                      shape_str(shape_of(cache)) + " with strides " + strides_str(cache));
  const int64_t B = cache.shape[0], H = cache.shape[1], S = cache.shape[2], D = cache.shape[3], T = src.shape[2];
  expect_shape(op, "src", src, {B, H, T, D});
  expect_numel(op, "pos", pos, B);
  if (src.dtype != cache.dtype) fail(GN_ERR_DTYPE, std::string("[") + op + "] src and cache dtypes differ");
  const std::vector<int64_t> p = load_ints(pos);
  const size_t es = gn_dtype_size(cache.dtype);
  char* base = (char*)gn_view_ptr(&cache);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t s = p[(size_t)b];
        if (s < 0 || s >= S - t) continue;  // s + t >= S, written so that it cannot overflow
        char* dst = base + (((b * H + h) * S + s + t) * D) * (int64_t)es;
        int64_t idx[4] = {b, h, t, 0};
        for (int64_t d = 0; d < D; ++d) {
          idx[3] = d;
          std::memcpy(dst + d * (int64_t)es, gn::sdk::elem_ptr_at(src, idx), es);
        }
      }
}

// ----------------------------------------------------------------------------
// add_rms_norm

// h (R,N) (already rounded to the dtype), w (N) -> y (R,N) = h * s * w,
// s = 1/sqrt(mean(h^2) + eps): the loops of norm.cpp's rms_norm_forward, in
// the same order, so that y equals rms_norm(h, w).y bit for bit.
void rms_rows(double* y, const double* h, const double* w, int64_t R, int64_t N, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    const double* hr = h + r * N;
    double ss = 0.0;
    for (int64_t i = 0; i < N; ++i) ss += hr[i] * hr[i];
    double s = 1.0 / std::sqrt(ss / (double)N + eps);
    for (int64_t i = 0; i < N; ++i) y[r * N + i] = hr[i] * s * w[i];
  }
}

// in: x, residual, weight (N); out: y, h; attrs: eps.
// h = x + residual, stored in h's dtype and read back: the rounded sum is
// what the norm sees, exactly as add followed by rms_norm.
GN_SDK_KERNEL(add_rms_norm_kernel) {
  const char* op = "add_rms_norm";
  expect_io(op, n_in, 3, n_out, 2);
  const Shape shape = shape_of(in[0]);
  if (shape.empty()) fail(GN_ERR_SHAPE, std::string("[") + op + "] x must have at least 1 dim");
  const int64_t N = shape.back();
  const int64_t R = N ? numel(in[0]) / N : 0;
  const double eps = attr_float(op, attrs, n_attrs, 0);
  expect_shape(op, "residual", in[1], shape);
  expect_numel(op, "weight", in[2], N);
  expect_shape(op, "y", out[0], shape);
  expect_shape(op, "h", out[1], shape);
  Vec x = load_all(in[0]), r = load_all(in[1]), w = load_all(in[2]);
  Vec h(x.size()), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = x[i] + r[i];
  store_all(out[1], h);
  h = load_all(out[1]);
  rms_rows(y.data(), h.data(), w.data(), R, N, eps);
  store_all(out[0], y);
}

// ----------------------------------------------------------------------------
// linear

// in: x (*, K), weight (N, K), [bias (N)]; out (*, N) = x @ weight^T + bias,
// summed in double and rounded once to the dtype.
GN_SDK_KERNEL(linear_kernel) {
  const char* op = "linear";
  if (n_in < 2 || n_in > 3 || n_out != 1)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] expects 2 or 3 inputs and 1 output");
  const Shape xs = shape_of(in[0]);
  if (xs.empty() || in[1].ndim != 2) fail(GN_ERR_SHAPE, std::string("[") + op + "] x must be >= 1-D, weight 2-D");
  const int64_t K = xs.back(), N = in[1].shape[0];
  const int64_t R = K ? numel(in[0]) / K : numel(out[0]) / (N ? N : 1);
  expect_shape(op, "weight", in[1], {N, K});
  if (n_in == 3) expect_numel(op, "bias", in[2], N);
  Shape os(xs.begin(), xs.end() - 1);
  os.push_back(N);
  expect_shape(op, "out", out[0], os);
  const Vec x = load_all(in[0]), w = load_all(in[1]);
  const Vec b = n_in == 3 ? load_all(in[2]) : Vec((size_t)N, 0.0);
  Vec y((size_t)(R * N));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += x[(size_t)(r * K + k)] * w[(size_t)(n * K + k)];
      y[(size_t)(r * N + n)] = acc + b[(size_t)n];
    }
  store_all(out[0], y);
}

// in: x (*, K), weight (2I, K); out (*, I) = silu(g) * u with g = x @ Wg^T,
// u = x @ Wu^T (rows [0, I) and [I, 2I) of weight), all in double, rounded once.
GN_SDK_KERNEL(linear_swiglu_kernel) {
  const char* op = "linear_swiglu";
  expect_io(op, n_in, 2, n_out, 1);
  const Shape xs = shape_of(in[0]);
  if (xs.empty() || in[1].ndim != 2 || in[1].shape[0] % 2 != 0)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] x must be >= 1-D, weight 2-D with an even number of rows");
  const int64_t K = xs.back(), I = in[1].shape[0] / 2;
  expect_shape(op, "weight", in[1], {2 * I, K});
  Shape os(xs.begin(), xs.end() - 1);
  os.push_back(I);
  expect_shape(op, "out", out[0], os);
  const int64_t R = I ? numel(out[0]) / I : 0;
  const Vec x = load_all(in[0]), w = load_all(in[1]);
  Vec y((size_t)(R * I));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < I; ++i) {
      double g = 0.0, u = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        g += x[(size_t)(r * K + k)] * w[(size_t)(i * K + k)];
        u += x[(size_t)(r * K + k)] * w[(size_t)((I + i) * K + k)];
      }
      y[(size_t)(r * I + i)] = g / (1.0 + std::exp(-g)) * u;
    }
  store_all(out[0], y);
}

}  // namespace

void register_llm(const gn::sdk::Registrar& r) {
  r.kernel("linear", kFloatDtypes, linear_kernel);
  r.kernel("linear_swiglu", kFloatDtypes, linear_swiglu_kernel);
  r.kernel("kv_cache_write_", kFloatDtypes, kv_cache_write_kernel);
  r.kernel("add_rms_norm", kFloatDtypes, add_rms_norm_kernel);
}

}  // namespace gn::reference
