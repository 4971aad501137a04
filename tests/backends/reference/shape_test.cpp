// shape_test.cpp - cat, stack, triu/tril: hand-computed results.
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

using namespace reftest;

TEST(ReferenceShape, Cat) {
  HostTensor a = HostTensor::of({1, 2}, {1, 2}, GN_F32), b = HostTensor::of({3, 4, 5, 6}, {2, 2}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("cat", GN_F32, {a, b}, {y}, {ai(0)}));
  expect_values(y, {1, 2, 3, 4, 5, 6});
  // dim -1, a transposed input, an int32 input converted into f32, a legacy (0,) input skipped.
  HostTensor c = HostTensor::of({7, 8}, {2, 1}, GN_I32);
  HostTensor z = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("cat", GN_F32, {b.transposed(0, 1), HostTensor::zeros({0}, GN_F32), c}, {z}, {ai(-1)}));
  expect_values(z, {3, 5, 7, 4, 6, 8});
  HostTensor bad = HostTensor::zeros({4, 2}, GN_F32);
  EXPECT_CODE(run("cat", GN_F32, {a, b}, {bad}, {ai(0)}), GN_ERR_SHAPE);
}

TEST(ReferenceShape, Stack) {
  HostTensor a = HostTensor::of({1, 2, 3}, {3}, GN_F64), b = HostTensor::of({4, 5, 6}, {3}, GN_F64);
  HostTensor y0 = HostTensor::zeros({2, 3}, GN_F64), y1 = HostTensor::zeros({3, 2}, GN_F64);
  ASSERT_OK(run("stack", GN_F64, {a, b}, {y0}, {ai(0)}));
  expect_values(y0, {1, 2, 3, 4, 5, 6});
  ASSERT_OK(run("stack", GN_F64, {a, b}, {y1}, {ai(-1)}));
  expect_values(y1, {1, 4, 2, 5, 3, 6});
  HostTensor s = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("stack", GN_F64, {HostTensor::scalar(7, GN_F64), HostTensor::scalar(8, GN_F64)}, {s}, {ai(0)}));
  expect_values(s, {7, 8});
}

// ----------------------------------------------------------------------------
// triu, tril, one_hot

TEST(ReferenceShape, TriuTril) {
  std::vector<double> v;
  for (int i = 1; i <= 12; ++i) v.push_back(i);
  HostTensor x = HostTensor::of(v, {3, 4}, GN_F32), y = HostTensor::zeros({3, 4}, GN_F32);
  ASSERT_OK(run("triu", GN_F32, {x}, {y}, {ai(0)}));
  expect_values(y, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  ASSERT_OK(run("triu", GN_F32, {x}, {y}, {ai(1)}));
  expect_values(y, {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  ASSERT_OK(run("tril", GN_F32, {x}, {y}, {ai(0)}));
  expect_values(y, {1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  ASSERT_OK(run("tril", GN_F32, {x}, {y}, {ai(-1)}));
  expect_values(y, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  // batched and transposed: (2,2,2) with the last two dims swapped
  HostTensor b =
      HostTensor::of({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, GN_I64).transposed(1, 2);  // [[1,3],[2,4]], [[5,7],[6,8]]
  HostTensor yb = HostTensor::zeros({2, 2, 2}, GN_I64);
  ASSERT_OK(run("triu", GN_I64, {b}, {yb}, {ai(0)}));
  expect_ints(yb, {1, 3, 0, 4, 5, 7, 0, 8});
  EXPECT_CODE(run("tril", GN_F32, {HostTensor::of({1, 2}, {2}, GN_F32)}, {HostTensor::zeros({2}, GN_F32)}, {ai(0)}),
              GN_ERR_SHAPE);
}
