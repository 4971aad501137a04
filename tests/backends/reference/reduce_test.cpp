// reduce_test.cpp - sum mean prod max min argmax argmin var std logsumexp
// norm against loops written here, hand-computed values and closed forms.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const int64_t kNone = GN_DIM_NONE;

std::vector<double> iota(int n, double start = 0.0) {
  std::vector<double> v((size_t)n);
  for (int i = 0; i < n; ++i) v[(size_t)i] = start + i;
  return v;
}

// x (2,3,4) = 0..23: sums over each choice of dims, written out by hand loops.
double x234(int i, int j, int k) { return i * 12 + j * 4 + k; }

}  // namespace

// ----------------------------------------------------------------------------
// sum / mean / prod

TEST(ReferenceReduce, SumOverDims) {
  HostTensor x = HostTensor::of(iota(24), {2, 3, 4}, GN_F32);
  HostTensor all = HostTensor::zeros({}, GN_F32);
  ASSERT_OK(run("sum", GN_F32, {x}, {all}, {aints({}), ai(0), ai(kNone)}));
  expect_values(all, {276});  // 0 + ... + 23
  // dim 1 -> (2,4)
  HostTensor d1 = HostTensor::zeros({2, 4}, GN_F32);
  ASSERT_OK(run("sum", GN_F32, {x}, {d1}, {aints({1}), ai(0), ai(kNone)}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) want.push_back(x234(i, 0, k) + x234(i, 1, k) + x234(i, 2, k));
  expect_values(d1, want);
  // dims (0, -1), keepdim -> (1,3,1)
  HostTensor d02 = HostTensor::zeros({1, 3, 1}, GN_F32);
  ASSERT_OK(run("sum", GN_F32, {x}, {d02}, {aints({0, -1}), ai(1), ai(kNone)}));
  want.clear();
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += x234(i, j, k);
    want.push_back(s);
  }
  expect_values(d02, want);
  // the same on a transposed view (4,3,2): dim 1 is still j
  HostTensor xt = x.transposed(0, 2);
  HostTensor t = HostTensor::zeros({4, 2}, GN_F32);
  ASSERT_OK(run("sum", GN_F32, {xt}, {t}, {aints({1}), ai(0), ai(kNone)}));
  want.clear();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i) want.push_back(x234(i, 0, k) + x234(i, 1, k) + x234(i, 2, k));
  expect_values(t, want);
  EXPECT_CODE(run("sum", GN_F32, {x}, {all}, {aints({3}), ai(0), ai(kNone)}), GN_ERR_INDEX);
  EXPECT_CODE(run("sum", GN_F32, {x}, {d1}, {aints({1, -2}), ai(0), ai(kNone)}), GN_ERR_INVALID_ARGUMENT);
}

TEST(ReferenceReduce, MeanAndProd) {
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F64);
  HostTensor r = HostTensor::zeros({2}, GN_F64), c = HostTensor::zeros({3}, GN_F64);
  ASSERT_OK(run("mean", GN_F64, {x}, {r}, {aints({1}), ai(0), ai(kNone)}));
  expect_values(r, {2, 5});
  ASSERT_OK(run("prod", GN_F64, {x}, {c}, {aints({0}), ai(0), ai(kNone)}));
  expect_values(c, {4, 10, 18});
  ASSERT_OK(run("prod", GN_F64, {x}, {r}, {aints({-1}), ai(0), ai(kNone)}));
  expect_values(r, {6, 120});
}

TEST(ReferenceReduce, DoubleAccumulation) {
  // 4096 bf16 ones sum to 4096 (a bf16 accumulator would stall at 256).
  HostTensor ones = HostTensor::of(std::vector<double>(4096, 1.0), {4096}, GN_BF16);
  HostTensor s = HostTensor::zeros({}, GN_BF16);
  ASSERT_OK(run("sum", GN_BF16, {ones}, {s}, {aints({}), ai(0), ai(kNone)}));
  expect_values(s, {4096});
  // 1 + 1000 * 1e-10: the small terms survive.
  std::vector<double> v(1001, 1e-10);
  v[0] = 1.0;
  HostTensor x = HostTensor::of(v, {1001}, GN_F64);
  HostTensor m = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("sum", GN_F64, {x}, {m}, {aints({}), ai(0), ai(GN_F64)}));
  expect_values(m, {1.0 + 1e-7}, 1e-13);
}

