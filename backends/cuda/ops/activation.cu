// backends/cuda/ops/activation.cu - swiglu, forward and backward.
//
// gate, up, grad dense and same-shaped; 16-byte vectors when aligned.
//   y = silu(gate)*up;  dgate = g*up*sig*(1 + gate*(1-sig)),  dup = g*silu(gate)
// All arithmetic in opmath_t<T> (f64 for f32/f64 like the reference, f32 for
// the 16-bit types).
#include <initializer_list>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

// ----------------------------------------------------------------------------
// swiglu

template <class A>
__device__ __forceinline__ A sigmoid(A v) {
  return A(1) / (A(1) + exp(-v));
}

// Forward on V elements: y = gate*sig(gate)*up.
template <class T, int V>
__device__ __forceinline__ void swiglu_fwd_vec(const T* gate, const T* up, T* y, int64_t i) {
  using A = nn::opmath_t<T>;
  const Vec<T, V> g = load_vec<T, V>(gate + i), u = load_vec<T, V>(up + i);
  Vec<T, V> o;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const A a = convert<A>(g.v[k]);
    o.v[k] = convert<T>(a * sigmoid(a) * convert<A>(u.v[k]));
  }
  store_vec<T, V>(y + i, o);
}

template <class T, int V>
__global__ void swiglu_fwd_kernel(const T* __restrict__ gate, const T* __restrict__ up, T* __restrict__ y, int64_t n) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t nv = n / V;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t t0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (int64_t i = t0; i < nv; i += stride) swiglu_fwd_vec<T, V>(gate, up, y, i * V);
  for (int64_t i = nv * V + t0; i < n; i += stride) swiglu_fwd_vec<T, 1>(gate, up, y, i);
}

template <class T, int V>
__device__ __forceinline__ void swiglu_bwd_vec(const T* grad, const T* gate, const T* up, T* dgate, T* dup, int64_t i) {
  using A = nn::opmath_t<T>;
  const Vec<T, V> gr = load_vec<T, V>(grad + i), g = load_vec<T, V>(gate + i), u = load_vec<T, V>(up + i);
  Vec<T, V> og, ou;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const A a = convert<A>(g.v[k]), gg = convert<A>(gr.v[k]), uu = convert<A>(u.v[k]);
    const A s = sigmoid(a);
    og.v[k] = convert<T>(gg * uu * s * (A(1) + a * (A(1) - s)));
    ou.v[k] = convert<T>(gg * a * s);
  }
  store_vec<T, V>(dgate + i, og);
  store_vec<T, V>(dup + i, ou);
}

template <class T, int V>
__global__ void swiglu_bwd_kernel(const T* __restrict__ grad, const T* __restrict__ gate, const T* __restrict__ up,
                                  T* __restrict__ dgate, T* __restrict__ dup, int64_t n) {
  const int64_t nv = n / V;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t t0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (int64_t i = t0; i < nv; i += stride) swiglu_bwd_vec<T, V>(grad, gate, up, dgate, dup, i * V);
  for (int64_t i = nv * V + t0; i < n; i += stride) swiglu_bwd_vec<T, 1>(grad, gate, up, dgate, dup, i);
}

void same_shape_dtype(const char* op, const char* what, const gn_tensor_view& v, const gn_tensor_view& ref) {
  bool ok = v.ndim == ref.ndim && v.dtype == ref.dtype;
  for (int32_t d = 0; ok && d < v.ndim; ++d) ok = v.shape[d] == ref.shape[d];
  if (!ok)
    fail_op(GN_ERR_SHAPE, op,
            std::string(what) + " " + shape_str(v) + " " + gn_dtype_name(v.dtype) + " must match " + shape_str(ref) +
                " " + gn_dtype_name(ref.dtype));
}

bool all_aligned(std::initializer_list<const void*> ps) {
  for (const void* p : ps)
    if (!aligned16(p)) return false;
  return true;
}

// in: gate, up; out: y
GN_SDK_KERNEL(swiglu_kernel) {
  const char* op = "swiglu";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  same_shape_dtype(op, "up", in[1], in[0]);
  same_shape_dtype(op, "output", out[0], in[0]);
  const int64_t n = numel(in[0]);
  if (n == 0) return;
  dispatch_float(in[0].dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *g = data_ptr<const T>(in[0]), *u = data_ptr<const T>(in[1]);
    T* y = data_ptr<T>(out[0]);
    constexpr int V = vec_width<T>();
    const unsigned grid = nn::grid_for(ctx, (n + V - 1) / V);
    if (all_aligned({g, u, y}))
      launch_pdl<swiglu_fwd_kernel<T, V>>(grid, kThreads, 0, stream(ctx), g, u, y, n);
    else
      launch_pdl<swiglu_fwd_kernel<T, 1>>(nn::grid_for(ctx, n), kThreads, 0, stream(ctx), g, u, y, n);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// in: grad, gate, up; out: grad_gate, grad_up
GN_SDK_KERNEL(swiglu_backward_kernel) {
  const char* op = "swiglu_backward";
  need_io(op, n_in, 3, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view& gate = in[1];
  same_shape_dtype(op, "grad", in[0], gate);
  same_shape_dtype(op, "up", in[2], gate);
  same_shape_dtype(op, "grad_gate", out[0], gate);
  same_shape_dtype(op, "grad_up", out[1], gate);
  const int64_t n = numel(gate);
  if (n == 0) return;
  dispatch_float(gate.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *gr = data_ptr<const T>(in[0]), *g = data_ptr<const T>(gate), *u = data_ptr<const T>(in[2]);
    T *dg_ = data_ptr<T>(out[0]), *du = data_ptr<T>(out[1]);
    constexpr int V = vec_width<T>();
    if (all_aligned({gr, g, u, dg_, du}))
      swiglu_bwd_kernel<T, V><<<nn::grid_for(ctx, (n + V - 1) / V), kThreads, 0, stream(ctx)>>>(gr, g, u, dg_, du, n);
    else
      swiglu_bwd_kernel<T, 1><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(gr, g, u, dg_, du, n);
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(activation) {
  r.kernel("swiglu", kFloatDtypes, swiglu_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("swiglu_backward", kFloatDtypes, swiglu_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
