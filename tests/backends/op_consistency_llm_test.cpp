// tests/backends/op_consistency_llm_test.cpp - the cross-backend suite, LLM
// inference ops: kv_cache_write_, add_rms_norm and linear.
//
//  * linear against the reference (double sums): f32/f16/bf16/f64, 1 to 6 rows
//    (the cuda few-rows path serves up to 4 bf16/f16 rows, cuBLASLt the
//    rest), K 8 to 4100 (4100: no 16-byte rows), N 1 to 1152, with and
//    without bias, 1-D and 3-D x, a transposed x (made dense by the core);
//    matmul's tolerance for K.
//  * linear_swiglu the same way (weight (2I, K)), I 1 to 4864, three times
//    matmul's tolerance (the errors of both products meet in silu(g) * u).
//  * add_rms_norm against the reference, case by case: f32/f16/bf16/f64, last
//    dims 1, 7, 64, 896 (Qwen2-0.5B's hidden size), 4096 (16-byte vectors)
//    and 4099 (not a multiple of the vector width), 1 to 3 leading dims, x
//    transposed (a strided input the core makes dense).  h is the correctly
//    rounded sum on every backend (exact); y as rms_norm: f32 rtol/atol 1e-6,
//    f64 1e-12, bf16/f16 kBf16 (one rounding of the output).
//  * add_rms_norm(x, r, w) against add(x, r) then rms_norm(h, w) on the same
//    runtime, both the reference and the backend under test: h and y
//    bit for bit (the op's promise).
//  * the reference's add_rms_norm against the closed form computed here.
//  * kv_cache_write_ on the reference and the backend against the closed form
//    (exact: a copy), src contiguous, a permuted (B,T,H,D) projection and a
//    view strided in D, pos mixed per batch row with out-of-range rows
//    (negative, past S, 2^62: skipped), prefill (T > 1, T > S) and decode
//    (T = 1); the write happens in the cache's own storage.
//  * bad input for every op of the file on both runtimes: the same gn_code
//    and a message naming the values.
//  * (cuda) a captured graph replayed with new positions writes the new rows.
#include <cstring>

#include "op_consistency.h"

