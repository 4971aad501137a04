// tests/backends/op_consistency_paged_test.cpp - the cross-backend suite, the
// paged KV-cache ops of the serving engine: paged_kv_write_ and
// paged_attention.
//
//  * paged_attention on the reference and on the backend against an oracle
//    written here: the keys and values of each sequence gathered from the
//    pool's host values into contiguous (L, Hkv, D) arrays through its block
//    table, then causal attention in double (query i of n at position
//    L - n + i attends to 0 .. its position).  Batches mix decode (n = 1),
//    prefill with a cached prefix (1 < n < L), whole prefills (n = L), empty
//    sequences, sequences ending in a partial block and exactly on a block
//    boundary; block ids shuffled over the pool (never contiguous), unused
//    table entries -1; padding rows past query_start[B] must come out 0.
//    GQA (Hq = 4, Hkv = 2; Hq = 8, Hkv = 1) and Hq = Hkv, head dims 64 and
//    128, default and explicit scale, q as a transposed view.  f64 1e-12,
//    f32 1e-5, f16 2e-3 and bf16 1e-2 (the inputs are the same rounded
//    values on both sides, so what remains is f32 accumulation and one
//    rounding of the output).
//  * paged_kv_write_ against the closed form (exact: a copy): kv contiguous,
//    a permuted (2*Hkv, T, D) projection and a view strided in D; slots
//    shuffled, with padding slots (-1, NB*BS, 2^62, INT64_MIN) skipped; the
//    pool is written in its own storage.
//  * write then attend: a prefill and two decode steps stored with
//    paged_kv_write_ and read back by paged_attention, against the oracle.
//  * bad input on every runtime: the same gn_code and a message naming the
//    problem (dtypes, ranks, GQA, odd pool dim 1, D, query_start's length);
//    the reference also refuses metadata that does not describe the batch,
//    and the backends that mask out-of-pool block ids instead never read
//    outside the pool.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "op_consistency.h"

namespace {

// ---------------------------------------------------------------- helpers

// Host doubles -> a tensor of `dtype` with `shape` on r's device.
gt::T on_device(Rt& r, const std::vector<double>& v, const std::vector<int64_t>& shape, int32_t dtype) {
  gn_tensor* t64 = nullptr;
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(r.rt, v.data(), shape.data(), (int32_t)shape.size(), GN_F64, r.host, &t64), t64);
  check(gn_tensor_to_dtype(t64, dtype, &t), t);
  gn_tensor_release(t64);
  return gt::T(move_to(t, r.dev));
}

// Host int64 values -> an integer tensor of `dtype` with `shape` on r's device.
gt::T ints_on_device(Rt& r, const std::vector<int64_t>& v, const std::vector<int64_t>& shape, int32_t dtype = GN_I64) {
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(r.rt, v.data(), shape.data(), (int32_t)shape.size(), GN_I64, r.host, &t), t);
  if (dtype != GN_I64) {
    gn_tensor* c = nullptr;
    check(gn_tensor_to_dtype(t, dtype, &c), c);
    gn_tensor_release(t);
    t = c;
  }
  return gt::T(move_to(t, r.dev));
}

gt::T i64_vec(Rt& r, const std::vector<int64_t>& v) { return ints_on_device(r, v, {(int64_t)v.size()}); }

