// tests/backends/op_consistency_nn_test.cpp - the cross-backend suite, part 4:
// conv2d and conv2d_backward (oneDNN), rms_norm and swiglu forward/backward.
//
// Tolerances:
//  * f32 conv: oneDNN accumulates K terms in f32 (K = C/g*kh*kw forward,
//    O/g*kh*kw for grad_x, N*Ho*Wo for grad_w and grad_bias), inputs in
//    [-1, 1]: as for matmul, 8*sqrt(K)*eps_f32 relative and absolute, with K
//    the largest of the case's outputs.
//  * rms_norm, swiglu: computed in double like the reference, rounded once to
//    the output dtype; the row sums differ by order only: f32 rtol 1e-6 with
//    atol 1e-6 (outputs O(1), gradients that cancel to ~0), f64 rtol 1e-12,
//    atol 1e-12.
#include "op_consistency.h"

namespace {

std::vector<Case> nn_cases() {
  std::vector<Case> cs;
  struct C {
    std::vector<int64_t> x, w;
    std::vector<int64_t> stride, pad, dil;
    int64_t groups;
    bool bias;
  };
  const std::vector<C> convs = {
      {{2, 8, 14, 14}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},  // ResNet-style 3x3
      {{2, 8, 14, 14}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false},
      {{1, 3, 17, 13}, {5, 3, 3, 5}, {2, 2}, {0, 2}, {1, 1}, 1, true},     // stride, odd sizes
      {{2, 4, 11, 11}, {6, 4, 3, 3}, {1, 2}, {2, 2}, {2, 2}, 1, true},     // dilation
      {{2, 6, 9, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, true},       // groups
      {{1, 8, 10, 10}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, false},    // depthwise
      {{3, 16, 7, 7}, {32, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},    // 1x1
      {{1, 2, 5, 5}, {3, 2, 2, 2}, {2, 2}, {0, 0}, {1, 1}, 1, true},       // floor output size
      {{0, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},       // empty batch
      {{4, 32, 28, 28}, {32, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},  // large
  };
  int idx = 0;
  for (const C& v : convs) {
    ++idx;
    const int64_t Cg = v.w[1], KH = v.w[2], KW = v.w[3], O = v.w[0];
    const int64_t Ho = (v.x[2] + 2 * v.pad[0] - v.dil[0] * (KH - 1) - 1) / v.stride[0] + 1;
    const int64_t Wo = (v.x[3] + 2 * v.pad[1] - v.dil[1] * (KW - 1) - 1) / v.stride[1] + 1;
    // f64/bf16: the direct C++ loops (double sums, one rounding): f64 as
    // matmul with eps_f64, bf16 one rounding of the output (kBf16).
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16})
      for (int bwd : {0, 1}) {
        if (dt == GN_BF16 && idx == 10) continue;  // large: f32/f64 are enough
        Case c;
        c.name = std::string(bwd ? "conv2d_backward" : "conv2d") + std::to_string(idx) + "_" +
                 (dt == GN_F32 ? "" : dname(dt) + "_") + sname(v.x) + "_" + sname(v.w) + "_g" +
                 std::to_string(v.groups) + (v.bias && !bwd ? "_b" : "");
        c.op = bwd ? "conv2d_backward" : "conv2d";
        if (bwd) {
          c.inputs = {{{v.x[0], O, Ho, Wo}, dt}, {v.x, dt}, {v.w, dt}};
          c.n_out = 3;
        } else {
          c.inputs = {{v.x, dt}, {v.w, dt}};
          if (v.bias) c.inputs.push_back({{O}, dt});
        }
        c.attrs = {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(v.groups)};
        c.ints = {{0, v.stride}, {1, v.pad}, {2, v.dil}};
        const int64_t K = bwd ? std::max({O / v.groups * KH * KW, v.x[0] * Ho * Wo, Cg * KH * KW}) : Cg * KH * KW;
        // bf16 gradients sum up to N*Ho*Wo terms of size 1: outputs up to
        // ~sqrt(K), so the rounding is 2^-9 of that (atol 1e-2*sqrt(K)/4, as matmul)
        c.tol = dt == GN_BF16 ? matmul_tol(GN_BF16, K) : matmul_tol(dt, K);
        cs.push_back(c);
      }
  }
  // rms_norm / swiglu
  const std::vector<std::pair<std::vector<int64_t>, Layout>> shapes = {
      {{257, 513}, kContig}, {{64, 1024}, kContig}, {{3, 5, 7}, kContig}, {{13, 7}, kTransposed},
      {{6, 9}, kSliced},     {{0, 16}, kContig},    {{5, 1}, kContig}};
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16}) {
    const Tol tol = dt == GN_F32 ? Tol{1e-6, 1e-6} : dt == GN_BF16 ? kBf16 : Tol{1e-12, 1e-12};
    for (const auto& [shape, layout] : shapes) {
      const std::vector<int64_t> rows(shape.begin(), shape.end() - 1), w{shape.back()};
      for (int with_w : {0, 1}) {
        Case f;
        f.name = "rms_norm_" + dname(dt) + "_" + sname(shape) + lname(layout) + (with_w ? "_w" : "");
        f.op = "rms_norm";
        f.inputs = {{shape, dt, layout, -3, 3}};
        if (with_w) f.inputs.push_back({w, dt, kContig, 0.5, 1.5});
        f.attrs = {gn_attr_float(1e-6)};
        f.n_out = 2;
        f.tol = tol;
        cs.push_back(f);
        Case b;
        b.name = "rms_norm_backward_" + dname(dt) + "_" + sname(shape) + lname(layout) + (with_w ? "_w" : "");
        b.op = "rms_norm_backward";
        b.inputs = {{shape, dt, kContig, -1, 1},
                    {shape, dt, layout, -3, 3},
                    {rows, dt == GN_F64 ? GN_F64 : GN_F32, kContig, 0.5, 2}};
        if (with_w) b.inputs.push_back({w, dt, kContig, 0.5, 1.5});
        b.n_out = 2;
        b.tol = tol;
        cs.push_back(b);
      }
      Case s;
      s.name = "swiglu_" + dname(dt) + "_" + sname(shape) + lname(layout);
      s.op = "swiglu";
      s.inputs = {{shape, dt, layout, -6, 6}, {shape, dt, kContig, -2, 2}};
      s.tol = tol;
      cs.push_back(s);
      Case sb;
      sb.name = "swiglu_backward_" + dname(dt) + "_" + sname(shape) + lname(layout);
      sb.op = "swiglu_backward";
      sb.inputs = {{shape, dt, kContig, -1, 1}, {shape, dt, layout, -6, 6}, {shape, dt, kContig, -2, 2}};
      sb.n_out = 2;
      sb.tol = tol;
      cs.push_back(sb);
    }
  }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyNN, NN, nn_cases)

// ---------------------------------------------------------------- losses

namespace {

// cross_entropy: targets built from uniform [0, C) (truncated to ints);
// ignore_index 3 is a real class value, so some rows are ignored.
// Tolerance: lse/loss in double like the reference, one rounding: as rms_norm.
std::vector<Case> loss_cases() {
  std::vector<Case> cs;
  const std::vector<std::pair<std::vector<int64_t>, Layout>> shapes = {{{64, 1000}, kContig},  {{4, 5, 7}, kContig},
                                                                       {{9, 13}, kTransposed}, {{6, 9}, kSliced},
                                                                       {{0, 5}, kContig},      {{7}, kContig}};
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16})
    for (int32_t tdt : {GN_I64, GN_I32})
      for (const auto& [shape, layout] : shapes)
        for (int64_t red : {0, 1, 2})
          for (double ls : {0.0, 0.1})
            for (int bwd : {0, 1}) {
              if (tdt == GN_I32 && (red != 1 || ls != 0.0)) continue;
              const std::vector<int64_t> rows(shape.begin(), shape.end() - 1);
              const double C = (double)shape.back();
              Case c;
              c.name = std::string(bwd ? "cross_entropy_backward_" : "cross_entropy_") + dname(dt) + "_" + dname(tdt) +
                       "_" + sname(shape) + lname(layout) + "_r" + std::to_string(red) + (ls != 0.0 ? "_ls" : "");
              c.op = bwd ? "cross_entropy_backward" : "cross_entropy";
              const Input logits{shape, dt, layout, -4, 4}, target{rows, tdt, kContig, 0, C};
              if (bwd) {
                const std::vector<int64_t> gshape = red == 0 ? rows : std::vector<int64_t>{};
                c.inputs = {{gshape, dt, kContig, 0.5, 2}, logits, target, {rows, GN_F32, kContig, 0, 1}};
              } else {
                c.inputs = {logits, target};
                c.n_out = 2;
              }
              c.attrs = {gn_attr_int(3), gn_attr_float(ls), gn_attr_int(red)};
              c.tol = dt == GN_F32 ? Tol{1e-6, 1e-6} : dt == GN_BF16 ? kBf16 : Tol{1e-12, 1e-12};
              cs.push_back(c);
            }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyLoss, Loss, loss_cases)

