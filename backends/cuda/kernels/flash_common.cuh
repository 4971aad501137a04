// backends/cuda/kernels/flash_common.cuh - tensor-core building blocks shared by
// the flash attention forward and backward kernels (sm_80+ instructions, run on
// sm_90): cp.async 16-byte copies, ldmatrix, mma.sync m16n8k16 with f32
// accumulation, and the XOR-swizzled shared-memory tile layout.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, g = lane/4, t = lane%4):
//   A (16x16, row major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 8+2t..), a3 = (g+8, 8+2t..)
//   B (16x8, k x n):      b0 = (k 2t..2t+1, n g), b1 = (k 8+2t.., n g)
//   C (16x8, f32):        c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// Two adjacent C tiles (n 0..7 and 8..15) of one row block are exactly the A
// fragment of a 16x16 operand with k = those 16 columns: that is how P = softmax(S)
// feeds P @ V without leaving registers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace gn::cuda::flash {

// Tiles hold rows of D elements (2 bytes each) split in 16-byte chunks; chunk c of
// row r lives at chunk c ^ (r & 7) so that the 8 row addresses of one ldmatrix
// phase hit 8 different bank groups (D >= 64: at least 8 chunks per row).
template <int D>
__device__ __forceinline__ int swz(int row, int col) {  // element offset of (row, col)
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16-byte async copy global -> shared; src_bytes 0 writes zeros (rows past the end).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// c += a * b for one m16n8k16 tile; T picks bf16 or f16 operands.
template <class T>
__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1);

// The specialization for T with PTX operand type PTX ("bf16", "f16"): the asm text must be a literal.
#define GN_FLASH_MMA16816(T, PTX)                                                                      \
  template <>                                                                                          \
  __device__ __forceinline__ void mma16816<T>(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) { \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX "." PTX                                  \
                 ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "                                                 \
                 "{%8,%9}, {%0,%1,%2,%3};\n"                                                           \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                      \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                      \
  }
GN_FLASH_MMA16816(__nv_bfloat16, "bf16")
GN_FLASH_MMA16816(__half, "f16")
#undef GN_FLASH_MMA16816

// Two floats -> one register of two 16-bit values (lo = first).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t v);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&v));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t v) {
  return __half22float2(*reinterpret_cast<__half2*>(&v));
}

// Copy a ROWS x D tile (rows r0.. of a matrix with row stride `ld` elements) into
// swizzled shared memory; rows >= n_rows are zero-filled.  All NT threads help.
template <int ROWS, int D, int NT, class T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* g, int64_t ld, int r0, int n_rows, int tid) {
  constexpr int CH = D / 8;  // 16-byte chunks per row
#pragma unroll
  for (int i = tid; i < ROWS * CH; i += NT) {
    int r = i / CH, c = i % CH;
    bool ok = r0 + r < n_rows;
    const T* src = g + (int64_t)(ok ? r0 + r : 0) * ld + c * 8;
    cp_async16(smem + swz<D>(r, c * 8), src, ok);
  }
}

// acc (16 x N: N/8 C tiles) += A B^T, A = rows a_row.. a_row+15 of the swizzled tile sA and B =
// rows 0..N-1 of the swizzled tile sB, both D wide (the contraction runs over D).
template <class T, int D, int N>
__device__ __forceinline__ void mma_rows_bt(float (&acc)[N / 8][4], const T* sA, int a_row, const T* sB, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[4];
    ldsm_x4(a[0], a[1], a[2], a[3], smem_u32(sA + swz<D>(a_row + (lane & 15), kk * 16 + (lane >> 4) * 8)));
#pragma unroll
    for (int j = 0; j < N / 8; j += 2) {
      int row = j * 8 + (lane & 7) + ((lane >> 4) << 3), col = kk * 16 + ((lane >> 3) & 1) * 8;
      uint32_t b0, b1, b2, b3;
      ldsm_x4(b0, b1, b2, b3, smem_u32(sB + swz<D>(row, col)));
      mma16816<T>(acc[j], a, b0, b1);
      mma16816<T>(acc[j + 1], a, b2, b3);
    }
  }
}

// acc (16 x D: D/8 C tiles) += P B, P = the f32 accumulators p (16 x K: K/8 C tiles) rounded to T
// and fed back as A fragments, B = rows 0..K-1 of the swizzled tile sB (D wide).
template <class T, int D, int K>
__device__ __forceinline__ void mma_acc_b(float (&acc)[D / 8][4], const float (&p)[K / 8][4], const T* sB, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const uint32_t a[4] = {pack2<T>(p[2 * kk][0], p[2 * kk][1]), pack2<T>(p[2 * kk][2], p[2 * kk][3]),
                           pack2<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack2<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int j = 0; j < D / 8; j += 2) {
      int row = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), col = j * 8 + (lane >> 4) * 8;
      uint32_t b0, b1, b2, b3;
      ldsm_x4_t(b0, b1, b2, b3, smem_u32(sB + swz<D>(row, col)));
      mma16816<T>(acc[j], a, b0, b1);
      mma16816<T>(acc[j + 1], a, b2, b3);
    }
  }
}

// Parameters of one attention call.  Element strides; the last dim is contiguous.
struct Params {
  const void *q, *k, *v, *o, *dout;
  void *out, *dq, *dk, *dv;
  float* lse;    // (B, Hq, Sq) contiguous, natural log
  float* delta;  // (B, Hq, Sq) f32 scratch: rowsum(dO * O)
  int64_t q_sb, q_sh, q_ss, k_sb, k_sh, k_ss, v_sb, v_sh, v_ss;
  int64_t o_sb, o_sh, o_ss;     // out (forward) / o (backward)
  int64_t do_sb, do_sh, do_ss;  // grad_out
  int64_t dq_sb, dq_sh, dq_ss, dk_sb, dk_sh, dk_ss, dv_sb, dv_sh, dv_ss;
  int B, Hq, Hkv, Sq, Sk;
  int causal_off;  // key j is kept for query i when j <= i + causal_off
  int causal;      // 0 = no causal mask
  float scale;     // softmax scale (natural units)
};

// The (head, tile) a CTA works on, from a 1-D grid of n_tiles * n_heads CTAs.
// Under a causal mask tile i costs i+1 units (forward: query tiles) or
// n_tiles-i (backward: key tiles).  CTAs start in blockIdx order, so the
// costliest tiles of every head go first (longest-processing-time order) and
// the last wave holds only cheap ones.  Walking head by head instead (each head
// heavy to light) left the heavy tiles of the last heads for the end: the
// H100 measured 0.59 -> 0.50 ms forward and 2.58 -> 2.31 ms forward+backward
// at (1, 32, 4096, 128) causal, and 12-19 % on the D = 64 cases.
__device__ __forceinline__ void block_coords(int n_tiles, int n_heads, bool heavy_is_last, int& head, int& tile) {
  const int id = blockIdx.x;
  const int rank = id / n_heads;
  head = id % n_heads;
  tile = heavy_is_last ? n_tiles - 1 - rank : rank;
}

}  // namespace gn::cuda::flash
