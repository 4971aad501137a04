// backends/cuda/ops/loss.cu - fused cross entropy forward and backward
// (class dim LAST), semantics of backends/reference/loss.cpp:
//   lse_i  = logsumexp(x_i)
//   loss_i = (1-ls) * (lse_i - x_i[t_i]) + ls * (lse_i - mean_c x_i[c]);  0 for t_i == ignore_index
//   reduction 0: loss (*), 1: sum / #non-ignored (0/0 = NaN), 2: sum
//   grad_i = scale_i * (softmax(x_i) - (1-ls)*onehot(t_i) - ls/C), 0 for ignored rows
//
// Never materialises f32 logits: the forward reads each row once in its own
// dtype with 16-byte loads, keeping an online (max, sum exp, sum x) per thread
// merged across the row group; the backward writes dlogits directly in the
// logits dtype in one more pass, using the lse input only after checking it in
// that same pass (see xent_bwd_kernel: the result equals the reference's, which
// recomputes lse, for any lse passed).  Scratch is O(rows).  A row is served by
// a 32-thread warp (C < 4096) or one 512-thread block.
// Targets outside [0, C) that are not ignore_index fail with GN_ERR_INDEX
// (device flag read back after the launch, nn_common.cuh).
#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

constexpr int kUnroll = 4;  // 16-byte loads in flight per thread

__device__ __forceinline__ float fast_exp(float x) { return exp2f(x * 1.4426950408889634f); }
__device__ __forceinline__ double fast_exp(double x) { return exp(x); }

// (m, s) pairs: s = sum exp(x - m).  Merge keeps NaN (NaN sums) and -inf maxima.
template <class A>
__device__ __forceinline__ void lse_merge(A& m, A& s, A m2, A s2) {
  const A mx = m > m2 ? m : m2;
  if (mx == -INFINITY) return;  // both empty
  s = (m == -INFINITY ? A(0) : s * fast_exp(m - mx)) + (m2 == -INFINITY ? A(0) : s2 * fast_exp(m2 - mx));
  m = mx;
}

// Reduce (m, s, sx) over a row group of TPR threads (TPR = 32: one warp; else
// the whole block).  Result valid in every thread of the group.
template <int TPR, class A>
__device__ __forceinline__ void group_reduce(A& m, A& s, A& sx) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    A m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    sx += __shfl_xor_sync(0xffffffffu, sx, o);
    lse_merge(m, s, m2, s2);
  }
  if constexpr (TPR > 32) {
    __shared__ A sm[TPR / 32], ss[TPR / 32], sxx[TPR / 32];
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
      sm[w] = m;
      ss[w] = s;
      sxx[w] = sx;
    }
    __syncthreads();
    m = sm[0];
    s = ss[0];
    sx = sxx[0];
    for (int i = 1; i < TPR / 32; ++i) {
      lse_merge(m, s, sm[i], ss[i]);
      sx += sxx[i];
    }
  }
}

// (max, sum exp(x - max), sum x) of row x over its row group (TPR threads,
// `lane` of them); valid in every thread of the group on return.
template <int TPR, class T, class A>
__device__ __forceinline__ void row_stats(const T* x, int64_t C, int lane, A& m_out, A& s_out, A& sx_out) {
  A m = -INFINITY, s = 0, sx = 0;
  // fold n values into (m, s): one rescale per group of values
  auto fold = [&](const A* v, auto n_tag) {
    constexpr int N = decltype(n_tag)::value;
    A vm = v[0];
#pragma unroll
    for (int e = 0; e < N; ++e) {
      vm = v[e] > vm ? v[e] : vm;
      sx += v[e];
    }
    if (vm > m) {
      s = m == -INFINITY ? A(0) : s * fast_exp(m - vm);
      m = vm;
    }
    if (m == -INFINITY) return;  // all -inf so far
#pragma unroll
    for (int e = 0; e < N; ++e) s += fast_exp(v[e] - m);
  };
  constexpr int VW = 16 / sizeof(T);
  int64_t head = (int64_t)((16 - (reinterpret_cast<uintptr_t>(x) & 15)) & 15) / sizeof(T);
  if (head > C) head = C;
  const int64_t nvec = (C - head) / VW;
  auto one = [&](int64_t c) {
    A v = (A)x[c];
    fold(&v, std::integral_constant<int, 1>{});
  };
  for (int64_t c = lane; c < head; c += TPR) one(c);
  const Vec<T, VW>* xv = reinterpret_cast<const Vec<T, VW>*>(x + head);
  // kUnroll independent 16-byte loads in flight per thread before their use
  int64_t i = lane;
  for (; i + (kUnroll - 1) * TPR < nvec; i += kUnroll * TPR) {
    Vec<T, VW> raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) raw[u] = xv[i + u * TPR];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      A v[VW];
#pragma unroll
      for (int e = 0; e < VW; ++e) v[e] = (A)raw[u].v[e];
      fold(v, std::integral_constant<int, VW>{});
    }
  }
  for (; i < nvec; i += TPR) {
    Vec<T, VW> raw = xv[i];
    A v[VW];
#pragma unroll
    for (int e = 0; e < VW; ++e) v[e] = (A)raw.v[e];
    fold(v, std::integral_constant<int, VW>{});
  }
  for (int64_t c = head + nvec * VW + lane; c < C; c += TPR) one(c);
  group_reduce<TPR>(m, s, sx);
  m_out = m;
  s_out = s;
  sx_out = sx;
}

