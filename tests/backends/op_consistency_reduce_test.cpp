// tests/backends/op_consistency_reduce_test.cpp - the cross-backend suite,
// part 3: reductions (sum mean prod max min argmax argmin var std logsumexp
// norm) over dim sets, keepdim, non-contiguous inputs, empty and large sizes.
//
// Tolerances: both backends accumulate in double; only the summation order
// differs (vectorised partial sums, 64K chunks), an error of ~sqrt(N)*2^-53
// relative to sum|x|, far below f32's 2^-24: f32 results round to the same
// float or a neighbour -> rtol 1e-6 with atol 1e-6 for sums that cancel to
// ~0 (a sum of 1M values in [-1, 1] has terms of size 1e3).  f64 results keep
// the order error itself: rtol 1e-10, atol 1e-9 (|sum| up to ~1e3 as above).
// max/min/argmax/argmin are exact.
#include <set>

#include "op_consistency.h"

namespace {

std::vector<Case> reduce_cases() {
  struct S {
    std::vector<int64_t> shape;
    Layout layout;
    std::vector<int64_t> dims;
  };
  const std::vector<S> shapes = {
      {{257, 513}, kContig, {}},     {{257, 513}, kContig, {-1}}, {{257, 513}, kContig, {0}},
      {{3, 4, 5}, kContig, {0, 2}},  {{3, 4, 5}, kContig, {1}},   {{2, 3, 4, 5}, kContig, {1, 3}},
      {{31, 17}, kTransposed, {-1}}, {{6, 9}, kSliced, {1}},      {{6, 9}, kSliced, {}},
      {{0, 4}, kContig, {1}},        {{0, 4}, kContig, {0}},      {{}, kContig, {}},
      {{1}, kContig, {0}},           {{1 << 20}, kContig, {}},    {{5, 1, 3}, kContig, {1}},
  };
  struct R {
    const char* op;
    int kind;  // 0 dims keepdim; 1 dims correction keepdim; 2 p dims keepdim; 3 dim keepdim (arg)
    double p;
  };
  const std::vector<R> ops = {{"sum", 0, 0},  {"mean", 0, 0},   {"prod", 0, 0},        {"max", 0, 0},
                              {"min", 0, 0},  {"var", 1, 1},    {"std", 1, 0},         {"logsumexp", 0, 0},
                              {"norm", 2, 2}, {"norm", 2, 1},   {"norm", 2, INFINITY}, {"norm", 2, 0},
                              {"norm", 2, 3}, {"argmax", 3, 0}, {"argmin", 3, 0}};
  std::vector<Case> cs;
  const std::set<std::string> float_only = {"mean", "var", "std", "norm"};
  for (const R& r : ops)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I64, GN_I32, GN_I8, GN_BOOL})
      for (const S& s : shapes)
        for (int keep : {0, 1}) {
          const std::string op = r.op;
          const bool small = dt != GN_F32 && dt != GN_F64,
                     integral = dt == GN_I64 || dt == GN_I32 || dt == GN_I8 || dt == GN_BOOL;
          if (small && (keep || s.shape.size() > 3 || s.layout == kSliced)) continue;  // fewer cases for these
          if (integral && float_only.count(op)) continue;
          if (dt == GN_BOOL && (op == "argmax" || op == "argmin")) continue;
          if (small && s.shape.size() == 1 && s.shape[0] > 100 && op != "sum" && op != "max") continue;
          if (op == "prod" && s.shape.size() == 1 && s.shape[0] > 100) continue;  // under/overflow only
          if (r.kind == 3 && s.dims.size() > 1) continue;
          if (keep && s.shape.size() > 2 && s.dims.size() != 1) continue;
          Case c;
          std::string dn;
          for (int64_t d : s.dims) dn += std::to_string(d < 0 ? 9 : d);
          c.name = op + (r.kind == 2 ? "p" + std::to_string((int)std::min(r.p, 99.0)) : "") + "_" + dname(dt) + "_" +
                   sname(s.shape) + lname(s.layout) + "_d" + dn + (keep ? "_k" : "");
          c.op = r.op;
          const bool prod = op == "prod";
          // integers: values in [-20, 20] (sums wrap exactly for i8 too; prod
          // of ints from [-2, 3))
          if (integral)
            c.inputs = {{s.shape, dt, s.layout, prod ? -2.0 : -20.0, prod ? 3.0 : 20.0}};
          else
            c.inputs = {{s.shape, dt, s.layout, prod ? 0.8 : -1.0, prod ? 1.25 : 1.0}};
          switch (r.kind) {
            case 0:
              c.attrs = {gn_attr_int(0), gn_attr_int(keep)};
              c.ints = {{0, s.dims}};
              break;
            case 1:
              c.attrs = {gn_attr_int(0), gn_attr_float(r.p), gn_attr_int(keep)};
              c.ints = {{0, s.dims}};
              break;
            case 2:
              c.attrs = {gn_attr_float(r.p), gn_attr_int(0), gn_attr_int(keep)};
              c.ints = {{1, s.dims}};
              break;
            default:
              c.attrs = {gn_attr_int(s.dims.empty() ? (int64_t)GN_DIM_NONE : s.dims[0]), gn_attr_int(keep)};
              break;
          }
          if (r.kind == 0 && (op == "sum" || op == "mean" || op == "prod"))
            c.attrs.push_back(gn_attr_int((int64_t)GN_DIM_NONE));  // dtype none
          // bf16/f16: computed in double and rounded once (one half-ulp of the
          // output; summation order moves the double by far less) -> kBf16;
          // integers: int64 arithmetic for sum/prod/max/min/arg*, exact; their
          // logsumexp is double like f64.
          c.tol = dt == GN_F32                    ? Tol{1e-6, 1e-6}
                  : dt == GN_F64                  ? Tol{1e-10, 1e-9}
                  : integral && op != "logsumexp" ? Tol{0, 0}
                  : integral                      ? Tol{1e-6, 1e-6}
                                                  : kBf16;
          cs.push_back(c);
        }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyReduce, Reduce, reduce_cases)
