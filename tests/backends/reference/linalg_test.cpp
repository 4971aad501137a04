// linalg_test.cpp - matmul (torch.matmul semantics, trans flags, strides) and
// bmm against a naive triple loop written here.
#include <cmath>
#include <utility>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

// ----------------------------------------------------------------------------
// the oracle of the oracle: torch.matmul on row-major values, spelled out

// Row-major values of x with its last two dims swapped.
std::vector<double> swap_last2(const std::vector<double>& x, const Shape& s) {
  size_t nd = s.size();
  int64_t R = s[nd - 2], C = s[nd - 1], batch = numel_of(s) / std::max<int64_t>(R * C, 1);
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) y[(size_t)(b * R * C + c * R + r)] = x[(size_t)(b * R * C + r * C + c)];
  return y;
}

struct Result {
  std::vector<double> v;
  Shape shape;
};

Result naive_matmul(std::vector<double> a, Shape as, std::vector<double> b, Shape bs, bool ta, bool tb) {
  if (ta && as.size() >= 2) {
    a = swap_last2(a, as);
    std::swap(as[as.size() - 2], as[as.size() - 1]);
  }
  if (tb && bs.size() >= 2) {
    b = swap_last2(b, bs);
    std::swap(bs[bs.size() - 2], bs[bs.size() - 1]);
  }
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as = {1, as[0]};
  if (b1) bs = {bs[0], 1};
  int64_t M = as[as.size() - 2], K = as[as.size() - 1], N = bs[bs.size() - 1];
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t nb = std::max(ab.size(), bb.size());
  while (ab.size() < nb) ab.insert(ab.begin(), 1);
  while (bb.size() < nb) bb.insert(bb.begin(), 1);
  Shape ob(nb);
  for (size_t d = 0; d < nb; ++d) ob[d] = std::max(ab[d], bb[d]);
  int64_t nbatch = numel_of(ob);
  std::vector<double> out((size_t)(nbatch * M * N), 0.0);
  for (int64_t o = 0; o < nbatch; ++o) {
    // decompose o into a multi-index; size-1 dims of a or b read index 0
    int64_t rem = o, ia = 0, ib = 0, mula = 1, mulb = 1;
    for (size_t d = nb; d-- > 0;) {
      int64_t i = rem % ob[d];
      rem /= ob[d];
      ia += (ab[d] == 1 ? 0 : i) * mula;
      ib += (bb[d] == 1 ? 0 : i) * mulb;
      mula *= ab[d];
      mulb *= bb[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k) s += a[(size_t)(ia * M * K + m * K + k)] * b[(size_t)(ib * K * N + k * N + n)];
        out[(size_t)(o * M * N + m * N + n)] = s;
      }
  }
  Shape os = ob;
  if (!a1) os.push_back(M);
  if (!b1) os.push_back(N);
  return {out, os};
}

struct Case {
  Shape a, b;
  bool ta, tb;
};

}  // namespace

// ----------------------------------------------------------------------------
// matmul

TEST(LinalgRef, RegistersFloatAndIntDtypes) {
  for (const char* op : {"matmul", "bmm"})
    for (int32_t dt : {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I32, GN_I64})
      EXPECT_NE(find_kernel(op, dt), nullptr) << op << " / " << gn_dtype_name(dt);
}

TEST(LinalgRef, MatmulHandComputed) {
  HostTensor a = HostTensor::of({1, 2, 3, 4}, {2, 2}, GN_F64);
  HostTensor b = HostTensor::of({5, 6, 7, 8}, {2, 2}, GN_F64);
  HostTensor y = HostTensor::zeros({2, 2}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {a, b}, {y}, {ai(0), ai(0)}));
  expect_values(y, {19, 22, 43, 50});
  // a^T b = [[1,3],[2,4]] @ [[5,6],[7,8]]
  ASSERT_OK(run("matmul", GN_F64, {a, b}, {y}, {ai(1), ai(0)}));
  expect_values(y, {26, 30, 38, 44});
  // a b^T = [[1,2],[3,4]] @ [[5,7],[6,8]]
  ASSERT_OK(run("matmul", GN_F64, {a, b}, {y}, {ai(0), ai(1)}));
  expect_values(y, {17, 23, 39, 53});
  // dot product of two 1-D operands is 0-d
  HostTensor u = HostTensor::of({1, 2, 3}, {3}, GN_F64), v = HostTensor::of({4, -5, 6}, {3}, GN_F64);
  HostTensor d = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {u, v}, {d}, {ai(0), ai(0)}));
  expect_values(d, {12});
}

