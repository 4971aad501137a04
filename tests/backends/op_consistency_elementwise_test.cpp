// tests/backends/op_consistency_elementwise_test.cpp - the cross-backend suite,
// part 2: C++ unary ops (log, log1p, sin, cos, rsqrt, reciprocal, floor, ceil,
// round, sign, logical_not, isnan/isinf/isfinite), cast and copy between
// dtypes, fill, and the random ops (bit-identical to the reference).
//
// Tolerances:
//  * f32 log/log1p/sin/cos: glibc's float functions are within 1 ulp of the
//    exact result, the reference rounds the double result once: rtol 1e-6
//    (~8 ulp) plus atol 1e-7 for results near 0 (sin near pi, log near 1).
//  * f32 rsqrt is computed in double and rounded once, like the reference: exact.
//  * f64 libm double functions vs the same: rtol 1e-14 (a few ulp).
//  * reciprocal, floor, ceil, round, sign, the bool ops, cast, copy and the
//    random ops are exact (IEEE division, exact conversions; the RNG is the
//    same Philox formula): tolerance 0.
#include <set>

#include "op_consistency.h"

namespace {

std::vector<Case> elementwise_cases() {
  struct U {
    const char* op;
    double lo, hi;
    Tol f32, f64;
  };
  const Tol libm32{1e-6, 1e-7}, libm64{1e-14, 1e-15};  // rsqrt: exact (double, one rounding)
  const std::vector<U> ops = {
      {"log", 0.01, 10, libm32, libm64}, {"log1p", -0.9, 10, libm32, libm64},     {"sin", -10, 10, libm32, libm64},
      {"cos", -10, 10, libm32, libm64},  {"rsqrt", 0.01, 10, kExact, {1e-15, 0}}, {"reciprocal", -3, 3, kExact, kExact},
      {"floor", -5, 5, kExact, kExact},  {"ceil", -5, 5, kExact, kExact},         {"round", -5, 5, kExact, kExact},
      {"sign", -2, 2, kExact, kExact},   {"logical_not", -1, 1, kExact, kExact},  {"isnan", -1, 1, kExact, kExact},
      {"isinf", -1, 1, kExact, kExact},  {"isfinite", -1, 1, kExact, kExact},
  };
  const std::vector<std::pair<std::vector<int64_t>, Layout>> shapes = {
      {{257, 513}, kContig}, {{3, 5, 7}, kContig}, {{31, 17}, kTransposed}, {{6, 9}, kSliced},
      {{0, 4}, kContig},     {{}, kContig},        {{1}, kContig}};
  std::vector<Case> cs;
  // f16, bf16, integers and bool go through the generic C++ path (the
  // reference's double formulas, one rounding into the output dtype): exact.
  // Integer inputs use integer ranges (values truncated toward zero); those
  // of float ops (log, sin, ...) are cast to f32 by the core first, so they
  // get the f32 tolerance.  floor/ceil/round take no bool.
  const std::set<std::string> int_form = {"floor",       "ceil",  "round", "sign",
                                          "logical_not", "isnan", "isinf", "isfinite"};
  for (const U& u : ops)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I32, GN_I64, GN_I8, GN_BOOL})
      for (const auto& [shape, layout] : shapes) {
        const bool small = dt != GN_F32 && dt != GN_F64;
        if (small && shape.size() == 3) continue;
        const std::string op = u.op;
        if (dt == GN_BOOL && (op == "floor" || op == "ceil" || op == "round")) continue;
        Case c;
        c.name = std::string(u.op) + "_" + dname(dt) + "_" + sname(shape) + lname(layout);
        c.op = u.op;
        const bool integral = dt == GN_I32 || dt == GN_I64 || dt == GN_I8 || dt == GN_BOOL;
        c.inputs = {{shape, dt, layout, integral ? std::min(u.lo, -3.0) : u.lo, integral ? std::max(u.hi, 4.0) : u.hi}};
        c.tol = dt == GN_F32 ? u.f32 : dt == GN_F64 ? u.f64 : integral && !int_form.count(op) ? u.f32 : kExact;
        cs.push_back(c);
      }
  // cast: every pair among these dtypes, values in [-300, 300] so that i8/u8
  // wrap and bool sees both; large contiguous, transposed and sliced inputs.
  const int32_t dts[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  for (int32_t from : dts)
    for (int32_t to : dts)
      for (const auto& [shape, layout] : std::vector<std::pair<std::vector<int64_t>, Layout>>{
               {{129, 257}, kContig}, {{13, 9}, kTransposed}, {{5, 7}, kSliced}, {{0, 3}, kContig}, {{}, kContig}}) {
        if (from == to && layout == kContig && !shape.empty() && shape[0] == 0) continue;
        Case c;
        c.name = "cast_" + dname(from) + "_to_" + dname(to) + "_" + sname(shape) + lname(layout);
        c.op = "cast";
        c.inputs = {{shape, from, layout, -300, 300}};
        c.attrs = {gn_attr_int(to)};
        c.tol = kExact;
        cs.push_back(c);
      }
  // copy: strided -> dense
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64})
    for (const auto& [shape, layout] : std::vector<std::pair<std::vector<int64_t>, Layout>>{
             {{300, 301}, kTransposed}, {{64, 1000}, kSliced}, {{3, 4, 5}, kTransposed}, {{1000, 1000}, kContig}}) {
      Case c;
      c.name = "copy_" + dname(dt) + "_" + sname(shape) + lname(layout);
      c.op = "copy";
      c.inputs = {{shape, dt, layout, -100, 100}};
      c.tol = kExact;
      cs.push_back(c);
    }
  // random ops: same seed on both runtimes, bit-identical values.
  const std::vector<std::vector<int64_t>> rshapes = {{1000, 37}, {5}, {0, 3}, {}, {257, 129}};
  for (const auto& shape : rshapes) {
    for (const char* op : {"rand", "randn"})
      for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16}) {
        Case c;
        c.name = std::string(op) + "_" + dname(dt) + "_" + sname(shape);
        c.op = op;
        c.attrs = {gn_attr_int(0), gn_attr_int(dt), gn_attr_int(0)};
        c.ints = {{0, shape}};
        c.device_attr = 2;
        c.seed = 1234567;
        c.tol = kExact;
        cs.push_back(c);
      }
    for (int32_t dt : {GN_I64, GN_I32, GN_F32, GN_I8, GN_U8, GN_BF16, GN_F16})
      for (auto [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {-5, 3}, {-(1ll << 31), 1ll << 31}}) {
        Case c;
        c.name = "randint_" + dname(dt) + "_" + sname(shape) + "_" + std::to_string(hi - lo);
        c.op = "randint";
        c.attrs = {gn_attr_int(lo), gn_attr_int(hi), gn_attr_int(0), gn_attr_int(dt), gn_attr_int(0)};
        c.ints = {{2, shape}};
        c.device_attr = 4;
        c.seed = 99;
        c.tol = kExact;
        cs.push_back(c);
      }
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16}) {
      Case c;
      c.name = "bernoulli_" + dname(dt) + "_" + sname(shape);
      c.op = "bernoulli";
      c.inputs = {{shape, dt, kContig, 0, 1}};
      c.seed = 7;
      c.tol = kExact;
      cs.push_back(c);
    }
  }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyElementwise, Elementwise, elementwise_cases)

