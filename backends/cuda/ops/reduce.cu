// backends/cuda/ops/reduce.cu - reductions over any dims with keepdim: sum
// mean prod max min argmax argmin var std logsumexp norm.
//
// x is split into kept dims (outer; y's row-major index o) and reduced dims
// (inner; row-major index j, the index argmax reports), each coalesced on the
// host.  One kernel template per (dtype, reducer) serves every layout:
// - row mode: the reduced elements of one output are contiguous (or at least
//   not interleaved with the outputs): a warp (small rows) or a whole block
//   of 256 threads (long rows) per output, 16-byte loads when aligned;
// - column mode: the outputs are the contiguous dim (e.g. sum over dim 0 of a
//   row-major matrix): 32 outputs per block along x, coalesced, with 8
//   threads per output along y splitting the reduced range;
// - when outputs alone cannot fill the GPU (a full reduction, few long rows),
//   the reduced range is split over blockIdx.y (aim: 8 blocks per SM): each block writes a partial
//   state into the workspace and a second kernel combines them in order.
// Accumulation: float for f16/bf16/f32, double for f64, int64 (wrapping) for
// integer sums/products; var/std use Welford's algorithm (Chan's merge),
// logsumexp an online (max, sum) pair, argmax/argmin (value, first index)
// with NaN winning like torch.
#include <cfloat>
#include <climits>
#include <cmath>

#include "common.cuh"

namespace gn::cuda {
namespace {

// ----------------------------------------------------------------------------
// reducers: State init(), State load(T, j), State combine(a, b), Out finalize(s, n)

template <class T>
struct SumR {  // sum and mean
  using A = acc_t<T>;
  using State = A;
  using Out = T;
  bool mean;
  __device__ __forceinline__ State init() const { return A(0); }
  __device__ __forceinline__ State load(T x, int64_t) const { return convert<A>(x); }
  __device__ __forceinline__ State combine(State a, State b) const {
    if constexpr (std::is_integral_v<A>)
      return (A)((uint64_t)a + (uint64_t)b);
    else
      return a + b;
  }
  __device__ __forceinline__ Out finalize(State s, int64_t n) const {
    if constexpr (std::is_integral_v<A>)
      return convert<Out>(s);
    else
      return convert<Out>(mean ? s / (A)n : s);
  }
};

template <class T>
struct ProdR {
  using A = acc_t<T>;
  using State = A;
  using Out = T;
  __device__ __forceinline__ State init() const { return A(1); }
  __device__ __forceinline__ State load(T x, int64_t) const { return convert<A>(x); }
  __device__ __forceinline__ State combine(State a, State b) const {
    if constexpr (std::is_integral_v<A>)
      return (A)((uint64_t)a * (uint64_t)b);
    else
      return a * b;
  }
  __device__ __forceinline__ Out finalize(State s, int64_t) const { return convert<Out>(s); }
};

template <class T>
__device__ __forceinline__ bool nan_of(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return isnan(v);
  else
    return false;
}

template <class T>
struct MaxMinR {
  using A = std::conditional_t<is_float_v<T>, acc_t<T>, int64_t>;
  using State = A;
  using Out = T;
  bool is_max;
  __device__ __forceinline__ State init() const {
    if constexpr (is_float_v<T>)
      return is_max ? -(A)INFINITY : (A)INFINITY;
    else
      return is_max ? (A)INT64_MIN : (A)INT64_MAX;
  }
  __device__ __forceinline__ State load(T x, int64_t) const { return convert<A>(x); }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (nan_of(a)) return a;
    if (nan_of(b)) return b;
    return is_max ? (a > b ? a : b) : (a < b ? a : b);
  }
  __device__ __forceinline__ Out finalize(State s, int64_t) const { return convert<Out>(s); }
};

template <class A>
struct ArgState {
  A v;
  int64_t i;
};

template <class T>
struct ArgR {
  using A = std::conditional_t<is_float_v<T>, acc_t<T>, int64_t>;
  using State = ArgState<A>;
  using Out = int64_t;
  bool is_max;
  __device__ __forceinline__ State init() const { return State{A(0), INT64_MAX}; }
  __device__ __forceinline__ State load(T x, int64_t j) const { return State{convert<A>(x), j}; }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (a.i == INT64_MAX) return b;
    if (b.i == INT64_MAX) return a;
    const bool an = nan_of(a.v), bn = nan_of(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (is_max ? a.v > b.v : a.v < b.v) ? a : b;
  }
  __device__ __forceinline__ Out finalize(State s, int64_t) const { return s.i == INT64_MAX ? 0 : s.i; }
};

template <class A>
struct Welford {
  A n, mean, m2;
};

template <class T>
struct VarR {  // var and std
  using A = acc_t<T>;
  using State = Welford<A>;
  using Out = T;
  A correction;
  bool is_std;
  __device__ __forceinline__ State init() const { return State{A(0), A(0), A(0)}; }
  __device__ __forceinline__ State load(T x, int64_t) const { return State{A(1), convert<A>(x), A(0)}; }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (a.n == A(0)) return b;
    if (b.n == A(0)) return a;
    const A n = a.n + b.n;
    const A d = b.mean - a.mean;
    const A wb = b.n / n;
    return State{n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
  }
  __device__ __forceinline__ Out finalize(State s, int64_t n) const {
    A denom = (A)n - correction;
    if (denom < A(0)) denom = A(0);
    const A v = (n == 0 ? A(NAN) : s.m2) / denom;
    return convert<Out>(is_std ? sqrt(v) : v);
  }
};

template <class A>
struct LseState {
  A m, s;
};

template <class T>
struct LseR {
  using A = acc_t<T>;
  using State = LseState<A>;
  using Out = T;
  __device__ __forceinline__ State init() const { return State{-(A)INFINITY, A(0)}; }
  __device__ __forceinline__ State load(T x, int64_t) const { return State{convert<A>(x), A(1)}; }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (isnan(a.m) || isnan(b.m)) return State{(A)NAN, A(1)};
    const A m = a.m > b.m ? a.m : b.m;
    if (isinf(m)) return State{m, A(1)};  // all -inf so far, or a +inf
    return State{m, a.s * exp(a.m - m) + b.s * exp(b.m - m)};
  }
  __device__ __forceinline__ Out finalize(State s, int64_t) const {
    if (isinf(s.m) || isnan(s.m)) return convert<Out>(s.m);
    return convert<Out>(s.m + log(s.s));
  }
};

