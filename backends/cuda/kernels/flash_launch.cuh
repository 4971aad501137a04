// backends/cuda/kernels/flash_launch.cuh - host-side launchers of the flash
// attention kernels: pick the instantiation (dtype x head dim), set the shared-
// memory limit once, size the grid.  Callers check eligibility first with
// flash_supported() (16-bit dtype, D == Dv in {64, 128}, 16-byte aligned rows).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "flash_bwd.cuh"

namespace gn::cuda::flash {

// 0 = f16, 1 = bf16 (the plugin maps gn dtypes onto this).
enum class Half16 { f16 = 0, bf16 = 1 };

// Forward tiling: 4 warps of 2 m-tiles = 128 query rows per CTA, 64 keys per step.
// Decode-like calls (few query rows) use 1 m-tile per warp so fewer rows idle.
template <class T, int D, int MT, int BN = 64>
cudaError_t fwd_launch(const Params& p, cudaStream_t s) {
  constexpr int NW = 4, BM = 16 * MT * NW;
  constexpr int smem = fwd_smem_bytes<D, NW, MT, BN>();
  static bool attr_set = false;  // per process; the attribute is per function
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(flash_fwd_kernel<T, D, NW, MT, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr_set = true;
  }
  dim3 grid((p.Sq + BM - 1) / BM, p.B * p.Hq);
  flash_fwd_kernel<T, D, NW, MT, BN><<<grid, NW * 32, smem, s>>>(p);
  return cudaGetLastError();
}

template <class T, int D>
cudaError_t bwd_launch(const Params& p, cudaStream_t s) {
  constexpr int smem = bwd_smem_bytes<D>();
  static bool attr_set = false;
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(flash_bwd_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr_set = true;
  }
  const int64_t rows = (int64_t)p.B * p.Hq * p.Sq;
  cudaError_t e = cudaMemsetAsync(p.dq_accum, 0, rows * D * sizeof(float), s);
  if (e != cudaSuccess) return e;
  flash_bwd_pre<T><<<(unsigned)((rows + 7) / 8), 256, 0, s>>>(p, D);
  dim3 grid((p.Sk + 63) / 64, p.B * p.Hkv);
  flash_bwd_kernel<T, D><<<grid, 128, smem, s>>>(p);
  const int64_t n = rows * (D / 2);
  unsigned blocks = (unsigned)std::min<int64_t>((n + 255) / 256, 132 * 16);
  flash_bwd_post<T><<<blocks, 256, 0, s>>>(p, D);
  return cudaGetLastError();
}

inline bool flash_head_dim_ok(int D) { return D == 64 || D == 128; }

template <class T>
cudaError_t fwd_pick(const Params& p, int D, cudaStream_t s) {
  const bool small = p.Sq <= 64;
  if (D == 64) return small ? fwd_launch<T, 64, 1>(p, s) : fwd_launch<T, 64, 2>(p, s);
  // D = 128: 2 m-tiles x 64 keys spill (255 registers); 32-key steps fit.
  const int variant = [] {
    const char* e = std::getenv("GENESIS_FLASH_FWD_VARIANT");  // tuning experiments only
    return e ? std::atoi(e) : 0;
  }();
  if (small) return fwd_launch<T, 128, 1>(p, s);
  if (variant == 1) return fwd_launch<T, 128, 2, 64>(p, s);
  if (variant == 2) return fwd_launch<T, 128, 1, 64>(p, s);
  return fwd_launch<T, 128, 2, 32>(p, s);
}

inline cudaError_t flash_fwd(const Params& p, Half16 dt, int D, cudaStream_t s) {
  return dt == Half16::bf16 ? fwd_pick<__nv_bfloat16>(p, D, s) : fwd_pick<__half>(p, D, s);
}

// Needs p.dq_accum (B*Hq*Sq*D floats) and p.delta (B*Hq*Sq floats) of scratch.
inline cudaError_t flash_bwd(const Params& p, Half16 dt, int D, cudaStream_t s) {
  if (dt == Half16::bf16) return D == 64 ? bwd_launch<__nv_bfloat16, 64>(p, s) : bwd_launch<__nv_bfloat16, 128>(p, s);
  return D == 64 ? bwd_launch<__half, 64>(p, s) : bwd_launch<__half, 128>(p, s);
}

}  // namespace gn::cuda::flash
