// sort_test.cpp - sort, argsort, topk: stability, NaN as the largest value,
// exact int64 order, dims and strides; a large case against std::stable_sort.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// attrs of sort/argsort: dim, descending, stable
std::vector<Attr> sort_attrs(int64_t dim, int64_t descending) { return {ai(dim), ai(descending), ai(1)}; }

}  // namespace

TEST(ReferenceSort, StableBothDirections) {
  HostTensor x = HostTensor::of({3, 1, 2, 1}, {4}, GN_F32);
  HostTensor v = HostTensor::zeros({4}, GN_F32), i = HostTensor::zeros({4}, GN_I64);
  ASSERT_OK(run("sort", GN_F32, {x}, {v, i}, sort_attrs(-1, 0)));
  expect_values(v, {1, 1, 2, 3});
  expect_ints(i, {1, 3, 2, 0});
  ASSERT_OK(run("sort", GN_F32, {x}, {v, i}, sort_attrs(0, 1)));
  expect_values(v, {3, 2, 1, 1});
  expect_ints(i, {0, 2, 1, 3});  // equal values keep their order when descending too
  ASSERT_OK(run("argsort", GN_F32, {x}, {i}, sort_attrs(0, 0)));
  expect_ints(i, {1, 3, 2, 0});
}

TEST(ReferenceSort, NanSortsAsLargest) {
  HostTensor x = HostTensor::of({kNan, 1, -kInf, kNan, 0}, {5}, GN_F64);
  HostTensor v = HostTensor::zeros({5}, GN_F64), i = HostTensor::zeros({5}, GN_I64);
  ASSERT_OK(run("sort", GN_F64, {x}, {v, i}, sort_attrs(0, 0)));
  expect_values(v, {-kInf, 0, 1, kNan, kNan});
  expect_ints(i, {2, 4, 1, 0, 3});
  ASSERT_OK(run("sort", GN_F64, {x}, {v, i}, sort_attrs(0, 1)));
  expect_values(v, {kNan, kNan, 1, 0, -kInf});
  expect_ints(i, {0, 3, 1, 4, 2});
}

TEST(ReferenceSort, DimsStridesAndInts) {
  // x (2,3) = [[3,1,2],[0,5,4]]; sort along dim 0 and along dim 1 of x.T.
  HostTensor x = HostTensor::of({3, 1, 2, 0, 5, 4}, {2, 3}, GN_F32);
  HostTensor v = HostTensor::zeros({2, 3}, GN_F32), i = HostTensor::zeros({2, 3}, GN_I64);
  ASSERT_OK(run("sort", GN_F32, {x}, {v, i}, sort_attrs(0, 0)));
  expect_values(v, {0, 1, 2, 3, 5, 4});
  expect_ints(i, {1, 0, 0, 0, 1, 1});
  HostTensor vt = HostTensor::zeros({3, 2}, GN_F32), it = HostTensor::zeros({3, 2}, GN_I64);
  ASSERT_OK(run("sort", GN_F32, {x.transposed(0, 1)}, {vt, it}, sort_attrs(1, 1)));  // rows [3,0],[1,5],[2,4]
  expect_values(vt, {3, 0, 5, 1, 4, 2});
  expect_ints(it, {0, 1, 1, 0, 1, 0});
  const int64_t big = (int64_t(1) << 60) + 1;
  HostTensor xi = HostTensor::of_ints({big, big - 1, big + 1}, {3}, GN_I64);
  HostTensor vi = HostTensor::zeros({3}, GN_I64), ii = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("sort", GN_I64, {xi}, {vi, ii}, sort_attrs(0, 0)));
  expect_ints(vi, {big - 1, big, big + 1});
  expect_ints(ii, {1, 0, 2});
  HostTensor s = HostTensor::scalar(4, GN_F32), sv = HostTensor::zeros({}, GN_F32), si = HostTensor::zeros({}, GN_I64);
  ASSERT_OK(run("sort", GN_F32, {s}, {sv, si}, sort_attrs(0, 0)));
  expect_values(sv, {4});
  expect_ints(si, {0});
}

TEST(ReferenceSort, ManyDuplicatesMatchStableSort) {
  const int n = 1000;
  std::vector<double> vals(n);
  uint32_t state = 12345;
  for (double& d : vals) {
    state = state * 1664525u + 1013904223u;
    d = (double)((state >> 16) % 10);
  }
  for (int64_t desc : {0, 1}) {
    std::vector<int64_t> want(n);
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
      return desc ? vals[(size_t)a] > vals[(size_t)b] : vals[(size_t)a] < vals[(size_t)b];
    });
    HostTensor x = HostTensor::of(vals, {n}, GN_BF16), i = HostTensor::zeros({n}, GN_I64);
    ASSERT_OK(run("argsort", GN_BF16, {x}, {i}, sort_attrs(0, desc)));
    expect_ints(i, want);
  }
}

TEST(ReferenceSort, TopK) {
  HostTensor x = HostTensor::of({1, 5, 3, 5, 2}, {5}, GN_F32);
  HostTensor v = HostTensor::zeros({2}, GN_F32), i = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("topk", GN_F32, {x}, {v, i}, {ai(2), ai(-1), ai(1), ai(1)}));
  expect_values(v, {5, 5});
  expect_ints(i, {1, 3});  // ties: lower index first
  ASSERT_OK(run("topk", GN_F32, {x}, {v, i}, {ai(2), ai(0), ai(0), ai(1)}));
  expect_values(v, {1, 2});
  expect_ints(i, {0, 4});
  // rows of (2,3), k = 1, with a NaN (the largest)
  HostTensor m = HostTensor::of({1, kNan, 2, 7, 8, 6}, {2, 3}, GN_F64);
  HostTensor mv = HostTensor::zeros({2, 1}, GN_F64), mi = HostTensor::zeros({2, 1}, GN_I64);
  ASSERT_OK(run("topk", GN_F64, {m}, {mv, mi}, {ai(1), ai(1), ai(1), ai(1)}));
  expect_values(mv, {kNan, 8});
  expect_ints(mi, {1, 1});
  HostTensor ev = HostTensor::zeros({0}, GN_F32), ei = HostTensor::zeros({0}, GN_I64);
  EXPECT_OK(run("topk", GN_F32, {x}, {ev, ei}, {ai(0), ai(0), ai(1), ai(1)}));
  HostTensor bv = HostTensor::zeros({6}, GN_F32), bi = HostTensor::zeros({6}, GN_I64);
  EXPECT_CODE(run("topk", GN_F32, {x}, {bv, bi}, {ai(6), ai(0), ai(1), ai(1)}), GN_ERR_INVALID_ARGUMENT);
}
