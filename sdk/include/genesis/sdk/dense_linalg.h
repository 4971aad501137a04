// genesis/sdk/dense_linalg.h - dense matrix factorizations on the host, written once for every
// host backend (the reference computes in double, the cpu backend in the tensor's float type):
// LU with partial pivoting, solves with it, triangular solves, Cholesky, Householder QR,
// one-sided Jacobi SVD and the cyclic Jacobi symmetric eigensolver.
//
// Matrices are dense and row-major: element (i, j) of an r x c matrix is p[i * c + j].  The
// conventions are LAPACK's where one exists (getrf's 1-based pivots and info, geqrf's
// Householder signs), so results match LAPACK-based libraries up to rounding.  Singular vectors
// and eigenvectors, which are unique only up to sign, are signed so that the entry of largest
// magnitude of each column of U (of V for eigh) is positive (the first such entry on ties).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace gn::sdk::linalg {

// ----------------------------------------------------------------------------
// LU

// P A = L U by partial pivoting (LAPACK getf2): a (m x n) is overwritten by U on and above the
// diagonal and by L's multipliers below it (L has a unit diagonal); piv gets min(m, n) 1-based
// row interchanges.  Returns 0, or k when U[k-1][k-1] is exactly zero (the first such k; the
// factorization is completed anyway).
template <class T>
int64_t lu_factor(T* a, int64_t m, int64_t n, int32_t* piv) {
  const int64_t k = std::min(m, n);
  int64_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    T best = std::abs(a[j * n + j]);
    for (int64_t i = j + 1; i < m; ++i) {
      const T v = std::abs(a[i * n + j]);
      if (v > best) best = v, p = i;
    }
    piv[j] = (int32_t)(p + 1);
    if (a[p * n + j] != T(0)) {
      if (p != j)
        for (int64_t c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
      const T d = a[j * n + j];
      for (int64_t i = j + 1; i < m; ++i) a[i * n + j] /= d;
    } else if (info == 0) {
      info = j + 1;
    }
    for (int64_t i = j + 1; i < m; ++i) {
      const T l = a[i * n + j];
      if (l == T(0)) continue;
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
    }
  }
  return info;
}

