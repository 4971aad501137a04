// unary_test.cpp - elementwise unary ops, cast, copy, fill, clamp against
// closed forms from <cmath> and hand-computed values.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// n values evenly spread over [lo, hi].
std::vector<double> linspace(double lo, double hi, int n) {
  std::vector<double> v((size_t)n);
  for (int i = 0; i < n; ++i) v[(size_t)i] = lo + (hi - lo) * i / (n - 1);
  return v;
}

// Run op on xs (1-D, dtype) and compare with f applied in double, rounded to dtype.
void check_unary(const std::string& op, const std::function<double(double)>& f, const std::vector<double>& xs,
                 int32_t dtype, double tol, int32_t out_dtype = -1) {
  if (out_dtype < 0) out_dtype = dtype;
  HostTensor x = HostTensor::of(xs, {(int64_t)xs.size()}, dtype);
  HostTensor y = HostTensor::zeros({(int64_t)xs.size()}, out_dtype);
  ASSERT_OK(run(op, dtype, {x}, {y}));
  std::vector<double> want;
  for (double v : x.values()) want.push_back(round_to(f(v), out_dtype));
  SCOPED_TRACE(op + " / " + gn_dtype_name(dtype));
  expect_values(y, want, tol);
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

}  // namespace

// ----------------------------------------------------------------------------
// float math against <cmath>

TEST(ReferenceUnary, FloatMathMatchesCmath) {
  const std::vector<double> any = linspace(-6.0, 6.0, 97);
  const std::vector<double> pos = linspace(0.01, 20.0, 97);
  struct Case {
    const char* op;
    std::function<double(double)> f;
    const std::vector<double>* xs;
  } cases[] = {
      {"neg", [](double x) { return -x; }, &any},
      {"abs", [](double x) { return std::fabs(x); }, &any},
      {"exp", [](double x) { return std::exp(x); }, &any},
      {"log", [](double x) { return std::log(x); }, &pos},
      {"log1p", [](double x) { return std::log1p(x); }, &pos},
      {"sqrt", [](double x) { return std::sqrt(x); }, &pos},
      {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, &pos},
      {"sin", [](double x) { return std::sin(x); }, &any},
      {"cos", [](double x) { return std::cos(x); }, &any},
      {"tanh", [](double x) { return std::tanh(x); }, &any},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, &any},
      {"silu", [](double x) { return x / (1.0 + std::exp(-x)); }, &any},
      {"reciprocal", [](double x) { return 1.0 / x; }, &pos},
      {"square", [](double x) { return x * x; }, &any},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }, &any},
      {"floor", [](double x) { return std::floor(x); }, &any},
      {"ceil", [](double x) { return std::ceil(x); }, &any},
  };
  for (const Case& c : cases) {
    check_unary(c.op, c.f, *c.xs, GN_F64, 1e-15);
    check_unary(c.op, c.f, *c.xs, GN_F32, 0.0);  // computed in double, rounded once
    check_unary(c.op, c.f, *c.xs, GN_BF16, 0.0);
    check_unary(c.op, c.f, *c.xs, GN_F16, 0.0);
  }
}

TEST(ReferenceUnary, GeluBothForms) {
  const std::vector<double> xs = linspace(-5.0, 5.0, 41);
  HostTensor x = HostTensor::of(xs, {41}, GN_F64);
  HostTensor y = HostTensor::zeros({41}, GN_F64);
  ASSERT_OK(run("gelu", GN_F64, {x}, {y}, {ai(0)}));
  std::vector<double> want;
  for (double v : xs) want.push_back(gelu_erf(v));
  expect_values(y, want, 1e-15);
  ASSERT_OK(run("gelu", GN_F64, {x}, {y}, {ai(1)}));
  want.clear();
  for (double v : xs) want.push_back(gelu_tanh(v));
  expect_values(y, want, 1e-15);
  // Known values: gelu(1) = Phi(1) = 0.8413447460685429; tanh form 0.8411919906082768.
  HostTensor one = HostTensor::scalar(1.0, GN_F64), r = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("gelu", GN_F64, {one}, {r}, {ai(0)}));
  EXPECT_NEAR(r.at(0), 0.8413447460685429, 1e-15);
  ASSERT_OK(run("gelu", GN_F64, {one}, {r}, {ai(1)}));
  EXPECT_NEAR(r.at(0), 0.8411919906082768, 1e-15);
}

