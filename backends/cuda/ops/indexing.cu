// backends/cuda/ops/indexing.cu - embedding and its backward, gather, scatter,
// scatter_add, index_select, index_add, masked_fill, one_hot.
//
// embedding: weight (V, D) dense, any dtype; ids (*) any integer dtype ->
//   out (*, D) = weight[ids].  Rows are copied as raw bytes in the widest
//   unit (16, 8, 4, 2 or 1 bytes) that divides the row and the alignment.
// embedding_backward: grad (*, D) float, ids (*) -> (num_weights, D),
//   repeated ids accumulate DETERMINISTICALLY: the (id, position) pairs are
//   radix-sorted (CUB, stable, so equal ids keep their original order), then
//   one block per run of equal ids adds its grad rows in that order in double
//   (the reference's arithmetic and order: bit-identical results) and writes
//   the weight row once.  Rows of ids that never occur are 0.  No atomics.  A
//   run is summed serially (columns in parallel): a single id repeated m times
//   costs m row reads on one block column slab.
//
// The rest: every tensor is dense (GN_KERNEL_CONTIGUOUS); index tensors have
// any integer dtype.  Values are copied as raw elements of their size (exact
// for every dtype).  scatter with repeated targets is deterministic: the
// largest index position wins (as the reference's row-major loop), found with
// an atomicMax pass first.  The accumulating ops (scatter_add, index_add) are
// deterministic and bit-identical to the reference: (target, position) pairs
// are radix-sorted (CUB, stable), then one thread per run of equal targets
// adds the run in position order with the reference's arithmetic (double,
// rounded to the dtype after every addition; wrapping int64 for integers).  No
// atomics.
//   masked_fill: mask (bool) broadcast to x through an OffsetCalc; the fill
//     value is converted to the dtype's bits once on the host (gn::sdk::store,
//     the reference's own conversion).
//   one_hot: out (n, C) int64 = (ids[r] == c); ids outside [0, C) fail.
// Out-of-range ids and indices fail with GN_ERR_INDEX (device flag, read back
// after the launch; see nn_common.cuh).
#include <cub/device/device_radix_sort.cuh>

#include <cstring>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"
#include "indexing.cuh"

namespace gn::cuda {
namespace {

using indexing::dim_geom;
using indexing::DimGeom;
using nn::BadIndex;
using nn::IndexPtr;
using nn::wrap_dim_checked;

// ----------------------------------------------------------------------------
// embedding forward

// out row r (upr units) = weight row ids[r]; U = copy unit.
template <class U>
__global__ void embedding_fwd_kernel(const U* __restrict__ w, nn::IndexPtr ids, U* __restrict__ out, int64_t n,
                                     int64_t upr, int64_t V, nn::BadIndex bad) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t total = n * upr;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / upr, c = i - r * upr;
    const int64_t id = ids[r];
    if (id < 0 || id >= V) {
      if (c == 0) bad.report(id);
      continue;
    }
    out[i] = w[id * upr + c];
  }
}

// in: weight (V, D), ids (*); out: (*, D)
GN_SDK_KERNEL(embedding_kernel) {
  const char* op = "embedding";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &w = in[0], &ids = in[1], &o = out[0];
  if (w.ndim != 2) fail_op(GN_ERR_SHAPE, op, "weight must be 2-D, got " + shape_str(w));
  const int64_t V = w.shape[0], D = w.shape[1], n = numel(ids);
  if (numel(o) != n * D || o.dtype != w.dtype)
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match ids " + shape_str(ids));
  const nn::IndexPtr ip = nn::index_ptr(op, ids);
  if (n == 0 || D == 0) return;
  const int64_t row_bytes = D * (int64_t)gn_dtype_size(w.dtype);
  const void* wp = gn_view_ptr(&w);
  void* op_ = gn_view_ptr(&o);
  const int u = nn::copy_unit({(uint64_t)row_bytes, (uintptr_t)wp, (uintptr_t)op_});
  const int64_t upr = row_bytes / u;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, n * upr);
  nn::dispatch_unit(u, [&](auto tag) {
    using U = typename decltype(tag)::type;
    launch_pdl_ptr(embedding_fwd_kernel<U>, grid, kThreads, 0, stream(ctx), (const U*)wp, ip, (U*)op_, n, upr, V,
                   check.dev);
  });
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, V);
}

// ----------------------------------------------------------------------------
// deterministic accumulation: a stable radix sort of (target, position) pairs

