// backends/cpu/ops/onednn/llm.cpp - linear and linear_swiglu: the matmul path
// of onednn/linalg.cpp (matmul_run: oneDNN matmul, C++ loops for what oneDNN
// refuses) with the weight transposed, then the bias or the SwiGLU activation
// in C++ rows.
#include <cmath>
#include <vector>

#include "matmul.h"

namespace gn::cpu::onednn {
namespace {

// linear(x (R.., K), weight (N, K), [bias (N)]) -> (R.., N), dense: matmul with
// trans_b, then the bias added per row (the product rounded to the dtype first,
// as matmul then add would).
GN_SDK_KERNEL(linear_kernel) {
  if (n_in < 2 || n_in > 3 || n_out != 1)
    fail_op(GN_ERR_INVALID_ARGUMENT, "linear", "expects 2 or 3 inputs and 1 output");
  if (in[0].ndim < 1 || in[1].ndim != 2) GN_UNSUPPORTED("[linear] rank");
  matmul_run("linear", ctx, in[0], in[1], out[0], false, true);
  if (n_in < 3) return;
  const int64_t N = in[1].shape[0], R = N ? gn_view_numel(&out[0]) / N : 0;
  const bool ok = dispatch_float_h(out[0].dtype, [&](auto t) {
    using T = decltype(t);
    T* o = (T*)data_of(out[0]);
    const T* b = (const T*)data_of(in[2]);
    parallel_for(R, N, [&](int64_t r) {
      T* orow = o + r * N;
      for (int64_t n = 0; n < N; ++n) orow[n] = to_t<T>(ld(orow + n) + ld(b + n));
    });
  });
  if (!ok) GN_UNSUPPORTED("[linear] dtype");
}

// linear_swiglu(x (R.., K), weight (2I, K)) -> (R.., I), dense: the (R, 2I)
// product into a scratch buffer through the same matmul path, then
// silu(g) * u per element (the product rounded to the dtype first).
GN_SDK_KERNEL(linear_swiglu_kernel) {
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "linear_swiglu", "expects 2 inputs and 1 output");
  const gn_tensor_view& o = out[0];
  if (in[0].ndim < 1 || in[1].ndim != 2 || o.ndim < 1) GN_UNSUPPORTED("[linear_swiglu] rank");
  const int64_t I = in[1].shape[0] / 2, R = I ? gn_view_numel(&o) / I : 0;
  std::vector<int64_t> shape(o.shape, o.shape + o.ndim), strides(o.ndim);
  shape.back() = 2 * I;
  for (int64_t d = o.ndim - 1, st = 1; d >= 0; --d) {
    strides[d] = st;
    st *= shape[d];
  }
  const bool ok = dispatch_float_h(o.dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<T> tmp((size_t)(R * 2 * I));
    gn_tensor_view tv = o;
    tv.data = tmp.data();
    tv.byte_offset = 0;
    tv.shape = shape.data();
    tv.strides = strides.data();
    matmul_run("linear_swiglu", ctx, in[0], in[1], tv, false, true);
    T* y = (T*)data_of(o);
    parallel_for(R, 2 * I, [&](int64_t r) {
      const T* g = tmp.data() + r * 2 * I;
      for (int64_t i = 0; i < I; ++i) {
        const double a = ld(g + i);
        y[r * I + i] = to_t<T>(a / (1.0 + std::exp(-a)) * ld(g + I + i));
      }
    });
  });
  if (!ok) GN_UNSUPPORTED("[linear_swiglu] dtype");
}

}  // namespace

void register_llm(const gn::sdk::Registrar& r) {
  const int32_t float_dtypes[] = {GN_F32, GN_BF16, GN_F16, GN_F64};
  r.kernel("linear", float_dtypes, linear_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("linear_swiglu", float_dtypes, linear_swiglu_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::onednn
