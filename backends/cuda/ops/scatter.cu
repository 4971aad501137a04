// backends/cuda/ops/scatter.cu - scatter_reduce (sum, prod, mean, amax, amin along dim).
//
// scatter_reduce: one thread per fiber (the index positions that differ only along dim, which
// never share a target with another fiber), walked in increasing order along dim: the
// reference's order and arithmetic (floats combined in double and rounded to the dtype after
// every step; integers exact, wrapping), deterministic, no atomics.  count[t] (workspace)
// counts the values each target received; mean divides at the end (integers with floor).
// Out-of-range indices fail with GN_ERR_INDEX (device flag, read back after the launch; see
// nn_common.cuh).
#include "common.cuh"
#include "indexing.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

struct FiberGeom {
  int ndim = 0, dim = 0;
  int64_t ishape[GN_MAX_DIMS] = {};
  int64_t istride[GN_MAX_DIMS] = {};
  // Index position of fiber f's first element.
  __device__ __forceinline__ int64_t first(int64_t f) const {
    int64_t i = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      if (d == dim) continue;
      i += (f % ishape[d]) * istride[d];
      f /= ishape[d];
    }
    return i;
  }
};

template <class T>
__global__ void scatter_reduce_kernel(nn::IndexPtr idx, const T* __restrict__ src, T* __restrict__ out,
                                      indexing::DimGeom g, FiberGeom fg, int64_t fibers, int64_t K, int64_t step,
                                      int reduce, int include_self, int64_t* __restrict__ count, nn::BadIndex bad) {
  for (int64_t f = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; f < fibers; f += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i0 = fg.first(f);
    for (int64_t kk = 0; kk < K; ++kk) {
      const int64_t i = i0 + kk * step, v = g.checked_index(idx, i, bad);
      if (v < 0) return;
      int64_t t, s;
      g.target_offsets(i, v, t, s);
      const bool first = !include_self && count[t] == 0;
      ++count[t];
      if constexpr (std::is_integral_v<T>) {
        const int64_t b = (int64_t)src[s], a = first ? (reduce == 1 ? 1 : 0) : (int64_t)out[t];
        int64_t r;
        if (reduce == 0 || reduce == 2)
          r = (int64_t)((unsigned long long)a + (unsigned long long)b);
        else if (reduce == 1)
          r = (int64_t)((unsigned long long)a * (unsigned long long)b);
        else if (reduce == 3)
          r = first ? b : (a > b ? a : b);
        else
          r = first ? b : (a < b ? a : b);
        out[t] = (T)r;
      } else {
        const double b = convert<double>(src[s]);
        const double a = first ? (reduce == 1   ? 1.0
                                  : reduce == 3 ? -INFINITY
                                  : reduce == 4 ? INFINITY
                                                : 0.0)
                               : convert<double>(out[t]);
        double r;
        if (reduce == 0 || reduce == 2)
          r = __dadd_rn(a, b);
        else if (reduce == 1)
          r = __dmul_rn(a, b);
        else if (a != a || b != b)
          r = NAN;
        else
          r = reduce == 3 ? (a < b ? b : a) : (b < a ? b : a);  // std::max / std::min
        out[t] = convert<T>(r);
      }
    }
  }
}

template <class T>
__global__ void scatter_mean_kernel(T* __restrict__ out, const int64_t* __restrict__ count, int64_t n,
                                    int include_self) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = count[e] + (include_self ? 1 : 0);
    if (c <= 1) continue;
    if constexpr (std::is_integral_v<T>) {
      const int64_t a = (int64_t)out[e];
      int64_t r = a / c;
      if (a % c != 0 && a < 0) --r;  // floor
      out[e] = (T)r;
    } else {
      out[e] = convert<T>(convert<double>(out[e]) / (double)c);
    }
  }
}

GN_SDK_KERNEL(scatter_reduce_fn) {
  const char* op = "scatter_reduce";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = nn::wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const int64_t reduce = attr_int(op, attrs, n_attrs, 1);
  const int include_self = attr_int(op, attrs, n_attrs, 2) != 0;
  if (reduce < 0 || reduce > 4)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "reduce must be 0 (sum), 1 (prod), 2 (mean), 3 (amax) or 4 (amin), got " + std::to_string(reduce));
  const indexing::DimGeom g = indexing::dim_geom(op, o, index, dim, &src);
  const nn::IndexPtr ip = nn::index_ptr(op, index);
  if (numel(o) != numel(x) || o.dtype != x.dtype || src.dtype != x.dtype)
    fail_op(GN_ERR_SHAPE, op, "output and src must have x's dtype, output x's shape");
  if (x.dtype == GN_BOOL) fail_op(GN_ERR_DTYPE, op, "bool tensors are not supported");
  const size_t bytes = (size_t)numel(x) * gn_dtype_size(x.dtype);
  if (bytes)
    GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&o), gn_view_ptr(&x), bytes, cudaMemcpyDeviceToDevice, stream(ctx)));
  const int64_t n = numel(index);
  if (n == 0) return;
  FiberGeom fg;
  fg.ndim = index.ndim;
  fg.dim = g.dim;
  int64_t acc = 1;
  for (int d = index.ndim - 1; d >= 0; --d) {
    fg.ishape[d] = index.shape[d];
    fg.istride[d] = acc;
    acc *= index.shape[d];
  }
  const int64_t K = g.dim >= 0 ? index.shape[g.dim] : n, step = g.dim >= 0 ? fg.istride[g.dim] : 1;
  const int64_t fibers = K ? n / K : 0;
  auto* count = static_cast<int64_t*>(workspace(ctx, (size_t)numel(o) * sizeof(int64_t)));
  GN_CUDA_CHECK(cudaMemsetAsync(count, 0, (size_t)numel(o) * sizeof(int64_t), stream(ctx)));
  nn::IndexCheck check(ctx);
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      scatter_reduce_kernel<T><<<nn::grid_for(ctx, fibers), kThreads, 0, stream(ctx)>>>(
          ip, data_ptr<const T>(src), data_ptr<T>(o), g, fg, fibers, K, step, (int)reduce, include_self, count,
          check.dev);
      GN_CUDA_CHECK_LAUNCH();
      if (reduce == 2) {
        scatter_mean_kernel<T>
            <<<nn::grid_for(ctx, numel(o)), kThreads, 0, stream(ctx)>>>(data_ptr<T>(o), count, numel(o), include_self);
        GN_CUDA_CHECK_LAUNCH();
      }
    }
  });
  check.finish(op, g.dim_size);
}

}  // namespace

GN_CUDA_FAMILY(scatter) { r.kernel("scatter_reduce", kNumericDtypes, scatter_reduce_fn, GN_KERNEL_CONTIGUOUS); }

}  // namespace gn::cuda
