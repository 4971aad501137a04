// backends/cuda/ops/pool.cu - max_pool2d and avg_pool2d with backward, the
// window walk of backends/reference/pool.cpp (torch's CPU definition).
//
// x (..., H, W) dense: P planes of H x W.  Output size (torch's
// pooling_output_shape):  Ho = floor((H + 2p - d(k-1) - 1 + (ceil ? s-1 : 0))/s) + 1,
// minus one when ceil_mode and the last window would start at or past H + p.
// Every op computes in double in the reference's order, so f32/f64 results
// are bit-identical to it:
//   max fwd: thread per output; first maximum wins, NaN propagates (the last
//     NaN's index is kept); indices are flat ih*W + iw in the plane.
//   max bwd: dx[idx[o]] += dy[o] in output order.  Deterministic gather, no
//     atomics: each input element walks the outputs whose window can contain
//     it (ascending) and adds dy where idx equals it.  indices that do not lie
//     in their own window (legal input, never produced by the forward) switch
//     to a walk over the whole plane (O(HW * HoWo), same order).  Indices
//     outside [0, HW) fail with GN_ERR_INDEX.
//   avg fwd: window sum / divisor (count_include_pad: padded area, else the
//     clipped area; 0 for a window with no input).
//   avg bwd: gather of dy/divisor over the windows containing the element.
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

struct PoolGeom {
  int64_t P, H, W, Ho, Wo;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode, include_pad;
};

__host__ __device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = floor_div(num, s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// ----------------------------------------------------------------------------
// max pooling

template <class T>
__global__ void max_pool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ idx, PoolGeom g) {
  const int64_t n = g.P * g.Ho * g.Wo;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ow = e % g.Wo, oh = (e / g.Wo) % g.Ho, p = e / (g.Wo * g.Ho);
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    const int64_t h1 = min(h0 + (g.kh - 1) * g.dh + 1, g.H), w1 = min(w0 + (g.kw - 1) * g.dw + 1, g.W);
    if (h0 < 0) h0 += ceil_div(-h0, g.dh) * g.dh;
    if (w0 < 0) w0 += ceil_div(-w0, g.dw) * g.dw;
    const T* xp = x + p * g.H * g.W;
    int64_t best = h0 * g.W + w0;
    double m = -INFINITY;
    for (int64_t ih = h0; ih < h1; ih += g.dh)
      for (int64_t iw = w0; iw < w1; iw += g.dw) {
        const double v = convert<double>(xp[ih * g.W + iw]);
        if (v > m || isnan(v)) {
          m = v;
          best = ih * g.W + iw;
        }
      }
    y[e] = convert<T>(m);
    if (idx) idx[e] = best;
  }
}

// Flags: [0] bad index (value in [1]), [2] some index outside its own window.
__global__ void max_pool_check_kernel(const int64_t* __restrict__ idx, PoolGeom g, unsigned long long* flags) {
  const int64_t n = g.P * g.Ho * g.Wo;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[e];
    if (v < 0 || v >= g.H * g.W) {
      if (atomicCAS(flags, 0ull, 1ull) == 0ull) flags[1] = (unsigned long long)v;
      continue;
    }
    const int64_t ow = e % g.Wo, oh = (e / g.Wo) % g.Ho;
    const int64_t dh_ = v / g.W - (oh * g.sh - g.ph), dw_ = v % g.W - (ow * g.sw - g.pw);
    const bool inside =
        dh_ >= 0 && dw_ >= 0 && dh_ % g.dh == 0 && dw_ % g.dw == 0 && dh_ / g.dh < g.kh && dw_ / g.dw < g.kw;
    if (!inside) flags[2] = 1ull;
  }
}