namespace {

// Values of a 1-D f32/f64 tensor made from host data after op (one output).
std::vector<double> run_on(Rt& r, const char* op, const std::vector<double>& v, int32_t dt) {
  gt::T x = gt::make(r.rt, r.host, v, {(int64_t)v.size()}, GN_F64);
  gn_tensor* xd = nullptr;
  EXPECT_EQ(gn_tensor_to_dtype(x.t, dt, &xd), nullptr);
  gt::T xt(move_to(xd, r.dev));
  gt::T y;
  gn_status* st = gt::call1(r.rt, op, {xt.t}, {}, &y);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return st ? std::vector<double>{} : as_f64(y.t);
}

// Halves round to even; NaN/inf through the predicates and sign.
TEST(CpuElementwise, SpecialValues) {
  OPC_REQUIRE_SUITE();
  const std::vector<double> v = {0.5, 1.5,  2.5, -0.5,     -1.5,      -2.5, 3.5,
                                 0.0, -0.0, NAN, INFINITY, -INFINITY, 1e30, -7.25};
  for (const char* op : {"round", "floor", "ceil", "sign", "isnan", "isinf", "isfinite", "logical_not", "reciprocal",
                         "rsqrt", "log", "log1p"})
    for (int32_t dt : {GN_F32, GN_F64}) {
      std::vector<double> want = run_on(runtimes().ref, op, v, dt), got = run_on(runtimes().dut, op, v, dt);
      ASSERT_EQ(got.size(), want.size()) << op;
      for (size_t i = 0; i < v.size(); ++i) {
        // log/log1p of f32: glibc's float functions, within 1 ulp (see above)
        const bool libm = dt == GN_F32 && (std::string(op) == "log" || std::string(op) == "log1p");
        if (std::isnan(want[i]))
          EXPECT_TRUE(std::isnan(got[i])) << op << " " << dname(dt) << " of " << v[i];
        else if (libm && std::isfinite(want[i]))
          EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i])) << op << " of " << v[i];
        else
          EXPECT_EQ(got[i], want[i]) << op << " " << dname(dt) << " of " << v[i];
      }
    }
  EXPECT_EQ(run_on(runtimes().dut, "round", v, GN_F32)[2], 2.0);
}

