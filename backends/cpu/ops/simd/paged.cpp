// backends/cpu/ops/simd/paged.cpp - the paged KV-cache ops of a serving engine
// in C++ on the backend's thread pool:
//   paged_kv_write_(pool (NB, 2*Hkv, BS, D) dense, kv (T, 2*Hkv, D) any
//     strides, slots (T) int64): one (t, head) row of D elements per item, a
//     memcpy when kv's last dim is dense; slots outside [0, NB*BS) are skipped.
//     No GN_KERNEL_CONTIGUOUS: the core would otherwise write a dense copy of
//     a strided pool, not the pool, and kv is read through its strides.
//   paged_attention(q (T, Hq, D), pool, block_tables (B, M) int32, seq_lens
//     (B), query_start (B+1)) -> out (T, Hq, D), dense (GN_KERNEL_CONTIGUOUS).
//     One chunk per (sequence, kv head, run of up to kQueries queries): the
//     chunk walks the sequence's blocks once, widens each block's keys and
//     values to the accumulation type once, and serves every query of the run
//     and every query head of the GQA group from them (a decode step reads
//     each K/V block once per group).  Online softmax per block in f32 (f64
//     for f64): scores of the block, one rescale of the running sum and
//     output, then the block's weighted values.  Metadata a device kernel
//     cannot refuse is masked, never followed out of the pool: a block id
//     outside [0, NB) or a position past the table drops those positions, a
//     sequence whose query range lies outside [0, T], overlaps an earlier
//     sequence's or exceeds its length is skipped; rows that no sequence
//     computes are 0.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

std::string dims_str(const int64_t* d, int32_t n) {
  std::string r = "(";
  for (int32_t i = 0; i < n; ++i) r += (i ? ", " : "") + std::to_string(d[i]);
  return r + (n == 1 ? ",)" : ")");
}

// ---------------------------------------------------------------- paged_kv_write_

GN_SDK_KERNEL(paged_kv_write_kernel) {
  const char* op = "paged_kv_write_";
  if (n_in != 3) GN_UNSUPPORTED("[paged_kv_write_] arity");
  const gn_tensor_view &pool = in[0], &kv = in[1], &slots = in[2];
  // Shapes and dtypes were checked by inference; the layout only a kernel sees.
  if (!gn_view_is_contiguous(&pool))
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "pool must be contiguous (it is written in place), got shape " + dims_str(pool.shape, pool.ndim) +
                " with strides " + dims_str(pool.strides, pool.ndim));
  if (pool.ndim != 4 || kv.ndim != 3 || slots.ndim != 1 || slots.dtype != GN_I64 || kv.dtype != pool.dtype ||
      kv.shape[1] != pool.shape[1] || kv.shape[2] != pool.shape[3] || slots.shape[0] != kv.shape[0])
    GN_UNSUPPORTED("[paged_kv_write_] these shapes/dtypes");
  const int64_t NB = pool.shape[0], H2 = pool.shape[1], BS = pool.shape[2], D = pool.shape[3], T = kv.shape[0];
  if (BS == 0) return;  // no slot exists
  const int64_t es = (int64_t)gn_dtype_size(pool.dtype);
  char* dst = (char*)data_of(pool);
  const char* src = (const char*)data_of(kv);
  const int64_t* sp = (const int64_t*)data_of(slots);
  const int64_t ss = slots.strides[0], kt = kv.strides[0], kh = kv.strides[1], kd = kv.strides[2];
  parallel_for(T * H2, D, [&](int64_t row) {
    const int64_t t = row / H2, h = row % H2;
    const int64_t s = sp[t * ss];
    if (s < 0 || s / BS >= NB) return;  // padding: s >= NB*BS, without overflow
    char* o = dst + ((((s / BS) * H2 + h) * BS + s % BS) * D) * es;
    const char* k = src + (t * kt + h * kh) * es;
    if (kd == 1 || D == 1) {
      copy_bytes(o, k, (size_t)(D * es));
      return;
    }
    for (int64_t d = 0; d < D; ++d) copy_bytes(o + d * es, k + d * kd * es, (size_t)es);
  });
}

// ---------------------------------------------------------------- paged_attention

// Queries per chunk of a prefill: enough to reuse each widened block many
// times, few enough that a long prompt still spreads over the threads.
constexpr int64_t kQueries = 16;

template <class T, class A>
inline A widen(const T& v) {
  if constexpr (std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>)
    return (A)to_f32(v);
  else
    return (A)v;
}