// Solves A X = B (adjoint: A^T X = B) in place of b (n x k) with A = P L U from lu_factor.
template <class T>
void lu_solve(const T* lu, int64_t n, const int32_t* piv, T* b, int64_t k, bool adjoint) {
  auto swap_rows = [&](int64_t i) {
    const int64_t p = (int64_t)piv[i] - 1;
    if (p != i)
      for (int64_t c = 0; c < k; ++c) std::swap(b[i * k + c], b[p * k + c]);
  };
  if (!adjoint) {
    for (int64_t i = 0; i < n; ++i) swap_rows(i);
    for (int64_t i = 0; i < n; ++i)  // L y = P^T b (unit lower)
      for (int64_t r = 0; r < i; ++r) {
        const T l = lu[i * n + r];
        if (l != T(0))
          for (int64_t c = 0; c < k; ++c) b[i * k + c] -= l * b[r * k + c];
      }
    for (int64_t i = n - 1; i >= 0; --i) {  // U x = y
      for (int64_t r = i + 1; r < n; ++r) {
        const T u = lu[i * n + r];
        if (u != T(0))
          for (int64_t c = 0; c < k; ++c) b[i * k + c] -= u * b[r * k + c];
      }
      const T d = lu[i * n + i];
      for (int64_t c = 0; c < k; ++c) b[i * k + c] /= d;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {  // U^T y = b (lower)
    for (int64_t r = 0; r < i; ++r) {
      const T u = lu[r * n + i];
      if (u != T(0))
        for (int64_t c = 0; c < k; ++c) b[i * k + c] -= u * b[r * k + c];
    }
    const T d = lu[i * n + i];
    for (int64_t c = 0; c < k; ++c) b[i * k + c] /= d;
  }
  for (int64_t i = n - 1; i >= 0; --i)  // L^T z = y (unit upper)
    for (int64_t r = i + 1; r < n; ++r) {
      const T l = lu[r * n + i];
      if (l != T(0))
        for (int64_t c = 0; c < k; ++c) b[i * k + c] -= l * b[r * k + c];
    }
  for (int64_t i = n - 1; i >= 0; --i) swap_rows(i);  // x = P z
}

// ----------------------------------------------------------------------------
// triangular solves and Cholesky

// Solves op(A) X = B in place of b (n x k), op(A) = A or A^T, reading only the upper (or lower)
// triangle of a (n x n); unit: the diagonal is taken as ones.  A zero diagonal gives inf/nan.
template <class T>
void solve_triangular(const T* a, int64_t n, T* b, int64_t k, bool upper, bool transpose, bool unit) {
  auto m = [&](int64_t i, int64_t j) { return transpose ? a[j * n + i] : a[i * n + j]; };
  const bool lower = upper == transpose;  // op(A) is lower triangular
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = lower ? s : n - 1 - s;
    const int64_t r0 = lower ? 0 : i + 1, r1 = lower ? i : n;
    for (int64_t r = r0; r < r1; ++r) {
      const T v = m(i, r);
      if (v != T(0))
        for (int64_t c = 0; c < k; ++c) b[i * k + c] -= v * b[r * k + c];
    }
    if (!unit) {
      const T d = m(i, i);
      for (int64_t c = 0; c < k; ++c) b[i * k + c] /= d;
    }
  }
}

// A = L L^T from the lower triangle of a (n x n; upper: A = U^T U from the upper triangle, and
// U is returned), in place; the other triangle is zeroed.  Returns 0, or k when the leading
// minor of order k is not positive-definite (the factor is then incomplete).
template <class T>
int64_t cholesky(T* a, int64_t n, bool upper) {
  std::vector<T> l((size_t)(n * n), T(0));
  auto s = [&](int64_t i, int64_t j) { return upper ? a[j * n + i] : a[i * n + j]; };  // i >= j
  int64_t info = 0;
  for (int64_t j = 0; j < n && !info; ++j) {
    T d = s(j, j);
    for (int64_t r = 0; r < j; ++r) d -= l[(size_t)(j * n + r)] * l[(size_t)(j * n + r)];
    if (!(d > T(0))) {
      info = j + 1;
      break;
    }
    const T ljj = std::sqrt(d);
    l[(size_t)(j * n + j)] = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      T v = s(i, j);
      for (int64_t r = 0; r < j; ++r) v -= l[(size_t)(i * n + r)] * l[(size_t)(j * n + r)];
      l[(size_t)(i * n + j)] = v / ljj;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = upper ? l[(size_t)(j * n + i)] : l[(size_t)(i * n + j)];
  return info;
}

// ----------------------------------------------------------------------------
// QR

// sqrt(sum x_i^2) over n values `stride` apart, without overflow or underflow.
template <class T>
T norm2(const T* x, int64_t n, int64_t stride) {
  T scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(x[i * stride]));
  if (scale == T(0) || !std::isfinite(scale)) return scale;
  T s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i * stride] / scale;
    s += v * v;
  }
  return scale * std::sqrt(s);
}

