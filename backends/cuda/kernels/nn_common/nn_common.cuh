// backends/cuda/kernels/nn_common/nn_common.cuh - helpers shared by the nn,
// indexing, sort, conv/pool and optimizer families (ops/norm.cu, ops/rope.cu,
// ops/activation.cu, ops/loss.cu, ops/indexing.cu, ops/scatter.cu, ops/shape.cu, ops/sort.cu,
// ops/conv.cu, ops/pool.cu, ops/optim.cu, ops/llm.cu): deterministic block reductions,
// the device-side out-of-range index flag, raw element copies and a
// workspace carver.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "common.cuh"

namespace gn::cuda::nn {

using gn::cuda::dtype_of;

// "op math": the type sums and fused expressions are computed in.  double
// for f32 (and f64): the reference computes in double and rounds once, and the
// cross-backend suite holds f32 results to ~1e-6 relative, which f32
// accumulation over hundreds of terms does not meet; these kernels are
// memory-bound, so the double arithmetic is hidden behind the loads.  float
// for the 16-bit types.
template <class T>
using opmath_t = std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, double, float>;

// ----------------------------------------------------------------------------
// reductions (deterministic: fixed shuffle tree, then every thread adds the
// per-warp partials in warp order)

template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result.  red: __shared__ A[32], reusable right after.
template <class A>
__device__ __forceinline__ A block_sum(A v, A* red) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[wid] = v;
  __syncthreads();
  A t = A(0);
  for (int i = 0; i < nw; ++i) t += red[i];
  return t;
}

// Two sums at once (one pair of barriers).  red: __shared__ A[64].
template <class A>
__device__ __forceinline__ void block_sum2(A& a, A& b, A* red) {
  a = warp_sum(a);
  b = warp_sum(b);
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) {
    red[wid] = a;
    red[32 + wid] = b;
  }
  __syncthreads();
  A ta = A(0), tb = A(0);
  for (int i = 0; i < nw; ++i) {
    ta += red[i];
    tb += red[32 + i];
  }
  a = ta;
  b = tb;
}

// Threads for one block per row of n vector items: enough for ~4 items each,
// a multiple of 32 in [32, max_threads].
inline int row_threads(int64_t n_items, int max_threads = 512) {
  int64_t t = (n_items + 3) / 4;
  t = (t + 31) / 32 * 32;
  if (t < 32) t = 32;
  if (t > max_threads) t = max_threads;
  return (int)t;
}

// Threads for a block that owns one row of a forward norm: about four items per
// thread when rows are many (more rows per SM), one item per thread when they
// are few (a decode step's single row: the latency of one pass, not four).
// The rms_norm forward and add_rms_norm use the same rule, so their y agree bit
// for bit at every row count.
inline int row_threads_for(int64_t n_items, int64_t rows, int max_threads = 512) {
  if (rows >= 256) return row_threads(n_items, max_threads);
  int64_t t = (n_items + 31) / 32 * 32;
  if (t < 32) t = 32;
  if (t > max_threads) t = max_threads;
  return (int)t;
}

// dim wrapped into [0, ndim) (a 0-d tensor takes dim 0 or -1); out of range fails with GN_ERR_INDEX.
inline int32_t wrap_dim_checked(const char* op, int64_t dim, int32_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim == GN_DIM_NONE || dim < -n || dim >= n)
    fail_op(GN_ERR_INDEX, op,
            "dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(ndim));
  return ndim > 0 ? (int32_t)(dim < 0 ? dim + n : dim) : 0;
}

// ----------------------------------------------------------------------------
// index values: read any integer dtype as int64 on the device

template <class I>
__device__ __forceinline__ int64_t load_index(const void* p, int64_t i) {
  return (int64_t) static_cast<const I*>(p)[i];
}

// Index tensor pointer + dtype, read as int64 (dtype switch hoisted by the
// compiler out of loops in practice; indices are a small part of the traffic).
struct IndexPtr {
  const void* p;
  int32_t dtype;
  __device__ __forceinline__ int64_t operator[](int64_t i) const {
    switch (dtype) {
      case GN_I8: return (int64_t) static_cast<const int8_t*>(p)[i];
      case GN_U8: return (int64_t) static_cast<const uint8_t*>(p)[i];
      case GN_I32: return (int64_t) static_cast<const int32_t*>(p)[i];
      default: return static_cast<const int64_t*>(p)[i];
    }
  }
};

inline IndexPtr index_ptr(const char* op, const gn_tensor_view& v) {
  if (!gn_dtype_is_int(v.dtype))
    fail_op(GN_ERR_DTYPE, op, std::string("indices must be integers, got ") + gn_dtype_name(v.dtype));
  return IndexPtr{gn_view_ptr(&v), v.dtype};
}

