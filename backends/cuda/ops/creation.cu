// backends/cuda/ops/creation.cu - arange, full and the random ops (rand,
// randn, randint, bernoulli).
//
// Random numbers follow docs/rng.md through the SDK's __host__ __device__
// Philox (genesis/sdk/philox.h), so a seed gives the same numbers as the
// reference and CPU backends: element i is the output's row-major index.
// One thread computes one Philox block and writes the elements it covers (4
// for rand/randint/bernoulli, 2 for randn).  Values are stored through the
// SDK's dtype switch (gn::sdk::store), the same conversion the reference
// uses, so one kernel serves every dtype.  bernoulli cannot raise on the
// device for p outside [0, 1] without a synchronisation: p < 0 or NaN gives
// 0, p > 1 gives 1.
#include <cmath>

#include "common.cuh"

namespace gn::cuda {
namespace {

// Byte address of row-major element i of the output (dense or strided).
struct OutRef {
  char* base;
  int32_t dtype;
  int32_t esz;
  bool dense;
  OffsetCalc<1> oc;
  __device__ __forceinline__ char* at(int64_t i) const {
    if (dense) return base + i * esz;
    int64_t off[1];
    oc.get(i, off);
    return base + off[0] * esz;
  }
};

OutRef out_ref(const gn_tensor_view& o) {
  OutRef r{};
  r.base = (char*)gn_view_ptr(&o);
  r.dtype = o.dtype;
  r.esz = (int32_t)gn_dtype_size(o.dtype);
  r.dense = is_contiguous(o);
  const gn_tensor_view* views[1] = {&o};
  r.oc = make_offset_calc<1>(o.shape, o.ndim, views);
  return r;
}

unsigned grid(const gn_kernel_ctx* ctx, int64_t work) {
  unsigned b = blocks_for(work);
  const unsigned cap = (unsigned)sm_count(ctx) * 32;
  return b > cap ? cap : b;
}

#define GRID_LOOP(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void arange_impl(int64_t n, OutRef o, double start, double step, bool exact) {
  GRID_LOOP(i, n) {
    if (exact)
      gn::sdk::store_int(o.at(i), o.dtype, (int64_t)((uint64_t)(int64_t)start + (uint64_t)i * (uint64_t)(int64_t)step));
    else
      gn::sdk::store(o.at(i), o.dtype, start + (double)i * step);
  }
}

__global__ void full_impl(int64_t n, OutRef o, double v) { GRID_LOOP(i, n) gn::sdk::store(o.at(i), o.dtype, v); }

// Philox block c (grid-stride over the blocks) covers elements PER*c .. PER*c+PER-1 of n:
// f(i, k, block) for each such element i = PER*c + k below n.
template <int PER, class F>
__device__ __forceinline__ void philox_blocks(int64_t n, uint64_t seed, uint64_t offset, F&& f) {
  const int64_t blocks = (n + PER - 1) / PER;
  GRID_LOOP(c, blocks) {
    const gn::sdk::PhiloxBlock b = gn::sdk::philox4x32_10(offset + (uint64_t)c, seed);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int64_t i = c * PER + k;
      if (i >= n) break;
      f(i, k, b);
    }
  }
}

// kind 0 rand, 1 randint, 2 bernoulli (p read through pref): block c covers 4c..4c+3.
__global__ void uniform_impl(int64_t n, OutRef o, uint64_t seed, uint64_t offset, int kind, int64_t low, int64_t high,
                             OutRef p) {
  philox_blocks<4>(n, seed, offset, [&](int64_t i, int k, const gn::sdk::PhiloxBlock& b) {
    const uint32_t w = b.w[k];
    if (kind == 0) {
      double u;
      if (o.dtype == GN_F16)
        u = (double)(w >> 21) * (1.0 / 2048.0);
      else if (o.dtype == GN_BF16)
        u = (double)(w >> 24) * (1.0 / 256.0);
      else
        u = (double)(w >> 8) * (1.0 / 16777216.0);
      gn::sdk::store(o.at(i), o.dtype, u);
    } else if (kind == 1) {
      const uint64_t range = (uint64_t)(high - low);
      gn::sdk::store_int(o.at(i), o.dtype, low + (int64_t)(((uint64_t)w * range) >> 32));
    } else {
      const double u = (double)(w >> 8) * (1.0 / 16777216.0);
      const double prob = gn::sdk::load(p.at(i), p.dtype);
      gn::sdk::store(o.at(i), o.dtype, u < prob ? 1.0 : 0.0);
    }
  });
}

