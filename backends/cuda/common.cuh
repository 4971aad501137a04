// backends/cuda/common.cuh - what every CUDA op family shares: registration,
// errors, the stream/workspace/device of a call, dtype dispatch, strided
// indexing, 16-byte vector access and Philox.
//
// ---------------------------------------------------------------------------
// How a family registers its kernels (no central list to edit):
//
//   // backends/cuda/ops/myfamily.cu (myfamily: the stem of a section of core/ops/ops.def)
//   #include "common.cuh"
//   namespace gn::cuda {
//   namespace {
//   template <class T> __global__ void my_kernel(...) { ... }
//   GN_SDK_KERNEL(my_op) {                       // ctx, in, n_in, out, n_out, attrs, n_attrs
//     DeviceGuard g(ctx);                        // cudaSetDevice(ctx->device.index) if needed
//     dispatch_float(out[0].dtype, "my_op", [&](auto tag) {
//       using T = typename decltype(tag)::type;  // float, __half, __nv_bfloat16, double
//       my_kernel<T><<<blocks(n), kThreads, 0, stream(ctx)>>>(...);
//     });
//     GN_CUDA_CHECK_LAUNCH();                    // cudaGetLastError, no sync
//   }
//   }  // namespace
//   GN_CUDA_FAMILY(myfamily) {                   // runs at plugin init, r is a Registrar("cuda")
//     r.kernel("my_op", kFloatDtypes, my_op);                        // all inputs any strides
//     r.kernel("other", GN_F32, other_f32, GN_KERNEL_CONTIGUOUS);    // core passes dense views
//   }
//   }  // namespace gn::cuda
//
// The file is picked up by the CMake glob; the family runs when the plugin
// initialises (order between families is unspecified, a duplicate (op, dtype)
// registration is an error at init).  Kernel dtypes: the core picks the kernel
// by gn_infer_result.kernel_dtype (usually input 0's dtype after the casts that
// inference asked for); GN_DTYPE_ANY serves all dtypes.  Flags:
// GN_KERNEL_CONTIGUOUS makes the core hand over dense row-major inputs and
// outputs (it copies when needed); without it a kernel gets any strides
// (outputs the core allocates are dense, preallocated ones may not be).
//
// Rules: never synchronise the device or call cudaMalloc on the hot path (use
// workspace(ctx, bytes), stream-ordered through the caching allocator);
// launch on stream(ctx); errors are C++ exceptions (gn::sdk::Error, thrown by
// GN_CUDA_CHECK / fail_op) which GN_SDK_KERNEL turns into a gn_status.
// ---------------------------------------------------------------------------
#pragma once

#include <cuda.h>  // driver types only: the plugin links no libcuda (see launch())
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "genesis/sdk/sdk.h"

namespace gn::cuda {

using gn::sdk::fail;
using gn::sdk::Registrar;
using Dims = std::vector<int64_t>;

// ----------------------------------------------------------------------------
// self-registering families

// One node of the intrusive list of families; GN_CUDA_FAMILY defines a static
// instance per family file, plugin init walks the list (plugin.cu).
struct FamilyRegistration {
  const char* name;
  void (*fn)(const Registrar&);
  FamilyRegistration* next;
  FamilyRegistration(const char* family_name, void (*register_fn)(const Registrar&));
  static FamilyRegistration*& head();
};

#define GN_CUDA_FAMILY(family)                                                                         \
  static void gn_cuda_family_##family(const ::gn::sdk::Registrar& r);                                  \
  static ::gn::cuda::FamilyRegistration gn_cuda_family_reg_##family(#family, gn_cuda_family_##family); \
  static void gn_cuda_family_##family([[maybe_unused]] const ::gn::sdk::Registrar& r)

// Dtype lists for Registrar::kernel.
inline constexpr int32_t kAllDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
inline constexpr int32_t kNumericDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64};
inline constexpr int32_t kFloatDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64};
inline constexpr int32_t kIntDtypes[] = {GN_I8, GN_U8, GN_I32, GN_I64};

// ----------------------------------------------------------------------------
// errors

// Throw a gn::sdk::Error for a failed CUDA call: out-of-memory keeps its code,
// everything else is a device error naming the call and the place.
[[noreturn]] void cuda_fail(cudaError_t err, const char* expr, const char* file, int line);

