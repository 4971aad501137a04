// backends/reference/paged.cpp - the paged KV-cache ops of a serving engine:
// paged_kv_write_ (one step's keys and values stored into a layer's block
// pool, one slot per token) and paged_attention (causal attention of a batch
// of sequences whose keys and values live in that pool).
//
// The pool (NB, 2*Hkv, BS, D) holds BS positions per block; kv head g's keys
// are pool[:, g], its values pool[:, Hkv + g].  Position p of sequence b
// lives in block block_tables[b, p / BS] at row p % BS.  Plain loops in
// double; the metadata (slots, block ids, lengths, query ranges) is read on
// the host, and paged_attention refuses values that do not describe the
// batch (a block id outside [0, NB), a query range outside q, more queries
// than positions) instead of masking them as the device backends do.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

std::string at_str(const char* what, int64_t i) { return std::string(what) + "[" + std::to_string(i) + "]"; }

// The pool: 4-D with an even, non-zero dim 1 (inference checked the rest).
void check_pool(const char* op, const gn_tensor_view& pool) {
  expect_ndim(op, "pool", pool, 4);
  if (pool.shape[1] <= 0 || pool.shape[1] % 2 != 0)
    fail(GN_ERR_SHAPE,
         std::string("[") + op + "] pool dim 1 must be 2*Hkv (even and positive), got " + shape_str(shape_of(pool)));
}

// ----------------------------------------------------------------------------
// paged_kv_write_

// in: pool (NB, 2*Hkv, BS, D) dense, kv (T, 2*Hkv, D) any strides, slots (T)
// int64; no outputs.  pool[s / BS, h, s % BS, :] = kv[t, h, :] for s =
// slots[t] in [0, NB*BS); other slots are skipped.  Elements are copied as
// bytes: the write is exact for every dtype.
GN_SDK_KERNEL(paged_kv_write_kernel) {
  const char* op = "paged_kv_write_";
  expect_io(op, n_in, 3, n_out, 0);
  const gn_tensor_view& pool = in[0];
  const gn_tensor_view& kv = in[1];
  const gn_tensor_view& slots = in[2];
  check_pool(op, pool);
  expect_ndim(op, "kv", kv, 3);
  if (!gn_view_is_contiguous(&pool))
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op +
                                      "] pool must be contiguous (it is written in place), got shape " +
                                      shape_str(shape_of(pool)));
  const int64_t NB = pool.shape[0], H2 = pool.shape[1], BS = pool.shape[2], D = pool.shape[3], T = kv.shape[0];
  expect_shape(op, "kv", kv, {T, H2, D});
  expect_numel(op, "slots", slots, T);
  if (kv.dtype != pool.dtype) fail(GN_ERR_DTYPE, std::string("[") + op + "] kv and pool dtypes differ");
  if (BS == 0) return;  // no slot exists
  const std::vector<int64_t> s = load_ints(slots);
  const int64_t es = (int64_t)gn_dtype_size(pool.dtype);
  char* base = (char*)gn_view_ptr(&pool);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = s[(size_t)t];
    if (slot < 0 || slot / BS >= NB) continue;  // padding (slot >= NB*BS, without overflow)
    const int64_t blk = slot / BS, row = slot % BS;
    for (int64_t h = 0; h < H2; ++h) {
      char* dst = base + (((blk * H2 + h) * BS + row) * D) * es;
      int64_t idx[3] = {t, h, 0};
      for (int64_t d = 0; d < D; ++d) {
        idx[2] = d;
        std::memcpy(dst + d * es, gn::sdk::elem_ptr_at(kv, idx), (size_t)es);
      }
    }
  }
}

// ----------------------------------------------------------------------------
// paged_attention