std::vector<double> uniform(size_t n, uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// The runtimes every case runs on: the oracle's own backend, the backend
// under test, and (cpu) the backend alone, without the reference to fall
// back to.
std::vector<Rt*> all_runtimes() { return {&runtimes().ref, &runtimes().dut, &runtimes().solo}; }

// ---------------------------------------------------------------- a paged batch

struct Seq {
  int64_t len, n;  // positions in the cache (the new ones included), new queries
};

struct BatchSpec {
  std::string name;
  int64_t Hq, Hkv, D, BS, spare_blocks, pad_rows;
  std::vector<Seq> seqs;
  double scale = std::numeric_limits<double>::quiet_NaN();
  bool q_transposed = false;  // q as a (T, Hq, D) view of a dense (Hq, T, D) tensor
  int64_t window = 0;         // > 0: sliding-window attention (keys j > i - window)
  double softcap = 0;         // > 0: scores soft-capped, softcap * tanh(s / softcap)
};

// Host side of a batch: block tables over a shuffled pool, query ranges.
struct Batch {
  BatchSpec s;
  int64_t NB = 0, M = 0, B = 0, T = 0;
  std::vector<int64_t> table;  // (B, M), -1 where unused
  std::vector<int64_t> lens, qstart;
};

Batch make_batch(const BatchSpec& s, uint32_t seed) {
  Batch b;
  b.s = s;
  b.B = (int64_t)s.seqs.size();
  int64_t need = 0;
  for (const Seq& q : s.seqs) {
    const int64_t nb = (q.len + s.BS - 1) / s.BS;
    need += nb;
    b.M = std::max(b.M, nb);
  }
  b.M += 1;  // one unused column: never read
  b.NB = need + s.spare_blocks;
  std::vector<int64_t> ids((size_t)b.NB);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 gen(seed);
  std::shuffle(ids.begin(), ids.end(), gen);
  b.table.assign((size_t)(b.B * b.M), -1);
  size_t next = 0;
  b.qstart.push_back(0);
  for (int64_t i = 0; i < b.B; ++i) {
    const Seq& q = s.seqs[(size_t)i];
    for (int64_t j = 0; j * s.BS < q.len; ++j) b.table[(size_t)(i * b.M + j)] = ids[next++];
    b.lens.push_back(q.len);
    b.qstart.push_back(b.qstart.back() + q.n);
  }
  b.T = b.qstart.back() + s.pad_rows;
  return b;
}

// The oracle: (T, Hq, D) in double from the host values of q (T, Hq, D) and
// pool (NB, 2*Hkv, BS, D).  Each sequence's K and V are first gathered into
// contiguous (L, Hkv, D) arrays through its block table.
std::vector<double> oracle(const Batch& b, const std::vector<double>& q, const std::vector<double>& pool) {
  const int64_t Hq = b.s.Hq, Hkv = b.s.Hkv, D = b.s.D, BS = b.s.BS, group = Hq / Hkv;
  const double scale = std::isnan(b.s.scale) ? 1.0 / std::sqrt((double)D) : b.s.scale;
  std::vector<double> out((size_t)(b.T * Hq * D), 0.0);
  for (int64_t i = 0; i < b.B; ++i) {
    const int64_t L = b.lens[(size_t)i], n = b.qstart[(size_t)i + 1] - b.qstart[(size_t)i];
    std::vector<double> K((size_t)(L * Hkv * D)), V((size_t)(L * Hkv * D));
    std::vector<bool> kept((size_t)L, true);  // a block id outside the pool masks its positions
    for (int64_t p = 0; p < L; ++p) {
      const int64_t blk = b.table[(size_t)(i * b.M + p / BS)];
      if (blk < 0 || blk >= b.NB) {
        kept[(size_t)p] = false;
        continue;
      }
      for (int64_t g = 0; g < Hkv; ++g)
        for (int64_t d = 0; d < D; ++d) {
          K[(size_t)((p * Hkv + g) * D + d)] = pool[(size_t)(((blk * 2 * Hkv + g) * BS + p % BS) * D + d)];
          V[(size_t)((p * Hkv + g) * D + d)] = pool[(size_t)(((blk * 2 * Hkv + Hkv + g) * BS + p % BS) * D + d)];
        }
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t t = b.qstart[(size_t)i] + j, pos = L - n + j;
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / group;
        std::vector<double> w((size_t)(pos + 1));
        double mx = -INFINITY;
        for (int64_t p = 0; p <= pos; ++p) {
          if (!kept[(size_t)p] || (b.s.window > 0 && pos - p >= b.s.window)) {
            w[(size_t)p] = -INFINITY;
            continue;
          }
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[(size_t)((t * Hq + h) * D + d)] * K[(size_t)((p * Hkv + g) * D + d)];
          w[(size_t)p] = b.s.softcap > 0 ? b.s.softcap * std::tanh(scale * dot / b.s.softcap) : scale * dot;
          mx = std::max(mx, w[(size_t)p]);
        }
        if (mx == -INFINITY) continue;  // every position masked: 0
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t p = 0; p <= pos; ++p) acc += w[(size_t)p] * V[(size_t)((p * Hkv + g) * D + d)];
          out[(size_t)((t * Hq + h) * D + d)] = acc / sum;
        }
      }
    }
  }
  return out;
}

