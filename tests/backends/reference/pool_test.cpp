// pool_test.cpp - max_pool2d / avg_pool2d (padding, dilation, ceil_mode,
// count_include_pad) against hand values and torch fixtures; their backward
// ops against central finite differences.
#include <cmath>
#include <limits>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

// ((i*7919) % 101 - 50) / 8: distinct values, exact in float32.
std::vector<double> fixture_values(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((double)((i * 7919) % 101 - 50) / 8.0);
  return v;
}

std::vector<HostTensor> max_fwd(const std::vector<HostTensor>& in, const Shape& ys, const std::vector<Attr>& a) {
  std::vector<HostTensor> out = {HostTensor::zeros(ys, GN_F64), HostTensor::zeros(ys, GN_I64)};
  EXPECT_OK(run("max_pool2d", GN_F64, in, out, a));
  return out;
}

std::vector<HostTensor> avg_fwd(const std::vector<HostTensor>& in, const Shape& ys, const std::vector<Attr>& a) {
  std::vector<HostTensor> out = {HostTensor::zeros(ys, GN_F64)};
  EXPECT_OK(run("avg_pool2d", GN_F64, in, out, a));
  return out;
}

// max_pool2d attrs: kernel, stride, padding, dilation, ceil_mode
std::vector<Attr> max_attrs(Shape k, Shape s, Shape p, Shape d, int ceil) {
  return {aints(k), aints(s), aints(p), aints(d), ai(ceil)};
}
// avg_pool2d attrs: kernel, stride, padding, ceil_mode, count_include_pad
std::vector<Attr> avg_attrs(Shape k, Shape s, Shape p, int ceil, int cip) {
  return {aints(k), aints(s), aints(p), ai(ceil), ai(cip)};
}

}  // namespace

// ----------------------------------------------------------------------------
// max_pool2d

TEST(PoolRef, MaxPoolHandComputed) {
  std::vector<double> x;
  for (int i = 1; i <= 16; ++i) x.push_back(i);
  for (int32_t dt : {GN_F64, GN_F32, GN_F16, GN_BF16}) {
    HostTensor y = HostTensor::zeros({1, 1, 2, 2}, dt), idx = HostTensor::zeros({1, 1, 2, 2}, GN_I64);
    // stride [] = kernel; a length-1 list means both dims
    ASSERT_OK(run("max_pool2d", dt, {HostTensor::of(x, {1, 1, 4, 4}, dt)}, {y, idx}, max_attrs({2}, {}, {0}, {1}, 0)));
    expect_values(y, {6, 8, 14, 16});
    expect_ints(idx, {5, 7, 13, 15});
  }
  // ties keep the first position; NaN wins and propagates
  HostTensor t = HostTensor::of({2, 2, 2, 2, 1, NAN, 3, 4}, {2, 2, 2}, GN_F64);  // (C,H,W) input
  HostTensor y = HostTensor::zeros({2, 1, 1}, GN_F64), idx = HostTensor::zeros({2, 1, 1}, GN_I64);
  ASSERT_OK(run("max_pool2d", GN_F64, {t}, {y, idx}, max_attrs({2, 2}, {2, 2}, {0, 0}, {1, 1}, 0)));
  expect_values(y, {2, NAN});
  expect_ints(idx, {0, 1});
  // padding is -inf: an all-negative plane still picks real elements
  HostTensor n = HostTensor::of({-5, -3, -4, -9}, {1, 1, 2, 2}, GN_F64);
  HostTensor yn = HostTensor::zeros({1, 1, 3, 3}, GN_F64), in_ = HostTensor::zeros({1, 1, 3, 3}, GN_I64);
  ASSERT_OK(run("max_pool2d", GN_F64, {n}, {yn, in_}, max_attrs({2}, {1}, {1}, {1}, 0)));
  expect_values(yn, {-5, -3, -3, -4, -3, -3, -4, -4, -9});
  expect_ints(in_, {0, 1, 1, 2, 1, 1, 2, 2, 3});
}

