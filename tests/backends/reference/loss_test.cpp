// loss_test.cpp - cross_entropy (class dim last, ignore_index, label
// smoothing, reductions) against hand values, a torch fixture and an
// independent loop; cross_entropy_backward against finite differences.
#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

// Independent per-row losses: -sum_c q_c log softmax(x)_c with the smoothed
// target distribution q = (1-ls)*onehot(t) + ls/C; 0 for ignored rows.
std::vector<double> ce_rows(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t C, int64_t ignore,
                            double ls) {
  std::vector<double> loss;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == ignore) {
      loss.push_back(0.0);
      continue;
    }
    double z = 0;
    for (int64_t c = 0; c < C; ++c) z += std::exp(x[r * C + c]);
    double l = 0;
    for (int64_t c = 0; c < C; ++c) {
      double q = (c == t[r] ? 1.0 - ls : 0.0) + ls / (double)C;
      l -= q * (x[r * C + c] - std::log(z));
    }
    loss.push_back(l);
  }
  return loss;
}

Shape loss_shape(const Shape& ts, int64_t reduction) { return reduction == 0 ? ts : Shape{}; }

std::vector<HostTensor> ce_forward(const std::vector<HostTensor>& in, int64_t ignore, double ls, int64_t red) {
  std::vector<HostTensor> out = {HostTensor::zeros(loss_shape(in[1].shape, red), GN_F64),
                                 HostTensor::zeros(in[1].shape, GN_F64)};
  EXPECT_OK(run("cross_entropy", GN_F64, in, out, {ai(ignore), af(ls), ai(red)}));
  return out;
}

// The 2x2x4 logits of the torch fixture: ((i*7919) % 101 - 50) / 16.
std::vector<double> fixture_logits() {
  std::vector<double> x;
  for (int i = 0; i < 16; ++i) x.push_back((double)((i * 7919) % 101 - 50) / 16.0);
  return x;
}

}  // namespace

TEST(LossRef, HandComputed) {
  // logits (1, 2, 3), target 2: loss = log(e + e^2 + e^3) - 3
  HostTensor x = HostTensor::of({1, 2, 3}, {1, 3}, GN_F64);
  HostTensor t = HostTensor::of_ints({2}, {1}, GN_I64);
  HostTensor loss = HostTensor::zeros({}, GN_F64), lse = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("cross_entropy", GN_F64, {x, t}, {loss, lse}, {ai(-100), af(0.0), ai(1)}));
  double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  expect_values(loss, {z - 3}, 1e-15);
  expect_values(lse, {z}, 1e-15);
  // uniform logits: loss = log C whatever the target and the smoothing
  HostTensor u = HostTensor::of({0.5, 0.5, 0.5, 0.5}, {4}, GN_F64);
  HostTensor t0 = HostTensor::of_ints({1}, {}, GN_I32);
  ASSERT_OK(run("cross_entropy", GN_F64, {u, t0}, {loss, HostTensor::zeros({}, GN_F64)}, {ai(-100), af(0.3), ai(2)}));
  expect_values(loss, {std::log(4.0)}, 1e-15);
}

