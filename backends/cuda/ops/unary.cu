// backends/cuda/ops/unary.cu - elementwise unary ops, clamp and the bool
// predicates (logical_not isnan isinf isfinite); cast, copy (dense copy, or x
// broadcast and converted into a preallocated y of any strides) and fill.
//
// Unary ops: x (any strides) -> y (x's shape).  Floats compute in float
// (f16/bf16/f32) or double (f64) and round once on store; integers use exact
// int64 forms (two's complement wrap for neg/abs/square, as torch).  One
// kernel per (dtype, path) serves every op: the op is a run-time code in the
// functor (a uniform branch, free next to the memory traffic), which keeps the
// number of template instances and the build time small.
//
// cast, copy, fill: same-dtype dense copies are one cudaMemcpyAsync, transposed
// ones a tiled shared-memory transpose; same dtype with other strides, and the
// float32 <-> float16/bfloat16 casts (the ones mixed precision runs
// constantly) are typed elementwise kernels with 16-byte access; every other
// dtype pair goes through one generic kernel that loads and stores through
// the SDK's dtype switch (double, or int64 when both sides are integers), so
// the results equal the reference's bit for bit and the build stays small.
#include <cmath>

#include "common.cuh"
#include "loops.cuh"

namespace gn::cuda {
namespace {

namespace sc = gn::sdk::scalar;

// Op codes: the plain unary ops of GN_SCALAR_UNARY_OPS (genesis/sdk/scalar_ops.h), then the ones with attributes.
enum UnaryOp : int {
#define GN_CUDA_UNARY_ENUM(name, F) kUn_##name,
  GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_ENUM)
#undef GN_CUDA_UNARY_ENUM
      kGeluErf,
  kGeluTanh,
  kClamp
};

struct OpName {
  const char* name;
  int op;
};
constexpr OpName kOps[] = {
#define GN_CUDA_UNARY_NAME(name, F) {#name, kUn_##name},
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_NAME)
#undef GN_CUDA_UNARY_NAME
};

int op_code(const char* name) {
  for (const OpName& o : kOps)
    if (std::string(o.name) == name) return o.op;
  fail(GN_ERR_INTERNAL, std::string("[cuda] unknown unary op ") + name);
}

// Float math in A (float or double): the shared formulas.  gelu takes the
// erfc form (GeluErf::tail) except in f32 unless exact_gelu.
template <class A>
__device__ __forceinline__ A unary_float(int op, A x, A lo, A hi, bool exact_gelu = true) {
  switch (op) {
#define GN_CUDA_UNARY_CASE(name, F) \
  case kUn_##name: return sc::F{}(x);
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_CASE)
#undef GN_CUDA_UNARY_CASE
    case kGeluErf:
      if constexpr (std::is_same_v<A, float>) {
        if (!exact_gelu) return sc::GeluErf{}(x);  // f32: the erf form, as torch
      }
      return sc::GeluErf{}.tail(x);
    case kGeluTanh: return sc::GeluTanh{}(x);
    case kClamp: return sc::Clamp{}(x, lo, hi);
    default: return x;
  }
}

// Math: double for f64; float for f32 (libdevice within 1-2 ulp), except
// rsqrt, whose reference value (1/sqrt in double, rounded once) is reproduced
// exactly; f16/bf16 in float with round_checked (common.cuh), which falls
// back to double near a rounding midpoint, so the stored bits equal the
// reference's (double math, one rounding).
template <class T>
using math_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
struct FloatUnaryF {
  int op;
  double lo, hi;
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, double>) {
      return unary_float<double>(op, x, lo, hi);
    } else if constexpr (std::is_same_v<T, float>) {
      if (op == kUn_rsqrt) return (float)(1.0 / sqrt((double)x));
      return unary_float<float>(op, x, (float)lo, (float)hi, false);
    } else {
      // f16/bf16: float math, double only near a rounding midpoint (round_checked).
      const float xf = (float)x;
      if (op == kClamp) return convert<T>(unary_float<double>(op, (double)xf, lo, hi));
      const float r = unary_float<float>(op, xf, (float)lo, (float)hi);
      return round_checked<T>(r, [&] { return unary_float<double>(op, (double)xf, lo, hi); });
    }
  }
};