// A = Q R by Householder reflections (LAPACK geqrf + orgqr): a (m x n); k = min(m, n).
// complete: q (m x m) and r (m x n); else q (m x k) and r (k x n).  q may be null (R only).
template <class T>
void qr(const T* a, int64_t m, int64_t n, T* q, T* r, bool complete) {
  const int64_t k = std::min(m, n);
  std::vector<T> w(a, a + m * n), tau((size_t)k, T(0));
  for (int64_t j = 0; j < k; ++j) {
    const T alpha = w[(size_t)(j * n + j)];
    const T xnorm = norm2(w.data() + (j + 1) * n + j, m - j - 1, n);
    if (xnorm == T(0)) continue;  // H = I (tau 0), as LAPACK's larfg
    const T beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
    tau[(size_t)j] = (beta - alpha) / beta;
    const T scal = T(1) / (alpha - beta);
    for (int64_t i = j + 1; i < m; ++i) w[(size_t)(i * n + j)] *= scal;
    w[(size_t)(j * n + j)] = beta;
    for (int64_t c = j + 1; c < n; ++c) {  // w[j:, c] -= tau v (v^T w[j:, c]), v = (1, w[j+1:, j])
      T s = w[(size_t)(j * n + c)];
      for (int64_t i = j + 1; i < m; ++i) s += w[(size_t)(i * n + j)] * w[(size_t)(i * n + c)];
      s *= tau[(size_t)j];
      w[(size_t)(j * n + c)] -= s;
      for (int64_t i = j + 1; i < m; ++i) w[(size_t)(i * n + c)] -= s * w[(size_t)(i * n + j)];
    }
  }
  const int64_t rr = complete ? m : k;
  for (int64_t i = 0; i < rr; ++i)
    for (int64_t c = 0; c < n; ++c) r[i * n + c] = i < k && c >= i ? w[(size_t)(i * n + c)] : T(0);
  if (!q) return;
  const int64_t qc = complete ? m : k;  // Q = H_0 ... H_{k-1} I[:, :qc], accumulated backwards
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < qc; ++c) q[i * qc + c] = i == c ? T(1) : T(0);
  for (int64_t j = k - 1; j >= 0; --j) {
    const T t = tau[(size_t)j];
    if (t == T(0)) continue;
    for (int64_t c = j; c < qc; ++c) {
      T s = q[j * qc + c];
      for (int64_t i = j + 1; i < m; ++i) s += w[(size_t)(i * n + j)] * q[i * qc + c];
      s *= t;
      q[j * qc + c] -= s;
      for (int64_t i = j + 1; i < m; ++i) q[i * qc + c] -= s * w[(size_t)(i * n + j)];
    }
  }
}

// ----------------------------------------------------------------------------
// SVD and symmetric eigenproblems

namespace detail {

// Columns [from, to) of u (rows x cols, row-major) that are zero are replaced by unit vectors
// orthogonal to every other column, which must be orthonormal: each new column is the standard
// basis vector with the largest component outside their span, orthogonalised twice.
template <class T>
void complete_orthonormal(T* u, int64_t rows, int64_t cols, const std::vector<bool>& fill) {
  std::vector<T> resid((size_t)rows, T(1));  // |e_i - P e_i|^2 = 1 - sum over kept columns of u_ic^2
  for (int64_t c = 0; c < cols; ++c)
    if (!fill[(size_t)c])
      for (int64_t i = 0; i < rows; ++i) resid[(size_t)i] -= u[i * cols + c] * u[i * cols + c];
  std::vector<bool> have(fill.size());
  for (size_t c = 0; c < fill.size(); ++c) have[c] = !fill[c];
  std::vector<T> v((size_t)rows);
  for (int64_t c = 0; c < cols; ++c) {
    if (!fill[(size_t)c]) continue;
    const int64_t best = std::max_element(resid.begin(), resid.end()) - resid.begin();
    std::fill(v.begin(), v.end(), T(0));
    v[(size_t)best] = T(1);
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t o = 0; o < cols; ++o) {
        if (!have[(size_t)o]) continue;
        T d = 0;
        for (int64_t i = 0; i < rows; ++i) d += u[i * cols + o] * v[(size_t)i];
        for (int64_t i = 0; i < rows; ++i) v[(size_t)i] -= d * u[i * cols + o];
      }
    const T nv = norm2(v.data(), rows, 1);
    for (int64_t i = 0; i < rows; ++i) {
      u[i * cols + c] = v[(size_t)i] / nv;
      resid[(size_t)i] -= u[i * cols + c] * u[i * cols + c];
    }
    have[(size_t)c] = true;
  }
}

// Row of the entry of largest magnitude in column c of x (rows x cols), the first on ties.
template <class T>
int64_t argmax_abs_col(const T* x, int64_t rows, int64_t cols, int64_t c) {
  int64_t best = 0;
  for (int64_t i = 1; i < rows; ++i)
    if (std::abs(x[i * cols + c]) > std::abs(x[best * cols + c])) best = i;
  return best;
}

