// binary_test.cpp - elementwise binary ops and where: broadcasting, strides,
// integer exactness, division modes, NaN rules, error paths.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// ----------------------------------------------------------------------------
// arithmetic and broadcasting

TEST(ReferenceBinary, AddBroadcastRowVector) {
  // (2,3) + (3)
  HostTensor a = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  HostTensor b = HostTensor::of({10, 20, 30}, {3}, GN_F32);
  HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("add", GN_F32, {a, b}, {y}, {af(1.0)}));
  expect_values(y, {11, 22, 33, 14, 25, 36});
  ASSERT_OK(run("add", GN_F32, {a, b}, {y}, {af(-0.5)}));
  expect_values(y, {-4, -8, -12, -1, -5, -9});
  ASSERT_OK(run("sub", GN_F32, {a, b}, {y}, {af(2.0)}));
  expect_values(y, {-19, -38, -57, -16, -35, -54});
}

TEST(ReferenceBinary, OuterBroadcast) {
  // (2,1) * (1,3) -> (2,3); also rank-extending (3) vs (2,1).
  HostTensor a = HostTensor::of({2, 3}, {2, 1}, GN_F64);
  HostTensor b = HostTensor::of({1, 10, 100}, {1, 3}, GN_F64);
  HostTensor y = HostTensor::zeros({2, 3}, GN_F64);
  ASSERT_OK(run("mul", GN_F64, {a, b}, {y}));
  expect_values(y, {2, 20, 200, 3, 30, 300});
  HostTensor c = HostTensor::of({1, 10, 100}, {3}, GN_F64);
  ASSERT_OK(run("add", GN_F64, {a, c}, {y}, {af(1.0)}));
  expect_values(y, {3, 12, 102, 4, 13, 103});
  HostTensor bad = HostTensor::of({1, 2}, {2}, GN_F64);
  EXPECT_CODE(run("add", GN_F64, {a, bad}, {y}, {af(1.0)}), GN_ERR_SHAPE);
}

TEST(ReferenceBinary, NonContiguousAndZeroDim) {
  // a.T (3,2) + b (3,2) strided; then a 0-d operand.
  HostTensor a = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32).transposed(0, 1);  // [[1,4],[2,5],[3,6]]
  HostTensor b = HostTensor::strided_of({10, 20, 30, 40, 50, 60}, {3, 2}, GN_F32);
  HostTensor y = HostTensor::zeros({3, 2}, GN_F32);
  ASSERT_OK(run("sub", GN_F32, {b, a}, {y}, {af(1.0)}));
  expect_values(y, {9, 16, 28, 35, 47, 54});
  HostTensor s = HostTensor::scalar(2.0, GN_F32);
  ASSERT_OK(run("pow", GN_F32, {a, s}, {y}));
  expect_values(y, {1, 16, 4, 25, 9, 36});
  HostTensor s2 = HostTensor::scalar(3.0, GN_F32), ys = HostTensor::zeros({}, GN_F32);
  ASSERT_OK(run("mul", GN_F32, {s, s2}, {ys}));
  expect_values(ys, {6});
  HostTensor e = HostTensor::zeros({0, 2}, GN_F32), ye = HostTensor::zeros({0, 2}, GN_F32);
  EXPECT_OK(run("add", GN_F32, {e, HostTensor::of({1, 2}, {2}, GN_F32)}, {ye}, {af(1.0)}));
}