TEST(LossRef, MatchesTorchFixture) {
  // Generated with torch 1.13 (float64):
  //   x = tensor([((i*7919) % 101 - 50) / 16 for i in range(16)]).reshape(2, 2, 4)
  //   t = tensor([[1, -100], [3, 0]])
  //   F.cross_entropy(x.reshape(-1, 4), t.reshape(-1), ignore_index=-100,
  //                   label_smoothing=0.1, reduction=...), and .backward() for the grads
  std::vector<double> x = fixture_logits();
  const std::vector<double> none = {2.693457776887277, 0.0, 1.5967229619901668, 0.5363103010070794};
  const std::vector<double> lse = {2.101270276887277, 2.4771033754137775, 1.340472961990167, 2.6644353010070794};
  const std::vector<double> grad_sum = {-0.019626470247945463,
                                        -0.8553150058867526,
                                        0.8786887536924258,
                                        -0.0037472775577279197,
                                        0,
                                        0,
                                        0,
                                        0,
                                        0.029859881035259654,
                                        0.6864337620507001,
                                        -0.008268681590707178,
                                        -0.7080249614952526,
                                        -0.17631376941092758,
                                        -0.007392587503112769,
                                        0.2033363995009019,
                                        -0.01963004258686163};
  const std::vector<double> grad_mean = {-0.006542156749315154,
                                         -0.28510500196225086,
                                         0.2928962512308087,
                                         -0.0012490925192426374,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0.009953293678419888,
                                         0.22881125401690006,
                                         -0.0027562271969023915,
                                         -0.23600832049841752,
                                         -0.058771256470309126,
                                         -0.002464195834370921,
                                         0.06777879983363398,
                                         -0.006543347528953875};
  HostTensor xt = HostTensor::of(x, {2, 2, 4}, GN_F64), t = HostTensor::of_ints({1, -100, 3, 0}, {2, 2}, GN_I64);
  for (int64_t red : {0, 1, 2}) {
    std::vector<HostTensor> out = ce_forward({xt, t}, -100, 0.1, red);
    SCOPED_TRACE(red);
    if (red == 0) expect_values(out[0], none, 1e-13);
    if (red == 1) expect_values(out[0], {1.6088303466281746}, 1e-13);
    if (red == 2) expect_values(out[0], {4.826491039884524}, 1e-13);
    expect_values(out[1], lse, 1e-13);  // ignored rows get their lse too
    HostTensor g = red == 0 ? HostTensor::of({1, 1, 1, 1}, {2, 2}, GN_F64) : HostTensor::scalar(1.0, GN_F64);
    HostTensor gx = HostTensor::zeros({2, 2, 4}, GN_F64);
    ASSERT_OK(run("cross_entropy_backward", GN_F64, {g, xt, t, out[1]}, {gx}, {ai(-100), af(0.1), ai(red)}));
    expect_values(gx, red == 1 ? grad_mean : grad_sum, 1e-13);
  }
}

TEST(LossRef, MatchesIndependentLoop) {
  const int64_t C = 5;
  std::vector<double> x = rand_values(6 * C, 3, -3, 3);
  std::vector<int64_t> t = {4, 0, 7, 2, 7, 1};  // 7 = ignore_index
  for (double ls : {0.0, 0.25})
    for (int64_t red : {0, 1, 2}) {
      std::vector<double> rows = ce_rows(x, t, C, 7, ls);
      HostTensor loss = HostTensor::zeros(loss_shape({2, 3}, red), GN_F64), lse = HostTensor::zeros({2, 3}, GN_F64);
      ASSERT_OK(run("cross_entropy", GN_F64,
                    {HostTensor::strided_of(x, {2, 3, C}, GN_F64), HostTensor::of_ints(t, {2, 3}, GN_I32)}, {loss, lse},
                    {ai(7), af(ls), ai(red)}));
      double sum = 0;
      for (double v : rows) sum += v;
      SCOPED_TRACE(::testing::Message() << "ls " << ls << " reduction " << red);
      if (red == 0) expect_values(loss, rows, 1e-13);
      if (red == 1) expect_values(loss, {sum / 4}, 1e-13);  // 4 rows not ignored
      if (red == 2) expect_values(loss, {sum}, 1e-13);
    }
}

TEST(LossRef, AllIgnoredMeanIsNan) {
  HostTensor x = rand_f64({2, 3}, 4), t = HostTensor::of_ints({-100, -100}, {2}, GN_I64);
  HostTensor loss = HostTensor::zeros({}, GN_F64), lse = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("cross_entropy", GN_F64, {x, t}, {loss, lse}, {ai(-100), af(0.1), ai(1)}));
  EXPECT_TRUE(std::isnan(loss.at(0)));
  ASSERT_OK(run("cross_entropy", GN_F64, {x, t}, {loss, lse}, {ai(-100), af(0.1), ai(2)}));
  expect_values(loss, {0.0});
  HostTensor gx = HostTensor::of(std::vector<double>(6, 9.0), {2, 3}, GN_F64);
  ASSERT_OK(run("cross_entropy_backward", GN_F64, {HostTensor::scalar(1, GN_F64), x, t, lse}, {gx},
                {ai(-100), af(0.1), ai(1)}));
  expect_values(gx, std::vector<double>(6, 0.0));
}