Tol paged_tol(int32_t dt) {
  const Tol t = dt == GN_F64   ? Tol{1e-12, 1e-12}
                : dt == GN_F32 ? Tol{1e-5, 1e-5}
                : dt == GN_F16 ? Tol{2e-3, 2e-3}
                               : Tol{1e-2, 1e-2};
  return Tol{t.rtol * kSuiteTolFactor, t.atol * kSuiteTolFactor};
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The batches: each mixes the kinds of sequence a serving step sees.
const std::vector<BatchSpec>& batch_specs() {
  static const std::vector<BatchSpec> specs = {
      // decode in a partial block, prefill after a 32-position prefix, a whole
      // prompt in one partial block, decode ending a full block, an empty slot
      {"mixed_gqa4x2_d64_bs16", 4, 2, 64, 16, 3, 3, {{37, 1}, {50, 18}, {5, 5}, {16, 1}, {0, 0}}},
      {"mixed_mha2_d128_bs8", 2, 2, 128, 8, 2, 2, {{20, 1}, {9, 4}, {1, 1}, {24, 8}}},
      {"decode_gqa4x2_d128_bs32", 4, 2, 128, 32, 1, 0, {{100, 1}, {33, 1}, {64, 1}, {1, 1}}},
      {"prefill_mqa8x1_d64_bs4_scale", 8, 1, 64, 4, 4, 1, {{40, 40}, {41, 7}, {3, 2}}, 0.3},
      {"mixed_mha4_d64_bs16_qT",
       4,
       4,
       64,
       16,
       2,
       2,
       {{17, 1}, {30, 14}},
       std::numeric_limits<double>::quiet_NaN(),
       true},
      // sliding windows shorter than a block, across blocks, and longer than some sequences; soft-capping with a
      // large scale (scores well past the cap) and with a cap the scores rarely reach
      {"window5_gqa4x2_d64_bs16", 4, 2, 64, 16, 3, 1, {{37, 1}, {50, 18}, {5, 5}, {16, 1}}, kNaN, false, 5},
      {"window7_softcap2_mha2_d128_bs8", 2, 2, 128, 8, 2, 0, {{20, 1}, {9, 4}, {24, 8}}, 0.2, false, 7, 2.0},
      {"window40_softcap30_decode_gqa4x2_d128_bs32",
       4,
       2,
       128,
       32,
       1,
       0,
       {{100, 1}, {33, 1}, {64, 1}, {1, 1}},
       kNaN,
       false,
       40,
       30.0},
      {"softcap1_prefill_mqa8x1_d64_bs4", 8, 1, 64, 4, 4, 1, {{40, 40}, {41, 7}, {3, 2}}, 0.3, false, 0, 1.0},
  };
  return specs;
}

// Runs paged_attention for batch b on r; q and pool from host values.
gt::Err run_attention(Rt& r, const Batch& b, const std::vector<double>& qv, const std::vector<double>& poolv,
                      int32_t dt, std::vector<gt::T>* out) {
  const int64_t T = b.T, Hq = b.s.Hq, D = b.s.D;
  gt::T q;
  if (b.s.q_transposed) {
    std::vector<double> hq((size_t)(T * Hq * D));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t d = 0; d < D; ++d) hq[(size_t)((h * T + t) * D + d)] = qv[(size_t)((t * Hq + h) * D + d)];
    gt::T base = on_device(r, hq, {Hq, T, D}, dt);
    gn_tensor* v = nullptr;
    check(gn_tensor_transpose(base.t, 0, 1, &v), v);
    q = gt::T(v);
  } else {
    q = on_device(r, qv, {T, Hq, D}, dt);
  }
  gt::T pool = on_device(r, poolv, {b.NB, 2 * b.s.Hkv, b.s.BS, D}, dt);
  gt::T tables = ints_on_device(r, b.table, {b.B, b.M}, GN_I32);
  gt::T lens = i64_vec(r, b.lens), qs = i64_vec(r, b.qstart);
  return call(r, "paged_attention", {q.t, pool.t, tables.t, lens.t, qs.t},
              {gn_attr_float(b.s.scale), gn_attr_int(b.s.window), gn_attr_float(b.s.softcap)}, 1, out);
}

// Elementwise comparison; "" when every element is within tol.
std::string compare(const std::vector<double>& got, const std::vector<double>& want, Tol tol) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= tol.atol + tol.rtol * std::fabs(want[i]))) {
      if (bad++ == 0) first = i;
      worst = std::max(worst, err);
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + " elements differ, first at " + std::to_string(first) + ": " +
         std::to_string(got[first]) + " vs " + std::to_string(want[first]) + ", worst error " + std::to_string(worst);
}

// ---------------------------------------------------------------- paged_attention vs the oracle

TEST(PagedAttention, MatchesGatheredCausalAttentionOnEveryBackend) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : all_runtimes())
    for (int32_t dt : {GN_F32, GN_F64, GN_BF16, GN_F16})
      for (size_t si = 0; si < batch_specs().size(); ++si) {
        const Batch b = make_batch(batch_specs()[si], 11u + (uint32_t)si);
        const std::string tag = rt_name(r) + " " + dname(dt) + " " + b.s.name;
        // The values as the dtype stores them: the oracle sees what the op sees.
        const std::vector<double> qv = as_f64(
            on_device(*r, uniform((size_t)(b.T * b.s.Hq * b.s.D), 3u + (uint32_t)si, -1, 1), {b.T, b.s.Hq, b.s.D}, dt)
                .t);
        const std::vector<double> poolv =
            as_f64(on_device(*r, uniform((size_t)(b.NB * 2 * b.s.Hkv * b.s.BS * b.s.D), 5u + (uint32_t)si, -1, 1),
                             {b.NB * 2 * b.s.Hkv * b.s.BS * b.s.D}, dt)
                       .t);
        std::vector<gt::T> out;
        gt::Err e = run_attention(*r, b, qv, poolv, dt, &out);
        ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
        ASSERT_EQ(out.size(), 1u) << tag;
        EXPECT_EQ(gn_tensor_dtype(out[0].t), dt) << tag;
        const std::vector<double> got = as_f64(out[0].t), want = oracle(b, qv, poolv);
        EXPECT_EQ(compare(got, want, paged_tol(dt)), "") << tag;
        // padding rows: exactly 0
        for (size_t i = (size_t)(b.qstart.back() * b.s.Hq * b.s.D); i < got.size(); ++i)
          ASSERT_EQ(got[i], 0.0) << tag << ": padding element " << i;
      }
}

