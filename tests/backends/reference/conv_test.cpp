// conv_test.cpp - conv2d (stride, padding, dilation, groups, bias) against a
// hand example, a torch fixture and a padded-input loop written here;
// conv2d_backward against central finite differences.
#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

struct Conv {
  Shape x, w;  // (N,C,H,W), (O,C/g,kh,kw)
  int64_t sh, sw, ph, pw, dh, dw, g;
  bool bias;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}
Shape y_shape(const Conv& c) {
  return {c.x[0], c.w[0], out_size(c.x[2], c.w[2], c.sh, c.ph, c.dh), out_size(c.x[3], c.w[3], c.sw, c.pw, c.dw)};
}
std::vector<Attr> conv_attrs(const Conv& c) {
  return {aints({c.sh, c.sw}), aints({c.ph, c.pw}), aints({c.dh, c.dw}), ai(c.g)};
}

// Materialise the zero-padded input, then slide the dilated kernel over it.
std::vector<double> naive_conv(const Conv& c, const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b) {
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.w[0], Cg = c.w[1], KH = c.w[2], KW = c.w[3];
  int64_t Hp = H + 2 * c.ph, Wp = W + 2 * c.pw;
  std::vector<double> xp((size_t)(N * C * Hp * Wp), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t q = 0; q < W; ++q)
          xp[(size_t)(((n * C + ch) * Hp + h + c.ph) * Wp + q + c.pw)] = x[(size_t)(((n * C + ch) * H + h) * W + q)];
  Shape ys = y_shape(c);
  int64_t Ho = ys[2], Wo = ys[3];
  std::vector<double> y((size_t)(N * O * Ho * Wo));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double s = b.empty() ? 0.0 : b[(size_t)o];
          for (int64_t ci = 0; ci < Cg; ++ci) {
            int64_t ch = o / (O / c.g) * Cg + ci;
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j)
                s += xp[(size_t)(((n * C + ch) * Hp + oh * c.sh + i * c.dh) * Wp + ow * c.sw + j * c.dw)] *
                     w[(size_t)(((o * Cg + ci) * KH + i) * KW + j)];
          }
          y[(size_t)(((n * O + o) * Ho + oh) * Wo + ow)] = s;
        }
  return y;
}

std::vector<HostTensor> conv_fwd(const Conv& c, const std::vector<HostTensor>& in) {
  std::vector<HostTensor> out = {HostTensor::zeros(y_shape(c), GN_F64)};
  EXPECT_OK(run("conv2d", GN_F64, in, out, conv_attrs(c)));
  return out;
}

const std::vector<Conv>& cases() {
  static const std::vector<Conv> c = {
      {{2, 3, 5, 4}, {2, 3, 3, 3}, 1, 1, 0, 0, 1, 1, 1, true},   // plain
      {{1, 4, 7, 6}, {6, 2, 3, 2}, 2, 1, 1, 2, 1, 2, 2, true},   // stride, padding, dilation, groups
      {{2, 3, 6, 6}, {3, 1, 3, 3}, 2, 2, 1, 1, 2, 2, 3, false},  // depthwise, dilated
      {{1, 2, 4, 5}, {4, 2, 1, 1}, 1, 2, 0, 1, 1, 1, 1, true},   // 1x1, asymmetric stride/pad
      {{1, 1, 1, 1}, {1, 1, 1, 1}, 1, 1, 0, 0, 1, 1, 1, false},  // size 1
  };
  return c;
}

}  // namespace

