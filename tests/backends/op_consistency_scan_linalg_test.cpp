// tests/backends/op_consistency_scan_linalg_test.cpp - the cross-backend suite, part 7: the
// cumulative ops (cumsum, cumprod, logcumsumexp, cummax, cummin), searchsorted, scatter_reduce
// and the factorizations (lu_factor, lu_solve, solve_triangular, cholesky, qr, svd, eigh).
//
// Tolerances: the cumulative ops, cummax/cummin, searchsorted and scatter_reduce are exact: every
// backend walks a line (a fiber for scatter_reduce) in the reference's order with its arithmetic
// (double accumulation, one rounding per output; int64 wrapping).  logcumsumexp calls
// log1p/exp: exact against glibc on the cpu, a few ulp on cuda.  The factorizations run the
// reference's algorithms in the tensor's precision on the cpu (cuSOLVER on cuda): float64 within
// 1e-10, float32 within 1e-4 (rounding amplified by the inputs' condition numbers, kept below
// ~10 here).  Their inputs are built on the host so that they are well conditioned (a diagonal
// of distinct sizes plus small noise): symmetric positive-definite for cholesky, separated
// singular values and eigenvalues for svd and eigh (whose vectors the backends sign alike; the
// extra vectors of a full svd are compared through the projector onto their span).
#include <set>

#include "op_consistency.h"