namespace {

// ---------------------------------------------------------------- add_rms_norm vs the reference

std::vector<Case> add_rms_norm_cases() {
  std::vector<Case> cs;
  const std::vector<std::pair<std::vector<int64_t>, Layout>> lead = {
      {{3}, kContig}, {{2, 5}, kContig}, {{1, 1, 2}, kContig}, {{4}, kTransposed}};
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
    for (int64_t D : {1, 7, 64, 896, 4096, 4099})
      for (const auto& [rows, layout] : lead) {
        std::vector<int64_t> shape = rows;
        shape.push_back(D);
        Case c;
        c.name = "add_rms_norm_" + dname(dt) + "_" + sname(shape) + lname(layout);
        c.op = "add_rms_norm";
        c.inputs = {{shape, dt, layout, -3, 3}, {shape, dt, kContig, -3, 3}, {{D}, dt, kContig, 0.5, 1.5}};
        c.attrs = {gn_attr_float(1e-6)};
        c.n_out = 2;
        c.tol = dt == GN_F32 ? Tol{1e-6, 1e-6} : dt == GN_F64 ? Tol{1e-12, 1e-12} : kBf16;
        cs.push_back(c);
      }
  return cs;
}

// ---------------------------------------------------------------- linear vs the reference

std::vector<Case> linear_cases() {
  std::vector<Case> cs;
  struct S {
    std::vector<int64_t> x;
    int64_t N;
    Layout layout;
  };
  const std::vector<S> shapes = {{{1, 896}, 1152, kContig}, {{3, 64}, 7, kContig},    {{4, 1, 136}, 33, kContig},
                                 {{5, 72}, 16, kContig},    {{2, 3, 40}, 9, kContig}, {{4100}, 5, kContig},
                                 {{2, 4100}, 3, kContig},   {{6, 8}, 1, kTransposed}, {{1, 8}, 1, kContig}};
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
    for (const S& s : shapes)
      for (bool bias : {true, false}) {
        const int64_t K = s.x.back();
        Case c;
        c.name = "linear_" + dname(dt) + "_" + sname(s.x) + lname(s.layout) + "_n" + std::to_string(s.N) +
                 (bias ? "_bias" : "");
        c.op = "linear";
        c.inputs = {{s.x, dt, s.layout, -1, 1}, {{s.N, K}, dt, kContig, -1, 1}};
        if (bias) c.inputs.push_back({{s.N}, dt, kContig, -1, 1});
        c.tol = matmul_tol(dt, K);
        cs.push_back(c);
      }
  return cs;
}

std::vector<Case> linear_swiglu_cases() {
  std::vector<Case> cs;
  struct S {
    std::vector<int64_t> x;
    int64_t I;
    Layout layout;
  };
  const std::vector<S> shapes = {{{1, 896}, 4864, kContig}, {{3, 64}, 7, kContig},    {{4, 1, 136}, 33, kContig},
                                 {{5, 72}, 16, kContig},    {{2, 3, 40}, 9, kContig}, {{4100}, 5, kContig},
                                 {{6, 8}, 1, kTransposed},  {{1, 8}, 1, kContig}};
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
    for (const S& s : shapes) {
      const int64_t K = s.x.back();
      Case c;
      c.name = "linear_swiglu_" + dname(dt) + "_" + sname(s.x) + lname(s.layout) + "_i" + std::to_string(s.I);
      c.op = "linear_swiglu";
      c.inputs = {{s.x, dt, s.layout, -1, 1}, {{2 * s.I, K}, dt, kContig, -1, 1}};
      // g's and u's errors add in the product, and silu passes g's through
      const Tol t = matmul_tol(dt, K);
      c.tol = Tol{3 * t.rtol, 3 * t.atol};
      cs.push_back(c);
    }
  return cs;
}

}  // namespace

OPC_SUITE(OpConsistencyAddRmsNorm, AddRmsNorm, add_rms_norm_cases)
OPC_SUITE(OpConsistencyLinear, Linear, linear_cases)
OPC_SUITE(OpConsistencyLinearSwiglu, LinearSwiglu, linear_swiglu_cases)

namespace {

// ---------------------------------------------------------------- helpers

// Host doubles -> a tensor of `dtype` with `shape` on r's device (converted on
// the host by the cast op, then moved).
gt::T on_device(Rt& r, const std::vector<double>& v, const std::vector<int64_t>& shape, int32_t dtype) {
  gn_tensor* t64 = nullptr;
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(r.rt, v.data(), shape.data(), (int32_t)shape.size(), GN_F64, r.host, &t64), t64);
  check(gn_tensor_to_dtype(t64, dtype, &t), t);
  gn_tensor_release(t64);
  return gt::T(move_to(t, r.dev));
}

gt::T i64_on_device(Rt& r, const std::vector<int64_t>& v, int32_t dtype = GN_I64) {
  gn_tensor* t = nullptr;
  const int64_t n = (int64_t)v.size();
  check(gn_tensor_from_host(r.rt, v.data(), &n, 1, GN_I64, r.host, &t), t);
  if (dtype != GN_I64) {
    gn_tensor* c = nullptr;
    check(gn_tensor_to_dtype(t, dtype, &c), c);
    gn_tensor_release(t);
    t = c;
  }
  return gt::T(move_to(t, r.dev));
}

