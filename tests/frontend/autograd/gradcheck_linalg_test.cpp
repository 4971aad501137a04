// gradcheck_linalg_test.cpp - the gradient rules of the factorizations and solves (linalg
// solve_triangular, cholesky, qr, svd, eigh, the entries gradcheck_test.cpp's coverage test finds
// through linalg_checks()) and the frontend functions that record their own node, against central
// finite differences in float64.
#include "gradcheck_common.h"

#include <utility>

#include "genesis/tensor_algorithms.hpp"

namespace gradcheck_test {
namespace {

// A leaf whose triangles are both well conditioned: 2 on the diagonal, small entries elsewhere.
Tensor well_conditioned(int64_t n) {
  return (genesis::randn({n, n}, f64()) * 0.3 + genesis::eye(n, 0, f64()) * 2).detach().requires_grad_();
}
// x x^T + n I: symmetric positive-definite.
Tensor spd(const Tensor& x) { return x.matmul(x.transpose(-2, -1)) + genesis::eye(x.size(-1), 0, f64()) * x.size(-1); }
// The outputs of a factorization as one tensor, flattened one after the other.
Tensor both(const std::pair<Tensor, Tensor>& p) { return F::cat({p.first.reshape({-1}), p.second.reshape({-1})}, 0); }
// Functions of an SVD that do not depend on the signs of the singular vectors.
Tensor svd_invariants(const genesis::linalg::SVD& s) {
  return F::cat(
      {s.S.reshape({-1}), s.U.square().reshape({-1}), s.Vh.square().reshape({-1}), s.U.matmul(s.Vh).reshape({-1})}, 0);
}
Tensor eigh_invariants(const std::pair<Tensor, Tensor>& e) {
  return F::cat({e.first.reshape({-1}), e.second.square().reshape({-1})}, 0);
}

}  // namespace

const Checks& linalg_checks() {
  static const Checks m = {
      // ---- factorizations and solves
      {"solve_triangular",
       [] {
         for (bool upper : {true, false})
           for (bool unit : {false, true}) {
             GRADCHECK(genesis::linalg::solve_triangular(x[0], x[1], upper, true, unit), well_conditioned(3),
                       leaf({3, 2}));
             GRADCHECK(genesis::linalg::solve_triangular(x[0], x[1], upper, false, unit), well_conditioned(3),
                       leaf({2, 3}));
           }
       }},
      {"cholesky",
       [] {
         GRADCHECK(genesis::linalg::cholesky(spd(x[0])), leaf({3, 3}));
         GRADCHECK(genesis::linalg::cholesky(spd(x[0]), true), leaf({2, 4, 4}));
       }},
      {"qr",
       [] {
         for (genesis::Shape s :
              {genesis::Shape{4, 3}, genesis::Shape{3, 3}, genesis::Shape{3, 5}, genesis::Shape{2, 4, 2}}) {
           GRADCHECK(both(genesis::linalg::qr(x[0])), leaf(s));
         }
         GRADCHECK(both(genesis::linalg::qr(x[0], "complete")), leaf({3, 4}));
       }},
      {"svd",
       [] {
         for (genesis::Shape s :
              {genesis::Shape{4, 3}, genesis::Shape{3, 3}, genesis::Shape{2, 5}, genesis::Shape{2, 3, 2}}) {
           GRADCHECK(svd_invariants(genesis::linalg::svd(x[0], false)), leaf(s));
           GRADCHECK(genesis::linalg::svdvals(x[0]), leaf(s));
         }
       }},
      {"eigh",
       [] {
         GRADCHECK(eigh_invariants(genesis::linalg::eigh(x[0] + x[0].transpose(-2, -1))), leaf({4, 4}));
         GRADCHECK(genesis::linalg::eigvalsh(x[0] + x[0].transpose(-2, -1), "U"), leaf({2, 3, 3}));
       }},
  };
  return m;
}

namespace {

// Frontend functions that record their own node (GN_FRONTEND rows): linalg.solve, inv, det,
// slogdet, and median() / nanmedian() over everything (away from ties, where only torch's rule
// of sharing the gradient applies: test_ops_more.py compares that with torch).
TEST(CppGradcheck, LinalgAndMedianFrontendRules) {
  namespace la = genesis::linalg;
  GRADCHECK(la::solve(x[0], x[1]), well_conditioned(3), leaf({3, 2}));
  GRADCHECK(la::solve(x[0], x[1]), well_conditioned(4), leaf({4}));
  GRADCHECK(la::solve(x[0], x[1], false), well_conditioned(3), leaf({2, 3}));
  GRADCHECK(la::solve(x[0].expand({2, 3, 3}), x[1]), well_conditioned(3), leaf({2, 3, 1}));
  GRADCHECK(la::inv(x[0]), well_conditioned(4));
  GRADCHECK(la::det(x[0]), well_conditioned(3));
  GRADCHECK(la::det(x[0]), leaf({2, 4, 4}));
  GRADCHECK(la::det(x[0]), fixed({1, 2, 3, 2, 4, 6, 0, 1, 5}, {3, 3}));  // singular: the cofactors
  GRADCHECK(la::slogdet(x[0]).second, well_conditioned(3));
  GRADCHECK(la::logdet(spd(x[0])), leaf({3, 3}));
  GRADCHECK(genesis::median(x[0]), leaf({3, 5}));
  GRADCHECK(genesis::nanmedian(x[0]), leaf({7}));
  GRADCHECK(genesis::kthvalue(x[0], 2, 1).first, leaf({3, 5}));
}

}  // namespace
}  // namespace gradcheck_test