TEST(ReferenceBinary, ReducedPrecisionRoundsOnce) {
  // bf16: 1 + 2^-8 is a tie -> 1.0; computed in double and rounded once.
  HostTensor a = HostTensor::of({1.0, 1.0}, {2}, GN_BF16);
  HostTensor b = HostTensor::of({std::ldexp(1.0, -8), 3 * std::ldexp(1.0, -8)}, {2}, GN_BF16);
  HostTensor y = HostTensor::zeros({2}, GN_BF16);
  ASSERT_OK(run("add", GN_BF16, {a, b}, {y}, {af(1.0)}));
  EXPECT_EQ(y.bits16(0), 0x3F80);
  EXPECT_EQ(y.bits16(1), 0x3F82);
  HostTensor h = HostTensor::of({1.0}, {1}, GN_F16), h3 = HostTensor::of({3.0}, {1}, GN_F16);
  HostTensor yh = HostTensor::zeros({1}, GN_F16);
  ASSERT_OK(run("div", GN_F16, {h, h3}, {yh}, {ai(0)}));
  EXPECT_EQ(yh.bits16(0), 0x3555);
}

// ----------------------------------------------------------------------------
// integers

TEST(ReferenceBinary, Int64IsExactBeyond2To53) {
  const int64_t big = (int64_t(1) << 53) + 1;
  HostTensor a = HostTensor::of_ints({big, big, INT64_MAX}, {3}, GN_I64);
  HostTensor b = HostTensor::of_ints({1, 2, 1}, {3}, GN_I64);
  HostTensor y = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("add", GN_I64, {a, b}, {y}, {af(1.0)}));
  expect_ints(y, {big + 1, big + 2, INT64_MIN});  // wraps like torch
  ASSERT_OK(run("add", GN_I64, {a, b}, {y}, {af(3.0)}));
  expect_ints(y, {big + 3, big + 6, INT64_MIN + 2});
  ASSERT_OK(run("sub", GN_I64, {a, b}, {y}, {af(1.0)}));
  expect_ints(y, {big - 1, big - 2, INT64_MAX - 1});
  ASSERT_OK(run("mul", GN_I64, {a, b}, {y}));
  expect_ints(y, {big, 2 * big, INT64_MAX});
  ASSERT_OK(run("maximum", GN_I64, {a, HostTensor::of_ints({big + 1, big - 1, 0}, {3}, GN_I64)}, {y}));
  expect_ints(y, {big + 1, big, INT64_MAX});
  EXPECT_CODE(run("add", GN_I64, {a, b}, {y}, {af(0.5)}), GN_ERR_INVALID_ARGUMENT);  // alpha must be integral
  HostTensor c = HostTensor::zeros({3}, GN_BOOL);
  ASSERT_OK(run("eq", GN_I64, {a, HostTensor::of_ints({big - 1, big, INT64_MAX}, {3}, GN_I64)}, {c}));
  expect_ints(c, {0, 1, 1});  // big vs big-1 differ although equal as doubles
  ASSERT_OK(run("lt", GN_I64, {HostTensor::of_ints({big - 1, big, 0}, {3}, GN_I64), a}, {c}));
  expect_ints(c, {1, 0, 1});
}

TEST(ReferenceBinary, SmallIntsWrap) {
  HostTensor a8 = HostTensor::of_ints({100, -100, 127}, {3}, GN_I8),
             b8 = HostTensor::of_ints({100, -100, 1}, {3}, GN_I8);
  HostTensor y8 = HostTensor::zeros({3}, GN_I8);
  ASSERT_OK(run("add", GN_I8, {a8, b8}, {y8}, {af(1.0)}));
  expect_ints(y8, {-56, 56, -128});
  HostTensor u = HostTensor::of_ints({250, 3}, {2}, GN_U8), v = HostTensor::of_ints({10, 5}, {2}, GN_U8);
  HostTensor yu = HostTensor::zeros({2}, GN_U8);
  ASSERT_OK(run("add", GN_U8, {u, v}, {yu}, {af(1.0)}));
  expect_ints(yu, {4, 8});
  ASSERT_OK(run("sub", GN_U8, {v, u}, {yu}, {af(1.0)}));
  expect_ints(yu, {16, 2});
}