#define GN_CUDA_CHECK(expr)                                                                \
  do {                                                                                     \
    cudaError_t gn_err_ = (expr);                                                          \
    if (gn_err_ != cudaSuccess) ::gn::cuda::cuda_fail(gn_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a launch: catches bad configurations without synchronising.
#define GN_CUDA_CHECK_LAUNCH() GN_CUDA_CHECK(cudaGetLastError())

// Throw for a failed library call (cuBLAS, cuSOLVER): st is the status of expression expr, ok
// the library's success; out of memory (alloc_failed) keeps its code, anything else is a device
// error.  where names the op and library: "[linalg] cuSOLVER".
template <class Status>
void check_library(Status st, Status ok, Status alloc_failed, const char* where, const char* expr) {
  if (st != ok)
    fail(st == alloc_failed ? GN_ERR_OUT_OF_MEMORY : GN_ERR_DEVICE,
         std::string(where) + " call failed (status " + std::to_string((int)st) + "): " + expr);
}

// "[op] message" errors.
[[noreturn]] inline void fail_op(int32_t code, const char* op, const std::string& msg) {
  fail(code, std::string("[") + (op ? op : "cuda") + "] " + msg);
}

// ----------------------------------------------------------------------------
// the call: device, stream, workspace

// Make ctx's device current (a thread-local check when it already is; the
// device stays current afterwards, see plugin.cpp).
struct DeviceGuard {
  explicit DeviceGuard(int index);
  explicit DeviceGuard(const gn_kernel_ctx* ctx) : DeviceGuard(ctx->device.index) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
};

inline cudaStream_t stream(const gn_kernel_ctx* ctx) { return static_cast<cudaStream_t>(ctx->stream); }

// Scratch device memory valid until the kernel returns, stream-ordered on the
// call's stream (the caching allocator serves it; no cudaMalloc when cached).
inline void* workspace(const gn_kernel_ctx* ctx, size_t bytes) {
  if (!bytes) return nullptr;
  void* p = ctx->workspace ? ctx->workspace(ctx, bytes) : nullptr;
  if (!p)
    fail(GN_ERR_OUT_OF_MEMORY, std::string("[") + (ctx->op_name ? ctx->op_name : "cuda") + "] could not get " +
                                   std::to_string(bytes) + " bytes of workspace");
  return p;
}

// Device properties cached per device (SM count, L2, ...).
const cudaDeviceProp& device_prop(int index);
// SM count of a device: a lock-free read after the first call (hot path).
int sm_count_of(int index);
inline int sm_count(const gn_kernel_ctx* ctx) { return sm_count_of(ctx->device.index); }

// ----------------------------------------------------------------------------
// launch geometry

constexpr int kThreads = 256;
// Blocks for n work items of `per_thread` each, capped so that a grid-stride
// loop covers the rest (keeps huge tensors launchable).
inline unsigned blocks_for(int64_t n, int per_thread = 1, int threads = kThreads) {
  int64_t b = (n + (int64_t)threads * per_thread - 1) / ((int64_t)threads * per_thread);
  if (b < 1) b = 1;
  if (b > (1 << 30)) b = 1 << 30;
  return (unsigned)b;
}

// launch<kernel>(grid, block, smem, s, args...) runs kernel<<<grid, block,
// smem, s>>>(args...) through the driver's cuLaunchKernel with the function
// handle cached per kernel and device.  The runtime's <<<>>> resolves the
// kernel on every launch; tiny ops are launch-bound, and the direct path
// measured 0.3-0.8 us less per tiny op on the H100 host (bench/gpu/NOTES.md).
// cuLaunchKernel comes from cudaGetDriverEntryPointByVersion, so the plugin
// still links no libcuda and loads where no driver exists.  Errors throw like
// GN_CUDA_CHECK.  Used by the elementwise launchers (loops.cuh).
using DriverLaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
DriverLaunchFn driver_launch();  // plugin.cpp; nullptr: use the runtime path
using DriverLaunchExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
DriverLaunchExFn driver_launch_ex();  // plugin.cpp; nullptr when PDL is off or unavailable
bool pdl_enabled();                   // plugin.cpp; false with GENESIS_CUDA_NO_PDL=1
[[noreturn]] void driver_fail(CUresult r, const char* what);
int current_device_index();  // the device DeviceGuard made current (thread-local)

#ifdef __CUDACC__
template <class K>
struct KernelSig;
template <class... A>
struct KernelSig<void (*)(A...)> {
  using Tuple = std::tuple<std::decay_t<A>...>;
};

// Programmatic dependent launch (PDL, sm_90).  A kernel launched by
// launch_pdl may be scheduled while the grid before it in the stream is still
// running (stream capture keeps that as a programmatic graph edge), which
// hides most of the launch gap between short kernels: a decode step is ~300 of
// them.  Such a kernel must call pdl_wait() before it touches global memory;
// it returns once the previous grid has completed and its writes are visible,
// so the stream order still holds, and, transitively, so does every earlier
// kernel's.  pdl_trigger() lets the next PDL grid be scheduled now (its CTAs
// then wait in pdl_wait).  Only kernels that call pdl_wait may be launched
// with launch_pdl.  GENESIS_CUDA_NO_PDL=1 launches them plainly (A/B).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// launch<kernel>(grid, block, smem, stream, args...): the kernel is a template
// argument so that each kernel has its own cached handle (two kernels of one
// signature must never share it).  launch_pdl<kernel>(...) adds the PDL
// attribute (the kernel starts with pdl_wait()).
template <auto Kernel, bool kPdl = false, class... Args>
void launch_impl(dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  static std::atomic<CUfunction> fn[8] = {};  // per device (index < 8)
  const int dev = current_device_index();
  const DriverLaunchFn drv = driver_launch();
  const DriverLaunchExFn drv_ex = kPdl ? driver_launch_ex() : nullptr;
  const bool cached = drv && dev >= 0 && dev < 8;
  CUfunction f = cached ? fn[dev].load(std::memory_order_acquire) : nullptr;
  if (cached && !f) {
    cudaFunction_t rf = nullptr;
    GN_CUDA_CHECK(cudaGetFuncBySymbol(&rf, reinterpret_cast<const void*>(Kernel)));
    f = reinterpret_cast<CUfunction>(rf);
    fn[dev].store(f, std::memory_order_release);
  }
  typename KernelSig<decltype(Kernel)>::Tuple vals(std::forward<Args>(args)...);
  if (!f) {  // no driver entry point (or device index >= 8): the runtime path
    std::apply([&](auto&... v) { Kernel<<<grid, block, smem, s>>>(v...); }, vals);
    GN_CUDA_CHECK(cudaGetLastError());
    return;
  }
  std::apply(
      [&](auto&... v) {
        void* params[std::tuple_size_v<decltype(vals)> + 1] = {static_cast<void*>(&v)...};
        CUresult r;
        if (drv_ex) {
          CUlaunchAttribute attr{};
          attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
          attr.value.programmaticStreamSerializationAllowed = 1;
          CUlaunchConfig cfg{};
          cfg.gridDimX = grid.x;
          cfg.gridDimY = grid.y;
          cfg.gridDimZ = grid.z;
          cfg.blockDimX = block.x;
          cfg.blockDimY = block.y;
          cfg.blockDimZ = block.z;
          cfg.sharedMemBytes = (unsigned)smem;
          cfg.hStream = reinterpret_cast<CUstream>(s);
          cfg.attrs = &attr;
          cfg.numAttrs = 1;
          r = drv_ex(&cfg, f, params, nullptr);
        } else {
          r = drv(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)smem, reinterpret_cast<CUstream>(s),
                  params, nullptr);
        }
        if (r != CUDA_SUCCESS) driver_fail(r, "cuLaunchKernel");
      },
      vals);
}

template <auto Kernel, class... Args>
void launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  launch_impl<Kernel, false>(grid, block, smem, s, std::forward<Args>(args)...);
}

