// backends/cuda/kernels/flash_bwd.cuh - flash attention backward (FlashAttention-2
// scheme) on tensor cores, deterministic: no atomics, every sum in a fixed order.
//
// Three launches:
//   flash_bwd_pre:   delta_i = sum_d dO_i * O_i (f32), one warp per query row;
//   flash_bwd (dK, dV): one CTA per (64-key block, batch, KV head); 4 warps, warp w
//                    owns keys 16w..16w+15.  It walks every query head of its GQA
//                    group and every 64-query block that can see its keys, in order,
//                    recomputing P^T = exp(S^T - lse) from the saved lse, and keeps
//                    dK, dV in registers (the whole group is in this CTA);
//   flash_bwd_dq:    one CTA per (64-query block, batch, query head), walking the
//                    key blocks it sees in order; it recomputes S, P and dP and keeps
//                    dQ in registers.
// Per (key block, query block), with S = scale * Q K^T (all 64x64 tiles):
//   dV += P^T dO;  dP = dO V^T;  dS = P * (dP - delta);
//   dK += scale * dS^T Q;  dQ += scale * dS K.
// Splitting dQ out costs a second S and dP product (7 tile products instead of 5),
// but the one-kernel form must add dQ across key blocks with f32 atomics, whose
// order changes from run to run: a training run could not then be repeated bit for
// bit, and a resumed run could not match an uninterrupted one.
#pragma once

#include "flash_fwd.cuh"

namespace gn::cuda::flash {

// delta (B,Hq,Sq) = rowsum(dO * O); dO, O strided (last dim contiguous).
template <class T>
__global__ void flash_bwd_pre(Params p, int D) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t rows = (int64_t)p.B * p.Hq * p.Sq;
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const int i = (int)(row % p.Sq);
  const int64_t bh = row / p.Sq;
  const int b = (int)(bh / p.Hq), h = (int)(bh % p.Hq);
  const T* o = static_cast<const T*>(p.o) + b * p.o_sb + h * p.o_sh + i * p.o_ss;
  const T* d = static_cast<const T*>(p.dout) + b * p.do_sb + h * p.do_sh + i * p.do_ss;
  float acc = 0.f;
  for (int c = lane * 2; c < D; c += 64) {
    float2 a = unpack2<T>(*reinterpret_cast<const uint32_t*>(o + c));
    float2 z = unpack2<T>(*reinterpret_cast<const uint32_t*>(d + c));
    acc += a.x * z.x + a.y * z.y;
  }
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
  if (lane == 0) p.delta[row] = acc;
}

template <int D>
constexpr int bwd_smem_bytes() {
  // K, V (64 x D), Q and dO double-buffered (2 x 64 x D each) in 16-bit, then lse
  // and delta (2 x 64 floats each).
  return (2 * 64 * D + 4 * 64 * D) * 2 + 4 * 64 * 4;
}

