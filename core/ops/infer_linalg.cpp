// core/ops/infer_linalg.cpp - inference of the matrix factorizations and solves (the
// linalg_decomp section of ops.def): lu_factor, lu_solve, solve_triangular, cholesky, qr, svd,
// eigh.  Matrices are the last two dims, every leading dim is a batch dim; the data is float32
// or float64 (half precision is refused, as torch.linalg does on the CPU).
#include <algorithm>

#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// A float32/float64 matrix or batch of matrices.
void need_matrix(const gn_tensor_meta& m, const char* role) {
  if (!is_float(m.dtype))
    fail(GN_ERR_DTYPE, std::string(role) + " must be a floating-point tensor, got " + dtype_str(m.dtype));
  if (m.dtype != GN_F32 && m.dtype != GN_F64)
    fail(GN_ERR_DTYPE, std::string(role) +
                           " must be float32 or float64 (low precision dtypes are not supported), got " +
                           dtype_str(m.dtype));
  if (m.ndim < 2) fail(GN_ERR_SHAPE, std::string(role) + " must have at least 2 dimensions, got shape " + shape_str(m));
}

void need_square(const gn_tensor_meta& m, const char* role) {
  need_matrix(m, role);
  if (m.shape[m.ndim - 1] != m.shape[m.ndim - 2])
    fail(GN_ERR_SHAPE, std::string(role) + " must be batches of square matrices, but they are " +
                           std::to_string(m.shape[m.ndim - 2]) + " by " + std::to_string(m.shape[m.ndim - 1]) +
                           " matrices");
}

// The batch dims of m followed by `tail`.
gn_tensor_meta batch_meta(const gn_tensor_meta& m, int32_t dtype, std::initializer_list<int64_t> tail) {
  Dims d = dims_of(m, 0, m.ndim - 2);
  for (int64_t t : tail) d.push(t);
  return make_meta(dtype, d);
}

// Fail unless a and b have the same batch dims (the frontend broadcasts them first).
void same_batch(const gn_tensor_meta& a, int a_tail, const gn_tensor_meta& b, int b_tail, const char* what) {
  bool ok = a.ndim - a_tail == b.ndim - b_tail;
  for (int d = 0; ok && d < a.ndim - a_tail; ++d) ok = a.shape[d] == b.shape[d];
  if (!ok)
    fail(GN_ERR_SHAPE, std::string(what) + ": batch dims of " + shape_str(a) + " and " + shape_str(b) + " differ");
}

}  // namespace

// lu_factor(A (*, m, n)) -> (LU (*, m, n), pivots (*, min(m, n)) int32, info (*) int32).
GN_DEFINE_INFER(lu_factor) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& A = a.at(0);
  need_matrix(A, "A");
  const int64_t m = A.shape[A.ndim - 2], n = A.shape[A.ndim - 1];
  a.set_outputs(A.dtype, {like(A, A.dtype), batch_meta(A, GN_I32, {std::min(m, n)}), batch_meta(A, GN_I32, {})});
}

// lu_solve(LU (*, n, n), pivots (*, n) int32, B (*, n, k)) -> X like B in LU's dtype.
GN_DEFINE_INFER(lu_solve) {
  a.need_inputs(3, 3);
  const gn_tensor_meta &LU = a.at(0), &piv = a.at(1), &B = a.at(2);
  need_square(LU, "LU");
  if (piv.dtype != GN_I32) fail(GN_ERR_DTYPE, std::string("pivots must be int32, got ") + dtype_str(piv.dtype));
  const int64_t n = LU.shape[LU.ndim - 1];
  if (piv.ndim < 1 || piv.shape[piv.ndim - 1] != n)
    fail(GN_ERR_SHAPE, "pivots " + shape_str(piv) + " must have " + std::to_string(n) + " entries per matrix");
  same_batch(LU, 2, piv, 1, "pivots");
  need_matrix(B, "B");
  if (B.shape[B.ndim - 2] != n)
    fail(GN_ERR_SHAPE, "incompatible shapes of A and B for the equation AX = B (" + std::to_string(n) + "x" +
                           std::to_string(n) + " and " + std::to_string(B.shape[B.ndim - 2]) + "x" +
                           std::to_string(B.shape[B.ndim - 1]) + ")");
  same_batch(LU, 2, B, 2, "B");
  a.cast_input(2, LU.dtype);
  a.set_outputs(LU.dtype, {like(B, LU.dtype)});
}