TEST(LossRef, BackwardMatchesFiniteDifferences) {
  const int64_t C = 4;
  Shape xs = {3, 2, C};
  std::vector<int64_t> tv = {3, -1, 0, 2, 2, -1};  // ignore_index -1
  HostTensor t = HostTensor::of_ints(tv, {3, 2}, GN_I64);
  for (double ls : {0.0, 0.2})
    for (int64_t red : {0, 1, 2}) {
      std::vector<HostTensor> in = {rand_f64(xs, 10 + (uint64_t)red, -2, 2), t};
      std::vector<double> g = red == 0 ? rand_values(6, 20) : std::vector<double>{0.7};
      std::vector<HostTensor> fwd = ce_forward(in, -1, ls, red);
      HostTensor gx = HostTensor::zeros(xs, GN_F64);
      HostTensor gl = HostTensor::of(g, loss_shape({3, 2}, red), GN_F64);
      ASSERT_OK(run("cross_entropy_backward", GN_F64, {gl, in[0], t, fwd[1]}, {gx}, {ai(-1), af(ls), ai(red)}));
      Forward f = [&](const std::vector<HostTensor>& i) { return ce_forward(i, -1, ls, red); };
      SCOPED_TRACE(::testing::Message() << "ls " << ls << " reduction " << red);
      expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
    }
}

TEST(LossRef, LowPrecisionAndOneDimLogits) {
  // 1-D logits (C) with a 0-d target: a single row
  std::vector<double> x = {0.5, -1.0, 2.0};
  double z = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0));
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16}) {
    HostTensor loss = HostTensor::zeros({}, dt), lse = HostTensor::zeros({}, GN_F32);
    ASSERT_OK(run("cross_entropy", dt, {HostTensor::of(x, {3}, dt), HostTensor::of_ints({0}, {}, GN_I64)}, {loss, lse},
                  {ai(-100), af(0.0), ai(1)}));
    expect_values(loss, {round_to(z - 0.5, dt)});
    expect_values(lse, {round_to(z, GN_F32)});
    HostTensor gx = HostTensor::zeros({3}, dt);
    ASSERT_OK(run("cross_entropy_backward", dt,
                  {HostTensor::scalar(1, dt), HostTensor::of(x, {3}, dt), HostTensor::of_ints({0}, {}, GN_I64), lse},
                  {gx}, {ai(-100), af(0.0), ai(1)}));
    expect_values(
        gx, {round_to(std::exp(0.5 - z) - 1, dt), round_to(std::exp(-1.0 - z), dt), round_to(std::exp(2.0 - z), dt)});
  }
  // no rows: mean is 0/0
  HostTensor loss = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("cross_entropy", GN_F64, {HostTensor::zeros({0, 3}, GN_F64), HostTensor::zeros({0}, GN_I64)},
                {loss, HostTensor::zeros({0}, GN_F64)}, {ai(-100), af(0.0), ai(1)}));
  EXPECT_TRUE(std::isnan(loss.at(0)));
}

TEST(LossRef, TargetOutOfRangeIsIndexError) {
  HostTensor x = rand_f64({2, 3}, 5);
  std::vector<HostTensor> out = {HostTensor::zeros({}, GN_F64), HostTensor::zeros({2}, GN_F64)};
  for (int64_t bad : {3, -1, -101}) {
    HostTensor t = HostTensor::of_ints({0, bad}, {2}, GN_I64);
    EXPECT_CODE(run("cross_entropy", GN_F64, {x, t}, out, {ai(-100), af(0.0), ai(1)}), GN_ERR_INDEX);
    EXPECT_CODE(run("cross_entropy_backward", GN_F64, {HostTensor::scalar(1, GN_F64), x, t, out[1]},
                    {HostTensor::zeros({2, 3}, GN_F64)}, {ai(-100), af(0.0), ai(1)}),
                GN_ERR_INDEX);
  }
  EXPECT_CODE(run("cross_entropy", GN_F64, {x, HostTensor::of_ints({0, 1, 2}, {3}, GN_I64)},
                  {HostTensor::zeros({}, GN_F64), HostTensor::zeros({3}, GN_F64)}, {ai(-100), af(0.0), ai(1)}),
              GN_ERR_SHAPE);
}