struct Paged {
  int64_t T, Hq, NB, Hkv, BS, D, B, M;
};

struct Chunk {
  int64_t b, g, i0, i1;  // sequence, kv head, its queries [i0, i1)
};

// One chunk: queries [i0, i1) of sequence b (n of them, length L, rows from
// lo), query heads g*G .. g*G+G-1.
template <class T, class A>
void attend_chunk(const Paged& p, const Chunk& c, const T* q, const T* pool, const int32_t* table, int64_t lo,
                  int64_t n, int64_t L, A scale, int64_t window, A softcap, T* out) {
  const int64_t G = p.Hq / p.Hkv, D = p.D, BS = p.BS, nq = c.i1 - c.i0, R = nq * G;
  std::vector<A> qb((size_t)(R * D)), acc((size_t)(R * D), A(0)), m((size_t)R, -std::numeric_limits<A>::infinity()),
      l((size_t)R, A(0)), kb((size_t)(BS * D)), vb((size_t)(BS * D)), s((size_t)BS);
  for (int64_t ii = 0; ii < nq; ++ii)
    for (int64_t hh = 0; hh < G; ++hh) {
      const T* qr = q + ((lo + c.i0 + ii) * p.Hq + c.g * G + hh) * D;
      A* qd = qb.data() + (ii * G + hh) * D;
      for (int64_t d = 0; d < D; ++d) qd[d] = widen<T, A>(qr[d]);
    }
  const int64_t first_pos = L - n + c.i0, last_pos = L - n + c.i1 - 1;
  // With a window, blocks wholly before the first query's window hold no key any query here sees.
  const int64_t j0 = window > 0 ? std::max<int64_t>(0, first_pos - window + 1) / BS : 0;
  for (int64_t j = j0; j * BS <= last_pos && j < p.M; ++j) {
    const int64_t blk = table[c.b * p.M + j];
    if (blk < 0 || blk >= p.NB) continue;  // masked: never read outside the pool
    const int64_t p0 = j * BS, rows = std::min(BS, last_pos + 1 - p0);
    const T* kp = pool + ((blk * 2 * p.Hkv + c.g) * BS) * D;
    const T* vp = pool + ((blk * 2 * p.Hkv + p.Hkv + c.g) * BS) * D;
    const A* k;
    const A* v;
    if constexpr (std::is_same_v<T, A>) {
      k = kp;
      v = vp;
    } else {
      for (int64_t i = 0; i < rows * D; ++i) {
        kb[(size_t)i] = widen<T, A>(kp[i]);
        vb[(size_t)i] = widen<T, A>(vp[i]);
      }
      k = kb.data();
      v = vb.data();
    }
    for (int64_t ii = 0; ii < nq; ++ii) {
      const int64_t pos = first_pos + ii, cnt = std::min(rows, pos - p0 + 1);
      // keys p0 + rr for rr in [rr0, cnt): at or before pos, and inside its window
      const int64_t rr0 = window > 0 ? std::max<int64_t>(0, pos - window + 1 - p0) : 0;
      if (cnt <= rr0) continue;  // the whole block lies after this query or before its window
      for (int64_t hh = 0; hh < G; ++hh) {
        const int64_t r = ii * G + hh;
        const A* qr = qb.data() + r * D;
        A mb = -std::numeric_limits<A>::infinity();
        for (int64_t rr = rr0; rr < cnt; ++rr) {
          const A* kr = k + rr * D;
          A dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          s[(size_t)rr] = softcap > 0 ? softcap * std::tanh(dot * scale / softcap) : dot * scale;
          mb = std::max(mb, s[(size_t)rr]);
        }
        if (!(mb > -std::numeric_limits<A>::infinity())) continue;  // nothing finite to add
        A* ar = acc.data() + r * D;
        const A m_new = std::max(m[(size_t)r], mb);
        if (m_new != m[(size_t)r]) {
          const A alpha = std::exp(m[(size_t)r] - m_new);  // 0 on the first block
          l[(size_t)r] *= alpha;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) ar[d] *= alpha;
          m[(size_t)r] = m_new;
        }
        for (int64_t rr = rr0; rr < cnt; ++rr) {
          const A w = std::exp(s[(size_t)rr] - m_new);
          l[(size_t)r] += w;
          const A* vr = v + rr * D;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) ar[d] += w * vr[d];
        }
      }
    }
  }
  for (int64_t ii = 0; ii < nq; ++ii)
    for (int64_t hh = 0; hh < G; ++hh) {
      const int64_t r = ii * G + hh;
      const A inv = l[(size_t)r] > 0 ? A(1) / l[(size_t)r] : A(0);  // every position masked: 0
      T* o = out + ((lo + c.i0 + ii) * p.Hq + c.g * G + hh) * D;
      const A* ar = acc.data() + r * D;
      for (int64_t d = 0; d < D; ++d) o[d] = to_t<T>((double)(ar[d] * inv));
    }
}