TEST(ConvRef, HandComputed) {
  // x = 1..9 (3x3), w = [[1,0],[0,-1]]: y[i][j] = x[i][j] - x[i+1][j+1] = -4
  for (int32_t dt : {GN_F64, GN_F32, GN_F16, GN_BF16}) {
    HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, dt);
    HostTensor w = HostTensor::of({1, 0, 0, -1}, {1, 1, 2, 2}, dt);
    HostTensor y = HostTensor::zeros({1, 1, 2, 2}, dt);
    ASSERT_OK(
        run("conv2d", dt, {x, w, HostTensor::of({0.5}, {1}, dt)}, {y}, {aints({1}), aints({0}), aints({1}), ai(1)}));
    expect_values(y, {-3.5, -3.5, -3.5, -3.5});
    // padding 1: the corners see one element each
    HostTensor yp = HostTensor::zeros({1, 1, 4, 4}, dt);
    ASSERT_OK(run("conv2d", dt, {x, w}, {yp}, {aints({1, 1}), aints({1}), aints({1, 1}), ai(1)}));
    expect_values(yp, {-1, -2, -3, 0, -4, -4, -4, 3, -7, -4, -4, 6, 0, 7, 8, 9});
  }
}

TEST(ConvRef, MatchesTorchFixture) {
  // Generated with torch 1.13 (float64):
  //   x = [((i*7919) % 101 - 50)/8 for i in range(100)] as (1,4,5,5)
  //   w = [((i*31) % 13 - 6)/4 for i in range(48)] as (4,2,3,2), b = [0.5, -1, 0.25, 2]
  //   F.conv2d(x, w, b, stride=(2,1), padding=(1,2), dilation=(2,1), groups=2)
  std::vector<double> x, w;
  for (int i = 0; i < 100; ++i) x.push_back((double)((i * 7919) % 101 - 50) / 8.0);
  for (int i = 0; i < 48; ++i) w.push_back((double)((i * 31) % 13 - 6) / 4.0);
  const std::vector<double> want = {
      0.5,      1.125,   -6.375,  8.21875,  -8.75,    -3.625,   4.125,    0.5,      0.5,      4.09375, 11.28125,
      -2.8125,  5.1875,  3.71875, -7.46875, 0.5,      -1.0,     -7.21875, 2.78125,  -9.15625, -5.3125, 4.84375,
      -1.34375, -1.0,    -1.0,    8.75,     -12.875,  4.1875,   8.625,    -12.1875, 8.59375,  -1.0,    0.25,
      1.96875,  0.71875, -7.0625, 7.25,     -3.6875,  -6.6875,  0.25,     0.25,     -0.46875, 15.6875, -15.875,
      15.6875,  -9.5625, 6.0,     0.25,     2.0,      3.3125,   -8.9375,  20.75,    -9.53125, 1.21875, -4.28125,
      2.0,      2.0,     5.34375, -9.8125,  20.46875, -9.21875, 11.59375, 4.75,     2.0};
  HostTensor y = HostTensor::zeros({1, 4, 2, 8}, GN_F64);
  ASSERT_OK(run("conv2d", GN_F64,
                {HostTensor::of(x, {1, 4, 5, 5}, GN_F64), HostTensor::of(w, {4, 2, 3, 2}, GN_F64),
                 HostTensor::of({0.5, -1.0, 0.25, 2.0}, {4}, GN_F64)},
                {y}, {aints({2, 1}), aints({1, 2}), aints({2, 1}), ai(2)}));
  expect_values(y, want, 1e-14);
}

TEST(ConvRef, MatchesPaddedInputLoop) {
  uint64_t seed = 1;
  for (const Conv& c : cases()) {
    std::vector<double> x = rand_values(numel_of(c.x), seed++), w = rand_values(numel_of(c.w), seed++);
    std::vector<double> b = c.bias ? rand_values(c.w[0], seed++) : std::vector<double>{};
    std::vector<HostTensor> in = {HostTensor::strided_of(x, c.x, GN_F64), HostTensor::of(w, c.w, GN_F64)};
    if (c.bias) in.push_back(HostTensor::of(b, {c.w[0]}, GN_F64));
    SCOPED_TRACE(::testing::Message() << "groups " << c.g << " stride " << c.sh << "," << c.sw);
    expect_values(conv_fwd(c, in)[0], naive_conv(c, x, w, b), 1e-13);
  }
}

