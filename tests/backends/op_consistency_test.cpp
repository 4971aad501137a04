// tests/backends/op_consistency_test.cpp - the cross-backend op suite, part 1:
// eltwise, binary, matmul, softmax, layer_norm (oneDNN primitives), plus the
// backend-level tests.  The harness and the tolerance rationale are in
// op_consistency.h; more ops in op_consistency_{elementwise,reduce,nn}_test.cpp.
#include <set>

#include "op_consistency.h"

namespace {
std::vector<Case> unary_cases() {
  struct U {
    const char* op;
    double lo, hi;
    std::vector<gn_attr_value> attrs;
    const char* tag;
  };
  const std::vector<U> ops = {
      {"exp", -4, 4, {}, ""},
      {"log", 0.01, 10, {}, ""},
      {"sqrt", 0, 10, {}, ""},
      {"tanh", -4, 4, {}, ""},
      {"sigmoid", -8, 8, {}, ""},
      {"relu", -2, 2, {}, ""},
      {"gelu", -5, 5, {gn_attr_int(0)}, "erf"},
      {"gelu", -5, 5, {gn_attr_int(1)}, "tanh"},
      {"silu", -6, 6, {}, ""},
      {"abs", -2, 2, {}, ""},
      {"square", -3, 3, {}, ""},
      {"neg", -2, 2, {}, ""},
      {"clamp", -2, 2, {gn_attr_float(-0.5), gn_attr_float(0.25)}, ""},
  };
  const std::vector<std::pair<std::vector<int64_t>, Layout>> shapes = {
      {{257, 513}, kContig}, {{3, 5, 7}, kContig}, {{31, 17}, kTransposed}, {{6, 9}, kSliced},
      {{0, 4}, kContig},     {{}, kContig},        {{1}, kContig}};
  // f32/bf16 run in oneDNN (tolerances in op_consistency.h); f16 (no oneDNN
  // f16 eltwise on CPUs without AVX512-FP16), f64, integers and bool run the
  // generic C++ path with the reference's double formulas and one rounding:
  // exact.  Integer inputs: the range widened to integers in [-3, 4].
  const std::set<std::string> int_ops = {"relu", "abs", "square", "neg", "clamp", "exp", "sigmoid", "tanh"};
  std::vector<Case> cs;
  for (const U& u : ops)
    for (int32_t dt : {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I32, GN_I64, GN_I8, GN_BOOL})
      for (const auto& [shape, layout] : shapes) {
        const bool integral = dt == GN_I32 || dt == GN_I64 || dt == GN_I8 || dt == GN_BOOL;
        if ((dt == GN_F16 || integral) && shape.size() != 2) continue;
        if (integral && !int_ops.count(u.op)) continue;
        if (dt == GN_BOOL && (std::string(u.op) == "neg" || std::string(u.op) == "relu" || std::string(u.op) == "abs" ||
                              std::string(u.op) == "clamp"))
          continue;  // not for bool
        Case c;
        c.name = std::string(u.op) + u.tag + "_" + dname(dt) + "_" + sname(shape) + lname(layout);
        c.op = u.op;
        c.inputs = {{shape, dt, layout, integral ? std::min(u.lo, -3.0) : u.lo, integral ? std::max(u.hi, 4.0) : u.hi}};
        c.attrs = u.attrs;
        // ints of float ops (exp, sigmoid, tanh) are cast to f32 by the core: f32 tolerance
        const bool float_op =
            u.op == std::string("exp") || u.op == std::string("sigmoid") || u.op == std::string("tanh");
        c.tol = dt == GN_F32 || (integral && float_op) ? kEltF32 : dt == GN_BF16 ? kBf16 : Tol{0, 0};
        cs.push_back(c);
      }
  // clamp with bounds f32 cannot hold: the generic path for f32 too (exact)
  Case c;
  c.name = "clamp_f32_unrepresentable_bounds";
  c.op = "clamp";
  c.inputs = {{{40, 50}, GN_F32, kContig, -2, 2}};
  c.attrs = {gn_attr_float(-0.1), gn_attr_float(0.3)};
  c.tol = {0, 0};
  cs.push_back(c);
  return cs;
}

std::vector<Case> binary_cases() {
  struct B {
    const char* op;
    std::vector<gn_attr_value> attrs;
    const char* tag;
  };
  const std::vector<B> ops = {{"add", {}, ""},     {"add", {gn_attr_float(2.5)}, "a25"},
                              {"sub", {}, ""},     {"sub", {gn_attr_float(0.5)}, "a05"},
                              {"mul", {}, ""},     {"div", {}, ""},
                              {"maximum", {}, ""}, {"minimum", {}, ""}};
  struct S {
    std::vector<int64_t> a, b;
    Layout la, lb;
  };
  const std::vector<S> shapes = {
      {{257, 513}, {257, 513}, kContig, kContig},      // large, same shape
      {{4, 1, 5}, {3, 1}, kContig, kContig},           // both broadcast
      {{6, 7}, {7}, kContig, kContig},                 // row vector
      {{1, 7}, {6, 7}, kContig, kContig},              // src0 broadcast
      {{5, 3}, {}, kContig, kContig},                  // 0-d b
      {{9, 11}, {9, 11}, kTransposed, kContig},        // non-contiguous a
      {{9, 11}, {9, 11}, kContig, kSliced},            // non-contiguous b
      {{0, 3}, {0, 3}, kContig, kContig},              // empty
      {{13}, {13}, kContig, kContig},                  // odd 1-D
      {{1031, 1033}, {1031, 1033}, kContig, kContig},  // > 4 MiB of f32: the streaming-store path
  };
  std::vector<Case> cs;
  for (const B& b : ops)
    for (int32_t dt : {GN_F32, GN_BF16, GN_F64})
      for (const S& s : shapes) {
        if (dt != GN_F32 && s.a[0] > 1000) continue;
        Case c;
        c.name = std::string(b.op) + b.tag + "_" + dname(dt) + "_" + sname(s.a) + lname(s.la) + "_" + sname(s.b) +
                 lname(s.lb);
        c.op = b.op;
        // div: keep the denominator away from 0
        const double blo = std::string(b.op) == "div" ? 0.5 : -1.0, bhi = std::string(b.op) == "div" ? 2.0 : 1.0;
        c.inputs = {{s.a, dt, s.la, -1, 1}, {s.b, dt, s.lb, blo, bhi}};
        c.attrs = b.attrs;
        c.tol = dt == GN_BF16 ? kBf16 : b.attrs.empty() ? kExactF32 : kAlphaF32;
        cs.push_back(c);
      }
  return cs;
}

// The generic binary path (backends/cpu/ops/generic/binary.cpp): integers and bool (int64
// arithmetic, wrapping), f16 and bf16 with any broadcast (double arithmetic,
// one rounding), div rounding modes, pow, logical_and/or, compares of the
// small dtypes.  All follow the reference's formulas: exact.  Integer
// operands of div avoid 0 (b in [1, 5), truncated); integer pow exponents are
// in [0, 4).  Error cases: integer division by zero, negative integer power.
std::vector<Case> binary_generic_cases() {
  struct S {
    std::vector<int64_t> a, b;
    Layout la, lb;
  };
  const std::vector<S> shapes = {{{257, 513}, {257, 513}, kContig, kContig}, {{4, 1, 5}, {3, 1}, kContig, kContig},
                                 {{1, 7}, {6, 7}, kContig, kContig},         {{9, 11}, {9, 11}, kTransposed, kSliced},
                                 {{0, 3}, {0, 3}, kContig, kContig},         {{5, 3}, {}, kContig, kContig}};
  std::vector<Case> cs;
  auto add = [&](const std::string& tag, const char* op, int32_t dt, const S& s, double alo, double ahi, double blo,
                 double bhi, std::vector<gn_attr_value> attrs) {
    Case c;
    c.name = tag + "_" + dname(dt) + "_" + sname(s.a) + lname(s.la) + "_" + sname(s.b) + lname(s.lb);
    c.op = op;
    c.inputs = {{s.a, dt, s.la, alo, ahi}, {s.b, dt, s.lb, blo, bhi}};
    c.attrs = std::move(attrs);
    c.tol = {0, 0};
    cs.push_back(c);
  };
  for (const S& s : shapes) {
    for (int32_t dt : {GN_I32, GN_I64, GN_I8, GN_U8, GN_BOOL}) {
      const double lo = dt == GN_BOOL ? -1 : dt == GN_U8 ? 0 : -100, hi = dt == GN_BOOL ? 1 : 100;
      for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
        if (dt == GN_BOOL && std::string(op) == "sub") continue;
        add(op, op, dt, s, lo, hi, lo, hi, {});
      }
      if (dt != GN_BOOL) {
        add("add_a3", "add", dt, s, lo, hi, lo, hi, {gn_attr_float(3)});
        add("div", "div", dt, s, lo, hi, 1, 5, {gn_attr_int(0)});
        add("div_trunc", "div", dt, s, lo, hi, 1, 5, {gn_attr_int(1)});
        add("div_floor", "div", dt, s, lo, hi, -4, -1, {gn_attr_int(2)});
        add("pow", "pow", dt, s, dt == GN_U8 ? 0 : -5, 5, 0, 4, {});
      }
      for (const char* op : {"logical_and", "logical_or"}) add(op, op, dt, s, lo / 50, hi / 50, lo / 50, hi / 50, {});
    }
    for (int32_t dt : {GN_F16, GN_BF16, GN_F32, GN_F64}) {
      if (dt == GN_F16)
        for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"}) add(op, op, dt, s, -2, 2, 0.5, 2, {});
      add("div_trunc", "div", dt, s, -8, 8, 0.5, 2, {gn_attr_int(1)});
      add("div_floor", "div", dt, s, -8, 8, -2, -0.5, {gn_attr_int(2)});
      add("pow", "pow", dt, s, 0.1, 3, -2, 2, {});
      for (const char* op : {"logical_and", "logical_or"}) add(op, op, dt, s, -1, 1, -1, 1, {});
    }
    for (int32_t dt : {GN_F16, GN_BF16, GN_I8, GN_U8, GN_BOOL})
      for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) add(op, op, dt, s, 0, 3, 0, 3, {});
  }
  // errors: both backends must refuse with the reference's code
  const S one{{6, 7}, {6, 7}, kContig, kContig};
  add("div_by_zero", "div", GN_I64, one, -5, 5, 0, 0.5, {gn_attr_int(1)});
  add("pow_negative", "pow", GN_I32, one, -5, 5, -3, -1, {});
  add("add_fractional_alpha", "add", GN_I32, one, -5, 5, -5, 5, {gn_attr_float(0.5)});
  return cs;
}