// fill in place on a transposed view and on a dense tensor.
TEST(CpuElementwise, FillMatchesReference) {
  OPC_REQUIRE_SUITE();
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I32, GN_I8, GN_BOOL})
    for (Layout layout : {kContig, kTransposed}) {
      std::vector<double> res[2];
      int k = 0;
      for (Rt* r : {&runtimes().ref, &runtimes().dut}) {
        gt::T x = build(*r, Input{{300, 200}, dt, layout, -1, 1}, 5);
        const gn_op* op = nullptr;
        ASSERT_EQ(gn_op_find(r->rt, "fill", &op), nullptr);
        gn_attr_value a = gn_attr_float(-3.75);
        GN_OK_OR_FAIL(gn_op_call(r->rt, op, &x.t, 1, &a, 1, nullptr, 0));
        res[k++] = as_f64(x.t);
      }
      EXPECT_EQ(res[0], res[1]) << dname(dt) << " layout " << layout;
    }
}

}  // namespace

// ---------------------------------------------------------------- compare, where

namespace {

// Comparisons and where select values: exact.  Inputs are rounded to halves
// (range [-2, 2] of i64/i32 gives many ties; floats compare random values and
// a broadcast operand against itself-like rows).
std::vector<Case> select_cases() {
  std::vector<Case> cs;
  struct S {
    std::vector<int64_t> a, b;
    Layout la, lb;
  };
  const std::vector<S> shapes = {{{257, 513}, {257, 513}, kContig, kContig},
                                 {{4, 1, 5}, {3, 1}, kContig, kContig},
                                 {{6, 7}, {7}, kContig, kContig},
                                 {{9, 11}, {9, 11}, kTransposed, kSliced},
                                 {{0, 3}, {0, 3}, kContig, kContig},
                                 {{5, 3}, {}, kContig, kContig},
                                 {{}, {}, kContig, kContig}};
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (int32_t dt : {GN_F32, GN_F64, GN_I32, GN_I64})
      for (const S& s : shapes) {
        Case c;
        c.name = std::string(op) + "_" + dname(dt) + "_" + sname(s.a) + lname(s.la) + "_" + sname(s.b) + lname(s.lb);
        c.op = op;
        c.inputs = {{s.a, dt, s.la, -3, 3}, {s.b, dt, s.lb, -3, 3}};
        c.tol = {0, 0};
        cs.push_back(c);
      }
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32})
    for (const S& s : shapes) {
      Case c;
      c.name = "where_" + dname(dt) + "_" + sname(s.a) + lname(s.la) + "_" + sname(s.b) + lname(s.lb);
      c.op = "where";
      c.inputs = {{s.b, GN_BOOL, s.lb, -1, 1}, {s.a, dt, s.la, -100, 100}, {s.b, dt, kContig, -100, 100}};
      c.tol = {0, 0};
      cs.push_back(c);
    }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencySelect, Select, select_cases)
