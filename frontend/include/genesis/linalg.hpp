// genesis/linalg.hpp - torch.linalg's factorizations and solves with autograd: solve, inv, det,
// slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, solve_triangular, lu_factor, lu_solve.
//
// Matrices are the last two dims; leading dims are batch dims and broadcast where torch
// broadcasts them (solve, solve_triangular).  float32 and float64; every device with kernels
// of the linalg_decomp ops (core/ops/ops.def).  A singular matrix (solve, inv) or one that is
// not positive-definite (cholesky) throws LinAlgError with torch's message; det and slogdet of
// a singular matrix are 0 and (0, -inf), as torch.
//
// Gradients follow torch's formulas: solve, inv, det (also of singular matrices, through the
// SVD), slogdet, cholesky, qr (reduced, or complete with m <= n), svd (distinct singular values;
// with full_matrices only the first min(m, n) vectors carry gradient), eigh (distinct
// eigenvalues), solve_triangular.  lu_factor and lu_solve are not differentiable.
#pragma once

#include <string>
#include <utility>

#include "genesis/tensor.hpp"

namespace genesis::linalg {

/** A numerical failure of a factorization (torch.linalg.LinAlgError): a singular matrix, a
 * matrix that is not positive-definite. */
class LinAlgError : public Error {
 public:
  /** An error with torch's message. */
  explicit LinAlgError(const std::string& msg) : Error(GN_ERR_INVALID_ARGUMENT, msg) {}
};

/** X with A X = B (left) or X A = B; B (*, n) is a batch of vectors when it has one dim fewer
 * than A and matches A's shape without the last dim (torch's rule); batch dims broadcast. */
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
/** The inverse of every square matrix of A. */
Tensor inv(const Tensor& A);
/** Determinants (*). */
Tensor det(const Tensor& A);
/** (sign, log|det|) of every matrix (*); a singular one gives (0, -inf). */
std::pair<Tensor, Tensor> slogdet(const Tensor& A);
/** log(det(A)): nan where the determinant is negative, -inf where it is 0 (torch.logdet). */
Tensor logdet(const Tensor& A);
/** L with A = L L^T from A's lower triangle (upper: U with A = U^T U from the upper one). */
Tensor cholesky(const Tensor& A, bool upper = false);
/** (L, info): cholesky without the check; info (*) int32 is k > 0 where the leading minor of
 * order k is not positive-definite (torch.linalg.cholesky_ex). */
std::pair<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper = false);
/** (Q, R) with A = Q R; mode "reduced" (Q (*, m, k), R (*, k, n)), "complete" (Q (*, m, m),
 * R (*, m, n)) or "r" (R only; Q is an empty tensor). */
std::pair<Tensor, Tensor> qr(const Tensor& A, const std::string& mode = "reduced");
/** U, S (descending), Vh of A = U diag(S) Vh. */
struct SVD {
  Tensor U;   ///< (*, m, m) or (*, m, k)
  Tensor S;   ///< (*, k), k = min(m, n)
  Tensor Vh;  ///< (*, n, n) or (*, k, n)
};
/** The singular value decomposition; full_matrices false: the reduced one. */
SVD svd(const Tensor& A, bool full_matrices = true);
/** The singular values (*, k), descending. */
Tensor svdvals(const Tensor& A);
/** (eigenvalues ascending (*, n), eigenvectors (*, n, n) as columns) of the symmetric matrices
 * whose lower ("L") or upper ("U") triangle A holds. */
std::pair<Tensor, Tensor> eigh(const Tensor& A, const std::string& uplo = "L");
/** The eigenvalues of eigh, ascending. */
Tensor eigvalsh(const Tensor& A, const std::string& uplo = "L");
/** X with A X = B (left) or X A = B, A triangular (its upper or lower triangle is read; unit
 * diagonal if unitriangular); batch dims broadcast. */
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true, bool unitriangular = false);
/** (LU, pivots int32): P A = L U with partial pivoting, packed as LAPACK's getrf (throws when a
 * U[i, i] is exactly zero, as torch.linalg.lu_factor). */
std::pair<Tensor, Tensor> lu_factor(const Tensor& A);
/** LU, pivots and info (*) int32 without the check (torch.linalg.lu_factor_ex). */
struct LUFactorEx {
  Tensor LU;      ///< (*, m, n)
  Tensor pivots;  ///< (*, min(m, n)) int32, 1-based
  Tensor info;    ///< (*) int32: k > 0 where U[k-1, k-1] == 0
};
/** lu_factor without the check. */
LUFactorEx lu_factor_ex(const Tensor& A);
/** X with A X = B (left; X A = B otherwise) from lu_factor's LU and pivots; adjoint: A^T. */
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true, bool adjoint = false);

}  // namespace genesis::linalg