template <class T>
struct NormR {
  using A = acc_t<T>;
  using State = A;
  using Out = T;
  A p;
  int kind;  // 0: p=0 count, 1: p=1, 2: p=2, 3: +inf max, 4: -inf min, 5: general
  __device__ __forceinline__ State init() const { return kind == 4 ? (A)INFINITY : A(0); }
  __device__ __forceinline__ State load(T xv, int64_t) const {
    const A a = fabs(convert<A>(xv));
    switch (kind) {
      case 0: return a != A(0) ? A(1) : A(0);
      case 1: return a;
      case 2: return a * a;
      case 3:
      case 4: return a;
      default: return pow(a, p);
    }
  }
  __device__ __forceinline__ State combine(State a, State b) const {
    if (kind == 3 || kind == 4) {
      if (isnan(a) || isnan(b)) return a + b;
      return kind == 3 ? (a > b ? a : b) : (a < b ? a : b);
    }
    return a + b;
  }
  __device__ __forceinline__ Out finalize(State s, int64_t) const {
    switch (kind) {
      case 2: return convert<Out>(sqrt(s));
      case 5: return convert<Out>(pow(s, A(1) / p));
      default: return convert<Out>(s);
    }
  }
};

// ----------------------------------------------------------------------------
// warp/block combination of any trivially copyable state

template <class S>
__device__ __forceinline__ S shfl_down(const S& s, int delta) {
  static_assert(sizeof(S) % 4 == 0, "state must be whole words");
  S r;
  const int* src = reinterpret_cast<const int*>(&s);
  int* dst = reinterpret_cast<int*>(&r);
#pragma unroll
  for (int k = 0; k < (int)(sizeof(S) / 4); ++k) dst[k] = __shfl_down_sync(0xffffffffu, src[k], delta);
  return r;
}

