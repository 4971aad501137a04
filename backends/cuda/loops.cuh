// backends/cuda/loops.cuh - elementwise launchers: out = f(in0[, in1]) over
// views of any strides, with broadcasting.
//
// Paths, picked per call on the host:
// - dense: every operand is dense row-major with out's shape, or a single
//   element (a scalar operand, read once per thread); each thread handles N
//   elements with 16-byte loads/stores when every pointer is aligned, in a
//   grid-stride loop (no extra copies, no index math);
// - strided: anything else (transposed views, broadcasting such as
//   (4096,4096) + (4096,1)); dims are coalesced on the host (OffsetCalc), each
//   thread handles kStridedPer consecutive output elements, computing the
//   offsets of the first with div/mod (32-bit when the tensor allows) and
//   stepping the innermost stride for the rest.
// Functors are device structs: `Out operator()(In a[, In b]) const`.
#pragma once

#include "common.cuh"

namespace gn::cuda {

template <class In, int NIN>
struct InPtrs {
  const In* p[NIN];
  bool scalar[NIN];  // a one-element operand, broadcast
};

template <class Out, class In, int NIN, class F>
__device__ __forceinline__ Out apply_f(const F& f, const In (&a)[NIN]) {
  if constexpr (NIN == 1)
    return f(a[0]);
  else if constexpr (NIN == 2)
    return f(a[0], a[1]);
  else
    return f(a[0], a[1], a[2]);
}

// Dense path: each block step covers a tile of blockDim.x * N * U elements;
// a thread issues U independent 16-byte loads per input (coalesced: load u of
// the warp is one contiguous 512-byte run) before computing, then U stores.
// The ragged end of the tensor is done element by element.
template <int N, int U, class Out, class In, int NIN, class F>
__global__ void __launch_bounds__(kThreads)
    ew_dense_kernel(int64_t n, Out* __restrict__ out, InPtrs<In, NIN> in, F f, bool streaming) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t tile = (int64_t)blockDim.x * N * U;
  for (int64_t start = (int64_t)blockIdx.x * tile; start < n; start += (int64_t)gridDim.x * tile) {
    if (start + tile <= n) {
      In v[U][NIN][N];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t base = start + ((int64_t)u * blockDim.x + threadIdx.x) * N;
#pragma unroll
        for (int k = 0; k < NIN; ++k) {
          if (in.scalar[k]) {
            const In sv = in.p[k][0];
#pragma unroll
            for (int j = 0; j < N; ++j) v[u][k][j] = sv;
          } else if constexpr (N > 1) {
            const Vec<In, N> t = streaming ? load_vec_cs<In, N>(in.p[k] + base) : load_vec<In, N>(in.p[k] + base);
#pragma unroll
            for (int j = 0; j < N; ++j) v[u][k][j] = t.v[j];
          } else {
            v[u][k][0] = in.p[k][base];
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t base = start + ((int64_t)u * blockDim.x + threadIdx.x) * N;
        Vec<Out, N> o;
#pragma unroll
        for (int j = 0; j < N; ++j) {
          In a[NIN];
#pragma unroll
          for (int k = 0; k < NIN; ++k) a[k] = v[u][k][j];
          o.v[j] = apply_f<Out, In, NIN>(f, a);
        }
        if constexpr (N > 1) {
          if (streaming)
            store_vec_cs<Out, N>(out + base, o);
          else
            store_vec<Out, N>(out + base, o);
        } else {
          out[base] = o.v[0];
        }
      }
    } else {
      for (int64_t i = start + threadIdx.x; i < n; i += blockDim.x) {
        In a[NIN];
#pragma unroll
        for (int k = 0; k < NIN; ++k) a[k] = in.p[k][in.scalar[k] ? 0 : i];
        out[i] = apply_f<Out, In, NIN>(f, a);
      }
    }
  }
}

// Broadcast with a dense innermost dim (e.g. (4096,4096) + (4096,1) or
// (4096,4096) + (4096,)): out and every input have stride 1 or 0 in the
// innermost coalesced dim, whose size is a multiple of N, and everything is
// aligned.  A thread handles N consecutive elements of one row: offsets from
// one 32-bit div/mod walk, then a 16-byte load per stride-1 operand and one
// scalar load per stride-0 operand.
template <int N, class Out, class In, int NIN, class F>
__global__ void __launch_bounds__(kThreads)
    ew_inner_vec_kernel(int64_t n, Out* __restrict__ out, InPtrs<In, NIN> in, OffsetCalc<NIN + 1> oc, F f) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int last = oc.ndim - 1;
  const int64_t nv = n / N;
  for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += (int64_t)gridDim.x * blockDim.x) {
    uint32_t lin = (uint32_t)(v * N);
    int64_t off[NIN + 1];
#pragma unroll
    for (int a = 0; a < NIN + 1; ++a) off[a] = 0;
    for (int d = last; d >= 0; --d) {
      const uint32_t s = (uint32_t)oc.shape[d];
      const uint32_t i = lin % s;
      lin /= s;
#pragma unroll
      for (int a = 0; a < NIN + 1; ++a) off[a] += (int64_t)i * oc.strides[d][a];
    }
    In x[NIN][N];
#pragma unroll
    for (int k = 0; k < NIN; ++k) {
      if (oc.strides[last][k + 1] == 0) {
        const In sv = in.p[k][off[k + 1]];
#pragma unroll
        for (int j = 0; j < N; ++j) x[k][j] = sv;
      } else {
        const Vec<In, N> t = load_vec<In, N>(in.p[k] + off[k + 1]);
#pragma unroll
        for (int j = 0; j < N; ++j) x[k][j] = t.v[j];
      }
    }
    Vec<Out, N> o;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      In a[NIN];
#pragma unroll
      for (int k = 0; k < NIN; ++k) a[k] = x[k][j];
      o.v[j] = apply_f<Out, In, NIN>(f, a);
    }
    store_vec<Out, N>(out + off[0], o);
  }
}