// Exact integer forms of the shared formulas (int64 math, wrapping through uint64).
template <class T>
struct IntUnaryF {
  int op;
  double lo, hi;     // clamp's bounds
  int64_t ilo, ihi;  // the same, made integral and saturated
  __device__ __forceinline__ T operator()(T xv) const {
    const int64_t x = (int64_t)xv;
    int64_t r;
    switch (op) {
#define GN_CUDA_UNARY_EXACT(name, F) \
  case kUn_##name: r = sc::F{}.exact(x); break;
      GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_EXACT)
#undef GN_CUDA_UNARY_EXACT
      case kClamp: r = sc::Clamp{}.exact(x, lo, hi, ilo, ihi); break;
      default: r = x; break;
    }
    return (T)r;
  }
};

template <>
struct IntUnaryF<bool> {  // sign(bool) = x
  int op;
  double lo, hi;
  int64_t ilo, ihi;
  __device__ __forceinline__ bool operator()(bool x) const { return x; }
};

// logical_not isnan isinf isfinite: the shared predicates, bool out.
template <class T>
struct PredF {
  int op;
  __device__ __forceinline__ bool operator()(T xv) const {
    if constexpr (is_float_v<T>) {
      return unary_float<acc_t<T>>(op, convert<acc_t<T>>(xv), acc_t<T>(0), acc_t<T>(0)) != acc_t<T>(0);
    } else {
      const int64_t x = (int64_t)xv;
      switch (op) {
        case kUn_logical_not: return sc::LogicalNot{}.exact(x) != 0;
        case kUn_isnan: return sc::IsNan{}.exact(x) != 0;
        case kUn_isinf: return sc::IsInf{}.exact(x) != 0;
        default: return sc::IsFinite{}.exact(x) != 0;
      }
    }
  }
};

void run_unary(const gn_kernel_ctx* ctx, const gn_tensor_view& x, const gn_tensor_view& y, int op, double lo,
               double hi) {
  const char* name = ctx->op_name ? ctx->op_name : "unary";
  if (x.dtype != y.dtype) fail_op(GN_ERR_DTYPE, name, "input and output dtypes differ");
  const gn_tensor_view* ins[1] = {&x};
  if (gn_dtype_is_float(x.dtype)) {
    dispatch_float(x.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, FloatUnaryF<T>{op, lo, hi});
    });
  } else {
    if (op != kUn_neg && op != kUn_abs && op != kUn_sign && op != kUn_relu && op != kUn_square && op != kUn_floor &&
        op != kUn_ceil && op != kUn_round && op != kClamp)
      fail_op(GN_ERR_DTYPE, name, std::string("dtype ") + gn_dtype_name(x.dtype) + " is not supported");
    // clamp bounds for integers: ceil(lo), floor(hi), saturated to int64.
    const int64_t ilo = gn::sdk::saturate_i64(std::ceil(lo)), ihi = gn::sdk::saturate_i64(std::floor(hi));
    if (x.dtype == GN_BOOL) {
      elementwise<bool, bool, 1>(ctx, y, ins, IntUnaryF<bool>{op, lo, hi, ilo, ihi});
      return;
    }
    dispatch_int(x.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, IntUnaryF<T>{op, lo, hi, ilo, ihi});
    });
  }
}

