// backends/cuda/kernels/flash_fwd.cuh - flash attention forward (FlashAttention-2
// scheme) on tensor cores: mma.sync m16n8k16 bf16/f16 with f32 accumulation,
// ldmatrix from XOR-swizzled shared memory, K/V tiles double-buffered by cp.async.
//
// One CTA = NW warps = BM = 16*NW query rows of one (batch, query head); each warp
// owns 16 rows.  It streams BN = 64 keys at a time of the KV head h / (Hq/Hkv)
// (GQA reads the shared K/V directly, nothing is repeated), keeping per row the
// running max m (log2 units), the running sum l and the f32 output accumulator.
// Scores are S = scale * q.k; the running max is kept on the raw dot products
// and the exponentials are exp2(fma(dot, scale*log2(e), -max*scale*log2(e))).  Rows with no visible key write 0 and lse
// = -inf (flash-attn's choice).
#pragma once

#include <cfloat>

#include "flash_common.cuh"

namespace gn::cuda::flash {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// 2^x on the special-function unit (flush-to-zero; -inf gives 0).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The batch, query head, KV head and first row of the BM-row query block a CTA owns
// (heaviest causal tiles first, see block_coords).
struct QueryBlock {
  int b, h, hk, m0;
};
template <int BM>
__device__ __forceinline__ QueryBlock query_block(const Params& p) {
  int bh, m_block;
  block_coords((p.Sq + BM - 1) / BM, p.B * p.Hq, true, bh, m_block);
  const int h = bh % p.Hq;
  return {bh / p.Hq, h, h / (p.Hq / p.Hkv), m_block * BM};
}

// Key tiles of BN keys that query rows m0..m0+BM-1 can see: keys j < Sk and, causal,
// j <= i + off for the block's last row i.
template <int BM, int BN>
__device__ __forceinline__ int visible_key_tiles(const Params& p, int m0) {
  const int last_row = min(m0 + BM, p.Sq) - 1;
  int n_end = p.Sk;
  if (p.causal) n_end = max(0, min(p.Sk, last_row + p.causal_off + 1));
  return (n_end + BN - 1) / BN;
}

// Async copy of key/value tile `tile` (BN rows from tile * BN) into buffer `buf` of the
// double-buffered sK / sV.
template <int BN, int D, int NT, class T>
__device__ __forceinline__ void load_kv_async(T* sK, T* sV, const T* gk, const T* gv, const Params& p, int tile,
                                              int buf, int tid) {
  load_tile_async<BN, D, NT>(sK + buf * BN * D, gk, p.k_ss, tile * BN, p.Sk, tid);
  load_tile_async<BN, D, NT>(sV + buf * BN * D, gv, p.v_ss, tile * BN, p.Sk, tid);
}

// The key and value tiles of one pipeline step in shared memory.
template <class T>
struct KvTiles {
  const T* k;
  const T* v;
};

// Step t of the K/V pipeline: start tile t+1 into the other buffer, wait for tile t
// (committed one step earlier) and return it.
template <int BN, int D, int NT, class T>
__device__ __forceinline__ KvTiles<T> kv_pipeline_step(T* sK, T* sV, const T* gk, const T* gv, const Params& p, int t,
                                                       int n_tiles, int tid) {
  const int buf = t & 1;
  if (t + 1 < n_tiles) load_kv_async<BN, D, NT>(sK, sV, gk, gv, p, t + 1, buf ^ 1, tid);
  cp_async_commit();
  cp_async_wait<1>();
  __syncthreads();
  return {sK + buf * BN * D, sV + buf * BN * D};
}

// c[mt][j] and c[mt][j + 1] += a[mt] times the two 8-column B tiles one ldmatrix (.trans
// with kTrans) loads at addr, for each of the MT m-tiles: one B load feeds MT mma pairs.
template <class T, bool kTrans, int MT, int NJ>
__device__ __forceinline__ void mma_mtiles_x2(float (&c)[MT][NJ][4], int j, const uint32_t (&a)[MT][4], uint32_t addr) {
  uint32_t b0, b1, b2, b3;
  if constexpr (kTrans)
    ldsm_x4_t(b0, b1, b2, b3, addr);
  else
    ldsm_x4(b0, b1, b2, b3, addr);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    mma16816<T>(c[mt][j], a[mt], b0, b1);
    mma16816<T>(c[mt][j + 1], a[mt], b2, b3);
  }
}

