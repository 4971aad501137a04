// backends/cuda/ops/paged.cu - the paged KV-cache ops of a serving engine.
//
// The pool (NB, 2*Hkv, BS, D) of a layer holds BS positions per block: kv head
// g's keys in pool[:, g], its values in pool[:, Hkv + g].  Position p of
// sequence b lives in block block_tables[b, p / BS] at row p % BS.
//
// paged_kv_write_(pool dense, kv (T, 2*Hkv, D) any strides, slots (T) int64):
//   one thread per 16-byte chunk of a (t, h) row (per element when kv's last
//   dim is strided or rows are not 16-byte aligned), grid-stride over all
//   T*2*Hkv rows, as kv_cache_write_ (llm.cu).  slots are read on the device:
//   no sync, no allocation, a captured graph replays with the slots of then.
//   A slot outside [0, NB*BS) is skipped (padding).  Raw bits are copied.
//
// paged_attention(q (T, Hq, D), pool, block_tables (B, M) int32, seq_lens (B)
// int64, query_start (B+1) int64) -> out (T, Hq, D), any strides but the
// pool's last dim on the fast path.  Query row t belongs to the last sequence
// b with query_start[b] <= t when t < query_start[b+1] (query_start is
// non-decreasing; a binary search on the device), at position
// seq_lens[b] - n_b + (t - query_start[b]); it sees the keys 0 .. position.
// Rows of no sequence see no key and come out 0.  Block ids outside [0, NB)
// and positions beyond the table (M*BS) are masked: no read outside the pool
// or the table ever happens, whatever the metadata holds.
//
//   fast path (bf16/f16/f32, D in {32, 64, 128, 256}, the pool's rows dense
//   and 16-byte aligned): one CTA per (query row t, kv head g, row block,
//   key split).  The CTA holds the query heads of the group (up to kRows of
//   them, f32 in shared memory), so each K/V row is read once for the whole
//   group.  Its 4 warps take 32 consecutive keys at a time in turn: lane j
//   scores key j against every query head (16-byte K loads, no shuffles),
//   the warp updates its online softmax (log2 domain, f32), then P @ V with
//   each lane owning D/32 contiguous columns (coalesced V rows).  The warps'
//   states merge in warp order at the end.  When T*Hkv CTAs would not fill
//   the GPU (decode at a small batch), every row's keys are cut into nsplit
//   chunks of a multiple of 32 keys (cut on the device, from the row's own
//   length: the host knows no length), partial (o, m, l) go to the call's
//   workspace and paged_combine merges them, one CTA per (t, query head).
//   Decode (n_b == 1) and prefill chunks (n_b > 1, a cached prefix) take the
//   same kernel: a prefill row is one more CTA that reads its prefix from L2.
//   No atomics: every sum runs in a fixed order, a replay gives the same bits.
//
//   generic path (f64, other head dims up to 512, unaligned pools): one warp
//   per (t, query head), online softmax in f32 (f64 for f64).  Correct
//   everywhere, not fast.
#include <algorithm>
#include <cmath>

#include "common.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

std::string strides_str(const gn_tensor_view& v) {
  std::string r = "(";
  for (int32_t d = 0; d < v.ndim; ++d) r += (d ? ", " : "") + std::to_string(v.strides[d]);
  return r + (v.ndim == 1 ? ",)" : ")");
}

// Stride of dim d, 0 when the dim has one element (its stride never matters).
int64_t stride_or0(const gn_tensor_view& v, int d) { return v.shape[d] == 1 ? 0 : v.strides[d]; }

// ----------------------------------------------------------------------------
// paged_kv_write_

struct KvStrides {
  int64_t t, h, d;  // elements
};

// n = T*H2*(D/V) chunks of V elements; chunk i is element group j of row
// (t, h) = i / (D/V).  The row goes to pool[s / BS, h, s % BS, :], s = slots[t].
template <class E, int V>
__global__ void paged_kv_write_kernel(E* pool, const E* kv, const int64_t* __restrict__ slots, int64_t slot_stride,
                                      int64_t H2, int64_t BS, int64_t D, int64_t n_slots, KvStrides ks, int64_t n) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t nv = D / V;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = i % nv, row = i / nv;
    const int64_t h = row % H2, t = row / H2;
    const int64_t s = slots[t * slot_stride];
    if (s < 0 || s >= n_slots) continue;  // padding
    const int64_t blk = s / BS, r = s - blk * BS;
    E* o = pool + ((blk * H2 + h) * BS + r) * D + j * V;
    const E* src = kv + t * ks.t + h * ks.h + j * V * ks.d;
    if constexpr (V > 1)
      store_vec<E, V>(o, load_vec<E, V>(src));
    else
      *o = *src;
  }
}