GN_SDK_KERNEL(unary_kernel) {
  need_io(ctx->op_name, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  run_unary(ctx, in[0], out[0], (int)(intptr_t)ctx->kernel_data, 0.0, 0.0);  // op code from registration
}

GN_SDK_KERNEL(gelu_kernel) {
  need_io("gelu", n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const int64_t approx = attr_int("gelu", attrs, n_attrs, 0);
  if (!gn_dtype_is_float(in[0].dtype)) fail_op(GN_ERR_DTYPE, "gelu", "needs a float input");
  run_unary(ctx, in[0], out[0], approx ? kGeluTanh : kGeluErf, 0.0, 0.0);
}

GN_SDK_KERNEL(clamp_kernel) {
  need_io("clamp", n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const double lo = attr_float("clamp", attrs, n_attrs, 0), hi = attr_float("clamp", attrs, n_attrs, 1);
  if (!gn_dtype_is_float(in[0].dtype) && (std::isnan(lo) || std::isnan(hi)))
    fail_op(GN_ERR_UNSUPPORTED, "clamp", "NaN bounds on an integer tensor");
  run_unary(ctx, in[0], out[0], kClamp, lo, hi);
}

GN_SDK_KERNEL(pred_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "predicate";
  need_io(name, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const int op = (int)(intptr_t)ctx->kernel_data;  // op code from registration
  const gn_tensor_view* ins[1] = {&in[0]};
  if (out[0].dtype != GN_BOOL) fail_op(GN_ERR_DTYPE, name, "output must be bool");
  dispatch_all(in[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise<bool, T, 1>(ctx, out[0], ins, PredF<T>{op});
  });
}

// ----------------------------------------------------------------------------
// cast, copy, fill

template <class Out, class In>
struct ConvertF {
  __device__ __forceinline__ Out operator()(In x) const { return convert<Out>(x); }
};

template <class T>
struct IdentityF {
  __device__ __forceinline__ T operator()(T x) const { return x; }
};

__global__ void convert_generic_kernel(int64_t n, char* out, int32_t odt, int osz, const char* in, int32_t idt, int isz,
                                       OffsetCalc<2> oc, bool int_path) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    if (oc.ndim == 1) {
      off[0] = i * oc.strides[0][0];
      off[1] = i * oc.strides[0][1];
    } else {
      oc.get(i, off);
    }
    const char* p = in + off[1] * isz;
    char* q = out + off[0] * osz;
    if (int_path)
      gn::sdk::store_int(q, odt, gn::sdk::load_int(p, idt));
    else
      gn::sdk::store(q, odt, gn::sdk::load(p, idt));
  }
}

OffsetCalc<2> calc2(const gn_tensor_view& y, const gn_tensor_view& x) {
  const gn_tensor_view* views[2] = {&y, &x};
  OffsetCalc<2> oc = make_offset_calc<2>(y.shape, y.ndim, views);
  if (oc.ndim == 0) {
    oc.ndim = 1;
    oc.shape[0] = 1;
    oc.strides[0][0] = oc.strides[0][1] = 0;
  }
  return oc;
}

// Transposed copies (out row-major, x contiguous along out's rows: e.g.
// contiguous() of a transpose): 32x32 tiles through shared memory, so both
// the reads and the writes are coalesced.  E is a same-size carrier type.
template <class E>
__global__ void transpose_kernel(E* __restrict__ out, const E* __restrict__ in, int64_t R, int64_t C, int64_t so_b,
                                 int64_t so_r, int64_t si_b, int64_t si_c) {
  __shared__ E tile[32][33];
  const int64_t b = blockIdx.z, r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
  const E* src = in + b * si_b;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int64_t c = c0 + j, r = r0 + threadIdx.x;
    if (r < R && c < C) tile[j][threadIdx.x] = src[r + c * si_c];
  }
  __syncthreads();
  E* dst = out + b * so_b;
  for (int j = threadIdx.y; j < 32; j += 8) {
    const int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < R && c < C) dst[r * so_r + c] = tile[threadIdx.x][j];
  }
}