// ---------------------------------------------------------------- in-place ops

namespace {

// Build `ins` on r, run the in-place op, return every input's values after.
std::vector<std::vector<double>> run_inplace(Rt& r, const char* name, const std::vector<Input>& ins,
                                             const std::vector<gn_attr_value>& attrs) {
  std::vector<gt::T> ts;
  std::vector<gn_tensor*> raw;
  for (size_t i = 0; i < ins.size(); ++i) {
    ts.push_back(build(r, ins[i], 4321u + 31u * (uint32_t)i));
    raw.push_back(ts.back().t);
  }
  const gn_op* op = nullptr;
  EXPECT_EQ(gn_op_find(r.rt, name, &op), nullptr);
  gn_status* st = gn_op_call(r.rt, op, raw.data(), raw.size(), attrs.data(), attrs.size(), nullptr, 0);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  std::vector<std::vector<double>> out;
  for (gn_tensor* t : raw) out.push_back(as_f64(t));
  return out;
}

// The optimizer steps compute each element in double with the reference's
// operation order and round once: bit-identical, so tolerance 0.
TEST(CpuInPlace, OptimizersAndMultiTensorHelpersMatchReference) {
  OPC_REQUIRE_SUITE();
  struct K {
    std::string name;
    const char* op;
    std::vector<Input> ins;
    std::vector<gn_attr_value> attrs;
  };
  std::vector<K> ks;
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16})
    for (const auto& [shape, layout] : std::vector<std::pair<std::vector<int64_t>, Layout>>{
             {{300, 257}, kContig}, {{17, 9}, kTransposed}, {{5}, kContig}, {{0, 4}, kContig}}) {
      const Input p{shape, dt, layout, -1, 1}, g{shape, dt, kContig, -1, 1}, v{shape, dt, kContig, 0, 1};
      const std::string tag = dname(dt) + "_" + sname(shape) + lname(layout);
      for (int64_t step : {1, 5})
        for (int nest : {0, 1})
          ks.push_back({"sgd_" + tag,
                        "sgd_step",
                        {p, g, g},
                        {gn_attr_float(0.1), gn_attr_float(0.9), gn_attr_float(0.0), gn_attr_float(0.01),
                         gn_attr_int(nest), gn_attr_int(0), gn_attr_int(step)}});
      ks.push_back({"sgd_plain_" + tag,
                    "sgd_step",
                    {p, g},
                    {gn_attr_float(0.1), gn_attr_float(0.0), gn_attr_float(0.0), gn_attr_float(0.0), gn_attr_int(0),
                     gn_attr_int(1), gn_attr_int(1)}});
      for (int dec : {0, 1})
        ks.push_back({"adamw_" + tag,
                      "adamw_step",
                      {p, g, g, v},
                      {gn_attr_float(1e-3), gn_attr_float(0.9), gn_attr_float(0.999), gn_attr_float(1e-8),
                       gn_attr_float(0.01), gn_attr_int(7), gn_attr_int(dec), gn_attr_int(0)}});
      ks.push_back({"scale_" + tag, "multi_scale_", {{{}, dt, kContig, 0.5, 2}, p, g}, {}});
      ks.push_back({"unscale_" + tag,
                    "multi_unscale_check_",
                    {{{}, dt, kContig, 0.5, 2}, {{}, GN_F32, kContig, 0, 0}, p, g},
                    {}});
    }
  for (const K& k : ks) {
    auto want = run_inplace(runtimes().ref, k.op, k.ins, k.attrs);
    auto got = run_inplace(runtimes().dut, k.op, k.ins, k.attrs);
    if (kSuiteTolFactor == 1.0) {
      EXPECT_EQ(got, want) << k.name;
      continue;
    }
    // Other backends (cuda) may contract a*b+c into FMA: a few ulp of the
    // parameter's dtype, relative to the largest value of the tensor.
    const double ulp = k.ins[0].dtype == GN_F32 ? kEpsF32 : 2.220446049250313e-16;
    ASSERT_EQ(got.size(), want.size()) << k.name;
    for (size_t t = 0; t < want.size(); ++t) {
      ASSERT_EQ(got[t].size(), want[t].size()) << k.name;
      double scale = 0;
      for (double w : want[t]) scale = std::max(scale, std::fabs(w));
      for (size_t i = 0; i < want[t].size(); ++i)
        ASSERT_NEAR(got[t][i], want[t][i], 4 * ulp * scale) << k.name << " tensor " << t << " element " << i;
    }
  }
}