TEST(ReferenceBinary, IntegerPow) {
  HostTensor a = HostTensor::of_ints({3, -2, 2, 0, 7}, {5}, GN_I64);
  HostTensor b = HostTensor::of_ints({4, 3, 62, 0, 1}, {5}, GN_I64);
  HostTensor y = HostTensor::zeros({5}, GN_I64);
  ASSERT_OK(run("pow", GN_I64, {a, b}, {y}));
  expect_ints(y, {81, -8, int64_t(1) << 62, 1, 7});
  EXPECT_CODE(run("pow", GN_I64, {a, HostTensor::of_ints({-1}, {1}, GN_I64)}, {y}), GN_ERR_INVALID_ARGUMENT);
}

TEST(ReferenceBinary, BoolArithmetic) {
  HostTensor a = HostTensor::of_ints({0, 0, 1, 1}, {4}, GN_BOOL), b = HostTensor::of_ints({0, 1, 0, 1}, {4}, GN_BOOL);
  HostTensor y = HostTensor::zeros({4}, GN_BOOL);
  ASSERT_OK(run("add", GN_BOOL, {a, b}, {y}, {af(1.0)}));
  expect_ints(y, {0, 1, 1, 1});
  ASSERT_OK(run("mul", GN_BOOL, {a, b}, {y}));
  expect_ints(y, {0, 0, 0, 1});
  ASSERT_OK(run("logical_and", GN_BOOL, {a, b}, {y}));
  expect_ints(y, {0, 0, 0, 1});
  ASSERT_OK(run("logical_or", GN_BOOL, {a, b}, {y}));
  expect_ints(y, {0, 1, 1, 1});
  ASSERT_OK(run("ne", GN_BOOL, {a, b}, {y}));
  expect_ints(y, {0, 1, 1, 0});
}

// ----------------------------------------------------------------------------
// division

TEST(ReferenceBinary, DivisionModesFloat) {
  HostTensor a = HostTensor::of({7, -7, 7, -7, 1, 0, -1, 5.5}, {8}, GN_F64);
  HostTensor b = HostTensor::of({2, 2, -2, -2, 0, 0, 0, 0.5}, {8}, GN_F64);
  HostTensor y = HostTensor::zeros({8}, GN_F64);
  ASSERT_OK(run("div", GN_F64, {a, b}, {y}, {ai(0)}));
  expect_values(y, {3.5, -3.5, -3.5, 3.5, kInf, kNan, -kInf, 11});
  ASSERT_OK(run("div", GN_F64, {a, b}, {y}, {ai(1)}));
  expect_values(y, {3, -3, -3, 3, kInf, kNan, -kInf, 11});
  ASSERT_OK(run("div", GN_F64, {a, b}, {y}, {ai(2)}));
  expect_values(y, {3, -4, -4, 3, kInf, kNan, -kInf, 11});
  // floor of an exact quotient that rounding would push up: 1 / 0.1 = 9.999.. -> 9 (torch)
  HostTensor c = HostTensor::of({1.0}, {1}, GN_F64), d = HostTensor::of({0.1}, {1}, GN_F64),
             z = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("div", GN_F64, {c, d}, {z}, {ai(2)}));
  expect_values(z, {9});
}

TEST(ReferenceBinary, DivisionModesInt) {
  HostTensor a = HostTensor::of_ints({7, -7, 7, -7, INT64_MIN}, {5}, GN_I64);
  HostTensor b = HostTensor::of_ints({2, 2, -2, -2, -1}, {5}, GN_I64);
  HostTensor y = HostTensor::zeros({5}, GN_I64);
  ASSERT_OK(run("div", GN_I64, {a, b}, {y}, {ai(1)}));
  expect_ints(y, {3, -3, -3, 3, INT64_MIN});
  ASSERT_OK(run("div", GN_I64, {a, b}, {y}, {ai(2)}));
  expect_ints(y, {3, -4, -4, 3, INT64_MIN});
  // True division of ints gives floats; division by zero gives inf there.
  HostTensor f = HostTensor::zeros({5}, GN_F32);
  ASSERT_OK(run("div", GN_I64, {a, HostTensor::of_ints({2, 2, -2, 0, 1}, {5}, GN_I64)}, {f}, {ai(0)}));
  expect_values(f, {3.5, -3.5, -3.5, -kInf, round_to(-9.223372036854775808e18, GN_F32)});
}