constexpr int kStridedPer = 4;

// Strided path: operand 0 of the OffsetCalc is out, then the inputs.
template <class Index, class Out, class In, int NIN, class F>
__global__ void __launch_bounds__(kThreads)
    ew_strided_kernel(int64_t n, Out* __restrict__ out, InPtrs<In, NIN> in, OffsetCalc<NIN + 1> oc, F f) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * kStridedPer;
  const int last = oc.ndim - 1;
  const Index inner = (Index)oc.shape[last];
  for (int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * kStridedPer; base < n; base += stride) {
    // Offsets of element `base`.
    int64_t off[NIN + 1];
#pragma unroll
    for (int a = 0; a < NIN + 1; ++a) off[a] = 0;
    Index lin = (Index)base;
    Index pos_inner = 0;
    for (int d = last; d >= 0; --d) {
      const Index s = (Index)oc.shape[d];
      const Index i = lin % s;
      lin /= s;
      if (d == last) pos_inner = i;
#pragma unroll
      for (int a = 0; a < NIN + 1; ++a) off[a] += (int64_t)i * oc.strides[d][a];
    }
#pragma unroll
    for (int j = 0; j < kStridedPer; ++j) {
      const int64_t e = base + j;
      if (e >= n) break;
      if (j > 0) {
        if (++pos_inner < inner) {
#pragma unroll
          for (int a = 0; a < NIN + 1; ++a) off[a] += oc.strides[last][a];
        } else {
          oc.get(e, off);
          pos_inner = 0;
        }
      }
      In v[NIN];
#pragma unroll
      for (int k = 0; k < NIN; ++k) v[k] = in.p[k][off[k + 1]];
      out[off[0]] = apply_f<Out, In, NIN>(f, v);
    }
  }
}

