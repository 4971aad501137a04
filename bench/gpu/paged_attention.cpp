// bench/gpu/paged_attention.cpp - Genesis side of the paged-attention benchmark
// (paged_attention.py prints the table; paged_attention.sh builds and runs both).
//
//   paged_attention_bench <plugin dir> [--check-only] > genesis.jsonl
//
// 1. Checks (stderr, and one JSON line each): paged_attention against
//    scaled_dot_product_attention on the same keys and values laid out
//    contiguously, per sequence, over bf16/f16/f32/f64, head dims 64/128/80,
//    block sizes 16 and 7, decode rows and prefill chunks after a cached
//    prefix, sequences of different lengths, a strided kv for
//    paged_kv_write_, padding slots (-1), unused table entries (-1) and query
//    rows of no sequence (must be exactly 0).  The pool is filled through
//    paged_kv_write_, so the checks cover both ops.  Exit status 3 when a
//    check fails.
// 2. Decode timings (bf16, Hq 14, Hkv 2, block size 16, one query per
//    sequence): paged_attention over a pool with shuffled block ids, and the
//    contiguous decode (scaled_dot_product_attention of q (B,Hq,1,D) against
//    the (B,Hkv,ctx,D) cache), batch 1/8/64, context 128..2048, head dims 64
//    and 128.  Timing: bench_util.h (CUDA events, outputs allocated per call,
//    median of 50 reps after 10 warm-ups).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using namespace bench;

// A tensor reference released at scope exit.
struct Ref {
  gn_tensor* t = nullptr;
  Ref() = default;
  explicit Ref(gn_tensor* p) : t(p) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : t(o.t) { o.t = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    std::swap(t, o.t);
    return *this;
  }
  ~Ref() {
    if (t) gn_tensor_release(t);
  }
  operator gn_tensor*() const { return t; }
};

Ref from_host(const void* data, std::vector<int64_t> shape, int32_t dt) {
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(rt, data, shape.data(), (int32_t)shape.size(), dt, dev, &t), "from_host");
  return Ref(t);
}
Ref slice(gn_tensor* x, int64_t dim, int64_t a, int64_t b) {
  gn_tensor* t = nullptr;
  check(gn_tensor_slice(x, dim, a, b, 1, &t), "slice");
  return Ref(t);
}
Ref permute(gn_tensor* x, std::vector<int64_t> dims) {
  gn_tensor* t = nullptr;
  check(gn_tensor_permute(x, dims.data(), (int32_t)dims.size(), &t), "permute");
  return Ref(t);
}
Ref view(gn_tensor* x, std::vector<int64_t> shape) {
  gn_tensor* t = nullptr;
  check(gn_tensor_view_as(x, shape.data(), (int32_t)shape.size(), &t), "view");
  return Ref(t);
}
Ref contiguous(gn_tensor* x) {
  gn_tensor* t = nullptr;
  check(gn_tensor_contiguous(x, &t), "contiguous");
  return Ref(t);
}
// All elements as double on the host (through an f64 copy).
std::vector<double> host_f64(gn_tensor* x) {
  gn_tensor* d = nullptr;
  check(gn_tensor_to_dtype(x, GN_F64, &d), "to_dtype");
  Ref r(d);
  Ref c = contiguous(r);
  std::vector<double> v((size_t)gn_tensor_numel(c));
  check(gn_tensor_to_host(c, v.data(), v.size() * sizeof(double)), "to_host");
  return v;
}
Ref call1(const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> at, size_t n_out = 1) {
  std::vector<gn_tensor*> outs;
  call(op(name), std::move(in), std::move(at), n_out, &outs);
  for (size_t i = 1; i < outs.size(); ++i) gn_tensor_release(outs[i]);
  return Ref(outs.empty() ? nullptr : outs[0]);
}

// One batch: sequence b has lens[b] positions, the last nq[b] of them queried.
struct Batch {
  int32_t dt;
  int64_t Hq, Hkv, D, BS;
  std::vector<int64_t> lens, nq;
  int64_t extra_rows = 0;   // query rows after the last sequence's (no sequence: must come out 0)
  bool strided_kv = false;  // kv for paged_kv_write_ as a slice of a wider tensor
  int64_t spare_table = 0;  // table entries past the last needed block, set to -1
};

struct Built {
  Ref q, pool, tables, lens, qstart;
  Ref k, v;  // (B, Hkv, Lmax, D) contiguous, the same values as the pool
  int64_t T = 0, Lmax = 0;
  std::vector<int64_t> qs;
};