template <class E>
void launch_paged_kv_write(const gn_kernel_ctx* ctx, const gn_tensor_view& pool, const gn_tensor_view& kv,
                           const gn_tensor_view& slots) {
  const int64_t NB = pool.shape[0], H2 = pool.shape[1], BS = pool.shape[2], D = pool.shape[3], T = kv.shape[0];
  const KvStrides ks{stride_or0(kv, 0), stride_or0(kv, 1), kv.strides[2]};
  const int64_t rows = T * H2;
  if (rows == 0 || D == 0 || NB == 0 || BS == 0) return;
  E* p = data_ptr<E>(pool);
  const E* s = data_ptr<const E>(kv);
  const int64_t* sl = data_ptr<const int64_t>(slots);
  constexpr int VW = 16 / (int)sizeof(E);
  // 16-byte chunks: kv's last dim dense, every row start of both 16-byte aligned.
  const bool vec = ks.d == 1 && D % VW == 0 && ks.t % VW == 0 && ks.h % VW == 0 && aligned16(p) && aligned16(s);
  const int64_t ss = stride_or0(slots, 0);
  if (vec) {
    const int64_t n = rows * (D / VW);
    launch_pdl<paged_kv_write_kernel<E, VW>>(blocks_for(n), kThreads, 0, stream(ctx), p, s, sl, ss, H2, BS, D, NB * BS,
                                             ks, n);
  } else {
    const int64_t n = rows * D;
    launch_pdl<paged_kv_write_kernel<E, 1>>(blocks_for(n), kThreads, 0, stream(ctx), p, s, sl, ss, H2, BS, D, NB * BS,
                                            ks, n);
  }
  GN_CUDA_CHECK_LAUNCH();
}

// in: pool, kv, slots; no outputs.  Inference checked shapes and dtypes; they are checked again here (cheap).
GN_SDK_KERNEL(paged_kv_write_op) {
  const char* op = "paged_kv_write_";
  need_io(op, n_in, 3, n_out, 0);
  DeviceGuard dg(ctx);
  const gn_tensor_view &pool = in[0], &kv = in[1], &slots = in[2];
  if (pool.ndim != 4 || kv.ndim != 3 || slots.ndim != 1 || kv.shape[1] != pool.shape[1] ||
      kv.shape[2] != pool.shape[3] || slots.shape[0] != kv.shape[0])
    fail_op(GN_ERR_SHAPE, op,
            "expected pool (NB, 2*Hkv, BS, D), kv (T, 2*Hkv, D) and slots (T), got " + shape_str(pool) + ", " +
                shape_str(kv) + " and " + shape_str(slots));
  if (!is_contiguous(pool))
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "pool must be contiguous (it is written in place), got shape " + shape_str(pool) + " with strides " +
                strides_str(pool));
  if (slots.dtype != GN_I64 || kv.dtype != pool.dtype)
    fail_op(GN_ERR_DTYPE, op,
            std::string("expected int64 slots and kv of the pool's dtype, got ") + gn_dtype_name(slots.dtype) +
                " and " + gn_dtype_name(kv.dtype));
  switch (gn_dtype_size(pool.dtype)) {
    case 2: launch_paged_kv_write<nn::RawOf<2>::type>(ctx, pool, kv, slots); break;
    case 4: launch_paged_kv_write<nn::RawOf<4>::type>(ctx, pool, kv, slots); break;
    case 8: launch_paged_kv_write<nn::RawOf<8>::type>(ctx, pool, kv, slots); break;
    default: fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(pool.dtype) + " is not supported on cuda");
  }
}

// ----------------------------------------------------------------------------
// paged_attention: shared pieces

