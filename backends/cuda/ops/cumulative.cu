// backends/cuda/ops/cumulative.cu - cumsum, cumprod, logcumsumexp, cummax and cummin along one
// dim.
//
// x dense (GN_KERNEL_CONTIGUOUS), seen as (outer, L, inner): one thread per line walks it in
// order (consecutive threads take consecutive inner positions, so loads coalesce when dim is
// not the last).  The arithmetic is the reference's: floating sums and products accumulate in
// double and each output is rounded once; integers wrap in int64; logcumsumexp uses torch's
// log-add-exp step; cummax/cummin keep the later index on ties and let a NaN win.
#include "common.cuh"

namespace gn::cuda {
namespace {

struct LineGeom {
  int64_t outer = 1, L = 1, inner = 1;
  __device__ __forceinline__ int64_t base(int64_t r) const { return (r / inner) * L * inner + r % inner; }
};

LineGeom line_geom(const char* op, const gn_tensor_view& x, int64_t dim_attr) {
  const int64_t n = x.ndim > 0 ? x.ndim : 1;
  if (dim_attr < -n || dim_attr >= n)
    fail_op(GN_ERR_INDEX, op,
            "dim " + std::to_string(dim_attr) + " is out of range for a tensor of rank " + std::to_string(x.ndim));
  const int64_t dim = dim_attr < 0 ? dim_attr + n : dim_attr;
  LineGeom g;
  if (x.ndim == 0) return g;
  for (int32_t d = 0; d < x.ndim; ++d) {
    if (d < dim) g.outer *= x.shape[d];
    if (d > dim) g.inner *= x.shape[d];
  }
  g.L = x.shape[dim];
  return g;
}

__device__ __forceinline__ double log_add_exp(double x, double y) {  // torch's _log_add_exp_helper
  const bool ny = y != y;  // std::min / std::max as torch writes them (a NaN x is kept)
  const double lo = ny ? y : (y < x ? y : x), hi = ny ? y : (x < y ? y : x);
  if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
  return x;
}

// kind 0 sum, 1 prod, 2 logsumexp
template <class T, int kKind>
__global__ void scan_kernel(const T* __restrict__ x, T* __restrict__ y, LineGeom g, int reverse) {
  const int64_t lines = g.outer * g.inner;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < lines; r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = g.base(r);
    if constexpr (std::is_integral_v<T>) {
      unsigned long long acc = kKind == 1 ? 1ull : 0ull;
      for (int64_t s = 0; s < g.L; ++s) {
        const int64_t i = b + (reverse ? g.L - 1 - s : s) * g.inner;
        const unsigned long long v = (unsigned long long)(int64_t)x[i];
        acc = kKind == 1 ? acc * v : acc + v;
        y[i] = (T)(int64_t)acc;
      }
    } else {
      double acc = kKind == 1 ? 1.0 : kKind == 0 ? 0.0 : -INFINITY;
      for (int64_t s = 0; s < g.L; ++s) {
        const int64_t i = b + (reverse ? g.L - 1 - s : s) * g.inner;
        const double v = convert<double>(x[i]);
        acc = kKind == 1 ? __dmul_rn(acc, v) : kKind == 0 ? __dadd_rn(acc, v) : log_add_exp(v, acc);
        y[i] = convert<T>(acc);
      }
    }
  }
}

template <class T, bool kMax>
__global__ void extreme_kernel(const T* __restrict__ x, T* __restrict__ v, int64_t* __restrict__ ix, LineGeom g) {
  const int64_t lines = g.outer * g.inner;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < lines; r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = g.base(r);
    int64_t best_i = 0;
    if constexpr (std::is_integral_v<T> || std::is_same_v<T, bool>) {
      int64_t best = 0;
      for (int64_t s = 0; s < g.L; ++s) {
        const int64_t i = b + s * g.inner, cur = (int64_t)x[i];
        if (s == 0 || (kMax ? cur >= best : cur <= best)) best = cur, best_i = s;
        v[i] = x[b + best_i * g.inner];
        ix[i] = best_i;
      }
    } else {
      double best = 0;
      for (int64_t s = 0; s < g.L; ++s) {
        const int64_t i = b + s * g.inner;
        const double cur = convert<double>(x[i]);
        if (s == 0 || cur != cur || (best == best && (kMax ? cur >= best : cur <= best))) best = cur, best_i = s;
        v[i] = x[b + best_i * g.inner];
        ix[i] = best_i;
      }
    }
  }
}

unsigned line_blocks(int64_t lines) { return blocks_for(lines, 1, 128); }

template <int kKind>
void scan(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
          size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &o = out[0];
  if (o.dtype != x.dtype || numel(o) != numel(x)) fail_op(GN_ERR_SHAPE, op, "output must have x's shape and dtype");
  const LineGeom g = line_geom(op, x, attr_int(op, attrs, n_attrs, 0));
  const int reverse = attr_int(op, attrs, n_attrs, 2) != 0;
  if (numel(x) == 0) return;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      scan_kernel<T, kKind>
          <<<line_blocks(g.outer * g.inner), 128, 0, stream(ctx)>>>(data_ptr<const T>(x), data_ptr<T>(o), g, reverse);
  };
  if (kKind == 2)
    dispatch_float(x.dtype, op, run);
  else
    dispatch_all(x.dtype, op, run);
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(cumsum_fn) { scan<0>(ctx, "cumsum", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cumprod_fn) { scan<1>(ctx, "cumprod", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(logcumsumexp_fn) { scan<2>(ctx, "logcumsumexp", in, n_in, out, n_out, attrs, n_attrs); }

template <bool kMax>
void extreme(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
             size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &v = out[0], &ix = out[1];
  if (v.dtype != x.dtype || ix.dtype != GN_I64 || numel(v) != numel(x) || numel(ix) != numel(x))
    fail_op(GN_ERR_SHAPE, op, "outputs must have x's shape (values of x's dtype, int64 indices)");
  const LineGeom g = line_geom(op, x, attr_int(op, attrs, n_attrs, 0));
  if (numel(x) == 0) return;
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    extreme_kernel<T, kMax><<<line_blocks(g.outer * g.inner), 128, 0, stream(ctx)>>>(
        data_ptr<const T>(x), data_ptr<T>(v), data_ptr<int64_t>(ix), g);
  });
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(cummax_fn) { extreme<true>(ctx, "cummax", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cummin_fn) { extreme<false>(ctx, "cummin", in, n_in, out, n_out, attrs, n_attrs); }

}  // namespace

GN_CUDA_FAMILY(cumulative) {
  r.kernel("cumsum", kNumericDtypes, cumsum_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("cumprod", kNumericDtypes, cumprod_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("logcumsumexp", kFloatDtypes, logcumsumexp_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("cummax", kAllDtypes, cummax_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("cummin", kAllDtypes, cummin_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