// dK, dV for one 64-key block of one (batch, KV head).
template <class T, int D>
__global__ void __launch_bounds__(128) flash_bwd_kernel(Params p) {
  constexpr int BM = 64, BN = 64, NT = 128;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);                    // BN x D
  T* sV = sK + BN * D;                                       // BN x D
  T* sQ = sV + BN * D;                                       // 2 x BM x D
  T* sdO = sQ + 2 * BM * D;                                  // 2 x BM x D
  float* sLse = reinterpret_cast<float*>(sdO + 2 * BM * D);  // 2 x BM, log2 units, +inf = no row
  float* sDelta = sLse + 2 * BM;                             // 2 x BM

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  int bh, n_block;  // heaviest (causal) key tiles, the first ones, first
  block_coords((p.Sk + BN - 1) / BN, p.B * p.Hkv, false, bh, n_block);
  const int n0 = n_block * BN;
  const int b = bh / p.Hkv, hk = bh % p.Hkv;
  const int group = p.Hq / p.Hkv;
  const T* gk = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh;
  const T* gv = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh;

  // query blocks that see at least one of keys n0..n0+BN-1
  int m_start = 0;
  if (p.causal) m_start = max(0, n0 - p.causal_off) / BM;
  const int m_blocks = (p.Sq + BM - 1) / BM;
  const int per_head = max(0, m_blocks - m_start);
  const int total = group * per_head;
  const float sl2 = p.scale * kLog2e;

  auto prefetch = [&](int it, int buf) {
    const int h = hk * group + it / per_head;
    const int m0 = (m_start + it % per_head) * BM;
    const T* gq = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh;
    const T* gdo = static_cast<const T*>(p.dout) + b * p.do_sb + h * p.do_sh;
    load_tile_async<BM, D, NT>(sQ + buf * BM * D, gq, p.q_ss, m0, p.Sq, tid);
    load_tile_async<BM, D, NT>(sdO + buf * BM * D, gdo, p.do_ss, m0, p.Sq, tid);
    if (tid < BM) {
      const int64_t row = ((int64_t)b * p.Hq + h) * p.Sq + m0 + tid;
      float l = INFINITY, dl = 0.f;
      if (m0 + tid < p.Sq) {
        float lse = p.lse[row];
        l = lse == -INFINITY ? INFINITY : lse * kLog2e;
        dl = p.delta[row];
      }
      sLse[buf * BM + tid] = l;
      sDelta[buf * BM + tid] = dl;
    }
  };

  float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[j][e] = dv[j][e] = 0.f;

  load_tile_async<BN, D, NT>(sK, gk, p.k_ss, n0, p.Sk, tid);
  load_tile_async<BN, D, NT>(sV, gv, p.v_ss, n0, p.Sk, tid);
  if (total > 0) prefetch(0, 0);
  cp_async_commit();

  const int kw = warp * 16;  // this warp's first key within the block
  for (int it = 0; it < total; ++it) {
    const int buf = it & 1;
    if (it + 1 < total) prefetch(it + 1, buf ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int m0 = (m_start + it % per_head) * BM;
    const T* cQ = sQ + buf * BM * D;
    const T* cdO = sdO + buf * BM * D;
    const float* cL = sLse + buf * BM;
    const float* cDl = sDelta + buf * BM;

    // S^T (16 keys x 64 queries) = K_w Q^T
    float st[BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) st[j][0] = st[j][1] = st[j][2] = st[j][3] = 0.f;
    mma_rows_bt<T, D, BM>(st, sK, kw, cQ, lane);
    // P^T = exp2(S^T * scale*log2e - lse2[q]); masked entries 0
    const bool need_mask = n0 + BN > p.Sk || (p.causal && n0 + BN - 1 > m0 + p.causal_off);
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ql = j * 8 + 2 * t4 + (e & 1);
        float pv = ex2(fmaf(st[j][e], sl2, -cL[ql]));
        if (need_mask) {
          const int key = n0 + kw + g + (e >> 1) * 8, q = m0 + ql;
          if (key >= p.Sk || (p.causal && key > q + p.causal_off)) pv = 0.f;
        }
        st[j][e] = pv;
      }
    // dV += P^T dO  (k = the 64 queries)
    mma_acc_b<T, D, BM>(dv, st, cdO, lane);
    // dP^T (16 keys x 64 queries) = V_w dO^T
    float dp[BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) dp[j][0] = dp[j][1] = dp[j][2] = dp[j][3] = 0.f;
    mma_rows_bt<T, D, BM>(dp, sV, kw, cdO, lane);
    // dS^T = P^T (dP^T - delta), kept in st
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[j][e] = st[j][e] * (dp[j][e] - cDl[j * 8 + 2 * t4 + (e & 1)]);
    // dK += dS^T Q  (scale applied at the end)
    mma_acc_b<T, D, BM>(dk, st, cQ, lane);
    __syncthreads();  // this Q/dO buffer is refilled next iteration
  }
  // write dK (scaled) and dV for this warp's keys
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = n0 + kw + g + r * 8;
    if (key >= p.Sk) continue;
    T* dkr = static_cast<T*>(p.dk) + b * p.dk_sb + hk * p.dk_sh + key * p.dk_ss;
    T* dvr = static_cast<T*>(p.dv) + b * p.dv_sb + hk * p.dv_sh + key * p.dv_ss;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<uint32_t*>(dkr + j * 8 + 2 * t4) = pack2<T>(dk[j][2 * r] * p.scale, dk[j][2 * r + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(dvr + j * 8 + 2 * t4) = pack2<T>(dv[j][2 * r], dv[j][2 * r + 1]);
    }
  }
}

template <int D>
constexpr int bwd_dq_smem_bytes() {
  // Q and dO (64 x D each), K and V double-buffered (2 x 64 x D each), 16-bit.
  return (2 * 64 * D + 4 * 64 * D) * 2;
}