constexpr int kWarps = 4;  // fast path: warps per CTA
constexpr int kThreadsFast = 32 * kWarps;
constexpr int kRows = 8;         // fast path: query heads per CTA at most (more: several row blocks)
constexpr int kMaxSplits = 64;   // key chunks per row at most
constexpr int kMaxPerLane = 16;  // generic path: head dims up to 32 * 16 = 512
constexpr int kGenericWarps = 8;

struct PagedParams {
  const void* q;                // (T, Hq, D), strides sq
  const void* pool;             // (NB, 2*Hkv, BS, D), strides sp
  const int32_t* tables;        // (B, M), strides stab
  const int64_t* lens;          // (B), stride slen
  const int64_t* qstart;        // (B+1), stride sqs
  void* out;                    // (T, Hq, D), strides so
  float* part_o;                // (T*Hq, nsplit, D) f32 workspace (nsplit > 1)
  float* part_ml;               // (T*Hq, nsplit, 2): max (log2 domain) and sum of each chunk
  int64_t sq[3], so[3], sp[4];  // element strides
  int64_t stab[2], slen, sqs;
  int64_t T, NB, M, B, BS, D, Hq, Hkv, G;  // G = Hq / Hkv
  int64_t max_keys;                        // M * BS: positions the table can address
  int rows_per_cta, row_blocks, nsplit;
  float scale_log2;  // scale * log2(e), fast path
  double scale;      // generic path
  int64_t window;    // > 0: a query at position i sees keys j > i - window only
  double softcap;    // > 0: scaled scores s -> softcap * tanh(s / softcap)
};

// The keys row t sees (its position + 1, 0 when no sequence covers t or the
// metadata makes no sense), and its sequence in b (valid when the result > 0).
// query_start is non-decreasing: the last b with query_start[b] <= t covers t
// when t < query_start[b+1].
__device__ __forceinline__ int64_t row_keys(const PagedParams& p, int64_t t, int64_t& b) {
  int64_t lo = 0, hi = p.B;  // first index in [0, B) whose query_start exceeds t
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (p.qstart[mid * p.sqs] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  b = lo - 1;
  if (b < 0) return 0;
  const int64_t q0 = p.qstart[b * p.sqs], q1 = p.qstart[(b + 1) * p.sqs];
  if (t < q0 || t >= q1) return 0;
  const int64_t pos = p.lens[b * p.slen] - (q1 - q0) + (t - q0);
  if (pos < 0) return 0;
  return pos + 1 < p.max_keys ? pos + 1 : p.max_keys;
}

template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// 32-bit words holding elements of T (one float or two 16-bit values each) -> f32
template <class T, int NW>
__device__ __forceinline__ void words_to_f32(const uint32_t (&w)[NW], float* f) {
#pragma unroll
  for (int i = 0; i < NW; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      f[i] = __uint_as_float(w[i]);
    } else {
      const float2 x = flash::unpack2<T>(w[i]);
      f[2 * i] = x.x;
      f[2 * i + 1] = x.y;
    }
  }
}

// 16 bytes of T at p (16-byte aligned, read-only) -> 16 / sizeof(T) floats
template <class T>
__device__ __forceinline__ void load16_f32(const T* p, float* f) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
  words_to_f32<T, 4>(w, f);
}

// N consecutive elements of T at p (aligned to N * sizeof(T) bytes, or 16) -> f32
template <class T, int N>
__device__ __forceinline__ void load_cols(const T* p, float (&f)[N]) {
  constexpr int kBytes = N * (int)sizeof(T);
  if constexpr (kBytes >= 16) {
    constexpr int E = 16 / (int)sizeof(T);
#pragma unroll
    for (int v = 0; v < N / E; ++v) load16_f32<T>(p + v * E, f + v * E);
  } else if constexpr (kBytes == 8) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    const uint32_t w[2] = {u.x, u.y};
    words_to_f32<T, 2>(w, f);
  } else if constexpr (kBytes == 4) {
    const uint32_t w[1] = {__ldg(reinterpret_cast<const unsigned int*>(p))};
    words_to_f32<T, 1>(w, f);
  } else {
    static_assert(kBytes == 2, "load_cols: a 16-bit element");
    f[0] = convert<float>(p[0]);
  }
}

// ----------------------------------------------------------------------------
// fast path