// Forward: per row lse and loss.  loss_row gets the per-row loss (acc type);
// for reduction 0 it is written straight to out (dtype T) instead.
template <int TPR, class T, class TI, class L>
__global__ void xent_fwd_kernel(const T* __restrict__ logits, const TI* __restrict__ target, int64_t R, int64_t C,
                                int64_t ignore, acc_t<T> ls, L* __restrict__ lse_out, acc_t<T>* __restrict__ loss_row,
                                T* __restrict__ loss_out, nn::BadIndex bad) {
  using A = acc_t<T>;
  constexpr int RPB = TPR == 32 ? 8 : 1;  // rows per 256/TPR-thread block
  const int lane = TPR == 32 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t r = (int64_t)blockIdx.x * RPB + (TPR == 32 ? threadIdx.x / 32 : 0);
  if (r >= R) return;  // whole group leaves together (RPB rows per block)
  const T* x = logits + r * C;
  A m, s, sx;
  row_stats<TPR>(x, C, lane, m, s, sx);
  if (lane != 0) return;
  const A lse = m == -INFINITY ? A(-INFINITY) : m + log(s);
  lse_out[r] = (L)lse;
  const int64_t t = (int64_t)target[r];
  A loss = 0;
  if (t != ignore) {
    if (t < 0 || t >= C) {
      bad.report(t);
      loss = NAN;
    } else {
      loss = (1 - ls) * (lse - (A)x[t]);
      if (ls != 0) loss += ls * (lse - sx / (A)C);
    }
  }
  if (loss_out)
    loss_out[r] = convert<T>(loss);
  else
    loss_row[r] = loss;
}

// Deterministic reduction of the per-row losses (one block, fixed order) and the
// count of non-ignored rows; writes the scalar loss (mean or sum) and the count.
template <class T, class TI, class A>
__global__ void xent_reduce_kernel(const A* __restrict__ loss_row, const TI* __restrict__ target, int64_t R,
                                   int64_t ignore, int reduction, T* __restrict__ out, double* __restrict__ count_out) {
  __shared__ double ssum[32], scnt[32];
  double sum = 0, cnt = 0;
  for (int64_t i = threadIdx.x; i < R; i += blockDim.x) {
    if (loss_row) sum += (double)loss_row[i];
    cnt += (int64_t)target[i] != ignore;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
  }
  const int w = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    ssum[w] = sum;
    scnt[w] = cnt;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  sum = 0;
  cnt = 0;
  for (int i = 0; i < (int)(blockDim.x / 32); ++i) {
    sum += ssum[i];
    cnt += scnt[i];
  }
  if (out) out[0] = convert<T>(reduction == 1 ? sum / cnt : sum);
  if (count_out) count_out[0] = cnt;
}

// Sum of v over a row group (TPR threads), valid in every thread.
template <int TPR, class A>
__device__ __forceinline__ A group_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (TPR > 32) {
    __shared__ A part[TPR / 32];
    __syncthreads();  // part[] may still be read by a previous call
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    for (int i = 0; i < TPR / 32; ++i) v += part[i];
  }
  return v;
}