// The pool (filled by paged_kv_write_ from kv rows of shuffled blocks), the metadata, q and the contiguous k, v.
Built build(const Batch& c, std::mt19937& rng) {
  Built r;
  const int64_t B = (int64_t)c.lens.size(), H2 = 2 * c.Hkv;
  r.Lmax = *std::max_element(c.lens.begin(), c.lens.end());
  const int64_t M = (r.Lmax + c.BS - 1) / c.BS + c.spare_table;
  const int64_t NB = B * M + 3;
  std::vector<int32_t> ids((size_t)NB);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> table((size_t)(B * M), -1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j * c.BS < c.lens[(size_t)b]; ++j) table[(size_t)(b * M + j)] = ids[(size_t)(b * M + j)];
  // kv rows: (B * Lmax, 2*Hkv, D); slot of (b, p) from the table, -1 beyond the sequence's length (padding)
  std::vector<int64_t> slots((size_t)(B * r.Lmax));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < r.Lmax; ++p)
      slots[(size_t)(b * r.Lmax + p)] =
          p < c.lens[(size_t)b] ? (int64_t)table[(size_t)(b * M + p / c.BS)] * c.BS + p % c.BS : -1;
  Ref wide = Ref(randn({B * r.Lmax, H2 + (c.strided_kv ? 3 : 0), c.D}, c.dt));
  Ref kv = c.strided_kv ? slice(wide, 1, 1, 1 + H2) : slice(wide, 1, 0, H2);
  r.pool = Ref(randn({NB, H2, c.BS, c.D}, c.dt));
  Ref slot_t = from_host(slots.data(), {B * r.Lmax}, GN_I64);
  call(op("paged_kv_write_"), {r.pool, kv, slot_t}, {}, 0);
  Ref kv4 = view(contiguous(kv), {B, r.Lmax, H2, c.D});
  r.k = contiguous(permute(slice(kv4, 2, 0, c.Hkv), {0, 2, 1, 3}));
  r.v = contiguous(permute(slice(kv4, 2, c.Hkv, H2), {0, 2, 1, 3}));
  r.qs.assign((size_t)B + 1, 0);
  for (int64_t b = 0; b < B; ++b) r.qs[(size_t)b + 1] = r.qs[(size_t)b] + c.nq[(size_t)b];
  r.T = r.qs[(size_t)B] + c.extra_rows;
  r.q = Ref(randn({r.T, c.Hq, c.D}, c.dt));
  r.tables = from_host(table.data(), {B, M}, GN_I32);
  r.lens = from_host(c.lens.data(), {B}, GN_I64);
  r.qstart = from_host(r.qs.data(), {B + 1}, GN_I64);
  return r;
}

Ref paged(const Built& r) { return call1("paged_attention", {r.q, r.pool, r.tables, r.lens, r.qstart}, {af(NAN)}); }

// Max |paged - sdpa| over all rows (sequence by sequence) and the largest |sdpa|; rows of no sequence must be 0.
bool check_case(const std::string& name, const Batch& c, std::mt19937& rng) {
  Built r = build(c, rng);
  Ref out = paged(r);
  const std::vector<double> po = host_f64(out);
  double err = 0, mag = 0;
  const int64_t B = (int64_t)c.lens.size();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = c.nq[(size_t)b], L = c.lens[(size_t)b], q0 = r.qs[(size_t)b];
    if (n == 0) continue;
    Ref qb = contiguous(permute(view(slice(r.q, 0, q0, q0 + n), {1, n, c.Hq, c.D}), {0, 2, 1, 3}));
    Ref kb = slice(slice(r.k, 0, b, b + 1), 2, 0, L), vb = slice(slice(r.v, 0, b, b + 1), 2, 0, L);
    Ref ref = call1("scaled_dot_product_attention", {qb, kb, vb}, {ai(2), af(NAN)}, 2);  // (1, Hq, n, D)
    const std::vector<double> ro = host_f64(ref);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < c.Hq; ++h)
        for (int64_t d = 0; d < c.D; ++d) {
          const double a = po[(size_t)(((q0 + i) * c.Hq + h) * c.D + d)], e = ro[(size_t)((h * n + i) * c.D + d)];
          err = std::max(err, std::isnan(a) ? INFINITY : std::fabs(a - e));
          mag = std::max(mag, std::fabs(e));
        }
  }
  bool zero_ok = true;
  for (int64_t t = r.qs[(size_t)B]; t < r.T; ++t)
    for (int64_t x = 0; x < c.Hq * c.D; ++x) zero_ok = zero_ok && po[(size_t)(t * c.Hq * c.D + x)] == 0.0;
  // one rounding of the output dtype plus f32 accumulation differences
  const double tol = c.dt == GN_BF16 ? 2e-2 : c.dt == GN_F16 ? 3e-3 : c.dt == GN_F32 ? 1e-5 : 1e-12;
  const bool ok = err <= tol * std::max(1.0, mag) && zero_ok;
  std::printf("{\"check\": \"%s\", \"max_err\": %.3e, \"max_abs\": %.3e, \"zero_rows_ok\": %s, \"ok\": %s}\n",
              name.c_str(), err, mag, zero_ok ? "true" : "false", ok ? "true" : "false");
  std::fflush(stdout);
  std::fprintf(stderr, "  check %-44s max err %.3e (|ref| <= %.3f)%s  %s\n", name.c_str(), err, mag,
               zero_ok ? "" : ", uncovered rows NOT zero", ok ? "ok" : "FAILED");
  return ok;
}

