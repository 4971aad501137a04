// linalg_decomp_test.cpp - the reference's factorizations on small matrices with known results:
// LAPACK's pivots, info and Householder signs, the singular vector and eigenvector signs, and
// strided, batched inputs.
#include <cmath>
#include <vector>

#include "harness.h"

using namespace reftest;

TEST(ReferenceLinalg, LuFactorAndSolve) {
  HostTensor a = HostTensor::of({1, 2, 3, 4}, {2, 2}, GN_F64);
  HostTensor lu = HostTensor::zeros({2, 2}, GN_F64), piv = HostTensor::zeros({2}, GN_I32),
             info = HostTensor::zeros({}, GN_I32);
  ASSERT_OK(run("lu_factor", GN_F64, {a}, {lu, piv, info}));
  expect_values(lu, {3, 4, 1.0 / 3, 2.0 / 3}, 1e-15);
  expect_ints(piv, {2, 2});
  expect_ints(info, {0});
  HostTensor b = HostTensor::of({5, 11}, {2, 1}, GN_F64), x = HostTensor::zeros({2, 1}, GN_F64);
  ASSERT_OK(run("lu_solve", GN_F64, {lu, piv, b}, {x}, {ai(0)}));
  expect_values(x, {1, 2}, 1e-14);  // [[1,2],[3,4]] [1,2]^T = [5,11]
  ASSERT_OK(run("lu_solve", GN_F64, {lu, piv, b}, {x}, {ai(1)}));
  expect_values(x, {6.5, -0.5}, 1e-14);  // A^T [6.5,-0.5]^T = [5,11]
  HostTensor s = HostTensor::of({1, 2, 2, 4}, {2, 2}, GN_F32);
  HostTensor lu32 = HostTensor::zeros({2, 2}, GN_F32);
  ASSERT_OK(run("lu_factor", GN_F32, {s.transposed(0, 1)}, {lu32, piv, info}));
  expect_ints(info, {2});  // U[1,1] is exactly zero
  EXPECT_EQ(code(run("lu_solve", GN_F64, {lu, HostTensor::of_ints({3, 2}, {2}, GN_I32), b}, {x}, {ai(0)})),
            GN_ERR_INDEX);
}

TEST(ReferenceLinalg, CholeskyAndTriangularSolve) {
  HostTensor a = HostTensor::of({4, 2, 2, 3}, {2, 2}, GN_F64);
  HostTensor l = HostTensor::zeros({2, 2}, GN_F64), info = HostTensor::zeros({}, GN_I32);
  ASSERT_OK(run("cholesky", GN_F64, {a}, {l, info}, {ai(0)}));
  expect_values(l, {2, 0, 1, std::sqrt(2.0)}, 1e-15);
  ASSERT_OK(run("cholesky", GN_F64, {a}, {l, info}, {ai(1)}));
  expect_values(l, {2, 1, 0, std::sqrt(2.0)}, 1e-15);
  ASSERT_OK(run("cholesky", GN_F64, {HostTensor::of({1, 2, 2, 1}, {2, 2}, GN_F64)}, {l, info}, {ai(0)}));
  expect_ints(info, {2});
  HostTensor t = HostTensor::of({2, 1, 9, 4}, {2, 2}, GN_F64), b = HostTensor::of({4, 8}, {2, 1}, GN_F64);
  HostTensor x = HostTensor::zeros({2, 1}, GN_F64);
  ASSERT_OK(run("solve_triangular", GN_F64, {t, b}, {x}, {ai(1), ai(0), ai(0)}));  // the 9 is not read
  expect_values(x, {1, 2}, 1e-15);
  ASSERT_OK(run("solve_triangular", GN_F64, {t, b}, {x}, {ai(0), ai(1), ai(1)}));  // [[1,9],[0,1]] x = b
  expect_values(x, {4 - 9 * 8, 8}, 1e-15);
}

TEST(ReferenceLinalg, QrSigns) {
  HostTensor a = HostTensor::of({3, 4}, {2, 1}, GN_F64);
  HostTensor q = HostTensor::zeros({2, 1}, GN_F64), r = HostTensor::zeros({1, 1}, GN_F64);
  ASSERT_OK(run("qr", GN_F64, {a}, {q, r}, {ai(0)}));
  expect_values(q, {-0.6, -0.8}, 1e-15);  // LAPACK's Householder: R's diagonal has -sign(a11)
  expect_values(r, {-5}, 1e-15);
  HostTensor qc = HostTensor::zeros({2, 2}, GN_F64), rc = HostTensor::zeros({2, 1}, GN_F64);
  ASSERT_OK(run("qr", GN_F64, {a}, {qc, rc}, {ai(1)}));
  expect_values(qc, {-0.6, -0.8, -0.8, 0.6}, 1e-15);
  expect_values(rc, {-5, 0}, 1e-15);
}

TEST(ReferenceLinalg, SvdAndEighSigns) {
  HostTensor a = HostTensor::of({3, 0, 0, -2}, {2, 2}, GN_F64);
  HostTensor u = HostTensor::zeros({2, 2}, GN_F64), s = HostTensor::zeros({2}, GN_F64),
             vh = HostTensor::zeros({2, 2}, GN_F64);
  ASSERT_OK(run("svd", GN_F64, {a}, {u, s, vh}, {ai(0), ai(1)}));
  expect_values(s, {3, 2});
  expect_values(u, {1, 0, 0, 1});  // each column of U has its largest entry positive
  expect_values(vh, {1, 0, 0, -1});
  HostTensor e = HostTensor::of({2, 7, 1, 2}, {2, 2}, GN_F64);  // lower triangle [[2,.],[1,2]]
  HostTensor w = HostTensor::zeros({2}, GN_F64), v = HostTensor::zeros({2, 2}, GN_F64);
  ASSERT_OK(run("eigh", GN_F64, {e}, {w, v}, {ai(0)}));
  const double h = std::sqrt(0.5);
  expect_values(w, {1, 3}, 1e-15);
  expect_values(v, {h, h, -h, h}, 1e-15);
  // batched, wide: singular values only
  HostTensor b = HostTensor::of({1, 0, 0, 0, 2, 0}, {1, 2, 3}, GN_F32), sb = HostTensor::zeros({1, 2}, GN_F32);
  HostTensor none = HostTensor::zeros({0}, GN_F32);
  ASSERT_OK(run("svd", GN_F32, {b}, {none, sb, none}, {ai(0), ai(0)}));
  expect_values(sb, {2, 1});
}