TEST(ReferenceBinary, IntegerDivisionByZeroIsAnError) {
  HostTensor a = HostTensor::of_ints({1, 2}, {2}, GN_I32), b = HostTensor::of_ints({1, 0}, {2}, GN_I32);
  HostTensor y = HostTensor::zeros({2}, GN_I32);
  for (int64_t mode : {1, 2}) {
    Status st = run("div", GN_I32, {a, b}, {y}, {ai(mode)});
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->code, GN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(st->msg.find("ZeroDivisionError"), std::string::npos) << st->msg;
    EXPECT_EQ(st->msg.rfind("[div]", 0), 0u) << st->msg;
  }
}

// ----------------------------------------------------------------------------
// maximum/minimum, comparisons, where

TEST(ReferenceBinary, MaximumMinimumPropagateNan) {
  HostTensor a = HostTensor::of({1, kNan, 3, -0.5}, {4}, GN_F32), b = HostTensor::of({2, 1, kNan, -1}, {4}, GN_F32);
  HostTensor y = HostTensor::zeros({4}, GN_F32);
  ASSERT_OK(run("maximum", GN_F32, {a, b}, {y}));
  expect_values(y, {2, kNan, kNan, -0.5});
  ASSERT_OK(run("minimum", GN_F32, {a, b}, {y}));
  expect_values(y, {1, kNan, kNan, -1});
}

TEST(ReferenceBinary, Comparisons) {
  HostTensor a = HostTensor::of({1, 2, 3, kNan}, {4}, GN_F32), b = HostTensor::of({2}, {}, GN_F32);
  HostTensor y = HostTensor::zeros({4}, GN_BOOL);
  struct Case {
    const char* op;
    std::vector<int64_t> want;
  } cases[] = {{"eq", {0, 1, 0, 0}}, {"ne", {1, 0, 1, 1}}, {"lt", {1, 0, 0, 0}},
               {"le", {1, 1, 0, 0}}, {"gt", {0, 0, 1, 0}}, {"ge", {0, 1, 1, 0}}};
  for (const Case& c : cases) {
    ASSERT_OK(run(c.op, GN_F32, {a, b}, {y}));
    SCOPED_TRACE(c.op);
    expect_ints(y, c.want);
  }
  HostTensor n = HostTensor::of({0, 2, kNan}, {3}, GN_F32), z = HostTensor::zeros({3}, GN_BOOL);
  ASSERT_OK(run("logical_and", GN_F32, {n, HostTensor::of({1, 1, 1}, {3}, GN_F32)}, {z}));
  expect_ints(z, {0, 1, 1});  // NaN is truthy
}

TEST(ReferenceBinary, WhereBroadcastsAllThree) {
  // cond (2,1), a (3), b 0-d -> (2,3)
  HostTensor c = HostTensor::of_ints({1, 0}, {2, 1}, GN_BOOL);
  HostTensor a = HostTensor::of({1, 2, 3}, {3}, GN_F32);
  HostTensor b = HostTensor::scalar(-1, GN_F32);
  HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("where", GN_F32, {c, a, b}, {y}));
  expect_values(y, {1, 2, 3, -1, -1, -1});
  const int64_t big = (int64_t(1) << 60) + 1;
  HostTensor ci = HostTensor::of_ints({1, 0, 1}, {3}, GN_BOOL);
  HostTensor ai64 = HostTensor::of_ints({big, big, big}, {3}, GN_I64),
             bi64 = HostTensor::of_ints({-big, -big, -big}, {3}, GN_I64);
  HostTensor yi = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("where", GN_I64, {ci, ai64, bi64}, {yi}));
  expect_ints(yi, {big, -big, big});
}