// The transposed-copy layout of (y, x) after coalescing, or false.
bool try_transpose(const gn_kernel_ctx* ctx, const gn_tensor_view& y, const gn_tensor_view& x) {
  const gn_tensor_view* views[2] = {&y, &x};
  const OffsetCalc<2> oc = make_offset_calc<2>(y.shape, y.ndim, views);
  if (oc.ndim != 2 && oc.ndim != 3) return false;
  const int l = oc.ndim - 1;
  if (oc.strides[l][0] != 1 || oc.strides[l - 1][1] != 1 || oc.strides[l][1] == 1) return false;
  const int64_t R = oc.shape[l - 1], C = oc.shape[l];
  const int64_t batch = oc.ndim == 3 ? oc.shape[0] : 1;
  if (R < 32 || C < 32 || batch > 65535 || (R + 31) / 32 > 65535) return false;
  const int64_t so_b = oc.ndim == 3 ? oc.strides[0][0] : 0, si_b = oc.ndim == 3 ? oc.strides[0][1] : 0;
  const dim3 grid((unsigned)((C + 31) / 32), (unsigned)((R + 31) / 32), (unsigned)batch), block(32, 8);
  auto go = [&](auto tag) {
    using E = typename decltype(tag)::type;
    transpose_kernel<E><<<grid, block, 0, stream(ctx)>>>(data_ptr<E>(y), data_ptr<const E>(x), R, C, so_b,
                                                         oc.strides[l - 1][0], si_b, oc.strides[l][1]);
  };
  switch (gn_dtype_size(y.dtype)) {
    case 1: go(Tag<uint8_t>{}); break;
    case 2: go(Tag<uint16_t>{}); break;
    case 4: go(Tag<uint32_t>{}); break;
    case 8: go(Tag<uint64_t>{}); break;
    default: return false;
  }
  GN_CUDA_CHECK_LAUNCH();
  return true;
}

bool same_shape(const gn_tensor_view& a, const gn_tensor_view& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

bool is_intlike(int32_t dt) { return gn_dtype_is_int(dt) || dt == GN_BOOL; }

// y = x converted (x broadcast to y's shape).
void convert_into(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& y, const gn_tensor_view& x) {
  const int64_t n = numel(y);
  if (!n) return;
  const gn_tensor_view* ins[1] = {&x};
  if (x.dtype == y.dtype) {
    if (same_shape(x, y) && is_contiguous(x) && is_contiguous(y)) {
      if (gn_view_ptr(&x) != gn_view_ptr(&y))
        GN_CUDA_CHECK(cudaMemcpyAsync(gn_view_ptr(&y), gn_view_ptr(&x), (size_t)n * gn_dtype_size(y.dtype),
                                      cudaMemcpyDeviceToDevice, stream(ctx)));
      return;
    }
    if (try_transpose(ctx, y, x)) return;
    dispatch_all(x.dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      elementwise<T, T, 1>(ctx, y, ins, IdentityF<T>{});
    });
    return;
  }
  auto typed = [&](auto out_tag, auto in_tag) {
    using O = typename decltype(out_tag)::type;
    using I = typename decltype(in_tag)::type;
    elementwise<O, I, 1>(ctx, y, ins, ConvertF<O, I>{});
  };
  if (x.dtype == GN_F32 && y.dtype == GN_BF16) return typed(Tag<__nv_bfloat16>{}, Tag<float>{});
  if (x.dtype == GN_F32 && y.dtype == GN_F16) return typed(Tag<__half>{}, Tag<float>{});
  if (x.dtype == GN_BF16 && y.dtype == GN_F32) return typed(Tag<float>{}, Tag<__nv_bfloat16>{});
  if (x.dtype == GN_F16 && y.dtype == GN_F32) return typed(Tag<float>{}, Tag<__half>{});
  const OffsetCalc<2> oc = calc2(y, x);
  unsigned blocks = blocks_for(n);
  const unsigned cap = (unsigned)sm_count(ctx) * 32;
  if (blocks > cap) blocks = cap;
  convert_generic_kernel<<<blocks, kThreads, 0, stream(ctx)>>>(
      n, (char*)gn_view_ptr(&y), y.dtype, (int)gn_dtype_size(y.dtype), (const char*)gn_view_ptr(&x), x.dtype,
      (int)gn_dtype_size(x.dtype), oc, is_intlike(x.dtype) && is_intlike(y.dtype));
  GN_CUDA_CHECK_LAUNCH();
}