TEST(ConvRef, BackwardMatchesFiniteDifferences) {
  uint64_t seed = 50;
  for (const Conv& c : cases()) {
    // always differentiate with a bias so grad_bias has something to match
    std::vector<HostTensor> in = {rand_f64(c.x, seed++), rand_f64(c.w, seed++), rand_f64({c.w[0]}, seed++)};
    Shape ys = y_shape(c);
    std::vector<double> g = rand_values(numel_of(ys), seed++);
    HostTensor gx = HostTensor::zeros(c.x, GN_F64), gw = HostTensor::zeros(c.w, GN_F64),
               gb = HostTensor::zeros({c.w[0]}, GN_F64);
    ASSERT_OK(
        run("conv2d_backward", GN_F64, {HostTensor::of(g, ys, GN_F64), in[0], in[1]}, {gx, gw, gb}, conv_attrs(c)));
    Forward f = [&](const std::vector<HostTensor>& i) { return conv_fwd(c, i); };
    SCOPED_TRACE(::testing::Message() << "groups " << c.g << " stride " << c.sh << "," << c.sw);
    expect_values(gx, numeric_grad(f, in, 0, {g}), kFdTol);
    expect_values(gw, numeric_grad(f, in, 1, {g}), kFdTol);
    expect_values(gb, numeric_grad(f, in, 2, {g}), kFdTol);
  }
}

TEST(ConvRef, EmptyBatchAndBadArguments) {
  const std::vector<Attr> a = {aints({1}), aints({0}), aints({1}), ai(1)};
  ASSERT_OK(run("conv2d", GN_F64, {HostTensor::zeros({0, 2, 3, 3}, GN_F64), HostTensor::zeros({1, 2, 2, 2}, GN_F64)},
                {HostTensor::zeros({0, 1, 2, 2}, GN_F64)}, a));
  HostTensor gw = HostTensor::of(std::vector<double>(8, 9.0), {1, 2, 2, 2}, GN_F64),
             gb = HostTensor::of({9}, {1}, GN_F64);
  ASSERT_OK(run("conv2d_backward", GN_F64,
                {HostTensor::zeros({0, 1, 2, 2}, GN_F64), HostTensor::zeros({0, 2, 3, 3}, GN_F64),
                 HostTensor::zeros({1, 2, 2, 2}, GN_F64)},
                {HostTensor::zeros({0, 2, 3, 3}, GN_F64), gw, gb}, a));
  expect_values(gw, std::vector<double>(8, 0.0));
  expect_values(gb, {0.0});
  HostTensor x = HostTensor::zeros({1, 4, 3, 3}, GN_F64);
  EXPECT_CODE(
      run("conv2d", GN_F64, {x, HostTensor::zeros({2, 3, 2, 2}, GN_F64)}, {HostTensor::zeros({1, 2, 2, 2}, GN_F64)}, a),
      GN_ERR_SHAPE);  // weight in-channels 3 != 4
  EXPECT_CODE(run("conv2d", GN_F64, {x, HostTensor::zeros({3, 2, 2, 2}, GN_F64)},
                  {HostTensor::zeros({1, 3, 2, 2}, GN_F64)}, {aints({1}), aints({0}), aints({1}), ai(2)}),
              GN_ERR_INVALID_ARGUMENT);  // groups 2 does not divide 3 out channels
  EXPECT_CODE(
      run("conv2d", GN_F64, {x, HostTensor::zeros({1, 4, 4, 4}, GN_F64)}, {HostTensor::zeros({1, 1, 1, 1}, GN_F64)}, a),
      GN_ERR_SHAPE);  // kernel larger than the input
  EXPECT_CODE(run("conv2d", GN_F64, {x, HostTensor::zeros({1, 4, 2, 2}, GN_F64)},
                  {HostTensor::zeros({1, 1, 2, 2}, GN_F64)}, {aints({0}), aints({0}), aints({1}), ai(1)}),
              GN_ERR_INVALID_ARGUMENT);  // stride 0
}