// Shared memory of a fast-path CTA (bytes): q rows, per-warp probabilities,
// per-warp o and (m, l) for the final merge, per-warp V row offsets.
inline size_t fast_smem_bytes(int64_t D) {
  return (size_t)(kRows * D + kWarps * kRows * 32 + kWarps * kRows * D + kWarps * kRows * 2) * sizeof(float) +
         (size_t)kWarps * 32 * sizeof(int64_t);
}

// grid (T*Hkv*row_blocks, nsplit), kThreadsFast threads.  NPL = D / 32 columns per lane.
template <class T, int NPL>
__global__ void __launch_bounds__(kThreadsFast) paged_fast_kernel(PagedParams p) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  constexpr int D = 32 * NPL;
  constexpr int E = 16 / (int)sizeof(T);  // elements per 16-byte vector
  constexpr int NV = D / E;               // 16-byte vectors per K row
  extern __shared__ __align__(16) unsigned char smem[];
  float* qs = reinterpret_cast<float*>(smem);  // (kRows, D) query heads of the CTA
  float* ps = qs + kRows * D;                  // (kWarps, kRows, 32) probabilities of a 32-key step
  float* os = ps + kWarps * kRows * 32;        // (kWarps, kRows, D) o of each warp
  float* mls = os + kWarps * kRows * D;        // (kWarps, kRows, 2) m and l of each warp
  int64_t* vos = reinterpret_cast<int64_t*>(mls + kWarps * kRows * 2);  // (kWarps, 32) V row offsets, -1 masked

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int rb = (int)(blockIdx.x % (unsigned)p.row_blocks);
  const int64_t tg = blockIdx.x / (unsigned)p.row_blocks;
  const int64_t g = tg % p.Hkv, t = tg / p.Hkv;
  const int split = blockIdx.y;
  const int r0 = rb * p.rows_per_cta;
  const int R = (int)min((int64_t)p.rows_per_cta, p.G - r0);  // query heads g*G + r0 .. + R-1
  const int64_t h0 = g * p.G + r0;

  int64_t b = 0;
  const int64_t nk = row_keys(p, t, b);
  // the row's keys [k_lo, nk) (a window keeps the last `window`), cut into nsplit chunks of a multiple of 32:
  // this split's [k_begin, k_end)
  const int64_t k_lo = p.window > 0 && nk > p.window ? nk - p.window : 0;
  int64_t chunk = (nk - k_lo + p.nsplit - 1) / p.nsplit;
  chunk = (chunk + 31) / 32 * 32;
  const int64_t k_begin = min(nk, k_lo + (int64_t)split * chunk), k_end = min(nk, k_begin + chunk);
  const float cap = (float)p.softcap, cap_log2 = (float)(p.softcap * 1.4426950408889634),
              scale_over_cap = p.softcap > 0 ? (float)(p.scale / p.softcap) : 0.f;

  for (int x = tid; x < R * D; x += kThreadsFast) {
    const int r = x / D, c = x % D;
    qs[x] = convert<float>(((const T*)p.q)[t * p.sq[0] + (h0 + r) * p.sq[1] + c * p.sq[2]]);
  }
  __syncthreads();

  float m[kRows], l[kRows], o[kRows][NPL];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int e = 0; e < NPL; ++e) o[r][e] = 0.f;
  }
  const T* pool = (const T*)p.pool;
  const int32_t* table = p.tables + b * p.stab[0];  // read only for keys < nk (then b is valid)
  float* pw = ps + warp * kRows * 32;
  int64_t* vw = vos + warp * 32;
  const int64_t k_off = g * p.sp[1], v_off = (p.Hkv + g) * p.sp[1];

  for (int64_t k0 = k_begin + warp * 32; k0 < k_end; k0 += kWarps * 32) {
    // ---- lane j: key k0 + j, its page, its score against every query head
    const int64_t k = k0 + lane;
    int64_t kro = -1, vro = -1;  // element offsets of the key's K and V rows, -1: masked
    if (k < k_end) {
      const int64_t blk = table[(k / p.BS) * p.stab[1]];
      if (blk >= 0 && blk < p.NB) {
        const int64_t base = blk * p.sp[0] + (k % p.BS) * p.sp[2];
        kro = base + k_off;
        vro = base + v_off;
      }
    }
    float s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) s[r] = 0.f;
    if (kro >= 0) {
      const T* kp = pool + kro;
#pragma unroll 4
      for (int v = 0; v < NV; ++v) {
        float kf[E];
        load16_f32<T>(kp + v * E, kf);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (r < R) {
            const float4* qv = reinterpret_cast<const float4*>(qs + r * D + v * E);
#pragma unroll
            for (int e4 = 0; e4 < E / 4; ++e4) {
              const float4 qq = qv[e4];
              s[r] += qq.x * kf[4 * e4] + qq.y * kf[4 * e4 + 1] + qq.z * kf[4 * e4 + 2] + qq.w * kf[4 * e4 + 3];
            }
          }
        }
      }
    }
    vw[lane] = vro;
    // ---- online softmax of each query head over the 32 keys (log2 domain)
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r < R) {
        const float sr = kro < 0     ? -INFINITY
                         : cap > 0.f ? cap_log2 * tanhf(s[r] * scale_over_cap)
                                     : s[r] * p.scale_log2;
        const float m_new = fmaxf(m[r], warp_max(sr));
        const float e = m_new == -INFINITY ? 0.f : exp2f(sr - m_new);
        const float alpha = m[r] == -INFINITY ? 0.f : exp2f(m[r] - m_new);
        l[r] = l[r] * alpha + warp_sum(e);
        m[r] = m_new;
#pragma unroll
        for (int c = 0; c < NPL; ++c) o[r][c] *= alpha;
        pw[r * 32 + lane] = e;
      }
    }
    __syncwarp();
    // ---- o += P V: lane owns columns lane*NPL .. lane*NPL + NPL-1, four keys at a time