std::vector<Case> matmul_cases() {
  struct M {
    const char* op;
    std::vector<int64_t> a, b;
    Layout la, lb;
    int64_t ta, tb, K;
  };
  const std::vector<M> shapes = {
      {"matmul", {1, 1}, {1, 1}, kContig, kContig, 0, 0, 1},
      {"matmul", {17, 33}, {33, 9}, kContig, kContig, 0, 0, 33},
      {"matmul", {257, 129}, {129, 65}, kContig, kContig, 0, 0, 129},
      {"matmul", {64, 513}, {513, 31}, kContig, kContig, 0, 0, 513},
      {"matmul", {33, 17}, {9, 33}, kContig, kContig, 1, 1, 33},          // trans flags
      {"matmul", {17, 33}, {33, 9}, kTransposed, kTransposed, 0, 0, 33},  // transposed views
      {"matmul", {17, 33}, {33, 9}, kSliced, kContig, 0, 0, 33},          // strided rows
      {"matmul", {2, 1, 5, 6}, {3, 6, 4}, kContig, kContig, 0, 0, 6},     // batch broadcast
      {"matmul", {3, 5, 6}, {6, 4}, kContig, kContig, 0, 0, 6},           // b shared
      {"matmul", {6}, {3, 6, 4}, kContig, kContig, 0, 0, 6},              // 1-D a
      {"matmul", {5, 6}, {6}, kContig, kContig, 0, 0, 6},                 // 1-D b
      {"matmul", {7}, {7}, kContig, kContig, 0, 0, 7},                    // dot
      {"matmul", {0, 5}, {5, 3}, kContig, kContig, 0, 0, 5},              // empty M
      {"matmul", {4, 0}, {0, 3}, kContig, kContig, 0, 0, 0},              // K == 0: zeros
      {"bmm", {4, 5, 6}, {4, 6, 7}, kContig, kContig, 0, 0, 6},
      {"bmm", {4, 6, 5}, {4, 7, 6}, kContig, kContig, 1, 1, 6},
      {"bmm", {4, 5, 6}, {4, 6, 7}, kTransposed, kSliced, 0, 0, 6},
  };
  std::vector<Case> cs;
  int idx = 0;
  for (const M& m : shapes) {
    ++idx;
    for (int32_t dt : {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I32, GN_I64}) {
      if (dt != GN_F32 && dt != GN_F64 && m.K > 200) continue;
      const bool integral = dt == GN_I32 || dt == GN_I64;
      Case c;
      c.name = std::string(m.op) + std::to_string(idx) + "_" + dname(dt) + "_" + sname(m.a) + lname(m.la) + "_" +
               sname(m.b) + lname(m.lb) + (m.ta ? "_ta" : "") + (m.tb ? "_tb" : "");
      c.op = m.op;
      const double r = integral ? 6 : 1;
      c.inputs = {{m.a, dt, m.la, -r, r}, {m.b, dt, m.lb, -r, r}};
      c.attrs = {gn_attr_int(m.ta), gn_attr_int(m.tb)};
      c.tol = matmul_tol(dt, m.K);
      cs.push_back(c);
    }
  }
  return cs;
}