// randn: block c covers elements 2c (words 0,1) and 2c+1 (words 2,3).
__global__ void normal_impl(int64_t n, OutRef o, uint64_t seed, uint64_t offset) {
  philox_blocks<2>(n, seed, offset, [&](int64_t i, int k, const gn::sdk::PhiloxBlock& b) {
    const double u1 = (double)((b.w[2 * k] >> 8) + 1) * (1.0 / 16777216.0);
    const double u2 = (double)(b.w[2 * k + 1] >> 8) * (1.0 / 16777216.0);
    gn::sdk::store(o.at(i), o.dtype, sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  });
}

// uniform_impl over o (kind, low, high, p as there) with the call's seed and offset.
void launch_uniform(const gn_kernel_ctx* ctx, const gn_tensor_view& o, int kind, int64_t low, int64_t high, OutRef p) {
  const int64_t n = numel(o);
  uniform_impl<<<grid(ctx, (n + 3) / 4), kThreads, 0, stream(ctx)>>>(n, out_ref(o), ctx->seed, ctx->offset, kind, low,
                                                                     high, p);
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(arange_kernel) {
  need_io("arange", n_in, 0, n_out, 1);
  DeviceGuard g(ctx);
  const double start = attr_float("arange", attrs, n_attrs, 0);
  const double end = attr_float("arange", attrs, n_attrs, 1);
  const double step = attr_float("arange", attrs, n_attrs, 2);
  if (step == 0.0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    fail_op(GN_ERR_INVALID_ARGUMENT, "arange", "start, end and step must be finite and step nonzero");
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  if (!n) return;
  const bool intlike = gn_dtype_is_int(o.dtype) || o.dtype == GN_BOOL;
  const bool exact = intlike && start == std::trunc(start) && step == std::trunc(step) && std::fabs(start) < 9.2e18 &&
                     std::fabs(step) < 9.2e18;
  arange_impl<<<grid(ctx, n), kThreads, 0, stream(ctx)>>>(n, out_ref(o), start, step, exact);
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(full_kernel) {
  need_io("full", n_in, 0, n_out, 1);
  DeviceGuard g(ctx);
  const double v = attr_float("full", attrs, n_attrs, 1);
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  if (!n) return;
  full_impl<<<grid(ctx, n), kThreads, 0, stream(ctx)>>>(n, out_ref(o), v);
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(rand_kernel) {
  need_io("rand", n_in, 0, n_out, 1);
  DeviceGuard g(ctx);
  if (!numel(out[0])) return;
  launch_uniform(ctx, out[0], 0, 0, 0, OutRef{});
}

GN_SDK_KERNEL(randint_kernel) {
  need_io("randint", n_in, 0, n_out, 1);
  DeviceGuard g(ctx);
  const int64_t low = attr_int("randint", attrs, n_attrs, 0);
  const int64_t high = attr_int("randint", attrs, n_attrs, 1);
  if (high <= low || (uint64_t)high - (uint64_t)low > (uint64_t(1) << 32))
    fail_op(
        GN_ERR_INVALID_ARGUMENT, "randint",
        "needs low < high and high - low <= 2^32, got low " + std::to_string(low) + ", high " + std::to_string(high));
  if (!numel(out[0])) return;
  launch_uniform(ctx, out[0], 1, low, high, OutRef{});
}

GN_SDK_KERNEL(bernoulli_kernel) {
  need_io("bernoulli", n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const gn_tensor_view &p = in[0], &o = out[0];
  const int64_t n = numel(o);
  if (!n) return;
  if (numel(p) != n) fail_op(GN_ERR_SHAPE, "bernoulli", "p and out must have the same shape");
  // p read in out's row-major order through its own strides.
  launch_uniform(ctx, o, 2, 0, 0, out_ref(p));
}

GN_SDK_KERNEL(randn_kernel) {
  need_io("randn", n_in, 0, n_out, 1);
  DeviceGuard g(ctx);
  const int64_t n = numel(out[0]);
  if (!n) return;
  normal_impl<<<grid(ctx, (n + 1) / 2), kThreads, 0, stream(ctx)>>>(n, out_ref(out[0]), ctx->seed, ctx->offset);
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(creation) {
  r.kernel("arange", kNumericDtypes, arange_kernel);
  r.kernel("full", kAllDtypes, full_kernel);
  r.kernel("rand", kFloatDtypes, rand_kernel);
  r.kernel("randn", kFloatDtypes, randn_kernel);
  r.kernel("randint", kNumericDtypes, randint_kernel);
  r.kernel("bernoulli", kFloatDtypes, bernoulli_kernel);
}

}  // namespace gn::cuda