TEST(LinalgRef, MatmulShapesMatchNaiveLoop) {
  const std::vector<Case> cases = {
      {{3}, {3}, false, false},                 // dot -> ()
      {{4}, {2, 4, 3}, false, false},           // 1-D @ batched -> (2, 3)
      {{2, 3, 4}, {4}, false, false},           // batched @ 1-D -> (2, 3)
      {{3, 4}, {4, 5}, false, false},           // plain
      {{2, 1, 3, 4}, {5, 4, 2}, false, false},  // batch broadcast -> (2, 5, 3, 2)
      {{1, 3, 4}, {2, 4, 2}, false, false},
      {{2, 4, 3}, {4, 5}, true, false},    // trans_a with batch
      {{3, 4}, {5, 4}, false, true},       // trans_b
      {{1, 4, 3}, {2, 5, 4}, true, true},  // both, broadcast
      {{4}, {5, 4}, false, true},          // 1-D a, transposed b -> (5,)
      {{4, 3}, {4}, true, false},          // transposed a, 1-D b -> (3,)
      {{1, 1}, {1, 1}, false, false},      // size 1
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    std::vector<double> av = rand_values(numel_of(c.a), seed++), bv = rand_values(numel_of(c.b), seed++);
    Result want = naive_matmul(av, c.a, bv, c.b, c.ta, c.tb);
    HostTensor y = HostTensor::zeros(want.shape, GN_F64);
    ASSERT_OK(run("matmul", GN_F64, {HostTensor::of(av, c.a, GN_F64), HostTensor::of(bv, c.b, GN_F64)}, {y},
                  {ai(c.ta), ai(c.tb)}));
    SCOPED_TRACE(::testing::Message() << "a " << c.a.size() << "-D trans " << c.ta << ", b " << c.b.size()
                                      << "-D trans " << c.tb);
    expect_values(y, want.v, 1e-12);
  }
}

TEST(LinalgRef, MatmulNonContiguousOperandsAndOutput) {
  // a (2,3,4) stored column-major with gaps; b is the transpose view of a (2,5,4) buffer
  std::vector<double> av = rand_values(24, 11), braw = rand_values(40, 12);
  HostTensor a = HostTensor::strided_of(av, {2, 3, 4}, GN_F64);
  HostTensor b = HostTensor::of(braw, {2, 5, 4}, GN_F64).transposed(1, 2);  // (2,4,5)
  Result want = naive_matmul(av, {2, 3, 4}, swap_last2(braw, {2, 5, 4}), {2, 4, 5}, false, false);
  // output: every other column of a (2,3,10) buffer
  HostTensor big = HostTensor::zeros({2, 3, 10}, GN_F64);
  HostTensor y = big.sliced(2, 1, 5, 2);
  ASSERT_OK(run("matmul", GN_F64, {a, b}, {y}, {ai(0), ai(0)}));
  expect_values(y, want.v, 1e-12);
  for (int64_t i = 0; i < big.numel(); i += 2) EXPECT_EQ(big.at(i), 0.0) << "wrote outside the output view at " << i;
  // the same product through trans flags on expanded (stride-0) operands
  HostTensor row = HostTensor::of({1, 2, 3, 4}, {1, 4, 1}, GN_F64).expanded({3, 4, 2});  // a^T: (3,2,4)
  HostTensor col = HostTensor::of({1, -1, 2, 0.5}, {1, 4}, GN_F64);                      // b^T: (4,1)
  HostTensor z = HostTensor::zeros({3, 2, 1}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {row, col}, {z}, {ai(1), ai(1)}));
  // every row of a^T is (1,2,3,4): 1 - 2 + 6 + 2 = 7
  expect_values(z, std::vector<double>(6, 7.0));
}