std::vector<Case> softmax_cases() {
  struct S {
    std::vector<int64_t> shape;
    Layout layout;
    int64_t dim;
  };
  const std::vector<S> shapes = {{{257, 513}, kContig, -1}, {{257, 513}, kContig, 0}, {{3, 4, 5}, kContig, 1},
                                 {{7, 9}, kTransposed, -1}, {{5, 6}, kSliced, 1},     {{0, 5}, kContig, -1},
                                 {{1, 1}, kContig, 0},      {{11}, kContig, 0}};
  std::vector<Case> cs;
  for (const char* op : {"softmax", "log_softmax"})
    for (int32_t dt : {GN_F32, GN_BF16})
      for (int64_t out_dt : {(int64_t)GN_DIM_NONE, (int64_t)GN_F32})
        for (const S& s : shapes) {
          if (dt == GN_F32 && out_dt != GN_DIM_NONE) continue;
          Case c;
          c.name = std::string(op) + "_" + dname(dt) + (out_dt == GN_DIM_NONE ? "" : "_to_f32") + "_" + sname(s.shape) +
                   lname(s.layout) + "_d" + std::to_string(s.dim < 0 ? 9 : s.dim);
          c.op = op;
          c.inputs = {{s.shape, dt, s.layout, -5, 5}};
          c.attrs = {gn_attr_int(s.dim), gn_attr_int(out_dt)};
          const bool f32_out = dt == GN_F32 || out_dt == GN_F32;
          // bf16 input widened to f32 out: only f32 accumulation error remains
          c.tol = f32_out ? (std::string(op) == "softmax" ? kEltF32 : kNormF32) : kBf16;
          cs.push_back(c);
        }
  return cs;
}