// multi_sum_sq: one output, chunked double sums vs the reference's sequential
// double sum: rtol 1e-6 for the f32 result (rounded once), 1e-12 for f64.
std::vector<Case> multi_cases() {
  std::vector<Case> cs;
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16}) {
    Case c;
    c.name = "multi_sum_sq_" + dname(dt);
    c.op = "multi_sum_sq";
    c.inputs = {{{1000, 300}, dt}, {{17, 9}, dt, kTransposed}, {{0}, dt}, {{}, dt}, {{5}, dt}};
    c.tol = dt == GN_F32 ? Tol{1e-6, 0} : dt == GN_BF16 ? kBf16 : Tol{1e-12, 0};
    cs.push_back(c);
  }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyMulti, Multi, multi_cases)

// ---------------------------------------------------------------- embedding, rope

namespace {

// embedding is a copy and embedding_backward sums in the reference's order in
// double: exact.  ids come from uniform [0, V) truncated; V = 7 with 300 ids
// repeats every id many times.  rope: one rounding of the same double
// expression (up to FMA contraction): f32 rtol 1e-6, f64 1e-14.
std::vector<Case> index_cases() {
  std::vector<Case> cs;
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_I64, GN_I8, GN_BOOL})
    for (int32_t idt : {GN_I64, GN_I32})
      for (const auto& [V, ids] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
               {7, {300}}, {1000, {4, 33}}, {50, {0}}, {3, {}}, {64, {2, 3, 5}}}) {
        for (int64_t D : {1, 16, 129}) {
          Case c;
          c.name = "embedding_" + dname(dt) + "_" + dname(idt) + "_V" + std::to_string(V) + "_" + sname(ids) + "_D" +
                   std::to_string(D);
          c.op = "embedding";
          c.inputs = {{{V, D}, dt, D > 1 ? kTransposed : kContig}, {ids, idt, kContig, 0, (double)V}};
          c.tol = {0, 0};
          cs.push_back(c);
          if (dt != GN_F32 && dt != GN_F64 && dt != GN_BF16) continue;
          Case b;
          b.name = "embedding_backward_" + dname(dt) + "_" + dname(idt) + "_V" + std::to_string(V) + "_" + sname(ids) +
                   "_D" + std::to_string(D);
          b.op = "embedding_backward";
          std::vector<int64_t> gshape = ids;
          gshape.push_back(D);
          b.inputs = {{gshape, dt}, {ids, idt, kContig, 0, (double)V}};
          b.attrs = {gn_attr_int(V)};
          b.tol = dt == GN_BF16 ? kBf16 : Tol{0, 0};  // bf16: the same double sum, rounded once
          cs.push_back(b);
        }
      }
  struct R {
    std::vector<int64_t> x, cs;
    Layout layout;
  };
  const std::vector<R> ropes = {{{2, 4, 33, 64}, {33, 64}, kContig},   {{3, 5, 8}, {5, 8}, kContig},
                                {{2, 6, 10}, {1, 6, 10}, kTransposed}, {{4, 1, 6}, {4, 1, 6}, kContig},
                                {{0, 3, 4}, {3, 4}, kContig},          {{5, 7}, {7}, kContig}};
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16})
    for (const R& r : ropes)
      for (const char* op : {"rope", "rope_backward"}) {
        if (r.x.back() % 2) continue;
        Case c;
        c.name = std::string(op) + "_" + dname(dt) + "_" + sname(r.x) + lname(r.layout) + "_cs" + sname(r.cs);
        c.op = op;
        c.inputs = {{r.x, dt, r.layout, -2, 2}, {r.cs, dt, kContig, -1, 1}, {r.cs, dt, kContig, -1, 1}};
        c.tol = dt == GN_F32 ? Tol{1e-6, 1e-7} : dt == GN_BF16 ? kBf16 : Tol{1e-14, 1e-15};
        cs.push_back(c);
      }
  // rope with an odd last dim: both refuse with the same error
  Case odd;
  odd.name = "rope_f32_odd_D";
  odd.op = "rope";
  odd.inputs = {{{3, 5}, GN_F32}, {{5}, GN_F32}, {{5}, GN_F32}};
  odd.tol = {0, 0};
  cs.push_back(odd);
  // embedding with an id out of range: the same error code on both
  Case bad;
  bad.name = "embedding_id_out_of_range";
  bad.op = "embedding";
  bad.inputs = {{{4, 3}, GN_F32}, {{6}, GN_I64, kContig, 0, 9}};
  bad.tol = {0, 0};
  cs.push_back(bad);
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyIndex, Index, index_cases)