// Stable sort of n (uint32 key, int32 value) pairs over key bits [0, end_bit):
// returns the sorted arrays (in workspace).
struct Sorted {
  uint32_t* keys;
  int32_t* vals;
};
template <class MakeKeys>
Sorted sort_pairs(const gn_kernel_ctx* ctx, int64_t n, uint64_t max_key, MakeKeys&& make_keys) {
  int end_bit = 1;
  while (end_bit < 32 && ((uint64_t)1 << end_bit) <= max_key) ++end_bit;
  size_t temp = 0;
  GN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, (const uint32_t*)nullptr, (uint32_t*)nullptr,
                                                (const int32_t*)nullptr, (int32_t*)nullptr, (int)n, 0, end_bit,
                                                stream(ctx)));
  nn::Carver cv;
  const size_t o_kin = cv.add(n * 4), o_kout = cv.add(n * 4), o_vin = cv.add(n * 4), o_vout = cv.add(n * 4),
               o_tmp = cv.add(temp);
  char* ws = static_cast<char*>(workspace(ctx, cv.total));
  uint32_t *kin = (uint32_t*)(ws + o_kin), *kout = (uint32_t*)(ws + o_kout);
  int32_t *vin = (int32_t*)(ws + o_vin), *vout = (int32_t*)(ws + o_vout);
  make_keys(kin, vin);
  GN_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(ws + o_tmp, temp, kin, kout, vin, vout, (int)n, 0, end_bit, stream(ctx)));
  return {kout, vout};
}

// ----------------------------------------------------------------------------
// embedding backward

// keys[i] = ids[i] (out of range: reported, key V so it sorts last and is
// skipped), pos[i] = i.
__global__ void embedding_keys_kernel(nn::IndexPtr ids, uint32_t* __restrict__ keys, int32_t* __restrict__ pos,
                                      int64_t n, int64_t V, nn::BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t id = ids[i];
    if (id < 0 || id >= V) {
      bad.report(id);
      keys[i] = (uint32_t)V;
    } else {
      keys[i] = (uint32_t)id;
    }
    pos[i] = (int32_t)i;
  }
}

// Block x walks sorted positions; at the start of each run of equal keys it
// sums the run's grad rows (original order) for its slab of columns.
template <class T>
__global__ void embedding_bwd_runs_kernel(const T* __restrict__ g, const uint32_t* __restrict__ keys,
                                          const int32_t* __restrict__ pos, T* __restrict__ out, int64_t n, int64_t D,
                                          int64_t V) {
  using A = double;  // the reference's sum, in its order: bit-identical
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const uint32_t key = keys[i];
    if ((i > 0 && keys[i - 1] == key) || key >= V) continue;
    for (int64_t col = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; col < D;
         col += (int64_t)gridDim.y * blockDim.x) {
      A acc = A(0);
      for (int64_t j = i; j < n && keys[j] == key; ++j) acc += convert<A>(g[(int64_t)pos[j] * D + col]);
      out[(int64_t)key * D + col] = convert<T>(acc);
    }
  }
}

// in: grad (*, D), ids (*); out: (num_weights, D); attrs: num_weights
GN_SDK_KERNEL(embedding_backward_kernel) {
  const char* op = "embedding_backward";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &g = in[0], &ids = in[1], &o = out[0];
  const int64_t V = attr_int(op, attrs, n_attrs, 0);
  if (o.ndim != 2 || o.shape[0] != V || o.dtype != g.dtype)
    fail_op(GN_ERR_SHAPE, op, "output must be (num_weights, D) in grad's dtype, got " + shape_str(o));
  const int64_t D = o.shape[1], n = numel(ids);
  if (numel(g) != n * D) fail_op(GN_ERR_SHAPE, op, "grad " + shape_str(g) + " does not match ids " + shape_str(ids));
  const nn::IndexPtr ip = nn::index_ptr(op, ids);
  if (n >= INT32_MAX || V >= INT32_MAX)
    fail_op(GN_ERR_UNSUPPORTED, op, "more than 2^31-1 ids or weights is not supported on cuda");
  const size_t esize = gn_dtype_size(g.dtype);
  if (numel(o) > 0) GN_CUDA_CHECK(cudaMemsetAsync(gn_view_ptr(&o), 0, (size_t)numel(o) * esize, stream(ctx)));
  if (n == 0) return;
  nn::IndexCheck check(ctx);
  // Sort (key, position) pairs over the bits that V needs (the sentinel V included).
  const Sorted st = sort_pairs(ctx, n, (uint64_t)V, [&](uint32_t* keys, int32_t* pos) {
    embedding_keys_kernel<<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(ip, keys, pos, n, V, check.dev);
    GN_CUDA_CHECK_LAUNCH();
  });
  if (D > 0) {
    const int threads = D >= 256 ? 256 : (int)((D + 31) / 32 * 32);
    const unsigned slabs = (unsigned)std::min<int64_t>((D + threads - 1) / threads, 65535);
    const dim3 grid((unsigned)std::min<int64_t>(n, (int64_t)1 << 30), slabs);
    dispatch_float(g.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      embedding_bwd_runs_kernel<T>
          <<<grid, threads, 0, stream(ctx)>>>(data_ptr<const T>(g), st.keys, st.vals, data_ptr<T>(o), n, D, V);
    });
    GN_CUDA_CHECK_LAUNCH();
  }
  check.finish(op, V);
}

