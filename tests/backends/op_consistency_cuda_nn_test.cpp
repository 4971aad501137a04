// tests/backends/op_consistency_cuda_nn_test.cpp - the cross-backend suite,
// cuda part: cases for the cuda nn/indexing/sort/conv families that the
// shared parts do not cover (built into op_consistency_cuda_test only).
//
//  * sort, argsort, topk: every dtype the reference serves, lines along the
//    last, first and a middle dim (CUB segmented sort with inner > 1), ties
//    on purpose (small integer ranges; bf16/f16 values in [-1, 1) repeat) so
//    the stable order (lower index first, both directions) is checked; lines of
//    70000 take the one-radix-sort-per-line path.  Exact.
//  * shapes that take the GPU kernels' fast paths: rows of 4096 (16-byte
//    vectors, row cached in shared memory), 768 (bf16 vectors of 8), 1000
//    (not a multiple of the vector width: scalar path) and 20000 f32 (row
//    larger than the shared-memory cache) for layer_norm/rms_norm forward and
//    backward; big swiglu/rope; embedding_backward with 4096 ids over 50 rows
//    (long runs of repeated ids: the sorted-run sum must stay bit-exact);
//    index_select/cat of bf16 rows (16-byte copies); conv2d with groups,
//    stride and dilation through both paths (cuBLAS for groups <= 8, the
//    implicit GEMM with split-k grad_weight for 16 groups); multi_sum_sq
//    over mixed dtypes.
//  * scaled_dot_product_attention with few query rows (Sq 1, 2, 5: the split-K
//    decode kernel): Sk 1 to 4100 (one and many key chunks), head dims 64, 80,
//    128, GQA 14/2 and 16/8 and MHA, B 1 and 3, bool masks (random, all false,
//    per-batch prefixes including an empty one) and float masks (broadcast),
//    causal 0/1/2, q as a transposed view of a projection, K/V as slices of a
//    larger cache, bf16/f16/f32; K/V not contiguous (the generic path); one
//    call captured into a graph and replayed.
//  * matmul with few rows against a row-major weight (the decode GEMV path):
//    bf16/f16, rows 1 to 4 as (M, K) and (1, 1, K), more rows (cuBLASLt) as
//    (6 = 2 x 3, 8, 9), K 64, 896, 4864 and 4100 (rows not 16-byte aligned:
//    cuBLASLt), N 1, 7, 1152, 9728, b as (N, K) with trans_b and as a
//    transposed (K, N) view, a as a transposed view with trans_a, a with
//    stride-2 columns (cuBLASLt), an LM head (N 151936, K 896, one row), and
//    rows of a at a stride larger than K (slices of wider rows, with batch).
// Tolerances as the shared parts (see op_consistency.h): f32 results computed
// in double and rounded once rtol/atol 1e-6; bf16/f16 kBf16 (one ulp of the
// output's rounding); conv as matmul; copies and sorts exact.
#include "op_consistency.h"

