// cumulative_test.cpp - cumsum, cumprod, logcumsumexp, cummax, cummin of the reference: reverse,
// strided views, int64 wrapping, infinities, ties and NaN; searchsorted's torch comparisons and
// scatter_reduce's include_self and integer mean.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
// attrs of cumsum/cumprod/logcumsumexp: dim, dtype (none), reverse
std::vector<Attr> scan_attrs(int64_t dim, int64_t reverse) { return {ai(dim), ai(GN_DIM_NONE), ai(reverse)}; }
}  // namespace

TEST(ReferenceCumulative, SumAndProductBothWays) {
  HostTensor x = HostTensor::of({1, 2, 3, 4}, {4}, GN_F32), y = HostTensor::zeros({4}, GN_F32);
  ASSERT_OK(run("cumsum", GN_F32, {x}, {y}, scan_attrs(0, 0)));
  expect_values(y, {1, 3, 6, 10});
  ASSERT_OK(run("cumsum", GN_F32, {x}, {y}, scan_attrs(-1, 1)));
  expect_values(y, {10, 9, 7, 4});
  ASSERT_OK(run("cumprod", GN_F32, {x}, {y}, scan_attrs(0, 1)));
  expect_values(y, {24, 24, 12, 4});
  // along dim 0 of a transposed view: x.T = [[1,3],[2,4]]
  HostTensor m = HostTensor::of({1, 2, 3, 4}, {2, 2}, GN_F64), o = HostTensor::zeros({2, 2}, GN_F64);
  ASSERT_OK(run("cumsum", GN_F64, {m.transposed(0, 1)}, {o}, scan_attrs(0, 0)));
  expect_values(o, {1, 3, 3, 7});
}

TEST(ReferenceCumulative, IntegersWrapAsInt64) {
  const int64_t big = int64_t(1) << 62;
  HostTensor x = HostTensor::of_ints({big, 4, 3}, {3}, GN_I64), y = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("cumprod", GN_I64, {x}, {y}, scan_attrs(0, 0)));
  expect_ints(y, {big, 0, 0});  // 2^64 wraps to 0
  ASSERT_OK(run("cumsum", GN_I64, {x}, {y}, scan_attrs(0, 0)));
  expect_ints(y, {big, big + 4, big + 7});
}

TEST(ReferenceCumulative, LogCumSumExpInfinities) {
  HostTensor x = HostTensor::of({-kInf, -kInf, 0, 0, kInf}, {5}, GN_F64), y = HostTensor::zeros({5}, GN_F64);
  ASSERT_OK(run("logcumsumexp", GN_F64, {x}, {y}, scan_attrs(0, 0)));
  expect_values(y, {-kInf, -kInf, 0, std::log(2.0), kInf}, 1e-15);
}

TEST(ReferenceCumulative, ExtremesTiesAndNan) {
  HostTensor x = HostTensor::of({1, 3, 3, 2, kNan, 5}, {6}, GN_F32);
  HostTensor v = HostTensor::zeros({6}, GN_F32), i = HostTensor::zeros({6}, GN_I64);
  ASSERT_OK(run("cummax", GN_F32, {x}, {v, i}, {ai(0)}));
  expect_values(v, {1, 3, 3, 3, kNan, kNan});
  expect_ints(i, {0, 1, 2, 2, 4, 4});  // ties take the later index; a NaN stays
  ASSERT_OK(run("cummin", GN_F32, {x}, {v, i}, {ai(0)}));
  expect_values(v, {1, 1, 1, 1, kNan, kNan});
  expect_ints(i, {0, 0, 0, 0, 4, 4});
}

TEST(ReferenceSearchsorted, TorchComparisons) {
  HostTensor s = HostTensor::of({1, 2, 2, 3}, {4}, GN_F64), v = HostTensor::of({2, 0, 5, kNan}, {4}, GN_F64);
  HostTensor o = HostTensor::zeros({4}, GN_I64);
  ASSERT_OK(run("searchsorted", GN_F64, {s, v}, {o}, {ai(0), ai(0)}));
  expect_ints(o, {1, 0, 4, 4});
  ASSERT_OK(run("searchsorted", GN_F64, {s, v}, {o}, {ai(1), ai(0)}));
  expect_ints(o, {3, 0, 4, 4});
  // one sorted row per row of values
  HostTensor s2 = HostTensor::of({1, 2, 3, 10, 20, 30}, {2, 3}, GN_F32), v2 = HostTensor::of({2.5, 15}, {2, 1}, GN_F32);
  HostTensor o2 = HostTensor::zeros({2, 1}, GN_I32);
  ASSERT_OK(run("searchsorted", GN_F32, {s2, v2}, {o2}, {ai(0), ai(1)}));
  expect_ints(o2, {2, 1});
}

TEST(ReferenceScatterReduce, IncludeSelfAndIntegerMean) {
  HostTensor x = HostTensor::of_ints({10, 20, 30, 40}, {4}, GN_I64),
             idx = HostTensor::of_ints({0, 1, 0, 1, 2}, {5}, GN_I64);
  HostTensor src = HostTensor::of_ints({1, 2, 4, 7, 9}, {5}, GN_I64), o = HostTensor::zeros({4}, GN_I64);
  ASSERT_OK(run("scatter_reduce", GN_I64, {x, idx, src}, {o}, {ai(0), ai(2), ai(1)}));
  expect_ints(o, {5, 9, 19, 40});  // floor((10+1+4)/3), floor((20+2+7)/3), floor((30+9)/2)
  ASSERT_OK(run("scatter_reduce", GN_I64, {x, idx, src}, {o}, {ai(0), ai(2), ai(0)}));
  expect_ints(o, {2, 4, 9, 40});
  ASSERT_OK(run("scatter_reduce", GN_I64, {x, idx, src}, {o}, {ai(0), ai(4), ai(0)}));
  expect_ints(o, {1, 2, 9, 40});
  HostTensor f = HostTensor::of({1, 2}, {2}, GN_F32), fi = HostTensor::of_ints({0, 0}, {2}, GN_I64);
  HostTensor fs = HostTensor::of({kNan, 5}, {2}, GN_F32), fo = HostTensor::zeros({2}, GN_F32);
  ASSERT_OK(run("scatter_reduce", GN_F32, {f, fi, fs}, {fo}, {ai(0), ai(3), ai(1)}));
  expect_values(fo, {kNan, 2});  // a NaN propagates
  EXPECT_EQ(code(run("scatter_reduce", GN_F32, {f, fi, fs}, {fo}, {ai(0), ai(7), ai(1)})), GN_ERR_INVALID_ARGUMENT);
}