// softmax in the C++ lines (f64, f16, integer inputs) computes the
// reference's double formula: f64 within a few ulp (rtol 1e-13), f16 exact
// but for the rare double-rounding tie (kBf16 covers it).  The backward ops
// are C++ for every dtype, double per line, rounded once; FMA contraction may
// move the sums by ulps of double: f64 see bwd64 below, f32 rtol 1e-6 with atol
// 1e-7 (gx is a difference of O(1) terms, so absolute error is what
// cancellation leaves), bf16 kBf16.
std::vector<Case> softmax_more_cases() {
  struct S {
    std::vector<int64_t> shape;
    Layout layout;
    int64_t dim;
  };
  const std::vector<S> shapes = {{{257, 513}, kContig, -1}, {{257, 513}, kContig, 0}, {{3, 4, 5}, kContig, 1},
                                 {{7, 9}, kTransposed, -1}, {{0, 5}, kContig, -1},    {{}, kContig, 0},
                                 {{11}, kContig, 0}};
  // bwd64: s = sum(g*y) over L <= 513 terms of size <= 1 carries up to ~L*eps
  // absolute error (FMA or not), which g - s keeps: atol 1e-12 (~8*513*eps).
  const Tol f64{1e-13, 1e-15}, bwd32{1e-6, 1e-7}, bwd64{1e-13, 1e-12};
  std::vector<Case> cs;
  for (const S& s : shapes) {
    const std::string tag = sname(s.shape) + lname(s.layout) + "_d" + std::to_string(s.dim < 0 ? 9 : s.dim);
    for (const char* op : {"softmax", "log_softmax"}) {
      for (int32_t dt : {GN_F64, GN_F16, GN_I32}) {
        Case c;
        c.name = std::string(op) + "_" + dname(dt) + "_" + tag;
        c.op = op;
        c.inputs = {{s.shape, dt, s.layout, -5, 5}};
        c.attrs = {gn_attr_int(s.dim), gn_attr_int(GN_DIM_NONE)};
        c.tol = dt == GN_F64 ? f64 : dt == GN_F16 ? kBf16 : kNormF32;
        cs.push_back(c);
      }
      for (int32_t dt : {GN_F32, GN_F64, GN_BF16}) {
        Case c;
        c.name = std::string(op) + "_backward_" + dname(dt) + "_" + tag;
        c.op = std::string(op) + "_backward";
        // y: softmax outputs are in (0, 1), log_softmax outputs below 0
        const bool lg = std::string(op) == "log_softmax";
        c.inputs = {{s.shape, dt, s.layout, -1, 1}, {s.shape, dt, kContig, lg ? -6.0 : 0.0, lg ? 0.0 : 1.0}};
        c.attrs = {gn_attr_int(s.dim)};
        c.tol = dt == GN_F64 ? bwd64 : dt == GN_F32 ? bwd32 : kBf16;
        cs.push_back(c);
      }
    }
  }
  return cs;
}