// dx[p, q] = sum over outputs o (ascending) with idx[p, o] == q of dy[p, o].
template <class T, bool kWindowed>
__global__ void max_pool_bwd_kernel(const T* __restrict__ dy, const int64_t* __restrict__ idx, T* __restrict__ dx,
                                    PoolGeom g) {
  const int64_t n = g.P * g.H * g.W, HoWo = g.Ho * g.Wo;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t q = e % (g.H * g.W), p = e / (g.H * g.W);
    const int64_t* ip = idx + p * HoWo;
    const T* gp = dy + p * HoWo;
    double s = 0.0;
    if constexpr (kWindowed) {
      const int64_t ih = q / g.W, iw = q % g.W;
      const int64_t oh0 = max((int64_t)(0), (int64_t)ceil_div(ih + g.ph - (g.kh - 1) * g.dh, g.sh));
      const int64_t oh1 = min((int64_t)(g.Ho - 1), (int64_t)floor_div(ih + g.ph, g.sh));
      const int64_t ow0 = max((int64_t)(0), (int64_t)ceil_div(iw + g.pw - (g.kw - 1) * g.dw, g.sw));
      const int64_t ow1 = min((int64_t)(g.Wo - 1), (int64_t)floor_div(iw + g.pw, g.sw));
      for (int64_t oh = oh0; oh <= oh1; ++oh)
        for (int64_t ow = ow0; ow <= ow1; ++ow) {
          const int64_t o = oh * g.Wo + ow;
          if (ip[o] == q) s += convert<double>(gp[o]);
        }
    } else {
      for (int64_t o = 0; o < HoWo; ++o)
        if (ip[o] == q) s += convert<double>(gp[o]);
    }
    dx[e] = convert<T>(s);
  }
}

// ----------------------------------------------------------------------------
// average pooling

struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};

__device__ __forceinline__ AvgWindow avg_window(const PoolGeom& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
  const int64_t area = (h1 - h0) * (w1 - w0);
  h0 = max((int64_t)(h0), (int64_t)0);
  w0 = max((int64_t)(w0), (int64_t)0);
  h1 = min(h1, g.H);
  w1 = min(w1, g.W);
  return {h0, h1, w0, w1, g.include_pad ? (double)area : (double)((h1 - h0) * (w1 - w0))};
}

template <class T>
__global__ void avg_pool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeom g) {
  const int64_t n = g.P * g.Ho * g.Wo;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ow = e % g.Wo, oh = (e / g.Wo) % g.Ho, p = e / (g.Wo * g.Ho);
    const AvgWindow a = avg_window(g, oh, ow);
    const T* xp = x + p * g.H * g.W;
    double s = 0.0;
    for (int64_t ih = a.h0; ih < a.h1; ++ih)
      for (int64_t iw = a.w0; iw < a.w1; ++iw) s += convert<double>(xp[ih * g.W + iw]);
    y[e] = convert<T>((a.h0 >= a.h1 || a.w0 >= a.w1) ? 0.0 : s / a.divisor);
  }
}

template <class T>
__global__ void avg_pool_bwd_kernel(const T* __restrict__ dy, T* __restrict__ dx, PoolGeom g) {
  const int64_t n = g.P * g.H * g.W, HoWo = g.Ho * g.Wo;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t iw = e % g.W, ih = (e / g.W) % g.H, p = e / (g.H * g.W);
    const T* gp = dy + p * HoWo;
    const int64_t oh0 = max((int64_t)(0), (int64_t)ceil_div(ih + g.ph - g.kh + 1, g.sh));
    const int64_t oh1 = min((int64_t)(g.Ho - 1), (int64_t)floor_div(ih + g.ph, g.sh));
    const int64_t ow0 = max((int64_t)(0), (int64_t)ceil_div(iw + g.pw - g.kw + 1, g.sw));
    const int64_t ow1 = min((int64_t)(g.Wo - 1), (int64_t)floor_div(iw + g.pw, g.sw));
    double s = 0.0;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const AvgWindow a = avg_window(g, oh, ow);
        if (ih >= a.h0 && ih < a.h1 && iw >= a.w0 && iw < a.w1) s += convert<double>(gp[oh * g.Wo + ow]) / a.divisor;
      }
    dx[e] = convert<T>(s);
  }
}