std::vector<double> uniform(size_t n, uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// The bytes of a tensor in its own dtype, dense row-major, from any device.
std::vector<unsigned char> raw_bytes(gn_tensor* t) {
  gn_device host{};
  gn_status_free(gn_device_parse(gn_tensor_runtime(t), "cpu", &host));
  gn_tensor* h = nullptr;
  check(gn_tensor_to_device(t, host, &h), h);
  gn_tensor* c = nullptr;
  check(gn_tensor_contiguous(h, &c), c);
  gn_tensor_release(h);
  std::vector<unsigned char> out((size_t)gn_tensor_numel(c) * gn_dtype_size(gn_tensor_dtype(c)));
  gn_status* st = gn_tensor_to_host(c, out.data(), out.size());
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  gn_tensor_release(c);
  return out;
}

// The value `v` rounded to dtype as a tensor stores it (the cast op's rounding).
std::vector<double> rounded(Rt& r, const std::vector<double>& v, int32_t dtype) {
  gt::T t = on_device(r, v, {(int64_t)v.size()}, dtype);
  return as_f64(t.t);
}

// ---------------------------------------------------------------- add_rms_norm: the promises

// On each runtime: add_rms_norm(x, r, w) -> (y, h) equals h2 = add(x, r),
// y2 = rms_norm(h2, w).y in every bit.
TEST(LlmAddRmsNorm, EqualsAddThenRmsNormBitForBitOnEachBackend) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : {&runtimes().ref, &runtimes().dut, &runtimes().solo})
    for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
      for (int64_t D : {1, 7, 64, 896, 4096, 4099, 8192}) {
        const std::vector<int64_t> shape = {3, D};
        const size_t n = (size_t)(3 * D);
        gt::T x = on_device(*r, uniform(n, 1, -3, 3), shape, dt);
        gt::T res = on_device(*r, uniform(n, 2, -3, 3), shape, dt);
        gt::T w = on_device(*r, uniform((size_t)D, 3, 0.5, 1.5), {D}, dt);
        const std::string tag = dname(dt) + " D=" + std::to_string(D) + " " + rt_name(r);
        std::vector<gt::T> fused, sum, norm;
        gt::Err e = call(*r, "add_rms_norm", {x.t, res.t, w.t}, {gn_attr_float(1e-6)}, 2, &fused);
        ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
        e = call(*r, "add", {x.t, res.t}, {}, 1, &sum);
        ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
        e = call(*r, "rms_norm", {sum[0].t, w.t}, {gn_attr_float(1e-6)}, 2, &norm);
        ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
        EXPECT_TRUE(raw_bytes(fused[1].t) == raw_bytes(sum[0].t)) << tag << ": h differs from add(x, residual)";
        EXPECT_TRUE(raw_bytes(fused[0].t) == raw_bytes(norm[0].t)) << tag << ": y differs from rms_norm(h, weight)";
      }
}

// The reference against y = h / sqrt(mean(h^2) + eps) * w computed here, with
// h = x + r rounded once to the dtype.  y is rounded once to the dtype by the
// op: f32 rtol 1e-6, f16 2^-10, bf16 2^-7 (half an ulp, plus the order of
// the double sum).
TEST(LlmAddRmsNorm, ReferenceMatchesTheClosedForm) {
  Rt& r = runtimes().ref;
  const double eps = 1e-5;
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16})
    for (int64_t D : {1, 7, 64, 896, 4099}) {
      const int64_t R = 3;
      const size_t n = (size_t)(R * D);
      const std::vector<double> x = rounded(r, uniform(n, 4, -3, 3), dt), res = rounded(r, uniform(n, 5, -3, 3), dt),
                                w = rounded(r, uniform((size_t)D, 6, 0.5, 1.5), dt);
      std::vector<double> exact(n);
      for (size_t i = 0; i < n; ++i) exact[i] = x[i] + res[i];
      const std::vector<double> h = rounded(r, exact, dt);
      std::vector<gt::T> out;
      gt::T tx = on_device(r, x, {R, D}, dt), tr = on_device(r, res, {R, D}, dt), tw = on_device(r, w, {D}, dt);
      gt::Err e = call(r, "add_rms_norm", {tx.t, tr.t, tw.t}, {gn_attr_float(eps)}, 2, &out);
      ASSERT_EQ(e.code, GN_OK) << e.msg;
      const std::vector<double> y = as_f64(out[0].t), hv = as_f64(out[1].t);
      const double rtol = dt == GN_F32 ? 1e-6 : dt == GN_F16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
      for (int64_t row = 0; row < R; ++row) {
        double ss = 0;
        for (int64_t i = 0; i < D; ++i) ss += h[(size_t)(row * D + i)] * h[(size_t)(row * D + i)];
        const double s = 1.0 / std::sqrt(ss / (double)D + eps);
        for (int64_t i = 0; i < D; ++i) {
          const size_t k = (size_t)(row * D + i);
          ASSERT_EQ(hv[k], h[k]) << dname(dt) << " D=" << D << " element " << k;
          const double want = h[k] * s * w[(size_t)i];
          ASSERT_NEAR(y[k], want, rtol * std::fabs(want) + 1e-30) << dname(dt) << " D=" << D << " element " << k;
        }
      }
    }
}

