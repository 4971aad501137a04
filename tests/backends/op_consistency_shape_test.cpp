// tests/backends/op_consistency_shape_test.cpp - the cross-backend suite,
// part 5: data-movement ops (gather, scatter, scatter_add, index_select,
// index_add, masked_fill, cat, stack, triu, tril, one_hot, arange, full) and
// sort / argsort / topk.
//
// Tolerances: all exact (0) - these ops copy elements, and the accumulating
// ones (scatter_add, index_add) add in the reference's order with one rounding
// per addition (see backends/cpu/ops/simd/indexing.cpp), so even repeated indices give
// bit-identical sums.  Index inputs: uniform values truncated to integers
// (build()); out-of-range indices must give the same error code.
#include <set>

#include "op_consistency.h"

namespace {

const int32_t kAllDt[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I64, GN_I32, GN_I8, GN_U8, GN_BOOL};

std::vector<Case> shape_cases() {
  std::vector<Case> cs;
  // gather / scatter / scatter_add: x (S0, S1, S2), index smaller in non-dim dims
  struct G {
    std::vector<int64_t> x, ix;
    int64_t dim, range;  // index values in [0, range)
    Layout lx;
  };
  const std::vector<G> gs = {
      {{300, 257}, {400, 257}, 0, 300, kContig},   // large, dim 0, repeated indices
      {{5, 7, 9}, {4, 6, 9}, 1, 7, kContig},       // 3-D, smaller index
      {{5, 7, 9}, {5, 7, 3}, -1, 9, kTransposed},  // last dim, non-contiguous x
      {{6, 4}, {0, 4}, 0, 6, kContig},             // empty index
      {{6, 4}, {3, 4}, 0, 9, kContig},             // out of range: error
  };
  for (const G& g : gs)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32, GN_BOOL}) {
      const std::string tag = dname(dt) + "_" + sname(g.x) + lname(g.lx) + "_i" + sname(g.ix) + "_d" +
                              std::to_string(g.dim < 0 ? 9 : g.dim) + (g.range > g.x[0] && g.dim == 0 ? "_oob" : "");
      const Input x{g.x, dt, g.lx, -4, 4}, ix{g.ix, GN_I64, kContig, 0, (double)g.range};
      cs.push_back(make_case("gather_" + tag, "gather", {x, ix}, {gn_attr_int(g.dim)}));
      cs.push_back(make_case("scatter_" + tag, "scatter", {x, ix, {g.ix, dt, kContig, -4, 4}}, {gn_attr_int(g.dim)}));
      if (dt != GN_BOOL && dt != GN_BF16)
        cs.push_back(
            make_case("scatter_add_" + tag, "scatter_add", {x, ix, {g.ix, dt, kContig, -4, 4}}, {gn_attr_int(g.dim)}));
    }
  // scatter with a 0-d src, int32 index
  cs.push_back(make_case("scatter_scalar_src_f32", "scatter",
                         {{{8, 5}, GN_F32}, {{3, 5}, GN_I32, kContig, 0, 8}, {{}, GN_F32}}, {gn_attr_int(0)}));
  // index_select / index_add: 1-D index along dim
  struct I {
    std::vector<int64_t> x;
    int64_t k, dim, range;
    Layout lx;
  };
  const std::vector<I> is = {{{300, 257}, 500, 0, 300, kContig},
                             {{4, 50, 6}, 17, 1, 50, kContig},
                             {{9, 11}, 5, -1, 11, kTransposed},
                             {{7, 3}, 0, 0, 7, kContig},
                             {{7, 3}, 4, 0, 10, kContig}};
  for (const I& i : is)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32, GN_U8}) {
      const std::string tag = dname(dt) + "_" + sname(i.x) + lname(i.lx) + "_k" + std::to_string(i.k) + "_d" +
                              std::to_string(i.dim < 0 ? 9 : i.dim) + (i.range > i.x[0] && i.dim == 0 ? "_oob" : "");
      const Input x{i.x, dt, i.lx, -4, 4}, ix{{i.k}, GN_I64, kContig, 0, (double)i.range};
      cs.push_back(make_case("index_select_" + tag, "index_select", {x, ix}, {gn_attr_int(i.dim)}));
      std::vector<int64_t> sshape = i.x;
      sshape[(size_t)(i.dim < 0 ? i.dim + (int64_t)i.x.size() : i.dim)] = i.k;
      for (double alpha : {1.0, -2.0}) {
        if (dt == GN_U8 && alpha < 0) continue;
        cs.push_back(make_case("index_add_" + tag + (alpha == 1.0 ? "" : "_am2"), "index_add",
                               {x, ix, {sshape, dt, kContig, -4, 4}}, {gn_attr_int(i.dim), gn_attr_float(alpha)}));
      }
    }
  // index_add: non-integral alpha into ints is an error for both
  cs.push_back(
      make_case("index_add_i64_alpha_half", "index_add",
                {{{5, 3}, GN_I64, kContig, -4, 4}, {{2}, GN_I64, kContig, 0, 5}, {{2, 3}, GN_I64, kContig, -4, 4}},
                {gn_attr_int(0), gn_attr_float(0.5)}));
  // masked_fill: broadcast mask, non-contiguous x, 0-d
  struct M {
    std::vector<int64_t> x, m;
    Layout lx;
  };
  const std::vector<M> ms = {{{257, 513}, {257, 513}, kContig},
                             {{4, 6, 5}, {6, 1}, kContig},
                             {{9, 11}, {11}, kTransposed},
                             {{0, 3}, {3}, kContig},
                             {{}, {}, kContig}};
  for (const M& m : ms)
    for (int32_t dt : kAllDt)
      for (double v : {-2.5, 3.0}) {
        if (dt == GN_U8 && v < 0) continue;
        cs.push_back(make_case(
            "masked_fill_" + dname(dt) + "_" + sname(m.x) + lname(m.lx) + "_m" + sname(m.m) + (v < 0 ? "_neg" : ""),
            "masked_fill", {{m.x, dt, m.lx, -4, 4}, {m.m, GN_BOOL, kContig, -1, 1}}, {gn_attr_float(v)}));
      }
  // cat / stack
  for (int32_t dt : kAllDt) {
    const std::string d = dname(dt);
    cs.push_back(make_case("cat3_d0_" + d, "cat", {{{300, 40}, dt}, {{1, 40}, dt}, {{57, 40}, dt, kTransposed}},
                           {gn_attr_int(0)}));
    cs.push_back(make_case("cat2_d1_" + d, "cat", {{{3, 4, 5}, dt}, {{3, 7, 5}, dt, kSliced}}, {gn_attr_int(1)}));
    cs.push_back(make_case("cat2_dlast_" + d, "cat", {{{6, 5}, dt}, {{6, 0}, dt}, {{6, 2}, dt}}, {gn_attr_int(-1)}));
    cs.push_back(make_case("cat_legacy_empty_" + d, "cat", {{{2, 3}, dt}, {{0}, dt}, {{4, 3}, dt}}, {gn_attr_int(0)}));
    cs.push_back(make_case("cat_bad_shapes_" + d, "cat", {{{2, 3}, dt}, {{2, 4}, dt}}, {gn_attr_int(0)}));
    cs.push_back(make_case("stack3_d0_" + d, "stack", {{{200, 30}, dt}, {{200, 30}, dt}, {{200, 30}, dt, kTransposed}},
                           {gn_attr_int(0)}));
    cs.push_back(make_case("stack2_d1_" + d, "stack", {{{4, 5}, dt}, {{4, 5}, dt}}, {gn_attr_int(1)}));
    cs.push_back(make_case("stack2_dlast_" + d, "stack", {{{4, 5}, dt}, {{4, 5}, dt, kSliced}}, {gn_attr_int(-1)}));
    cs.push_back(make_case("stack_scalars_" + d, "stack", {{{}, dt}, {{}, dt}}, {gn_attr_int(0)}));
  }
  // triu / tril
  for (int32_t dt : kAllDt)
    for (int64_t diag : {0, 2, -3})
      for (const auto& [shape, layout] : std::vector<std::pair<std::vector<int64_t>, Layout>>{{{300, 257}, kContig},
                                                                                              {{3, 7, 5}, kContig},
                                                                                              {{9, 11}, kTransposed},
                                                                                              {{0, 4}, kContig},
                                                                                              {{4, 0}, kContig}})
        for (const char* op : {"triu", "tril"})
          cs.push_back(make_case(
              std::string(op) + "_" + dname(dt) + "_" + sname(shape) + lname(layout) + "_g" + std::to_string(diag + 5),
              op, {{shape, dt, layout, -4, 4}}, {gn_attr_int(diag)}));
  // one_hot
  for (int32_t dt : {GN_I64, GN_I32, GN_I8, GN_U8})
    for (const auto& [shape, C, range] : std::vector<std::tuple<std::vector<int64_t>, int64_t, double>>{
             {{1000}, 37, 37}, {{4, 5}, 6, 6}, {{0}, 3, 3}, {{}, 4, 4}, {{5}, 3, 5}})
      cs.push_back(
          make_case("one_hot_" + dname(dt) + "_" + sname(shape) + "_C" + std::to_string(C) + (range > C ? "_oob" : ""),
                    "one_hot", {{shape, dt, kContig, 0, range}}, {gn_attr_int(C)}));
  // arange / full (device attribute at 4 / 3)
  struct A {
    double start, end, step;
  };
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32, GN_I8})
    for (const A& a : std::vector<A>{{0, 100000, 1}, {-3, 7.5, 0.25}, {10, -5, -3}, {0, 0, 1}, {2, 40, 7}}) {
      if (dt == GN_I8 && a.end > 200) continue;
      Case c = make_case("arange_" + dname(dt) + "_" + std::to_string((int)a.start) + "_" + std::to_string((int)a.end) +
                             "_" + std::to_string((int)(a.step * 100)),
                         "arange", {},
                         {gn_attr_float(a.start), gn_attr_float(a.end), gn_attr_float(a.step), gn_attr_int(dt)});
      c.device_attr = 4;
      cs.push_back(c);
    }
  for (int32_t dt : kAllDt)
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{300, 257}, {0, 3}, {}, {7}}) {
      Case c = make_case("full_" + dname(dt) + "_" + sname(shape), "full", {},
                         {gn_attr_float(0), gn_attr_float(-1.75), gn_attr_int(dt)});
      c.ints = {{0, shape}};
      c.device_attr = 3;
      cs.push_back(c);
    }
  // sort / argsort / topk: ties on purpose (integers from [-4, 4], bf16 of a
  // narrow range) to check stability; both directions; exact.
  struct O {
    std::vector<int64_t> shape;
    int64_t dim;
    Layout layout;
  };
  const std::vector<O> os = {{{300, 257}, -1, kContig},  {{300, 257}, 0, kContig}, {{4, 33, 5}, 1, kContig},
                             {{9, 11}, -1, kTransposed}, {{0, 5}, -1, kContig},    {{}, 0, kContig},
                             {{1}, 0, kContig}};
  for (const O& o : os)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I32, GN_U8, GN_BOOL})
      for (int desc : {0, 1}) {
        const std::string tag = dname(dt) + "_" + sname(o.shape) + lname(o.layout) + "_d" +
                                std::to_string(o.dim < 0 ? 9 : o.dim) + (desc ? "_desc" : "");
        const double lo = dt == GN_U8 ? 0 : -4, hi = dt == GN_BF16 ? -3.9 : 4;
        const Input x{o.shape, dt, o.layout, lo, hi};
        Case c = make_case("sort_" + tag, "sort", {x}, {gn_attr_int(o.dim), gn_attr_int(desc), gn_attr_int(1)});
        c.n_out = 2;
        cs.push_back(c);
        cs.push_back(
            make_case("argsort_" + tag, "argsort", {x}, {gn_attr_int(o.dim), gn_attr_int(desc), gn_attr_int(1)}));
        if (dt == GN_BOOL) continue;
        const int64_t L = o.shape.empty() ? 1 : o.shape[(size_t)(o.dim < 0 ? o.dim + (int64_t)o.shape.size() : o.dim)];
        // (k = 0 of a 0-d input: inference gives a 0-d output that no backend
        // writes - left out)
        for (int64_t k : std::set<int64_t>{o.shape.empty() ? 1 : 0, std::min<int64_t>(L, 3), L}) {
          Case t = make_case("topk" + std::to_string(k) + "_" + tag, "topk", {x},
                             {gn_attr_int(k), gn_attr_int(o.dim), gn_attr_int(!desc), gn_attr_int(1)});
          t.n_out = 2;
          cs.push_back(t);
        }
      }
  // topk with k > L: an error for both
  Case bad = make_case("topk_k_too_large", "topk", {{{4, 5}, GN_F32}},
                       {gn_attr_int(6), gn_attr_int(-1), gn_attr_int(1), gn_attr_int(1)});
  bad.n_out = 2;
  cs.push_back(bad);
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyShape, Shape, shape_cases)