template <class R, class S>
__device__ __forceinline__ S warp_reduce(const R& r, S s) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) s = r.combine(s, shfl_down(s, d));
  return s;
}

// ----------------------------------------------------------------------------
// the kernel

struct Layout {
  int64_t n_out, n_in;  // outputs, reduced elements per output
  OffsetCalc<1> outer;  // o -> element offset of x
  OffsetCalc<1> inner;  // j -> element offset of x (relative)
  OffsetCalc<1> yoff;   // o -> element offset of y
  bool y_dense;
  int mode;           // 0 row, 1 column
  int out_per_block;  // row mode: 1 (256 lanes) or 8 (32 lanes each)
  int64_t chunk;      // reduced elements per split
  int splits;
  int vec;            // row mode with stride-1 rows: elements per vector load (1 = off)
  int64_t in_stride;  // inner stride when inner.ndim == 1

  // Element offset in y of output o.
  __device__ __forceinline__ int64_t y_offset(int64_t o) const {
    if (y_dense) return o;
    int64_t off[1];
    yoff.get(o, off);
    return off[0];
  }
};

template <class T, class R, int VEC>
__global__ void __launch_bounds__(256) reduce_kernel(const T* __restrict__ x, typename R::Out* __restrict__ y,
                                                     typename R::State* __restrict__ partial, Layout L, R r) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  using S = typename R::State;
  __shared__ alignas(16) unsigned char smem_raw[256 * sizeof(S)];
  S* smem = reinterpret_cast<S*>(smem_raw);
  const int tx = threadIdx.x, ty = threadIdx.y;
  int64_t o;
  int lane, nlanes;
  if (L.mode == 1) {
    o = (int64_t)blockIdx.x * 32 + tx;
    lane = ty;
    nlanes = 8;
  } else if (L.out_per_block == 1) {
    o = blockIdx.x;
    lane = ty * 32 + tx;
    nlanes = 256;
  } else {
    o = (int64_t)blockIdx.x * 8 + ty;
    lane = tx;
    nlanes = 32;
  }
  const int64_t j0 = (int64_t)blockIdx.y * L.chunk;
  const int64_t j1 = j0 + L.chunk < L.n_in ? j0 + L.chunk : L.n_in;
  S s = r.init();
  if (o < L.n_out) {
    int64_t base[1];
    L.outer.get(o, base);
    const T* row = x + base[0];
    if (VEC > 1) {
      // Stride-1 row, aligned: VEC elements per load, chunk and j0 multiples
      // of VEC; two loads in flight per iteration.
      const int64_t step = (int64_t)nlanes * VEC;
      int64_t j = j0 + (int64_t)lane * VEC;
      for (; j + step < j1; j += 2 * step) {
        const Vec<T, VEC> v0 = load_vec<T, VEC>(row + j);
        const Vec<T, VEC> v1 = load_vec<T, VEC>(row + j + step);
#pragma unroll
        for (int k = 0; k < VEC; ++k) s = r.combine(s, r.load(v0.v[k], j + k));
#pragma unroll
        for (int k = 0; k < VEC; ++k) s = r.combine(s, r.load(v1.v[k], j + step + k));
      }
      if (j < j1) {
        const Vec<T, VEC> v0 = load_vec<T, VEC>(row + j);
#pragma unroll
        for (int k = 0; k < VEC; ++k) s = r.combine(s, r.load(v0.v[k], j + k));
      }
    } else if (L.inner.ndim == 1) {
      // Four independent loads in flight per iteration (column mode reads
      // one element per thread per step).
      const int64_t st = L.in_stride;
      int64_t j = j0 + lane;
      for (; j + 3 * nlanes < j1; j += 4 * nlanes) {
        const T v0 = row[j * st], v1 = row[(j + nlanes) * st], v2 = row[(j + 2 * nlanes) * st],
                v3 = row[(j + 3 * nlanes) * st];
        s = r.combine(s, r.load(v0, j));
        s = r.combine(s, r.load(v1, j + nlanes));
        s = r.combine(s, r.load(v2, j + 2 * nlanes));
        s = r.combine(s, r.load(v3, j + 3 * nlanes));
      }
      for (; j < j1; j += nlanes) s = r.combine(s, r.load(row[j * st], j));
    } else {
      for (int64_t j = j0 + lane; j < j1; j += nlanes) {
        int64_t off[1];
        L.inner.get(j, off);
        s = r.combine(s, r.load(row[off[0]], j));
      }
    }
  }
  // Combine the lanes of each output.
  bool writer;
  if (L.mode == 1) {
    smem[ty * 32 + tx] = s;
    __syncthreads();
    writer = ty == 0;
    if (writer)
      for (int k = 1; k < 8; ++k) s = r.combine(s, smem[k * 32 + tx]);
  } else if (L.out_per_block == 1) {
    s = warp_reduce(r, s);
    if (tx == 0) smem[ty] = s;
    __syncthreads();
    writer = ty == 0 && tx == 0;
    if (writer)
      for (int k = 1; k < 8; ++k) s = r.combine(s, smem[k]);
  } else {
    s = warp_reduce(r, s);
    writer = tx == 0;
  }
  if (writer && o < L.n_out) {
    if (L.splits > 1) {
      partial[(int64_t)blockIdx.y * L.n_out + o] = s;
    } else {
      y[L.y_offset(o)] = r.finalize(s, L.n_in);
    }
  }
}