TEST(PoolRef, MaxPoolMatchesTorchFixtures) {
  // Generated with torch 1.13 (float64), x = fixture_values reshaped:
  //   F.max_pool2d(x (1,1,5,5), 2, 2, 0, 1, ceil_mode=True, return_indices=True)
  {
    HostTensor y = HostTensor::zeros({1, 1, 3, 3}, GN_F64), idx = HostTensor::zeros({1, 1, 3, 3}, GN_I64);
    ASSERT_OK(run("max_pool2d", GN_F64, {HostTensor::of(fixture_values(25), {1, 1, 5, 5}, GN_F64)}, {y, idx},
                  max_attrs({2}, {2}, {0}, {1}, 1)));
    expect_values(y, {-0.75, 4.375, 2.0, 0.0, 5.125, 2.75, 0.375, 5.5, 3.125});
    expect_ints(idx, {6, 7, 9, 16, 17, 19, 21, 22, 24});
  }
  //   F.max_pool2d(x (1,2,5,6), (3,2), (2,2), (1,1), (2,1), ceil_mode=True, return_indices=True)
  {
    HostTensor y = HostTensor::zeros({1, 2, 2, 4}, GN_F64), idx = HostTensor::zeros({1, 2, 2, 4}, GN_I64);
    ASSERT_OK(run("max_pool2d", GN_F64, {HostTensor::strided_of(fixture_values(60), {1, 2, 5, 6}, GN_F64)}, {y, idx},
                  max_attrs({3, 2}, {2, 2}, {1, 1}, {2, 1}, 1)));
    expect_values(y,
                  {-0.75, 4.375, 5.5, -0.375, -0.75, 4.375, 5.5, -0.375, 1.5, 5.0, 4.25, 1.875, 1.5, 5.0, 4.25, 1.875});
    expect_ints(idx, {6, 7, 22, 11, 6, 7, 22, 11, 6, 19, 9, 11, 6, 19, 9, 11});
  }
}

TEST(PoolRef, MaxPoolBackwardMatchesFiniteDifferences) {
  struct C {
    Shape x, y, k, s, p, d;
    int ceil;
  };
  const std::vector<C> cases = {
      {{2, 2, 5, 5}, {2, 2, 4, 4}, {2}, {1}, {0}, {1}, 0},        // overlapping windows accumulate
      {{1, 2, 5, 6}, {1, 2, 2, 4}, {3, 2}, {2}, {1}, {2, 1}, 1},  // padding, dilation, ceil
      {{1, 1, 7, 5}, {1, 1, 4, 3}, {3}, {2}, {1}, {1}, 1},
  };
  uint64_t seed = 1;
  for (const C& c : cases) {
    std::vector<Attr> a = max_attrs(c.k, c.s, c.p, c.d, c.ceil);
    std::vector<HostTensor> in = {rand_f64(c.x, seed++, -4, 4)};  // distinct values: max is differentiable
    std::vector<HostTensor> fwd = max_fwd(in, c.y, a);
    std::vector<double> g = rand_values(numel_of(c.y), seed++);
    HostTensor gx = HostTensor::zeros(c.x, GN_F64);
    ASSERT_OK(run("max_pool2d_backward", GN_F64, {HostTensor::of(g, c.y, GN_F64), in[0], fwd[1]}, {gx}, a));
    Forward f = [&](const std::vector<HostTensor>& i) { return max_fwd(i, c.y, a); };
    expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
  }
}

