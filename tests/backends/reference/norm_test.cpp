// norm_test.cpp - layer_norm and rms_norm against closed forms, their
// backward ops against central finite differences of the forward kernels.
#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

// layer_norm of row-major x viewed as (R, N), written out directly.
std::vector<double> ln_closed_form(const std::vector<double>& x, int64_t N, const std::vector<double>* w,
                                   const std::vector<double>* b, double eps, std::vector<double>* mean,
                                   std::vector<double>* rstd) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * N < x.size(); ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < N; ++i) m += x[r * N + i] / (double)N;
    for (int64_t i = 0; i < N; ++i) v += (x[r * N + i] - m) * (x[r * N + i] - m) / (double)N;
    for (int64_t i = 0; i < N; ++i)
      y[r * N + i] = (x[r * N + i] - m) / std::sqrt(v + eps) * (w ? (*w)[i] : 1.0) + (b ? (*b)[i] : 0.0);
    if (mean) mean->push_back(m);
    if (rstd) rstd->push_back(1.0 / std::sqrt(v + eps));
  }
  return y;
}

// layer_norm forward (y, mean, rstd) of f64 inputs x, [w, [b]].
std::vector<HostTensor> ln_forward(const std::vector<HostTensor>& in, int64_t nd, double eps) {
  Shape xs = in[0].shape, rows(xs.begin(), xs.end() - nd);
  std::vector<HostTensor> out = {HostTensor::zeros(xs, GN_F64), HostTensor::zeros(rows, GN_F64),
                                 HostTensor::zeros(rows, GN_F64)};
  EXPECT_OK(run("layer_norm", GN_F64, in, out, {ai(nd), af(eps)}));
  return out;
}

std::vector<HostTensor> rms_forward(const std::vector<HostTensor>& in, double eps) {
  Shape xs = in[0].shape, rows(xs.begin(), xs.end() - 1);
  std::vector<HostTensor> out = {HostTensor::zeros(xs, GN_F64), HostTensor::zeros(rows, GN_F64)};
  EXPECT_OK(run("rms_norm", GN_F64, in, out, {af(eps)}));
  return out;
}

}  // namespace

// ----------------------------------------------------------------------------
// layer_norm

TEST(NormRef, LayerNormHandComputed) {
  // x = (1,2,3,4): mean 2.5, biased var 1.25
  HostTensor x = HostTensor::of({1, 2, 3, 4}, {1, 4}, GN_F64);
  HostTensor y = HostTensor::zeros({1, 4}, GN_F64), mean = HostTensor::zeros({1}, GN_F64),
             rstd = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("layer_norm", GN_F64, {x}, {y, mean, rstd}, {ai(1), af(1e-5)}));
  double s = 1.0 / std::sqrt(1.25 + 1e-5);
  expect_values(y, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-14);
  expect_values(mean, {2.5}, 1e-15);
  expect_values(rstd, {s}, 1e-15);
  // with weight and bias
  HostTensor w = HostTensor::of({1, 2, 0, -1}, {4}, GN_F64), b = HostTensor::of({0, 1, 2, 3}, {4}, GN_F64);
  ASSERT_OK(run("layer_norm", GN_F64, {x, w, b}, {y, mean, rstd}, {ai(1), af(0.0)}));
  s = 1.0 / std::sqrt(1.25);
  expect_values(y, {-1.5 * s, -1.0 * s + 1, 2, -1.5 * s + 3}, 1e-14);
}

TEST(NormRef, LayerNormOverTwoDimsMatchesClosedForm) {
  std::vector<double> xv = rand_values(24, 1, -3, 3), wv = rand_values(8, 2), bv = rand_values(8, 3);
  std::vector<double> mean_want, rstd_want;
  std::vector<double> want = ln_closed_form(xv, 8, &wv, &bv, 1e-5, &mean_want, &rstd_want);
  HostTensor x = HostTensor::strided_of(xv, {3, 2, 4}, GN_F64);  // non-contiguous input
  HostTensor y = HostTensor::zeros({3, 2, 4}, GN_F64), mean = HostTensor::zeros({3}, GN_F64),
             rstd = HostTensor::zeros({3}, GN_F64);
  ASSERT_OK(run("layer_norm", GN_F64, {x, HostTensor::of(wv, {2, 4}, GN_F64), HostTensor::of(bv, {2, 4}, GN_F64)},
                {y, mean, rstd}, {ai(2), af(1e-5)}));
  expect_values(y, want, 1e-12);
  expect_values(mean, mean_want, 1e-13);
  expect_values(rstd, rstd_want, 1e-12);
}

