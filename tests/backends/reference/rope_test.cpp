// rope_test.cpp - rope (HF rotate-half) against closed forms, its backward op
// against central finite differences.
#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

const Forward rope_fwd = elementwise_forward("rope");

}  // namespace

// ----------------------------------------------------------------------------
// rope

TEST(RopeRef, RopeHandComputed) {
  // D = 4: rotate_half(1,2,3,4) = (-3,-4,1,2)
  HostTensor x = HostTensor::of({1, 2, 3, 4}, {4}, GN_F64);
  HostTensor c = HostTensor::of({0.5, 0.25, 0.5, 0.25}, {4}, GN_F64);
  HostTensor s = HostTensor::of({2, -1, 2, -1}, {4}, GN_F64);
  HostTensor y = HostTensor::zeros({4}, GN_F64);
  ASSERT_OK(run("rope", GN_F64, {x, c, s}, {y}, {}));
  expect_values(y, {1 * 0.5 + -3 * 2, 2 * 0.25 + -4 * -1, 3 * 0.5 + 1 * 2, 4 * 0.25 + 2 * -1});
  // a real rotation by angle t in the (x0, x2) plane: cos/sin the same for both halves
  const double t = 0.3;
  HostTensor cr = HostTensor::of({std::cos(t), 1, std::cos(t), 1}, {4}, GN_F64);
  HostTensor sr = HostTensor::of({std::sin(t), 0, std::sin(t), 0}, {4}, GN_F64);
  ASSERT_OK(run("rope", GN_F64, {x, cr, sr}, {y}, {}));
  expect_values(y, {std::cos(t) - 3 * std::sin(t), 2, 3 * std::cos(t) + std::sin(t), 4}, 1e-15);
  // rope_backward maps g back through the rotation's transpose: (g*cos) + rotate_half_T(g*sin)
  HostTensor g = HostTensor::of({1, 2, 3, 4}, {4}, GN_F64), gx = HostTensor::zeros({4}, GN_F64);
  ASSERT_OK(run("rope_backward", GN_F64, {g, c, s}, {gx}, {}));
  // g*sin = (2,-2,6,-4); rotate_half_T = (6,-4,-2,2)
  expect_values(gx, {0.5 + 6, 0.5 - 4, 1.5 - 2, 1 + 2});
}

TEST(RopeRef, RopeBroadcastsCosSin) {
  // x (B=2, S=3, H=2, D=4), cos/sin (S, 1, D) as in HF after unsqueeze
  Shape xs = {2, 3, 2, 4};
  std::vector<double> xv = rand_values(48, 1), cv = rand_values(12, 2), sv = rand_values(12, 3);
  std::vector<double> want(48);
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 3; ++s)
      for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 4; ++d) {
          int row = ((b * 3 + s) * 2 + h) * 4;
          double rot = d < 2 ? -xv[(size_t)(row + d + 2)] : xv[(size_t)(row + d - 2)];
          want[(size_t)(row + d)] = xv[(size_t)(row + d)] * cv[(size_t)(s * 4 + d)] + rot * sv[(size_t)(s * 4 + d)];
        }
  HostTensor y = HostTensor::zeros(xs, GN_F64);
  ASSERT_OK(run("rope", GN_F64,
                {HostTensor::strided_of(xv, xs, GN_F64), HostTensor::of(cv, {3, 1, 4}, GN_F64),
                 HostTensor::of(sv, {3, 1, 4}, GN_F64)},
                {y}, {}));
  expect_values(y, want, 1e-15);
  // f32 / bf16 paths round the double result once
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16}) {
    HostTensor x = HostTensor::of({1, 2, 3, 4}, {1, 4}, dt), yl = HostTensor::zeros({1, 4}, dt);
    ASSERT_OK(run("rope", dt, {x, HostTensor::of({0.5}, {1}, dt), HostTensor::of({0.25}, {1}, dt)}, {yl}, {}));
    expect_values(yl, {0.5 - 0.75, 1 - 1, 1.5 + 0.25, 2 + 0.5});
  }
}

TEST(RopeRef, RopeBackwardMatchesFiniteDifferences) {
  Shape xs = {2, 3, 6};
  std::vector<HostTensor> in = {rand_f64(xs, 5), rand_f64({3, 6}, 6), rand_f64({1, 6}, 7)};
  std::vector<double> g = rand_values(36, 8);
  HostTensor gx = HostTensor::zeros(xs, GN_F64);
  ASSERT_OK(run("rope_backward", GN_F64, {HostTensor::of(g, xs, GN_F64), in[1], in[2]}, {gx}, {}));
  expect_values(gx, numeric_grad(rope_fwd, in, 0, {g}), kFdTol);
}

TEST(RopeRef, RopeEdgeCases) {
  // D = 0 and no rows: nothing to do
  ASSERT_OK(run("rope", GN_F64,
                {HostTensor::zeros({3, 0}, GN_F64), HostTensor::zeros({0}, GN_F64), HostTensor::zeros({0}, GN_F64)},
                {HostTensor::zeros({3, 0}, GN_F64)}, {}));
  ASSERT_OK(run("rope", GN_F64,
                {HostTensor::zeros({0, 4}, GN_F64), HostTensor::zeros({4}, GN_F64), HostTensor::zeros({4}, GN_F64)},
                {HostTensor::zeros({0, 4}, GN_F64)}, {}));
  // odd D, and cos that does not broadcast to x
  EXPECT_CODE(run("rope", GN_F64,
                  {HostTensor::zeros({2, 3}, GN_F64), HostTensor::zeros({3}, GN_F64), HostTensor::zeros({3}, GN_F64)},
                  {HostTensor::zeros({2, 3}, GN_F64)}, {}),
              GN_ERR_SHAPE);
  EXPECT_CODE(
      run("rope", GN_F64,
          {HostTensor::zeros({2, 4}, GN_F64), HostTensor::zeros({3, 4}, GN_F64), HostTensor::zeros({4}, GN_F64)},
          {HostTensor::zeros({2, 4}, GN_F64)}, {}),
      GN_ERR_SHAPE);
}