TEST(LinalgRef, MatmulEmptyAndZeroInnerDim) {
  // K = 0: every output is an empty sum = 0 (overwrite what was there)
  HostTensor a = HostTensor::zeros({2, 0}, GN_F64), b = HostTensor::zeros({0, 3}, GN_F64);
  HostTensor y = HostTensor::of(std::vector<double>(6, 7.0), {2, 3}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {a, b}, {y}, {ai(0), ai(0)}));
  expect_values(y, std::vector<double>(6, 0.0));
  // M = 0 and an empty batch: nothing to do, no crash
  HostTensor e = HostTensor::zeros({0, 3}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {HostTensor::zeros({0, 2}, GN_F64), HostTensor::zeros({2, 3}, GN_F64)}, {e},
                {ai(0), ai(0)}));
  HostTensor eb = HostTensor::zeros({0, 2, 3}, GN_F64);
  ASSERT_OK(run("matmul", GN_F64, {HostTensor::zeros({0, 2, 4}, GN_F64), HostTensor::zeros({4, 3}, GN_F64)}, {eb},
                {ai(0), ai(0)}));
}

TEST(LinalgRef, MatmulIntegersAreExact) {
  // (2^40 + 1) * (2^20 + 1) = 2^60 + 2^40 + 2^20 + 1: beyond double precision
  int64_t x = (int64_t(1) << 40) + 1, w = (int64_t(1) << 20) + 1;
  HostTensor a = HostTensor::of_ints({x, 3}, {1, 2}, GN_I64), b = HostTensor::of_ints({w, -5}, {2, 1}, GN_I64);
  HostTensor y = HostTensor::zeros({1, 1}, GN_I64);
  ASSERT_OK(run("matmul", GN_I64, {a, b}, {y}, {ai(0), ai(0)}));
  expect_ints(y, {(int64_t(1) << 60) + (int64_t(1) << 40) + (int64_t(1) << 20) + 1 - 15});
  HostTensor ai32 = HostTensor::of_ints({1, 2, 3, 4, 5, 6}, {2, 3}, GN_I32);
  HostTensor bi32 = HostTensor::of_ints({7, 8, 9}, {3}, GN_I32);
  HostTensor yi = HostTensor::zeros({2}, GN_I32);
  ASSERT_OK(run("matmul", GN_I32, {ai32, bi32}, {yi}, {ai(0), ai(0)}));
  expect_ints(yi, {50, 122});
}

TEST(LinalgRef, MatmulHalfPrecisionAccumulatesInDouble) {
  // 1 + 2^-11 + 2^-11: a half/bfloat accumulator would round each partial sum
  // back to 1; accumulating in double gives 1 + 2^-10, exact in float16.
  const double t = std::ldexp(1.0, -11);
  for (int32_t dt : {GN_F16, GN_F32}) {
    HostTensor a = HostTensor::of({1, t, t}, {1, 3}, dt), b = HostTensor::of({1, 1, 1}, {3, 1}, dt);
    HostTensor y = HostTensor::zeros({1, 1}, dt);
    ASSERT_OK(run("matmul", dt, {a, b}, {y}, {ai(0), ai(0)}));
    expect_values(y, {1.0 + 2 * t});
  }
  // bfloat16 keeps 8 bits: 1 + 2^-7 is exact, 1 + 2^-8 + 2^-8 only with a wide accumulator
  const double s = std::ldexp(1.0, -8);
  HostTensor a = HostTensor::of({1, s, s}, {3}, GN_BF16), b = HostTensor::of({1, 1, 1}, {3}, GN_BF16);
  HostTensor y = HostTensor::zeros({}, GN_BF16);
  ASSERT_OK(run("matmul", GN_BF16, {a, b}, {y}, {ai(0), ai(0)}));
  expect_values(y, {1.0 + 2 * s});
  // a result that is not representable is rounded once, to nearest
  HostTensor c = HostTensor::of({0.1, 0.2, 0.3}, {3}, GN_F32), d = HostTensor::of({0.7, 0.11, 1.3}, {3}, GN_F32);
  HostTensor z = HostTensor::zeros({}, GN_F32);
  ASSERT_OK(run("matmul", GN_F32, {c, d}, {z}, {ai(0), ai(0)}));
  double exact = (double)0.1f * (double)0.7f + (double)0.2f * (double)0.11f + (double)0.3f * (double)1.3f;
  EXPECT_EQ(z.at(0), round_to(exact, GN_F32));
}

