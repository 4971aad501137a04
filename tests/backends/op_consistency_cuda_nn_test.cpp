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
// Tolerances as the shared parts (see op_consistency.h): f32 results computed
// in double and rounded once rtol/atol 1e-6; bf16/f16 kBf16 (one ulp of the
// output's rounding); conv as matmul; copies and sorts exact.
#include "op_consistency.h"

namespace {

const Tol kExact{0.0, 0.0};
const Tol kF32Once{1e-6, 1e-6};

Case mk(std::string name, const char* op, std::vector<Input> ins, std::vector<gn_attr_value> attrs, size_t n_out,
        Tol tol) {
  Case c;
  c.name = std::move(name);
  c.op = op;
  c.inputs = std::move(ins);
  c.attrs = std::move(attrs);
  c.n_out = n_out;
  c.tol = tol;
  return c;
}

// ---------------------------------------------------------------- sort family

std::vector<Case> sort_cases() {
  std::vector<Case> cs;
  struct S {
    std::vector<int64_t> shape;
    int64_t dim;
    Layout layout;
  };
  const std::vector<S> ss = {{{1000}, 0, kContig},   {{7, 33}, -1, kContig}, {{33, 7}, 0, kContig},
                             {{4, 5, 6}, 1, kContig}, {{3, 5000}, -1, kContig}, {{9, 12}, -1, kTransposed},
                             {{0, 5}, -1, kContig},   {{6, 1}, 1, kContig},    {{2, 70000}, -1, kContig}};
  const int32_t dts[] = {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I64, GN_I32, GN_I8, GN_U8, GN_BOOL};
  for (int32_t dt : dts)
    for (const S& s : ss) {
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
                      {{x, dt}, {x, dt, kContig, -3, 3}, {rows, sdt, kContig, -0.5, 0.5}, {rows, sdt, kContig, 0.5, 2},
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
    cs.push_back(mk("swiglu_" + dname(dt), "swiglu", {{s, dt, kContig, -6, 6}, {s, dt, kContig, -2, 2}}, {}, 1,
                    tol_for(dt)));
    cs.push_back(mk("swiglu_bwd_" + dname(dt), "swiglu_backward",
                    {{s, dt}, {s, dt, kContig, -6, 6}, {s, dt, kContig, -2, 2}}, {}, 2, tol_for(dt)));
    cs.push_back(mk("swiglu_odd_" + dname(dt), "swiglu", {{{3, 7}, dt, kContig, -6, 6}, {{3, 7}, dt}}, {}, 1,
                    tol_for(dt)));
    const std::vector<int64_t> q{2, 8, 128, 64}, c{128, 64};
    for (const char* op : {"rope", "rope_backward"})
      cs.push_back(mk(std::string(op) + "_" + dname(dt), op, {{q, dt, kContig, -2, 2}, {c, dt}, {c, dt}}, {}, 1,
                      tol_for(dt)));
  }
  // embedding backward: long runs of repeated ids (4096 ids over 50 rows), and sparse ids
  for (int32_t dt : {GN_F32, GN_F64, GN_BF16}) {
    cs.push_back(mk("emb_bwd_runs_" + dname(dt), "embedding_backward", {{{4096, 256}, dt}, {{4096}, GN_I64, kContig, 0, 50}},
                    {gn_attr_int(50)}, 1, dt == GN_BF16 ? kBf16 : kExact));
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
      Case f = mk("conv_" + tag, "conv2d", {{c.x, dt}, {c.w, dt}, {{O}, dt}}, {gn_attr_int(0), gn_attr_int(0), gn_attr_int(0),
                                                                              gn_attr_int(g)}, 1, matmul_tol(dt, K));
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