TEST(PoolRef, MaxPoolBadIndicesAndArguments) {
  HostTensor x = HostTensor::zeros({1, 1, 2, 2}, GN_F64), g = HostTensor::of({1}, {1, 1, 1, 1}, GN_F64);
  std::vector<Attr> a = max_attrs({2}, {}, {0}, {1}, 0);
  for (int64_t bad : {4, -1})
    EXPECT_CODE(run("max_pool2d_backward", GN_F64, {g, x, HostTensor::of_ints({bad}, {1, 1, 1, 1}, GN_I64)},
                    {HostTensor::zeros({1, 1, 2, 2}, GN_F64)}, a),
                GN_ERR_INDEX);
  std::vector<HostTensor> out = {HostTensor::zeros({1, 1, 2, 2}, GN_F64), HostTensor::zeros({1, 1, 2, 2}, GN_I64)};
  EXPECT_CODE(run("max_pool2d", GN_F64, {x}, out, max_attrs({2}, {1}, {2}, {1}, 0)),
              GN_ERR_INVALID_ARGUMENT);                                                              // pad > k/2
  EXPECT_CODE(run("max_pool2d", GN_F64, {x}, out, max_attrs({2}, {1}, {0}, {1}, 0)), GN_ERR_SHAPE);  // wrong output
  EXPECT_CODE(run("max_pool2d", GN_F64, {x}, out, max_attrs({2, 2, 2}, {1}, {0}, {1}, 0)), GN_ERR_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------------
// avg_pool2d

TEST(PoolRef, AvgPoolHandComputed) {
  // 3x3 input 1..9, kernel 2, stride 1, padding 1: corners see 1 element
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  HostTensor y = HostTensor::zeros({1, 1, 4, 4}, GN_F64);
  ASSERT_OK(run("avg_pool2d", GN_F64, {HostTensor::of(x, {1, 1, 3, 3}, GN_F64)}, {y}, avg_attrs({2}, {1}, {1}, 0, 1)));
  expect_values(y, {0.25, 0.75, 1.25, 0.75, 1.25, 3, 4, 2.25, 2.75, 6, 7, 3.75, 1.75, 3.75, 4.25, 2.25});
  ASSERT_OK(run("avg_pool2d", GN_F64, {HostTensor::of(x, {1, 1, 3, 3}, GN_F64)}, {y}, avg_attrs({2}, {1}, {1}, 0, 0)));
  expect_values(y, {1, 1.5, 2.5, 3, 2.5, 3, 4, 4.5, 5.5, 6, 7, 7.5, 7, 7.5, 8.5, 9});
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16}) {
    HostTensor yl = HostTensor::zeros({1, 1, 1}, dt);  // (C,H,W) input, stride [] = kernel
    ASSERT_OK(
        run("avg_pool2d", dt, {HostTensor::of({1, 2, 4, 8}, {1, 2, 2}, dt)}, {yl}, avg_attrs({2}, {}, {0}, 0, 1)));
    expect_values(yl, {3.75});
  }
}

TEST(PoolRef, AvgPoolDivisorRulesMatchTorch) {
  // Generated with torch 1.13 (float64), x = fixture_values reshaped; ceil_mode adds a
  // last window that hangs past the padded input: with count_include_pad the divisor
  // counts the padding but not the positions beyond it.
  //   F.avg_pool2d(x (1,1,5,5), 3, 2, 1, ceil_mode=True, count_include_pad=True / False)
  HostTensor x5 = HostTensor::of(fixture_values(25), {1, 1, 5, 5}, GN_F64);
  HostTensor y = HostTensor::zeros({1, 1, 3, 3}, GN_F64);
  ASSERT_OK(run("avg_pool2d", GN_F64, {x5}, {y}, avg_attrs({3}, {2}, {1}, 1, 1)));
  expect_values(y,
                {-1.5555555555555556, -0.013888888888888888, -0.3333333333333333, -1.9583333333333333,
                 0.5416666666666666, -0.125, -1.0555555555555556, 0.7361111111111112, 0.16666666666666666},
                1e-15);
  ASSERT_OK(run("avg_pool2d", GN_F64, {x5}, {y}, avg_attrs({3}, {2}, {1}, 1, 0)));
  expect_values(
      y, {-3.5, -0.020833333333333332, -0.75, -2.9375, 0.5416666666666666, -0.1875, -2.375, 1.1041666666666667, 0.375},
      1e-15);
  //   F.avg_pool2d(x (1,1,6,5), (3,2), (2,2), (1,1), ceil_mode=True, count_include_pad=True / False)
  HostTensor x6 = HostTensor::strided_of(fixture_values(30), {1, 1, 6, 5}, GN_F64);
  HostTensor y2 = HostTensor::zeros({1, 1, 4, 3}, GN_F64);
  ASSERT_OK(run("avg_pool2d", GN_F64, {x6}, {y2}, avg_attrs({3, 2}, {2, 2}, {1, 1}, 1, 1)));
  expect_values(y2,
                {-2.0208333333333335, 1.0833333333333333, -0.5, -2.75, 2.1875, -0.1875, -2.375, 2.9375, 0.5625,
                 -1.09375, 1.65625, 0.46875},
                1e-15);
  ASSERT_OK(run("avg_pool2d", GN_F64, {x6}, {y2}, avg_attrs({3, 2}, {2, 2}, {1, 1}, 1, 0)));
  expect_values(y2, {-6.0625, 1.625, -0.75, -5.5, 2.1875, -0.1875, -4.75, 2.9375, 0.5625, -4.375, 3.3125, 0.9375},
                1e-15);
  //   ... count_include_pad=True, backward of y.sum():
  HostTensor gx = HostTensor::zeros({1, 1, 6, 5}, GN_F64);
  ASSERT_OK(run("avg_pool2d_backward", GN_F64, {HostTensor::of(std::vector<double>(12, 1.0), {1, 1, 4, 3}, GN_F64), x6},
                {gx}, avg_attrs({3, 2}, {2, 2}, {1, 1}, 1, 1)));
  const double a = 1.0 / 6, b = 1.0 / 3, c = 0.41666666666666663;
  expect_values(gx, {a, a, a, a, a, b, b, b, b, b, a, a, a, a, a, b, b, b, b, b, a, a, a, a, a, c, c, c, c, c}, 1e-15);
}