// How far sum_c exp(x_c - lse) may stray from 1 for the given lse to be used:
// the resulting gradient error (relative) stays under a quarter of the dtype's
// rounding.  f32/f64 logits always recompute (their gradient must be exact).
template <class T>
constexpr float lse_trust_tol() {
  return 0.f;
}
template <>
constexpr float lse_trust_tol<__nv_bfloat16>() {
  return 1e-3f;
}
template <>
constexpr float lse_trust_tol<__half>() {
  return 1.2e-4f;
}

// Backward: grad row = scale * (exp(x - lse) - (1-ls)*onehot(t) - ls/C).
// The reference recomputes lse from the logits (its lse input is only shape-
// checked).  For 16-bit logits this kernel first trusts the lse input (the
// forward's output in any real use) and checks it in the same pass: sum_c p_c
// must be 1 within lse_trust_tol.  A row that fails the check (a foreign lse,
// NaN/inf logits) is redone with its recomputed lse, so the result matches the
// reference for any lse, and the usual case reads the logits once.
template <int TPR, class T, class TI, class L>
__global__ void __launch_bounds__(TPR == 32 ? 256 : TPR)
    xent_bwd_kernel(const T* __restrict__ grad_loss, const T* __restrict__ logits, const TI* __restrict__ target,
                    const L* __restrict__ lse_in, int64_t R, int64_t C, int64_t ignore, acc_t<T> ls, int reduction,
                    const double* __restrict__ count, T* __restrict__ dx, nn::BadIndex bad) {
  using A = acc_t<T>;
  constexpr int RPB = TPR == 32 ? 8 : 1;
  constexpr int VW = 16 / sizeof(T);
  constexpr float tol = lse_trust_tol<T>();
  const int lane = TPR == 32 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t r = (int64_t)blockIdx.x * RPB + (TPR == 32 ? threadIdx.x / 32 : 0);
  if (r >= R) return;
  const int64_t t = (int64_t)target[r];
  const T* x = logits + r * C;
  T* d = dx + r * C;
  A scale = 0, lse = 0;
  bool valid = t != ignore;
  if (valid && (t < 0 || t >= C)) {
    if (lane == 0) bad.report(t);
    valid = false;
  }
  // every branch below depends on row-uniform values only: the group
  // reductions inside stay convergent
  bool trust = false;
  auto recompute = [&] {
    A m, s, sx;
    row_stats<TPR>(x, C, lane, m, s, sx);
    lse = m == -INFINITY ? A(-INFINITY) : m + log(s);
  };
  if (valid) {
    const A g = reduction == 0 ? (A)grad_loss[r] : (A)grad_loss[0];
    scale = reduction == 1 ? (A)(g / (A)count[0]) : g;
    if constexpr (tol > 0.f) {
      lse = (A)lse_in[r];
      trust = isfinite(lse);
    }
    if (!trust) recompute();
  }
  const A smooth = ls / (A)C, hit = 1 - ls;
  A psum = 0;
  auto grad = [&](int64_t c, T raw) -> T {
    if (!valid) return convert<T>(A(0));
    A p = fast_exp((A)raw - lse);
    psum += p;
    return convert<T>(scale * (p - smooth - (c == t ? hit : A(0))));
  };
  // head / 16-byte vectors / tail as in the forward, writing d alongside (x and d
  // share the alignment when both rows start at the same offset mod 16)
  auto pass = [&] {
    const bool same_align = ((reinterpret_cast<uintptr_t>(x) ^ reinterpret_cast<uintptr_t>(d)) & 15) == 0;
    if (!same_align) {
      for (int64_t c = lane; c < C; c += TPR) d[c] = grad(c, x[c]);
      return;
    }
    int64_t head = (int64_t)((16 - (reinterpret_cast<uintptr_t>(x) & 15)) & 15) / sizeof(T);
    if (head > C) head = C;
    for (int64_t c = lane; c < head; c += TPR) d[c] = grad(c, x[c]);
    const int64_t nvec = (C - head) / VW;
    const Vec<T, VW>* xv = reinterpret_cast<const Vec<T, VW>*>(x + head);
    Vec<T, VW>* dv = reinterpret_cast<Vec<T, VW>*>(d + head);
    int64_t i = lane;
    for (; i + (kUnroll - 1) * TPR < nvec; i += kUnroll * TPR) {
      Vec<T, VW> v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = xv[i + u * TPR];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        Vec<T, VW> o;
#pragma unroll
        for (int e = 0; e < VW; ++e) o.v[e] = grad(head + (i + u * TPR) * VW + e, v[u].v[e]);
        dv[i + u * TPR] = o;
      }
    }
    for (; i < nvec; i += TPR) {
      Vec<T, VW> v = xv[i], o;
#pragma unroll
      for (int e = 0; e < VW; ++e) o.v[e] = grad(head + i * VW + e, v.v[e]);
      dv[i] = o;
    }
    for (int64_t c = head + nvec * VW + lane; c < C; c += TPR) d[c] = grad(c, x[c]);
  };
  pass();
  if constexpr (tol > 0.f) {
    if (trust) {
      const A total = group_sum<TPR>(psum);
      if (!(fabs(total - A(1)) <= (A)tol)) {  // NaN fails too
        recompute();
        pass();
      }
    }
  }
}