TEST(NormRef, LayerNormLowPrecisionRoundsTheDoubleResult) {
  std::vector<double> xv = {0.5, -1.25, 2.0, 3.75, 0.0, 1.0};  // exact in every float dtype
  std::vector<double> mean_want, rstd_want;
  std::vector<double> want = ln_closed_form(xv, 3, nullptr, nullptr, 1e-5, &mean_want, &rstd_want);
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16}) {
    HostTensor y = HostTensor::zeros({2, 3}, dt), mean = HostTensor::zeros({2}, GN_F32),
               rstd = HostTensor::zeros({2}, GN_F32);
    ASSERT_OK(run("layer_norm", dt, {HostTensor::of(xv, {2, 3}, dt)}, {y, mean, rstd}, {ai(1), af(1e-5)}));
    std::vector<double> yr;
    for (double v : want) yr.push_back(round_to(v, dt));
    expect_values(y, yr);
    expect_values(mean, {round_to(mean_want[0], GN_F32), round_to(mean_want[1], GN_F32)});
    expect_values(rstd, {round_to(rstd_want[0], GN_F32), round_to(rstd_want[1], GN_F32)});
  }
}

TEST(NormRef, LayerNormSizeOneAndEmpty) {
  // one normalized element: x - mean = 0, y = bias
  HostTensor y = HostTensor::zeros({3, 1}, GN_F64), m = HostTensor::zeros({3}, GN_F64),
             r = HostTensor::zeros({3}, GN_F64);
  ASSERT_OK(run("layer_norm", GN_F64,
                {HostTensor::of({5, -2, 7}, {3, 1}, GN_F64), HostTensor::of({3}, {1}, GN_F64),
                 HostTensor::of({0.25}, {1}, GN_F64)},
                {y, m, r}, {ai(1), af(1e-5)}));
  expect_values(y, {0.25, 0.25, 0.25});
  expect_values(m, {5, -2, 7});
  expect_values(r, std::vector<double>(3, 1.0 / std::sqrt(1e-5)), 1e-15);
  // no rows
  ASSERT_OK(run("layer_norm", GN_F64, {HostTensor::zeros({0, 4}, GN_F64)},
                {HostTensor::zeros({0, 4}, GN_F64), HostTensor::zeros({0}, GN_F64), HostTensor::zeros({0}, GN_F64)},
                {ai(1), af(1e-5)}));
  HostTensor gx = HostTensor::zeros({0, 4}, GN_F64), gw = HostTensor::of({9, 9, 9, 9}, {4}, GN_F64),
             gb = HostTensor::of({9, 9, 9, 9}, {4}, GN_F64);
  ASSERT_OK(run("layer_norm_backward", GN_F64,
                {HostTensor::zeros({0, 4}, GN_F64), HostTensor::zeros({0, 4}, GN_F64), HostTensor::zeros({0}, GN_F64),
                 HostTensor::zeros({0}, GN_F64)},
                {gx, gw, gb}, {ai(1)}));
  expect_values(gw, {0, 0, 0, 0});
  expect_values(gb, {0, 0, 0, 0});
}

TEST(NormRef, LayerNormBackwardMatchesFiniteDifferences) {
  for (int with_w = 0; with_w < 2; ++with_w) {
    const double eps = 1e-5;
    Shape xs = {2, 3, 4};
    std::vector<HostTensor> in = {rand_f64(xs, 10, -2, 2)};
    if (with_w) {
      in.push_back(rand_f64({3, 4}, 11));
      in.push_back(rand_f64({3, 4}, 12));
    }
    std::vector<double> g = rand_values(24, 13);
    std::vector<HostTensor> fwd = ln_forward(in, 2, eps);
    HostTensor gx = HostTensor::zeros(xs, GN_F64), gw = HostTensor::zeros({3, 4}, GN_F64),
               gb = HostTensor::zeros({3, 4}, GN_F64);
    std::vector<HostTensor> bin = {HostTensor::of(g, xs, GN_F64), in[0], fwd[1], fwd[2]};
    if (with_w) bin.push_back(in[1]);
    ASSERT_OK(run("layer_norm_backward", GN_F64, bin, {gx, gw, gb}, {ai(2)}));
    Forward f = [&](const std::vector<HostTensor>& i) { return ln_forward(i, 2, eps); };
    SCOPED_TRACE(with_w ? "with weight and bias" : "no weight");
    expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
    if (with_w) {
      expect_values(gw, numeric_grad(f, in, 1, {g}), kFdTol);
      expect_values(gb, numeric_grad(f, in, 2, {g}), kFdTol);
    } else {
      // the weight/bias grads still follow their definitions: sum g*xhat and sum g
      std::vector<HostTensor> with = {in[0], HostTensor::of(std::vector<double>(12, 1.0), {3, 4}, GN_F64),
                                      HostTensor::zeros({3, 4}, GN_F64)};
      expect_values(gw, numeric_grad(f, with, 1, {g}), kFdTol);
      expect_values(gb, numeric_grad(f, with, 2, {g}), kFdTol);
    }
  }
}