// The window and soft-cap cases test something: on their batches the oracle without the switch gives other
// values (beyond the f32 tolerance), and the reference run without the attributes disagrees with the oracle with
// them -- so a backend ignoring either attribute fails the test above.
TEST(PagedAttention, WindowAndSoftcapChangeTheResult) {
  Rt& r = runtimes().ref;
  int checked = 0;
  for (size_t si = 0; si < batch_specs().size(); ++si) {
    const BatchSpec& spec = batch_specs()[si];
    if (spec.window == 0 && spec.softcap == 0) continue;
    const Batch b = make_batch(spec, 11u + (uint32_t)si);
    const std::vector<double> qv = uniform((size_t)(b.T * b.s.Hq * b.s.D), 3u + (uint32_t)si, -1, 1);
    const std::vector<double> poolv = uniform((size_t)(b.NB * 2 * b.s.Hkv * b.s.BS * b.s.D), 5u + (uint32_t)si, -1, 1);
    Batch plain = b;
    plain.s.window = 0;
    plain.s.softcap = 0;
    const std::vector<double> want = oracle(b, qv, poolv);
    EXPECT_NE(compare(oracle(plain, qv, poolv), want, paged_tol(GN_F32)), "") << spec.name;
    std::vector<gt::T> out;
    ASSERT_EQ(run_attention(r, plain, qv, poolv, GN_F64, &out).code, GN_OK) << spec.name;
    EXPECT_NE(compare(as_f64(out[0].t), want, paged_tol(GN_F32)), "") << spec.name;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

// The oracle itself is checked where the answer is known without it: one
// position attends only to itself (out = its value), and equal keys give the
// plain mean of the values, whatever q is.
TEST(PagedAttention, OracleAndReferenceAgreeWithClosedForms) {
  Rt& r = runtimes().ref;
  BatchSpec s{"closed", 2, 1, 4, 2, 0, 0, {{1, 1}, {3, 1}}};
  const Batch b = make_batch(s, 1);
  const std::vector<double> qv = uniform((size_t)(b.T * 2 * 4), 9, -1, 1);
  std::vector<double> poolv((size_t)(b.NB * 2 * 2 * 4));
  for (int64_t blk = 0; blk < b.NB; ++blk)
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t d = 0; d < 4; ++d) {
        poolv[(size_t)(((blk * 2 + 0) * 2 + row) * 4 + d)] = 0.5;                              // every key the same
        poolv[(size_t)(((blk * 2 + 1) * 2 + row) * 4 + d)] = (double)(blk * 8 + row * 4 + d);  // values
      }
  std::vector<double> want((size_t)(b.T * 2 * 4));
  for (int64_t i = 0; i < b.B; ++i) {
    const int64_t L = b.lens[(size_t)i];
    for (int64_t d = 0; d < 4; ++d) {
      double mean = 0;
      for (int64_t p = 0; p < L; ++p) {
        const int64_t blk = b.table[(size_t)(i * b.M + p / 2)];
        mean += (double)(blk * 8 + (p % 2) * 4 + d) / (double)L;
      }
      for (int64_t h = 0; h < 2; ++h) want[(size_t)((i * 2 + h) * 4 + d)] = mean;
    }
  }
  EXPECT_EQ(compare(oracle(b, qv, poolv), want, Tol{1e-14, 1e-14}), "");
  std::vector<gt::T> out;
  gt::Err e = run_attention(r, b, qv, poolv, GN_F64, &out);
  ASSERT_EQ(e.code, GN_OK) << e.msg;
  EXPECT_EQ(compare(as_f64(out[0].t), want, Tol{1e-14, 1e-14}), "");
}

// No queries at all (T = 0) and no sequences at all (B = 0, T = 2: both rows padding).
TEST(PagedAttention, EmptyBatchesGiveEmptyOrZeroOutputs) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : all_runtimes()) {
    gt::T pool = on_device(*r, std::vector<double>(2 * 2 * 4 * 8, 1.0), {2, 2, 4, 8}, GN_F32);
    {
      gt::T q = on_device(*r, {}, {0, 2, 8}, GN_F32);
      gt::T tables = ints_on_device(*r, {0}, {1, 1}, GN_I32);
      gt::T lens = i64_vec(*r, {0}), qs = i64_vec(*r, {0, 0});
      std::vector<gt::T> out;
      gt::Err e = call(*r, "paged_attention", {q.t, pool.t, tables.t, lens.t, qs.t}, {gn_attr_float(NAN)}, 1, &out);
      ASSERT_EQ(e.code, GN_OK) << rt_name(r) << ": " << e.msg;
      EXPECT_EQ(gn_tensor_numel(out[0].t), 0) << rt_name(r);
    }
    gt::T q = on_device(*r, std::vector<double>(2 * 2 * 8, 1.0), {2, 2, 8}, GN_F32);
    gt::T tables = ints_on_device(*r, {}, {0, 3}, GN_I32);
    gt::T lens = ints_on_device(*r, {}, {0}), qs = i64_vec(*r, {0});
    std::vector<gt::T> out;
    gt::Err e = call(*r, "paged_attention", {q.t, pool.t, tables.t, lens.t, qs.t}, {gn_attr_float(NAN)}, 1, &out);
    ASSERT_EQ(e.code, GN_OK) << rt_name(r) << ": " << e.msg;
    EXPECT_EQ(as_f64(out[0].t), std::vector<double>(2 * 2 * 8, 0.0)) << rt_name(r);
  }
}