constexpr int64_t kWideRow = 4096;  // classes from which a row gets a whole block

template <class TI, class F>
void dispatch_target(int32_t dtype, const char* op, F&& f) {
  if (dtype == GN_I64)
    f(Tag<int64_t>{});
  else if (dtype == GN_I32)
    f(Tag<int32_t>{});
  else
    fail_op(GN_ERR_DTYPE, op, std::string("target must be int32 or int64, got ") + gn_dtype_name(dtype));
}

// f(Tag<T>{}, Tag<TI>{}) for the logits' float dtype and the target's int32 / int64.
template <class F>
void dispatch_xent(int32_t logits, int32_t target, const char* op, F&& f) {
  dispatch_float(logits, op, [&](auto tag) { dispatch_target<int>(target, op, [&](auto ttag) { f(tag, ttag); }); });
}

// f(Tag<L>{}) for the dtype of lse: float32 or float64.
template <class F>
void dispatch_lse(int32_t dtype, const char* op, F&& f) {
  if (dtype == GN_F64)
    f(Tag<double>{});
  else if (dtype == GN_F32)
    f(Tag<float>{});
  else
    fail_op(GN_ERR_DTYPE, op, "lse must be float32 or float64");
}

// The attributes of cross_entropy and its backward.
struct XentAttrs {
  int64_t ignore;     // ignore_index
  double ls;          // label_smoothing
  int64_t reduction;  // 0 none, 1 mean, 2 sum
};
XentAttrs xent_attrs(const char* op, const gn_attr_value* attrs, size_t n_attrs) {
  const XentAttrs a{attr_int(op, attrs, n_attrs, 0), attr_float(op, attrs, n_attrs, 1),
                    attr_int(op, attrs, n_attrs, 2)};
  if (a.reduction < 0 || a.reduction > 2) fail_op(GN_ERR_INVALID_ARGUMENT, op, "reduction must be 0, 1 or 2");
  return a;
}

struct XentShape {
  int64_t R, C;
};

XentShape xent_shape(const char* op, const gn_tensor_view& logits, const gn_tensor_view& target) {
  if (logits.ndim < 1) fail_op(GN_ERR_SHAPE, op, "logits must be at least 1-D");
  XentShape s{1, logits.shape[logits.ndim - 1]};
  if (target.ndim != logits.ndim - 1)
    fail_op(GN_ERR_SHAPE, op, "target must have the logits shape without the class dim");
  for (int d = 0; d < target.ndim; ++d) {
    if (target.shape[d] != logits.shape[d])
      fail_op(GN_ERR_SHAPE, op, "target shape " + shape_str(target) + " does not match logits " + shape_str(logits));
    s.R *= target.shape[d];
  }
  return s;
}