TEST(LinalgRef, MatmulRejectsBadShapes) {
  HostTensor a = HostTensor::zeros({2, 3}, GN_F64), b = HostTensor::zeros({4, 2}, GN_F64);
  EXPECT_CODE(run("matmul", GN_F64, {a, b}, {HostTensor::zeros({2, 2}, GN_F64)}, {ai(0), ai(0)}), GN_ERR_SHAPE);
  EXPECT_CODE(run("matmul", GN_F64, {a, HostTensor::zeros({3, 2}, GN_F64)}, {HostTensor::zeros({2, 3}, GN_F64)},
                  {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // wrong output shape
  EXPECT_CODE(run("matmul", GN_F64, {HostTensor::zeros({2, 2, 3}, GN_F64), HostTensor::zeros({3, 3, 2}, GN_F64)},
                  {HostTensor::zeros({3, 2, 2}, GN_F64)}, {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // batch 2 vs 3
  EXPECT_CODE(run("matmul", GN_F64, {HostTensor::scalar(1, GN_F64), HostTensor::zeros({3}, GN_F64)},
                  {HostTensor::zeros({3}, GN_F64)}, {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // 0-d operand
}

// ----------------------------------------------------------------------------
// bmm

TEST(LinalgRef, BmmMatchesNaiveLoopWithTransFlags) {
  uint64_t seed = 40;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Shape as = ta ? Shape{3, 4, 2} : Shape{3, 2, 4}, bs = tb ? Shape{3, 5, 4} : Shape{3, 4, 5};
      std::vector<double> av = rand_values(24, seed++), bv = rand_values(60, seed++);
      Result want = naive_matmul(av, as, bv, bs, ta, tb);
      ASSERT_EQ(want.shape, (Shape{3, 2, 5}));
      HostTensor y = HostTensor::zeros({3, 2, 5}, GN_F64);
      ASSERT_OK(run("bmm", GN_F64, {HostTensor::of(av, as, GN_F64), HostTensor::strided_of(bv, bs, GN_F64)}, {y},
                    {ai(ta), ai(tb)}));
      expect_values(y, want.v, 1e-12);
    }
  // batch 0 and size-1 dims
  ASSERT_OK(run("bmm", GN_F64, {HostTensor::zeros({0, 2, 3}, GN_F64), HostTensor::zeros({0, 3, 4}, GN_F64)},
                {HostTensor::zeros({0, 2, 4}, GN_F64)}, {ai(0), ai(0)}));
  HostTensor y = HostTensor::zeros({1, 1, 1}, GN_F32);
  ASSERT_OK(run("bmm", GN_F32, {HostTensor::of({3}, {1, 1, 1}, GN_F32), HostTensor::of({-2}, {1, 1, 1}, GN_F32)}, {y},
                {ai(0), ai(0)}));
  expect_values(y, {-6});
}

TEST(LinalgRef, BmmRejectsBadShapes) {
  EXPECT_CODE(run("bmm", GN_F64, {HostTensor::zeros({2, 2, 3}, GN_F64), HostTensor::zeros({3, 3, 2}, GN_F64)},
                  {HostTensor::zeros({2, 2, 2}, GN_F64)}, {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // batch sizes differ (no broadcasting in bmm)
  EXPECT_CODE(run("bmm", GN_F64, {HostTensor::zeros({2, 3}, GN_F64), HostTensor::zeros({3, 2}, GN_F64)},
                  {HostTensor::zeros({2, 2}, GN_F64)}, {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // not 3-D
  EXPECT_CODE(run("bmm", GN_F64, {HostTensor::zeros({2, 2, 3}, GN_F64), HostTensor::zeros({2, 4, 2}, GN_F64)},
                  {HostTensor::zeros({2, 2, 2}, GN_F64)}, {ai(0), ai(0)}),
              GN_ERR_SHAPE);  // inner dims differ
}