template <class R>
__global__ void reduce_finish_kernel(const typename R::State* __restrict__ partial, typename R::Out* __restrict__ y,
                                     Layout L, R r) {
  pdl_wait();  // launched with launch_pdl (common.cuh)
  pdl_trigger();
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < L.n_out; o += (int64_t)gridDim.x * blockDim.x) {
    // loads in batches of 8 (independent, in flight together), combined in split order
    typename R::State s = partial[o];
    for (int k0 = 1; k0 < L.splits; k0 += 8) {
      typename R::State v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (k0 + u < L.splits) v[u] = partial[(int64_t)(k0 + u) * L.n_out + o];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (k0 + u < L.splits) s = r.combine(s, v[u]);
    }
    y[L.y_offset(o)] = r.finalize(s, L.n_in);
  }
}

// Coalesce (shape, stride) pairs (row-major order) into an OffsetCalc<1>.
OffsetCalc<1> coalesce(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  OffsetCalc<1> c{};
  int m = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (m > 0 && stride[d] * shape[d] == c.strides[m - 1][0]) {
      c.shape[m - 1] *= shape[d];
      c.strides[m - 1][0] = stride[d];
      continue;
    }
    c.shape[m] = shape[d];
    c.strides[m][0] = stride[d];
    ++m;
  }
  if (m == 0) {
    c.shape[0] = 1;
    c.strides[0][0] = 0;
    m = 1;
  }
  c.ndim = m;
  return c;
}