namespace {

bool is_float(int32_t dt) { return dt == GN_F32 || dt == GN_F64 || dt == GN_F16 || dt == GN_BF16; }

Tol float_tol(int32_t dt, double f32, double f64) {
  return dt == GN_F64 ? Tol{f64, f64} : dt == GN_F32 ? Tol{f32, f32} : kBf16;
}

std::vector<Case> scan_cases() {
  std::vector<Case> cs;
  const std::vector<ShapeDim> ls = {{{300, 257}, -1, kContig},  {{300, 257}, 0, kContig}, {{4, 33, 5}, 1, kContig},
                                    {{9, 11}, -1, kTransposed}, {{0, 5}, -1, kContig},    {{}, 0, kContig}};
  for (const ShapeDim& l : ls) {
    const std::string shape = sname(l.shape) + lname(l.layout) + "_d" + std::to_string(l.dim < 0 ? 9 : l.dim);
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I64, GN_I32, GN_I8, GN_U8, GN_BOOL})
      for (int rev : {0, 1}) {
        const std::string tag = dname(dt) + "_" + shape + (rev ? "_rev" : "");
        const double lo = dt == GN_U8 ? 0 : -4, hi = 4;
        if (dt != GN_BOOL || !rev) {
          const Input x{l.shape, dt, l.layout, lo, hi};
          cs.push_back(make_case("cumsum_" + tag, "cumsum", {x},
                                 {gn_attr_int(l.dim), gn_attr_int(GN_DIM_NONE), gn_attr_int(rev)}));
          // products of values near 1 stay finite over 300 terms
          const Input p{l.shape, dt, l.layout, is_float(dt) ? 0.9 : -2, is_float(dt) ? 1.1 : 2};
          cs.push_back(make_case("cumprod_" + tag, "cumprod", {p},
                                 {gn_attr_int(l.dim), gn_attr_int(GN_DIM_NONE), gn_attr_int(rev)}));
        }
        if (is_float(dt))
          cs.push_back(make_case("logcumsumexp_" + tag, "logcumsumexp", {{l.shape, dt, l.layout, -30, 30}},
                                 {gn_attr_int(l.dim), gn_attr_int(GN_DIM_NONE), gn_attr_int(rev)},
                                 float_tol(dt, 1e-6, 1e-13)));
        if (rev) continue;
        for (const char* op : {"cummax", "cummin"})  // ties on purpose: integers from [-4, 4]
          cs.push_back(make_case(std::string(op) + "_" + tag, op,
                                 {{l.shape, dt, l.layout, lo, dt == GN_BF16 ? -3.9 : hi}}, {gn_attr_int(l.dim)}, kExact,
                                 2));
      }
  }
  // cumsum with a dtype: int8 summed as int32, float32 as float64
  cs.push_back(make_case("cumsum_i8_as_i32", "cumsum", {{{50, 7}, GN_I8, kContig, -100, 100}},
                         {gn_attr_int(0), gn_attr_int(GN_I32), gn_attr_int(0)}));
  cs.push_back(make_case("cumsum_f32_as_f64", "cumsum", {{{50, 7}, GN_F32}},
                         {gn_attr_int(0), gn_attr_int(GN_F64), gn_attr_int(0)}));
  // searchsorted: the same binary search on every backend, so unsorted sequences agree too
  for (int32_t dt : {GN_F32, GN_F64, GN_I64, GN_I32})
    for (int right : {0, 1}) {
      const std::string tag = dname(dt) + (right ? "_right" : "");
      cs.push_back(make_case("searchsorted_1d_" + tag, "searchsorted",
                             {{{37}, dt, kContig, -4, 4}, {{6, 50}, dt, kContig, -5, 5}},
                             {gn_attr_int(right), gn_attr_int(0)}));
      cs.push_back(make_case("searchsorted_nd_" + tag, "searchsorted",
                             {{{3, 4, 9}, dt, kContig, -4, 4}, {{3, 4, 6}, dt, kTransposed, -5, 5}},
                             {gn_attr_int(right), gn_attr_int(1)}));
    }
  cs.push_back(make_case("searchsorted_i64_f32", "searchsorted",
                         {{{9}, GN_I64, kContig, -4, 4}, {{20}, GN_F32, kContig, -5, 5}},
                         {gn_attr_int(0), gn_attr_int(0)}));
  cs.push_back(make_case("searchsorted_bad_rank", "searchsorted", {{{2, 9}, GN_F32}, {{20}, GN_F32}},
                         {gn_attr_int(0), gn_attr_int(0)}));
  // scatter_reduce: every reduction, with and without x's values, repeated targets
  struct S {
    std::vector<int64_t> x, ix;
    int64_t dim, range;
  };
  const std::vector<S> ss = {{{30, 17}, {60, 17}, 0, 30},
                             {{5, 7, 9}, {4, 6, 9}, 1, 7},
                             {{5, 7, 9}, {5, 7, 12}, -1, 9},
                             {{6, 4}, {3, 4}, 0, 9}};
  for (const S& s : ss)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32})
      for (int64_t reduce = 0; reduce < 5; ++reduce)
        for (int self : {1, 0}) {
          const std::string tag = dname(dt) + "_" + sname(s.x) + "_i" + sname(s.ix) + "_r" + std::to_string(reduce) +
                                  (self ? "" : "_noself") + (s.range > s.x[0] ? "_oob" : "");
          const double lo = reduce == 1 ? 0.8 : -4, hi = reduce == 1 ? 1.2 : 4;
          cs.push_back(make_case(
              "scatter_reduce_" + tag, "scatter_reduce",
              {{s.x, dt, kContig, lo, hi}, {s.ix, GN_I64, kContig, 0, (double)s.range}, {s.ix, dt, kContig, lo, hi}},
              {gn_attr_int(s.dim), gn_attr_int(reduce), gn_attr_int(self)}));
        }
  // lu_factor (square, wide, tall, batched) and lu_solve with valid pivots (all n: rows swapped with the last)
  for (int32_t dt : {GN_F32, GN_F64}) {
    const Tol t = float_tol(dt, 1e-4, 1e-10);
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{5, 5}, {3, 4, 4}, {4, 6}, {6, 4}, {0, 3}}) {
      Case c = make_case("lu_factor_" + dname(dt) + "_" + sname(shape), "lu_factor", {{shape, dt, kContig, -1, 1}}, {},
                         t, 3);
      cs.push_back(c);
    }
    for (int adj : {0, 1})
      cs.push_back(make_case(
          "lu_solve_" + dname(dt) + (adj ? "_adjoint" : ""), "lu_solve",
          {{{2, 4, 4}, dt, kContig, 1, 2}, {{2, 4}, GN_I32, kContig, 4, 4.5}, {{2, 4, 3}, dt, kTransposed, -1, 1}},
          {gn_attr_int(adj)}, float_tol(dt, 1e-3, 1e-9)));
    for (int mode : {0, 1})
      for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{5, 3}, {3, 5}, {2, 4, 4}})
        cs.push_back(make_case("qr_" + dname(dt) + "_" + sname(shape) + (mode ? "_complete" : ""), "qr",
                               {{shape, dt, kContig, -1, 1}}, {gn_attr_int(mode)}, float_tol(dt, 1e-4, 1e-10), 2));
  }
  cs.push_back(make_case("lu_factor_i64_refused", "lu_factor", {{{3, 3}, GN_I64}}, {}, kExact, 3));
  cs.push_back(make_case("cholesky_not_square", "cholesky", {{{3, 4}, GN_F32}}, {gn_attr_int(0)}, kExact, 2));
  return cs;
}

// ---------------------------------------------------------------- host-built inputs