GN_SDK_KERNEL(convert_kernel) {
  const char* op = ctx->op_name ? ctx->op_name : "cast";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  convert_into(ctx, op, out[0], in[0]);
}

// fill(x; value) in place: value converted once on the host (as the
// reference's store does), written through x's strides.
template <class T>
__global__ void fill_kernel_impl(int64_t n, T* x, T v, OffsetCalc<1> oc, bool dense) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (dense) {
      x[i] = v;
    } else {
      int64_t off[1];
      oc.get(i, off);
      x[off[0]] = v;
    }
  }
}

GN_SDK_KERNEL(fill_kernel) {
  need_io("fill", n_in, 1, n_out, 0);
  DeviceGuard g(ctx);
  const double value = attr_float("fill", attrs, n_attrs, 0);
  const gn_tensor_view& x = in[0];
  const int64_t n = numel(x);
  if (!n) return;
  // The element's bytes, converted exactly as the reference converts.
  alignas(8) unsigned char bytes[8] = {};
  gn::sdk::store(bytes, x.dtype, value);
  const size_t es = gn_dtype_size(x.dtype);
  const bool dense = is_contiguous(x);
  if (dense && (es == 1 || value == 0.0)) {
    bool all_same = true;
    for (size_t k = 1; k < es; ++k) all_same = all_same && bytes[k] == bytes[0];
    if (all_same) {
      GN_CUDA_CHECK(cudaMemsetAsync(gn_view_ptr(&x), bytes[0], (size_t)n * es, stream(ctx)));
      return;
    }
  }
  const gn_tensor_view* views[1] = {&x};
  OffsetCalc<1> oc = make_offset_calc<1>(x.shape, x.ndim, views);
  unsigned blocks = blocks_for(n);
  const unsigned cap = (unsigned)sm_count(ctx) * 32;
  if (blocks > cap) blocks = cap;
  dispatch_all(x.dtype, "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    fill_kernel_impl<T><<<blocks, kThreads, 0, stream(ctx)>>>(n, data_ptr<T>(x), v, oc, dense);
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

// Traits of each functor of the shared list: which kernel and dtypes serve it.
struct UnaryTraits {
  const char* name;
  bool exact, takes_bool, predicate;
};
constexpr UnaryTraits kTraits[] = {
#define GN_CUDA_UNARY_TRAITS(name, F) {#name, sc::F::kExact, sc::F::kBool, sc::F::kPredicate},
    GN_SCALAR_UNARY_OPS(GN_CUDA_UNARY_TRAITS)
#undef GN_CUDA_UNARY_TRAITS
};

GN_CUDA_FAMILY(unary) {
  for (const UnaryTraits& t : kTraits) {
    void* code = (void*)(intptr_t)op_code(t.name);
    if (t.predicate)
      r.kernel(t.name, kAllDtypes, pred_kernel, 0, code);  // bool out
    else if (!t.exact)
      r.kernel(t.name, kFloatDtypes, unary_kernel, 0, code);  // inference casts int/bool to f32
    else if (t.takes_bool)
      r.kernel(t.name, kAllDtypes, unary_kernel, 0, code);
    else
      r.kernel(t.name, kNumericDtypes, unary_kernel, 0, code);
  }
  r.kernel("gelu", kFloatDtypes, gelu_kernel);
  r.kernel("clamp", kNumericDtypes, clamp_kernel);
  r.kernel("cast", kAllDtypes, convert_kernel);
  r.kernel("copy", kAllDtypes, convert_kernel);
  r.kernel("fill", kAllDtypes, fill_kernel);
}

}  // namespace gn::cuda