TEST(NormRef, LayerNormRejectsBadShapes) {
  HostTensor x = HostTensor::zeros({2, 4}, GN_F64);
  std::vector<HostTensor> out = {HostTensor::zeros({2, 4}, GN_F64), HostTensor::zeros({2}, GN_F64),
                                 HostTensor::zeros({2}, GN_F64)};
  EXPECT_CODE(run("layer_norm", GN_F64, {x, HostTensor::zeros({3}, GN_F64)}, out, {ai(1), af(1e-5)}), GN_ERR_SHAPE);
  EXPECT_CODE(run("layer_norm", GN_F64, {x}, out, {ai(3), af(1e-5)}), GN_ERR_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------------
// rms_norm

TEST(NormRef, RmsNormHandComputed) {
  // x = (3, 4): mean(x^2) = 12.5
  HostTensor y = HostTensor::zeros({2}, GN_F64), rstd = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("rms_norm", GN_F64, {HostTensor::of({3, 4}, {2}, GN_F64), HostTensor::of({2, -1}, {2}, GN_F64)},
                {y, rstd}, {af(1e-6)}));
  double s = 1.0 / std::sqrt(12.5 + 1e-6);
  expect_values(y, {6 * s, -4 * s}, 1e-15);
  expect_values(rstd, {s}, 1e-15);
}

TEST(NormRef, RmsNormMatchesClosedFormInEveryDtype) {
  std::vector<double> xv = {0.5, -1.25, 2.0, 3.75, 0.0, 1.0, -0.5, 0.25}, wv = {1.5, -0.5, 2.0, 0.75};
  std::vector<double> want, rwant;
  for (int r = 0; r < 2; ++r) {
    double ss = 0;
    for (int i = 0; i < 4; ++i) ss += xv[r * 4 + i] * xv[r * 4 + i];
    double s = 1.0 / std::sqrt(ss / 4 + 1e-6);
    rwant.push_back(s);
    for (int i = 0; i < 4; ++i) want.push_back(xv[r * 4 + i] * s * wv[i]);
  }
  for (int32_t dt : {GN_F64, GN_F32, GN_F16, GN_BF16}) {
    int32_t sdt = dt == GN_F64 ? GN_F64 : GN_F32;
    HostTensor y = HostTensor::zeros({2, 4}, dt), rstd = HostTensor::zeros({2}, sdt);
    ASSERT_OK(
        run("rms_norm", dt, {HostTensor::of(xv, {2, 4}, dt), HostTensor::of(wv, {4}, dt)}, {y, rstd}, {af(1e-6)}));
    std::vector<double> yr, rr;
    for (double v : want) yr.push_back(round_to(v, dt));
    for (double v : rwant) rr.push_back(round_to(v, sdt));
    expect_values(y, yr, dt == GN_F64 ? 1e-15 : 0.0);
    expect_values(rstd, rr, dt == GN_F64 ? 1e-15 : 0.0);
  }
}

TEST(NormRef, RmsNormBackwardMatchesFiniteDifferences) {
  for (int with_w = 0; with_w < 2; ++with_w) {
    Shape xs = {3, 5};
    std::vector<HostTensor> in = {rand_f64(xs, 20, -2, 2)};
    if (with_w) in.push_back(rand_f64({5}, 21));
    std::vector<double> g = rand_values(15, 22);
    std::vector<HostTensor> fwd = rms_forward(in, 1e-6);
    HostTensor gx = HostTensor::zeros(xs, GN_F64), gw = HostTensor::zeros({5}, GN_F64);
    std::vector<HostTensor> bin = {HostTensor::of(g, xs, GN_F64), in[0], fwd[1]};
    if (with_w) bin.push_back(in[1]);
    ASSERT_OK(run("rms_norm_backward", GN_F64, bin, {gx, gw}, {}));
    Forward f = [&](const std::vector<HostTensor>& i) { return rms_forward(i, 1e-6); };
    SCOPED_TRACE(with_w ? "with weight" : "no weight");
    expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
    std::vector<HostTensor> with = in;
    if (!with_w) with.push_back(HostTensor::of(std::vector<double>(5, 1.0), {5}, GN_F64));
    expect_values(gw, numeric_grad(f, with, 1, {g}), kFdTol);
  }
}

TEST(NormRef, RmsNormSizeOneAndEmpty) {
  HostTensor y = HostTensor::zeros({2, 1}, GN_F64), r = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("rms_norm", GN_F64, {HostTensor::of({-2, 0}, {2, 1}, GN_F64)}, {y, r}, {af(0.0)}));
  expect_values(y, {-1, NAN});  // x/|x|; 0/0 for a zero row without eps
  ASSERT_OK(run("rms_norm", GN_F64, {HostTensor::zeros({0, 3}, GN_F64)},
                {HostTensor::zeros({0, 3}, GN_F64), HostTensor::zeros({0}, GN_F64)}, {af(1e-6)}));
  EXPECT_CODE(run("rms_norm", GN_F64, {HostTensor::zeros({2, 3}, GN_F64), HostTensor::zeros({2}, GN_F64)},
                  {HostTensor::zeros({2, 3}, GN_F64), HostTensor::zeros({2}, GN_F64)}, {af(1e-6)}),
              GN_ERR_SHAPE);
}