template <auto Kernel, class... Args>
void launch_pdl(dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  launch_impl<Kernel, true>(grid, block, smem, s, std::forward<Args>(args)...);
}

// launch_pdl for a kernel chosen at run time (a function pointer): the
// runtime's cudaLaunchKernelEx with the same attribute.
template <class... KArgs, class... Args>
void launch_pdl_ptr(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  GN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}
#endif

// ----------------------------------------------------------------------------
// dtypes

template <class T>
struct Tag {
  using type = T;
};

template <class T>
constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                            std::is_same_v<T, __nv_bfloat16>;
template <class T>
constexpr bool is_int_or_bool_v = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
                                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, bool>;

// Accumulation type: float for the 16-bit floats and float, double for double,
// int64 for the integers and bool (sums); any other type accumulates in itself.
template <class T>
using acc_t =
    std::conditional_t<std::is_same_v<T, double>, double,
                       std::conditional_t<is_float_v<T>, float, std::conditional_t<is_int_or_bool_v<T>, int64_t, T>>>;

// Conversions between element types through float/double/int64 (bool: != 0).
template <class To, class From>
__host__ __device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, __half> || std::is_same_v<From, __nv_bfloat16>)
      return (float)v != 0.0f;
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<From, __half> || std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>((float)v);
  } else if constexpr (std::is_same_v<To, __half>) {
    // Through float, as gn::sdk::store (the reference) rounds: double -> float -> half.
    return __float2half_rn((float)v);
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn((float)v);
  } else if constexpr (std::is_integral_v<To> && (std::is_same_v<From, float> || std::is_same_v<From, double>)) {
    // float -> int truncates as C++/torch; NaN/out of range -> 0 (matches gn::sdk::to_int64).
    if (!(v == v) || v >= (From)gn::sdk::kInt64Bound || v < (From)-gn::sdk::kInt64Bound) return To(0);
    return (To)(int64_t)v;
  } else {
    return static_cast<To>(v);
  }
}