template <class T>
void paged_attention_typed(const Paged& p, const T* q, const T* pool, const int32_t* table, const int64_t* lens,
                           const int64_t* qs, T* out, double scale_d, int64_t window, double softcap_d) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  set_bytes(out, 0, (size_t)(p.T * p.Hq * p.D) * sizeof(T));  // rows of no sequence: +0 in every float dtype
  std::vector<Chunk> chunks;
  int64_t work = 0;
  int64_t covered = 0;  // rows below this belong to an earlier sequence: no two chunks write one row
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t lo = qs[b], hi = qs[b + 1], L = lens[b];
    if (lo < covered || hi <= lo || hi > p.T || hi - lo > L) continue;  // nothing to compute, or not a valid range
    covered = hi;
    for (int64_t g = 0; g < p.Hkv; ++g)
      for (int64_t i0 = 0; i0 < hi - lo; i0 += kQueries) {
        chunks.push_back({b, g, i0, std::min(hi - lo, i0 + kQueries)});
        work += (chunks.back().i1 - i0) * (p.Hq / p.Hkv) * L * p.D;
      }
  }
  const A scale = (A)scale_d, softcap = (A)softcap_d;
  auto run = [&](int64_t ci) {
    const Chunk& c = chunks[(size_t)ci];
    const int64_t lo = qs[c.b];
    attend_chunk<T, A>(p, c, q, pool, table, lo, qs[c.b + 1] - lo, lens[c.b], scale, window, softcap, out);
  };
  const int64_t nc = (int64_t)chunks.size();
  if (nc <= 1 || num_threads() == 1 || work <= kSerialWork) {
    for (int64_t ci = 0; ci < nc; ++ci) run(ci);
    return;
  }
  parallel_chunks(nc, run);
}

GN_SDK_KERNEL(paged_attention_kernel) {
  if (n_in != 5 || n_out != 1) GN_UNSUPPORTED("[paged_attention] arity");
  const gn_tensor_view &q = in[0], &pool = in[1], &tables = in[2], &lens = in[3], &qs = in[4], &o = out[0];
  if (q.ndim != 3 || pool.ndim != 4 || tables.ndim != 2 || lens.ndim != 1 || qs.ndim != 1 || o.ndim != 3)
    GN_UNSUPPORTED("[paged_attention] ranks");
  const Paged p{q.shape[0],    q.shape[1], pool.shape[0],   pool.shape[1] / 2,
                pool.shape[2], q.shape[2], tables.shape[0], tables.shape[1]};
  if (!is_float_dt(q.dtype) || pool.dtype != q.dtype || o.dtype != q.dtype || tables.dtype != GN_I32 ||
      lens.dtype != GN_I64 || qs.dtype != GN_I64 || pool.shape[1] % 2 != 0 || p.Hkv == 0 || p.Hq % p.Hkv != 0 ||
      pool.shape[3] != p.D || lens.shape[0] != p.B || qs.shape[0] != p.B + 1 || o.shape[0] != p.T ||
      o.shape[1] != p.Hq || o.shape[2] != p.D)
    GN_UNSUPPORTED("[paged_attention] these shapes/dtypes");
  double scale = attr_d(attrs, n_attrs, 0, std::numeric_limits<double>::quiet_NaN());
  if (std::isnan(scale)) scale = 1.0 / std::sqrt((double)p.D);
  const int64_t window = attr_i(attrs, n_attrs, 1, 0);
  const double softcap = attr_d(attrs, n_attrs, 2, 0.0);
  if (window < 0 || !(softcap >= 0)) GN_UNSUPPORTED("[paged_attention] a negative window or softcap");
  dispatch_float_h(q.dtype, [&](auto t) {
    using T = decltype(t);
    paged_attention_typed<T>(p, (const T*)data_of(q), (const T*)data_of(pool), (const int32_t*)data_of(tables),
                             (const int64_t*)data_of(lens), (const int64_t*)data_of(qs), (T*)data_of(o), scale, window,
                             softcap);
  });
}

}  // namespace

void register_paged(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("paged_kv_write_", dtypes, paged_kv_write_kernel);
  r.kernel("paged_attention", dtypes, paged_attention_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