// ----------------------------------------------------------------------------
// host side

std::pair<int64_t, int64_t> pair_attr(const char* op, const char* name, const gn_attr_value* a, size_t n, size_t i,
                                      std::pair<int64_t, int64_t> fallback = {-1, -1}) {
  const Dims v = attr_ints(op, a, n, i);
  if (v.empty() && fallback.first >= 0) return fallback;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  fail_op(GN_ERR_INVALID_ARGUMENT, op, std::string(name) + " must have 1 or 2 values");
}

// attrs: max: kernel, stride, padding, dilation, ceil_mode; avg: kernel, stride, padding, ceil_mode, count_include_pad
PoolGeom pool_geom(const char* op, const gn_tensor_view& x, const gn_attr_value* attrs, size_t n_attrs, bool is_max) {
  if (x.ndim != 3 && x.ndim != 4) fail_op(GN_ERR_SHAPE, op, "input must be (N,C,H,W) or (C,H,W), got " + shape_str(x));
  PoolGeom g{};
  g.H = x.shape[x.ndim - 2];
  g.W = x.shape[x.ndim - 1];
  g.P = 1;
  for (int d = 0; d < x.ndim - 2; ++d) g.P *= x.shape[d];
  const auto k = pair_attr(op, "kernel", attrs, n_attrs, 0);
  const auto s = pair_attr(op, "stride", attrs, n_attrs, 1, k);
  const auto p = pair_attr(op, "padding", attrs, n_attrs, 2);
  std::pair<int64_t, int64_t> d{1, 1};
  if (is_max) {
    d = pair_attr(op, "dilation", attrs, n_attrs, 3);
    g.ceil_mode = attr_int(op, attrs, n_attrs, 4) != 0;
    g.include_pad = true;
  } else {
    g.ceil_mode = attr_int(op, attrs, n_attrs, 3) != 0;
    g.include_pad = attr_int(op, attrs, n_attrs, 4) != 0;
  }
  g.kh = k.first;
  g.kw = k.second;
  g.sh = s.first;
  g.sw = s.second;
  g.ph = p.first;
  g.pw = p.second;
  g.dh = d.first;
  g.dw = d.second;
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "kernel, stride and dilation must be >= 1");
  if (g.ph < 0 || g.pw < 0 || g.ph > g.kh / 2 || g.pw > g.kw / 2)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "padding must be >= 0 and at most half the kernel size");
  g.Ho = pool_out_size(g.H, g.kh, g.sh, g.ph, g.dh, g.ceil_mode);
  g.Wo = pool_out_size(g.W, g.kw, g.sw, g.pw, g.dw, g.ceil_mode);
  if (g.Ho < 1 || g.Wo < 1)
    fail_op(
        GN_ERR_SHAPE, op,
        "output size " + std::to_string(g.Ho) + "x" + std::to_string(g.Wo) + " is too small for input " + shape_str(x));
  return g;
}

void expect(const char* op, const char* what, const gn_tensor_view& v, int64_t n, int32_t dtype) {
  if (numel(v) != n || v.dtype != dtype)
    fail_op(GN_ERR_SHAPE, op,
            std::string(what) + " " + shape_str(v) + " " + gn_dtype_name(v.dtype) + " has the wrong size or dtype");
}