// ---------------------------------------------------------------- pooling

namespace {

// Pooling follows the reference's window walk and double sums per plane:
// exact (tolerance 0).  max_pool2d_backward takes random valid indices.
std::vector<Case> pool_cases() {
  std::vector<Case> cs;
  struct P {
    std::vector<int64_t> x, k, s, pad, dil;
    int64_t ceil, include_pad;
  };
  const std::vector<P> ps = {
      {{2, 3, 8, 8}, {2, 2}, {}, {0, 0}, {1, 1}, 0, 1},        {{2, 3, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 1},
      {{1, 2, 10, 11}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, 1, 0},  {{3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0},
      {{4, 16, 28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 1}, {{0, 2, 4, 4}, {2, 2}, {}, {0, 0}, {1, 1}, 0, 1},
      {{1, 1, 5, 5}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, 1, 1},
  };
  auto out_size = [](int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool c) {
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (c ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (c && (o - 1) * s >= in + p) --o;
    return o;
  };
  int idx = 0;
  for (const P& p : ps) {
    ++idx;
    const size_t n = p.x.size();
    const int64_t sh = p.s.empty() ? p.k[0] : p.s[0], sw = p.s.empty() ? p.k[1] : p.s[1];
    std::vector<int64_t> oshape = p.x;
    oshape[n - 2] = out_size(p.x[n - 2], p.k[0], sh, p.pad[0], p.dil[0], p.ceil);
    oshape[n - 1] = out_size(p.x[n - 1], p.k[1], sw, p.pad[1], p.dil[1], p.ceil);
    const std::vector<int64_t> aoshape = {};
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16}) {  // halves: same double math, one rounding: exact
      const std::string tag = std::to_string(idx) + "_" + dname(dt) + "_" + sname(p.x);
      Case m;
      m.name = "max_pool2d" + tag;
      m.op = "max_pool2d";
      m.inputs = {{p.x, dt, kContig, -2, 2}};
      m.attrs = {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(p.ceil)};
      m.ints = {{0, p.k}, {1, p.s}, {2, p.pad}, {3, p.dil}};
      m.n_out = 2;
      m.tol = {0, 0};
      cs.push_back(m);
      Case mb = m;
      mb.name = "max_pool2d_backward" + tag;
      mb.op = "max_pool2d_backward";
      mb.n_out = 1;
      mb.inputs = {{oshape, dt}, {p.x, dt}, {oshape, GN_I64, kContig, 0, (double)(p.x[n - 2] * p.x[n - 1])}};
      cs.push_back(mb);
      if (p.dil[0] != 1 || p.dil[1] != 1) continue;
      std::vector<int64_t> ash = p.x;
      ash[n - 2] = out_size(p.x[n - 2], p.k[0], sh, p.pad[0], 1, p.ceil);
      ash[n - 1] = out_size(p.x[n - 1], p.k[1], sw, p.pad[1], 1, p.ceil);
      Case a;
      a.name = "avg_pool2d" + tag;
      a.op = "avg_pool2d";
      a.inputs = {{p.x, dt, kContig, -2, 2}};
      a.attrs = {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(p.ceil), gn_attr_int(p.include_pad)};
      a.ints = {{0, p.k}, {1, p.s}, {2, p.pad}};
      a.tol = {0, 0};
      cs.push_back(a);
      Case ab = a;
      ab.name = "avg_pool2d_backward" + tag;
      ab.op = "avg_pool2d_backward";
      ab.inputs = {{ash, dt}, {p.x, dt}};
      cs.push_back(ab);
    }
  }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyPool, Pool, pool_cases)

// ---------------------------------------------------------------- layer_norm_backward

namespace {

// Double arithmetic like the reference, rounded once: f32 rtol 1e-6 with atol
// 1e-6 (gradients that cancel to ~0), f64 rtol/atol 1e-12.
std::vector<Case> ln_backward_cases() {
  std::vector<Case> cs;
  struct L {
    std::vector<int64_t> x;
    Layout layout;
    int64_t nd;
    bool w;
  };
  const std::vector<L> ls = {{{257, 513}, kContig, 1, true}, {{64, 1024}, kContig, 1, false},
                             {{4, 6, 8}, kContig, 2, true},  {{13, 7}, kTransposed, 1, true},
                             {{0, 16}, kContig, 1, true},    {{5, 1}, kContig, 1, true}};
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16})
    for (const L& l : ls) {
      const std::vector<int64_t> rows(l.x.begin(), l.x.end() - l.nd), norm(l.x.end() - l.nd, l.x.end());
      const int32_t sdt = dt == GN_F64 ? GN_F64 : GN_F32;
      Case c;
      c.name = "layer_norm_backward_" + dname(dt) + "_" + sname(l.x) + lname(l.layout) + "_n" + std::to_string(l.nd) +
               (l.w ? "_w" : "");
      c.op = "layer_norm_backward";
      c.inputs = {{l.x, dt, kContig, -1, 1},
                  {l.x, dt, l.layout, -3, 3},
                  {rows, sdt, kContig, -0.5, 0.5},
                  {rows, sdt, kContig, 0.5, 2}};
      if (l.w) c.inputs.push_back({norm, dt, kContig, 0.5, 1.5});
      c.attrs = {gn_attr_int(l.nd)};
      c.n_out = 3;
      c.tol = dt == GN_F32 ? Tol{1e-6, 1e-6} : dt == GN_BF16 ? kBf16 : Tol{1e-12, 1e-12};
      cs.push_back(c);
    }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyLnBwd, LayerNormBackward, ln_backward_cases)

// ---------------------------------------------------------------- attention

namespace {

// scaled_dot_product_attention and its backward: C++ in double with the
// reference's formulas and order, no FMA contraction, one rounding: f64 within
// 1e-12 (exp/log of the same arguments; rtol and atol), f32 within 1e-6
// relative + 1e-7 absolute (a final rounding of values that agree in double to
// ~1e-15), bf16/f16 kBf16.  GQA (Hq = 2*Hkv), causal 0/1/2, bool and float
// masks (broadcast), Sq != Sk, an all-masked row (lse -inf, out 0).
std::vector<Case> attention_cases() {
  std::vector<Case> cs;
  struct A {
    std::string tag;
    int64_t B, Hq, Hkv, Sq, Sk, D, Dv, causal;
    int mask;  // 0 none, 1 bool (B,1,Sq,Sk), 2 float (Sq,Sk)
  };
  const std::vector<A> as = {{"mha", 2, 3, 3, 5, 5, 8, 8, 0, 0},      {"gqa", 2, 4, 2, 5, 7, 8, 6, 0, 0},
                             {"causal1", 1, 2, 2, 6, 6, 4, 4, 1, 0},  {"causal2", 1, 2, 1, 3, 7, 4, 5, 2, 0},
                             {"boolmask", 2, 2, 1, 4, 6, 4, 4, 0, 1}, {"floatmask", 1, 2, 2, 4, 6, 4, 4, 1, 2},
                             {"big", 1, 4, 4, 64, 80, 32, 32, 1, 0},  {"empty", 0, 2, 2, 3, 3, 4, 4, 0, 0}};
  for (const A& a : as)
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16}) {
      const Tol tol = dt == GN_F64 ? Tol{1e-12, 1e-12} : dt == GN_F32 ? Tol{1e-6, 1e-7} : kBf16;
      const Input q{{a.B, a.Hq, a.Sq, a.D}, dt, kContig, -1, 1}, k{{a.B, a.Hkv, a.Sk, a.D}, dt, kContig, -1, 1},
          v{{a.B, a.Hkv, a.Sk, a.Dv}, dt, kContig, -1, 1};
      std::vector<Input> fwd = {q, k, v}, bwd = {{{a.B, a.Hq, a.Sq, a.Dv}, dt, kContig, -1, 1},
                                                 q,
                                                 k,
                                                 v,
                                                 {{a.B, a.Hq, a.Sq, a.Dv}, dt},
                                                 {{a.B, a.Hq, a.Sq}, GN_F32}};
      if (a.mask == 1) {
        fwd.push_back({{a.B, 1, a.Sq, a.Sk}, GN_BOOL, kContig, -1, 1});
        bwd.push_back(fwd.back());
      } else if (a.mask == 2) {
        fwd.push_back({{a.Sq, a.Sk}, dt, kContig, -2, 0});
        bwd.push_back(fwd.back());
      }
      Case c;
      c.name = "sdpa_" + a.tag + "_" + dname(dt);
      c.op = "scaled_dot_product_attention";
      c.inputs = fwd;
      c.attrs = {gn_attr_int(a.causal), gn_attr_float(NAN)};
      c.n_out = 2;
      c.tol = tol;
      cs.push_back(c);
      Case g = c;
      g.name = "sdpa_backward_" + a.tag + "_" + dname(dt);
      g.op = "scaled_dot_product_attention_backward";
      g.inputs = bwd;
      g.attrs = {gn_attr_int(a.causal), gn_attr_float(0.3)};
      g.n_out = 3;
      cs.push_back(g);
    }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyAttention, Attention, attention_cases)
