// core/ops/infer_paged.cpp - inference of the paged KV-cache ops of a serving
// engine: paged_kv_write_ (the in-place store of a step's keys and values into
// a layer's block pool, one slot per token) and paged_attention (causal
// attention of a batch of sequences whose keys and values live in that pool,
// addressed through per-sequence block tables).  Neither is differentiable.
//
// Only shapes and dtypes are checked here; the values inside the metadata
// tensors (slots, block ids, lengths) are the kernels' business, since a
// device kernel cannot read them without a sync.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// The pool (NB, 2*Hkv, BS, D): 4-D, floating point, an even, non-zero dim 1.
void check_pool(const gn_tensor_meta& pool) {
  if (pool.ndim != 4) fail(GN_ERR_SHAPE, "pool must be 4-D (NB, 2*Hkv, BS, D), got shape " + shape_str(pool));
  need_float(pool, "pool");
  if (pool.shape[1] <= 0 || pool.shape[1] % 2 != 0)
    fail(GN_ERR_SHAPE, "pool dim 1 must be 2*Hkv (keys then values of each kv head), even and positive, got shape " +
                           shape_str(pool));
}

// A 1-D int64 metadata tensor of length n.
void check_i64_vector(const gn_tensor_meta& m, const char* what, int64_t n, const std::string& len_text) {
  if (m.ndim != 1 || m.shape[0] != n)
    fail(GN_ERR_SHAPE, std::string(what) + " must be 1-D of length " + len_text + ", got shape " + shape_str(m));
  if (m.dtype != GN_I64) fail(GN_ERR_DTYPE, std::string(what) + " must be int64, got " + dtype_str(m.dtype));
}

}  // namespace

// paged_kv_write_(pool (NB, 2*Hkv, BS, D), kv (T, 2*Hkv, D), slots (T) int64) -> ().
// kv keeps its dtype (the pool is written in place: kv must already be in the
// pool's dtype).  The pool's layout (contiguous) is checked by the kernels.
GN_DEFINE_INFER(paged_kv_write) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& pool = a.at(0);
  const gn_tensor_meta& kv = a.at(1);
  const gn_tensor_meta& slots = a.at(2);
  check_pool(pool);
  if (kv.ndim != 3) fail(GN_ERR_SHAPE, "kv must be 3-D (T, 2*Hkv, D), got shape " + shape_str(kv));
  if (kv.shape[1] != pool.shape[1] || kv.shape[2] != pool.shape[3])
    fail(GN_ERR_SHAPE, "kv shape " + shape_str(kv) + " must match the pool shape " + shape_str(pool) +
                           " in 2*Hkv and D (kv dims 1 and 2, pool dims 1 and 3)");
  if (kv.dtype != pool.dtype)
    fail(GN_ERR_DTYPE,
         std::string("kv dtype ") + dtype_str(kv.dtype) + " must equal the pool dtype " + dtype_str(pool.dtype));
  check_i64_vector(slots, "slots", kv.shape[0], "T = " + std::to_string(kv.shape[0]) + " (kv's dim 0)");
  a.set_outputs(pool.dtype, {});
}

// paged_attention(q (T, Hq, D), pool (NB, 2*Hkv, BS, D), block_tables (B, M)
// int32, seq_lens (B) int64, query_start (B+1) int64) -> out (T, Hq, D) of q's
// dtype.  q and the pool share one floating dtype (no cast: a cast of the pool
// would copy the whole cache on every call).
GN_DEFINE_INFER(paged_attention) {
  a.need_inputs(5, 5);
  const gn_tensor_meta& q = a.at(0);
  const gn_tensor_meta& pool = a.at(1);
  const gn_tensor_meta& tables = a.at(2);
  const gn_tensor_meta& seq_lens = a.at(3);
  const gn_tensor_meta& query_start = a.at(4);
  if (q.ndim != 3) fail(GN_ERR_SHAPE, "q must be 3-D (T, Hq, D), got shape " + shape_str(q));
  need_float(q, "q");
  check_pool(pool);
  if (pool.dtype != q.dtype)
    fail(GN_ERR_DTYPE,
         std::string("pool dtype ") + dtype_str(pool.dtype) + " must equal the q dtype " + dtype_str(q.dtype));
  if (q.shape[2] != pool.shape[3])
    fail(GN_ERR_SHAPE, "q and pool head dims differ: q " + shape_str(q) + ", pool " + shape_str(pool));
  const int64_t hq = q.shape[1], hkv = pool.shape[1] / 2;
  if (hq % hkv != 0)
    fail(GN_ERR_SHAPE, "query heads " + std::to_string(hq) + " must be a multiple of key/value heads " +
                           std::to_string(hkv) + " (q " + shape_str(q) + ", pool " + shape_str(pool) + ")");
  if (tables.ndim != 2) fail(GN_ERR_SHAPE, "block_tables must be 2-D (B, M), got shape " + shape_str(tables));
  if (tables.dtype != GN_I32)
    fail(GN_ERR_DTYPE, std::string("block_tables must be int32, got ") + dtype_str(tables.dtype));
  const int64_t B = tables.shape[0];
  check_i64_vector(seq_lens, "seq_lens", B, "B = " + std::to_string(B) + " (block_tables' dim 0)");
  check_i64_vector(query_start, "query_start", B + 1, "B+1 = " + std::to_string(B + 1));
  a.attr_float(0);  // scale: nan = 1/sqrt(D); any value allowed
  a.set_outputs(q.dtype, {like(q, q.dtype)});
}

}  // namespace genesis::core