// max_pool2d (is_max) and avg_pool2d.  in: x; out: y, [indices (int64, max_pool2d)]
void pool2d_forward(const gn_kernel_ctx* ctx, const char* op, bool is_max, const gn_tensor_view* in, size_t n_in,
                    const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view& x = in[0];
  const PoolGeom g = pool_geom(op, x, attrs, n_attrs, is_max);
  const int64_t n = g.P * g.Ho * g.Wo;
  expect(op, "y", out[0], n, x.dtype);
  if (is_max && n_out > 1) expect(op, "indices", out[1], n, GN_I64);
  if (n == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_max)
      max_pool_fwd_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(
          data_ptr<const T>(x), data_ptr<T>(out[0]), n_out > 1 ? data_ptr<int64_t>(out[1]) : nullptr, g);
    else
      avg_pool_fwd_kernel<T>
          <<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<const T>(x), data_ptr<T>(out[0]), g);
  });
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(max_pool2d_fn) { pool2d_forward(ctx, "max_pool2d", true, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(avg_pool2d_fn) { pool2d_forward(ctx, "avg_pool2d", false, in, n_in, out, n_out, attrs, n_attrs); }

// in: grad_y, x, indices; out: grad_x
GN_SDK_KERNEL(max_pool2d_backward_fn) {
  const char* op = "max_pool2d_backward";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &dy = in[0], &x = in[1], &idx = in[2];
  const PoolGeom g = pool_geom(op, x, attrs, n_attrs, true);
  const int64_t no = g.P * g.Ho * g.Wo, ni = g.P * g.H * g.W;
  expect(op, "grad_y", dy, no, x.dtype);
  expect(op, "indices", idx, no, GN_I64);
  expect(op, "grad_x", out[0], ni, x.dtype);
  if (ni == 0) return;
  bool irregular = false;
  if (no > 0) {
    auto* flags = static_cast<unsigned long long*>(workspace(ctx, 24));
    GN_CUDA_CHECK(cudaMemsetAsync(flags, 0, 24, stream(ctx)));
    max_pool_check_kernel<<<nn::grid_for(ctx, no), kThreads, 0, stream(ctx)>>>(data_ptr<const int64_t>(idx), g, flags);
    GN_CUDA_CHECK_LAUNCH();
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    GN_CUDA_CHECK(cudaStreamIsCapturing(stream(ctx), &cs));
    if (cs == cudaStreamCaptureStatusNone) {  // under capture: assume forward-made indices
      unsigned long long h[3] = {0, 0, 0};
      GN_CUDA_CHECK(cudaMemcpyAsync(h, flags, 24, cudaMemcpyDeviceToHost, stream(ctx)));
      GN_CUDA_CHECK(cudaStreamSynchronize(stream(ctx)));
      if (h[0])
        fail_op(GN_ERR_INDEX, op,
                "index " + std::to_string((int64_t)h[1]) + " out of range [0, " + std::to_string(g.H * g.W) + ")");
      irregular = h[2] != 0;
    }
  }
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto k = irregular ? max_pool_bwd_kernel<T, false> : max_pool_bwd_kernel<T, true>;
    k<<<nn::grid_for(ctx, ni), kThreads, 0, stream(ctx)>>>(data_ptr<const T>(dy), data_ptr<const int64_t>(idx),
                                                           data_ptr<T>(out[0]), g);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// in: grad_y, x; out: grad_x
GN_SDK_KERNEL(avg_pool2d_backward_fn) {
  const char* op = "avg_pool2d_backward";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &dy = in[0], &x = in[1];
  const PoolGeom g = pool_geom(op, x, attrs, n_attrs, false);
  const int64_t no = g.P * g.Ho * g.Wo, ni = g.P * g.H * g.W;
  expect(op, "grad_y", dy, no, x.dtype);
  expect(op, "grad_x", out[0], ni, x.dtype);
  if (ni == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_bwd_kernel<T>
        <<<nn::grid_for(ctx, ni), kThreads, 0, stream(ctx)>>>(data_ptr<const T>(dy), data_ptr<T>(out[0]), g);
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(pool) {
  r.kernel("max_pool2d", kFloatDtypes, max_pool2d_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("max_pool2d_backward", kFloatDtypes, max_pool2d_backward_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("avg_pool2d", kFloatDtypes, avg_pool2d_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("avg_pool2d_backward", kFloatDtypes, avg_pool2d_backward_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