bool run_checks() {
  std::mt19937 rng(7);
  bool ok = true;
  auto run = [&](const std::string& name, Batch c) {
    try {
      ok = check_case(name, c, rng) && ok;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "  check %-44s FAILED: %s\n", name.c_str(), e.what());
      std::printf("{\"check\": \"%s\", \"ok\": false}\n", name.c_str());
      ok = false;
    }
  };
  // decode rows, GQA 14/2, ragged lengths (a partial last block), padding slots, spare table entries
  run("decode_bf16_d128_bs16_ragged", {GN_BF16, 14, 2, 128, 16, {37, 1, 300, 16, 129}, {1, 1, 1, 1, 1}, 0, false, 2});
  run("decode_f16_d64_bs16_b64",
      {GN_F16, 14, 2, 64, 16, std::vector<int64_t>(64, 200), std::vector<int64_t>(64, 1), 0, false, 0});
  run("decode_f32_d128_bs16_long", {GN_F32, 8, 8, 128, 16, {2048, 777}, {1, 1}, 0, false, 0});
  run("decode_bf16_d256_bs16", {GN_BF16, 16, 2, 256, 16, {100, 513}, {1, 1}, 0, false, 0});
  run("decode_bf16_d32_mha", {GN_BF16, 4, 4, 32, 16, {65, 3}, {1, 1}, 0, false, 0});
  // prefill chunks after a cached prefix (n_b > 1), a sequence with no query, rows of no sequence, strided kv
  run("prefill_bf16_d128_prefix", {GN_BF16, 14, 2, 128, 16, {50, 90, 33}, {20, 0, 33}, 3, true, 1});
  run("prefill_f16_d64_bs7", {GN_F16, 6, 3, 64, 7, {40, 17}, {11, 17}, 2, false, 0});
  // generic path: f64, a head dim of 80, a 16-bit pool with a head dim that is not a multiple of 32
  run("generic_f64_d64", {GN_F64, 4, 2, 64, 16, {45, 9}, {5, 1}, 1, true, 1});
  run("generic_f32_d80_bs7", {GN_F32, 6, 2, 80, 7, {30, 64}, {4, 1}, 0, false, 0});
  run("generic_bf16_d96", {GN_BF16, 4, 1, 96, 16, {70}, {3}, 1, false, 0});
  return ok;
}

void run_timings() {
  std::mt19937 rng(11);
  const int64_t Hq = 14, Hkv = 2, BS = 16;
  for (int64_t D : {64, 128})
    for (int64_t B : {1, 8, 64})
      for (int64_t L : {128, 512, 1024, 2048}) {
        const std::string tag = "bf16_d" + std::to_string(D) + "_b" + std::to_string(B) + "_ctx" + std::to_string(L);
        try {
          Batch c{GN_BF16, Hq,    Hkv, D, BS, std::vector<int64_t>((size_t)B, L), std::vector<int64_t>((size_t)B, 1),
                  0,       false, 0};
          Built r = build(c, rng);
          Ref q4 = view(r.q, {B, Hq, 1, D});  // one query per sequence: (B, Hq, D) is (B, Hq, 1, D)
          const gn_op* pa = op("paged_attention");
          const gn_op* sd = op("scaled_dot_product_attention");
          const double paged_ms = time_ms(
              [&] {
                call(pa, {r.q, r.pool, r.tables, r.lens, r.qstart}, {af(NAN)}, 1);
              },
              50, 10);
          const double contig_ms = time_ms([&] { call(sd, {q4, r.k, r.v}, {ai(0), af(NAN)}, 2); }, 50, 10);
          // bytes the decode must read: K and V of every position (q and out are small)
          const double bytes = 2.0 * B * Hkv * L * D * 2;
          std::printf(
              "{\"case\": \"%s\", \"B\": %lld, \"ctx\": %lld, \"D\": %lld, \"paged_ms\": %.6f, \"contig_ms\": %.6f, "
              "\"kv_bytes\": %.0f}\n",
              tag.c_str(), (long long)B, (long long)L, (long long)D, paged_ms, contig_ms, bytes);
          std::fflush(stdout);
          std::fprintf(stderr, "  %-28s paged %8.4f ms  contiguous %8.4f ms  paged %7.1f GB/s\n", tag.c_str(), paged_ms,
                       contig_ms, bytes / (paged_ms * 1e-3) / 1e9);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "  %-28s FAILED: %s\n", tag.c_str(), e.what());
        }
      }
}

}  // namespace

int main(int argc, char** argv) {
  if (!open_cuda(argc > 1 ? argv[1] : nullptr, "paged_attention_bench")) return 2;
  const bool check_only = argc > 2 && std::strcmp(argv[2], "--check-only") == 0;
  gn_rng_manual_seed(rt, 1);
  bool ok = true;
  try {
    std::fprintf(stderr, "== checks: paged_attention vs scaled_dot_product_attention\n");
    ok = run_checks();
    if (!check_only) {
      std::fprintf(stderr, "== decode timings\n");
      run_timings();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paged_attention_bench: %s\n", e.what());
    return 1;
  }
  gn_runtime_destroy(rt);
  return ok ? 0 : 3;
}