#pragma unroll 2
    for (int j0 = 0; j0 < 32; j0 += 4) {
      float vf[4][NPL];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int64_t vo = vw[j0 + u];
        if (vo >= 0) {
          load_cols<T, NPL>(pool + vo + lane * NPL, vf[u]);
        } else {
#pragma unroll
          for (int c = 0; c < NPL; ++c) vf[u][c] = 0.f;
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < R) {
          const float4 pp = *reinterpret_cast<const float4*>(pw + r * 32 + j0);
#pragma unroll
          for (int c = 0; c < NPL; ++c)
            o[r][c] += pp.x * vf[0][c] + pp.y * vf[1][c] + pp.z * vf[2][c] + pp.w * vf[3][c];
        }
      }
    }
    __syncwarp();  // pw and vw are rewritten by the next step
  }

  // ---- the warps' states -> shared memory, merged in warp order
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r < R) {
      if (lane == 0) {
        mls[(warp * kRows + r) * 2] = m[r];
        mls[(warp * kRows + r) * 2 + 1] = l[r];
      }
#pragma unroll
      for (int c = 0; c < NPL; ++c) os[(warp * kRows + r) * D + lane * NPL + c] = o[r][c];
    }
  }
  __syncthreads();
  for (int x = tid; x < R * D; x += kThreadsFast) {
    const int r = x / D, c = x % D;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, mls[(w * kRows + r) * 2]);
    float L = 0.f, acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float mw = mls[(w * kRows + r) * 2];
      const float wt = mw == -INFINITY ? 0.f : exp2f(mw - M);
      L += wt * mls[(w * kRows + r) * 2 + 1];
      acc += wt * os[(w * kRows + r) * D + c];
    }
    const int64_t h = h0 + r;
    if (p.nsplit == 1) {
      ((T*)p.out)[t * p.so[0] + h * p.so[1] + c * p.so[2]] = convert<T>(L > 0.f ? acc / L : 0.f);
    } else {
      const int64_t slot = (t * p.Hq + h) * p.nsplit + split;
      p.part_o[slot * D + c] = acc;
      if (c == 0) {
        p.part_ml[slot * 2] = M;
        p.part_ml[slot * 2 + 1] = L;
      }
    }
  }
}

