// backends/reference/linalg_decomp.cpp - the matrix factorizations and solves: lu_factor,
// lu_solve, solve_triangular, cholesky, qr, svd, eigh.
//
// Every matrix of the batch (the last two dims; the leading ones are batch dims, row-major) is
// copied into dense doubles through its view's strides, factored by the SDK's host algorithms
// (genesis/sdk/dense_linalg.h: LAPACK's conventions for pivots, info and Householder signs;
// singular vectors and eigenvectors signed so that each column's largest |entry| of U, of V for
// eigh, is positive) and stored back in the output's dtype.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "genesis/sdk/dense_linalg.h"
#include "util.h"

namespace gn::reference {
namespace {

namespace la = gn::sdk::linalg;

// The batch of a view whose last `tail` dims are one item (a matrix: 2, a vector: 1, a scalar:
// 0): item b (row-major over the batch dims) read and written as dense row-major doubles.
struct Batch {
  const gn_tensor_view& v;
  int32_t tail;
  Batch(const char* op, const gn_tensor_view& view, int32_t tail_dims) : v(view), tail(tail_dims) {
    if (v.ndim < tail) fail_op(GN_ERR_SHAPE, op, "tensor " + shape_str(v) + " has too few dims");
  }
  int64_t count() const {
    int64_t n = 1;
    for (int32_t d = 0; d < v.ndim - tail; ++d) n *= v.shape[d];
    return n;
  }
  int64_t size(int32_t i) const { return v.shape[v.ndim - tail + i]; }  // i-th item dim
  int64_t items() const {
    int64_t n = 1;
    for (int32_t i = 0; i < tail; ++i) n *= size(i);
    return n;
  }
  // Pointer of element e (row-major within the item) of item b.
  char* at(int64_t b, int64_t e) const {
    int64_t off = 0;
    for (int32_t d = v.ndim - tail - 1; d >= 0; --d) {
      off += (b % v.shape[d]) * v.strides[d];
      b /= v.shape[d];
    }
    for (int32_t d = v.ndim - 1; d >= v.ndim - tail; --d) {
      off += (e % v.shape[d]) * v.strides[d];
      e /= v.shape[d];
    }
    return base_ptr(v) + off * elem_size(v);
  }
  std::vector<double> load(int64_t b) const {
    std::vector<double> r((size_t)items());
    for (int64_t e = 0; e < items(); ++e) r[(size_t)e] = gn::sdk::load(at(b, e), v.dtype);
    return r;
  }
  void store(int64_t b, const std::vector<double>& x) const {
    for (int64_t e = 0; e < items(); ++e) gn::sdk::store(at(b, e), v.dtype, x[(size_t)e]);
  }
  void store_int(int64_t b, const int64_t* x) const {
    for (int64_t e = 0; e < items(); ++e) gn::sdk::store_int(at(b, e), v.dtype, x[e]);
  }
};

// Fail unless out has `want` items per batch element and as many batch elements as `in`.
void check_batch(const char* op, const Batch& out, const Batch& in, std::initializer_list<int64_t> want) {
  bool ok = out.count() == in.count() && (int64_t)want.size() == out.tail;
  int32_t i = 0;
  for (int64_t w : want) ok = ok && out.size(i++) == w;
  if (!ok) fail_op(GN_ERR_SHAPE, op, "output " + shape_str(out.v) + " does not fit input " + shape_str(in.v));
}

// lu_factor(A) -> (LU, pivots int32, info int32).
GN_SDK_KERNEL(lu_factor_kernel) {
  const char* op = "lu_factor";
  need_io(op, n_in, 1, n_out, 3);
  const Batch A(op, in[0], 2), LU(op, out[0], 2), P(op, out[1], 1), I(op, out[2], 0);
  const int64_t m = A.size(0), n = A.size(1), k = std::min(m, n);
  check_batch(op, LU, A, {m, n});
  check_batch(op, P, A, {k});
  check_batch(op, I, A, {});
  std::vector<int32_t> piv((size_t)k);
  std::vector<int64_t> piv64((size_t)k);
  for (int64_t b = 0; b < A.count(); ++b) {
    std::vector<double> a = A.load(b);
    const int64_t info = la::lu_factor(a.data(), m, n, piv.data());
    LU.store(b, a);
    for (int64_t i = 0; i < k; ++i) piv64[(size_t)i] = piv[(size_t)i];
    P.store_int(b, piv64.data());
    I.store_int(b, &info);
  }
}

// lu_solve(LU, pivots, B; adjoint) -> X.
GN_SDK_KERNEL(lu_solve_kernel) {
  const char* op = "lu_solve";
  need_io(op, n_in, 3, n_out, 1);
  const Batch LU(op, in[0], 2), P(op, in[1], 1), B(op, in[2], 2), X(op, out[0], 2);
  const int64_t n = LU.size(0), k = B.size(1);
  const bool adjoint = attr_int(op, attrs, n_attrs, 0) != 0;
  check_batch(op, P, LU, {n});
  check_batch(op, B, LU, {n, k});
  check_batch(op, X, LU, {n, k});
  std::vector<int32_t> piv((size_t)n);
  for (int64_t b = 0; b < LU.count(); ++b) {
    const std::vector<double> lu = LU.load(b);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = gn::sdk::load_int(P.at(b, i), P.v.dtype);
      if (p < i + 1 || p > n)
        fail_op(GN_ERR_INDEX, op,
                "pivot " + std::to_string(p) + " of row " + std::to_string(i + 1) + " is out of range [" +
                    std::to_string(i + 1) + ", " + std::to_string(n) + "]");
      piv[(size_t)i] = (int32_t)p;
    }
    std::vector<double> x = B.load(b);
    la::lu_solve(lu.data(), n, piv.data(), x.data(), k, adjoint);
    X.store(b, x);
  }
}

// solve_triangular(A, B; upper, transpose, unitriangular) -> X.
GN_SDK_KERNEL(solve_triangular_kernel) {
  const char* op = "solve_triangular";
  need_io(op, n_in, 2, n_out, 1);
  const Batch A(op, in[0], 2), B(op, in[1], 2), X(op, out[0], 2);
  const int64_t n = A.size(0), k = B.size(1);
  check_batch(op, B, A, {n, k});
  check_batch(op, X, A, {n, k});
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0, trans = attr_int(op, attrs, n_attrs, 1) != 0,
             unit = attr_int(op, attrs, n_attrs, 2) != 0;
  for (int64_t b = 0; b < A.count(); ++b) {
    const std::vector<double> a = A.load(b);
    std::vector<double> x = B.load(b);
    la::solve_triangular(a.data(), n, x.data(), k, upper, trans, unit);
    X.store(b, x);
  }
}

// cholesky(A; upper) -> (L, info int32).
GN_SDK_KERNEL(cholesky_kernel) {
  const char* op = "cholesky";
  need_io(op, n_in, 1, n_out, 2);
  const Batch A(op, in[0], 2), L(op, out[0], 2), I(op, out[1], 0);
  const int64_t n = A.size(0);
  check_batch(op, L, A, {n, n});
  check_batch(op, I, A, {});
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0;
  for (int64_t b = 0; b < A.count(); ++b) {
    std::vector<double> a = A.load(b);
    const int64_t info = la::cholesky(a.data(), n, upper);
    L.store(b, a);
    I.store_int(b, &info);
  }
}

// qr(A; mode) -> (Q, R).
GN_SDK_KERNEL(qr_kernel) {
  const char* op = "qr";
  need_io(op, n_in, 1, n_out, 2);
  const Batch A(op, in[0], 2), Q(op, out[0], 2), R(op, out[1], 2);
  const int64_t m = A.size(0), n = A.size(1);
  const bool complete = attr_int(op, attrs, n_attrs, 0) != 0;
  const int64_t k = complete ? m : std::min(m, n);
  check_batch(op, Q, A, {m, k});
  check_batch(op, R, A, {k, n});
  std::vector<double> q((size_t)(m * k)), r((size_t)(k * n));
  for (int64_t b = 0; b < A.count(); ++b) {
    const std::vector<double> a = A.load(b);
    la::qr(a.data(), m, n, q.data(), r.data(), complete);
    Q.store(b, q);
    R.store(b, r);
  }
}

// svd(A; full_matrices, compute_uv) -> (U, S, Vh).
GN_SDK_KERNEL(svd_kernel) {
  const char* op = "svd";
  need_io(op, n_in, 1, n_out, 3);
  const Batch A(op, in[0], 2), S(op, out[1], 1);
  const int64_t m = A.size(0), n = A.size(1), k = std::min(m, n);
  const bool full = attr_int(op, attrs, n_attrs, 0) != 0, uv = attr_int(op, attrs, n_attrs, 1) != 0;
  check_batch(op, S, A, {k});
  const int64_t uc = full ? m : k, vr = full ? n : k;
  std::vector<double> u(uv ? (size_t)(m * uc) : 0), s((size_t)k), vh(uv ? (size_t)(vr * n) : 0);
  for (int64_t b = 0; b < A.count(); ++b) {
    const std::vector<double> a = A.load(b);
    la::svd(a.data(), m, n, uv ? u.data() : nullptr, s.data(), uv ? vh.data() : nullptr, full);
    S.store(b, s);
    if (!uv) continue;
    const Batch U(op, out[0], 2), Vh(op, out[2], 2);
    check_batch(op, U, A, {m, uc});
    check_batch(op, Vh, A, {vr, n});
    U.store(b, u);
    Vh.store(b, vh);
  }
}

// eigh(A; upper) -> (eigenvalues ascending, eigenvectors as columns).
GN_SDK_KERNEL(eigh_kernel) {
  const char* op = "eigh";
  need_io(op, n_in, 1, n_out, 2);
  const Batch A(op, in[0], 2), W(op, out[0], 1), V(op, out[1], 2);
  const int64_t n = A.size(0);
  check_batch(op, W, A, {n});
  check_batch(op, V, A, {n, n});
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0;
  std::vector<double> w((size_t)n), v((size_t)(n * n));
  for (int64_t b = 0; b < A.count(); ++b) {
    const std::vector<double> a = A.load(b);
    la::eigh(a.data(), n, w.data(), v.data(), upper);
    W.store(b, w);
    V.store(b, v);
  }
}

}  // namespace

void register_linalg_decomp(const gn::sdk::Registrar& r) {
  const int32_t fl[] = {GN_F32, GN_F64};
  r.kernel("lu_factor", fl, lu_factor_kernel);
  r.kernel("lu_solve", fl, lu_solve_kernel);
  r.kernel("solve_triangular", fl, solve_triangular_kernel);
  r.kernel("cholesky", fl, cholesky_kernel);
  r.kernel("qr", fl, qr_kernel);
  r.kernel("svd", fl, svd_kernel);
  r.kernel("eigh", fl, eigh_kernel);
}

}  // namespace gn::reference