// One-sided Jacobi on g (R x C, R >= C, column-major: column j at g + j*R): on return its
// columns are mutually orthogonal, and v (C x C, column-major, may be null) holds the rotations.
template <class T>
void jacobi_columns(T* g, int64_t R, int64_t C, T* v) {
  const T tol = std::numeric_limits<T>::epsilon() * (T)std::max<int64_t>(R, 1);
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < C; ++p)
      for (int64_t q = p + 1; q < C; ++q) {
        T* gp = g + p * R;
        T* gq = g + q * R;
        T alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < R; ++i) {
          alpha += gp[i] * gp[i];
          beta += gq[i] * gq[i];
          gamma += gp[i] * gq[i];
        }
        if (!(std::abs(gamma) > tol * std::sqrt(alpha) * std::sqrt(beta))) continue;
        rotated = true;
        const T zeta = (beta - alpha) / (2 * gamma);
        const T t = std::copysign(T(1), zeta) / (std::abs(zeta) + std::hypot(T(1), zeta));
        const T c = T(1) / std::sqrt(1 + t * t), s = c * t;
        for (int64_t i = 0; i < R; ++i) {
          const T a = gp[i], b = gq[i];
          gp[i] = c * a - s * b;
          gq[i] = s * a + c * b;
        }
        if (v)
          for (int64_t i = 0; i < C; ++i) {
            const T a = v[p * C + i], b = v[q * C + i];
            v[p * C + i] = c * a - s * b;
            v[q * C + i] = s * a + c * b;
          }
      }
    if (!rotated) break;
  }
}

}  // namespace detail

// A = U diag(S) Vh for a (m x n), k = min(m, n): s (k) descending; with u/vh: full: u (m x m),
// vh (n x n); else u (m x k), vh (k x n).  u and vh null: singular values only.
template <class T>
void svd(const T* a, int64_t m, int64_t n, T* u, T* s, T* vh, bool full) {
  const bool tall = m >= n;
  const int64_t R = tall ? m : n, C = tall ? n : m;  // g = A (tall) or A^T, column-major R x C
  const bool uv = u && vh;
  std::vector<T> g((size_t)(R * C)), v(uv ? (size_t)(C * C) : 0, T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) g[(size_t)(tall ? j * R + i : i * R + j)] = a[i * n + j];
  for (int64_t j = 0; uv && j < C; ++j) v[(size_t)(j * C + j)] = T(1);
  detail::jacobi_columns(g.data(), R, C, uv ? v.data() : nullptr);
  std::vector<T> sv((size_t)C);
  for (int64_t j = 0; j < C; ++j) sv[(size_t)j] = norm2(g.data() + j * R, R, 1);
  std::vector<int64_t> order((size_t)C);
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return sv[(size_t)x] > sv[(size_t)y]; });
  for (int64_t j = 0; j < C; ++j) s[j] = sv[(size_t)order[(size_t)j]];
  if (!uv) return;
  // gu (R x RC, row-major): the left vectors of g, completed where a singular value is 0 and,
  // when full, to a square basis; gv (C x C, row-major): the right ones.
  const int64_t RC = full ? R : C;
  std::vector<T> gu((size_t)(R * RC), T(0)), gv((size_t)(C * C));
  std::vector<bool> fill((size_t)RC, true);
  // A column whose norm is this small has lost its precision to underflow: its singular value
  // counts as zero and its left vector is completed instead.
  const T tiny = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
  for (int64_t j = 0; j < C; ++j) {
    const int64_t o = order[(size_t)j];
    const T sj = sv[(size_t)o];
    for (int64_t i = 0; i < C; ++i) gv[(size_t)(i * C + j)] = v[(size_t)(o * C + i)];
    if (sj > tiny && std::isfinite(sj)) {
      for (int64_t i = 0; i < R; ++i) gu[(size_t)(i * RC + j)] = g[(size_t)(o * R + i)] / sj;
      fill[(size_t)j] = false;
    }
  }
  detail::complete_orthonormal(gu.data(), R, RC, fill);
  // A = gu S gv^T (tall) or A^T = gu S gv^T, so A = gv S gu^T.
  const int64_t uc = full ? m : C, vr = full ? n : C;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < uc; ++c)
      u[i * uc + c] = tall ? gu[(size_t)(i * RC + c)] : (c < C ? gv[(size_t)(i * C + c)] : T(0));
  for (int64_t r = 0; r < vr; ++r)
    for (int64_t j = 0; j < n; ++j)
      vh[r * n + j] = tall ? (r < C ? gv[(size_t)(j * C + r)] : T(0)) : gu[(size_t)(j * RC + r)];
  // Signs: the largest |entry| of each column of U positive, with the matching row of Vh
  // (columns of U beyond k, and rows of Vh beyond k, signed on their own).
  const int64_t k = C;
  for (int64_t c = 0; c < uc; ++c) {
    if (m == 0) break;
    const int64_t i = detail::argmax_abs_col(u, m, uc, c);
    if (!(u[i * uc + c] < T(0))) continue;
    for (int64_t r = 0; r < m; ++r) u[r * uc + c] = -u[r * uc + c];
    if (c < k)
      for (int64_t j = 0; j < n; ++j) vh[c * n + j] = -vh[c * n + j];
  }
  for (int64_t r = k; r < vr; ++r) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
      if (std::abs(vh[r * n + j]) > std::abs(vh[r * n + best])) best = j;
    if (vh[r * n + best] < T(0))
      for (int64_t j = 0; j < n; ++j) vh[r * n + j] = -vh[r * n + j];
  }
}