// ---------------------------------------------------------------- paged_kv_write_

enum KvLayout { kKvContig, kKvPermuted, kKvStridedD };

const char* kv_layout_name(KvLayout l) {
  return l == kKvContig ? "contiguous" : l == kKvPermuted ? "permuted (2*Hkv, T, D)" : "strided in D";
}

// kv (T, H2, D) holding vals (row-major (T, H2, D)) in the asked layout.
gt::T make_kv(Rt& r, int64_t T, int64_t H2, int64_t D, const std::vector<double>& vals, int32_t dt, KvLayout l) {
  if (l == kKvContig) return on_device(r, vals, {T, H2, D}, dt);
  if (l == kKvPermuted) {
    std::vector<double> htd(vals.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H2; ++h)
        for (int64_t d = 0; d < D; ++d) htd[(size_t)((h * T + t) * D + d)] = vals[(size_t)((t * H2 + h) * D + d)];
    gt::T base = on_device(r, htd, {H2, T, D}, dt);
    gn_tensor* v = nullptr;
    check(gn_tensor_transpose(base.t, 0, 1, &v), v);
    return gt::T(v);
  }
  std::vector<double> wide(vals.size() * 2, -99.0);
  for (size_t i = 0; i < vals.size(); ++i) wide[2 * i] = vals[i];
  gt::T base = on_device(r, wide, {T, H2, 2 * D}, dt);
  gn_tensor* v = nullptr;
  check(gn_tensor_slice(base.t, 2, 0, 2 * D, 2, &v), v);
  return gt::T(v);
}

TEST(PagedKvWrite, WritesTheValidSlotsInPlaceOnEveryBackend) {
  OPC_REQUIRE_SUITE();
  const int64_t NB = 5, Hkv = 2, H2 = 2 * Hkv, BS = 4, D = 64;
  // 12 tokens: 8 valid slots spread over the pool in shuffled order, 4 padding slots
  const std::vector<int64_t> slots = {
      13, -1, 2, 19, NB * BS, 7, 0, int64_t{1} << 62, 16, std::numeric_limits<int64_t>::min(), 9, 3};
  const int64_t T = (int64_t)slots.size();
  for (Rt* r : all_runtimes())
    for (int32_t dt : {GN_F32, GN_F16, GN_BF16, GN_F64})
      for (KvLayout layout : {kKvContig, kKvPermuted, kKvStridedD}) {
        const std::string tag = rt_name(r) + " " + dname(dt) + " kv " + kv_layout_name(layout);
        // values exactly representable in every dtype (multiples of 1/8 below 16)
        std::vector<double> pool0((size_t)(NB * H2 * BS * D)), kv((size_t)(T * H2 * D));
        for (size_t i = 0; i < pool0.size(); ++i) pool0[i] = -(double)(i % 97) / 8.0;
        for (size_t i = 0; i < kv.size(); ++i) kv[i] = 1.0 + (double)(i % 89) / 8.0;
        gt::T pool = on_device(*r, pool0, {NB, H2, BS, D}, dt);
        gt::T k = make_kv(*r, T, H2, D, kv, dt, layout);
        gt::T s = i64_vec(*r, slots);
        void* before = gn_tensor_data_ptr(pool.t);
        gt::Err e = call(*r, "paged_kv_write_", {pool.t, k.t, s.t}, {}, 0);
        ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
        EXPECT_EQ(gn_tensor_data_ptr(pool.t), before) << tag;
        std::vector<double> want = pool0;
        for (int64_t t = 0; t < T; ++t) {
          const int64_t sl = slots[(size_t)t];
          if (sl < 0 || sl >= NB * BS) continue;
          for (int64_t h = 0; h < H2; ++h)
            for (int64_t d = 0; d < D; ++d)
              want[(size_t)((((sl / BS) * H2 + h) * BS + sl % BS) * D + d)] = kv[(size_t)((t * H2 + h) * D + d)];
        }
        const std::vector<double> got = as_f64(pool.t);
        EXPECT_EQ(compare(got, want, Tol{0, 0}), "") << tag;
        size_t changed = 0;
        for (size_t i = 0; i < got.size(); ++i) changed += got[i] != pool0[i];
        EXPECT_EQ(changed, (size_t)(8 * H2 * D)) << tag << ": the 8 valid slots, every head and element";
      }
}