TEST(PoolRef, AvgPoolBackwardMatchesFiniteDifferences) {
  struct C {
    Shape x, y, k, s, p;
    int ceil, cip;
  };
  const std::vector<C> cases = {
      {{2, 2, 5, 5}, {2, 2, 4, 4}, {2}, {1}, {0}, 0, 1},
      {{1, 2, 5, 6}, {1, 2, 3, 4}, {3, 2}, {2}, {1}, 1, 1},
      {{1, 2, 5, 6}, {1, 2, 3, 4}, {3, 2}, {2}, {1}, 1, 0},
      {{1, 1, 6, 5}, {1, 1, 4, 3}, {3, 2}, {2}, {1}, 1, 0},
  };
  uint64_t seed = 20;
  for (const C& c : cases) {
    std::vector<Attr> a = avg_attrs(c.k, c.s, c.p, c.ceil, c.cip);
    std::vector<HostTensor> in = {rand_f64(c.x, seed++)};
    std::vector<double> g = rand_values(numel_of(c.y), seed++);
    HostTensor gx = HostTensor::zeros(c.x, GN_F64);
    ASSERT_OK(run("avg_pool2d_backward", GN_F64, {HostTensor::of(g, c.y, GN_F64), in[0]}, {gx}, a));
    Forward f = [&](const std::vector<HostTensor>& i) { return avg_fwd(i, c.y, a); };
    expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
  }
}

TEST(PoolRef, EmptyPlanes) {
  ASSERT_OK(run("avg_pool2d", GN_F64, {HostTensor::zeros({0, 3, 4, 4}, GN_F64)},
                {HostTensor::zeros({0, 3, 2, 2}, GN_F64)}, avg_attrs({2}, {}, {0}, 0, 1)));
  ASSERT_OK(run("max_pool2d", GN_F64, {HostTensor::zeros({2, 0, 4, 4}, GN_F64)},
                {HostTensor::zeros({2, 0, 2, 2}, GN_F64), HostTensor::zeros({2, 0, 2, 2}, GN_I64)},
                max_attrs({2}, {}, {0}, {1}, 0)));
  EXPECT_CODE(run("avg_pool2d", GN_F64, {HostTensor::zeros({1, 1, 1, 1}, GN_F64)},
                  {HostTensor::zeros({1, 1, 1, 1}, GN_F64)}, avg_attrs({2}, {}, {0}, 0, 1)),
              GN_ERR_SHAPE);  // kernel larger than the input: output size 0
}
