// backends/cuda/kernels/flash_launch.cuh - host-side launchers of the flash
// attention kernels: pick the instantiation (dtype x head dim), set the shared-
// memory limit once, size the grid.  Callers check eligibility first with
// flash_supported() (16-bit dtype, D == Dv in {64, 128}, 16-byte aligned rows).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "flash_bwd.cuh"

namespace gn::cuda::flash {

// Allow `smem` bytes of dynamic shared memory for kernel k on the current device,
// once per device (bit d of `done`; devices >= 64 set it every call).
template <class K>
cudaError_t raise_smem_limit(K k, int smem, std::atomic<uint64_t>& done) {
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  const uint64_t bit = dev < 64 ? (uint64_t(1) << dev) : 0;
  if (bit && (done.load(std::memory_order_relaxed) & bit)) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess) done.fetch_or(bit, std::memory_order_relaxed);
  return e;
}

// 0 = f16, 1 = bf16 (the plugin maps gn dtypes onto this).
enum class Half16 { f16 = 0, bf16 = 1 };

// Forward tiling <D, NW warps, MT m-tiles per warp, BN keys per step>: a CTA
// owns 16*MT*NW query rows.  kFwdCfg64/128 are the configurations measured
// best on an H100 (bench numbers in the report); GN_FLASH_TUNING builds (the
// torch harness) can pick others with GENESIS_FLASH_FWD_VARIANT.
template <class T, int D, int NW, int MT, int BN>
cudaError_t fwd_launch(const Params& p, cudaStream_t s) {
  constexpr int BM = 16 * MT * NW;
  constexpr int smem = fwd_smem_bytes<D, NW, MT, BN>();
  static std::atomic<uint64_t> attr_set{0};  // bit per device: the limit is per function and device
  if (cudaError_t e = raise_smem_limit(flash_fwd_kernel<T, D, NW, MT, BN>, smem, attr_set); e != cudaSuccess) return e;
  const unsigned grid = (unsigned)(((int64_t)p.Sq + BM - 1) / BM * p.B * p.Hq);
  flash_fwd_kernel<T, D, NW, MT, BN><<<grid, NW * 32, smem, s>>>(p);
  return cudaGetLastError();
}

#ifdef GN_FLASH_TUNING
// Tiling `variant` (1..7) of GENESIS_FLASH_FWD_VARIANT for head dim D: *err and true, or false
// for another variant.  The D = 64 and D = 128 tables differ in the key tile of 4 and 7 (BN4, BN7).
template <class T, int D, int BN4, int BN7>
bool fwd_variant(const Params& p, int variant, cudaStream_t s, cudaError_t* err) {
  switch (variant) {
    case 1: *err = fwd_launch<T, D, 4, 1, 64>(p, s); return true;
    case 2: *err = fwd_launch<T, D, 4, 1, 128>(p, s); return true;
    case 3: *err = fwd_launch<T, D, 8, 1, 64>(p, s); return true;
    case 4: *err = fwd_launch<T, D, 8, 1, BN4>(p, s); return true;
    case 5: *err = fwd_launch<T, D, 4, 2, 64>(p, s); return true;
    case 6: *err = fwd_launch<T, D, 4, 2, 32>(p, s); return true;
    case 7: *err = fwd_launch<T, D, 8, 2, BN7>(p, s); return true;
    default: return false;
  }
}
#endif

template <class T>
cudaError_t fwd_pick(const Params& p, int D, cudaStream_t s) {
  const bool small = p.Sq <= 64;  // decode-like: 64-row CTAs waste less
#ifdef GN_FLASH_TUNING
  const char* e = std::getenv("GENESIS_FLASH_FWD_VARIANT");
  const int variant = e ? std::atoi(e) : 0;
  cudaError_t err = cudaSuccess;
  if (!small && variant > 0 &&
      (D == 64 ? fwd_variant<T, 64, 128, 64>(p, variant, s, &err) : fwd_variant<T, 128, 32, 32>(p, variant, s, &err)))
    return err;
#endif
  if (D == 64) return small ? fwd_launch<T, 64, 4, 1, 64>(p, s) : fwd_launch<T, 64, 4, 2, 64>(p, s);
  return small ? fwd_launch<T, 128, 4, 1, 64>(p, s) : fwd_launch<T, 128, 4, 2, 64>(p, s);
}

inline cudaError_t flash_fwd(const Params& p, Half16 dt, int D, cudaStream_t s) {
  return dt == Half16::bf16 ? fwd_pick<__nv_bfloat16>(p, D, s) : fwd_pick<__half>(p, D, s);
}

template <class T, int D>
cudaError_t bwd_launch(const Params& p, cudaStream_t s) {
  constexpr int smem = bwd_smem_bytes<D>(), smem_dq = bwd_dq_smem_bytes<D>();
  static std::atomic<uint64_t> attr_set{0}, attr_set_dq{0};
  if (cudaError_t e = raise_smem_limit(flash_bwd_kernel<T, D>, smem, attr_set); e != cudaSuccess) return e;
  if (cudaError_t e = raise_smem_limit(flash_bwd_dq_kernel<T, D>, smem_dq, attr_set_dq); e != cudaSuccess) return e;
  const int64_t rows = (int64_t)p.B * p.Hq * p.Sq;
  flash_bwd_pre<T><<<(unsigned)((rows + 7) / 8), 256, 0, s>>>(p, D);
  const unsigned grid = (unsigned)(((int64_t)p.Sk + 63) / 64 * p.B * p.Hkv);
  flash_bwd_kernel<T, D><<<grid, 128, smem, s>>>(p);
  const unsigned grid_dq = (unsigned)(((int64_t)p.Sq + 63) / 64 * p.B * p.Hq);
  flash_bwd_dq_kernel<T, D><<<grid_dq, 128, smem_dq, s>>>(p);
  return cudaGetLastError();
}

inline bool flash_head_dim_ok(int D) { return D == 64 || D == 128; }

// Needs p.delta (B*Hq*Sq floats) of scratch.
inline cudaError_t flash_bwd(const Params& p, Half16 dt, int D, cudaStream_t s) {
  if (dt == Half16::bf16) return D == 64 ? bwd_launch<__nv_bfloat16, 64>(p, s) : bwd_launch<__nv_bfloat16, 128>(p, s);
  return D == 64 ? bwd_launch<__half, 64>(p, s) : bwd_launch<__half, 128>(p, s);
}

}  // namespace gn::cuda::flash
