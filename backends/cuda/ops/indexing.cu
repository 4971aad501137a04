// backends/cuda/ops/indexing.cu - gather, scatter, scatter_add, index_select,
// index_add.
//
// Every tensor is dense (GN_KERNEL_CONTIGUOUS); index tensors have any integer
// dtype.  Values are copied as raw elements of their size (exact for every
// dtype); the accumulating ops add with atomics in the element type (order of
// float additions across threads is not fixed: results may differ in the last
// bit between runs, as torch's CUDA scatter_add/index_add).  scatter with
// repeated targets is deterministic: the largest index position wins (as the
// reference's row-major loop), found with an atomicMax pass first.
// Out-of-range indices fail with GN_ERR_INDEX (device flag, nn_common.cuh).
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

using nn::BadIndex;
using nn::IndexPtr;

// ----------------------------------------------------------------------------
// gather / scatter geometry: coordinates of an element of index (shape ishape)
// give the offset into a dense target (strides tstride) with coordinate `dim`
// replaced by the index value, and the offset into src (strides sstride).

struct DimGeom {
  int ndim = 0, dim = 0;
  int64_t ishape[GN_MAX_DIMS] = {};
  int64_t tstride[GN_MAX_DIMS] = {};
  int64_t sstride[GN_MAX_DIMS] = {};
  int64_t dim_size = 1;

  // Offset in the target without dim's contribution, and the src offset.
  __device__ __forceinline__ void offsets(int64_t i, int64_t& t, int64_t& s) const {
    t = 0;
    s = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t c = i % ishape[d];
      i /= ishape[d];
      s += c * sstride[d];
      if (d != dim) t += c * tstride[d];
    }
  }
};

// Dense row-major strides of a view's shape.
void dense_strides(const gn_tensor_view& v, int64_t* out) {
  int64_t acc = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    out[d] = acc;
    acc *= v.shape[d] > 0 ? v.shape[d] : 1;
  }
}

// Geometry for gather/scatter: index of x's rank (or any 1-element index of a
// 0-d target), index.shape[d] <= target.shape[d] for d != dim.
DimGeom dim_geom(const char* op, const gn_tensor_view& target, const gn_tensor_view& index, int32_t dim,
                 const gn_tensor_view* src) {
  DimGeom g;
  if (target.ndim == 0) {
    if (numel(index) > 1) fail_op(GN_ERR_SHAPE, op, "index " + shape_str(index) + " is too large for a 0-d input");
    g.ndim = index.ndim;
    for (int d = 0; d < index.ndim; ++d) g.ishape[d] = index.shape[d];
    g.dim = -1;
    g.dim_size = 1;
    return g;
  }
  bool ok = index.ndim == target.ndim;
  for (int32_t d = 0; ok && d < target.ndim; ++d) ok = d == dim || index.shape[d] <= target.shape[d];
  if (!ok)
    fail_op(GN_ERR_SHAPE, op, "index " + shape_str(index) + " does not fit input " + shape_str(target) + " at dim " +
                                  std::to_string(dim));
  g.ndim = index.ndim;
  g.dim = dim;
  g.dim_size = target.shape[dim];
  for (int d = 0; d < index.ndim; ++d) g.ishape[d] = index.shape[d];
  dense_strides(target, g.tstride);
  if (src && src->ndim > 0) {
    bool sok = src->ndim == index.ndim;
    for (int32_t d = 0; sok && d < src->ndim; ++d) sok = index.shape[d] <= src->shape[d];
    if (!sok) fail_op(GN_ERR_SHAPE, op, "src " + shape_str(*src) + " is smaller than index " + shape_str(index));
    dense_strides(*src, g.sstride);
  }
  return g;
}

int32_t wrap_dim_checked(const char* op, int64_t dim, int32_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim == GN_DIM_NONE || dim < -n || dim >= n)
    fail_op(GN_ERR_INDEX, op, "dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(ndim));
  return ndim > 0 ? (int32_t)(dim < 0 ? dim + n : dim) : 0;
}