// dQ for one 64-query block of one (batch, query head): warp w owns queries
// 16w..16w+15 and walks the key blocks it can see in order (as the forward).
template <class T, int D>
__global__ void __launch_bounds__(128) flash_bwd_dq_kernel(Params p) {
  constexpr int BM = 64, BN = 64, NT = 128;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // BM x D
  T* sdO = sQ + BM * D;                    // BM x D
  T* sK = sdO + BM * D;                    // 2 x BN x D
  T* sV = sK + 2 * BN * D;                 // 2 x BN x D

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const auto [b, h, hk, m0] = query_block<BM>(p);
  const T* gq = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh;
  const T* gdo = static_cast<const T*>(p.dout) + b * p.do_sb + h * p.do_sh;
  const T* gk = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh;
  const T* gv = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh;

  const int n_tiles = visible_key_tiles<BM, BN>(p, m0);
  const float sl2 = p.scale * kLog2e;

  // rows g and g+8 of this warp: lse (log2 units, +inf = no visible key) and delta
  const int wr0 = m0 + warp * 16;
  float l2[2], dl[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = wr0 + g + r * 8;
    l2[r] = INFINITY;
    dl[r] = 0.f;
    if (q < p.Sq) {
      const int64_t row = ((int64_t)b * p.Hq + h) * p.Sq + q;
      const float lse = p.lse[row];
      l2[r] = lse == -INFINITY ? INFINITY : lse * kLog2e;
      dl[r] = p.delta[row];
    }
  }

  float dq[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.f;

  if (n_tiles > 0) {
    load_tile_async<BM, D, NT>(sQ, gq, p.q_ss, m0, p.Sq, tid);
    load_tile_async<BM, D, NT>(sdO, gdo, p.do_ss, m0, p.Sq, tid);
    load_kv_async<BN, D, NT>(sK, sV, gk, gv, p, 0, 0, tid);
    cp_async_commit();
  }
  for (int t = 0; t < n_tiles; ++t) {
    const KvTiles<T> kv = kv_pipeline_step<BN, D, NT>(sK, sV, gk, gv, p, t, n_tiles, tid);
    // S = Q_w K^T and dP = dO_w V^T (16 queries x 64 keys each)
    float s[BN / 8][4], dp[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int row = warp * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
      uint32_t qf[4], df[4];
      ldsm_x4(qf[0], qf[1], qf[2], qf[3], smem_u32(sQ + swz<D>(row, col)));
      ldsm_x4(df[0], df[1], df[2], df[3], smem_u32(sdO + swz<D>(row, col)));
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        const int key = j * 8 + (lane & 7) + ((lane >> 4) << 3), kc = kk * 16 + ((lane >> 3) & 1) * 8;
        uint32_t b0, b1, b2, b3;
        ldsm_x4(b0, b1, b2, b3, smem_u32(kv.k + swz<D>(key, kc)));
        mma16816<T>(s[j], qf, b0, b1);
        mma16816<T>(s[j + 1], qf, b2, b3);
        ldsm_x4(b0, b1, b2, b3, smem_u32(kv.v + swz<D>(key, kc)));
        mma16816<T>(dp[j], df, b0, b1);
        mma16816<T>(dp[j + 1], df, b2, b3);
      }
    }
    // dS = P (dP - delta), P = exp2(S * scale*log2e - lse2); masked entries 0
    const int n0 = t * BN;
    const bool need_mask = n0 + BN > p.Sk || (p.causal && n0 + BN - 1 > wr0 + p.causal_off);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        float pv = ex2(fmaf(s[j][e], sl2, -l2[r]));
        if (need_mask) {
          const int key = n0 + j * 8 + 2 * t4 + (e & 1), q = wr0 + g + r * 8;
          if (key >= p.Sk || (p.causal && key > q + p.causal_off)) pv = 0.f;
        }
        s[j][e] = pv * (dp[j][e] - dl[r]);
      }
    // dQ += dS K (dS straight from the accumulators, as P in the forward)
    mma_acc_b<T, D, BN>(dq, s, kv.k, lane);
    __syncthreads();  // this K/V buffer is refilled next iteration
  }
  // write dQ (scaled); rows with no visible key get 0
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = wr0 + g + r * 8;
    if (q >= p.Sq) continue;
    T* dqr = static_cast<T*>(p.dq) + b * p.dq_sb + h * p.dq_sh + q * p.dq_ss;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<uint32_t*>(dqr + j * 8 + 2 * t4) = pack2<T>(dq[j][2 * r] * p.scale, dq[j][2 * r + 1] * p.scale);
  }
}

}  // namespace gn::cuda::flash
