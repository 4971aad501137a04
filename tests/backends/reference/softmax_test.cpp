// softmax_test.cpp - softmax and log_softmax against closed forms; their
// backward against central finite differences of a softmax written here.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Softmax of one row, plain formula (inputs are small here).
std::vector<double> softmax_row(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::exp(v);
  std::vector<double> y;
  for (double v : x) y.push_back(std::exp(v) / s);
  return y;
}

}  // namespace

TEST(ReferenceSoftmax, LastDimAndFirstDim) {
  const std::vector<double> v = {0.5, -1, 2, 3, 0, -0.25};
  HostTensor x = HostTensor::of(v, {2, 3}, GN_F64), y = HostTensor::zeros({2, 3}, GN_F64);
  ASSERT_OK(run("softmax", GN_F64, {x}, {y}, {ai(-1), ai(GN_DIM_NONE)}));
  std::vector<double> want = softmax_row({0.5, -1, 2}), r2 = softmax_row({3, 0, -0.25});
  want.insert(want.end(), r2.begin(), r2.end());
  expect_values(y, want, 1e-15);
  ASSERT_OK(run("log_softmax", GN_F64, {x}, {y}, {ai(1), ai(GN_DIM_NONE)}));
  for (double& w : want) w = std::log(w);
  expect_values(y, want, 1e-14);
  // dim 0: columns
  ASSERT_OK(run("softmax", GN_F64, {x}, {y}, {ai(0), ai(GN_DIM_NONE)}));
  std::vector<double> c0 = softmax_row({0.5, 3}), c1 = softmax_row({-1, 0}), c2 = softmax_row({2, -0.25});
  expect_values(y, {c0[0], c1[0], c2[0], c0[1], c1[1], c2[1]}, 1e-15);
  // the same through a transposed view: softmax over dim 1 of x.T (3,2)
  HostTensor yt = HostTensor::zeros({3, 2}, GN_F64);
  ASSERT_OK(run("softmax", GN_F64, {x.transposed(0, 1)}, {yt}, {ai(1), ai(GN_DIM_NONE)}));
  expect_values(yt, {c0[0], c0[1], c1[0], c1[1], c2[0], c2[1]}, 1e-15);
}

TEST(ReferenceSoftmax, StableAndSpecialValues) {
  HostTensor x = HostTensor::of({1000, 1001, -kInf, 0, 1, kNan}, {3, 2}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("softmax", GN_F32, {x}, {y}, {ai(-1), ai(GN_DIM_NONE)}));
  const double e = std::exp(1.0);
  expect_values(y, {round_to(1 / (1 + e), GN_F32), round_to(e / (1 + e), GN_F32), 0, 1, kNan, kNan}, 1e-7);
  ASSERT_OK(run("log_softmax", GN_F32, {x}, {y}, {ai(-1), ai(GN_DIM_NONE)}));
  expect_values(y, {round_to(-std::log1p(e), GN_F32), round_to(-std::log1p(1 / e), GN_F32), -kInf, 0, kNan, kNan},
                1e-7);
}

TEST(ReferenceSoftmax, DtypesZeroDimEmpty) {
  // bf16 in, f32 out (dtype attr), computed in double.
  HostTensor x = HostTensor::of({1, 2, 3, 4}, {4}, GN_BF16), y = HostTensor::zeros({4}, GN_F32);
  ASSERT_OK(run("softmax", GN_BF16, {x}, {y}, {ai(0), ai(GN_F32)}));
  std::vector<double> want = softmax_row({1, 2, 3, 4});
  for (double& w : want) w = round_to(w, GN_F32);
  expect_values(y, want, 1e-7);
  HostTensor s = HostTensor::scalar(5, GN_F32), ys = HostTensor::zeros({}, GN_F32);
  ASSERT_OK(run("softmax", GN_F32, {s}, {ys}, {ai(-1), ai(GN_DIM_NONE)}));
  expect_values(ys, {1});
  ASSERT_OK(run("log_softmax", GN_F32, {s}, {ys}, {ai(0), ai(GN_DIM_NONE)}));
  expect_values(ys, {0});
  HostTensor e = HostTensor::zeros({2, 0}, GN_F32), ye = HostTensor::zeros({2, 0}, GN_F32);
  EXPECT_OK(run("softmax", GN_F32, {e}, {ye}, {ai(1), ai(GN_DIM_NONE)}));
  EXPECT_CODE(run("softmax", GN_F32, {x}, {y}, {ai(1), ai(GN_DIM_NONE)}), GN_ERR_INDEX);
}

TEST(ReferenceSoftmax, BackwardMatchesFiniteDifferences) {
  // L(x) = sum(g * f(x)) per row; dL/dx by central differences vs the kernel.
  const std::vector<double> xv = {0.3, -1.2, 0.8, 2.0, 0.1, -0.4, 1.5, -2.0};
  const std::vector<double> gv = {1.0, -0.5, 0.25, 2.0, -1.0, 0.7, 0.0, 1.3};
  for (bool log : {false, true}) {
    auto f = [&](const std::vector<double>& row) {
      std::vector<double> y = softmax_row(row);
      if (log)
        for (double& v : y) v = std::log(v);
      return y;
    };
    std::vector<double> yv, fd;
    for (int r = 0; r < 2; ++r) {
      std::vector<double> row(xv.begin() + r * 4, xv.begin() + r * 4 + 4);
      std::vector<double> y = f(row);
      yv.insert(yv.end(), y.begin(), y.end());
      for (int i = 0; i < 4; ++i) {
        const double h = 1e-6;
        std::vector<double> xp = row, xm = row;
        xp[(size_t)i] += h;
        xm[(size_t)i] -= h;
        std::vector<double> yp = f(xp), ym = f(xm);
        double d = 0;
        for (int j = 0; j < 4; ++j) d += gv[(size_t)(r * 4 + j)] * (yp[(size_t)j] - ym[(size_t)j]) / (2 * h);
        fd.push_back(d);
      }
    }
    HostTensor g = HostTensor::of(gv, {2, 4}, GN_F64), y = HostTensor::of(yv, {2, 4}, GN_F64);
    HostTensor gx = HostTensor::zeros({2, 4}, GN_F64);
    ASSERT_OK(run(log ? "log_softmax_backward" : "softmax_backward", GN_F64, {g, y}, {gx}, {ai(-1)}));
    SCOPED_TRACE(log ? "log_softmax_backward" : "softmax_backward");
    expect_values(gx, fd, 1e-8);
    // dim 0 of the transposed layout gives the transposed result.
    HostTensor gxt = HostTensor::zeros({4, 2}, GN_F64);
    ASSERT_OK(run(log ? "log_softmax_backward" : "softmax_backward", GN_F64, {g.transposed(0, 1), y.transposed(0, 1)},
                  {gxt}, {ai(0)}));
    std::vector<double> fdt;
    for (int i = 0; i < 4; ++i)
      for (int r = 0; r < 2; ++r) fdt.push_back(fd[(size_t)(r * 4 + i)]);
    expect_values(gxt, fdt, 1e-8);
  }
}