// Merge the nsplit chunks of one (t, query head) per CTA of D threads:
// w_s = 2^(m_s - max m), out = sum w_s o_s / sum w_s l_s, sums in chunk order.
template <class T>
__global__ void __launch_bounds__(256) paged_combine_kernel(PagedParams p) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  __shared__ float w_s[kMaxSplits];
  __shared__ float l_s;
  const int64_t row = blockIdx.x;  // t * Hq + h
  const int ns = p.nsplit;
  const float* ml = p.part_ml + row * ns * 2;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float M = -INFINITY;
    for (int s = lane; s < ns; s += 32) M = fmaxf(M, ml[2 * s]);
    M = warp_max(M);
    float L = 0.f;
    for (int s = lane; s < ns; s += 32) {
      const float m = ml[2 * s];
      const float w = m == -INFINITY ? 0.f : exp2f(m - M);
      w_s[s] = w;
      L += w * ml[2 * s + 1];
    }
    L = warp_sum(L);
    if (lane == 0) l_s = L;
  }
  __syncthreads();
  const float L = l_s, inv = L > 0.f ? 1.f / L : 0.f;
  const float* po = p.part_o + row * ns * p.D;
  const int64_t t = row / p.Hq, h = row % p.Hq;
  T* o = (T*)p.out + t * p.so[0] + h * p.so[1];
  for (int64_t c = threadIdx.x; c < p.D; c += blockDim.x) {
    float acc = 0.f;
    for (int s = 0; s < ns; ++s) acc += w_s[s] * po[s * p.D + c];
    o[c * p.so[2]] = convert<T>(acc * inv);
  }
}

// ----------------------------------------------------------------------------
// generic path: one warp per (t, query head), lane c owns columns c, c+32, ...

__device__ __forceinline__ float gexp(float x) { return __expf(x); }
__device__ __forceinline__ double gexp(double x) { return exp(x); }

template <class T, class A>
__global__ void paged_generic_kernel(PagedParams p) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * kGenericWarps + threadIdx.x / 32;
  if (row >= p.T * p.Hq) return;  // the whole warp
  const int64_t t = row / p.Hq, h = row % p.Hq, g = h / p.G, D = p.D;
  int64_t b = 0;
  const int64_t nk = row_keys(p, t, b);
  const T* qp = (const T*)p.q + t * p.sq[0] + h * p.sq[1];
  A qr[kMaxPerLane], o[kMaxPerLane];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    qr[e] = c < D ? convert<A>(qp[c * p.sq[2]]) : A(0);
    o[e] = 0;
  }
  const T* pool = (const T*)p.pool;
  const int32_t* table = p.tables + b * p.stab[0];  // read only for keys < nk
  const A scale = (A)p.scale, cap = (A)p.softcap;
  A m = -INFINITY, l = 0;
  for (int64_t k = p.window > 0 && nk > p.window ? nk - p.window : 0; k < nk; ++k) {
    const int64_t blk = table[(k / p.BS) * p.stab[1]];
    if (blk < 0 || blk >= p.NB) continue;  // masked (same value in every lane)
    const int64_t base = blk * p.sp[0] + (k % p.BS) * p.sp[2];
    const T* kp = pool + base + g * p.sp[1];
    const T* vp = pool + base + (p.Hkv + g) * p.sp[1];
    A dot = 0;
#pragma unroll
    for (int e = 0; e < kMaxPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      if (c < D) dot += qr[e] * convert<A>(kp[c * p.sp[3]]);
    }
    const A s = cap > 0 ? cap * tanh(warp_sum(dot) * scale / cap) : warp_sum(dot) * scale;
    const A mn = s > m ? s : m;
    if (mn == -INFINITY) continue;  // nothing kept yet (a -inf score adds 0)
    const A alpha = m == -INFINITY ? A(0) : gexp(m - mn), pk = gexp(s - mn);
    l = l * alpha + pk;
#pragma unroll
    for (int e = 0; e < kMaxPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      if (c < D) o[e] = o[e] * alpha + pk * convert<A>(vp[c * p.sp[3]]);
    }
    m = mn;
  }
  T* op = (T*)p.out + t * p.so[0] + h * p.so[1];
  const A inv = l > 0 ? A(1) / l : A(0);
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < D) op[c * p.so[2]] = convert<T>(o[e] * inv);
  }
}

// ----------------------------------------------------------------------------
// paged_attention: host side