template <class T, class R>
void run_reduce(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& x, const gn_tensor_view& y,
                const bool* mask, R r) {
  using S = typename R::State;
  using Out = typename R::Out;
  Layout L{};
  std::vector<int64_t> os, ost, is, ist;
  for (int d = 0; d < x.ndim; ++d) {
    if (mask[d]) {
      is.push_back(x.shape[d]);
      ist.push_back(x.strides[d]);
    } else {
      os.push_back(x.shape[d]);
      ost.push_back(x.strides[d]);
    }
  }
  L.n_out = 1;
  for (int64_t v : os) L.n_out *= v;
  L.n_in = 1;
  for (int64_t v : is) L.n_in *= v;
  if (numel(y) != L.n_out)
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(y) + " does not match the reduction of " + shape_str(x));
  if (L.n_out == 0) return;
  L.outer = coalesce(os, ost);
  L.inner = coalesce(is, ist);
  L.in_stride = L.inner.ndim == 1 ? L.inner.strides[0][0] : 0;
  L.y_dense = is_contiguous(y);
  {
    const gn_tensor_view* yv[1] = {&y};
    L.yoff = make_offset_calc<1>(y.shape, y.ndim, yv);
  }
  const bool row_contig = L.inner.ndim == 1 && (L.in_stride == 1 || L.n_in == 1);
  const bool out_unit = L.outer.strides[L.outer.ndim - 1][0] == 1 && L.n_out > 1;
  L.mode = (!row_contig && out_unit) ? 1 : 0;
  const int64_t sms = sm_count(ctx);
  int64_t blocks_x;
  if (L.mode == 1) {
    blocks_x = (L.n_out + 31) / 32;
  } else {
    L.out_per_block = L.n_in >= 1024 ? 1 : 8;
    blocks_x = (L.n_out + L.out_per_block - 1) / L.out_per_block;
  }
  // Split the reduced range when the outputs cannot fill the GPU (aim: ~8
  // blocks per SM), keeping at least 4096 elements per block.
  int64_t splits = 1;
  const int64_t target = sms * 8;
  const int64_t min_chunk = L.mode == 1 ? 64 : 4096;  // column blocks have 8 lanes per output
  if (blocks_x < target && L.n_in >= 2 * min_chunk) {
    splits = (target + blocks_x - 1) / blocks_x;
    const int64_t max_splits = L.n_in / min_chunk;
    if (splits > max_splits) splits = max_splits;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
  }
  int vec = 1;
  constexpr int V = vec_width<T>() > 8 ? 8 : vec_width<T>();
  if (L.mode == 0 && row_contig && L.in_stride == 1 && L.n_in % V == 0 && aligned16(gn_view_ptr(&x)) &&
      (L.n_out == 1 || (L.outer.ndim == 1 && L.outer.strides[0][0] % V == 0)))
    vec = V;
  L.chunk = (L.n_in + splits - 1) / splits;
  if (vec > 1) L.chunk = (L.chunk + vec - 1) / vec * vec;
  if (L.chunk == 0) L.chunk = 1;
  L.splits = (int)((L.n_in + L.chunk - 1) / L.chunk);
  if (L.splits < 1) L.splits = 1;
  S* partial = nullptr;
  if (L.splits > 1) partial = static_cast<S*>(workspace(ctx, sizeof(S) * (size_t)L.n_out * L.splits));
  const dim3 grid((unsigned)blocks_x, (unsigned)L.splits);
  const dim3 block(32, 8);
  const T* xp = data_ptr<const T>(x);
  Out* yp = data_ptr<Out>(y);
  cudaStream_t st = stream(ctx);
  if (vec > 1)
    launch_pdl_ptr(reduce_kernel<T, R, V>, grid, block, 0, st, xp, yp, partial, L, r);
  else
    launch_pdl_ptr(reduce_kernel<T, R, 1>, grid, block, 0, st, xp, yp, partial, L, r);
  GN_CUDA_CHECK_LAUNCH();
  if (L.splits > 1) {
    unsigned b = blocks_for(L.n_out);
    if (b > (unsigned)sms * 8) b = (unsigned)sms * 8;
    launch_pdl_ptr(reduce_finish_kernel<R>, b, kThreads, 0, st, partial, yp, L, r);
    GN_CUDA_CHECK_LAUNCH();
  }
}

// Reduced-dims mask from a dims list ([] = all); a 0-d x reduces "nothing".
void make_mask(const char* op, const Dims& dims, int ndim, bool* mask) {
  for (int d = 0; d < GN_MAX_DIMS; ++d) mask[d] = dims.empty();
  for (int64_t d : dims) {
    const int64_t n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n) fail_op(GN_ERR_INDEX, op, "dim " + std::to_string(d) + " out of range");
    if (ndim > 0) mask[d < 0 ? d + ndim : d] = true;
  }
}

// The reduction codes of genesis/sdk/scalar_ops.h (GN_SCALAR_REDUCE_OPS).
using Red = gn::sdk::scalar::Reduction;