TEST(ReferenceUnary, SpecialValues) {
  HostTensor x = HostTensor::of({kNan, kInf, -kInf, 0.0, -0.0, -2.5}, {6}, GN_F32);
  HostTensor y = HostTensor::zeros({6}, GN_F32);
  ASSERT_OK(run("relu", GN_F32, {x}, {y}));
  expect_values(y, {kNan, kInf, 0, 0, 0, 0});
  ASSERT_OK(run("sign", GN_F32, {x}, {y}));
  expect_values(y, {0, 1, -1, 0, 0, -1});  // torch: sign(NaN) = 0
  ASSERT_OK(run("exp", GN_F32, {x}, {y}));
  expect_values(y, {kNan, kInf, 0, 1, 1, std::exp(-2.5)}, 1e-7);
  HostTensor b = HostTensor::zeros({6}, GN_BOOL);
  ASSERT_OK(run("isnan", GN_F32, {x}, {b}));
  expect_ints(b, {1, 0, 0, 0, 0, 0});
  ASSERT_OK(run("isinf", GN_F32, {x}, {b}));
  expect_ints(b, {0, 1, 1, 0, 0, 0});
  ASSERT_OK(run("isfinite", GN_F32, {x}, {b}));
  expect_ints(b, {0, 0, 0, 1, 1, 1});
  ASSERT_OK(run("logical_not", GN_F32, {x}, {b}));
  expect_ints(b, {0, 0, 0, 1, 1, 0});
  HostTensor l = HostTensor::of({-1.0, 0.0}, {2}, GN_F64), ly = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("log", GN_F64, {l}, {ly}));
  expect_values(ly, {kNan, -kInf});
}

TEST(ReferenceUnary, RoundHalfToEven) {
  HostTensor x = HostTensor::of({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, 3.5}, {9}, GN_F32);
  HostTensor y = HostTensor::zeros({9}, GN_F32);
  ASSERT_OK(run("round", GN_F32, {x}, {y}));
  expect_values(y, {0, 2, 2, 0, -2, -2, 2, 3, 4});
}

// ----------------------------------------------------------------------------
// integers and bool

TEST(ReferenceUnary, IntegersAreExact) {
  const int64_t big = (int64_t(1) << 62) + 1;  // not representable in double
  HostTensor x = HostTensor::of_ints({big, -big, 7, INT64_MIN}, {4}, GN_I64);
  HostTensor y = HostTensor::zeros({4}, GN_I64);
  ASSERT_OK(run("neg", GN_I64, {x}, {y}));
  expect_ints(y, {-big, big, -7, INT64_MIN});  // wraps like torch
  ASSERT_OK(run("abs", GN_I64, {x}, {y}));
  expect_ints(y, {big, big, 7, INT64_MIN});
  ASSERT_OK(run("sign", GN_I64, {x}, {y}));
  expect_ints(y, {1, -1, 1, -1});
  ASSERT_OK(run("relu", GN_I64, {x}, {y}));
  expect_ints(y, {big, 0, 7, 0});
  for (const char* op : {"floor", "ceil", "round"}) {
    ASSERT_OK(run(op, GN_I64, {x}, {y}));
    expect_ints(y, {big, -big, 7, INT64_MIN});
  }
  HostTensor s = HostTensor::of_ints({3037000499, -5}, {2}, GN_I64), sy = HostTensor::zeros({2}, GN_I64);
  ASSERT_OK(run("square", GN_I64, {s}, {sy}));
  expect_ints(sy, {INT64_C(9223372030926249001), 25});
  // int8 wraps: neg(-128) = -128, square(16) = 0.
  HostTensor i8 = HostTensor::of_ints({-128, 16, -3}, {3}, GN_I8), o8 = HostTensor::zeros({3}, GN_I8);
  ASSERT_OK(run("neg", GN_I8, {i8}, {o8}));
  expect_ints(o8, {-128, -16, 3});
  ASSERT_OK(run("square", GN_I8, {i8}, {o8}));
  expect_ints(o8, {0, 0, 9});
}

TEST(ReferenceUnary, IntAndBoolInputsOfFloatOps) {
  // An integer input with a float output (no cast by the core): computed in double.
  HostTensor x = HostTensor::of_ints({0, 1, 2}, {3}, GN_I32);
  HostTensor y = HostTensor::zeros({3}, GN_F32);
  ASSERT_OK(run("exp", GN_I32, {x}, {y}));
  expect_values(y, {1.0, round_to(std::exp(1.0), GN_F32), round_to(std::exp(2.0), GN_F32)});
  HostTensor b = HostTensor::of_ints({1, 0, 1}, {3}, GN_BOOL);
  HostTensor bo = HostTensor::zeros({3}, GN_BOOL);
  ASSERT_OK(run("logical_not", GN_BOOL, {b}, {bo}));
  expect_ints(bo, {0, 1, 0});
  ASSERT_OK(run("sign", GN_BOOL, {b}, {bo}));
  expect_ints(bo, {1, 0, 1});
  HostTensor sq = HostTensor::zeros({3}, GN_I64);  // square(bool) -> int64
  ASSERT_OK(run("square", GN_BOOL, {b}, {sq}));
  expect_ints(sq, {1, 0, 1});
}