// in: q (T, Hq, D), pool (NB, 2*Hkv, BS, D), block_tables (B, M) int32,
// seq_lens (B) int64, query_start (B+1) int64, all any strides; out (T, Hq, D);
// attrs: scale (nan = 1/sqrt(D)), window (> 0: keys j > position - window
// only), softcap (> 0: scores s -> softcap * tanh(s / softcap)).  Query row
// query_start[b] + i (i < n_b) of sequence b sits at position L - n_b + i
// (L = seq_lens[b]) and attends to positions 0 .. its own (the last `window`
// of them with a window); rows of no sequence are 0.
GN_SDK_KERNEL(paged_attention_kernel) {
  const char* op = "paged_attention";
  expect_io(op, n_in, 5, n_out, 1);
  const gn_tensor_view& q = in[0];
  const gn_tensor_view& pool = in[1];
  const gn_tensor_view& tables = in[2];
  expect_ndim(op, "q", q, 3);
  check_pool(op, pool);
  expect_ndim(op, "block_tables", tables, 2);
  const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2];
  const int64_t NB = pool.shape[0], Hkv = pool.shape[1] / 2, BS = pool.shape[2];
  const int64_t B = tables.shape[0], M = tables.shape[1];
  expect_shape(op, "pool", pool, {NB, 2 * Hkv, BS, D});
  expect_numel(op, "seq_lens", in[3], B);
  expect_numel(op, "query_start", in[4], B + 1);
  expect_shape(op, "out", out[0], {T, Hq, D});
  expect_float(op, "q", q);
  if (pool.dtype != q.dtype) fail(GN_ERR_DTYPE, std::string("[") + op + "] q and pool dtypes differ");
  if (Hq % Hkv != 0)
    fail(GN_ERR_SHAPE,
         std::string("[") + op + "] Hq " + std::to_string(Hq) + " is not a multiple of Hkv " + std::to_string(Hkv));
  double scale = attr_float(op, attrs, n_attrs, 0);
  if (std::isnan(scale)) scale = 1.0 / std::sqrt((double)D);
  const int64_t window = n_attrs > 1 ? attr_int(op, attrs, n_attrs, 1) : 0;
  const double softcap = n_attrs > 2 ? attr_float(op, attrs, n_attrs, 2) : 0.0;
  if (window < 0)
    fail(GN_ERR_INVALID_ARGUMENT,
         std::string("[") + op + "] window must be >= 0 (0: none), got " + std::to_string(window));
  if (!(softcap >= 0)) fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] softcap must be >= 0 (0: none)");

  const std::vector<int64_t> table = load_ints(tables), lens = load_ints(in[3]), qs = load_ints(in[4]);
  // The metadata must describe the batch.
  for (int64_t b = 0; b < B; ++b) {
    const int64_t lo = qs[(size_t)b], hi = qs[(size_t)b + 1], L = lens[(size_t)b];
    if (lo < 0 || hi < lo || hi > T)
      fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op +
                                        "] query_start must be non-decreasing within [0, T = " + std::to_string(T) +
                                        "], got " + at_str("query_start", b) + " = " + std::to_string(lo) + ", " +
                                        at_str("query_start", b + 1) + " = " + std::to_string(hi));
    if (L < hi - lo || L > M * BS)
      fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] " + at_str("seq_lens", b) + " = " + std::to_string(L) +
                                        " must lie in [n_b = " + std::to_string(hi - lo) +
                                        ", M*BS = " + std::to_string(M * BS) + "]");
    if (hi == lo) continue;  // no query reads this sequence's blocks
    for (int64_t j = 0; j * BS < L; ++j) {
      const int64_t blk = table[(size_t)(b * M + j)];
      if (blk < 0 || blk >= NB)
        fail(GN_ERR_INDEX, std::string("[") + op + "] block_tables[" + std::to_string(b) + ", " + std::to_string(j) +
                               "] = " + std::to_string(blk) + " is outside [0, NB = " + std::to_string(NB) + ")");
    }
  }

  const Vec qv = load_all(q);  // (T, Hq, D)
  Vec o((size_t)(T * Hq * D), 0.0);
  const int64_t group = Hq / Hkv;
  // Element (blk, h, r, d) of the pool as double.
  auto pool_at = [&](int64_t blk, int64_t h, int64_t r, int64_t d) {
    const int64_t idx[4] = {blk, h, r, d};
    return gn::sdk::load(gn::sdk::elem_ptr_at(pool, idx), pool.dtype);
  };
  std::vector<double> s;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t lo = qs[(size_t)b], n = qs[(size_t)b + 1] - lo, L = lens[(size_t)b];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = lo + i, pos = L - n + i;  // this query's position: keys first..pos
      const int64_t first = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
      s.assign((size_t)(pos + 1), 0.0);
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / group;
        const double* qi = qv.data() + (t * Hq + h) * D;
        double m = -INFINITY;
        for (int64_t p = first; p <= pos; ++p) {
          const int64_t blk = table[(size_t)(b * M + p / BS)];
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * pool_at(blk, g, p % BS, d);
          s[(size_t)p] = softcap > 0 ? softcap * std::tanh(scale * dot / softcap) : scale * dot;
          m = std::fmax(m, s[(size_t)p]);
        }
        double sum = 0.0;
        for (int64_t p = first; p <= pos; ++p) sum += (s[(size_t)p] = std::exp(s[(size_t)p] - m));
        double* oi = o.data() + (t * Hq + h) * D;
        for (int64_t p = first; p <= pos; ++p) {
          const int64_t blk = table[(size_t)(b * M + p / BS)];
          const double w = s[(size_t)p] / sum;
          for (int64_t d = 0; d < D; ++d) oi[d] += w * pool_at(blk, Hkv + g, p % BS, d);
        }
      }
    }
  }
  store_all(out[0], o);
}

}  // namespace

void register_paged(const gn::sdk::Registrar& r) {
  r.kernel("paged_kv_write_", kFloatDtypes, paged_kv_write_kernel);
  r.kernel("paged_attention", kFloatDtypes, paged_attention_kernel);
}

}  // namespace gn::reference