std::vector<Case> layer_norm_cases() {
  struct L {
    std::vector<int64_t> x;
    Layout layout;
    int64_t nd;
    int n_in;
  };
  const std::vector<L> shapes = {{{257, 513}, kContig, 1, 3}, {{64, 1024}, kContig, 1, 1},  {{9, 33}, kContig, 1, 2},
                                 {{4, 6, 8}, kContig, 2, 3},  {{13, 7}, kTransposed, 1, 3}, {{0, 16}, kContig, 1, 3},
                                 {{5, 1}, kContig, 1, 3}};
  std::vector<Case> cs;
  // f64 and f16: C++ rows with the reference's two-pass double statistics;
  // f64 within a few ulp (rtol/atol 1e-12 for O(10) outputs), f16 one
  // rounding of the same double value (kBf16, like bf16).
  for (int32_t dt : {GN_F32, GN_BF16, GN_F64, GN_F16})
    for (const L& l : shapes) {
      Case c;
      c.name = "layer_norm_" + dname(dt) + "_" + sname(l.x) + lname(l.layout) + "_n" + std::to_string(l.nd) + "_in" +
               std::to_string(l.n_in);
      c.op = "layer_norm";
      c.inputs = {{l.x, dt, l.layout, -3, 5}};
      const std::vector<int64_t> norm(l.x.end() - l.nd, l.x.end());
      if (l.n_in > 1) c.inputs.push_back({norm, dt, kContig, 0.5, 1.5});
      if (l.n_in > 2) c.inputs.push_back({norm, dt, kContig, -1, 1});
      c.attrs = {gn_attr_int(l.nd), gn_attr_float(1e-5)};
      c.n_out = 3;
      c.tol = dt == GN_F32 ? kNormF32 : dt == GN_F64 ? Tol{1e-12, 1e-12} : kBf16;
      cs.push_back(c);
    }
  return cs;
}

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (auto* f : {unary_cases, binary_cases, binary_generic_cases, matmul_cases, softmax_cases, softmax_more_cases,
                  layer_norm_cases}) {
    std::vector<Case> v = f();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// ---------------------------------------------------------------- the tests

}  // namespace

OPC_SUITE(OpConsistency, Ops, all_cases)

namespace {

TEST(SuiteBackend, ServesItsDeviceType) {
  OPC_REQUIRE_SUITE();
  EXPECT_EQ(backend_of(runtimes().dut.rt, suite_device_type().c_str()), GN_SUITE_BACKEND);
  EXPECT_EQ(backend_of(runtimes().ref.rt, "cpu"), "reference");
}

}  // namespace