// ----------------------------------------------------------------------------
// out-of-range indices: kernels record the first bad value they see in a
// device flag; the host reads it back after the launch (one small copy and a
// stream sync) and fails with GN_ERR_INDEX.  Bad indices are never
// dereferenced.  Under CUDA graph capture the read-back is skipped (no sync is
// allowed there): bad indices are then skipped silently.

struct BadIndex {
  unsigned long long* flag;  // [0] 0/1, [1] the offending value (int64 bits)
  __device__ __forceinline__ void report(int64_t v) const {
    if (atomicCAS(flag, 0ull, 1ull) == 0ull) flag[1] = (unsigned long long)v;
  }
};

struct IndexCheck {
  const gn_kernel_ctx* ctx;
  BadIndex dev{};
  // Under stream capture nothing reads the flag (finish() returns), so no
  // memset node goes into the graph.
  explicit IndexCheck(const gn_kernel_ctx* c) : ctx(c) {
    dev.flag = static_cast<unsigned long long*>(workspace(ctx, 16));
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    GN_CUDA_CHECK(cudaStreamIsCapturing(stream(ctx), &cs));
    if (cs == cudaStreamCaptureStatusNone) GN_CUDA_CHECK(cudaMemsetAsync(dev.flag, 0, 16, stream(ctx)));
  }
  // After the kernels: fail when one saw an index outside [0, size).
  void finish(const char* op, int64_t size) const {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    GN_CUDA_CHECK(cudaStreamIsCapturing(stream(ctx), &cs));
    if (cs != cudaStreamCaptureStatusNone) return;
    unsigned long long h[2] = {0, 0};
    GN_CUDA_CHECK(cudaMemcpyAsync(h, dev.flag, 16, cudaMemcpyDeviceToHost, stream(ctx)));
    GN_CUDA_CHECK(cudaStreamSynchronize(stream(ctx)));
    if (h[0])
      fail_op(GN_ERR_INDEX, op,
              "index " + std::to_string((int64_t)h[1]) + " is out of range for size " + std::to_string(size));
  }
};

// ----------------------------------------------------------------------------
// raw elements: exact copies by element size (dtype-agnostic gathers)

// The unsigned integer of BYTES bytes (1, 2, 4 or 8).
template <int BYTES>
struct RawOf {
  static_assert(BYTES == 1 || BYTES == 2 || BYTES == 4 || BYTES == 8, "RawOf: 1, 2, 4 or 8 bytes");
  using type =
      std::conditional_t<BYTES == 1, uint8_t,
                         std::conditional_t<BYTES == 2, uint16_t, std::conditional_t<BYTES == 4, uint32_t, uint64_t>>>;
};

// Call f(Tag<uintN_t>{}) for an element size of 1, 2, 4 or 8 bytes.
template <class F>
void dispatch_raw(int32_t dtype, const char* op, F&& f) {
  switch (gn_dtype_size(dtype)) {
    case 1: f(Tag<uint8_t>{}); break;
    case 2: f(Tag<uint16_t>{}); break;
    case 4: f(Tag<uint32_t>{}); break;
    case 8: f(Tag<uint64_t>{}); break;
    default: fail_op(GN_ERR_DTYPE, op, std::string("unsupported dtype ") + gn_dtype_name(dtype));
  }
}

// The widest copy unit (16, 8, 4, 2 or 1 bytes) that divides every value: byte counts,
// byte offsets and addresses.
inline int copy_unit(std::initializer_list<uint64_t> values) {
  for (int u = 16; u > 1; u /= 2) {
    bool ok = true;
    for (uint64_t v : values) ok = ok && v % u == 0;
    if (ok) return u;
  }
  return 1;
}

// Call f(Tag<U>{}) for the element of a copy unit of `bytes` bytes (copy_unit's result).
template <class F>
void dispatch_unit(int bytes, F&& f) {
  switch (bytes) {
    case 16: f(Tag<uint4>{}); break;
    case 8: f(Tag<uint2>{}); break;
    case 4: f(Tag<uint32_t>{}); break;
    case 2: f(Tag<uint16_t>{}); break;
    default: f(Tag<uint8_t>{}); break;
  }
}

// ----------------------------------------------------------------------------
// workspace carving: one workspace() call, sub-buffers aligned to 256 bytes

struct Carver {
  size_t total = 0;
  size_t add(size_t bytes) {
    size_t off = total;
    total += (bytes + 255) / 256 * 256;
    return off;
  }
};

// Grid size for a grid-stride loop over n items: enough blocks to fill the
// device a few times over, never more than needed.
inline unsigned grid_for(const gn_kernel_ctx* ctx, int64_t n, int threads = kThreads, int waves = 8) {
  int64_t need = (n + threads - 1) / threads;
  int64_t cap = (int64_t)sm_count(ctx) * waves * (2048 / threads);
  if (need > cap) need = cap;
  if (need < 1) need = 1;
  return (unsigned)need;
}

}  // namespace gn::cuda::nn
