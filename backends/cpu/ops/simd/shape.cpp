// backends/cpu/ops/simd/shape.cpp - cat, stack, triu and tril in C++ (split
// is a core view op: no kernel).
//
// All registered GN_KERNEL_CONTIGUOUS (dense row-major views) and byte copies,
// so every dtype works.  Inputs of another dtype than the output (promotion)
// and shapes that do not fit answer "unsupported" before anything is written,
// so the reference kernel runs and reports the error itself.
#include <algorithm>

#include "data_movement.h"

namespace gn::cpu::simd {
namespace {

// ----------------------------------------------------------------------------
// cat, stack

// cat: out (outer, sum of sizes, inner); 1-D empty inputs are skipped when out
// is not 1-D (torch's legacy rule, as the reference).
GN_SDK_KERNEL(cat_kernel) {
  const gn_tensor_view& o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), o.ndim);
  if (dim < 0) GN_UNSUPPORTED("[cat] dim");
  const Dims od = dims_of(o);
  int64_t total = 0;
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    if (x.dtype != o.dtype) GN_UNSUPPORTED("[cat] mixed dtypes");
    if (x.ndim != o.ndim) {
      if (x.ndim == 1 && x.shape[0] == 0) continue;
      GN_UNSUPPORTED("[cat] ranks");
    }
    for (int32_t d = 0; d < o.ndim; ++d)
      if (d != dim && x.shape[d] != o.shape[d]) GN_UNSUPPORTED("[cat] shapes");
    total += x.shape[dim];
  }
  if (total != o.shape[dim]) GN_UNSUPPORTED("[cat] shapes");
  const size_t es = gn_dtype_size(o.dtype);
  const int64_t outer = prod(od, 0, (size_t)dim), inner = prod(od, (size_t)dim + 1, od.size());
  const size_t orow = (size_t)(o.shape[dim] * inner) * es;
  char* po = (char*)data_of(o);
  int64_t off = 0;
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    if (x.ndim != o.ndim) continue;
    const size_t xrow = (size_t)(x.shape[dim] * inner) * es;
    const char* px = (const char*)data_of(x);
    const size_t base = (size_t)(off * inner) * es;
    parallel_for(outer, (int64_t)xrow / 4 + 1,
                 [&](int64_t a) { copy_bytes(po + (size_t)a * orow + base, px + (size_t)a * xrow, xrow); });
    off += x.shape[dim];
  }
}

GN_SDK_KERNEL(stack_kernel) {
  const gn_tensor_view& o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), o.ndim);
  if (dim < 0 || o.shape[dim] != (int64_t)n_in) GN_UNSUPPORTED("[stack] these arguments");
  Dims shape = dims_of(o);
  shape.erase(shape.begin() + dim);
  for (size_t k = 0; k < n_in; ++k)
    if (in[k].dtype != o.dtype || dims_of(in[k]) != shape) GN_UNSUPPORTED("[stack] inputs");
  const size_t es = gn_dtype_size(o.dtype);
  const int64_t outer = prod(shape, 0, (size_t)dim), inner = prod(shape, (size_t)dim, shape.size());
  const size_t row = (size_t)inner * es;
  const int64_t K = (int64_t)n_in;
  char* po = (char*)data_of(o);
  parallel_for(outer * K, inner, [&](int64_t r) {
    const int64_t a = r / K, k = r % K;
    copy_bytes(po + (size_t)r * row, (const char*)data_of(in[k]) + (size_t)a * row, row);
  });
}

// ----------------------------------------------------------------------------
// triu / tril

template <bool UPPER>
void tri(const gn_tensor_view* in, size_t n_in, const gn_tensor_view& o, int64_t diagonal) {
  const gn_tensor_view& x = in[0];
  if (n_in != 1 || x.ndim < 2 || o.dtype != x.dtype || dims_of(o) != dims_of(x))
    GN_UNSUPPORTED(UPPER ? "[triu] these arguments" : "[tril] these arguments");
  const int64_t M = x.shape[x.ndim - 2], N = x.shape[x.ndim - 1], rows = N ? gn_view_numel(&x) / N : 0;
  const size_t es = gn_dtype_size(x.dtype);
  const char* px = (const char*)data_of(x);
  char* po = (char*)data_of(o);
  parallel_for(rows, N, [&](int64_t r) {
    const int64_t i = r % M;
    // triu keeps j >= i + diagonal, tril keeps j <= i + diagonal
    const int64_t b = UPPER ? std::clamp<int64_t>(i + diagonal, 0, N) : 0;
    const int64_t e = UPPER ? N : std::clamp<int64_t>(i + diagonal + 1, 0, N);
    char* d = po + (size_t)(r * N) * es;
    const char* s = px + (size_t)(r * N) * es;
    set_bytes(d, 0, (size_t)b * es);
    if (e > b) move_bytes(d + b * es, s + b * es, (size_t)(e - b) * es);
    set_bytes(d + e * es, 0, (size_t)(N - e) * es);
  });
}

GN_SDK_KERNEL(triu_kernel) { tri<true>(in, n_in, out[0], attr_i(attrs, n_attrs, 0, 0)); }
GN_SDK_KERNEL(tril_kernel) { tri<false>(in, n_in, out[0], attr_i(attrs, n_attrs, 0, 0)); }

}  // namespace

void register_shape(const gn::sdk::Registrar& r) {
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("cat", all, cat_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("stack", all, stack_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("triu", all, triu_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("tril", all, tril_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