GN_SDK_KERNEL(reduce_kernel_entry) {
  const char* op = ctx->op_name ? ctx->op_name : "reduce";
  need_io(op, n_in, 1, n_out, 1);
  DeviceGuard g(ctx);
  const gn_tensor_view &x = in[0], &y = out[0];
  const Red k = static_cast<Red>((intptr_t)ctx->kernel_data);  // set at registration
  Dims dims;
  double param = 0.0;
  switch (k) {
    case Red::argmax:
    case Red::argmin: {
      const int64_t dim = attr_int(op, attrs, n_attrs, 0);
      if (dim != GN_DIM_NONE) dims = {dim};
      break;
    }
    case Red::norm:
      param = attr_float(op, attrs, n_attrs, 0);
      dims = attr_ints(op, attrs, n_attrs, 1);
      break;
    case Red::var:
    case Red::std:
      dims = attr_ints(op, attrs, n_attrs, 0);
      param = attr_float(op, attrs, n_attrs, 1);
      break;
    default: dims = attr_ints(op, attrs, n_attrs, 0);
  }
  bool mask[GN_MAX_DIMS];
  make_mask(op, dims, x.ndim, mask);
  int64_t n_red = 1;
  for (int d = 0; d < x.ndim; ++d)
    if (mask[d]) n_red *= x.shape[d];
  if ((k == Red::max || k == Red::min || k == Red::argmax || k == Red::argmin) && n_red == 0 && numel(y) > 0)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "cannot reduce over an empty dimension of input " + shape_str(x));
  switch (k) {
    case Red::sum:
    case Red::mean:
    case Red::prod:
      if (y.dtype != x.dtype) fail_op(GN_ERR_DTYPE, op, "output dtype must equal the (cast) input's");
      dispatch_all(x.dtype, op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (k == Red::prod)
          run_reduce<T>(ctx, op, x, y, mask, ProdR<T>{});
        else if constexpr (is_float_v<T>)
          run_reduce<T>(ctx, op, x, y, mask, SumR<T>{k == Red::mean});
        else if (k == Red::sum)
          run_reduce<T>(ctx, op, x, y, mask, SumR<T>{false});
        else
          fail_op(GN_ERR_DTYPE, op, "mean needs a float input");
      });
      break;
    case Red::max:
    case Red::min:
      dispatch_all(x.dtype, op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce<T>(ctx, op, x, y, mask, MaxMinR<T>{k == Red::max});
      });
      break;
    case Red::argmax:
    case Red::argmin:
      if (y.dtype != GN_I64) fail_op(GN_ERR_DTYPE, op, "output must be int64");
      if (x.dtype == GN_BOOL) fail_op(GN_ERR_DTYPE, op, "bool inputs are not supported");
      dispatch_all(x.dtype, op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) run_reduce<T>(ctx, op, x, y, mask, ArgR<T>{k == Red::argmax});
      });
      break;
    default:
      dispatch_float(x.dtype, op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        if (k == Red::var || k == Red::std)
          run_reduce<T>(ctx, op, x, y, mask, VarR<T>{(A)param, k == Red::std});
        else if (k == Red::logsumexp)
          run_reduce<T>(ctx, op, x, y, mask, LseR<T>{});
        else {
          const int kind = param == 0.0        ? 0
                           : param == 1.0      ? 1
                           : param == 2.0      ? 2
                           : std::isinf(param) ? (param > 0 ? 3 : 4)
                                               : 5;
          run_reduce<T>(ctx, op, x, y, mask, NormR<T>{(A)param, kind});
        }
      });
  }
}

}  // namespace

GN_CUDA_FAMILY(reduce) {
  // Every reduction of the shared list (genesis/sdk/scalar_ops.h) with the dtypes it must
  // take; its code travels as the kernel's user data (no name lookup per call).
  using In = gn::sdk::scalar::ReduceInputs;
  auto reg = [&](const char* name, Red code, In inputs) {
    void* data = (void*)(intptr_t)code;
    if (inputs == In::any)
      r.kernel(name, kAllDtypes, reduce_kernel_entry, 0, data);
    else if (inputs == In::numeric)
      r.kernel(name, kNumericDtypes, reduce_kernel_entry, 0, data);
    else
      r.kernel(name, kFloatDtypes, reduce_kernel_entry, 0, data);
  };
#define GN_CUDA_REDUCE_REG(name, inputs) reg(#name, Red::name, In::inputs);
  GN_SCALAR_REDUCE_OPS(GN_CUDA_REDUCE_REG)
#undef GN_CUDA_REDUCE_REG
}

}  // namespace gn::cuda