#ifdef __CUDACC__
// Round a float result r into T (f16/bf16) exactly as rounding the exact
// value once would (the reference's double computation), as long as r is
// within `window` float ulps of the exact value: when r lies that close to a
// rounding midpoint of T (or where T's rounding position depends on the
// exponent: f16 subnormals and overflow), slow() recomputes in double.  With
// window 128 that is ~0.4% of bf16 and ~3% of f16 results: float speed, the
// reference's bits.
template <class T, class Slow>
__device__ __forceinline__ T round_checked(float r, Slow&& slow) {
  const uint32_t u = __float_as_uint(r);
  constexpr int kWindow = 128;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const int low = (int)(u & 0xffffu);
    if (abs(low - 0x8000) <= kWindow && (u & 0x7f800000u) != 0x7f800000u) return convert<T>(slow());
    return convert<T>(r);
  } else {
    static_assert(std::is_same_v<T, __half>, "round_checked: f16 or bf16");
    const float a = fabsf(r);
    if (a >= 6.103515625e-05f && a < 65504.0f) {  // normal f16 range: 13 float bits below f16's last
      const int low = (int)(u & 0x1fffu);
      if (abs(low - 0x1000) > kWindow) return convert<T>(r);
    } else if (!(a < 65520.0f * 4.0f) || a == 0.0f) {
      return convert<T>(r);  // far beyond f16 (inf either way), NaN, zero
    }
    return convert<T>(slow());
  }
}

#endif  // __CUDACC__

// The C++ element types of kAllDtypes, position for position.
template <class... Ts>
struct TypeList {};
using AllTypes = TypeList<float, __half, __nv_bfloat16, double, int8_t, uint8_t, int32_t, int64_t, bool>;

template <class T, class... Ts>
constexpr int32_t dtype_in(TypeList<Ts...>) {
  int32_t found = -1, i = 0;
  ((found = std::is_same_v<T, Ts> ? kAllDtypes[i] : found, ++i), ...);
  return found;
}
// The gn_dtype of a C++ element type (-1 for a type of no dtype).
template <class T>
constexpr int32_t dtype_of() {
  return dtype_in<T>(AllTypes{});
}

// Call f(Tag<T>{}) for the T of Ts whose dtype is dtype; any other dtype fails
// with GN_ERR_DTYPE naming the op.
template <class... Ts, class F>
void dispatch_types(int32_t dtype, const char* op, F&& f) {
  const bool found = ((dtype == dtype_of<Ts>() && (f(Tag<Ts>{}), true)) || ...);
  if (!found) fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(dtype) + " is not supported on cuda");
}

// Call f(Tag<T>{}) for the C++ type of dtype.  The *_float variant covers
// f32/f16/bf16/f64, *_int the integers, *_all every gn_dtype.
template <class F>
void dispatch_float(int32_t dtype, const char* op, F&& f) {
  dispatch_types<float, __half, __nv_bfloat16, double>(dtype, op, f);
}
template <class F>
void dispatch_int(int32_t dtype, const char* op, F&& f) {
  dispatch_types<int8_t, uint8_t, int32_t, int64_t>(dtype, op, f);
}
template <class F>
void dispatch_all(int32_t dtype, const char* op, F&& f) {
  dispatch_types<float, __half, __nv_bfloat16, double, int8_t, uint8_t, int32_t, int64_t, bool>(dtype, op, f);
}

// ----------------------------------------------------------------------------
// views and strided indexing

inline int64_t numel(const gn_tensor_view& v) { return gn_view_numel(&v); }
inline bool is_contiguous(const gn_tensor_view& v) { return gn_view_is_contiguous(&v) != 0; }
template <class T>
inline T* data_ptr(const gn_tensor_view& v) {
  return reinterpret_cast<T*>(gn_view_ptr(&v));
}

std::string shape_str(const gn_tensor_view& v);

// Attributes (checked; the core fills defaults, so a wrong kind is a bug).
int64_t attr_int(const char* op, const gn_attr_value* a, size_t n, size_t i);
double attr_float(const char* op, const gn_attr_value* a, size_t n, size_t i);
Dims attr_ints(const char* op, const gn_attr_value* a, size_t n, size_t i);
void need_io(const char* op, size_t n_in, size_t want_in, size_t n_out, size_t want_out);