// ---------------------------------------------------------------- kv_cache_write_

enum SrcLayout { kSrcContig, kSrcPermuted, kSrcStridedD };

struct KvCase {
  int64_t B, H, S, T, D;
  std::vector<int64_t> pos;
};

const std::vector<KvCase>& kv_cases() {
  static const std::vector<KvCase> cs = {
      {3, 2, 8, 1, 64, {0, 7, 8}},                 // decode: the last row lands past S (skipped)
      {3, 2, 8, 5, 7, {0, 5, -1}},                 // prefill: b=1 writes t<3, b=2 nothing
      {2, 3, 16, 4, 128, {12, int64_t{1} << 62}},  // exactly up to S; a position that would overflow
      {1, 2, 4, 6, 1, {0}},                        // T > S: rows t >= 4 skipped
      {2, 2, 5, 2, 4099, {1, 3}},                  // odd D, larger than a vector
      {4, 1, 9, 3, 16, {6, 0, 9, 2}},              // mixed per batch row
      {2, 2, 3, 0, 8, {0, 1}},                     // T = 0: nothing to write
  };
  return cs;
}

const char* src_layout_name(SrcLayout l) {
  return l == kSrcContig ? "contiguous" : l == kSrcPermuted ? "permuted (B,T,H,D)" : "strided in D";
}

// The src tensor (B,H,T,D) holding vals (row-major in (B,H,T,D) order), laid
// out as asked: dense; a permuted view of a dense (B,T,H,D) tensor; or every
// other element of a (B,H,T,2D) tensor.
gt::T make_src(Rt& r, const KvCase& k, const std::vector<double>& vals, int32_t dt, SrcLayout layout) {
  if (layout == kSrcContig) return on_device(r, vals, {k.B, k.H, k.T, k.D}, dt);
  if (layout == kSrcPermuted) {
    std::vector<double> bthd(vals.size());
    for (int64_t b = 0; b < k.B; ++b)
      for (int64_t h = 0; h < k.H; ++h)
        for (int64_t t = 0; t < k.T; ++t)
          for (int64_t d = 0; d < k.D; ++d)
            bthd[(size_t)(((b * k.T + t) * k.H + h) * k.D + d)] = vals[(size_t)(((b * k.H + h) * k.T + t) * k.D + d)];
    gt::T base = on_device(r, bthd, {k.B, k.T, k.H, k.D}, dt);
    const int64_t perm[4] = {0, 2, 1, 3};
    gn_tensor* v = nullptr;
    check(gn_tensor_permute(base.t, perm, 4, &v), v);
    return gt::T(v);
  }
  std::vector<double> wide(vals.size() * 2, -99.0);
  for (size_t i = 0; i < vals.size(); ++i) wide[2 * i] = vals[i];
  gt::T base = on_device(r, wide, {k.B, k.H, k.T, 2 * k.D}, dt);
  gn_tensor* v = nullptr;
  check(gn_tensor_slice(base.t, 3, 0, 2 * k.D, 2, &v), v);
  return gt::T(v);
}

