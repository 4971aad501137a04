// backends/cuda/kernels/gemv.cuh - matmul with few rows against a row-major
// weight (decode projections and LM heads): out (R, N) = x (R, K) @ W^T.
//
// (+ bias (N), the epilogue of the linear op)
//
// x: R <= 4 rows of K bf16/f16 values, each row contiguous and 16-byte
// aligned, at arbitrary row addresses (rows of a flattened batch, a strided
// view); W: (N, K) rows contiguous, row stride ldw elements, base and row
// stride 16-byte aligned; out: R rows, N contiguous values each.  K % 8 == 0.
//
// The op is bound by reading W once (R * K x values stay in L1/L2), so:
// a group of KS warps owns NR consecutive weight rows; its lanes walk K in
// 16-byte vectors (8 values), two steps a round, the next round's loads issued
// before this round's products (up to 4 * NR loads of W in flight per thread),
// W read with L1 no-allocate (streamed, leaves L1 to x).
// Each x vector is loaded once per step and used for all NR rows.  Products
// accumulate in f32: per lane, then a shuffle tree per warp, then the KS warp
// partials in a fixed order through shared memory; the result is rounded once
// to the dtype.  No atomics, no workspace: graph replays give the eager bits.
// KS > 1 (split K over warps) is for large K with few weight rows, where one
// warp per group would leave SMs idle.  Rows are capped at 4: each weight
// vector costs R * 8 FMAs plus the x conversions, and at 8 rows that work
// outweighed the stream (H100, Qwen2.5-0.5B decode at batch 8: 1.90 ms a
// step against cuBLASLt's 1.79), so more rows go to cuBLASLt.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common.cuh"

namespace gn::cuda {

constexpr int kGemvMaxRows = 4;
constexpr int kGemvNR = 4;     // weight rows per warp group
constexpr int kGemvWarps = 4;  // warps per block
constexpr int kGemvVec = 8;    // values per 16-byte vector

template <class T>
struct GemvRows {
  const T* x[kGemvMaxRows];  // row r of x (K values)
  T* out[kGemvMaxRows];      // row r of out (N values)
};

__device__ __forceinline__ uint4 gemv_ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// 8 packed 16-bit values -> f32
template <class T>
__device__ __forceinline__ void gemv_unpack(const uint4& v, float (&f)[8]) {
  const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      f[2 * i] = __uint_as_float(u[i] << 16);
      f[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    } else {
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&u[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
}

// grid: ceil(N / NR) groups, kGemvWarps / KS groups per block; block 128 threads.
// kSwiglu (linear_swiglu): W is (2N, K), gate rows then up rows; a group owns
// NR / 2 outputs i and reads gate rows i and up rows N + i, and the epilogue
// writes silu(g) * u from the f32 sums.
template <class T, int R, bool kSwiglu>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_rows_kernel(const T* __restrict__ w, int64_t ldw, GemvRows<T> rows, const T* __restrict__ bias, int64_t N,
                     int64_t K, int ks) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  __shared__ float red[kGemvWarps][R * kGemvNR];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = warp / ks, kw = warp % ks;
  constexpr int kOut = kSwiglu ? kGemvNR / 2 : kGemvNR;  // outputs per group
  const int64_t n0 = ((int64_t)blockIdx.x * (kGemvWarps / ks) + group) * kOut;
  float acc[R][kGemvNR];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < kGemvNR; ++j) acc[r][j] = 0.f;
  // rows past N read row n0 again (in bounds, discarded) so loads stay unconditional
  const T* wr[kGemvNR];
#pragma unroll
  for (int j = 0; j < kGemvNR; ++j) {
    const int jo = j % kOut;  // output of the group this row serves
    const int64_t row = n0 + jo < N ? n0 + jo : n0;
    wr[j] = w + (kSwiglu && j >= kOut ? N + row : row) * ldw;
  }
  // Two steps of K per round; the next round's loads are issued before this
  // round's products, so each thread keeps up to 4 * NR 16-byte loads in flight
  // and a short K (a few rounds) costs about one memory latency, not one a round.
  const int64_t step = (int64_t)ks * 32 * kGemvVec;
  uint4 cur[2][kGemvNR], nxt[2][kGemvNR];
  auto load_round = [&](uint4(&buf)[2][kGemvNR], int64_t k0) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      if (k0 + s * step < K) {
#pragma unroll
        for (int j = 0; j < kGemvNR; ++j) buf[s][j] = gemv_ld_stream(wr[j] + k0 + s * step);
      }
    }
  };
  int64_t k = ((int64_t)kw * 32 + lane) * kGemvVec;
  if (k < K) load_round(cur, k);
  for (; k < K; k += 2 * step) {
    if (k + 2 * step < K) load_round(nxt, k + 2 * step);
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int64_t kk = k + s * step;
      if (kk >= K) break;
      float wf[kGemvNR][8];
#pragma unroll
      for (int j = 0; j < kGemvNR; ++j) gemv_unpack<T>(cur[s][j], wf[j]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float xf[8];
        gemv_unpack<T>(__ldg(reinterpret_cast<const uint4*>(rows.x[r] + kk)), xf);
#pragma unroll
        for (int j = 0; j < kGemvNR; ++j)
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r][j] = fmaf(xf[e], wf[j][e], acc[r][j]);
      }
    }
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int j = 0; j < kGemvNR; ++j) cur[s][j] = nxt[s][j];
  }
  // warp tree, then the group's KS partials in warp order
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < kGemvNR; ++j) {
      float v = acc[r][j];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][j] = v;
    }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < kGemvNR; ++j) red[warp][r * kGemvNR + j] = acc[r][j];
  }
  __syncthreads();
  if (kw == 0 && lane < R * kOut) {
    const int r = lane / kOut, j = lane % kOut;
    float v = red[warp][r * kGemvNR + j];
    for (int i = 1; i < ks; ++i) v += red[warp + i][r * kGemvNR + j];
    if constexpr (kSwiglu) {
      float u = red[warp][r * kGemvNR + kOut + j];
      for (int i = 1; i < ks; ++i) u += red[warp + i][r * kGemvNR + kOut + j];
      v = v / (1.f + expf(-v)) * u;
    }
    T* out = rows.out[0];  // selected without indexing the parameter (no local copy)
#pragma unroll
    for (int i = 1; i < R; ++i)
      if (r == i) out = rows.out[i];
    if (n0 + j < N) {
      if (bias) v += convert<float>(bias[n0 + j]);  // linear: added before the one rounding
      out[n0 + j] = convert<T>(v);
    }
  }
}

