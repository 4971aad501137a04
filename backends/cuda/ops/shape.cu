// backends/cuda/ops/shape.cu - cat, stack, triu, tril.
// (split is a core view op: no kernel.)
//
// Every tensor is dense (GN_KERNEL_CONTIGUOUS); inputs arrive in the output's
// dtype (inference casts), so everything is a raw element copy of the dtype's
// size, exact for every dtype.
//   cat / stack: out seen as (outer, total, inner); input k is (outer, d_k,
//     inner) copied at offset sum(d_<k) in the widest unit (16..1 bytes) that
//     divides both row pitches, the offset and the alignment.  stack is cat
//     with d_k = 1.  One launch per input.
//   triu / tril: keep j - i >= diag (triu) / <= diag (tril), else 0 bits.
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

using nn::wrap_dim_checked;

// ----------------------------------------------------------------------------
// cat / stack

// dst (outer rows of dst_pitch units, from column col0) = src (outer, src_pitch)
template <class U>
__global__ void copy_rows_kernel(const U* __restrict__ src, U* __restrict__ dst, int64_t outer, int64_t src_pitch,
                                 int64_t dst_pitch, int64_t col0) {
  const int64_t n = outer * src_pitch;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / src_pitch, c = i - r * src_pitch;
    dst[r * dst_pitch + col0 + c] = src[i];
  }
}

// Copy a dense block (outer, src_bytes) into rows of dst_bytes at byte offset off.
void copy_rows(const gn_kernel_ctx* ctx, const void* src, void* dst, int64_t outer, int64_t src_bytes,
               int64_t dst_bytes, int64_t off) {
  if (outer == 0 || src_bytes == 0) return;
  const int u =
      nn::copy_unit({(uint64_t)src_bytes, (uint64_t)dst_bytes, (uint64_t)off, (uintptr_t)src, (uintptr_t)dst});
  const unsigned grid = nn::grid_for(ctx, outer * (src_bytes / u));
  nn::dispatch_unit(u, [&](auto tag) {
    using U = typename decltype(tag)::type;
    copy_rows_kernel<U><<<grid, kThreads, 0, stream(ctx)>>>(static_cast<const U*>(src), static_cast<U*>(dst), outer,
                                                            src_bytes / u, dst_bytes / u, off / u);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// in: x0, x1, ...; out: joined along dim; attrs: dim
GN_SDK_KERNEL(cat_fn) {
  const char* op = "cat";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view& o = out[0];
  if (o.ndim == 0) fail_op(GN_ERR_SHAPE, op, "cannot concatenate 0-d tensors");
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), o.ndim);
  const int64_t es = (int64_t)gn_dtype_size(o.dtype);
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < dim; ++d) outer *= o.shape[d];
  for (int32_t d = dim + 1; d < o.ndim; ++d) inner *= o.shape[d];
  const int64_t total = o.shape[dim];
  int64_t offset = 0;
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    if (x.ndim != o.ndim) {
      if (x.ndim == 1 && x.shape[0] == 0) continue;
      fail_op(GN_ERR_SHAPE, op,
              "input " + std::to_string(k) + " " + shape_str(x) + " has another rank than " + shape_str(o));
    }
    bool ok = x.dtype == o.dtype && offset + x.shape[dim] <= total;
    for (int32_t d = 0; ok && d < o.ndim; ++d) ok = d == dim || x.shape[d] == o.shape[d];
    if (!ok)
      fail_op(GN_ERR_SHAPE, op,
              "input " + std::to_string(k) + " " + shape_str(x) + " does not fit output " + shape_str(o));
    copy_rows(ctx, gn_view_ptr(&x), gn_view_ptr(&o), outer, x.shape[dim] * inner * es, total * inner * es,
              offset * inner * es);
    offset += x.shape[dim];
  }
  if (offset != total) fail_op(GN_ERR_SHAPE, op, "inputs do not fill output " + shape_str(o));
}

// in: x0, x1, ... (same shapes); out: new dim of size n_in at dim; attrs: dim
GN_SDK_KERNEL(stack_fn) {
  const char* op = "stack";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view& o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), o.ndim);
  if (o.ndim == 0 || o.shape[dim] != (int64_t)n_in)
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not stack " + std::to_string(n_in) + " inputs");
  const int64_t es = (int64_t)gn_dtype_size(o.dtype);
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < dim; ++d) outer *= o.shape[d];
  for (int32_t d = dim + 1; d < o.ndim; ++d) inner *= o.shape[d];
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    bool ok = x.ndim == o.ndim - 1 && x.dtype == o.dtype;
    for (int32_t d = 0, e = 0; ok && d < o.ndim; ++d)
      if (d != dim) ok = x.shape[e++] == o.shape[d];
    if (!ok)
      fail_op(GN_ERR_SHAPE, op,
              "input " + std::to_string(k) + " " + shape_str(x) + " does not fit output " + shape_str(o));
    copy_rows(ctx, gn_view_ptr(&x), gn_view_ptr(&o), outer, inner * es, (int64_t)n_in * inner * es,
              (int64_t)k * inner * es);
  }
}

// ----------------------------------------------------------------------------
// triu / tril

template <class U, bool kUpper>
__global__ void tri_kernel(const U* __restrict__ x, U* __restrict__ out, int64_t n, int64_t M, int64_t N,
                           int64_t diag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = i % N, r = (i / N) % M;
    const bool keep = kUpper ? j - r >= diag : j - r <= diag;
    out[i] = keep ? x[i] : U(0);
  }
}

void tri_impl(const gn_kernel_ctx* ctx, const char* op, bool upper, const gn_tensor_view* in, size_t n_in,
              const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &o = out[0];
  if (x.ndim < 2) fail_op(GN_ERR_SHAPE, op, "input must have at least 2 dims, got " + shape_str(x));
  if (numel(o) != numel(x) || o.dtype != x.dtype) fail_op(GN_ERR_SHAPE, op, "output must match the input");
  const int64_t diag = attr_int(op, attrs, n_attrs, 0);
  const int64_t n = numel(x), M = x.shape[x.ndim - 2], N = x.shape[x.ndim - 1];
  if (n == 0) return;
  nn::dispatch_raw(x.dtype, op, [&](auto tag) {
    using U = typename decltype(tag)::type;
    auto k = upper ? tri_kernel<U, true> : tri_kernel<U, false>;
    k<<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<const U>(x), data_ptr<U>(o), n, M, N, diag);
  });
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(triu_fn) { tri_impl(ctx, "triu", true, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(tril_fn) { tri_impl(ctx, "tril", false, in, n_in, out, n_out, attrs, n_attrs); }

}  // namespace

GN_CUDA_FAMILY(shape) {
  r.kernel("cat", kAllDtypes, cat_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("stack", kAllDtypes, stack_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("triu", kAllDtypes, triu_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("tril", kAllDtypes, tril_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