// A serving loop in miniature: a 13-token prompt written with
// paged_kv_write_ into shuffled blocks, attended as one prefill, then two
// decode steps that each write one token and attend; every output against
// the oracle on the pool as written.
TEST(PagedKvWrite, WriteThenAttendPrefillAndDecode) {
  OPC_REQUIRE_SUITE();
  const int64_t Hq = 4, Hkv = 2, D = 64, BS = 4, NB = 7;
  for (Rt* r : all_runtimes())
    for (int32_t dt : {GN_F32, GN_BF16}) {
      const std::string tag = rt_name(r) + " " + dname(dt);
      const std::vector<int64_t> blocks = {5, 2, 6, 0, 3};  // the sequence's table (positions 0..19)
      Batch b;
      b.s = BatchSpec{"loop", Hq, Hkv, D, BS, 0, 0, {}};
      b.NB = NB;
      b.M = (int64_t)blocks.size();
      b.B = 1;
      b.table = blocks;
      gt::T pool = on_device(*r, std::vector<double>((size_t)(NB * 2 * Hkv * BS * D), 0.0), {NB, 2 * Hkv, BS, D}, dt);
      gt::T tables = ints_on_device(*r, blocks, {1, b.M}, GN_I32);
      int64_t len = 0;
      for (int64_t step = 0; step < 3; ++step) {
        const int64_t n = step == 0 ? 13 : 1;
        std::vector<int64_t> slots;
        for (int64_t p = len; p < len + n; ++p) slots.push_back(blocks[(size_t)(p / BS)] * BS + p % BS);
        const std::vector<double> kvv = as_f64(
            on_device(*r, uniform((size_t)(n * 2 * Hkv * D), 20u + (uint32_t)step, -1, 1), {n * 2 * Hkv * D}, dt).t);
        gt::T kv = on_device(*r, kvv, {n, 2 * Hkv, D}, dt);
        gt::T s = i64_vec(*r, slots);
        gt::Err e = call(*r, "paged_kv_write_", {pool.t, kv.t, s.t}, {}, 0);
        ASSERT_EQ(e.code, GN_OK) << tag << " step " << step << ": " << e.msg;
        len += n;
        b.T = n;
        b.lens = {len};
        b.qstart = {0, n};
        const std::vector<double> qv =
            as_f64(on_device(*r, uniform((size_t)(n * Hq * D), 30u + (uint32_t)step, -1, 1), {n * Hq * D}, dt).t);
        gt::T q = on_device(*r, qv, {n, Hq, D}, dt);
        gt::T lens = i64_vec(*r, b.lens), qs = i64_vec(*r, b.qstart);
        std::vector<gt::T> out;
        e = call(*r, "paged_attention", {q.t, pool.t, tables.t, lens.t, qs.t}, {gn_attr_float(NAN)}, 1, &out);
        ASSERT_EQ(e.code, GN_OK) << tag << " step " << step << ": " << e.msg;
        EXPECT_EQ(compare(as_f64(out[0].t), oracle(b, qv, as_f64(pool.t)), paged_tol(dt)), "")
            << tag << " step " << step;
      }
    }
}

// The backends that serve devices cannot refuse metadata without a sync: a
// block id outside [0, NB) masks its positions (the oracle drops them), and a
// query whose positions are all masked gives 0.  The reference refuses such
// ids instead (ReferenceRefusesMetadataOutsideTheBatch), so this runs on the
// backend under test only.
TEST(PagedAttention, BlockIdsOutsideThePoolAreMaskedOnTheBackend) {
  OPC_REQUIRE_SUITE();
  const BatchSpec spec{"masked", 4, 2, 64, 4, 2, 1, {{10, 2}, {5, 1}, {3, 3}}};
  for (Rt* r : {&runtimes().dut, &runtimes().solo})
    for (int32_t dt : {GN_F32, GN_F64}) {
      Batch b = make_batch(spec, 5);
      b.table[(size_t)(0 * b.M + 1)] = (int64_t)b.NB + 5;                    // positions 4..7 of sequence 0
      b.table[(size_t)(1 * b.M + 0)] = -3;                                   // positions 0..3 of sequence 1
      b.table[(size_t)(2 * b.M + 0)] = std::numeric_limits<int32_t>::max();  // all of sequence 2
      const std::string tag = rt_name(r) + " " + dname(dt);
      const std::vector<double> qv = uniform((size_t)(b.T * 4 * 64), 41, -1, 1);
      const std::vector<double> poolv = uniform((size_t)(b.NB * 4 * 4 * 64), 43, -1, 1);
      std::vector<gt::T> out;
      gt::Err e = run_attention(*r, b, qv, poolv, dt, &out);
      ASSERT_EQ(e.code, GN_OK) << tag << ": " << e.msg;
      const std::vector<double> got = as_f64(out[0].t), want = oracle(b, qv, poolv);
      EXPECT_EQ(compare(got, want, paged_tol(dt)), "") << tag;
      for (size_t i = (size_t)(b.qstart[2] * 4 * 64); i < got.size(); ++i)
        ASSERT_EQ(got[i], 0.0) << tag << ": element " << i << " of a fully masked or padding row";
    }
}

