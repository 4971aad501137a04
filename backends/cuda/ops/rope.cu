// backends/cuda/ops/rope.cu - rope (HF rotate-half layout), forward and
// backward.
//
// x (..., D) dense, D even, h = D/2; cos/sin dense in their own shape and
// broadcast to x's (offsets through an OffsetCalc, so cos (S, D) against
// x (B, H, S, D) needs no expanded copy).  One thread per (row, d < h) pair
// computes both halves:
//   forward   y[d]   = x[d]*c[d]     - x[d+h]*s[d]
//             y[d+h] = x[d+h]*c[d+h] + x[d]*s[d+h]
//   backward  dx[d]   = g[d]*c[d]     + g[d+h]*s[d+h]     (rotate_half_T(g*sin))
//             dx[d+h] = g[d+h]*c[d+h] - g[d]*s[d]
// All arithmetic in opmath_t<T> (f64 for f32/f64 like the reference, f32 for
// the 16-bit types).
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

// ----------------------------------------------------------------------------
// rope

template <class T, bool kBackward>
__global__ void rope_kernel(const T* __restrict__ x, const T* __restrict__ cs, const T* __restrict__ sn,
                            T* __restrict__ y, OffsetCalc<2> oc, int64_t pairs, int64_t D) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  using A = nn::opmath_t<T>;
  const int64_t h = D / 2;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = p / h, d = p - r * h;
    const int64_t i0 = r * D + d, i1 = i0 + h;
    int64_t o0[2], o1[2];
    oc.get(i0, o0);
    oc.get(i1, o1);
    const A x0 = convert<A>(x[i0]), x1 = convert<A>(x[i1]);
    const A c0 = convert<A>(cs[o0[0]]), c1 = convert<A>(cs[o1[0]]);
    const A s0 = convert<A>(sn[o0[1]]), s1 = convert<A>(sn[o1[1]]);
    if constexpr (kBackward) {
      y[i0] = convert<T>(x0 * c0 + x1 * s1);
      y[i1] = convert<T>(x1 * c1 - x0 * s0);
    } else {
      y[i0] = convert<T>(x0 * c0 - x1 * s0);
      y[i1] = convert<T>(x1 * c1 + x0 * s1);
    }
  }
}

void rope_common(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view* in, size_t n_in,
                 const gn_tensor_view* out, size_t n_out, bool backward) {
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view& x = in[0];
  if (x.ndim < 1) fail_op(GN_ERR_SHAPE, op, "input must be at least 1-D");
  const int64_t D = x.shape[x.ndim - 1];
  if (D % 2 != 0) fail_op(GN_ERR_SHAPE, op, "last dim " + std::to_string(D) + " must be even");
  if (numel(out[0]) != numel(x))
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(out[0]) + " does not match " + shape_str(x));
  for (int k = 1; k <= 2; ++k) {
    const gn_tensor_view& v = in[k];
    bool ok = v.ndim <= x.ndim && v.dtype == x.dtype;
    for (int32_t d = 0; ok && d < v.ndim; ++d) {
      const int64_t s = v.shape[d], t = x.shape[d + x.ndim - v.ndim];
      ok = s == t || s == 1;
    }
    if (!ok)
      fail_op(GN_ERR_SHAPE, op,
              std::string(k == 1 ? "cos " : "sin ") + shape_str(v) + " " + gn_dtype_name(v.dtype) +
                  " does not broadcast to " + shape_str(x) + " " + gn_dtype_name(x.dtype));
  }
  const int64_t pairs = numel(x) / 2;
  if (pairs == 0) return;
  const gn_tensor_view* views[2] = {&in[1], &in[2]};
  const OffsetCalc<2> oc = make_offset_calc<2>(x.shape, x.ndim, views);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto k = backward ? rope_kernel<T, true> : rope_kernel<T, false>;
    launch_pdl_ptr(k, nn::grid_for(ctx, pairs), kThreads, 0, stream(ctx), data_ptr<const T>(x),
                   data_ptr<const T>(in[1]), data_ptr<const T>(in[2]), data_ptr<T>(out[0]), oc, pairs, D);
  });
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(rope_fwd_kernel) { rope_common(ctx, "rope", in, n_in, out, n_out, false); }
GN_SDK_KERNEL(rope_bwd_kernel) { rope_common(ctx, "rope_backward", in, n_in, out, n_out, true); }

}  // namespace

GN_CUDA_FAMILY(rope) {
  r.kernel("rope", kFloatDtypes, rope_fwd_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rope_backward", kFloatDtypes, rope_bwd_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