namespace {

const Tol kF32Once{1e-6, 1e-6};

// make_case with the output count before the tolerance.
Case mk(std::string name, const char* op, std::vector<Input> ins, std::vector<gn_attr_value> attrs, size_t n_out,
        Tol tol) {
  return make_case(std::move(name), op, std::move(ins), std::move(attrs), tol, n_out);
}

// ---------------------------------------------------------------- sort family

std::vector<Case> sort_cases() {
  std::vector<Case> cs;
  const std::vector<ShapeDim> ss = {{{1000}, 0, kContig},    {{7, 33}, -1, kContig},   {{33, 7}, 0, kContig},
                                    {{4, 5, 6}, 1, kContig}, {{3, 5000}, -1, kContig}, {{9, 12}, -1, kTransposed},
                                    {{0, 5}, -1, kContig},   {{6, 1}, 1, kContig},     {{2, 70000}, -1, kContig}};
  const int32_t dts[] = {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I64, GN_I32, GN_I8, GN_U8, GN_BOOL};
  for (int32_t dt : dts)
    for (const ShapeDim& s : ss) {
      const bool is_int = dt == GN_I64 || dt == GN_I32 || dt == GN_I8;
      const double lo = dt == GN_U8 ? 0 : is_int ? -3 : -1, hi = dt == GN_U8 || is_int ? 4 : 1;
      const Input x{s.shape, dt, s.layout, lo, hi};
      const std::string tag = dname(dt) + "_" + sname(s.shape) + lname(s.layout) + "_d" + std::to_string(s.dim + 1);
      for (int desc : {0, 1}) {
        const std::vector<gn_attr_value> a = {gn_attr_int(s.dim), gn_attr_int(desc), gn_attr_int(1)};
        cs.push_back(mk("sort_" + tag + (desc ? "_desc" : ""), "sort", {x}, a, 2, kExact));
        cs.push_back(mk("argsort_" + tag + (desc ? "_desc" : ""), "argsort", {x}, a, 1, kExact));
      }
      if (dt == GN_BOOL) continue;
      const int64_t L = s.shape[(size_t)(s.dim < 0 ? s.dim + (int64_t)s.shape.size() : s.dim)];
      for (int64_t k : {int64_t{1}, int64_t{3}, L})
        for (int largest : {0, 1}) {
          if (k > L || (k == L && (k == 1 || k == 3))) continue;  // no duplicate names
          cs.push_back(mk("topk_" + tag + "_k" + std::to_string(k) + (largest ? "_max" : "_min"), "topk", {x},
                          {gn_attr_int(k), gn_attr_int(s.dim), gn_attr_int(largest), gn_attr_int(1)}, 2, kExact));
        }
    }
  // k out of range: an error for both
  cs.push_back(mk("topk_k_too_large", "topk", {{{4, 5}, GN_F32}},
                  {gn_attr_int(6), gn_attr_int(-1), gn_attr_int(1), gn_attr_int(1)}, 2, kExact));
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyCudaSort, CudaSort, sort_cases)

// ---------------------------------------------------------------- fast paths

namespace {

Tol tol_for(int32_t dt) { return dt == GN_F32 ? kF32Once : dt == GN_F64 ? Tol{1e-12, 1e-12} : kBf16; }

std::vector<Case> fast_path_cases() {
  std::vector<Case> cs;
  // norms: (rows, N)
  const std::vector<std::pair<int64_t, int64_t>> norm_shapes = {{64, 4096}, {48, 768}, {33, 1000}, {8, 20000}};
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16, GN_F64})
    for (const auto& [R, N] : norm_shapes) {
      if (dt == GN_F64 && N != 1000) continue;
      const std::vector<int64_t> x{R, N}, rows{R}, w{N};
      const int32_t sdt = dt == GN_F64 ? GN_F64 : GN_F32;
      const std::string tag = dname(dt) + "_" + sname(x);
      cs.push_back(mk("ln_" + tag, "layer_norm", {{x, dt, kContig, -3, 3}, {w, dt, kContig, 0.5, 1.5}, {w, dt}},
                      {gn_attr_int(1), gn_attr_float(1e-5)}, 3, tol_for(dt)));
      cs.push_back(mk("ln_bwd_" + tag, "layer_norm_backward",
                      {{x, dt},
                       {x, dt, kContig, -3, 3},
                       {rows, sdt, kContig, -0.5, 0.5},
                       {rows, sdt, kContig, 0.5, 2},
                       {w, dt, kContig, 0.5, 1.5}},
                      {gn_attr_int(1)}, 3, tol_for(dt)));
      cs.push_back(mk("rms_" + tag, "rms_norm", {{x, dt, kContig, -3, 3}, {w, dt, kContig, 0.5, 1.5}},
                      {gn_attr_float(1e-6)}, 2, tol_for(dt)));
      cs.push_back(mk("rms_bwd_" + tag, "rms_norm_backward",
                      {{x, dt}, {x, dt, kContig, -3, 3}, {rows, sdt, kContig, 0.5, 2}, {w, dt, kContig, 0.5, 1.5}}, {},
                      2, tol_for(dt)));
    }
  // layer_norm over two dims, no affine, bf16
  cs.push_back(mk("ln_bf16_n2_noaffine", "layer_norm", {{{6, 16, 64}, GN_BF16, kContig, -3, 3}},
                  {gn_attr_int(2), gn_attr_float(1e-5)}, 3, kBf16));
  // swiglu / rope, 16-bit and f32
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16}) {
    const std::vector<int64_t> s{512, 1024};
    cs.push_back(
        mk("swiglu_" + dname(dt), "swiglu", {{s, dt, kContig, -6, 6}, {s, dt, kContig, -2, 2}}, {}, 1, tol_for(dt)));
    cs.push_back(mk("swiglu_bwd_" + dname(dt), "swiglu_backward",
                    {{s, dt}, {s, dt, kContig, -6, 6}, {s, dt, kContig, -2, 2}}, {}, 2, tol_for(dt)));
    cs.push_back(
        mk("swiglu_odd_" + dname(dt), "swiglu", {{{3, 7}, dt, kContig, -6, 6}, {{3, 7}, dt}}, {}, 1, tol_for(dt)));
    const std::vector<int64_t> q{2, 8, 128, 64}, c{128, 64};
    for (const char* op : {"rope", "rope_backward"})
      cs.push_back(
          mk(std::string(op) + "_" + dname(dt), op, {{q, dt, kContig, -2, 2}, {c, dt}, {c, dt}}, {}, 1, tol_for(dt)));
  }
  // embedding backward: long runs of repeated ids (4096 ids over 50 rows), and sparse ids
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16}) {
    cs.push_back(mk("emb_bwd_runs_" + dname(dt), "embedding_backward",
                    {{{4096, 256}, dt}, {{4096}, GN_I64, kContig, 0, 50}}, {gn_attr_int(50)}, 1,
                    dt == GN_BF16 ? kBf16 : kExact));
    cs.push_back(mk("emb_bwd_sparse_" + dname(dt), "embedding_backward",
                    {{{2, 32, 64}, dt}, {{2, 32}, GN_I32, kContig, 0, 100000}}, {gn_attr_int(100000)}, 1,
                    dt == GN_BF16 ? kBf16 : kExact));
  }
  cs.push_back(mk("emb_bf16_rows4096", "embedding", {{{1000, 4096}, GN_BF16}, {{3, 77}, GN_I64, kContig, 0, 1000}}, {},
                  1, kExact));
  cs.push_back(mk("emb_bwd_oob", "embedding_backward", {{{5, 8}, GN_F32}, {{5}, GN_I64, kContig, 0, 12}},
                  {gn_attr_int(10)}, 1, kExact));
  // data movement with 16-byte units
  cs.push_back(mk("index_select_bf16_rows", "index_select", {{{500, 2048}, GN_BF16}, {{300}, GN_I64, kContig, 0, 500}},
                  {gn_attr_int(0)}, 1, kExact));
  cs.push_back(mk("cat_bf16_4", "cat",
                  {{{16, 64, 8}, GN_BF16}, {{16, 3, 8}, GN_BF16}, {{16, 128, 8}, GN_BF16}, {{16, 1, 8}, GN_BF16}},
                  {gn_attr_int(1)}, 1, kExact));
  cs.push_back(mk("stack_f32_3", "stack", {{{33, 17}, GN_F32}, {{33, 17}, GN_F32}, {{33, 17}, GN_F32}},
                  {gn_attr_int(1)}, 1, kExact));
  cs.push_back(mk("triu_i8", "triu", {{{3, 40, 50}, GN_I8, kContig, -100, 100}}, {gn_attr_int(-3)}, 1, kExact));
  cs.push_back(mk("tril_bf16", "tril", {{{40, 50}, GN_BF16}}, {gn_attr_int(7)}, 1, kExact));
  cs.push_back(mk("one_hot_big", "one_hot", {{{300}, GN_I32, kContig, 0, 1000}}, {gn_attr_int(1000)}, 1, kExact));
  cs.push_back(mk("one_hot_oob", "one_hot", {{{30}, GN_I64, kContig, 0, 12}}, {gn_attr_int(10)}, 1, kExact));
  cs.push_back(mk("masked_fill_bf16_bcast", "masked_fill", {{{8, 50, 64}, GN_BF16}, {{50, 1}, GN_BOOL}},
                  {gn_attr_float(-3.5)}, 1, kExact));
  cs.push_back(mk("scatter_add_f32_many_repeats", "scatter_add",
                  {{{10, 64}, GN_F32}, {{2000, 64}, GN_I64, kContig, 0, 10}, {{2000, 64}, GN_F32}}, {gn_attr_int(0)}, 1,
                  kExact));
  cs.push_back(mk("index_add_f16_repeats", "index_add",
                  {{{10, 33}, GN_F16}, {{500}, GN_I32, kContig, 0, 10}, {{500, 33}, GN_F16}},
                  {gn_attr_int(0), gn_attr_float(0.5)}, 1, kExact));
  // conv2d: groups, stride, dilation; bf16 and f32
  struct C {
    std::vector<int64_t> x, w, stride, pad, dil;
    int64_t groups;
  };
  const std::vector<C> convs = {{{8, 32, 28, 28}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                                {{4, 16, 17, 19}, {32, 4, 3, 5}, {2, 1}, {1, 2}, {2, 1}, 4},
                                {{2, 8, 9, 9}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8},
                                {{16, 64, 8, 8}, {32, 64, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
                                {{2, 16, 9, 9}, {16, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 16},  // implicit-GEMM path
                                {{3, 8, 10, 10}, {12, 8, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1}};
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16})
    for (size_t i = 0; i < convs.size(); ++i) {
      const C& c = convs[i];
      const int64_t N = c.x[0], O = c.w[0], g = c.groups;
      const int64_t Ho = (c.x[2] + 2 * c.pad[0] - c.dil[0] * (c.w[2] - 1) - 1) / c.stride[0] + 1;
      const int64_t Wo = (c.x[3] + 2 * c.pad[1] - c.dil[1] * (c.w[3] - 1) - 1) / c.stride[1] + 1;
      const int64_t K = std::max({c.w[1] * c.w[2] * c.w[3], O / g * c.w[2] * c.w[3], N * Ho * Wo});
      const std::string tag = std::to_string(i) + "_" + dname(dt);
      Case f = mk("conv_" + tag, "conv2d", {{c.x, dt}, {c.w, dt}, {{O}, dt}},
                  {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(g)}, 1, matmul_tol(dt, K));
      f.ints = {{0, c.stride}, {1, c.pad}, {2, c.dil}};
      cs.push_back(f);
      Case b = mk("conv_bwd_" + tag, "conv2d_backward", {{{N, O, Ho, Wo}, dt}, {c.x, dt}, {c.w, dt}},
                  {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0), gn_attr_int(g)}, 3, matmul_tol(dt, K));
      b.ints = f.ints;
      cs.push_back(b);
    }
  // multi_sum_sq over mixed dtypes (f32 result)
  cs.push_back(mk("multi_sum_sq_mixed", "multi_sum_sq",
                  {{{1000, 300}, GN_BF16}, {{77}, GN_F16}, {{5, 3}, GN_F32, kTransposed}, {{40000}, GN_F32}}, {}, 1,
                  Tol{1e-6, 0}));
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyCudaFast, CudaFast, fast_path_cases)

// ---------------------------------------------------------------- attention, few query rows

namespace {

// Attention tolerances of op_consistency_nn_test.cpp: f32 1e-6 relative + 1e-7
// absolute (f32 accumulation against the reference's double), 16-bit kBf16.
Tol attn_tol(int32_t dt) { return dt == GN_F32 ? Tol{1e-6, 1e-7} : kBf16; }

std::vector<Case> decode_attention_cases() {
  std::vector<Case> cs;
  struct A {
    std::string tag;
    int64_t B, Hq, Hkv, Sq, Sk, D, causal;
    int mask;  // 0 none, 1 bool (B,1,1,Sk), 2 bool (B,1,Sq,Sk), 3 bool all false, 4 float (Sq,Sk), 5 float (B,1,1,Sk)
    Layout q_layout, kv_layout;
  };
  const std::vector<A> as = {{"qwen_s384", 1, 14, 2, 1, 384, 64, 0, 1, kContig, kContig},
                             {"qwen_s4100", 1, 14, 2, 1, 4100, 64, 0, 1, kContig, kContig},
                             {"sk1", 3, 4, 4, 1, 1, 64, 0, 0, kContig, kContig},
                             {"sk7_c2", 3, 16, 8, 2, 7, 128, 2, 0, kContig, kContig},
                             {"sq5_c1_float", 1, 14, 2, 5, 300, 64, 1, 4, kContig, kContig},
                             {"sq5_c2_d80", 3, 16, 8, 5, 300, 80, 2, 2, kContig, kContig},
                             {"d128_floatrow", 3, 4, 4, 2, 384, 128, 0, 5, kContig, kContig},
                             {"all_masked", 1, 14, 2, 2, 300, 64, 0, 3, kContig, kContig},
                             {"qT_c2", 3, 14, 2, 1, 300, 64, 2, 0, kTransposed, kContig},
                             {"qS_s4100", 1, 16, 8, 2, 4100, 128, 1, 1, kSliced, kContig},
                             {"sq5_s4100_c2", 1, 14, 2, 5, 4100, 64, 2, 2, kContig, kContig},
                             {"kvT_generic", 1, 14, 2, 1, 300, 64, 0, 1, kContig, kTransposed}};
  for (const A& a : as)
    for (int32_t dt : {GN_BF16, GN_F16, GN_F32}) {
      const Input q{{a.B, a.Hq, a.Sq, a.D}, dt, a.q_layout, -1, 1}, k{{a.B, a.Hkv, a.Sk, a.D}, dt, a.kv_layout, -1, 1},
          v{{a.B, a.Hkv, a.Sk, a.D}, dt, a.kv_layout, -1, 1};
      std::vector<Input> ins = {q, k, v};
      if (a.mask == 1) ins.push_back({{a.B, 1, 1, a.Sk}, GN_BOOL, kContig, -1, 1});
      if (a.mask == 2) ins.push_back({{a.B, 1, a.Sq, a.Sk}, GN_BOOL, kContig, -1, 1});
      if (a.mask == 3) ins.push_back({{a.B, 1, 1, a.Sk}, GN_BOOL, kContig, 0, 1});
      if (a.mask == 4) ins.push_back({{a.Sq, a.Sk}, dt, kContig, -2, 0});
      if (a.mask == 5) ins.push_back({{a.B, 1, 1, a.Sk}, GN_F32, kContig, -2, 0});
      cs.push_back(mk("sdpa_dec_" + a.tag + "_" + dname(dt), "scaled_dot_product_attention", ins,
                      {gn_attr_int(a.causal), gn_attr_float(a.tag == "sk7_c2" ? 0.3 : NAN)}, 2, attn_tol(dt)));
    }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyCudaDecodeAttn, CudaDecodeAttn, decode_attention_cases)

namespace {

// The decode step's layouts, which the harness's inputs cannot express: q a
// transposed view (B,Sq,Hq,D) -> (B,Hq,Sq,D) of a projection, K/V the first Sk
// rows of a (B,Hkv,Cap,D) cache, and a bool keep-mask (B,1,1,Sk) keeping the
// first len[b] keys (len 0: a row with nothing kept, out 0 and lse -inf).
struct DecodeLayout {
  int64_t B, Hq, Hkv, Sq, Sk, Cap, D, causal;
  std::vector<int64_t> len;  // kept keys per batch row; empty: no mask
};

gt::T host_data_on(Rt& r, const std::vector<double>& data, std::vector<int64_t> shape, int32_t dt) {
  gn_tensor* t64 = nullptr;
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(r.rt, data.data(), shape.data(), (int32_t)shape.size(), GN_F64, r.host, &t64), t64);
  check(gn_tensor_to_dtype(t64, dt, &t), t);
  gn_tensor_release(t64);
  return gt::T(move_to(t, r.dev));
}

std::vector<double> uniform(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

struct Inputs {
  gt::T q, k, v, mask;
};

Inputs decode_inputs(Rt& r, const DecodeLayout& c, int32_t dt) {
  Inputs in;
  gt::T qp = host_data_on(r, uniform((size_t)(c.B * c.Sq * c.Hq * c.D), 11), {c.B, c.Sq, c.Hq, c.D}, dt);
  gt::T kc = host_data_on(r, uniform((size_t)(c.B * c.Hkv * c.Cap * c.D), 12), {c.B, c.Hkv, c.Cap, c.D}, dt);
  gt::T vc = host_data_on(r, uniform((size_t)(c.B * c.Hkv * c.Cap * c.D), 13), {c.B, c.Hkv, c.Cap, c.D}, dt);
  gn_tensor *q = nullptr, *k = nullptr, *v = nullptr;
  check(gn_tensor_transpose(qp.t, 1, 2, &q), q);
  check(gn_tensor_slice(kc.t, 2, 0, c.Sk, 1, &k), k);
  check(gn_tensor_slice(vc.t, 2, 0, c.Sk, 1, &v), v);
  in.q = gt::T(q);
  in.k = gt::T(k);
  in.v = gt::T(v);
  if (!c.len.empty()) {
    std::vector<double> m((size_t)(c.B * c.Sk), 0.0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.len[(size_t)b] && j < c.Sk; ++j) m[(size_t)(b * c.Sk + j)] = 1.0;
    in.mask = host_data_on(r, m, {c.B, 1, 1, c.Sk}, GN_BOOL);
  }
  return in;
}

// out and lse of one call, as float64 (empty on error, with a test failure).
std::vector<std::vector<double>> decode_call(Rt& r, Inputs& in, int64_t causal) {
  std::vector<gn_tensor*> raw = {in.q.t, in.k.t, in.v.t};
  if (in.mask.t) raw.push_back(in.mask.t);
  const gn_attr_value attrs[2] = {gn_attr_int(causal), gn_attr_float(NAN)};
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(r.rt, "scaled_dot_product_attention", &op);
  gn_tensor* outs[2] = {nullptr, nullptr};
  if (!st) st = gn_op_call(r.rt, op, raw.data(), raw.size(), attrs, 2, outs, 2);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  std::vector<std::vector<double>> res;
  for (gn_tensor* o : outs) {
    if (!o) continue;
    gt::T keep(o);
    res.push_back(as_f64(o));
  }
  return res;
}

void expect_close(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want, Tol tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size()) << what;
    size_t bad = 0, worst_i = 0;
    for (size_t i = 0; i < want[k].size(); ++i) {
      const double g = got[k][i], w = want[k][i];
      const bool ok = (std::isinf(w) && g == w) || std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      if (!ok && bad++ == 0) worst_i = i;
    }
    EXPECT_EQ(bad, 0u) << what << " output " << k << ": " << bad << " elements off; first at " << worst_i << ": "
                       << got[k][worst_i] << " vs reference " << want[k][worst_i];
  }
}

const std::vector<DecodeLayout> kDecodeLayouts = {
    {3, 14, 2, 1, 384, 512, 64, 0, {0, 1, 200}}, {3, 16, 8, 2, 300, 320, 128, 2, {300, 0, 57}},
    {1, 4, 4, 5, 4100, 4160, 80, 1, {4000}},     {1, 14, 2, 1, 4100, 8192, 64, 0, {2049}},
    {3, 14, 2, 5, 7, 64, 64, 2, {7, 3, 0}},      {1, 14, 2, 1, 384, 384, 128, 0, {}}};

TEST(OpConsistencyCudaDecodeViews, MatchesReference) {
  OPC_REQUIRE_SUITE();
  for (const DecodeLayout& c : kDecodeLayouts)
    for (int32_t dt : {GN_BF16, GN_F16, GN_F32}) {
      const std::string what = std::string("B")
                                   .append(std::to_string(c.B))
                                   .append(" Hq")
                                   .append(std::to_string(c.Hq))
                                   .append(" Sq")
                                   .append(std::to_string(c.Sq))
                                   .append(" Sk")
                                   .append(std::to_string(c.Sk))
                                   .append(" D")
                                   .append(std::to_string(c.D))
                                   .append(" ")
                                   .append(dname(dt));
      Inputs ri = decode_inputs(runtimes().ref, c, dt), di = decode_inputs(runtimes().dut, c, dt);
      const Tol t = attn_tol(dt);
      expect_close(decode_call(runtimes().dut, di, c.causal), decode_call(runtimes().ref, ri, c.causal),
                   {t.rtol * kSuiteTolFactor, t.atol * kSuiteTolFactor}, what);
    }
}

// The decode kernel's chunks meet in a workspace: one call captured into a
// graph on a side stream replays with the eager call's results.
TEST(OpConsistencyCudaDecodeViews, CapturedGraphMatchesEager) {
  OPC_REQUIRE_SUITE();
  Rt& r = runtimes().dut;
  if (r.dev.type == r.host.type) GTEST_SKIP() << "no graph capture on the host";
  const DecodeLayout c{1, 14, 2, 1, 4100, 8192, 64, 0, {3001}};
  gn_stream* stream = nullptr;
  gn_status* st = gn_stream_create(r.rt, r.dev, &stream);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  st = gn_stream_set_current(r.rt, r.dev, stream);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  Inputs in = decode_inputs(r, c, GN_BF16);
  const std::vector<std::vector<double>> eager = decode_call(r, in, 0);
  std::vector<gn_tensor*> raw = {in.q.t, in.k.t, in.v.t, in.mask.t};
  const gn_attr_value attrs[2] = {gn_attr_int(0), gn_attr_float(NAN)};
  const gn_op* op = nullptr;
  st = gn_op_find(r.rt, "scaled_dot_product_attention", &op);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  gn_tensor* outs[2] = {nullptr, nullptr};
  st = gn_graph_begin(r.rt, r.dev);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  gn_status* call_st = gn_op_call(r.rt, op, raw.data(), raw.size(), attrs, 2, outs, 2);
  gn_graph* g = nullptr;
  st = gn_graph_end(r.rt, r.dev, &g);
  EXPECT_EQ(call_st, nullptr) << gn_status_message(call_st);
  gn_status_free(call_st);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  gt::T out(outs[0]), lse(outs[1]);
  ASSERT_TRUE(out.t && lse.t && eager.size() == 2);
  for (int rep = 0; rep < 2; ++rep) {
    st = gn_graph_launch(g);
    ASSERT_EQ(st, nullptr) << gn_status_message(st);
    st = gn_stream_synchronize(stream);
    ASSERT_EQ(st, nullptr) << gn_status_message(st);
    EXPECT_EQ(as_f64(out.t), eager[0]) << "replay " << rep;
    EXPECT_EQ(as_f64(lse.t), eager[1]) << "replay " << rep;
  }
  gn_graph_destroy(g);
  gn_status_free(gn_stream_set_current(r.rt, r.dev, nullptr));
  gn_status_free(gn_stream_destroy(stream));
}

// The attention backward adds no partial sums with atomics, so the same call
// twice gives the same bits: the flash kernels (bf16/f16, D 64 and 128, GQA,
// all causal modes, ragged tiles) and the generic one (f32, a bool mask).  Each
// result is also held to the reference: relative L2 error <= 2e-2 for the
// 16-bit tensor-core path (P and dS are rounded to 16 bits), 1e-6 for f32.
struct BwdLayout {
  int64_t B, Hq, Hkv, Sq, Sk, D, causal;
  int32_t dt;
  bool mask;
};

// A failed call throws (gtest reports it) instead of handing on NULL outputs.
void check_status(gn_status* st) {
  if (!st) return;
  const std::string m = gn_status_message(st);
  gn_status_free(st);
  throw std::runtime_error(m);
}

std::vector<std::vector<double>> sdpa_backward_call(Rt& r, const BwdLayout& c) {
  const int64_t nq = c.B * c.Hq * c.Sq * c.D, nk = c.B * c.Hkv * c.Sk * c.D;
  gt::T q = host_data_on(r, uniform((size_t)nq, 31), {c.B, c.Hq, c.Sq, c.D}, c.dt);
  gt::T k = host_data_on(r, uniform((size_t)nk, 32), {c.B, c.Hkv, c.Sk, c.D}, c.dt);
  gt::T v = host_data_on(r, uniform((size_t)nk, 33), {c.B, c.Hkv, c.Sk, c.D}, c.dt);
  gt::T dout = host_data_on(r, uniform((size_t)nq, 34), {c.B, c.Hq, c.Sq, c.D}, c.dt);
  gt::T mask;
  if (c.mask) {
    std::vector<double> m((size_t)(c.Sq * c.Sk));
    for (size_t i = 0; i < m.size(); ++i) m[i] = (i * 7919) % 5 != 0;
    mask = host_data_on(r, m, {1, 1, c.Sq, c.Sk}, GN_BOOL);
  }
  const gn_attr_value attrs[2] = {gn_attr_int(c.causal), gn_attr_float(NAN)};
  const gn_op *fwd = nullptr, *bwd = nullptr;
  check_status(gn_op_find(r.rt, "scaled_dot_product_attention", &fwd));
  check_status(gn_op_find(r.rt, "scaled_dot_product_attention_backward", &bwd));
  std::vector<gn_tensor*> fin = {q.t, k.t, v.t};
  if (c.mask) fin.push_back(mask.t);
  gn_tensor* fo[2] = {nullptr, nullptr};
  check_status(gn_op_call(r.rt, fwd, fin.data(), fin.size(), attrs, 2, fo, 2));
  gt::T out(fo[0]), lse(fo[1]);
  std::vector<gn_tensor*> bin = {dout.t, q.t, k.t, v.t, out.t, lse.t};
  if (c.mask) bin.push_back(mask.t);
  gn_tensor* bo[3] = {nullptr, nullptr, nullptr};
  check_status(gn_op_call(r.rt, bwd, bin.data(), bin.size(), attrs, 2, bo, 3));
  std::vector<std::vector<double>> res;
  for (gn_tensor* t : bo) {
    gt::T keep(t);
    res.push_back(as_f64(t));
  }
  return res;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

TEST(OpConsistencyCudaAttnBackward, RepeatsBitForBitAndMatchesReference) {
  OPC_REQUIRE_SUITE();
  const std::vector<BwdLayout> ls = {
      {2, 4, 4, 128, 128, 64, 0, GN_BF16, false}, {1, 4, 2, 130, 200, 64, 1, GN_BF16, false},
      {1, 6, 2, 133, 77, 128, 2, GN_F16, false},  {2, 14, 2, 257, 257, 64, 1, GN_BF16, false},
      {1, 4, 2, 70, 90, 64, 1, GN_F32, true},     {1, 2, 1, 33, 40, 80, 2, GN_F32, false}};
  for (const BwdLayout& c : ls) {
    const std::string what = "B" + std::to_string(c.B) + " Hq" + std::to_string(c.Hq) + " Hkv" + std::to_string(c.Hkv) +
                             " Sq" + std::to_string(c.Sq) + " Sk" + std::to_string(c.Sk) + " D" + std::to_string(c.D) +
                             " causal" + std::to_string(c.causal) + " " + dname(c.dt);
    const auto first = sdpa_backward_call(runtimes().dut, c), second = sdpa_backward_call(runtimes().dut, c);
    const auto want = sdpa_backward_call(runtimes().ref, c);
    ASSERT_EQ(first.size(), 3u) << what;
    const double bar = c.dt == GN_F32 ? 1e-6 : 2e-2;
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(first[k], second[k]) << what << ": gradient " << k << " differs between two identical calls";
      EXPECT_LE(rel_l2(first[k], want[k]), bar) << what << ": gradient " << k;
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- few-row matmul

namespace {

std::vector<Case> gemv_cases() {
  std::vector<Case> cs;
  auto add = [&](const std::string& tag, int32_t dt, Input a, Input b, int64_t ta, int64_t tb, int64_t K) {
    a.dtype = b.dtype = dt;
    cs.push_back(mk("gemv_" + dname(dt) + "_" + tag, "matmul", {a, b}, {gn_attr_int(ta), gn_attr_int(tb)}, 1,
                    matmul_tol(dt, K)));
  };
  const std::vector<std::vector<int64_t>> leads = {{1}, {2}, {3}, {4}, {8}, {9}, {1, 1}, {2, 3}};
  for (int32_t dt : {GN_BF16, GN_F16})
    for (int64_t K : {64, 896, 4864, 4100})
      for (const auto& lead : leads)
        for (int64_t N : {1, 7, 1152, 9728}) {
          const int64_t rows = lead.size() == 1 ? lead[0] : lead[0] * lead[1];
          if (N == 9728 && (K == 64 || K == 4100 || (rows != 1 && rows != 4 && rows != 8))) continue;
          std::vector<int64_t> a = lead;
          a.push_back(K);
          add(sname(a) + "_N" + std::to_string(N), dt, {a}, {{N, K}}, 0, 1, K);
        }
  for (int32_t dt : {GN_BF16, GN_F16}) {
    add("bT_2x896_N1152", dt, {{2, 896}}, {{896, 1152}, GN_F32, kTransposed}, 0, 0, 896);  // (N, K) storage, no flag
    add("aT_3x896_N1152", dt, {{896, 3}, GN_F32, kTransposed}, {{1152, 896}}, 1, 1, 896);  // rows of a via trans_a
    add("aS_2x896_N1152", dt, {{2, 896}, GN_F32, kSliced}, {{1152, 896}}, 0, 1, 896);      // K not contiguous
  }
  add("lm_head_1x1x896_N151936", GN_BF16, {{1, 1, 896}}, {{151936, 896}}, 0, 1, 896);
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyCudaGemv, CudaGemv, gemv_cases)

namespace {

// Rows of a at a stride larger than K (a slice of wider rows), 2-D and with a
// batch dim: the layouts the harness's inputs cannot express.
TEST(OpConsistencyCudaGemvViews, StridedRowsMatchReference) {
  OPC_REQUIRE_SUITE();
  struct S {
    std::vector<int64_t> stored;  // (..., rows, K + pad)
    int64_t K, N;
  };
  const std::vector<S> ss = {{{3, 920}, 896, 1152}, {{2, 2, 904}, 896, 896}, {{4, 4872}, 4864, 896}};
  for (int32_t dt : {GN_BF16, GN_F16})
    for (const S& c : ss) {
      const std::string what =
          sname(c.stored) + "_K" + std::to_string(c.K) + "_N" + std::to_string(c.N) + " " + dname(dt);
      auto call = [&](Rt& r) {
        const int64_t nd = (int64_t)c.stored.size();
        gt::T wide = host_data_on(r, uniform((size_t)numel(c.stored), 21), c.stored, dt);
        gt::T w = host_data_on(r, uniform((size_t)(c.N * c.K), 22), {c.N, c.K}, dt);
        gn_tensor* x = nullptr;
        check(gn_tensor_slice(wide.t, nd - 1, 0, c.K, 1, &x), x);
        gt::T xs(x);
        gn_tensor* raw[2] = {xs.t, w.t};
        const gn_attr_value attrs[2] = {gn_attr_int(0), gn_attr_int(1)};
        const gn_op* op = nullptr;
        gn_status* st = gn_op_find(r.rt, "matmul", &op);
        gn_tensor* out = nullptr;
        if (!st) st = gn_op_call(r.rt, op, raw, 2, attrs, 2, &out, 1);
        EXPECT_EQ(st, nullptr) << gn_status_message(st);
        gn_status_free(st);
        std::vector<std::vector<double>> res;
        if (out) {
          gt::T keep(out);
          res.push_back(as_f64(out));
        }
        return res;
      };
      const Tol t = matmul_tol(dt, c.K);
      expect_close(call(runtimes().dut), call(runtimes().ref), {t.rtol * kSuiteTolFactor, t.atol * kSuiteTolFactor},
                   what);
    }
}

}  // namespace