// out = f(ins...) elementwise; ins broadcast to out's shape.  In/Out are the
// element types of the views (the caller dispatched on dtypes).
template <class Out, class In, int NIN, class F>
void elementwise(const gn_kernel_ctx* ctx, const gn_tensor_view& out, const gn_tensor_view* const (&ins)[NIN], F f) {
  const int64_t n = numel(out);
  if (n == 0) return;
  cudaStream_t st = stream(ctx);
  InPtrs<In, NIN> ptrs;
  bool dense = is_contiguous(out);
  for (int k = 0; k < NIN; ++k) {
    ptrs.p[k] = data_ptr<const In>(*ins[k]);
    const int64_t nk = numel(*ins[k]);
    ptrs.scalar[k] = nk == 1 && n > 1;
    if (!ptrs.scalar[k]) {
      bool same = ins[k]->ndim == out.ndim && is_contiguous(*ins[k]);
      for (int d = 0; same && d < out.ndim; ++d) same = ins[k]->shape[d] == out.shape[d];
      dense = dense && same;
    }
  }
  Out* o = data_ptr<Out>(out);
  constexpr int N = (16 / (sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out))) > 0
                        ? int(16 / (sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out)))
                        : 1;
  const int64_t sms = sm_count(ctx);
  if (dense) {
    bool vec = (reinterpret_cast<uintptr_t>(o) % (sizeof(Out) * N)) == 0;
    for (int k = 0; k < NIN; ++k)
      vec = vec && (ptrs.scalar[k] || (reinterpret_cast<uintptr_t>(ptrs.p[k]) % (sizeof(In) * N)) == 0);
    // One tile per block step; at most 32 blocks per SM (a few waves, then
    // the grid-stride loop).
    constexpr int U = 2;
    const int64_t max_blocks = sms * 32;
    // Evict-first access once the operands are well beyond L2 (50 MB on H100).
    const bool streaming = (int64_t)(sizeof(Out) + NIN * sizeof(In)) * n > (int64_t(128) << 20);
    if (vec) {
      int64_t b = (n + (int64_t)kThreads * N * U - 1) / ((int64_t)kThreads * N * U);
      launch_pdl<ew_dense_kernel<N, U, Out, In, NIN, F>>(dim3((unsigned)(b < max_blocks ? b : max_blocks)),
                                                         dim3(kThreads), 0, st, n, o, ptrs, f, streaming);
    } else {
      int64_t b = (n + (int64_t)kThreads * 4 - 1) / ((int64_t)kThreads * 4);
      launch_pdl<ew_dense_kernel<1, 4, Out, In, NIN, F>>(dim3((unsigned)(b < max_blocks ? b : max_blocks)),
                                                         dim3(kThreads), 0, st, n, o, ptrs, f, false);
    }
  } else {
    const gn_tensor_view* views[NIN + 1];
    views[0] = &out;
    for (int k = 0; k < NIN; ++k) views[k + 1] = ins[k];
    const gn_tensor_view* const(&vref)[NIN + 1] = views;
    OffsetCalc<NIN + 1> oc = make_offset_calc<NIN + 1>(out.shape, out.ndim, vref);
    if (oc.ndim == 0) {  // every dim has size 1
      oc.ndim = 1;
      oc.shape[0] = 1;
      for (int a = 0; a < NIN + 1; ++a) oc.strides[0][a] = 0;
    }
    for (int k = 0; k < NIN; ++k) ptrs.scalar[k] = false;
    // Inner-vectorised broadcast path when the innermost dim allows it.
    const int last = oc.ndim - 1;
    bool inner = N > 1 && oc.ndim >= 2 && n < (int64_t(1) << 31) && oc.strides[last][0] == 1 &&
                 oc.shape[last] % N == 0 && (reinterpret_cast<uintptr_t>(o) % (sizeof(Out) * N)) == 0;
    for (int d = 0; inner && d < last; ++d) inner = oc.strides[d][0] % N == 0;
    for (int k = 0; inner && k < NIN; ++k) {
      const int64_t sl = oc.strides[last][k + 1];
      inner = (sl == 0 || sl == 1) && (sl == 0 || (reinterpret_cast<uintptr_t>(ptrs.p[k]) % (sizeof(In) * N)) == 0);
      for (int d = 0; inner && sl == 1 && d < last; ++d) inner = oc.strides[d][k + 1] % N == 0;
    }
    if (inner) {
      int64_t b = (n / N + kThreads - 1) / kThreads;
      if (b > sms * 32) b = sms * 32;
      launch_pdl<ew_inner_vec_kernel<N, Out, In, NIN, F>>(dim3((unsigned)b), dim3(kThreads), 0, st, n, o, ptrs, oc, f);
      return;
    }
    const unsigned b = blocks_for(n, kStridedPer);
    if (n < (int64_t(1) << 31))
      launch_pdl<ew_strided_kernel<uint32_t, Out, In, NIN, F>>(dim3(b), dim3(kThreads), 0, st, n, o, ptrs, oc, f);
    else
      launch_pdl<ew_strided_kernel<uint64_t, Out, In, NIN, F>>(dim3(b), dim3(kThreads), 0, st, n, o, ptrs, oc, f);
  }
}

}  // namespace gn::cuda