using indexing::dim_geom;
using indexing::DimGeom;
using nn::BadIndex;
using nn::IndexPtr;
using nn::wrap_dim_checked;

// ----------------------------------------------------------------------------
// the reference's accumulation step: dst = T(dst + alpha*src)

// double -> T as gn::sdk::store does it (16-bit floats through float).
template <class T>
__device__ __forceinline__ T store_ref(double v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn((float)v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn((float)v);
  else
    return (T)v;
}

// One addition with one rounding, never contracted into an FMA.
template <class T>
__device__ __forceinline__ T add_ref(T dst, T src, double alpha, int64_t ialpha) {
  if constexpr (is_float_v<T>) {
    return store_ref<T>(__dadd_rn(convert<double>(dst), __dmul_rn(alpha, convert<double>(src))));
  } else {
    const uint64_t prod = (uint64_t)(int64_t)src * (uint64_t)ialpha;
    return (T)(int64_t)((uint64_t)(int64_t)dst + prod);
  }
}

// ----------------------------------------------------------------------------
// gather

template <class U>
__global__ void gather_kernel(const U* __restrict__ x, IndexPtr idx, U* __restrict__ out, DimGeom g, int64_t n,
                              BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = g.checked_index(idx, i, bad);
    if (v < 0) continue;
    int64_t t, s;
    g.target_offsets(i, v, t, s);
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
    gather_kernel<U>
        <<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<const U>(x), ip, data_ptr<U>(o), g, n, check.dev);
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
    const int64_t v = g.checked_index(idx, i, bad);
    if (v < 0) continue;
    int64_t t, s;
    g.target_offsets(i, v, t, s);
    atomicMax(winner + t, (unsigned long long)(i + 1));  // 0 = unclaimed
  }
}

// Pass 2: the winner writes src.
template <class U>
__global__ void scatter_write_kernel(IndexPtr idx, const U* __restrict__ src, U* __restrict__ out, DimGeom g, int64_t n,
                                     const unsigned long long* __restrict__ winner) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[i];
    if (v < 0 || v >= g.dim_size) continue;
    int64_t t, s;
    g.target_offsets(i, v, t, s);
    if (winner[t] == (unsigned long long)(i + 1)) out[t] = src[s];
  }
}

// scatter_add keys: target offset of index element i (bad: the sentinel, sorts last).
__global__ void scatter_add_keys_kernel(IndexPtr idx, DimGeom g, int64_t n, uint32_t sentinel,
                                        uint32_t* __restrict__ keys, int32_t* __restrict__ pos, BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[i];
    pos[i] = (int32_t)i;
    if (v < 0 || v >= g.dim_size) {
      bad.report(v);
      keys[i] = sentinel;
      continue;
    }
    int64_t t, s;
    g.target_offsets(i, v, t, s);
    keys[i] = (uint32_t)t;
  }
}

