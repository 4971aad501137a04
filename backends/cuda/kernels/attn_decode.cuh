// backends/cuda/kernels/attn_decode.cuh - scaled_dot_product_attention forward
// for a few query rows (decode, short chunks): split-K over the keys
// ("flash-decoding").
//
// q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv), Sq small.  One CTA owns the
// G*Sq query rows (G = Hq/Hkv) of one (b, kv head), or up to kMaxRows of them,
// and one chunk of keys: K/V rows are read once per group, never repeated per
// query head.  grid = (B*Hkv*row blocks, chunks), so B = 1 with two KV heads
// still spreads over the SMs.  Per tile of TK keys: cp.async K and V rows into
// shared memory, scores for all rows (L lanes per key, 16-byte K vectors
// against q held in shared memory as f32), online softmax in the log2 domain,
// then P @ V into f32 registers.  With one chunk the CTA writes out and lse
// itself; otherwise it writes (unnormalised o, running max m, sum l) per
// (row, chunk) to a workspace and decode_combine merges the chunks, one CTA
// per row.  Every sum runs in a fixed order (no atomics): a graph replay gives
// the eager call's bits.
//
// Semantics are the generic path's (attention.cu): causal 1 keeps j <= i, 2
// keeps j <= i + Sk - Sq, bool masks drop keys, float masks add to the score,
// a row with no kept key gives out 0 and lse -inf.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "common.cuh"
#include "kernels/flash_common.cuh"

namespace gn::cuda::decode {

constexpr int kThreads = 128;    // 4 warps per CTA
constexpr int kMaxRows = 16;     // query rows per CTA (G*Sq beyond this: several row blocks)
constexpr int kMaxSplits = 256;  // key chunks per row (combine keeps one weight each in smem)
constexpr int kMaxHeadDim = 256;
constexpr int kMaskBatch = 4;         // mask loads in flight per thread
constexpr int kMaxKeySubsets = 8;     // threads of one o column split the tile's keys this many ways
constexpr int kCombineThreads = 256;  // one CTA per (b, h, i) in decode_combine
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Params {
  const void *q, *k, *v, *mask;
  void* out;
  void* lse;                                           // f32 or f64, strided (B,Hq,Sq); null: not wanted
  float* part_o;                                       // (B*Hq*Sq, nsplit, Dv) f32 workspace (nsplit > 1)
  float* part_ml;                                      // (B*Hq*Sq, nsplit, 2) running max (log2 domain) and sum
  int64_t sq[4], sk[4], sv[4], so[4], sm[4], slse[3];  // element strides, 0 = broadcast
  int B, Hq, Hkv, Sq, Sk, D, Dv;
  int sk_eff;  // keys any row may keep (causal 1: min(Sk, Sq))
  int rows_per_cta, row_blocks;
  int nsplit, chunk;  // key chunks and keys per chunk
  int tk;             // keys per shared-memory tile
  int lanes;          // lanes per key in the score loop (power of 2, <= 32)
  int causal;
  float scale_log2;  // scale * log2(e)
  int mask_dtype;    // -1: no mask
  int mask_esize;
  int lse_f64;
};

// Shared memory of one CTA (bytes): K and V tiles, q (f32, also the final
// reduction of o), scores/probabilities (TK, kMaxRows) and the row state.
template <class T>
inline int smem_bytes(int tk, int rows, int D, int Dv) {
  const int qs = rows * (D > Dv ? D : Dv);
  return tk * (D + Dv) * (int)sizeof(T) + (qs + tk * kMaxRows + 3 * kMaxRows) * 4 + 2 * kMaxRows * 4;
}

// 16 bytes of T -> f32
template <class T>
__device__ __forceinline__ void vec_to_f32(const uint4& u, float* f) {
  if constexpr (std::is_same_v<T, float>) {
    f[0] = __uint_as_float(u.x);
    f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z);
    f[3] = __uint_as_float(u.w);
  } else {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 t = flash::unpack2<T>(w[e]);
      f[2 * e] = t.x;
      f[2 * e + 1] = t.y;
    }
  }
}