// ----------------------------------------------------------------------------
// reduced precision: rounding to nearest even, checked on bit patterns

TEST(ReferenceUnary, HalfAndBfloatRounding) {
  // exp(1) = 2.71828...: nearest bf16 and f16 are both 2.71875.
  HostTensor xb = HostTensor::of({1.0}, {1}, GN_BF16), yb = HostTensor::zeros({1}, GN_BF16);
  ASSERT_OK(run("exp", GN_BF16, {xb}, {yb}));
  EXPECT_EQ(yb.bits16(0), 0x402E);
  HostTensor xh = HostTensor::of({1.0}, {1}, GN_F16), yh = HostTensor::zeros({1}, GN_F16);
  ASSERT_OK(run("exp", GN_F16, {xh}, {yh}));
  EXPECT_EQ(yh.bits16(0), 0x4170);
  // Casts from f64: ties go to even.
  HostTensor x = HostTensor::of({1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), 1.0 / 3.0, 65504.0, 65520.0},
                                {5}, GN_F64);
  HostTensor b = HostTensor::zeros({5}, GN_BF16), h = HostTensor::zeros({5}, GN_F16);
  ASSERT_OK(run("cast", GN_F64, {x}, {b}, {ai(GN_BF16)}));
  EXPECT_EQ(b.bits16(0), 0x3F80);  // 1 + 2^-8 -> 1.0
  EXPECT_EQ(b.bits16(1), 0x3F82);  // 1 + 3*2^-8 -> 1 + 2^-6
  EXPECT_EQ(b.bits16(2), 0x3EAB);  // 1/3
  ASSERT_OK(run("cast", GN_F64, {x}, {h}, {ai(GN_F16)}));
  EXPECT_EQ(h.bits16(2), 0x3555);  // 1/3
  EXPECT_EQ(h.bits16(3), 0x7BFF);  // 65504 = max half
  EXPECT_EQ(h.bits16(4), 0x7C00);  // 65520 overflows to inf
}

// ----------------------------------------------------------------------------
// cast and copy

TEST(ReferenceUnary, CastRules) {
  HostTensor x = HostTensor::of({-2.7, 2.7, 0.0, kNan, -0.5, 300.0}, {6}, GN_F64);
  HostTensor i = HostTensor::zeros({6}, GN_I32);
  ASSERT_OK(run("cast", GN_F64, {x}, {i}, {ai(GN_I32)}));
  std::vector<int64_t> got = i.ints();
  EXPECT_EQ(got[0], -2);  // truncation toward zero
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(got[4], 0);
  EXPECT_EQ(got[5], 300);
  HostTensor b = HostTensor::zeros({6}, GN_BOOL);
  ASSERT_OK(run("cast", GN_F64, {x}, {b}, {ai(GN_BOOL)}));
  expect_ints(b, {1, 1, 0, 1, 1, 1});  // x != 0; NaN is true
  // int64 -> int32 wraps; int64 -> int64 exact.
  const int64_t big = (int64_t(1) << 32) + 5;
  HostTensor xi = HostTensor::of_ints({big, (int64_t(1) << 53) + 1}, {2}, GN_I64);
  HostTensor o32 = HostTensor::zeros({2}, GN_I32), o64 = HostTensor::zeros({2}, GN_I64),
             of = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("cast", GN_I64, {xi}, {o32}, {ai(GN_I32)}));
  EXPECT_EQ(o32.ints()[0], 5);
  ASSERT_OK(run("cast", GN_I64, {xi}, {o64}, {ai(GN_I64)}));
  expect_ints(o64, {big, (int64_t(1) << 53) + 1});
  ASSERT_OK(run("cast", GN_I64, {xi}, {of}, {ai(GN_F64)}));
  EXPECT_EQ(of.at(1), std::ldexp(1.0, 53));  // nearest double
}

TEST(ReferenceUnary, CopyBroadcastsAndConverts) {
  HostTensor x = HostTensor::of({1.9, -2.5, 3.0}, {3}, GN_F64);
  HostTensor y = HostTensor::zeros({2, 3}, GN_I32);
  ASSERT_OK(run("copy", GN_F64, {x}, {y}));
  expect_ints(y, {1, -2, 3, 1, -2, 3});
  HostTensor col = HostTensor::of({5, 6}, {2, 1}, GN_F32);
  HostTensor z = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("copy", GN_F32, {col}, {z}));
  expect_values(z, {5, 5, 5, 6, 6, 6});
  HostTensor bad = HostTensor::zeros({4}, GN_F32);
  EXPECT_CODE(run("copy", GN_F64, {x}, {bad}), GN_ERR_SHAPE);
}

