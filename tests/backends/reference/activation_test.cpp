// activation_test.cpp - swiglu against its closed form, its backward op against
// central finite differences.
#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

const Forward swiglu_fwd = elementwise_forward("swiglu");

}  // namespace

// ----------------------------------------------------------------------------
// swiglu

TEST(ActivationRef, SwigluClosedForm) {
  std::vector<double> gate = {-3, -0.5, 0, 0.5, 2, 40, -40}, up = {1, 2, 3, -1, 0.5, 2, 2};
  std::vector<double> want;
  for (size_t i = 0; i < gate.size(); ++i) want.push_back(gate[i] / (1.0 + std::exp(-gate[i])) * up[i]);
  HostTensor y = HostTensor::zeros({7}, GN_F64);
  ASSERT_OK(
      run("swiglu", GN_F64, {HostTensor::of(gate, {7}, GN_F64), HostTensor::strided_of(up, {7}, GN_F64)}, {y}, {}));
  expect_values(y, want, 1e-15);
  EXPECT_EQ(y.at(2), 0.0);
  EXPECT_NEAR(y.at(5), 80.0, 1e-12);  // silu(40) = 40
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16}) {
    HostTensor yl = HostTensor::zeros({7}, dt);
    ASSERT_OK(run("swiglu", dt, {HostTensor::of(gate, {7}, dt), HostTensor::of(up, {7}, dt)}, {yl}, {}));
    std::vector<double> wr;
    for (double v : want) wr.push_back(round_to(v, dt));
    expect_values(yl, wr);
  }
}

TEST(ActivationRef, SwigluBackwardMatchesFiniteDifferences) {
  Shape s = {3, 4};
  std::vector<HostTensor> in = {rand_f64(s, 30, -4, 4), rand_f64(s, 31, -2, 2)};
  std::vector<double> g = rand_values(12, 32);
  HostTensor gg = HostTensor::zeros(s, GN_F64), gu = HostTensor::zeros(s, GN_F64);
  ASSERT_OK(run("swiglu_backward", GN_F64, {HostTensor::of(g, s, GN_F64), in[0], in[1]}, {gg, gu}, {}));
  expect_values(gg, numeric_grad(swiglu_fwd, in, 0, {g}), kFdTol);
  expect_values(gu, numeric_grad(swiglu_fwd, in, 1, {g}), kFdTol);
}

TEST(ActivationRef, SwigluEdgeCases) {
  ASSERT_OK(run("swiglu", GN_F64, {HostTensor::zeros({0}, GN_F64), HostTensor::zeros({0}, GN_F64)},
                {HostTensor::zeros({0}, GN_F64)}, {}));
  HostTensor y = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("swiglu", GN_F64, {HostTensor::scalar(1.0, GN_F64), HostTensor::scalar(2.0, GN_F64)}, {y}, {}));
  expect_values(y, {2.0 / (1.0 + std::exp(-1.0))}, 1e-15);
  EXPECT_CODE(run("swiglu", GN_F64, {HostTensor::zeros({2}, GN_F64), HostTensor::zeros({3}, GN_F64)},
                  {HostTensor::zeros({2}, GN_F64)}, {}),
              GN_ERR_SHAPE);
}
