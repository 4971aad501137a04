// backends/cpu/ops/simd/creation.cpp - arange, full, and rand, randn, randint,
// bernoulli on the Philox definitions of genesis/sdk/philox.h (element i =
// row-major linear index, counters from ctx->seed/offset), so every value is
// bit-identical to the reference plugin's: the same functions, stored the same
// way.  Blocks of 4096 elements run in parallel (Philox is counter-based: no
// state to share).  arange and full (no inputs; the output's dtype and shape
// come from inference) use the reference's formulas and conversions.
#include <cmath>

#include "data_movement.h"

namespace gn::cpu::simd {
namespace {

using namespace gn::sdk;

// Write gen(i) converted as the reference stores it, for every element of out.
template <int32_t DT, class Gen>
void generate(const gn_tensor_view& o, Gen&& gen) {
  using T = typename Storage<DT>::T;
  T* p = (T*)data_of(o);
  const int64_t n = gn_view_numel(&o);
  parallel_range(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T v;
      gen(&v, i);
      p[i] = v;
    }
  });
}

template <class F>
void float_out(const gn_tensor_view& o, const char* op, F&& f) {
  bool ok = false;
  switch (o.dtype) {
    case GN_F32:
      generate<GN_F32>(o, [&](void* v, int64_t i) { *(float*)v = (float)f(i); });
      ok = true;
      break;
    case GN_F64:
      generate<GN_F64>(o, [&](void* v, int64_t i) { *(double*)v = f(i); });
      ok = true;
      break;
    case GN_F16:
      generate<GN_F16>(o, [&](void* v, int64_t i) { store(v, GN_F16, f(i)); });
      ok = true;
      break;
    case GN_BF16:
      generate<GN_BF16>(o, [&](void* v, int64_t i) { store(v, GN_BF16, f(i)); });
      ok = true;
      break;
    default: break;
  }
  if (!ok) GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

GN_SDK_KERNEL(rand_kernel) {
  if (n_out < 1) GN_UNSUPPORTED("[rand] arity");
  const gn_tensor_view& o = out[0];
  const uint64_t seed = ctx->seed, off = ctx->offset;
  const int32_t dt = o.dtype;
  float_out(o, "rand", [&](int64_t i) { return philox_uniform_for(dt, seed, off, i); });
}

GN_SDK_KERNEL(randn_kernel) {
  if (n_out < 1) GN_UNSUPPORTED("[randn] arity");
  const uint64_t seed = ctx->seed, off = ctx->offset;
  float_out(out[0], "randn", [&](int64_t i) { return philox_normal(seed, off, i); });
}

GN_SDK_KERNEL(randint_kernel) {
  if (n_out < 1) GN_UNSUPPORTED("[randint] arity");
  const int64_t low = attr_i(attrs, n_attrs, 0, 0), high = attr_i(attrs, n_attrs, 1, 0);
  if (high <= low || (uint64_t)high - (uint64_t)low > (uint64_t(1) << 32)) GN_UNSUPPORTED("[randint] range");
  const gn_tensor_view& o = out[0];
  const uint64_t seed = ctx->seed, off = ctx->offset;
  auto f = [&](int64_t i) { return philox_randint(seed, off, i, low, high); };
  switch (o.dtype) {
    case GN_I64: generate<GN_I64>(o, [&](void* v, int64_t i) { *(int64_t*)v = f(i); }); return;
    case GN_I32: generate<GN_I32>(o, [&](void* v, int64_t i) { store_int(v, GN_I32, f(i)); }); return;
    case GN_F32: generate<GN_F32>(o, [&](void* v, int64_t i) { store_int(v, GN_F32, f(i)); }); return;
    case GN_F64: generate<GN_F64>(o, [&](void* v, int64_t i) { store_int(v, GN_F64, f(i)); }); return;
    case GN_I8: generate<GN_I8>(o, [&](void* v, int64_t i) { store_int(v, GN_I8, f(i)); }); return;
    case GN_U8: generate<GN_U8>(o, [&](void* v, int64_t i) { store_int(v, GN_U8, f(i)); }); return;
    case GN_F16: generate<GN_F16>(o, [&](void* v, int64_t i) { store_int(v, GN_F16, f(i)); }); return;
    case GN_BF16: generate<GN_BF16>(o, [&](void* v, int64_t i) { store_int(v, GN_BF16, f(i)); }); return;
    default: GN_UNSUPPORTED("[randint] dtype");
  }
}

// bernoulli(p) -> out: u(i) < p(i); p dense (GN_KERNEL_CONTIGUOUS), same shape.
GN_SDK_KERNEL(bernoulli_kernel) {
  if (n_in < 1 || n_out < 1) GN_UNSUPPORTED("[bernoulli] arity");
  const gn_tensor_view &p = in[0], &o = out[0];
  const int64_t n = gn_view_numel(&o);
  if (gn_view_numel(&p) != n || p.dtype != o.dtype) GN_UNSUPPORTED("[bernoulli] shapes");
  const uint64_t seed = ctx->seed, off = ctx->offset;
  bool ok = dispatch_float_h(p.dtype, [&](auto t) {
    using T = decltype(t);
    const T* pp = (const T*)data_of(p);
    // Out-of-range p: the reference reports it (nothing written here).
    bool bad = false;
    for (int64_t i = 0; i < n; ++i) bad |= !((double)pp[i] >= 0.0 && (double)pp[i] <= 1.0);
    if (bad) GN_UNSUPPORTED("[bernoulli] p outside [0, 1]");
    T* po = (T*)data_of(o);
    // One Philox block serves elements 4j..4j+3 (philox_word's w[i & 3]): a
    // block per 4 elements instead of per element, the same values bit for bit.
    parallel_range(n, [&](int64_t b, int64_t e) {
      int64_t i = b;
      for (; i < e && (i & 3); ++i) po[i] = philox_uniform(seed, off, i) < (double)pp[i] ? to_t<T>(1.0) : to_t<T>(0.0);
      for (; i + 4 <= e; i += 4) {
        const PhiloxBlock blk = philox4x32_10(off + (uint64_t)(i >> 2), seed);
        for (int k = 0; k < 4; ++k)
          po[i + k] = (double)(blk.w[k] >> 8) * (1.0 / 16777216.0) < (double)pp[i + k] ? to_t<T>(1.0) : to_t<T>(0.0);
      }
      for (; i < e; ++i) po[i] = philox_uniform(seed, off, i) < (double)pp[i] ? to_t<T>(1.0) : to_t<T>(0.0);
    });
  });
  if (!ok) GN_UNSUPPORTED("[bernoulli] dtype");
}

// ----------------------------------------------------------------------------
// arange, full

GN_SDK_KERNEL(arange_kernel) {
  const gn_tensor_view& o = out[0];
  const double start = attr_d(attrs, n_attrs, 0, 0), end = attr_d(attrs, n_attrs, 1, 0),
               step = attr_d(attrs, n_attrs, 2, 1);
  if (n_in != 0 || step == 0.0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    GN_UNSUPPORTED("[arange] these arguments");  // the reference reports the error
  const bool intlike =
      o.dtype == GN_I8 || o.dtype == GN_U8 || o.dtype == GN_I32 || o.dtype == GN_I64 || o.dtype == GN_BOOL;
  const bool exact = intlike && start == std::trunc(start) && step == std::trunc(step) && std::fabs(start) < 9.2e18 &&
                     std::fabs(step) < 9.2e18;
  const size_t es = gn_dtype_size(o.dtype);
  char* po = (char*)data_of(o);
  // same formulas as the reference: exact int64 (wrapping) or start + i*step in double
  parallel_range(gn_view_numel(&o), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (exact)
        gn::sdk::store_int(po + i * es, o.dtype,
                           (int64_t)((uint64_t)(int64_t)start + (uint64_t)i * (uint64_t)(int64_t)step));
      else
        gn::sdk::store(po + i * es, o.dtype, start + (double)i * step);
    }
  });
}

GN_SDK_KERNEL(full_kernel) {
  const gn_tensor_view& o = out[0];
  if (n_in != 0) GN_UNSUPPORTED("[full] inputs");
  const size_t es = gn_dtype_size(o.dtype);
  char value[8];
  gn::sdk::store(value, o.dtype, attr_d(attrs, n_attrs, 1, 0.0));
  char* po = (char*)data_of(o);
  parallel_range(gn_view_numel(&o), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) copy_elem(po + i * es, value, es);
  });
}

}  // namespace

void register_creation(const gn::sdk::Registrar& r) {
  const int32_t numeric[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64};
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("arange", numeric, arange_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("full", all, full_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t fl[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("rand", fl, rand_kernel);
  r.kernel("randn", fl, randn_kernel);
  const int32_t ints[] = {GN_I64, GN_I32, GN_I8, GN_U8, GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("randint", ints, randint_kernel);
  const int32_t bf[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("bernoulli", bf, bernoulli_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