struct HostIn {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

// Runs op on r from host data (converted to dtype and moved to r's device).
Result run_host(Rt& r, const char* op_name, int32_t dtype, const std::vector<HostIn>& ins,
                const std::vector<gn_attr_value>& attrs, size_t n_out) {
  std::vector<gt::T> keep;
  std::vector<gn_tensor*> raw;
  for (const HostIn& in : ins) {
    gn_tensor *t64 = nullptr, *t = nullptr;
    check(gn_tensor_from_host(r.rt, in.data.data(), in.shape.data(), (int32_t)in.shape.size(), GN_F64, r.host, &t64),
          t64);
    check(gn_tensor_to_dtype(t64, dtype, &t), t);
    gn_tensor_release(t64);
    keep.emplace_back(move_to(t, r.dev));
    raw.push_back(keep.back().t);
  }
  Result res;
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(r.rt, op_name, &op);
  std::vector<gn_tensor*> outs(n_out, nullptr);
  if (!st) st = gn_op_call(r.rt, op, raw.data(), raw.size(), attrs.data(), attrs.size(), outs.data(), outs.size());
  if (st) {
    res.code = gn_status_code(st);
    res.msg = gn_status_message(st);
    gn_status_free(st);
    return res;
  }
  for (gn_tensor* o : outs) {
    gt::T k(o);
    res.shapes.push_back(k.shape());
    res.values.push_back(as_f64(o));
  }
  return res;
}

// The backend under test agrees with the reference on op(ins), output by output.
void agree(const char* op, int32_t dtype, const std::vector<HostIn>& ins, const std::vector<gn_attr_value>& attrs,
           size_t n_out, double tol) {
  const Result want = run_host(runtimes().ref, op, dtype, ins, attrs, n_out);
  const Result got = run_host(runtimes().dut, op, dtype, ins, attrs, n_out);
  ASSERT_EQ(want.code, GN_OK) << want.msg;
  ASSERT_EQ(got.code, GN_OK) << got.msg;
  const double t = tol * kSuiteTolFactor;
  for (size_t k = 0; k < n_out; ++k) {
    ASSERT_EQ(got.shapes[k], want.shapes[k]) << op << " output " << k;
    for (size_t i = 0; i < want.values[k].size(); ++i)
      ASSERT_NEAR(got.values[k][i], want.values[k][i], t + t * std::fabs(want.values[k][i]))
          << op << " " << dname(dtype) << " output " << k << " element " << i;
  }
}

// svd: S and the singular vectors of the k = min(m, n) singular values (unique up to the sign
// both backends fix) agree entry by entry.  The other columns of a full U (rows of a full Vh) are
// an orthonormal basis of the complement of the first k, which is unique only up to a rotation
// when the complement has more than one dimension: the projectors onto their span agree instead
// (which, for that many vectors, also makes them orthonormal), and each is signed as the first k.
void agree_svd(int32_t dtype, const HostIn& a, int full, int uv, double tol) {
  const std::vector<gn_attr_value> attrs{gn_attr_int(full), gn_attr_int(uv)};
  const Result want = run_host(runtimes().ref, "svd", dtype, {a}, attrs, 3);
  const Result got = run_host(runtimes().dut, "svd", dtype, {a}, attrs, 3);
  ASSERT_EQ(want.code, GN_OK) << want.msg;
  ASSERT_EQ(got.code, GN_OK) << got.msg;
  for (size_t o = 0; o < 3; ++o) ASSERT_EQ(got.shapes[o], want.shapes[o]) << "svd output " << o;
  const double t = tol * kSuiteTolFactor;
  const std::string tag = std::string("svd ") + dname(dtype) + (full ? " full" : "") + ": ";
  auto near = [&](double g, double w, const std::string& what) {
    if (std::fabs(g - w) <= t + t * std::fabs(w)) return true;
    ADD_FAILURE() << tag << what << ": got " << g << ", want " << w << " (tolerance " << t + t * std::fabs(w) << ")";
    return false;
  };
  for (size_t i = 0; i < want.values[1].size(); ++i)
    if (!near(got.values[1][i], want.values[1][i], "S entry " + std::to_string(i))) return;
  if (!uv) return;
  const int64_t B = a.shape[0], m = a.shape[1], n = a.shape[2], k = std::min(m, n);
  struct F {  // cnt vectors of len entries: entry i of vector c of matrix b at (b * cnt * len) + i * si + c * sc
    const char* name;
    size_t out;
    int64_t len, cnt, si, sc;
  };
  const int64_t uc = full ? m : k, vr = full ? n : k;
  for (const F& f : {F{"U column", 0, m, uc, uc, 1}, F{"Vh row", 2, n, vr, 1, n}}) {
    const std::vector<double>&gv = got.values[f.out], &wv = want.values[f.out];
    for (int64_t b = 0; b < B; ++b) {
      const int64_t base = b * f.len * f.cnt;
      auto g = [&](int64_t i, int64_t c) { return gv[(size_t)(base + i * f.si + c * f.sc)]; };
      auto w = [&](int64_t i, int64_t c) { return wv[(size_t)(base + i * f.si + c * f.sc)]; };
      const std::string of = " of matrix " + std::to_string(b);
      for (int64_t c = 0; c < k; ++c)
        for (int64_t i = 0; i < f.len; ++i)
          if (!near(g(i, c), w(i, c), f.name + (" " + std::to_string(c)) + " entry " + std::to_string(i) + of)) return;
      if (f.cnt == k) continue;
      for (int64_t i = 0; i < f.len; ++i)
        for (int64_t j = 0; j < f.len; ++j) {
          double pg = 0, pw = 0;
          for (int64_t c = k; c < f.cnt; ++c) pg += g(i, c) * g(j, c), pw += w(i, c) * w(j, c);
          if (!near(pg, pw,
                    "projector onto the " + (f.name + ("s " + std::to_string(k))) + ".." + std::to_string(f.cnt - 1) +
                        ", entry (" + std::to_string(i) + ", " + std::to_string(j) + ")" + of))
            return;
        }
      for (int64_t c = k; c < f.cnt; ++c) {
        int64_t best = 0;
        for (int64_t i = 1; i < f.len; ++i)
          if (std::fabs(g(i, c)) > std::fabs(g(best, c))) best = i;
        EXPECT_GT(g(best, c), 0.0) << tag << f.name << " " << c << of << ": its largest entry is negative";
      }
    }
  }
}

// (batch, n, n) matrices: diag(n, n-1, ..., 1) + noise of size `noise`; symmetric if asked, then
// made positive-definite (A A^T + I) if asked.
std::vector<double> matrices(int64_t batch, int64_t rows, int64_t cols, double noise, bool sym, bool spd,
                             uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  std::vector<double> a((size_t)(batch * rows * cols));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        a[(size_t)((b * rows + i) * cols + j)] = (i == j ? double(cols - i) : 0) + u(gen);
  if (sym || spd)
    for (int64_t b = 0; b < batch; ++b) {
      double* m = a.data() + b * rows * cols;
      std::vector<double> s((size_t)(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double v = 0;
          if (spd)
            for (int64_t k = 0; k < cols; ++k) v += m[i * cols + k] * m[j * cols + k];
          else
            v = 0.5 * (m[i * cols + j] + m[j * cols + i]);
          s[(size_t)(i * cols + j)] = v + (spd && i == j ? 1.0 : 0.0);
        }
      std::copy(s.begin(), s.end(), m);
    }
  return a;
}

class OpConsistencyFactorizations : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override { OPC_REQUIRE_SUITE(); }
  double tol() const { return GetParam() == GN_F64 ? 1e-10 : 2e-4; }
};

TEST_P(OpConsistencyFactorizations, CholeskySvdEighSolveTriangular) {
  const int32_t dt = GetParam();
  const HostIn spd{{3, 5, 5}, matrices(3, 5, 5, 0.3, false, true, 1)};
  for (int upper : {0, 1}) agree("cholesky", dt, {spd}, {gn_attr_int(upper)}, 2, tol());
  for (auto [r, c] : {std::pair<int64_t, int64_t>{6, 4}, {4, 4}, {3, 5}})
    for (int full : {0, 1})
      for (int uv : {1, 0}) agree_svd(dt, {{2, r, c}, matrices(2, r, c, 0.1, false, false, 2)}, full, uv, tol());
  const HostIn sym{{2, 6, 6}, matrices(2, 6, 6, 0.1, true, false, 3)};
  for (int upper : {0, 1}) agree("eigh", dt, {sym}, {gn_attr_int(upper)}, 2, tol());
  const HostIn tri{{2, 5, 5}, matrices(2, 5, 5, 0.3, false, false, 4)};
  const HostIn rhs{{2, 5, 3}, matrices(2, 5, 3, 1.0, false, false, 5)};
  for (int upper : {0, 1})
    for (int trans : {0, 1})
      for (int unit : {0, 1})
        agree("solve_triangular", dt, {tri, rhs}, {gn_attr_int(upper), gn_attr_int(trans), gn_attr_int(unit)}, 1,
              tol());
  // not positive-definite: the same info (the factor is unspecified then)
  const Result want = run_host(runtimes().ref, "cholesky", dt, {{{2, 2}, {1, 2, 2, 1}}}, {gn_attr_int(0)}, 2);
  const Result got = run_host(runtimes().dut, "cholesky", dt, {{{2, 2}, {1, 2, 2, 1}}}, {gn_attr_int(0)}, 2);
  ASSERT_EQ(got.code, GN_OK) << got.msg;
  EXPECT_EQ(got.values[1], want.values[1]);
  EXPECT_EQ(want.values[1], std::vector<double>{2});
}

INSTANTIATE_TEST_SUITE_P(Linalg, OpConsistencyFactorizations, ::testing::Values(GN_F32, GN_F64),
                         [](const auto& info) { return dname(info.param); });

}  // namespace

OPC_SUITE(OpConsistencyScanLinalg, ScanLinalg, scan_cases)
