// backends/cpu/ops/simd/activation.cpp - swiglu and swiglu_backward in C++
// (OpenMP over chunks), f32, f64, f16 and bf16, dense tensors
// (GN_KERNEL_CONTIGUOUS), computed in double like the reference (one rounding):
//   swiglu(gate, up) -> silu(gate)*up; swiglu_backward(g, gate, up) -> (dgate, dup)
#include <cmath>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

template <class T>
inline double sigm(T x) {
  return 1.0 / (1.0 + std::exp(-(double)x));
}

bool same(const gn_tensor_view& a, const gn_tensor_view& b) {
  if (a.ndim != b.ndim || a.dtype != b.dtype) return false;
  for (int32_t d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

GN_SDK_KERNEL(swiglu_kernel) {
  if (n_in < 2 || n_out < 1 || !same(in[0], in[1]) || !same(in[0], out[0])) GN_UNSUPPORTED("[swiglu] shapes");
  const int64_t n = gn_view_numel(&in[0]);
  if (!dispatch_float_h(in[0].dtype, [&](auto t) {
        using T = decltype(t);
        const T *g = (const T*)data_of(in[0]), *u = (const T*)data_of(in[1]);
        T* y = (T*)data_of(out[0]);
        parallel_range(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) y[i] = to_t<T>((double)g[i] * sigm(g[i]) * (double)u[i]);
        });
      }))
    GN_UNSUPPORTED("[swiglu] dtype");
}

GN_SDK_KERNEL(swiglu_backward_kernel) {
  if (n_in < 3 || n_out < 2 || !same(in[0], in[1]) || !same(in[0], in[2]) || !same(in[0], out[0]) ||
      !same(in[0], out[1]))
    GN_UNSUPPORTED("[swiglu_backward] shapes");
  const int64_t n = gn_view_numel(&in[0]);
  if (!dispatch_float_h(in[0].dtype, [&](auto t) {
        using T = decltype(t);
        const T *g = (const T*)data_of(in[0]), *a = (const T*)data_of(in[1]), *u = (const T*)data_of(in[2]);
        T *da = (T*)data_of(out[0]), *du = (T*)data_of(out[1]);
        parallel_range(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const double s = sigm(a[i]), gi = g[i], ai = a[i];
            da[i] = to_t<T>(gi * (double)u[i] * s * (1.0 + ai * (1.0 - s)));
            du[i] = to_t<T>(gi * ai * s);
          }
        });
      }))
    GN_UNSUPPORTED("[swiglu_backward] dtype");
}

}  // namespace

void register_activation(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("swiglu", dtypes, swiglu_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("swiglu_backward", dtypes, swiglu_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