// ----------------------------------------------------------------------------
// atomics in the element type

__device__ __forceinline__ void atomic_add_elem(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_elem(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_elem(__half* p, __half v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_elem(__nv_bfloat16* p, __nv_bfloat16 v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_elem(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_elem(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);  // wraps as two's complement
}
// 8-bit: CAS on the aligned 32-bit word holding the byte.
template <class B>
__device__ __forceinline__ void atomic_add_byte(B* p, B v) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
  const unsigned int shift = (unsigned int)(addr & 3u) * 8u;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    const uint8_t cur = (uint8_t)((assumed >> shift) & 0xffu);
    const uint8_t nxt = (uint8_t)(cur + (uint8_t)v);
    old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | ((unsigned int)nxt << shift));
  } while (old != assumed);
}
__device__ __forceinline__ void atomic_add_elem(int8_t* p, int8_t v) { atomic_add_byte(p, v); }
__device__ __forceinline__ void atomic_add_elem(uint8_t* p, uint8_t v) { atomic_add_byte(p, v); }

// alpha * v in T: floats through acc_t, integers as wrapping int64 products.
template <class T>
__device__ __forceinline__ T scaled(T v, double alpha, int64_t ialpha) {
  if constexpr (is_float_v<T>) {
    return convert<T>((double)convert<double>(v) * alpha);
  } else {
    return (T)(int64_t)((uint64_t)(int64_t)v * (uint64_t)ialpha);
  }
}

// ----------------------------------------------------------------------------
// gather

template <class U>
__global__ void gather_kernel(const U* __restrict__ x, IndexPtr idx, U* __restrict__ out, DimGeom g, int64_t n,
                              BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[i];
    if (v < 0 || v >= g.dim_size) {
      bad.report(v);
      continue;
    }
    int64_t t, s;
    g.offsets(i, t, s);
    if (g.dim >= 0) t += v * g.tstride[g.dim];
    out[i] = x[t];
  }
}

// in: x, index; out: index's shape; attrs: dim
GN_SDK_KERNEL(gather_kernel_fn) {
  const char* op = "gather";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &index = in[1], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const DimGeom g = dim_geom(op, x, index, dim, nullptr);
  const IndexPtr ip = nn::index_ptr(op, index);
  const int64_t n = numel(index);
  if (numel(o) != n || o.dtype != x.dtype) fail_op(GN_ERR_SHAPE, op, "output must have index's shape and x's dtype");
  if (n == 0) return;
  nn::IndexCheck check(ctx);
  nn::dispatch_raw(x.dtype, op, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather_kernel<U><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<const U>(x), ip, data_ptr<U>(o), g,
                                                                        n, check.dev);
  });
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, g.dim_size);
}

// ----------------------------------------------------------------------------
// scatter / scatter_add

// Pass 1 of scatter: winner[target] = max index position writing it.
__global__ void scatter_claim_kernel(IndexPtr idx, DimGeom g, int64_t n, unsigned long long* __restrict__ winner,
                                     BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[i];
    if (v < 0 || v >= g.dim_size) {
      bad.report(v);
      continue;
    }
    int64_t t, s;
    g.offsets(i, t, s);
    if (g.dim >= 0) t += v * g.tstride[g.dim];
    atomicMax(winner + t, (unsigned long long)(i + 1));  // 0 = unclaimed
  }
}

// Pass 2 (kAdd false): the winner writes src; kAdd: every element adds.
template <class T, bool kAdd>
__global__ void scatter_kernel(IndexPtr idx, const T* __restrict__ src, T* __restrict__ out, DimGeom g, int64_t n,
                               const unsigned long long* __restrict__ winner, BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[i];
    if (v < 0 || v >= g.dim_size) {
      if (kAdd) bad.report(v);
      continue;
    }
    int64_t t, s;
    g.offsets(i, t, s);
    if (g.dim >= 0) t += v * g.tstride[g.dim];
    if constexpr (kAdd) atomic_add_elem(out + t, src[s]);
    else if (winner[t] == (unsigned long long)(i + 1)) out[t] = src[s];
  }
}