// The cache after the write, as the op's contract says.
std::vector<double> expected_cache(const KvCase& k, const std::vector<double>& cache0, const std::vector<double>& src) {
  std::vector<double> c = cache0;
  for (int64_t b = 0; b < k.B; ++b)
    for (int64_t h = 0; h < k.H; ++h)
      for (int64_t t = 0; t < k.T; ++t) {
        const int64_t p = k.pos[(size_t)b];
        if (p < 0 || p >= k.S - t) continue;
        for (int64_t d = 0; d < k.D; ++d)
          c[(size_t)(((b * k.H + h) * k.S + p + t) * k.D + d)] = src[(size_t)(((b * k.H + h) * k.T + t) * k.D + d)];
      }
  return c;
}

// Every case, dtype and src layout on the reference and on the backend: the
// cache handle's own storage (same data pointer) holds exactly the expected
// values afterwards, so untouched rows keep their old values.
TEST(LlmKvCacheWrite, WritesTheRowsInRangeInPlaceOnBothBackends) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : {&runtimes().ref, &runtimes().dut, &runtimes().solo})
    for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
      for (size_t ci = 0; ci < kv_cases().size(); ++ci)
        for (SrcLayout layout : {kSrcContig, kSrcPermuted, kSrcStridedD}) {
          const KvCase& k = kv_cases()[ci];
          const std::string tag =
              rt_name(r) + " " + dname(dt) + " case " + std::to_string(ci) + " src " + src_layout_name(layout);
          // Values exactly representable in every dtype (multiples of 1/8 below 16).
          std::vector<double> cache0((size_t)(k.B * k.H * k.S * k.D)), src((size_t)(k.B * k.H * k.T * k.D));
          for (size_t i = 0; i < cache0.size(); ++i) cache0[i] = -(double)(i % 97) / 8.0;
          for (size_t i = 0; i < src.size(); ++i) src[i] = 1.0 + (double)(i % 89) / 8.0;
          gt::T cache = on_device(*r, cache0, {k.B, k.H, k.S, k.D}, dt);
          gt::T s = make_src(*r, k, src, dt, layout);
          gt::T pos = i64_on_device(*r, k.pos);
          void* before = gn_tensor_data_ptr(cache.t);
          gt::Err e = call(*r, "kv_cache_write_", {cache.t, s.t, pos.t}, {}, 0);
          ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
          EXPECT_EQ(gn_tensor_data_ptr(cache.t), before) << tag;
          const std::vector<double> got = as_f64(cache.t), want = expected_cache(k, cache0, src);
          ASSERT_EQ(got.size(), want.size()) << tag;
          size_t bad = 0, first = 0;
          for (size_t i = 0; i < want.size(); ++i)
            if (got[i] != want[i] && bad++ == 0) first = i;
          EXPECT_EQ(bad, 0u) << tag << ": " << bad << " elements differ, first at " << first << ": " << got[first]
                             << " vs " << want[first];
        }
}

// A decode loop: the same cache written step after step at increasing
// positions (one batch row already full), then read back through a view.
TEST(LlmKvCacheWrite, DecodeStepsAppendOneRowEach) {
  OPC_REQUIRE_SUITE();
  Rt& r = runtimes().dut;
  const int64_t B = 2, H = 2, S = 6, D = 64;
  std::vector<double> zeros((size_t)(B * H * S * D), 0.0);
  gt::T cache = on_device(r, zeros, {B, H, S, D}, GN_BF16);
  for (int64_t step = 0; step < S + 2; ++step) {
    std::vector<double> src((size_t)(B * H * D));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < H * D; ++i) src[(size_t)(b * H * D + i)] = (double)(step + 1 + 10 * b);
    gt::T s = on_device(r, src, {B, H, 1, D}, GN_BF16);
    gt::T pos = i64_on_device(r, {step, step + 3});  // row 1 runs out of room after 3 steps
    gt::Err e = call(r, "kv_cache_write_", {cache.t, s.t, pos.t}, {}, 0);
    ASSERT_EQ(e.code, GN_OK) << "step " << step << ": " << e.msg;
  }
  const std::vector<double> got = as_f64(cache.t);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t p = 0; p < S; ++p) {
        const double want = b == 0 ? (double)(p + 1) : p >= 3 ? (double)(p - 3 + 1 + 10) : 0.0;
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(got[(size_t)(((b * H + h) * S + p) * D + d)], want) << "b " << b << " h " << h << " p " << p;
      }
}