// in: logits (*,C), target (*); out: loss, lse (*); attrs: ignore_index, label_smoothing, reduction
GN_SDK_KERNEL(cross_entropy_kernel) {
  const char* op = "cross_entropy";
  need_io(op, n_in, 2, n_out, 2);
  DeviceGuard guard(ctx);
  const XentAttrs at = xent_attrs(op, attrs, n_attrs);
  const XentShape s = xent_shape(op, in[0], in[1]);
  cudaStream_t st = stream(ctx);
  nn::IndexCheck check(ctx);
  dispatch_xent(in[0].dtype, in[1].dtype, op, [&](auto tag, auto ttag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    using TI = typename decltype(ttag)::type;
    const T* x = data_ptr<const T>(in[0]);
    const TI* t = data_ptr<const TI>(in[1]);
    A* rows = at.reduction == 0 ? nullptr : static_cast<A*>(workspace(ctx, std::max<int64_t>(s.R, 1) * sizeof(A)));
    T* loss_out = at.reduction == 0 ? data_ptr<T>(out[0]) : nullptr;
    auto launch = [&](auto lse_tag) {
      using L = typename decltype(lse_tag)::type;
      L* lse = data_ptr<L>(out[1]);
      if (s.R == 0) return;
      if (s.C >= kWideRow)
        xent_fwd_kernel<512, T, TI, L>
            <<<(unsigned)s.R, 512, 0, st>>>(x, t, s.R, s.C, at.ignore, (A)at.ls, lse, rows, loss_out, check.dev);
      else
        xent_fwd_kernel<32, T, TI, L><<<(unsigned)((s.R + 7) / 8), 256, 0, st>>>(x, t, s.R, s.C, at.ignore, (A)at.ls,
                                                                                 lse, rows, loss_out, check.dev);
      GN_CUDA_CHECK_LAUNCH();
    };
    dispatch_lse(out[1].dtype, op, launch);
    if (at.reduction != 0) {
      xent_reduce_kernel<T, TI, A>
          <<<1, 1024, 0, st>>>(rows, t, s.R, at.ignore, (int)at.reduction, data_ptr<T>(out[0]), nullptr);
      GN_CUDA_CHECK_LAUNCH();
    }
  });
  check.finish(op, s.C);
}

// in: grad_loss, logits (*,C), target (*), lse (*); out: grad_logits
GN_SDK_KERNEL(cross_entropy_backward_kernel) {
  const char* op = "cross_entropy_backward";
  need_io(op, n_in, 4, n_out, 1);
  DeviceGuard guard(ctx);
  const XentAttrs at = xent_attrs(op, attrs, n_attrs);
  const XentShape s = xent_shape(op, in[1], in[2]);
  if (in[0].dtype != in[1].dtype) fail_op(GN_ERR_DTYPE, op, "grad_loss must have the logits dtype");
  cudaStream_t st = stream(ctx);
  nn::IndexCheck check(ctx);
  dispatch_xent(in[1].dtype, in[2].dtype, op, [&](auto tag, auto ttag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    using TI = typename decltype(ttag)::type;
    const TI* t = data_ptr<const TI>(in[2]);
    if (s.R == 0) return;
    double* count = nullptr;
    if (at.reduction == 1) {
      count = static_cast<double*>(workspace(ctx, sizeof(double)));
      xent_reduce_kernel<T, TI, A><<<1, 1024, 0, st>>>(nullptr, t, s.R, at.ignore, 1, nullptr, count);
      GN_CUDA_CHECK_LAUNCH();
    }
    auto launch = [&](auto lse_tag) {
      using L = typename decltype(lse_tag)::type;
      const L* lse = data_ptr<const L>(in[3]);
      const T* g = data_ptr<const T>(in[0]);
      const T* x = data_ptr<const T>(in[1]);
      T* dx = data_ptr<T>(out[0]);
      if (s.C >= kWideRow)
        xent_bwd_kernel<512, T, TI, L><<<(unsigned)s.R, 512, 0, st>>>(g, x, t, lse, s.R, s.C, at.ignore, (A)at.ls,
                                                                      (int)at.reduction, count, dx, check.dev);
      else
        xent_bwd_kernel<32, T, TI, L><<<(unsigned)((s.R + 7) / 8), 256, 0, st>>>(
            g, x, t, lse, s.R, s.C, at.ignore, (A)at.ls, (int)at.reduction, count, dx, check.dev);
      GN_CUDA_CHECK_LAUNCH();
    };
    dispatch_lse(in[3].dtype, op, launch);
  });
  check.finish(op, s.C);
}

}  // namespace

// Dense views only (the core copies strided ones; a strided copy is still in
// the logits dtype, never f32).
GN_CUDA_FAMILY(loss) {
  r.kernel("cross_entropy", kFloatDtypes, cross_entropy_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cross_entropy_backward", kFloatDtypes, cross_entropy_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