void scatter_impl(const gn_kernel_ctx* ctx, const char* op, bool add, const gn_tensor_view* in, size_t n_in,
                  const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const DimGeom g = dim_geom(op, o, index, dim, &src);
  const IndexPtr ip = nn::index_ptr(op, index);
  if (numel(o) != numel(x) || o.dtype != x.dtype || src.dtype != x.dtype)
    fail_op(GN_ERR_SHAPE, op, "output and src must have x's dtype, output x's shape");
  const size_t bytes = (size_t)numel(x) * gn_dtype_size(x.dtype);
  if (bytes) GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&o), gn_view_ptr(&x), bytes, cudaMemcpyDeviceToDevice, stream(ctx)));
  const int64_t n = numel(index);
  if (n == 0) return;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, n);
  unsigned long long* winner = nullptr;
  if (!add) {
    winner = static_cast<unsigned long long*>(workspace(ctx, (size_t)numel(o) * sizeof(unsigned long long)));
    GN_CUDA_CHECK(cudaMemsetAsync(winner, 0, (size_t)numel(o) * sizeof(unsigned long long), stream(ctx)));
    scatter_claim_kernel<<<grid, kThreads, 0, stream(ctx)>>>(ip, g, n, winner, check.dev);
    GN_CUDA_CHECK_LAUNCH();
  }
  if (add) {
    if (x.dtype == GN_BOOL) fail_op(GN_ERR_DTYPE, op, "bool tensors are not supported");
    dispatch_all(x.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>)
        scatter_kernel<T, true><<<grid, kThreads, 0, stream(ctx)>>>(ip, data_ptr<const T>(src), data_ptr<T>(o), g, n,
                                                                    winner, check.dev);
    });
  } else {
    nn::dispatch_raw(x.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_kernel<T, false><<<grid, kThreads, 0, stream(ctx)>>>(ip, data_ptr<const T>(src), data_ptr<T>(o), g, n,
                                                                   winner, check.dev);
    });
  }
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, g.dim_size);
}

GN_SDK_KERNEL(scatter_kernel_fn) { scatter_impl(ctx, "scatter", false, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(scatter_add_kernel_fn) { scatter_impl(ctx, "scatter_add", true, in, n_in, out, n_out, attrs, n_attrs); }

// ----------------------------------------------------------------------------
// index_select / index_add: x seen as (outer, size, inner), index (k)

// out (outer, k, upi units) = x (outer, size, upi)[:, ids, :]
template <class U>
__global__ void index_select_kernel(const U* __restrict__ x, IndexPtr idx, U* __restrict__ out, int64_t outer,
                                    int64_t k, int64_t size, int64_t upi, BadIndex bad) {
  const int64_t n = outer * k * upi;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % upi, j = (i / upi) % k, o = i / (upi * k);
    const int64_t v = idx[j];
    if (v < 0 || v >= size) {
      bad.report(v);
      continue;
    }
    out[i] = x[(o * size + v) * upi + c];
  }
}

// out (outer, size, inner) += alpha * src (outer, k, inner) at ids
template <class T>
__global__ void index_add_kernel(const T* __restrict__ src, IndexPtr idx, T* __restrict__ out, int64_t outer, int64_t k,
                                 int64_t size, int64_t inner, double alpha, int64_t ialpha, BadIndex bad) {
  const int64_t n = outer * k * inner;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % inner, j = (i / inner) % k, o = i / (inner * k);
    const int64_t v = idx[j];
    if (v < 0 || v >= size) {
      bad.report(v);
      continue;
    }
    atomic_add_elem(out + (o * size + v) * inner + c, scaled<T>(src[i], alpha, ialpha));
  }
}

// (outer, size, inner) of a dense view split at dim (0-d: 1, 1, 1).
void split_at(const gn_tensor_view& v, int32_t dim, int64_t& outer, int64_t& size, int64_t& inner) {
  outer = 1;
  size = 1;
  inner = 1;
  if (v.ndim == 0) return;
  for (int32_t d = 0; d < dim; ++d) outer *= v.shape[d];
  size = v.shape[dim];
  for (int32_t d = dim + 1; d < v.ndim; ++d) inner *= v.shape[d];
}