// Two adjacent elements of T -> f32
template <class T>
__device__ __forceinline__ float2 pair_to_f32(const T* p) {
  if constexpr (std::is_same_v<T, float>)
    return *reinterpret_cast<const float2*>(p);
  else
    return flash::unpack2<T>(*reinterpret_cast<const uint32_t*>(p));
}

template <class T>
__global__ void __launch_bounds__(kThreads) decode_kernel(Params p) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  constexpr int E = 16 / sizeof(T);  // elements per 16-byte vector
  extern __shared__ __align__(16) unsigned char smem[];
  const int D = p.D, Dv = p.Dv, tk = p.tk;
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + tk * D;
  float* qs = reinterpret_cast<float*>(vs + tk * Dv);  // (R, QS)
  const int QS = D > Dv ? D : Dv;
  float* ps = qs + p.rows_per_cta * QS;  // (TK, kMaxRows) scores, then probabilities
  float* m_s = ps + tk * kMaxRows;       // running max (log2 domain)
  float* l_s = m_s + kMaxRows;           // running sum
  float* a_s = l_s + kMaxRows;           // rescale of this tile
  int* row_h = reinterpret_cast<int*>(a_s + kMaxRows);
  int* row_i = row_h + kMaxRows;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int rb = blockIdx.x % p.row_blocks;
  const int64_t bh = blockIdx.x / p.row_blocks;
  const int hk = (int)(bh % p.Hkv);
  const int64_t b = bh / p.Hkv;
  const int G = p.Hq / p.Hkv;
  const int r0 = rb * p.rows_per_cta;
  const int R = min(p.rows_per_cta, G * p.Sq - r0);
  const int split = blockIdx.y;
  const int j_begin = split * p.chunk, j_end = min(p.sk_eff, j_begin + p.chunk);

  // ---- row state
  if (tid < kMaxRows) {
    const int rr = r0 + tid;
    row_h[tid] = hk * G + rr / p.Sq;
    row_i[tid] = rr % p.Sq;
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.f;
  }

  const T* kh = (const T*)p.k + b * p.sk[0] + hk * p.sk[1];
  const T* vh = (const T*)p.v + b * p.sv[0] + hk * p.sv[1];
  const int nvk = D / E, nvv = Dv / E;
  const int L = p.lanes, lig = lane & (L - 1), gid = tid / L, ngroups = kThreads / L;
  // P @ V mapping: column pair c2 of Dv, key subset ksub (KS subsets, summed in order at the end).
  const int P2 = Dv / 2, KS = max(1, min(kMaxKeySubsets, kThreads / P2));
  const int c2 = tid % P2, ksub = tid / P2;
  const bool pv_thread = ksub < KS && tid < KS * P2;
  float o[kMaxRows][2];
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) o[r][0] = o[r][1] = 0.f;

  for (int t0 = j_begin; t0 < j_end; t0 += tk) {
    const int n = min(tk, j_end - t0);
    // ---- K and V rows of the tile (16-byte async copies)
    for (int x = tid; x < n * nvk; x += kThreads) {
      const int j = x / nvk, c = x % nvk;
      flash::cp_async16(ks + j * D + c * E, kh + (int64_t)(t0 + j) * p.sk[2] + c * E, true);
    }
    for (int x = tid; x < n * nvv; x += kThreads) {
      const int j = x / nvv, c = x % nvv;
      flash::cp_async16(vs + j * Dv + c * E, vh + (int64_t)(t0 + j) * p.sv[2] + c * E, true);
    }
    flash::cp_async_commit();
    if (t0 == j_begin) {
      // q rows of this CTA -> f32 shared memory, while the first tile is in flight
      for (int x = tid; x < R * D; x += kThreads) {
        const int r = x / D, c = x % D, rr = r0 + r;
        const T* qp = (const T*)p.q + b * p.sq[0] + (int64_t)(hk * G + rr / p.Sq) * p.sq[1] +
                      (int64_t)(rr % p.Sq) * p.sq[2] + (int64_t)c * p.sq[3];
        qs[r * QS + c] = (float)*qp;
      }
    }
    // keep/bias of every (key, row) in ps: causal, then the mask (its loads
    // overlap the K/V copies, kMaskBatch in flight per thread); -inf = dropped,
    // else the float mask in log2 units
    for (int x0 = tid; x0 < n * R; x0 += kThreads * kMaskBatch) {
      float bias[kMaskBatch];
#pragma unroll
      for (int u = 0; u < kMaskBatch; ++u) {
        const int x = x0 + u * kThreads;
        bias[u] = -INFINITY;
        if (x < n * R) {
          const int j = x / R, r = x % R, rr = r0 + r, jg = t0 + j;
          const int i = rr % p.Sq;
          if (!((p.causal == 1 && jg > i) || (p.causal == 2 && jg > i + p.Sk - p.Sq))) {
            bias[u] = 0.f;
            if (p.mask_dtype >= 0) {
              const int64_t h = hk * G + rr / p.Sq;
              const char* mp =
                  (const char*)p.mask +
                  (b * p.sm[0] + h * p.sm[1] + (int64_t)i * p.sm[2] + (int64_t)jg * p.sm[3]) * p.mask_esize;
              if (p.mask_dtype == GN_BOOL)
                bias[u] = *(const uint8_t*)mp != 0 ? 0.f : -INFINITY;
              else
                bias[u] = (float)gn::sdk::load(mp, p.mask_dtype) * kLog2e;
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kMaskBatch; ++u) {
        const int x = x0 + u * kThreads;
        if (x < n * R) ps[(x / R) * kMaxRows + x % R] = bias[u];
      }
    }
    flash::cp_async_wait<0>();
    __syncthreads();

    // ---- scores: a group of L lanes per key, all rows at once
    for (int j0 = 0; j0 < n; j0 += ngroups) {
      const int j = j0 + gid;
      const bool valid = j < n;
      float acc[kMaxRows];
#pragma unroll
      for (int r = 0; r < kMaxRows; ++r) acc[r] = 0.f;
      if (valid) {
        for (int c = lig; c < nvk; c += L) {
          float kf[E];
          vec_to_f32<T>(*reinterpret_cast<const uint4*>(ks + j * D + c * E), kf);
#pragma unroll
          for (int r = 0; r < kMaxRows; ++r) {
            if (r < R) {
              const float4* qv = reinterpret_cast<const float4*>(qs + r * QS + c * E);
#pragma unroll
              for (int e4 = 0; e4 < E / 4; ++e4) {
                const float4 qq = qv[e4];
                acc[r] += qq.x * kf[4 * e4] + qq.y * kf[4 * e4 + 1] + qq.z * kf[4 * e4 + 2] + qq.w * kf[4 * e4 + 3];
              }
            }
          }
        }
      }
      // all kMaxRows sums (0 beyond R): independent shuffles, no branch between them
      for (int off = L >> 1; off > 0; off >>= 1) {
#pragma unroll
        for (int r = 0; r < kMaxRows; ++r) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
      }
      if (valid) {
#pragma unroll
        for (int r = 0; r < kMaxRows; ++r) {
          if (r < R && (r & (L - 1)) == lig) {
            const float bias = ps[j * kMaxRows + r];
            ps[j * kMaxRows + r] = bias == -INFINITY ? -INFINITY : acc[r] * p.scale_log2 + bias;
          }
        }
      }
    }
    __syncthreads();

    // ---- online softmax: one warp per row
    for (int r = warp; r < R; r += kThreads / 32) {
      float mx = -INFINITY;
      for (int j = lane; j < n; j += 32) mx = fmaxf(mx, ps[j * kMaxRows + r]);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_old = m_s[r], m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      for (int j = lane; j < n; j += 32) {
        const float s = ps[j * kMaxRows + r];
        const float e = m_new == -INFINITY ? 0.f : exp2f(s - m_new);
        ps[j * kMaxRows + r] = e;
        sum += e;
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();  // every lane has read m_s[r] before lane 0 overwrites it
      if (lane == 0) {
        const float alpha = m_old == -INFINITY ? 0.f : exp2f(m_old - m_new);
        l_s[r] = l_s[r] * alpha + sum;
        m_s[r] = m_new;
        a_s[r] = alpha;
      }
    }
    __syncthreads();

    // ---- o = o * alpha + P @ V
    if (pv_thread) {
#pragma unroll
      for (int r = 0; r < kMaxRows; ++r) {
        if (r < R) {
          const float a = a_s[r];
          o[r][0] *= a;
          o[r][1] *= a;
        }
      }
      for (int j = ksub; j < n; j += KS) {
        const float2 vv = pair_to_f32<T>(vs + j * Dv + 2 * c2);
        const float4* pr = reinterpret_cast<const float4*>(ps + j * kMaxRows);
#pragma unroll
        for (int r4 = 0; r4 < kMaxRows / 4; ++r4) {
          if (4 * r4 < R) {
            const float4 pp = pr[r4];
            const float pv[4] = {pp.x, pp.y, pp.z, pp.w};
#pragma unroll
            for (int u = 0; u < 4; ++u) {
              o[4 * r4 + u][0] += pv[u] * vv.x;
              o[4 * r4 + u][1] += pv[u] * vv.y;
            }
          }
        }
      }
    }
    __syncthreads();  // the next tile overwrites ks, vs and ps
  }

  // ---- sum o over the key subsets, in subset order (bitwise reproducible), into qs
  __syncthreads();  // qs is read by the last score phase; a CTA without keys has not synchronised yet
  float* red = qs;
  for (int k = 0; k < KS; ++k) {
    if (pv_thread && ksub == k) {
#pragma unroll
      for (int r = 0; r < kMaxRows; ++r) {
        if (r < R) {
          float* d = red + r * Dv + 2 * c2;
          d[0] = k == 0 ? o[r][0] : d[0] + o[r][0];
          d[1] = k == 0 ? o[r][1] : d[1] + o[r][1];
        }
      }
    }
    __syncthreads();
  }

  // ---- one chunk: final out and lse; several: partial results per (row, chunk)
  for (int x = tid; x < R * Dv; x += kThreads) {
    const int r = x / Dv, c = x % Dv, h = row_h[r], i = row_i[r];
    const int64_t row = (b * p.Hq + h) * p.Sq + i;
    if (p.nsplit == 1) {
      const float l = l_s[r];
      T* op = (T*)p.out + b * p.so[0] + (int64_t)h * p.so[1] + (int64_t)i * p.so[2] + (int64_t)c * p.so[3];
      *op = convert<T>(l > 0.f ? red[x] / l : 0.f);
    } else {
      p.part_o[(row * p.nsplit + split) * Dv + c] = red[x];
    }
  }
  if (tid < R) {
    const int h = row_h[tid], i = row_i[tid];
    const int64_t row = (b * p.Hq + h) * p.Sq + i;
    const float m = m_s[tid], l = l_s[tid];
    if (p.nsplit > 1) {
      p.part_ml[(row * p.nsplit + split) * 2] = m;
      p.part_ml[(row * p.nsplit + split) * 2 + 1] = l;
    } else if (p.lse) {
      const float lse = l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
      const int64_t off = b * p.slse[0] + (int64_t)h * p.slse[1] + (int64_t)i * p.slse[2];
      if (p.lse_f64)
        ((double*)p.lse)[off] = (double)lse;
      else
        ((float*)p.lse)[off] = lse;
    }
  }
}

// Merge the chunks of one row (b, h, i) per CTA: weights w_s = 2^(m_s - M)
// for M = max m_s, L = sum w_s l_s, out = sum w_s o_s / L.  Threads own four
// columns of one subset of the chunks (16-byte loads, several in flight), the
// subsets are summed in order: bitwise reproducible.
template <class T>
__global__ void __launch_bounds__(kCombineThreads) decode_combine(Params p) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  constexpr int NW = kCombineThreads / 32;
  __shared__ float w_s[kMaxSplits];
  __shared__ float mx_s[NW], sum_s[NW];
  __shared__ float4 acc_s[kCombineThreads];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t row = blockIdx.x;
  const int ns = p.nsplit, Dv = p.Dv;
  const float* ml = p.part_ml + row * ns * 2;
  float M = -INFINITY;
  for (int s = tid; s < ns; s += kCombineThreads) M = fmaxf(M, ml[2 * s]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
  if (lane == 0) mx_s[warp] = M;
  __syncthreads();
  M = mx_s[0];
#pragma unroll
  for (int w = 1; w < NW; ++w) M = fmaxf(M, mx_s[w]);
  float L = 0.f;
  for (int s = tid; s < ns; s += kCombineThreads) {
    const float m = ml[2 * s];
    const float w = m == -INFINITY ? 0.f : exp2f(m - M);
    w_s[s] = w;
    L += w * ml[2 * s + 1];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) L += __shfl_xor_sync(0xffffffffu, L, off);
  if (lane == 0) sum_s[warp] = L;
  __syncthreads();
  L = sum_s[0];
#pragma unroll
  for (int w = 1; w < NW; ++w) L += sum_s[w];

  // column quad c4 of chunk subset g (SG subsets)
  const int nc4 = Dv / 4, SG = kCombineThreads / nc4;
  const int c4 = tid % nc4, g = tid / nc4;
  const float* po = p.part_o + row * ns * Dv + 4 * c4;
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  if (g < SG) {
    int s = g;
    for (; s + 3 * SG < ns; s += 4 * SG) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = *reinterpret_cast<const float4*>(po + (int64_t)(s + u * SG) * Dv);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float w = w_s[s + u * SG];
        a.x += w * v[u].x;
        a.y += w * v[u].y;
        a.z += w * v[u].z;
        a.w += w * v[u].w;
      }
    }
    for (; s < ns; s += SG) {
      const float4 v = *reinterpret_cast<const float4*>(po + (int64_t)s * Dv);
      const float w = w_s[s];
      a.x += w * v.x;
      a.y += w * v.y;
      a.z += w * v.z;
      a.w += w * v.w;
    }
  }
  acc_s[tid] = a;
  __syncthreads();
  const int64_t i = row % p.Sq, h = (row / p.Sq) % p.Hq, b = row / ((int64_t)p.Sq * p.Hq);
  const float inv = L > 0.f ? 1.f / L : 0.f;
  T* op = (T*)p.out + b * p.so[0] + h * p.so[1] + i * p.so[2];
  for (int c = tid; c < Dv; c += kCombineThreads) {
    const int q4 = c / 4, e = c % 4;
    float sum = 0.f;
    for (int k = 0; k < SG; ++k) {
      const float4 t = acc_s[k * nc4 + q4];
      sum += e == 0 ? t.x : e == 1 ? t.y : e == 2 ? t.z : t.w;
    }
    op[(int64_t)c * p.so[3]] = convert<T>(sum * inv);
  }
  if (tid == 0 && p.lse) {
    const float lse = L > 0.f ? (M + log2f(L)) * kLn2 : -INFINITY;
    const int64_t off = b * p.slse[0] + h * p.slse[1] + i * p.slse[2];
    if (p.lse_f64)
      ((double*)p.lse)[off] = (double)lse;
    else
      ((float*)p.lse)[off] = lse;
  }
}

}  // namespace gn::cuda::decode