// Eigenvalues w (n, ascending) and eigenvectors v (n x n, as columns) of the symmetric matrix
// whose lower (upper) triangle a holds, by cyclic Jacobi rotations.
template <class T>
void eigh(const T* a, int64_t n, T* w, T* v, bool upper) {
  std::vector<T> s((size_t)(n * n)), q((size_t)(n * n), T(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      s[(size_t)(i * n + j)] = s[(size_t)(j * n + i)] = upper ? a[j * n + i] : a[i * n + j];
  for (int64_t i = 0; i < n; ++i) q[(size_t)(i * n + i)] = T(1);
  const T eps = std::numeric_limits<T>::epsilon();
  for (int sweep = 0; sweep < 100; ++sweep) {
    T off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T x = s[(size_t)(i * n + j)] * s[(size_t)(i * n + j)];
        total += x;
        if (i != j) off += x;
      }
    if (!(off > eps * eps * total)) break;
    for (int64_t p = 0; p + 1 < n; ++p)
      for (int64_t r = p + 1; r < n; ++r) {
        const T apr = s[(size_t)(p * n + r)];
        if (apr == T(0)) continue;
        const T theta = (s[(size_t)(r * n + r)] - s[(size_t)(p * n + p)]) / (2 * apr);
        const T t = std::copysign(T(1), theta) / (std::abs(theta) + std::hypot(T(1), theta));
        const T c = T(1) / std::sqrt(1 + t * t), sn = c * t;
        for (int64_t i = 0; i < n; ++i) {  // columns p, r
          const T x = s[(size_t)(i * n + p)], y = s[(size_t)(i * n + r)];
          s[(size_t)(i * n + p)] = c * x - sn * y;
          s[(size_t)(i * n + r)] = sn * x + c * y;
        }
        for (int64_t i = 0; i < n; ++i) {  // rows p, r
          const T x = s[(size_t)(p * n + i)], y = s[(size_t)(r * n + i)];
          s[(size_t)(p * n + i)] = c * x - sn * y;
          s[(size_t)(r * n + i)] = sn * x + c * y;
        }
        s[(size_t)(p * n + r)] = s[(size_t)(r * n + p)] = T(0);
        for (int64_t i = 0; i < n; ++i) {
          const T x = q[(size_t)(i * n + p)], y = q[(size_t)(i * n + r)];
          q[(size_t)(i * n + p)] = c * x - sn * y;
          q[(size_t)(i * n + r)] = sn * x + c * y;
        }
      }
  }
  std::vector<int64_t> order((size_t)n);
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return s[(size_t)(x * n + x)] < s[(size_t)(y * n + y)]; });
  for (int64_t j = 0; j < n; ++j) {
    const int64_t o = order[(size_t)j];
    w[j] = s[(size_t)(o * n + o)];
    for (int64_t i = 0; i < n; ++i) v[i * n + j] = q[(size_t)(i * n + o)];
    const int64_t b = detail::argmax_abs_col(v, n, n, j);
    if (v[b * n + j] < T(0))
      for (int64_t i = 0; i < n; ++i) v[i * n + j] = -v[i * n + j];
  }
}

}  // namespace gn::sdk::linalg