int64_t index_list_len(const char* op, const gn_tensor_view& index) {
  if (index.ndim > 1) fail_op(GN_ERR_SHAPE, op, "index must be 0-d or 1-D, got " + shape_str(index));
  return numel(index);
}

// in: x, index (k); out: x with size(dim) = k; attrs: dim
GN_SDK_KERNEL(index_select_kernel_fn) {
  const char* op = "index_select";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &index = in[1], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const IndexPtr ip = nn::index_ptr(op, index);
  const int64_t k = index_list_len(op, index);
  int64_t outer, size, inner;
  split_at(x, dim, outer, size, inner);
  if (numel(o) != outer * k * inner || o.dtype != x.dtype)
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match input " + shape_str(x) + " and the index");
  if (numel(o) == 0) return;
  // Copy unit: the widest that divides a slab of `inner` elements and the alignment.
  const int64_t es = (int64_t)gn_dtype_size(x.dtype), slab = inner * es;
  int u = 1;
  for (int c = 16; c > 1; c /= 2)
    if (slab % c == 0 && (uintptr_t)gn_view_ptr(&x) % c == 0 && (uintptr_t)gn_view_ptr(&o) % c == 0) {
      u = c;
      break;
    }
  const int64_t upi = slab / u;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, outer * k * upi);
  auto go = [&](auto tag) {
    using U = typename decltype(tag)::type;
    index_select_kernel<U><<<grid, kThreads, 0, stream(ctx)>>>(data_ptr<const U>(x), ip, data_ptr<U>(o), outer, k, size,
                                                               upi, check.dev);
  };
  switch (u) {
    case 16: go(Tag<uint4>{}); break;
    case 8: go(Tag<uint2>{}); break;
    case 4: go(Tag<uint32_t>{}); break;
    case 2: go(Tag<uint16_t>{}); break;
    default: go(Tag<uint8_t>{}); break;
  }
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, size);
}

// in: x, index (k), src; out: x's shape; attrs: dim, alpha
GN_SDK_KERNEL(index_add_kernel_fn) {
  const char* op = "index_add";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const double alpha = attr_float(op, attrs, n_attrs, 1);
  const IndexPtr ip = nn::index_ptr(op, index);
  const int64_t k = index_list_len(op, index);
  const bool intlike = !gn_dtype_is_float(x.dtype);
  if (x.dtype == GN_BOOL) fail_op(GN_ERR_DTYPE, op, "bool tensors are not supported");
  if (intlike && (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18))
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "alpha must be an integer for integer tensors, got " + std::to_string(alpha));
  int64_t outer, size, inner;
  split_at(x, dim, outer, size, inner);
  if (numel(o) != numel(x) || o.dtype != x.dtype || src.dtype != x.dtype || numel(src) != outer * k * inner)
    fail_op(GN_ERR_SHAPE, op, "src " + shape_str(src) + " does not match input " + shape_str(x) + " and the index");
  const size_t bytes = (size_t)numel(x) * gn_dtype_size(x.dtype);
  if (bytes) GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&o), gn_view_ptr(&x), bytes, cudaMemcpyDeviceToDevice, stream(ctx)));
  const int64_t n = outer * k * inner;
  if (n == 0) return;
  nn::IndexCheck check(ctx);
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      index_add_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(
          data_ptr<const T>(src), ip, data_ptr<T>(o), outer, k, size, inner, alpha, (int64_t)alpha, check.dev);
  });
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, size);
}

}  // namespace

GN_CUDA_FAMILY(indexing) {
  r.kernel("gather", kAllDtypes, gather_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter", kAllDtypes, scatter_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter_add", kNumericDtypes, scatter_add_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_select", kAllDtypes, index_select_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_add", kNumericDtypes, index_add_kernel_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