// The fast path's pool: rows of D dense and 16-byte aligned (every stride a whole number of 16-byte vectors).
bool pool_rows_ok(const gn_tensor_view& pool, int64_t es) {
  const int64_t e = 16 / es;
  if (pool.strides[3] != 1 && pool.shape[3] != 1) return false;
  for (int d = 0; d < 3; ++d)
    if (stride_or0(pool, d) % e != 0) return false;
  return aligned16(gn_view_ptr(&pool));
}

template <class T>
void launch_fast(const gn_kernel_ctx* ctx, const PagedParams& p, size_t smem, dim3 grid) {
  cudaStream_t st = stream(ctx);
  switch (p.D) {
    case 32: launch_pdl<paged_fast_kernel<T, 1>>(grid, kThreadsFast, smem, st, p); break;
    case 64: launch_pdl<paged_fast_kernel<T, 2>>(grid, kThreadsFast, smem, st, p); break;
    case 128: launch_pdl<paged_fast_kernel<T, 4>>(grid, kThreadsFast, smem, st, p); break;
    default: launch_pdl<paged_fast_kernel<T, 8>>(grid, kThreadsFast, smem, st, p); break;  // 256
  }
  if (p.nsplit > 1)
    launch_pdl<paged_combine_kernel<T>>((unsigned)(p.T * p.Hq), (unsigned)p.D, 0, st, p);  // D <= 256 threads
}

