// backends/cuda/ops/embedding.cu - embedding forward and backward.
//
// forward: weight (V, D) dense, any dtype; ids (*) any integer dtype ->
//   out (*, D) = weight[ids].  Rows are copied as raw bytes in the widest
//   unit (16, 8, 4, 2 or 1 bytes) that divides the row and the alignment.
// backward: grad (*, D) float, ids (*) -> (num_weights, D), repeated ids
//   accumulate DETERMINISTICALLY: the (id, position) pairs are radix-sorted
//   (CUB, stable, so equal ids keep their original order), then one block per
//   run of equal ids adds its grad rows in that order in double (the
//   reference's arithmetic and order: bit-identical results) and writes the weight row once.  Rows of ids that never occur are 0.
//   No atomics.  A run is summed serially (columns in parallel): a single id
//   repeated m times costs m row reads on one block column slab.
// Out-of-range ids (< 0 or >= V) fail with GN_ERR_INDEX (device flag, read
// back after the launch; see nn_common.cuh).
#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

// ----------------------------------------------------------------------------
// forward

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

// Widest copy unit dividing `row_bytes` with both base pointers aligned to it.
int unit_bytes(int64_t row_bytes, const void* a, const void* b) {
  for (int u = 16; u > 1; u /= 2)
    if (row_bytes % u == 0 && ((uintptr_t)a % u) == 0 && ((uintptr_t)b % u) == 0) return u;
  return 1;
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
  const int u = unit_bytes(row_bytes, wp, op_);
  const int64_t upr = row_bytes / u;
  nn::IndexCheck check(ctx);
  const unsigned grid = nn::grid_for(ctx, n * upr);
  switch (u) {
    case 16:
      launch_pdl_ptr(embedding_fwd_kernel<uint4>, grid, kThreads, 0, stream(ctx), (const uint4*)wp, ip, (uint4*)op_, n,
                     upr, V, check.dev);
      break;
    case 8:
      launch_pdl_ptr(embedding_fwd_kernel<uint2>, grid, kThreads, 0, stream(ctx), (const uint2*)wp, ip, (uint2*)op_, n,
                     upr, V, check.dev);
      break;
    case 4:
      launch_pdl_ptr(embedding_fwd_kernel<uint32_t>, grid, kThreads, 0, stream(ctx), (const uint32_t*)wp, ip,
                     (uint32_t*)op_, n, upr, V, check.dev);
      break;
    case 2:
      launch_pdl_ptr(embedding_fwd_kernel<uint16_t>, grid, kThreads, 0, stream(ctx), (const uint16_t*)wp, ip,
                     (uint16_t*)op_, n, upr, V, check.dev);
      break;
    default:
      launch_pdl_ptr(embedding_fwd_kernel<uint8_t>, grid, kThreads, 0, stream(ctx), (const uint8_t*)wp, ip,
                     (uint8_t*)op_, n, upr, V, check.dev);
      break;
  }
  GN_CUDA_CHECK_LAUNCH();
  check.finish(op, V);
}

// ----------------------------------------------------------------------------
// backward

// keys[i] = ids[i] (out of range: reported, key V so it sorts last and is
// skipped), pos[i] = i.
__global__ void embedding_keys_kernel(nn::IndexPtr ids, int32_t* __restrict__ keys, int32_t* __restrict__ pos,
                                      int64_t n, int64_t V, nn::BadIndex bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t id = ids[i];
    if (id < 0 || id >= V) {
      bad.report(id);
      keys[i] = (int32_t)V;
    } else {
      keys[i] = (int32_t)id;
    }
    pos[i] = (int32_t)i;
  }
}

// Block x walks sorted positions; at the start of each run of equal keys it
// sums the run's grad rows (original order) for its slab of columns.
template <class T>
__global__ void embedding_bwd_runs_kernel(const T* __restrict__ g, const int32_t* __restrict__ keys,
                                          const int32_t* __restrict__ pos, T* __restrict__ out, int64_t n, int64_t D,
                                          int64_t V) {
  using A = double;  // the reference's sum, in its order: bit-identical
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int32_t key = keys[i];
    if ((i > 0 && keys[i - 1] == key) || key >= V) continue;
    for (int64_t col = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; col < D; col += (int64_t)gridDim.y * blockDim.x) {
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
  int end_bit = 1;
  while (end_bit < 32 && ((int64_t)1 << end_bit) <= V) ++end_bit;
  size_t temp_bytes = 0;
  GN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, (const int32_t*)nullptr, (int32_t*)nullptr,
                                                (const int32_t*)nullptr, (int32_t*)nullptr, (int)n, 0, end_bit,
                                                stream(ctx)));
  nn::Carver cv;
  const size_t o_kin = cv.add(n * 4), o_kout = cv.add(n * 4), o_vin = cv.add(n * 4), o_vout = cv.add(n * 4),
               o_tmp = cv.add(temp_bytes);
  char* ws = static_cast<char*>(workspace(ctx, cv.total));
  int32_t *kin = (int32_t*)(ws + o_kin), *kout = (int32_t*)(ws + o_kout);
  int32_t *vin = (int32_t*)(ws + o_vin), *vout = (int32_t*)(ws + o_vout);
  embedding_keys_kernel<<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(ip, kin, vin, n, V, check.dev);
  GN_CUDA_CHECK_LAUNCH();
  GN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(ws + o_tmp, temp_bytes, kin, kout, vin, vout, (int)n, 0, end_bit,
                                                stream(ctx)));
  if (D > 0) {
    const int threads = D >= 256 ? 256 : (int)((D + 31) / 32 * 32);
    const unsigned slabs = (unsigned)std::min<int64_t>((D + threads - 1) / threads, 65535);
    const dim3 grid((unsigned)std::min<int64_t>(n, (int64_t)1 << 30), slabs);
    dispatch_float(g.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      embedding_bwd_runs_kernel<T><<<grid, threads, 0, stream(ctx)>>>(data_ptr<const T>(g), kout, vout,
                                                                      data_ptr<T>(o), n, D, V);
    });
    GN_CUDA_CHECK_LAUNCH();
  }
  check.finish(op, V);
}

}  // namespace

GN_CUDA_FAMILY(embedding) {
  r.kernel("embedding", kAllDtypes, embedding_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("embedding_backward", kFloatDtypes, embedding_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
