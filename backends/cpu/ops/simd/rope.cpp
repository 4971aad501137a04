// backends/cpu/ops/simd/rope.cpp - rope and rope_backward in C++: x (..., D)
// dense, cos/sin broadcast to x; computed in double like the reference (one
// rounding), rows in parallel.
#include <string>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

template <class T>
void rope_run(const gn_tensor_view& x, const gn_tensor_view& cs, const gn_tensor_view& sn, const gn_tensor_view& y,
              bool backward) {
  const int32_t R = x.ndim;
  const int64_t D = x.shape[R - 1], h = D / 2, rows = D ? gn_view_numel(&x) / D : 0;
  std::vector<int64_t> sc, ss;
  bcast_strides(cs, R, x.shape, sc);
  bcast_strides(sn, R, x.shape, ss);
  const T *px = (const T*)data_of(x), *pc = (const T*)data_of(cs), *ps = (const T*)data_of(sn);
  T* py = (T*)data_of(y);
  const int64_t ic = sc[(size_t)R - 1], is = ss[(size_t)R - 1];
  parallel_for(rows, D, [&](int64_t r) {
    const T* xr = px + r * D;
    const T* cr = pc + row_offset(r, R, x.shape, sc.data());
    const T* sr = ps + row_offset(r, R, x.shape, ss.data());
    T* yr = py + r * D;
    for (int64_t d = 0; d < D; ++d) {
      double rot;
      if (!backward)
        rot = (d < h ? -(double)xr[d + h] : (double)xr[d - h]) * (double)sr[d * is];
      else
        rot = d < h ? (double)xr[d + h] * (double)sr[(d + h) * is] : -((double)xr[d - h] * (double)sr[(d - h) * is]);
      yr[d] = to_t<T>((double)xr[d] * (double)cr[d * ic] + rot);
    }
  });
}

GN_SDK_KERNEL(rope_kernel) {
  const bool backward = ctx->op_name && std::string(ctx->op_name) == "rope_backward";
  if (n_in < 3 || n_out < 1) GN_UNSUPPORTED("[rope] arity");
  const gn_tensor_view &x = in[0], &o = out[0];
  std::vector<int64_t> tmp;
  if (x.ndim < 1 || x.shape[x.ndim - 1] % 2 || in[1].dtype != x.dtype || in[2].dtype != x.dtype || o.dtype != x.dtype ||
      gn_view_numel(&o) != gn_view_numel(&x) || !bcast_strides(in[1], x.ndim, x.shape, tmp) ||
      !bcast_strides(in[2], x.ndim, x.shape, tmp))
    GN_UNSUPPORTED("[rope] these arguments");
  if (gn_view_numel(&x) == 0) return;
  if (!dispatch_float_h(x.dtype, [&](auto z) { rope_run<decltype(z)>(x, in[1], in[2], o, backward); }))
    GN_UNSUPPORTED("[rope] dtype");
}

}  // namespace

void register_rope(const gn::sdk::Registrar& r) {
  const int32_t f2[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("rope", f2, rope_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rope_backward", f2, rope_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