TEST(ReferenceReduce, IntegerSumsAreExact) {
  const int64_t big = int64_t(1) << 53;
  HostTensor x = HostTensor::of_ints({big, 1, 1, -3, 3}, {5}, GN_I64);
  HostTensor s = HostTensor::zeros({}, GN_I64);
  ASSERT_OK(run("sum", GN_I64, {x}, {s}, {aints({}), ai(0), ai(kNone)}));
  expect_ints(s, {big + 2});  // in double: 2^53 + 1 + 1 = 2^53
  ASSERT_OK(
      run("prod", GN_I64, {HostTensor::of_ints({big + 1, 1, 1}, {3}, GN_I64)}, {s}, {aints({}), ai(0), ai(kNone)}));
  expect_ints(s, {big + 1});
  // int32 and bool inputs sum into int64 without overflow.
  HostTensor i32 = HostTensor::of_ints({2147483647, 2147483647}, {2}, GN_I32);
  ASSERT_OK(run("sum", GN_I32, {i32}, {s}, {aints({}), ai(0), ai(kNone)}));
  expect_ints(s, {4294967294});
  HostTensor b = HostTensor::of_ints({1, 0, 1, 1}, {2, 2}, GN_BOOL);
  HostTensor bs = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("sum", GN_BOOL, {b}, {bs}, {aints({1}), ai(0), ai(kNone)}));
  expect_ints(bs, {1, 2});
}

TEST(ReferenceReduce, EmptyAndZeroDim) {
  HostTensor e = HostTensor::zeros({0, 3}, GN_F32);
  HostTensor c = HostTensor::zeros({3}, GN_F32);
  ASSERT_OK(run("sum", GN_F32, {e}, {c}, {aints({0}), ai(0), ai(kNone)}));
  expect_values(c, {0, 0, 0});
  ASSERT_OK(run("prod", GN_F32, {e}, {c}, {aints({0}), ai(0), ai(kNone)}));
  expect_values(c, {1, 1, 1});
  ASSERT_OK(run("mean", GN_F32, {e}, {c}, {aints({0}), ai(0), ai(kNone)}));
  expect_values(c, {kNan, kNan, kNan});
  ASSERT_OK(run("logsumexp", GN_F32, {e}, {c}, {aints({0}), ai(0)}));
  expect_values(c, {-kInf, -kInf, -kInf});
  EXPECT_CODE(run("max", GN_F32, {e}, {c}, {aints({0}), ai(0)}), GN_ERR_INVALID_ARGUMENT);
  EXPECT_CODE(run("argmax", GN_F32, {e}, {c}, {ai(0), ai(0)}), GN_ERR_INVALID_ARGUMENT);
  HostTensor r = HostTensor::zeros({0}, GN_F32);  // reducing the non-empty dim is fine
  EXPECT_OK(run("max", GN_F32, {e}, {r}, {aints({1}), ai(0)}));
  HostTensor s = HostTensor::scalar(2.5, GN_F64), y = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("sum", GN_F64, {s}, {y}, {aints({}), ai(0), ai(kNone)}));
  expect_values(y, {2.5});
  ASSERT_OK(run("max", GN_F64, {s}, {y}, {aints({-1}), ai(1)}));
  expect_values(y, {2.5});
  ASSERT_OK(run("std", GN_F64, {s}, {y}, {aints({0}), af(0), ai(0)}));
  expect_values(y, {0});
}

// ----------------------------------------------------------------------------
// max / min / argmax / argmin

TEST(ReferenceReduce, MaxMinPropagateNanAndAreExact) {
  HostTensor x = HostTensor::of({1, 5, kNan, -2, 7, 3}, {2, 3}, GN_F32);
  HostTensor r = HostTensor::zeros({2}, GN_F32);
  ASSERT_OK(run("max", GN_F32, {x}, {r}, {aints({1}), ai(0)}));
  expect_values(r, {kNan, 7});
  ASSERT_OK(run("min", GN_F32, {x}, {r}, {aints({1}), ai(0)}));
  expect_values(r, {kNan, -2});
  const int64_t big = (int64_t(1) << 60) + 1;
  HostTensor xi = HostTensor::of_ints({big - 1, big, big - 2}, {3}, GN_I64), s = HostTensor::zeros({}, GN_I64);
  ASSERT_OK(run("max", GN_I64, {xi}, {s}, {aints({}), ai(0)}));
  expect_ints(s, {big});
  ASSERT_OK(run("min", GN_I64, {xi}, {s}, {aints({}), ai(0)}));
  expect_ints(s, {big - 2});
}