// ---------------------------------------------------------------- bad input

struct Bad {
  std::string what;
  const char* op;
  std::vector<std::pair<std::vector<int64_t>, int32_t>> ins;  // dense inputs: shape, dtype
  int32_t code;
  std::vector<std::string> words;
  bool transpose_first = false;  // input 0 as a transposed view of its last two dims
  std::vector<gn_attr_value> attrs = {};
};

std::vector<Bad> bad_inputs() {
  const int32_t f = GN_F32, l = GN_I64;
  return {
      {"cache 3-D",
       "kv_cache_write_",
       {{{2, 8, 4}, f}, {{2, 2, 1, 4}, f}, {{2}, l}},
       GN_ERR_SHAPE,
       {"cache", "4-D", "(2, 8, 4)"}},
      {"src 3-D",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 1, 4}, f}, {{2}, l}},
       GN_ERR_SHAPE,
       {"src", "4-D", "(2, 1, 4)"}},
      {"H differs",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 3, 1, 4}, f}, {{2}, l}},
       GN_ERR_SHAPE,
       {"(2, 3, 1, 4)", "(2, 2, 8, 4)"}},
      {"D differs",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 5}, f}, {{2}, l}},
       GN_ERR_SHAPE,
       {"(2, 2, 1, 5)", "(2, 2, 8, 4)"}},
      {"B differs",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{1, 2, 1, 4}, f}, {{2}, l}},
       GN_ERR_SHAPE,
       {"(1, 2, 1, 4)", "(2, 2, 8, 4)"}},
      {"pos length",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, f}, {{3}, l}},
       GN_ERR_SHAPE,
       {"pos", "B = 2", "(3)"}},
      {"pos 2-D",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, f}, {{2, 1}, l}},
       GN_ERR_SHAPE,
       {"pos", "(2, 1)"}},
      {"pos int32",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, f}, {{2}, GN_I32}},
       GN_ERR_DTYPE,
       {"pos", "int64", "int32"}},
      {"pos float",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, f}, {{2}, f}},
       GN_ERR_DTYPE,
       {"pos", "int64", "float32"}},
      {"src dtype",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, GN_BF16}, {{2}, l}},
       GN_ERR_DTYPE,
       {"src", "bfloat16", "float32"}},
      {"int cache",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, GN_I32}, {{2, 2, 1, 4}, GN_I32}, {{2}, l}},
       GN_ERR_DTYPE,
       {"cache", "int32"}},
      // (2, 2, 4, 8) transposed: shape (2, 2, 8, 4), strides (64, 32, 1, 8)
      {"strided cache",
       "kv_cache_write_",
       {{{2, 2, 4, 8}, f}, {{2, 2, 1, 4}, f}, {{2}, l}},
       GN_ERR_INVALID_ARGUMENT,
       {"cache", "contiguous", "(2, 2, 8, 4)", "(64, 32, 1, 8)"},
       true},
      {"arity",
       "kv_cache_write_",
       {{{2, 2, 8, 4}, f}, {{2, 2, 1, 4}, f}},
       GN_ERR_INVALID_ARGUMENT,
       {"kv_cache_write_"}},
      {"residual shape",
       "add_rms_norm",
       {{{3, 8}, f}, {{1, 8}, f}, {{8}, f}},
       GN_ERR_SHAPE,
       {"residual", "(1, 8)", "(3, 8)"}},
      {"residual dtype",
       "add_rms_norm",
       {{{3, 8}, f}, {{3, 8}, GN_BF16}, {{8}, f}},
       GN_ERR_DTYPE,
       {"residual", "bfloat16", "float32"}},
      {"weight length",
       "add_rms_norm",
       {{{3, 8}, f}, {{3, 8}, f}, {{7}, f}},
       GN_ERR_SHAPE,
       {"weight", "(7)", "(3, 8)"}},
      {"int x", "add_rms_norm", {{{3, 8}, GN_I32}, {{3, 8}, GN_I32}, {{8}, f}}, GN_ERR_DTYPE, {"x", "int32"}},
      {"0-d x", "add_rms_norm", {{{}, f}, {{}, f}, {{1}, f}}, GN_ERR_SHAPE, {"x", "at least 1 dim"}},
      {"eps",
       "add_rms_norm",
       {{{3, 8}, f}, {{3, 8}, f}, {{8}, f}},
       GN_ERR_INVALID_ARGUMENT,
       {"eps", "-1"},
       false,
       {gn_attr_float(-1.0)}},
      {"weight 1-D", "linear", {{{3, 8}, f}, {{8}, f}}, GN_ERR_SHAPE, {"weight", "2-D", "(8)"}},
      {"K differs", "linear", {{{3, 8}, f}, {{4, 7}, f}}, GN_ERR_SHAPE, {"(4, 7)", "(3, 8)"}},
      {"weight dtype", "linear", {{{3, 8}, f}, {{4, 8}, GN_BF16}}, GN_ERR_DTYPE, {"weight", "bfloat16", "float32"}},
      {"bias length", "linear", {{{3, 8}, f}, {{4, 8}, f}, {{3}, f}}, GN_ERR_SHAPE, {"bias", "(3)", "(4)"}},
      {"bias dtype", "linear", {{{3, 8}, f}, {{4, 8}, f}, {{4}, GN_F64}}, GN_ERR_DTYPE, {"bias", "float64", "float32"}},
      {"int x", "linear", {{{3, 8}, GN_I32}, {{4, 8}, GN_I32}}, GN_ERR_DTYPE, {"x", "int32"}},
      {"odd rows", "linear_swiglu", {{{3, 8}, f}, {{3, 8}, f}}, GN_ERR_SHAPE, {"weight", "even", "(3, 8)"}},
      {"K differs", "linear_swiglu", {{{3, 8}, f}, {{4, 7}, f}}, GN_ERR_SHAPE, {"(4, 7)", "(3, 8)"}},
      {"weight dtype",
       "linear_swiglu",
       {{{3, 8}, f}, {{4, 8}, GN_F16}},
       GN_ERR_DTYPE,
       {"weight", "float16", "float32"}},
  };
}

