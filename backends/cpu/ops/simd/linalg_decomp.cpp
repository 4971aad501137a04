// backends/cpu/ops/simd/linalg_decomp.cpp - lu_factor, lu_solve, solve_triangular, cholesky,
// qr, svd and eigh in C++.
//
// Views dense (GN_KERNEL_CONTIGUOUS); the matrices of a batch are factored in parallel, each on
// one thread, in the tensor's own precision (float32 or float64) by the SDK's host algorithms
// (genesis/sdk/dense_linalg.h), the reference's algorithms: float64 results match the reference
// up to the compiler's contraction of a*b+c, float32 ones to float32 rounding.
#include <algorithm>

#include "genesis/sdk/dense_linalg.h"
#include "loops.h"

namespace gn::cpu::simd {
namespace {

namespace la = gn::sdk::linalg;

// Number of matrices (or items of `tail` trailing dims) in a dense view.
int64_t batch_of(const gn_tensor_view& v, int32_t tail) {
  int64_t n = 1;
  for (int32_t d = 0; d < v.ndim - tail; ++d) n *= v.shape[d];
  return n;
}
int64_t dim_from_end(const gn_tensor_view& v, int32_t k) { return v.shape[v.ndim - k]; }

// Whether every view in vs has dtype dt and the given trailing item shape with `batch` items.
bool fits(const gn_tensor_view& v, int32_t dt, int64_t batch, std::initializer_list<int64_t> item) {
  const int32_t tail = (int32_t)item.size();
  if (v.dtype != dt || v.ndim < tail || batch_of(v, tail) != batch) return false;
  int32_t i = tail;
  for (int64_t s : item)
    if (dim_from_end(v, i--) != s) return false;
  return true;
}

// f(T-tag) for float32/float64 inputs, "unsupported" for anything else.
template <class F>
void floats(const char* op, int32_t dt, F&& f) {
  if (!dispatch_float(dt, f)) GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

GN_SDK_KERNEL(lu_factor_kernel) {
  const gn_tensor_view &A = in[0], &LU = out[0], &P = out[1], &I = out[2];
  if (n_in != 1 || n_out != 3 || A.ndim < 2) GN_UNSUPPORTED("[lu_factor] arity");
  const int64_t m = dim_from_end(A, 2), n = dim_from_end(A, 1), k = std::min(m, n), B = batch_of(A, 2);
  if (!fits(LU, A.dtype, B, {m, n}) || !fits(P, GN_I32, B, {k}) || !fits(I, GN_I32, B, {}))
    GN_UNSUPPORTED("[lu_factor] outputs");
  floats("lu_factor", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = (const T*)data_of(A);
    T* plu = (T*)data_of(LU);
    int32_t *pp = (int32_t*)data_of(P), *pi = (int32_t*)data_of(I);
    parallel_for(B, m * n * k, [&](int64_t b) {
      T* a = plu + b * m * n;
      std::copy(pa + b * m * n, pa + (b + 1) * m * n, a);
      pi[b] = (int32_t)la::lu_factor(a, m, n, pp + b * k);
    });
  });
}

GN_SDK_KERNEL(lu_solve_kernel) {
  if (n_in != 3 || n_out != 1 || in[0].ndim < 2 || in[2].ndim < 2) GN_UNSUPPORTED("[lu_solve] arity");
  const gn_tensor_view &LU = in[0], &P = in[1], &Bm = in[2], &X = out[0];
  const int64_t n = dim_from_end(LU, 1), k = dim_from_end(Bm, 1), B = batch_of(LU, 2);
  if (!fits(P, GN_I32, B, {n}) || !fits(Bm, LU.dtype, B, {n, k}) || !fits(X, LU.dtype, B, {n, k}))
    GN_UNSUPPORTED("[lu_solve] these arguments");
  const int32_t* pp = (const int32_t*)data_of(P);
  for (int64_t i = 0; i < B * n; ++i)  // a bad pivot: the reference reports it
    if (pp[i] < i % n + 1 || pp[i] > n) GN_UNSUPPORTED("[lu_solve] pivots out of range");
  const bool adjoint = attr_i(attrs, n_attrs, 0, 0) != 0;
  floats("lu_solve", LU.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *plu = (const T*)data_of(LU), *pb = (const T*)data_of(Bm);
    T* px = (T*)data_of(X);
    parallel_for(B, n * n * (k + 1), [&](int64_t b) {
      T* x = px + b * n * k;
      std::copy(pb + b * n * k, pb + (b + 1) * n * k, x);
      la::lu_solve(plu + b * n * n, n, pp + b * n, x, k, adjoint);
    });
  });
}

GN_SDK_KERNEL(solve_triangular_kernel) {
  if (n_in != 2 || n_out != 1 || in[0].ndim < 2 || in[1].ndim < 2) GN_UNSUPPORTED("[solve_triangular] arity");
  const gn_tensor_view &A = in[0], &Bm = in[1], &X = out[0];
  const int64_t n = dim_from_end(A, 1), k = dim_from_end(Bm, 1), B = batch_of(A, 2);
  if (!fits(Bm, A.dtype, B, {n, k}) || !fits(X, A.dtype, B, {n, k})) GN_UNSUPPORTED("[solve_triangular] arguments");
  const bool upper = attr_i(attrs, n_attrs, 0, 0) != 0, trans = attr_i(attrs, n_attrs, 1, 0) != 0,
             unit = attr_i(attrs, n_attrs, 2, 0) != 0;
  floats("solve_triangular", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = (const T*)data_of(A), *pb = (const T*)data_of(Bm);
    T* px = (T*)data_of(X);
    parallel_for(B, n * n * k, [&](int64_t b) {
      T* x = px + b * n * k;
      std::copy(pb + b * n * k, pb + (b + 1) * n * k, x);
      la::solve_triangular(pa + b * n * n, n, x, k, upper, trans, unit);
    });
  });
}