// solve_triangular(A (*, n, n), B (*, n, k); upper, transpose, unitriangular) -> X like B; both
// in their promoted dtype.
GN_DEFINE_INFER(solve_triangular) {
  a.need_inputs(2, 2);
  const gn_tensor_meta &A = a.at(0), &B = a.at(1);
  need_square(A, "A");
  need_matrix(B, "B");
  const int64_t n = A.shape[A.ndim - 1];
  if (B.shape[B.ndim - 2] != n)
    fail(GN_ERR_SHAPE, "incompatible shapes of A and B for the equation AX = B (" + std::to_string(n) + "x" +
                           std::to_string(n) + " and " + std::to_string(B.shape[B.ndim - 2]) + "x" +
                           std::to_string(B.shape[B.ndim - 1]) + ")");
  same_batch(A, 2, B, 2, "B");
  const int32_t dt = promote_types(A.dtype, B.dtype);
  a.cast_input(0, dt);
  a.cast_input(1, dt);
  a.set_outputs(dt, {like(B, dt)});
}

// cholesky(A (*, n, n); upper) -> (L (*, n, n), info (*) int32).
GN_DEFINE_INFER(cholesky) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& A = a.at(0);
  need_square(A, "A");
  a.set_outputs(A.dtype, {like(A, A.dtype), batch_meta(A, GN_I32, {})});
}

// qr(A (*, m, n); mode) -> mode 0: Q (*, m, k), R (*, k, n); mode 1: Q (*, m, m), R (*, m, n).
GN_DEFINE_INFER(qr) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& A = a.at(0);
  need_matrix(A, "A");
  const int64_t mode = a.attr_int(0);
  if (mode != 0 && mode != 1)
    fail(GN_ERR_INVALID_ARGUMENT, "mode must be 0 (reduced) or 1 (complete), got " + std::to_string(mode));
  const int64_t m = A.shape[A.ndim - 2], n = A.shape[A.ndim - 1], k = mode ? m : std::min(m, n);
  a.set_outputs(A.dtype, {batch_meta(A, A.dtype, {m, k}), batch_meta(A, A.dtype, {k, n})});
}

// svd(A (*, m, n); full_matrices, compute_uv) -> (U, S (*, k), Vh); compute_uv 0: U, Vh (0,).
GN_DEFINE_INFER(svd) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& A = a.at(0);
  need_matrix(A, "A");
  const bool full = a.attr_int(0) != 0, uv = a.attr_int(1) != 0;
  const int64_t m = A.shape[A.ndim - 2], n = A.shape[A.ndim - 1], k = std::min(m, n);
  a.set_outputs(A.dtype, {uv ? batch_meta(A, A.dtype, {m, full ? m : k}) : make_meta(A.dtype, dims_of({0})),
                          batch_meta(A, A.dtype, {k}),
                          uv ? batch_meta(A, A.dtype, {full ? n : k, n}) : make_meta(A.dtype, dims_of({0}))});
}

// eigh(A (*, n, n); upper) -> (eigenvalues (*, n), eigenvectors (*, n, n)).
GN_DEFINE_INFER(eigh) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& A = a.at(0);
  need_square(A, "A");
  a.set_outputs(A.dtype, {batch_meta(A, A.dtype, {A.shape[A.ndim - 1]}), like(A, A.dtype)});
}

}  // namespace genesis::core
