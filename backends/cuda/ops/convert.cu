// backends/cuda/ops/convert.cu - cast, copy (dense copy, or x broadcast and
// converted into a preallocated y of any strides) and fill.
//
// Same-dtype dense copies are one cudaMemcpyAsync, transposed ones a tiled
// shared-memory transpose; same dtype with other strides,
// and the float32 <-> float16/bfloat16 casts (the ones mixed precision runs
// constantly) are typed elementwise kernels with 16-byte access; every other
// dtype pair goes through one generic kernel that loads and stores through
// the SDK's dtype switch (double, or int64 when both sides are integers), so
// the results equal the reference's bit for bit and the build stays small.
#include "common.cuh"
#include "loops.cuh"

namespace gn::cuda {
namespace {

template <class Out, class In>
struct ConvertF {
  __device__ __forceinline__ Out operator()(In x) const { return convert<Out>(x); }
};

template <class T>
struct IdentityF {
  __device__ __forceinline__ T operator()(T x) const { return x; }
};

__global__ void convert_generic_kernel(int64_t n, char* out, int32_t odt, int osz, const char* in, int32_t idt,
                                       int isz, OffsetCalc<2> oc, bool int_path) {
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
    if (int_path) gn::sdk::store_int(q, odt, gn::sdk::load_int(p, idt));
    else gn::sdk::store(q, odt, gn::sdk::load(p, idt));
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
__global__ void transpose_kernel(E* __restrict__ out, const E* __restrict__ in, int64_t R, int64_t C,
                                 int64_t so_b, int64_t so_r, int64_t si_b, int64_t si_c) {
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

GN_CUDA_FAMILY(convert) {
  r.kernel("cast", kAllDtypes, convert_kernel);
  r.kernel("copy", kAllDtypes, convert_kernel);
  r.kernel("fill", kAllDtypes, fill_kernel);
}

}  // namespace gn::cuda