TEST(LlmBadInput, SameCodeAndAClearMessageOnBothBackends) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : {&runtimes().ref, &runtimes().dut, &runtimes().solo})
    for (const Bad& bad : bad_inputs()) {
      std::vector<gt::T> ins;
      std::vector<gn_tensor*> raw;
      for (size_t i = 0; i < bad.ins.size(); ++i) {
        const auto& [shape, dt] = bad.ins[i];
        ins.push_back(on_device(*r, std::vector<double>((size_t)numel(shape), 1.0), shape, dt));
        if (i == 0 && bad.transpose_first) {
          gn_tensor* v = nullptr;
          check(gn_tensor_transpose(ins.back().t, -1, -2, &v), v);
          ins.back() = gt::T(v);
        }
        raw.push_back(ins.back().t);
      }
      const std::string tag = rt_name(r) + ": " + bad.what;
      const std::string op = bad.op;
      gt::Err e = call(*r, bad.op, raw, bad.attrs, op == "add_rms_norm" ? 2 : op == "kv_cache_write_" ? 0 : 1);
      EXPECT_EQ(e.code, bad.code) << tag << ": " << e.msg;
      EXPECT_EQ(e.msg.rfind(std::string("[") + bad.op + "]", 0), 0u) << tag << ": " << e.msg;
      for (const std::string& w : bad.words) EXPECT_NE(e.msg.find(w), std::string::npos) << tag << ": " << e.msg;
    }
}