// Up to GN_MAX_DIMS dims, NARGS operands: element linear index -> element
// offset of each operand.  Built on the host from views broadcast to one
// shape; dims are coalesced first (dims that are contiguous for every operand
// merge), so most strided calls run with 1-3 dims.  Passed by value to kernels.
// `#pragma unroll` for loops in __host__ __device__ code: nvcc's device pass only (the host
// compiler, which also reads this header from .cpp files, does not know the pragma).
#ifdef __CUDA_ARCH__
#define GN_UNROLL _Pragma("unroll")
#else
#define GN_UNROLL
#endif

template <int NARGS>
struct OffsetCalc {
  int ndim;
  int64_t shape[GN_MAX_DIMS];
  int64_t strides[GN_MAX_DIMS][NARGS];  // elements

  __host__ __device__ __forceinline__ void get(int64_t linear, int64_t (&off)[NARGS]) const {
    GN_UNROLL
    for (int a = 0; a < NARGS; ++a) off[a] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t s = shape[d];
      const int64_t i = linear % s;
      linear /= s;
      GN_UNROLL
      for (int a = 0; a < NARGS; ++a) off[a] += i * strides[d][a];
    }
  }
};

// Build an OffsetCalc over `shape` (ndim dims) for NARGS views; each view is
// broadcast to shape (right-aligned; size-1 or missing dims get stride 0).
// Size-1 dims are dropped and mergeable neighbours coalesced.
template <int NARGS>
OffsetCalc<NARGS> make_offset_calc(const int64_t* shape, int ndim, const gn_tensor_view* const (&views)[NARGS]) {
  int64_t st[GN_MAX_DIMS][NARGS];
  int64_t sh[GN_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    sh[n] = shape[d];
    for (int a = 0; a < NARGS; ++a) {
      const gn_tensor_view& v = *views[a];
      const int vd = d - (ndim - v.ndim);
      st[n][a] = (vd < 0 || v.shape[vd] == 1) ? 0 : v.strides[vd];
    }
    ++n;
  }
  // Coalesce: dim d-1 and d merge when stride[d-1] == stride[d]*shape[d] for all operands.
  OffsetCalc<NARGS> c{};
  int m = 0;
  for (int d = 0; d < n; ++d) {
    if (m > 0) {
      bool ok = true;
      for (int a = 0; a < NARGS; ++a) ok = ok && st[d][a] * sh[d] == c.strides[m - 1][a];
      if (ok) {
        c.shape[m - 1] *= sh[d];
        for (int a = 0; a < NARGS; ++a) c.strides[m - 1][a] = st[d][a];
        continue;
      }
    }
    c.shape[m] = sh[d];
    for (int a = 0; a < NARGS; ++a) c.strides[m][a] = st[d][a];
    ++m;
  }
  c.ndim = m;
  return c;
}

// ----------------------------------------------------------------------------
// 16-byte vector access

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Elements of T per 16-byte access.
template <class T>
constexpr int vec_width() {
  return 16 / sizeof(T) > 0 ? int(16 / sizeof(T)) : 1;
}

template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, N>*>(p);
}
template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p) = v;
}

#ifdef __CUDACC__
// Streaming (evict-first) variants for tensors far larger than L2: the data
// is touched once, so it should not push out what the next kernel reads.
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec_cs(const T* p) {
  if constexpr (sizeof(Vec<T, N>) == 16) {
    const uint4 u = __ldcs(reinterpret_cast<const uint4*>(p));
    Vec<T, N> v;
    memcpy(&v, &u, 16);
    return v;
  } else {
    return load_vec<T, N>(p);
  }
}
template <class T, int N>
__device__ __forceinline__ void store_vec_cs(T* p, const Vec<T, N>& v) {
  if constexpr (sizeof(Vec<T, N>) == 16) {
    uint4 u;
    memcpy(&u, &v, 16);
    __stcs(reinterpret_cast<uint4*>(p), u);
  } else {
    store_vec<T, N>(p, v);
  }
}

#endif  // __CUDACC__

// True when every pointer is 16-byte aligned (vector path allowed).
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// ----------------------------------------------------------------------------
// random numbers: the SDK's Philox is __host__ __device__ under nvcc, so the
// kernels call gn::sdk::philox4x32_10 / philox_word / philox_normal directly
// and match the reference bit for bit (docs/rng.md).

}  // namespace gn::cuda