// out rows = x rows @ W^T (+ bias, when not null) for R = 1..4 rows; no
// allocation, no sync.
// swiglu: N outputs from a (2N, K) gate/up weight (linear_swiglu).
template <class T>
void launch_gemv_rows(const T* w, int64_t ldw, const GemvRows<T>& rows, const T* bias, int R, int64_t N, int64_t K,
                      int num_sms, cudaStream_t st, bool swiglu = false) {
  const int per = swiglu ? kGemvNR / 2 : kGemvNR;
  const int64_t groups = (N + per - 1) / per;
  // split K over 2 or 4 warps while there are fewer than two blocks per SM
  // and each warp of the split still gets a full step (256 values) of K
  int ks = 1;
  const int64_t want = 2 * (int64_t)num_sms;
  while (ks < kGemvWarps && (groups * ks + kGemvWarps - 1) / kGemvWarps < want && K >= (int64_t)ks * 2 * 256) ks *= 2;
  const int gpb = kGemvWarps / ks;
  const unsigned blocks = (unsigned)((groups + gpb - 1) / gpb);
  const dim3 block(kGemvWarps * 32);
  switch (R) {
// clang-format off
#define GN_GEMV_CASE(n)                                                                                  \
  case n:                                                                                                \
    if (swiglu) launch_pdl<gemv_rows_kernel<T, n, true>>(dim3(blocks), block, 0, st, w, ldw, rows, bias, N, K, ks); \
    else launch_pdl<gemv_rows_kernel<T, n, false>>(dim3(blocks), block, 0, st, w, ldw, rows, bias, N, K, ks);       \
    break;
    GN_GEMV_CASE(1) GN_GEMV_CASE(2) GN_GEMV_CASE(3) GN_GEMV_CASE(4)
#undef GN_GEMV_CASE
    default: break;
    // clang-format on
  }
}

}  // namespace gn::cuda