// ---------------------------------------------------------------- bad input

struct Bad {
  std::string what;
  const char* op;
  std::vector<std::pair<std::vector<int64_t>, int32_t>> ins;  // dense inputs (values 0): shape, dtype
  int32_t code;
  std::vector<std::string> words;
  bool transpose_first = false;  // input 0 as a transposed view of its last two dims
};

std::vector<Bad> bad_inputs() {
  const int32_t f = GN_F32, l = GN_I64, i = GN_I32;
  const char* pa = "paged_attention";
  const char* pw = "paged_kv_write_";
  // a valid paged_attention call: q (3, 4, 8), pool (4, 4, 2, 8) (Hkv = 2), B = 2, M = 3
  return {
      {"block_tables int64",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, l}, {{2}, l}, {{3}, l}},
       GN_ERR_DTYPE,
       {"block_tables", "int32", "int64"}},
      {"block_tables 1-D",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"block_tables", "2-D", "(3)"}},
      {"Hq % Hkv",
       pa,
       {{{3, 3, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"query heads 3", "key/value heads 2"}},
      {"odd pool dim 1",
       pa,
       {{{3, 3, 8}, f}, {{4, 3, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"pool", "even", "(4, 3, 2, 8)"}},
      {"pool dim 1 zero",
       pa,
       {{{3, 3, 8}, f}, {{4, 0, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"pool", "even", "(4, 0, 2, 8)"}},
      {"D differs",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 16}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"head dims", "(3, 4, 8)", "(4, 4, 2, 16)"}},
      {"query_start length B",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{2}, l}},
       GN_ERR_SHAPE,
       {"query_start", "B+1 = 3", "(2)"}},
      {"query_start int32",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{3}, i}},
       GN_ERR_DTYPE,
       {"query_start", "int64", "int32"}},
      {"seq_lens length",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{3}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"seq_lens", "B = 2", "(3)"}},
      {"seq_lens float",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, f}, {{3}, l}},
       GN_ERR_DTYPE,
       {"seq_lens", "int64", "float32"}},
      {"q 4-D",
       pa,
       {{{1, 3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"q", "3-D", "(1, 3, 4, 8)"}},
      {"pool 3-D",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 16}, f}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_SHAPE,
       {"pool", "4-D", "(4, 4, 16)"}},
      {"int q", pa, {{{3, 4, 8}, i}, {{4, 4, 2, 8}, i}, {{2, 3}, i}, {{2}, l}, {{3}, l}}, GN_ERR_DTYPE, {"q", "int32"}},
      {"pool dtype",
       pa,
       {{{3, 4, 8}, f}, {{4, 4, 2, 8}, GN_BF16}, {{2, 3}, i}, {{2}, l}, {{3}, l}},
       GN_ERR_DTYPE,
       {"pool", "bfloat16", "float32"}},
      {"arity", pa, {{{3, 4, 8}, f}, {{4, 4, 2, 8}, f}, {{2, 3}, i}, {{2}, l}}, GN_ERR_INVALID_ARGUMENT, {pa}},
      {"kv D differs",
       pw,
       {{{4, 4, 2, 8}, f}, {{3, 4, 16}, f}, {{3}, l}},
       GN_ERR_SHAPE,
       {"kv", "(3, 4, 16)", "(4, 4, 2, 8)"}},
      {"kv heads differ",
       pw,
       {{{4, 4, 2, 8}, f}, {{3, 2, 8}, f}, {{3}, l}},
       GN_ERR_SHAPE,
       {"kv", "(3, 2, 8)", "(4, 4, 2, 8)"}},
      {"kv 4-D", pw, {{{4, 4, 2, 8}, f}, {{3, 1, 4, 8}, f}, {{3}, l}}, GN_ERR_SHAPE, {"kv", "3-D"}},
      {"kv dtype", pw, {{{4, 4, 2, 8}, f}, {{3, 4, 8}, GN_F16}, {{3}, l}}, GN_ERR_DTYPE, {"kv", "float16", "float32"}},
      {"slots int32", pw, {{{4, 4, 2, 8}, f}, {{3, 4, 8}, f}, {{3}, i}}, GN_ERR_DTYPE, {"slots", "int64", "int32"}},
      {"slots length", pw, {{{4, 4, 2, 8}, f}, {{3, 4, 8}, f}, {{2}, l}}, GN_ERR_SHAPE, {"slots", "T = 3", "(2)"}},
      {"odd pool dim 1", pw, {{{4, 3, 2, 8}, f}, {{3, 3, 8}, f}, {{3}, l}}, GN_ERR_SHAPE, {"pool", "even"}},
      {"int pool", pw, {{{4, 4, 2, 8}, i}, {{3, 4, 8}, i}, {{3}, l}}, GN_ERR_DTYPE, {"pool", "int32"}},
      // (4, 4, 8, 2) transposed: shape (4, 4, 2, 8), not contiguous
      {"strided pool",
       pw,
       {{{4, 4, 8, 2}, f}, {{3, 4, 8}, f}, {{3}, l}},
       GN_ERR_INVALID_ARGUMENT,
       {"pool", "contiguous"},
       true},
  };
}