// in: q, pool, block_tables, seq_lens, query_start; out: out; attrs: scale.
GN_SDK_KERNEL(paged_attention_op) {
  const char* op = "paged_attention";
  need_io(op, n_in, 5, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &q = in[0], &pool = in[1], &tables = in[2], &lens = in[3], &qstart = in[4], &o = out[0];
  if (q.ndim != 3 || pool.ndim != 4 || tables.ndim != 2 || lens.ndim != 1 || qstart.ndim != 1 || o.ndim != 3)
    fail_op(GN_ERR_SHAPE, op,
            "expected q (T, Hq, D), pool (NB, 2*Hkv, BS, D), block_tables (B, M), seq_lens (B) and query_start "
            "(B+1), got " +
                shape_str(q) + ", " + shape_str(pool) + ", " + shape_str(tables) + ", " + shape_str(lens) + " and " +
                shape_str(qstart));
  PagedParams p{};
  p.T = q.shape[0];
  p.Hq = q.shape[1];
  p.D = q.shape[2];
  p.NB = pool.shape[0];
  p.Hkv = pool.shape[1] / 2;
  p.BS = pool.shape[2];
  p.B = tables.shape[0];
  p.M = tables.shape[1];
  if (pool.shape[1] <= 0 || pool.shape[1] % 2 != 0 || pool.shape[3] != p.D || p.Hq % p.Hkv != 0 ||
      lens.shape[0] != p.B || qstart.shape[0] != p.B + 1 || o.shape[0] != p.T || o.shape[1] != p.Hq ||
      o.shape[2] != p.D)
    fail_op(GN_ERR_SHAPE, op,
            "shapes do not agree: q " + shape_str(q) + ", pool " + shape_str(pool) + ", block_tables " +
                shape_str(tables) + ", seq_lens " + shape_str(lens) + ", query_start " + shape_str(qstart) + ", out " +
                shape_str(o));
  const int32_t dt = q.dtype;
  if (pool.dtype != dt || o.dtype != dt || tables.dtype != GN_I32 || lens.dtype != GN_I64 || qstart.dtype != GN_I64)
    fail_op(GN_ERR_DTYPE, op,
            std::string("expected q, pool and out of one dtype, int32 block_tables, int64 seq_lens and query_start, "
                        "got ") +
                gn_dtype_name(dt) + ", " + gn_dtype_name(pool.dtype) + ", " + gn_dtype_name(o.dtype) + ", " +
                gn_dtype_name(tables.dtype) + ", " + gn_dtype_name(lens.dtype) + " and " + gn_dtype_name(qstart.dtype));
  if (dt != GN_F32 && dt != GN_F16 && dt != GN_BF16 && dt != GN_F64)
    fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(dt) + " is not supported on cuda");
  if (p.T * p.Hq * p.D == 0) return;
  if (p.D > 32 * kMaxPerLane)
    fail_op(GN_ERR_UNSUPPORTED, op,
            "head dims above " + std::to_string(32 * kMaxPerLane) + " are not supported on cuda");
  p.G = p.Hq / p.Hkv;
  p.max_keys = p.M * p.BS;
  p.q = gn_view_ptr(&q);
  p.pool = gn_view_ptr(&pool);
  p.tables = data_ptr<const int32_t>(tables);
  p.lens = data_ptr<const int64_t>(lens);
  p.qstart = data_ptr<const int64_t>(qstart);
  p.out = gn_view_ptr(&o);
  for (int d = 0; d < 3; ++d) {
    p.sq[d] = stride_or0(q, d);
    p.so[d] = o.strides[d];
  }
  for (int d = 0; d < 4; ++d) p.sp[d] = stride_or0(pool, d);
  p.stab[0] = stride_or0(tables, 0);
  p.stab[1] = stride_or0(tables, 1);
  p.slen = stride_or0(lens, 0);
  p.sqs = stride_or0(qstart, 0);
  double scale = attr_float(op, attrs, n_attrs, 0);
  if (std::isnan(scale)) scale = 1.0 / std::sqrt((double)p.D);
  p.scale = scale;
  p.scale_log2 = (float)(scale * 1.4426950408889634);
  p.window = n_attrs > 1 ? attr_int(op, attrs, n_attrs, 1) : 0;
  p.softcap = n_attrs > 2 ? attr_float(op, attrs, n_attrs, 2) : 0.0;
  if (p.window < 0 || !(p.softcap >= 0))
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "window and softcap must be >= 0 (0: none)");

  const int64_t es = (int64_t)gn_dtype_size(dt);
  const bool fast_dtype = dt == GN_BF16 || dt == GN_F16 || dt == GN_F32;
  const bool fast_dim = p.D == 32 || p.D == 64 || p.D == 128 || p.D == 256;
  p.row_blocks = (int)((p.G + kRows - 1) / kRows);
  p.rows_per_cta = (int)((p.G + p.row_blocks - 1) / p.row_blocks);
  const int64_t ctas = p.T * p.Hkv * p.row_blocks;
  if (fast_dtype && fast_dim && pool_rows_ok(pool, es) && ctas < (int64_t(1) << 31) &&
      p.T * p.Hq < (int64_t(1) << 31)) {
    // key splits: about two CTAs per SM in all; none beyond the 32-key steps the table can hold
    const int64_t sms = sm_count(ctx);
    int64_t nsplit = 1;
    if (ctas < sms) nsplit = std::min<int64_t>({(2 * sms + ctas - 1) / ctas, kMaxSplits, (p.max_keys + 31) / 32});
    p.nsplit = (int)std::max<int64_t>(nsplit, 1);
    if (p.nsplit > 1) {
      // workspace from the call (capture-safe): partial o, then (m, l), per (row, chunk)
      const size_t rows = (size_t)(p.T * p.Hq), no = rows * p.nsplit * (size_t)p.D, nml = rows * p.nsplit * 2;
      float* ws = static_cast<float*>(workspace(ctx, (no + nml) * sizeof(float)));
      p.part_o = ws;
      p.part_ml = ws + no;
    }
    const dim3 grid((unsigned)ctas, (unsigned)p.nsplit);
    const size_t smem = fast_smem_bytes(p.D);
    if (dt == GN_BF16)
      launch_fast<__nv_bfloat16>(ctx, p, smem, grid);
    else if (dt == GN_F16)
      launch_fast<__half>(ctx, p, smem, grid);
    else
      launch_fast<float>(ctx, p, smem, grid);
    GN_CUDA_CHECK_LAUNCH();
    return;
  }
  const int64_t blocks = (p.T * p.Hq + kGenericWarps - 1) / kGenericWarps;
  if (blocks >= (int64_t(1) << 31)) fail_op(GN_ERR_UNSUPPORTED, op, "too many query rows for cuda");
  p.nsplit = 1;
  dispatch_float(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    launch_pdl<paged_generic_kernel<T, A>>((unsigned)blocks, 32 * kGenericWarps, 0, stream(ctx), p);
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(paged) {
  r.kernel("paged_kv_write_", kFloatDtypes, paged_kv_write_op);
  r.kernel("paged_attention", kFloatDtypes, paged_attention_op);
}

}  // namespace gn::cuda