// MT m-tiles (16 rows each) per warp: every K/V fragment read from shared memory
// feeds MT tensor-core ops (shared-memory bandwidth is the limit at MT = 1).
template <class T, int D, int NW, int MT, int BN>
__global__ void __launch_bounds__(NW * 32) flash_fwd_kernel(Params p) {
  static_assert(BN % 16 == 0 && D % 16 == 0, "tile shapes");
  constexpr int WR = 16 * MT, BM = WR * NW, NT = NW * 32;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // BM x D
  T* sK = sQ + BM * D;                     // 2 x BN x D
  T* sV = sK + 2 * BN * D;                 // 2 x BN x D

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const auto [b, h, hk, m0] = query_block<BM>(p);
  const T* gq = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh;
  const T* gk = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh;
  const T* gv = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh;
  T* go = static_cast<T*>(p.out) + b * p.o_sb + h * p.o_sh;
  float* glse = p.lse + ((int64_t)b * p.Hq + h) * p.Sq;

  const int n_tiles = visible_key_tiles<BM, BN>(p, m0);

  const int g = lane >> 2, t4 = lane & 3;
  const int wr0 = m0 + warp * WR;  // this warp's first row
  float o[MT][D / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m_run[mt][0] = m_run[mt][1] = -INFINITY, l_run[mt][0] = l_run[mt][1] = 0.f;
  const float sl2 = p.scale * kLog2e;

  if (n_tiles > 0) {
    load_tile_async<BM, D, NT>(sQ, gq, p.q_ss, m0, p.Sq, tid);
    load_kv_async<BN, D, NT>(sK, sV, gk, gv, p, 0, 0, tid);
    cp_async_commit();
  }
  for (int t = 0; t < n_tiles; ++t) {
    const KvTiles<T> kv = kv_pipeline_step<BN, D, NT>(sK, sV, gk, gv, p, t, n_tiles, tid);
    // S = Q K^T for this warp's WR rows x BN keys (Q fragments re-read from smem)
    float s[MT][BN / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qf[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        int row = warp * WR + mt * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
        ldsm_x4(qf[mt][0], qf[mt][1], qf[mt][2], qf[mt][3], smem_u32(sQ + swz<D>(row, col)));
      }
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        int key = j * 8 + (lane & 7) + ((lane >> 4) << 3), col = kk * 16 + ((lane >> 3) & 1) * 8;
        mma_mtiles_x2<T, false>(s, j, qf, smem_u32(kv.k + swz<D>(key, col)));
      }
    }
    // mask keys past the end or above the causal diagonal (raw scores; the scale
    // is applied inside the exponent, one FFMA per element)
    const int n0 = t * BN;
    const bool need_mask = n0 + BN > p.Sk || (p.causal && n0 + BN - 1 > wr0 + p.causal_off);
    if (need_mask) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            int key = n0 + j * 8 + 2 * t4 + (e & 1);
            int row = wr0 + mt * 16 + g + (e >> 1) * 8;
            if (key >= p.Sk || (p.causal && key > row + p.causal_off)) s[mt][j][e] = -INFINITY;
          }
    }
    // online softmax, rows g (e = 0,1) and g+8 (e = 2,3) of each m-tile
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = m_run[mt][r];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * r], s[mt][j][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mu = mx == -INFINITY ? 0.f : mx * sl2;  // log2 units
        const float alpha = ex2(m_run[mt][r] * sl2 - mu);
        m_run[mt][r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          s[mt][j][2 * r] = ex2(fmaf(s[mt][j][2 * r], sl2, -mu));
          s[mt][j][2 * r + 1] = ex2(fmaf(s[mt][j][2 * r + 1], sl2, -mu));
          sum += s[mt][j][2 * r] + s[mt][j][2 * r + 1];
        }
        l_run[mt][r] = l_run[mt][r] * alpha + sum;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          o[mt][j][2 * r] *= alpha;
          o[mt][j][2 * r + 1] *= alpha;
        }
      }
      // O += P V (P straight from the accumulators, see flash_common.cuh)
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int j = 0; j < D / 8; j += 2) {
        int key = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), col = j * 8 + (lane >> 4) * 8;
        mma_mtiles_x2<T, true>(o, j, a, smem_u32(kv.v + swz<D>(key, col)));
      }
    }
    __syncthreads();  // this buffer is refilled two iterations on
  }
  // normalise and write out / lse
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int row = wr0 + mt * 16 + g + r * 8;
      if (row >= p.Sq) continue;
      const float inv = l > 0.f ? 1.f / l : 0.f;
      T* orow = go + row * p.o_ss;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(orow + j * 8 + 2 * t4) =
            pack2<T>(o[mt][j][2 * r] * inv, o[mt][j][2 * r + 1] * inv);
      if (t4 == 0) glse[row] = l > 0.f ? m_run[mt][r] * p.scale + logf(l) : -INFINITY;
    }
}

template <int D, int NW, int MT, int BN>
constexpr int fwd_smem_bytes() {
  return (16 * MT * NW * D + 4 * BN * D) * 2;
}

}  // namespace gn::cuda::flash