TEST(PagedBadInput, SameCodeAndAClearMessageOnEveryBackend) {
  OPC_REQUIRE_SUITE();
  for (Rt* r : all_runtimes())
    for (const Bad& bad : bad_inputs()) {
      std::vector<gt::T> ins;
      std::vector<gn_tensor*> raw;
      for (size_t k = 0; k < bad.ins.size(); ++k) {
        const auto& [shape, dt] = bad.ins[k];
        ins.push_back(on_device(*r, std::vector<double>((size_t)numel(shape), 0.0), shape, dt));
        if (k == 0 && bad.transpose_first) {
          gn_tensor* v = nullptr;
          check(gn_tensor_transpose(ins.back().t, -1, -2, &v), v);
          ins.back() = gt::T(v);
        }
        raw.push_back(ins.back().t);
      }
      const std::string tag = rt_name(r) + ": " + bad.what;
      gt::Err e = call(*r, bad.op, raw, {}, std::string(bad.op) == "paged_kv_write_" ? 0 : 1);
      EXPECT_EQ(e.code, bad.code) << tag << ": " << e.msg;
      EXPECT_EQ(e.msg.rfind(std::string("[") + bad.op + "]", 0), 0u) << tag << ": " << e.msg;
      for (const std::string& w : bad.words) EXPECT_NE(e.msg.find(w), std::string::npos) << tag << ": " << e.msg;
    }
}

// Metadata that does not describe the batch: the reference refuses it, naming
// the value.
TEST(PagedBadInput, ReferenceRefusesMetadataOutsideTheBatch) {
  Rt& r = runtimes().ref;
  struct M {
    std::string what;
    std::vector<int64_t> table, lens, qs;
    int32_t code;
    std::string word;
  };
  // q (4, 2, 8), pool (3, 2, 2, 8) (NB = 3, BS = 2), B = 2, M = 2
  const std::vector<M> ms = {
      {"block id NB", {0, 1, 3, 2}, {3, 3}, {0, 2, 4}, GN_ERR_INDEX, "block_tables[1, 0] = 3"},
      {"negative block id", {0, -2, 1, 2}, {3, 3}, {0, 2, 4}, GN_ERR_INDEX, "block_tables[0, 1] = -2"},
      {"query_start past T", {0, 1, 2, 0}, {3, 3}, {0, 2, 5}, GN_ERR_INVALID_ARGUMENT, "query_start"},
      {"query_start decreasing", {0, 1, 2, 0}, {3, 3}, {0, 3, 2}, GN_ERR_INVALID_ARGUMENT, "query_start"},
      {"more queries than positions", {0, 1, 2, 0}, {1, 3}, {0, 2, 4}, GN_ERR_INVALID_ARGUMENT, "seq_lens[0] = 1"},
      {"longer than the table", {0, 1, 2, 0}, {5, 3}, {0, 2, 4}, GN_ERR_INVALID_ARGUMENT, "seq_lens[0] = 5"},
  };
  for (const M& m : ms) {
    gt::T q = on_device(r, std::vector<double>(4 * 2 * 8, 0.5), {4, 2, 8}, GN_F32);
    gt::T pool = on_device(r, std::vector<double>(3 * 2 * 2 * 8, 0.5), {3, 2, 2, 8}, GN_F32);
    gt::T tables = ints_on_device(r, m.table, {2, 2}, GN_I32);
    gt::T lens = i64_vec(r, m.lens), qs = i64_vec(r, m.qs);
    gt::Err e = call(r, "paged_attention", {q.t, pool.t, tables.t, lens.t, qs.t}, {gn_attr_float(NAN)}, 1);
    EXPECT_EQ(e.code, m.code) << m.what << ": " << e.msg;
    EXPECT_NE(e.msg.find(m.word), std::string::npos) << m.what << ": " << e.msg;
  }
}

}  // namespace
