// rules_linalg.cpp - the gradient rules of the factorizations and solves (genesis/linalg.hpp):
// torch's formulas (FunctionsManual.cpp) for real matrices, written with other ops like the
// rules in rules.cpp.  qr, svd and eigh receive the gradient of their packed output (every
// output flattened, one after the other; frontend/src/linalg.cpp) and split it.
#include "../internal.h"
#include "genesis/linalg.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/tensor_algorithms.hpp"
#include "rules.h"

namespace genesis::autograd::rules {

using V = std::vector<Tensor>;

namespace {

bool needs(const Node& n, size_t i) { return i < n.next.size() && n.next[i] != nullptr; }

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// The identity (n, n) in t's dtype and device (broadcasts over batch dims).
Tensor eye_like(const Tensor& t, int64_t n) { return eye(n, 0, {.dtype = t.dtype(), .device = t.device()}); }

// op(A) X = B for triangular A (the op solve_triangular), not recorded.
Tensor tri_solve(const Tensor& A, const Tensor& B, bool upper, bool transpose, bool unit = false) {
  return detail::call1(GN_OP_HANDLE("solve_triangular"), {&A, &B},
                       {gn_attr_int(upper), gn_attr_int(transpose), gn_attr_int(unit)});
}

// X with A X = B (adjoint: A^T X = B) from A's LU factorization.
Tensor lu_solve(const Tensor& lu, const Tensor& piv, const Tensor& B, bool adjoint) {
  return detail::call1(GN_OP_HANDLE("lu_solve"), {&lu, &piv, &B}, {gn_attr_int(adjoint)});
}

// Part i of a packed gradient g: the outputs `parts` flattened one after the other.
Tensor unpack(const Tensor& g, std::initializer_list<const Tensor*> parts, size_t i) {
  int64_t off = 0;
  size_t k = 0;
  for (const Tensor* p : parts) {
    if (k++ == i) return g.slice(0, off, off + p->numel()).reshape(p->shape());
    off += p->numel();
  }
  return Tensor();
}

// a with its batch dims broadcast against b's (both (*, r, c)): b's batch shape wins.
Tensor scale_mats(const Tensor& per_matrix, const Tensor& mats) {
  return per_matrix.unsqueeze(-1).unsqueeze(-1) * mats;
}

}  // namespace

// ---- ops of ops.def

// op(A) X = B: gB = op(A)^{-T} g; gA = -gB X^T on op(A), transposed back and restricted to the
// triangle that was read (the diagonal left out when it was taken as ones).
V solve_triangular(Node& n, const Tensor& g) {
  const Tensor &A = n.saved("a"), &X = n.saved("out");
  const bool upper = n.attr_int("upper") != 0, trans = n.attr_int("transpose") != 0,
             unit = n.attr_int("unitriangular") != 0;
  Tensor gB = tri_solve(A, g, upper, !trans, unit), gA;
  if (needs(n, 0)) {
    Tensor gop = -gB.matmul(mT(X));
    if (trans) gop = mT(gop);
    gA = upper ? gop.triu(unit ? 1 : 0) : gop.tril(unit ? -1 : 0);
  }
  return {gA, needs(n, 1) ? gB : Tensor()};
}

// torch's cholesky_backward: gA = L^{-T} Phi L^{-1}, Phi = the symmetric part of tril(L^T gL)
// with its diagonal halved.
V cholesky(Node& n, const Tensor& g) {
  const bool upper = n.attr_int("upper") != 0;
  const Tensor L = upper ? mT(n.saved("out")) : n.saved("out");
  const Tensor gL = upper ? mT(g) : g;
  Tensor phi = mT(L).matmul(gL).tril();
  phi = (phi + mT(phi.tril(-1))) * 0.5;
  const Tensor left = tri_solve(L, phi, false, true);  // L^T Y = Phi
  return {mT(tri_solve(L, mT(left), false, true))};    // X L = Y  <=>  L^T X^T = Y^T
}

// torch's linalg_qr_backward; the packed gradient holds (gQ, gR).
V qr(Node& n, const Tensor& g) {
  const Tensor &Q = n.saved("q"), &R = n.saved("r");
  const Tensor gQ = unpack(g, {&Q, &R}, 0), gR = unpack(g, {&Q, &R}, 1);
  const int64_t m = Q.size(-2), cols = R.size(-1);
  if (n.attr_int("mode") == 1 && m > cols)
    throw Error(GN_ERR_UNSUPPORTED,
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  Tensor gA = gR.matmul(mT(R)) - mT(Q).matmul(gQ);
  if (m >= cols) {
    const Tensor t = gA.triu();
    gA = Q.matmul(t + mT(t.triu(1))) + gQ;           // Q syminvadj(triu(gA)) + gQ
    return {mT(tri_solve(R, mT(gA), true, false))};  // X R^T = gA  <=>  R X^T = gA^T
  }
  // m < n: A = [X | Y] with X = Q R1 (square) and R2 = Q^T Y, so Y's gradient is Q gR2 and Q's
  // own gradient gains Y gR2^T; X then takes the square case's formula.
  const Tensor R1 = R.slice(-1, 0, m), R2 = R.slice(-1, m, cols), gR1 = gR.slice(-1, 0, m), gR2 = gR.slice(-1, m, cols);
  const Tensor gQ2 = gQ + Q.matmul(R2.matmul(mT(gR2)));
  const Tensor t = (gR1.matmul(mT(R1)) - mT(Q).matmul(gQ2)).triu();
  const Tensor gX = mT(tri_solve(R1, mT(Q.matmul(t + mT(t.triu(1))) + gQ2), true, false));
  return {nn::functional::cat({gX, Q.matmul(gR2)}, -1)};
}

// torch's svd_backward (real, distinct singular values); the packed gradient holds (gU, gS,
// gVh).  With full_matrices only the first min(m, n) vectors enter, as torch.
V svd(Node& n, const Tensor& g) {
  Tensor U = n.saved("u"), Vh = n.saved("vh");
  const Tensor& S = n.saved("s");
  Tensor gU = unpack(g, {&U, &S, &Vh}, 0), gS = unpack(g, {&U, &S, &Vh}, 1), gVh = unpack(g, {&U, &S, &Vh}, 2);
  const int64_t k = S.size(-1);
  if (n.attr_int("full_matrices")) {
    U = U.slice(-1, 0, k), gU = gU.slice(-1, 0, k);
    Vh = Vh.slice(-2, 0, k), gVh = gVh.slice(-2, 0, k);
  }
  const int64_t m = U.size(-2), cols = Vh.size(-1);
  const Tensor I = eye_like(S, k);
  const Tensor UhgU = mT(U).matmul(gU), VhgV = Vh.matmul(mT(gVh));
  const Tensor sU = UhgU - mT(UhgU), sV = VhgV - mT(VhgV);
  const Tensor S2 = S * S;
  const Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + I;  // E_jk = S_k^2 - S_j^2, 1 on the diagonal
  const Tensor ret = (sU * S.unsqueeze(-2) + S.unsqueeze(-1) * sV) / E + gS.unsqueeze(-2) * I;
  if (m > cols) {
    const Tensor gUS = gU / S.unsqueeze(-2);
    return {(U.matmul(ret) + gUS - U.matmul(mT(U).matmul(gUS))).matmul(Vh)};
  }
  if (m < cols) {
    const Tensor SgVh = gVh / S.unsqueeze(-1);
    return {U.matmul(ret.matmul(Vh) + SgVh - SgVh.matmul(mT(Vh)).matmul(Vh))};
  }
  return {U.matmul(ret).matmul(Vh)};
}

// torch's linalg_eig_backward for symmetric matrices: V (diag(gL) + skew(V^T gV) / E) V^T with
// E_ij = L_j - L_i; the packed gradient holds (gL, gV).
V eigh(Node& n, const Tensor& g) {
  const Tensor &L = n.saved("l"), &Q = n.saved("q");
  const Tensor gL = unpack(g, {&L, &Q}, 0), gQ = unpack(g, {&L, &Q}, 1);
  const int64_t k = L.size(-1);
  const Tensor I = eye_like(L, k);
  const Tensor VgV = mT(Q).matmul(gQ);
  const Tensor skew = (VgV - mT(VgV)) * 0.5;
  const Tensor E = L.unsqueeze(-2) - L.unsqueeze(-1) + I;
  const Tensor ret = skew / E + gL.unsqueeze(-2) * I;
  return {Q.matmul(ret).matmul(mT(Q))};
}

// ---- frontend nodes (linalg.cpp)

// X = A^{-1} B: gB = A^{-T} g (from A's LU), gA = -gB X^T.
V linalg_solve(Node& n, const Tensor& g) {
  const Tensor gB = lu_solve(n.saved("lu"), n.saved("pivots"), g, true);
  return {needs(n, 0) ? -gB.matmul(mT(n.saved("x"))) : Tensor(), needs(n, 1) ? gB : Tensor()};
}

// Y = A^{-1}: gA = -Y^T g Y^T.
V linalg_inv(Node& n, const Tensor& g) {
  const Tensor Yt = mT(n.saved("out"));
  return {-Yt.matmul(g).matmul(Yt)};
}

// d det / dA is the cofactor matrix: det(A) A^{-T} (from A's LU) where det(A) != 0; where it is
// 0, det(U) det(Vh) U diag(prod_{j != i} S_j) Vh from the SVD A = U diag(S) Vh, which stays
// defined for singular matrices.
V linalg_det(Node& n, const Tensor& g) {
  const Tensor &A = n.saved("a"), &det = n.saved("out");
  const int64_t k = A.size(-1);
  if (k == 0) return {zeros_like(A)};
  const Tensor I = eye_like(A, k);
  Tensor gA = lu_solve(n.saved("lu"), n.saved("pivots"), scale_mats(g * det, I).contiguous(), true);
  const Tensor singular = det == Scalar(0);
  if ((singular.to(DType::i64).max()).item_double() == 0) return {gA};
  const linalg::SVD s = linalg::svd(A, false);
  const Tensor ones1 = ones_like(s.S.slice(-1, 0, 1));
  const Tensor left = nn::functional::cat({ones1, cumprod(s.S, -1).slice(-1, 0, k - 1)}, -1);
  Tensor right_incl =
      detail::call1(GN_OP_HANDLE("cumprod"), {&s.S}, {gn_attr_int(-1), gn_attr_int(GN_DIM_NONE), gn_attr_int(1)});
  const Tensor right = nn::functional::cat({right_incl.slice(-1, 1, k), ones1}, -1);
  const Tensor sign = linalg::det(s.U) * linalg::det(s.Vh);
  const Tensor cof = scale_mats(sign, (s.U * (left * right).unsqueeze(-2)).matmul(s.Vh));
  return {where(singular.unsqueeze(-1).unsqueeze(-1), scale_mats(g, cof), gA)};
}

// d log|det| / dA = A^{-T}.
V linalg_slogdet(Node& n, const Tensor& g) {
  const Tensor& lu = n.saved("lu");
  const Tensor I = eye_like(lu, lu.size(-1));
  return {lu_solve(lu, n.saved("pivots"), scale_mats(g, I).contiguous(), true)};
}

}  // namespace genesis::autograd::rules