// pos on the host while the cache is on another device: a device error (the
// positions must live with the cache so that a captured graph reads them).
TEST(LlmBadInput, PosOnAnotherDeviceIsADeviceError) {
  OPC_REQUIRE_SUITE();
  Rt& r = runtimes().dut;
  if (r.dev.type == r.host.type) GTEST_SKIP() << "the backend runs on the host";
  gt::T cache = on_device(r, std::vector<double>(2 * 2 * 8 * 4, 0.0), {2, 2, 8, 4}, GN_F32);
  gt::T src = on_device(r, std::vector<double>(2 * 2 * 1 * 4, 1.0), {2, 2, 1, 4}, GN_F32);
  gn_tensor* p = nullptr;
  const int64_t pv[2] = {0, 1}, n = 2;
  check(gn_tensor_from_host(r.rt, pv, &n, 1, GN_I64, r.host, &p), p);
  gt::T pos(p);
  gt::Err e = call(r, "kv_cache_write_", {cache.t, src.t, pos.t}, {}, 0);
  EXPECT_EQ(e.code, GN_ERR_DEVICE) << e.msg;
  EXPECT_NE(e.msg.find("[kv_cache_write_]"), std::string::npos) << e.msg;
}

// ---------------------------------------------------------------- graph capture (devices with graphs)

// Capture one kv_cache_write_ on a side stream, then replay it after writing
// new positions and new src values into the same storages: each replay writes
// the rows the positions of that moment name.
TEST(LlmKvCacheWrite, CapturedGraphReplaysWithNewPositions) {
  OPC_REQUIRE_SUITE();
  Rt& r = runtimes().dut;
  if (r.dev.type == r.host.type) GTEST_SKIP() << "no graph capture on the host";
  const int64_t B = 2, H = 2, S = 8, D = 16;
  gn_stream* stream = nullptr;
  gn_status* st = gn_stream_create(r.rt, r.dev, &stream);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  st = gn_stream_set_current(r.rt, r.dev, stream);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  gt::T cache = on_device(r, std::vector<double>((size_t)(B * H * S * D), 0.0), {B, H, S, D}, GN_F16);
  gt::T src = on_device(r, std::vector<double>((size_t)(B * H * D), 0.0), {B, H, 1, D}, GN_F16);
  gt::T pos = i64_on_device(r, {0, 0});
  auto overwrite = [&](gt::T& dst, gt::T&& from) {
    gn_status* s2 = gn_tensor_copy_(dst.t, from.t);
    ASSERT_EQ(s2, nullptr) << gn_status_message(s2);
  };
  st = gn_graph_begin(r.rt, r.dev);
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  gt::Err e = call(r, "kv_cache_write_", {cache.t, src.t, pos.t}, {}, 0);
  gn_graph* g = nullptr;
  st = gn_graph_end(r.rt, r.dev, &g);
  ASSERT_EQ(e.code, GN_OK) << e.msg;
  ASSERT_EQ(st, nullptr) << gn_status_message(st);
  const std::vector<std::pair<int64_t, int64_t>> steps = {{3, 5}, {7, 8}, {-1, 0}};
  std::vector<double> want((size_t)(B * H * S * D), 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const double v = (double)(i + 1);
    overwrite(src, on_device(r, std::vector<double>((size_t)(B * H * D), v), {B, H, 1, D}, GN_F16));
    overwrite(pos, i64_on_device(r, {steps[i].first, steps[i].second}));
    st = gn_graph_launch(g);
    ASSERT_EQ(st, nullptr) << gn_status_message(st);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t p = b == 0 ? steps[i].first : steps[i].second;
      if (p < 0 || p >= S) continue;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) want[(size_t)(((b * H + h) * S + p) * D + d)] = v;
    }
    st = gn_stream_synchronize(stream);
    ASSERT_EQ(st, nullptr) << gn_status_message(st);
    EXPECT_EQ(as_f64(cache.t), want) << "replay " << i;
  }
  gn_graph_destroy(g);
  gn_status_free(gn_stream_set_current(r.rt, r.dev, nullptr));
  gn_status_free(gn_stream_destroy(stream));
}

}  // namespace