// ----------------------------------------------------------------------------
// layouts: non-contiguous, expanded, empty, 0-d, size-1 dims

TEST(ReferenceUnary, StridedInputs) {
  // x = [[1,2,3],[4,5,6]]; x.T = [[1,4],[2,5],[3,6]]
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("neg", GN_F32, {x.transposed(0, 1)}, {y}));
  expect_values(y, {-1, -4, -2, -5, -3, -6});
  HostTensor s = HostTensor::strided_of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F64);
  HostTensor ys = HostTensor::zeros({2, 3}, GN_F64);
  ASSERT_OK(run("square", GN_F64, {s}, {ys}));
  expect_values(ys, {1, 4, 9, 16, 25, 36});
  HostTensor e = HostTensor::of({2, 3}, {2, 1}, GN_F32).expanded({2, 4});
  HostTensor ye = HostTensor::zeros({2, 4}, GN_F32);
  ASSERT_OK(run("abs", GN_F32, {e}, {ye}));
  expect_values(ye, {2, 2, 2, 2, 3, 3, 3, 3});
  HostTensor every_other = HostTensor::of({0, 1, 2, 3, 4, 5}, {6}, GN_I64).sliced(0, 1, 3, 2);  // [1, 3, 5]
  HostTensor yo = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("neg", GN_I64, {every_other}, {yo}));
  expect_ints(yo, {-1, -3, -5});
}

TEST(ReferenceUnary, EmptyZeroDimAndSizeOne) {
  HostTensor e = HostTensor::zeros({0, 3}, GN_F32), ye = HostTensor::zeros({0, 3}, GN_F32);
  EXPECT_OK(run("exp", GN_F32, {e}, {ye}));
  EXPECT_OK(run("clamp", GN_F32, {e}, {ye}, {af(0), af(1)}));
  EXPECT_OK(run("fill", GN_F32, {e}, {}, {af(3)}));
  HostTensor s = HostTensor::scalar(-4.0, GN_F64), ys = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("abs", GN_F64, {s}, {ys}));
  expect_values(ys, {4});
  HostTensor one = HostTensor::of({9}, {1, 1, 1}, GN_F32), y1 = HostTensor::zeros({1, 1, 1}, GN_F32);
  ASSERT_OK(run("sqrt", GN_F32, {one}, {y1}));
  expect_values(y1, {3});
}

// ----------------------------------------------------------------------------
// fill and clamp

TEST(ReferenceUnary, FillInPlaceOnlyTouchesTheView) {
  HostTensor x = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  ASSERT_OK(run("fill", GN_F32, {x.sliced(1, 1, 2)}, {}, {af(-7.5)}));  // columns 1..2
  expect_values(x, {1, -7.5, -7.5, 4, -7.5, -7.5});
  HostTensor i = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("fill", GN_I64, {i}, {}, {af(42)}));
  expect_ints(i, {42, 42, 42});
  HostTensor b = HostTensor::zeros({2}, GN_BOOL);
  ASSERT_OK(run("fill", GN_BOOL, {b}, {}, {af(0.5)}));
  expect_ints(b, {1, 1});
}

TEST(ReferenceUnary, Clamp) {
  HostTensor x = HostTensor::of({-3, -1, 0, 1, 3, kNan}, {6}, GN_F32);
  HostTensor y = HostTensor::zeros({6}, GN_F32);
  ASSERT_OK(run("clamp", GN_F32, {x}, {y}, {af(-1.5), af(2.0)}));
  expect_values(y, {-1.5, -1, 0, 1, 2, kNan});
  ASSERT_OK(run("clamp", GN_F32, {x}, {y}, {af(-kInf), af(0.5)}));
  expect_values(y, {-3, -1, 0, 0.5, 0.5, kNan});
  ASSERT_OK(run("clamp", GN_F32, {x}, {y}, {af(2.0), af(1.0)}));  // min > max: max wins (torch)
  expect_values(y, {1, 1, 1, 1, 1, kNan});
  ASSERT_OK(run("clamp", GN_F32, {x}, {y}, {af(kNan), af(1.0)}));
  expect_values(y, {kNan, kNan, kNan, kNan, kNan, kNan});
  const int64_t big = (int64_t(1) << 60) + 3;
  HostTensor xi = HostTensor::of_ints({big, -big, 5}, {3}, GN_I64), yi = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("clamp", GN_I64, {xi}, {yi}, {af(0), af(kInf)}));
  expect_ints(yi, {big, 0, 5});
  ASSERT_OK(run("clamp", GN_I64, {xi}, {yi}, {af(-kInf), af(4.5)}));
  expect_ints(yi, {4, -big, 4});
}