// One thread per run of equal targets: out[t] += src[...] in position order.
template <class T>
__global__ void scatter_add_runs_kernel(const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos,
                                        const T* __restrict__ src, T* __restrict__ out, DimGeom g, int64_t n,
                                        uint32_t sentinel) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint32_t key = keys[i];
    if (key == sentinel || (i > 0 && keys[i - 1] == key)) continue;
    T acc = out[key];
    for (int64_t j = i; j < n && keys[j] == key; ++j) {
      int64_t t, s;
      g.offsets(pos[j], t, s);
      acc = add_ref<T>(acc, src[s], 1.0, 1);
    }
    out[key] = acc;
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
  if (add && x.dtype == GN_BOOL) fail_op(GN_ERR_DTYPE, op, "bool tensors are not supported");
  const size_t bytes = (size_t)numel(x) * gn_dtype_size(x.dtype);
  if (bytes)
    GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&o), gn_view_ptr(&x), bytes, cudaMemcpyDeviceToDevice, stream(ctx)));
  const int64_t n = numel(index);
  if (n == 0) return;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, n);
  if (!add) {
    auto* winner = static_cast<unsigned long long*>(workspace(ctx, (size_t)numel(o) * sizeof(unsigned long long)));
    GN_CUDA_CHECK(cudaMemsetAsync(winner, 0, (size_t)numel(o) * sizeof(unsigned long long), stream(ctx)));
    scatter_claim_kernel<<<grid, kThreads, 0, stream(ctx)>>>(ip, g, n, winner, check.dev);
    GN_CUDA_CHECK_LAUNCH();
    nn::dispatch_raw(x.dtype, op, [&](auto tag) {
      using U = typename decltype(tag)::type;
      scatter_write_kernel<U>
          <<<grid, kThreads, 0, stream(ctx)>>>(ip, data_ptr<const U>(src), data_ptr<U>(o), g, n, winner);
    });
    GN_CUDA_CHECK_LAUNCH();
  } else {
    if (n >= INT32_MAX || numel(o) >= (int64_t)UINT32_MAX)
      fail_op(GN_ERR_UNSUPPORTED, op, "more than 2^31 indices or 2^32 outputs is not supported on cuda");
    const uint32_t sentinel = (uint32_t)numel(o);
    const Sorted st = sort_pairs(ctx, n, sentinel, [&](uint32_t* keys, int32_t* pos) {
      scatter_add_keys_kernel<<<grid, kThreads, 0, stream(ctx)>>>(ip, g, n, sentinel, keys, pos, check.dev);
      GN_CUDA_CHECK_LAUNCH();
    });
    dispatch_all(x.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>)
        scatter_add_runs_kernel<T><<<grid, kThreads, 0, stream(ctx)>>>(st.keys, st.vals, data_ptr<const T>(src),
                                                                       data_ptr<T>(o), g, n, sentinel);
    });
    GN_CUDA_CHECK_LAUNCH();
  }
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
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
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

// index_add keys: ids[j] (bad: the sentinel `size`, sorts last), positions j.
__global__ void index_keys_kernel(IndexPtr idx, int64_t k, int64_t size, uint32_t* __restrict__ keys,
                                  int32_t* __restrict__ pos, BadIndex bad) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < k; j += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = idx[j];
    pos[j] = (int32_t)j;
    if (v < 0 || v >= size) {
      bad.report(v);
      keys[j] = (uint32_t)size;
    } else {
      keys[j] = (uint32_t)v;
    }
  }
}

// out (outer, size, inner) += alpha * src (outer, k, inner) at ids: thread per
// (o, sorted position i, c); the first of each run of equal ids adds the whole
// run in position order.
template <class T>
__global__ void index_add_runs_kernel(const T* __restrict__ src, const uint32_t* __restrict__ keys,
                                      const int32_t* __restrict__ pos, T* __restrict__ out, int64_t outer, int64_t k,
                                      int64_t size, int64_t inner, double alpha, int64_t ialpha) {
  const int64_t n = outer * k * inner;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = e % inner, i = (e / inner) % k, o = e / (inner * k);
    const uint32_t key = keys[i];
    if (key >= (uint64_t)size || (i > 0 && keys[i - 1] == key)) continue;
    T* dst = out + (o * size + key) * inner + c;
    T acc = *dst;
    for (int64_t j = i; j < k && keys[j] == key; ++j)
      acc = add_ref<T>(acc, src[(o * k + pos[j]) * inner + c], alpha, ialpha);
    *dst = acc;
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
  const int u = nn::copy_unit({(uint64_t)slab, (uintptr_t)gn_view_ptr(&x), (uintptr_t)gn_view_ptr(&o)});
  const int64_t upi = slab / u;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, outer * k * upi);
  nn::dispatch_unit(u, [&](auto tag) {
    using U = typename decltype(tag)::type;
    launch_pdl_ptr(index_select_kernel<U>, grid, kThreads, 0, stream(ctx), data_ptr<const U>(x), ip, data_ptr<U>(o),
                   outer, k, size, upi, check.dev);
  });
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
  if (bytes)
    GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&o), gn_view_ptr(&x), bytes, cudaMemcpyDeviceToDevice, stream(ctx)));
  const int64_t n = outer * k * inner;
  if (n == 0) return;
  if (k >= INT32_MAX || size >= (int64_t)UINT32_MAX)
    fail_op(GN_ERR_UNSUPPORTED, op, "more than 2^31 indices or a dim of 2^32 is not supported on cuda");
  nn::IndexCheck check(ctx);
  const Sorted st = sort_pairs(ctx, k, (uint64_t)size, [&](uint32_t* keys, int32_t* pos) {
    index_keys_kernel<<<nn::grid_for(ctx, k), kThreads, 0, stream(ctx)>>>(ip, k, size, keys, pos, check.dev);
    GN_CUDA_CHECK_LAUNCH();
  });
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      index_add_runs_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(
          data_ptr<const T>(src), st.keys, st.vals, data_ptr<T>(o), outer, k, size, inner, alpha, (int64_t)alpha);
  });
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, size);
}