TEST(ReferenceReduce, ArgmaxFirstOccurrenceAndNan) {
  HostTensor x = HostTensor::of({1, 3, 3, 2}, {4}, GN_F32), i = HostTensor::zeros({}, GN_I64);
  ASSERT_OK(run("argmax", GN_F32, {x}, {i}, {ai(kNone), ai(0)}));
  expect_ints(i, {1});
  ASSERT_OK(run("argmin", GN_F32, {HostTensor::of({2, 1, 5, 1}, {4}, GN_F32)}, {i}, {ai(kNone), ai(0)}));
  expect_ints(i, {1});
  HostTensor n = HostTensor::of({1, kNan, 5, kNan}, {4}, GN_F64);
  ASSERT_OK(run("argmax", GN_F64, {n}, {i}, {ai(0), ai(0)}));
  expect_ints(i, {1});  // NaN counts as the max
  ASSERT_OK(run("argmin", GN_F64, {n}, {i}, {ai(0), ai(0)}));
  expect_ints(i, {1});  // ... and as the min
  // (2,3): flattened index, per-row and per-column with keepdim.
  HostTensor m = HostTensor::of({4, 9, 1, 9, 0, 2}, {2, 3}, GN_F32);
  ASSERT_OK(run("argmax", GN_F32, {m}, {i}, {ai(kNone), ai(0)}));
  expect_ints(i, {1});
  HostTensor rows = HostTensor::zeros({2, 1}, GN_I64), cols = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("argmax", GN_F32, {m}, {rows}, {ai(-1), ai(1)}));
  expect_ints(rows, {1, 0});
  ASSERT_OK(run("argmin", GN_F32, {m}, {cols}, {ai(0), ai(0)}));
  expect_ints(cols, {0, 1, 0});
  // On a transposed view: argmax over dim 0 of m.T (3,2) = per-row of m.
  HostTensor tr = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("argmax", GN_F32, {m.transposed(0, 1)}, {tr}, {ai(0), ai(0)}));
  expect_ints(tr, {1, 0});
  // int64 values that collide as doubles.
  const int64_t big = (int64_t(1) << 60) + 1;
  ASSERT_OK(
      run("argmax", GN_I64, {HostTensor::of_ints({big - 1, big, big - 1}, {3}, GN_I64)}, {i}, {ai(kNone), ai(0)}));
  expect_ints(i, {1});
}

// ----------------------------------------------------------------------------
// var / std / logsumexp / norm

TEST(ReferenceReduce, VarStd) {
  HostTensor x = HostTensor::of({1, 2, 3, 4}, {4}, GN_F64), s = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("var", GN_F64, {x}, {s}, {aints({}), af(1), ai(0)}));
  expect_values(s, {5.0 / 3.0}, 1e-15);
  ASSERT_OK(run("var", GN_F64, {x}, {s}, {aints({}), af(0), ai(0)}));
  expect_values(s, {1.25}, 1e-15);
  ASSERT_OK(run("std", GN_F64, {x}, {s}, {aints({0}), af(1), ai(0)}));
  expect_values(s, {std::sqrt(5.0 / 3.0)}, 1e-15);
  ASSERT_OK(run("var", GN_F64, {HostTensor::of({3}, {1}, GN_F64)}, {s}, {aints({}), af(1), ai(0)}));
  expect_values(s, {kNan});  // N - correction = 0
  // Per row of (2,3), f32.
  HostTensor m = HostTensor::of({1, 2, 6, -1, -1, -1}, {2, 3}, GN_F32), r = HostTensor::zeros({2, 1}, GN_F32);
  ASSERT_OK(run("var", GN_F32, {m}, {r}, {aints({1}), af(1), ai(1)}));
  expect_values(r, {round_to(7.0, GN_F32), 0});  // mean 3: (4 + 1 + 9) / 2 = 7
}

TEST(ReferenceReduce, LogSumExp) {
  HostTensor x = HostTensor::of({1, 2, 3}, {3}, GN_F64), s = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("logsumexp", GN_F64, {x}, {s}, {aints({}), ai(0)}));
  expect_values(s, {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))}, 1e-15);
  ASSERT_OK(run("logsumexp", GN_F64, {HostTensor::of({1000, 1000}, {2}, GN_F64)}, {s}, {aints({}), ai(0)}));
  expect_values(s, {1000 + std::log(2.0)}, 1e-15);  // stable
  ASSERT_OK(run("logsumexp", GN_F64, {HostTensor::of({-kInf, -kInf}, {2}, GN_F64)}, {s}, {aints({}), ai(0)}));
  expect_values(s, {-kInf});
  ASSERT_OK(run("logsumexp", GN_F64, {HostTensor::of({1, kInf}, {2}, GN_F64)}, {s}, {aints({}), ai(0)}));
  expect_values(s, {kInf});
  ASSERT_OK(run("logsumexp", GN_F64, {HostTensor::of({1, kNan}, {2}, GN_F64)}, {s}, {aints({}), ai(0)}));
  expect_values(s, {kNan});
}

TEST(ReferenceReduce, Norm) {
  HostTensor x = HostTensor::of({3, -4, 0}, {3}, GN_F64), s = HostTensor::zeros({}, GN_F64);
  struct Case {
    double p, want;
  } cases[] = {{2, 5}, {1, 7}, {kInf, 4}, {-kInf, 0}, {0, 2}, {3, std::cbrt(27.0 + 64.0)}};
  for (const Case& c : cases) {
    ASSERT_OK(run("norm", GN_F64, {x}, {s}, {af(c.p), aints({}), ai(0)}));
    SCOPED_TRACE(c.p);
    expect_values(s, {c.want}, 1e-15);
  }
  HostTensor m = HostTensor::of({3, 4, 6, 8}, {2, 2}, GN_F32), r = HostTensor::zeros({2}, GN_F32);
  ASSERT_OK(run("norm", GN_F32, {m}, {r}, {af(2), aints({1}), ai(0)}));
  expect_values(r, {5, 10});
}