GN_SDK_KERNEL(cholesky_kernel) {
  if (n_in != 1 || n_out != 2 || in[0].ndim < 2) GN_UNSUPPORTED("[cholesky] arity");
  const gn_tensor_view &A = in[0], &L = out[0], &I = out[1];
  const int64_t n = dim_from_end(A, 1), B = batch_of(A, 2);
  if (!fits(L, A.dtype, B, {n, n}) || !fits(I, GN_I32, B, {})) GN_UNSUPPORTED("[cholesky] outputs");
  const bool upper = attr_i(attrs, n_attrs, 0, 0) != 0;
  floats("cholesky", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = (const T*)data_of(A);
    T* pl = (T*)data_of(L);
    int32_t* pi = (int32_t*)data_of(I);
    parallel_for(B, n * n * n, [&](int64_t b) {
      T* l = pl + b * n * n;
      std::copy(pa + b * n * n, pa + (b + 1) * n * n, l);
      pi[b] = (int32_t)la::cholesky(l, n, upper);
    });
  });
}

GN_SDK_KERNEL(qr_kernel) {
  if (n_in != 1 || n_out != 2 || in[0].ndim < 2) GN_UNSUPPORTED("[qr] arity");
  const gn_tensor_view &A = in[0], &Q = out[0], &R = out[1];
  const bool complete = attr_i(attrs, n_attrs, 0, 0) != 0;
  const int64_t m = dim_from_end(A, 2), n = dim_from_end(A, 1), B = batch_of(A, 2), k = complete ? m : std::min(m, n);
  if (!fits(Q, A.dtype, B, {m, k}) || !fits(R, A.dtype, B, {k, n})) GN_UNSUPPORTED("[qr] outputs");
  floats("qr", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = (const T*)data_of(A);
    T *pq = (T*)data_of(Q), *pr = (T*)data_of(R);
    parallel_for(B, m * n * (k + 1),
                 [&](int64_t b) { la::qr(pa + b * m * n, m, n, pq + b * m * k, pr + b * k * n, complete); });
  });
}

GN_SDK_KERNEL(svd_kernel) {
  if (n_in != 1 || n_out != 3 || in[0].ndim < 2) GN_UNSUPPORTED("[svd] arity");
  const gn_tensor_view &A = in[0], &U = out[0], &S = out[1], &Vh = out[2];
  const bool full = attr_i(attrs, n_attrs, 0, 0) != 0, uv = attr_i(attrs, n_attrs, 1, 1) != 0;
  const int64_t m = dim_from_end(A, 2), n = dim_from_end(A, 1), B = batch_of(A, 2), k = std::min(m, n);
  const int64_t uc = full ? m : k, vr = full ? n : k;
  if (!fits(S, A.dtype, B, {k}) || (uv && (!fits(U, A.dtype, B, {m, uc}) || !fits(Vh, A.dtype, B, {vr, n}))))
    GN_UNSUPPORTED("[svd] outputs");
  floats("svd", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = (const T*)data_of(A);
    T *pu = uv ? (T*)data_of(U) : nullptr, *ps = (T*)data_of(S), *pv = uv ? (T*)data_of(Vh) : nullptr;
    parallel_for(B, m * n * k * 8, [&](int64_t b) {
      la::svd(pa + b * m * n, m, n, uv ? pu + b * m * uc : nullptr, ps + b * k, uv ? pv + b * vr * n : nullptr, full);
    });
  });
}

GN_SDK_KERNEL(eigh_kernel) {
  if (n_in != 1 || n_out != 2 || in[0].ndim < 2) GN_UNSUPPORTED("[eigh] arity");
  const gn_tensor_view &A = in[0], &W = out[0], &V = out[1];
  const int64_t n = dim_from_end(A, 1), B = batch_of(A, 2);
  if (!fits(W, A.dtype, B, {n}) || !fits(V, A.dtype, B, {n, n})) GN_UNSUPPORTED("[eigh] outputs");
  const bool upper = attr_i(attrs, n_attrs, 0, 0) != 0;
  floats("eigh", A.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = (const T*)data_of(A);
    T *pw = (T*)data_of(W), *pv = (T*)data_of(V);
    parallel_for(B, n * n * n * 8, [&](int64_t b) { la::eigh(pa + b * n * n, n, pw + b * n, pv + b * n * n, upper); });
  });
}

}  // namespace

void register_linalg_decomp(const gn::sdk::Registrar& r) {
  const int32_t fl[] = {GN_F32, GN_F64};
  r.kernel("lu_factor", fl, lu_factor_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("lu_solve", fl, lu_solve_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("solve_triangular", fl, solve_triangular_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cholesky", fl, cholesky_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("qr", fl, qr_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("svd", fl, svd_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("eigh", fl, eigh_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