// ----------------------------------------------------------------------------
// masked_fill

template <class U>
__global__ void masked_fill_kernel(const U* __restrict__ x, const uint8_t* __restrict__ mask, U* __restrict__ out,
                                   OffsetCalc<1> oc, int64_t n, U value) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[1];
    oc.get(i, off);
    out[i] = mask[off[0]] ? value : x[i];
  }
}

// in: x, mask (bool, broadcast to x); out: x's shape; attrs: value
GN_SDK_KERNEL(masked_fill_fn) {
  const char* op = "masked_fill";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &mask = in[1], &o = out[0];
  const double value = attr_float(op, attrs, n_attrs, 0);
  if (mask.dtype != GN_BOOL)
    fail_op(GN_ERR_DTYPE, op, std::string("mask must be bool, got ") + gn_dtype_name(mask.dtype));
  bool ok = mask.ndim <= x.ndim && numel(o) == numel(x) && o.dtype == x.dtype;
  for (int32_t d = 0; ok && d < mask.ndim; ++d) {
    const int64_t s = mask.shape[d], t = x.shape[d + x.ndim - mask.ndim];
    ok = s == t || s == 1;
  }
  if (!ok) fail_op(GN_ERR_SHAPE, op, "mask " + shape_str(mask) + " does not broadcast to " + shape_str(x));
  const int64_t n = numel(x);
  if (n == 0) return;
  const gn_tensor_view* views[1] = {&mask};
  const OffsetCalc<1> oc = make_offset_calc<1>(x.shape, x.ndim, views);
  uint64_t bits = 0;
  gn::sdk::store(&bits, x.dtype, value);  // little-endian: the low bytes are the element
  nn::dispatch_raw(x.dtype, op, [&](auto tag) {
    using U = typename decltype(tag)::type;
    U v;
    memcpy(&v, &bits, sizeof(U));
    masked_fill_kernel<U><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(
        data_ptr<const U>(x), data_ptr<const uint8_t>(mask), data_ptr<U>(o), oc, n, v);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------
// one_hot

__global__ void one_hot_kernel(IndexPtr ids, int64_t* __restrict__ out, int64_t n, int64_t C, BadIndex bad) {
  const int64_t total = n * C;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / C, c = i - r * C;
    const int64_t v = ids[r];
    if (c == 0 && (v < 0 || v >= C)) bad.report(v);
    out[i] = v == c ? 1 : 0;
  }
}

// in: ids (*); out: int64 (*, C); attrs: num_classes
GN_SDK_KERNEL(one_hot_fn) {
  const char* op = "one_hot";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &ids = in[0], &o = out[0];
  const IndexPtr ip = nn::index_ptr(op, ids);
  const int64_t n = numel(ids);
  int64_t C = attr_int(op, attrs, n_attrs, 0);
  if (C < 0 && o.ndim > 0) C = o.shape[o.ndim - 1];
  if (o.dtype != GN_I64 || o.ndim != ids.ndim + 1 || o.shape[o.ndim - 1] != C || numel(o) != n * C)
    fail_op(
        GN_ERR_SHAPE, op,
        "output " + shape_str(o) + " does not match ids " + shape_str(ids) + " and " + std::to_string(C) + " classes");
  if (n * C == 0) return;
  nn::IndexCheck check(ctx);
  one_hot_kernel<<<nn::grid_for(ctx, n * C), kThreads, 0, stream(ctx)>>>(ip, data_ptr<int64_t>(o), n, C, check.dev);
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, C);
}

}  // namespace

GN_CUDA_FAMILY(indexing) {
  r.kernel("embedding", kAllDtypes, embedding_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("embedding_backward", kFloatDtypes, embedding_backward_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("gather", kAllDtypes, gather_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter", kAllDtypes, scatter_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter_add", kNumericDtypes, scatter_add_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_select", kAllDtypes, index_select_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_add", kNumericDtypes, index_add_kernel_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("masked_fill", kAllDtypes, masked_fill_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("one_hot", kIntDtypes, one_hot_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
