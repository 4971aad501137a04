// backends/cuda/ops/attention.cu - scaled_dot_product_attention and its backward.
//
// q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv); query head h reads KV head
// h / (Hq/Hkv) (GQA, never materialised).  Semantics of backends/reference/
// attention.cpp: causal 1 keeps j <= i (top-left), 2 keeps j <= i + Sk - Sq
// (bottom-right); an optional mask (bool keep / float additive) broadcasts to
// (B,Hq,Sq,Sk); scale NaN = 1/sqrt(D); a row with no kept key gives out 0 and
// lse -inf, and no gradient.
//
// Three forward paths, tried in this order:
//   decode (kernels/attn_decode.cuh): Sq <= 8, bf16/f16/f32, D and Dv <= 256
//     and multiples of 16 bytes, K/V rows contiguous and 16-byte aligned; any
//     mask, any q/out strides.  Split-K over key chunks (one CTA per (b, kv
//     head, chunk) serves all query heads of the group), partial results in
//     the call's workspace, merged by a second kernel; graph-capture safe.
//   flash (kernels/flash_*.cuh): bf16/f16, D == Dv in {64, 128}, no mask, last
//     dims contiguous and rows 16-byte aligned.  Tensor cores, f32 accumulation;
//     the backward uses the saved lse and recomputes P tile by tile.
//   generic (this file): everything else (f64, other head dims up to 512, long
//     masked queries).  One warp per query row, online softmax in f32 (f64 for
//     f64); the backward recomputes lse, then dK/dV with one warp per key row.
//     Correct everywhere, not fast.
// No backward path uses atomics: gradients are the same bit for bit run to run.
#include <algorithm>
#include <cmath>

#include "common.cuh"
#include "kernels/attn_decode.cuh"
#include "kernels/flash_launch.cuh"

namespace gn::cuda {
namespace {

// ----------------------------------------------------------------------------
// shapes

struct AttnDims {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
};

AttnDims attn_dims(const char* op, const gn_tensor_view& q, const gn_tensor_view& k, const gn_tensor_view& v) {
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4) fail_op(GN_ERR_SHAPE, op, "q, k and v must be 4-D");
  AttnDims d{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  if (k.shape[0] != d.B || v.shape[0] != d.B || k.shape[3] != d.D || v.shape[1] != d.Hkv || v.shape[2] != d.Sk)
    fail_op(GN_ERR_SHAPE, op, "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v) + " do not agree");
  if (d.Hkv == 0 ? d.Hq != 0 : d.Hq % d.Hkv != 0)
    fail_op(GN_ERR_SHAPE, op, "Hq " + std::to_string(d.Hq) + " is not a multiple of Hkv " + std::to_string(d.Hkv));
  return d;
}

void expect_shape4(const char* op, const char* what, const gn_tensor_view& t, int64_t a, int64_t b, int64_t c,
                   int64_t e) {
  if (t.ndim != 4 || t.shape[0] != a || t.shape[1] != b || t.shape[2] != c || t.shape[3] != e)
    fail_op(GN_ERR_SHAPE, op, std::string(what) + " has shape " + shape_str(t));
}

// Element strides of a 4-D view, 0 where a dim is broadcast (size 1).
struct Str4 {
  int64_t s[4];
};
Str4 str4(const gn_tensor_view& t) {
  Str4 r{};
  for (int i = 0; i < 4; ++i) r.s[i] = t.shape[i] == 1 ? 0 : t.strides[i];
  return r;
}
// A mask broadcast to (B,Hq,Sq,Sk): right-aligned, size-1 dims stride 0.
Str4 mask_str(const char* op, const gn_tensor_view& m, const AttnDims& d) {
  if (m.ndim > 4) fail_op(GN_ERR_SHAPE, op, "mask has more than 4 dims");
  const int64_t full[4] = {d.B, d.Hq, d.Sq, d.Sk};
  Str4 r{};
  for (int i = 0; i < 4; ++i) {
    const int j = i - (4 - m.ndim);
    if (j < 0) continue;
    if (m.shape[j] != 1 && m.shape[j] != full[i]) fail_op(GN_ERR_SHAPE, op, "mask does not broadcast");
    r.s[i] = m.shape[j] == 1 ? 0 : m.strides[j];
  }
  return r;
}

// Strides into a kernel's field: a Str4 or a plain int64_t[4].
void put_str4(Str4& dst, const Str4& s) { dst = s; }
void put_str4(int64_t (&dst)[4], const Str4& s) {
  for (int i = 0; i < 4; ++i) dst[i] = s.s[i];
}

// q, k and v pointers and broadcast strides of a kernel's arguments (GenericArgs, decode::Params).
template <class P>
void set_qkv(P& p, const gn_tensor_view& q, const gn_tensor_view& k, const gn_tensor_view& v) {
  p.q = gn_view_ptr(&q);
  p.k = gn_view_ptr(&k);
  p.v = gn_view_ptr(&v);
  put_str4(p.sq, str4(q));
  put_str4(p.sk, str4(k));
  put_str4(p.sv, str4(v));
}

// The mask fields of a kernel's arguments: none (mask_dtype -1) when m is null, else a bool or
// floating-point mask broadcast to (B,Hq,Sq,Sk).
template <class P>
void set_mask(const char* op, P& p, const gn_tensor_view* m, const AttnDims& d) {
  p.mask_dtype = -1;
  if (!m) return;
  if (m->dtype != GN_BOOL && !gn_dtype_is_float(m->dtype))
    fail_op(GN_ERR_DTYPE, op, "mask must be bool or floating point");
  p.mask = gn_view_ptr(m);
  p.mask_dtype = m->dtype;
  p.mask_esize = (int32_t)gn_dtype_size(m->dtype);
  put_str4(p.sm, mask_str(op, *m, d));
}

// The (B,Hq,Sq) lse output of a kernel's arguments: f32 or f64, strided.
void set_lse(const char* op, const gn_tensor_view& t, void*& lse, int& lse_f64, int64_t (&s)[3]) {
  if (t.dtype != GN_F32 && t.dtype != GN_F64) fail_op(GN_ERR_DTYPE, op, "lse must be f32 or f64");
  lse = gn_view_ptr(&t);
  lse_f64 = t.dtype == GN_F64;
  for (int i = 0; i < 3; ++i) s[i] = t.strides[i];
}

// B, Hq, Hkv, Sq and Sk of a kernel's arguments (flash::Params, decode::Params).
template <class P>
void set_dims(P& p, const AttnDims& d) {
  p.B = (int)d.B;
  p.Hq = (int)d.Hq;
  p.Hkv = (int)d.Hkv;
  p.Sq = (int)d.Sq;
  p.Sk = (int)d.Sk;
}

// Batch, head and row strides of one flash operand.
void flash_strides(const gn_tensor_view& t, int64_t& sb, int64_t& sh, int64_t& ss) {
  sb = t.strides[0];
  sh = t.strides[1];
  ss = t.strides[2];
}

// ----------------------------------------------------------------------------
// generic path

constexpr int kMaxPerLane = 16;  // head dims up to 32 * 16 = 512

struct GenericArgs {
  const void *q, *k, *v, *mask, *dout;
  void *out, *dq;
  void* lse;                // LseT, strided (B,Hq,Sq)
  void *row_lse, *row_dot;  // backward: A scratch, dense (B,Hq,Sq): lse and sum_j P dP
  Str4 sq, sk, sv, so, sm, sdo, sdq;
  int64_t lse_s[3];
  int32_t mask_dtype;  // -1 = no mask
  int32_t mask_esize;  // bytes per mask element
  int lse_f64;
  AttnDims d;
  int causal;
  double scale;
};

template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float gexp(float x) { return __expf(x); }
__device__ __forceinline__ double gexp(double x) { return exp(x); }

// Whether key j is kept for query row (b, h, i), and the additive mask value.
template <class A>
__device__ __forceinline__ bool generic_keep(const GenericArgs& g, int64_t b, int64_t h, int64_t i, int64_t j,
                                             A& madd) {
  const AttnDims& d = g.d;
  madd = 0;
  if ((g.causal == 1 && j > i) || (g.causal == 2 && j > i + d.Sk - d.Sq)) return false;
  if (g.mask_dtype >= 0) {
    const char* mp =
        (const char*)g.mask + (b * g.sm.s[0] + h * g.sm.s[1] + i * g.sm.s[2] + j * g.sm.s[3]) * g.mask_esize;
    const double mv = gn::sdk::load(mp, g.mask_dtype);
    if (g.mask_dtype == GN_BOOL) return mv != 0.0;
    madd = (A)mv;
  }
  return true;
}

// Score of key j for the row (already holding q in registers); -inf = dropped.
template <class T, class A>
__device__ __forceinline__ A generic_score(const GenericArgs& g, const A (&qr)[kMaxPerLane], const T* kh, int64_t b,
                                           int64_t h, int64_t i, int64_t j, int lane) {
  const AttnDims& d = g.d;
  A madd;
  if (!generic_keep(g, b, h, i, j, madd)) return -INFINITY;
  A dot = 0;
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D) dot += qr[e] * (A)kh[j * g.sk.s[2] + c * g.sk.s[3]];
  }
  dot = warp_sum(dot);
  return dot * (A)g.scale + madd;
}

template <class T, class A>
__global__ void attn_fwd_generic(GenericArgs g) {
  const AttnDims& d = g.d;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= d.B * d.Hq * d.Sq) return;
  const int64_t i = row % d.Sq, h = (row / d.Sq) % d.Hq, b = row / (d.Sq * d.Hq), hk = h / (d.Hq / d.Hkv);
  const T* qp = (const T*)g.q + b * g.sq.s[0] + h * g.sq.s[1] + i * g.sq.s[2];
  const T* kh = (const T*)g.k + b * g.sk.s[0] + hk * g.sk.s[1];
  const T* vh = (const T*)g.v + b * g.sv.s[0] + hk * g.sv.s[1];
  A qr[kMaxPerLane], o[kMaxPerLane];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    qr[e] = c < d.D ? (A)qp[c * g.sq.s[3]] : A(0);
    o[e] = 0;
  }
  A m = -INFINITY, l = 0;
  for (int64_t j = 0; j < d.Sk; ++j) {
    const A s = generic_score<T, A>(g, qr, kh, b, h, i, j, lane);
    if (s == -INFINITY) continue;
    const A mn = s > m ? s : m;
    const A alpha = m == -INFINITY ? A(0) : gexp(m - mn), p = gexp(s - mn);
    l = l * alpha + p;
#pragma unroll
    for (int e = 0; e < kMaxPerLane; ++e) {
      const int64_t c = lane + 32 * e;
      if (c < d.Dv) o[e] = o[e] * alpha + p * (A)vh[j * g.sv.s[2] + c * g.sv.s[3]];
    }
    m = mn;
  }
  T* op = (T*)g.out + b * g.so.s[0] + h * g.so.s[1] + i * g.so.s[2];
  const A inv = l > 0 ? A(1) / l : A(0);
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.Dv) op[c * g.so.s[3]] = convert<T>(o[e] * inv);
  }
  if (lane == 0 && g.lse) {
    const A lse = l > 0 ? m + log(l) : A(-INFINITY);
    const int64_t off = b * g.lse_s[0] + h * g.lse_s[1] + i * g.lse_s[2];
    if (g.lse_f64)
      ((double*)g.lse)[off] = (double)lse;
    else
      ((float*)g.lse)[off] = (float)lse;
  }
}

// The generic backward is two passes, both without atomics so that a gradient is
// the same bit for bit on every run:
//   attn_bwd_generic_dq:  one warp per query row: recompute lse, rowdot =
//                         sum_j P dP (both kept in scratch), then dq;
//   attn_bwd_generic_dkv: one warp per key row: walk the group's query heads and
//                         the rows that can see the key, in order, for dk and dv.
template <class T, class A>
__global__ void attn_bwd_generic_dq(GenericArgs g) {
  const AttnDims& d = g.d;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= d.B * d.Hq * d.Sq) return;
  const int64_t i = row % d.Sq, h = (row / d.Sq) % d.Hq, b = row / (d.Sq * d.Hq), hk = h / (d.Hq / d.Hkv);
  const T* qp = (const T*)g.q + b * g.sq.s[0] + h * g.sq.s[1] + i * g.sq.s[2];
  const T* dop = (const T*)g.dout + b * g.sdo.s[0] + h * g.sdo.s[1] + i * g.sdo.s[2];
  const T* kh = (const T*)g.k + b * g.sk.s[0] + hk * g.sk.s[1];
  const T* vh = (const T*)g.v + b * g.sv.s[0] + hk * g.sv.s[1];
  A qr[kMaxPerLane], dor[kMaxPerLane], dq[kMaxPerLane];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    qr[e] = c < d.D ? (A)qp[c * g.sq.s[3]] : A(0);
    dor[e] = c < d.Dv ? (A)dop[c * g.sdo.s[3]] : A(0);
    dq[e] = 0;
  }
  A m = -INFINITY, l = 0;
  for (int64_t j = 0; j < d.Sk; ++j) {
    const A s = generic_score<T, A>(g, qr, kh, b, h, i, j, lane);
    if (s == -INFINITY) continue;
    const A mn = s > m ? s : m;
    l = l * (m == -INFINITY ? A(0) : gexp(m - mn)) + gexp(s - mn);
    m = mn;
  }
  A lse = -INFINITY, rowdot = 0;
  if (l > 0) {
    lse = m + log(l);
    auto dp_of = [&](int64_t j) {
      A acc = 0;
#pragma unroll
      for (int e = 0; e < kMaxPerLane; ++e) {
        const int64_t c = lane + 32 * e;
        if (c < d.Dv) acc += dor[e] * (A)vh[j * g.sv.s[2] + c * g.sv.s[3]];
      }
      return warp_sum(acc);
    };
    for (int64_t j = 0; j < d.Sk; ++j) {
      const A s = generic_score<T, A>(g, qr, kh, b, h, i, j, lane);
      if (s == -INFINITY) continue;
      rowdot += gexp(s - lse) * dp_of(j);
    }
    for (int64_t j = 0; j < d.Sk; ++j) {
      const A s = generic_score<T, A>(g, qr, kh, b, h, i, j, lane);
      if (s == -INFINITY) continue;
      const A ds = gexp(s - lse) * (dp_of(j) - rowdot) * (A)g.scale;
#pragma unroll
      for (int e = 0; e < kMaxPerLane; ++e) {
        const int64_t c = lane + 32 * e;
        if (c < d.D) dq[e] += ds * (A)kh[j * g.sk.s[2] + c * g.sk.s[3]];
      }
    }
  }
  if (lane == 0) {
    ((A*)g.row_lse)[row] = lse;
    ((A*)g.row_dot)[row] = rowdot;
  }
  T* dqp = (T*)g.dq + b * g.sdq.s[0] + h * g.sdq.s[1] + i * g.sdq.s[2];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D) dqp[c * g.sdq.s[3]] = convert<T>(dq[e]);
  }
}

template <class T, class A>
__global__ void attn_bwd_generic_dkv(GenericArgs g, Str4 sdk, Str4 sdv, void* dk_out, void* dv_out) {
  const AttnDims& d = g.d;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= d.B * d.Hkv * d.Sk) return;
  const int64_t j = row % d.Sk, hk = (row / d.Sk) % d.Hkv, b = row / (d.Sk * d.Hkv);
  const int64_t group = d.Hq / d.Hkv;
  const T* kp = (const T*)g.k + b * g.sk.s[0] + hk * g.sk.s[1] + j * g.sk.s[2];
  const T* vp = (const T*)g.v + b * g.sv.s[0] + hk * g.sv.s[1] + j * g.sv.s[2];
  A kr[kMaxPerLane], vr[kMaxPerLane], dk[kMaxPerLane], dv[kMaxPerLane];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    kr[e] = c < d.D ? (A)kp[c * g.sk.s[3]] : A(0);
    vr[e] = c < d.Dv ? (A)vp[c * g.sv.s[3]] : A(0);
    dk[e] = dv[e] = 0;
  }
  // the first query row that can see key j under a causal mask
  int64_t i0 = 0;
  if (g.causal == 1) i0 = j;
  if (g.causal == 2) i0 = j - (d.Sk - d.Sq);
  if (i0 < 0) i0 = 0;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    const T* qh = (const T*)g.q + b * g.sq.s[0] + h * g.sq.s[1];
    const T* doh = (const T*)g.dout + b * g.sdo.s[0] + h * g.sdo.s[1];
    const int64_t r0 = (b * d.Hq + h) * d.Sq;
    for (int64_t i = i0; i < d.Sq; ++i) {
      const A lse = ((const A*)g.row_lse)[r0 + i];
      A madd;
      if (lse == -INFINITY || !generic_keep(g, b, h, i, j, madd)) continue;
      A qi[kMaxPerLane], doi[kMaxPerLane], dot = 0, dp = 0;
#pragma unroll
      for (int e = 0; e < kMaxPerLane; ++e) {
        const int64_t c = lane + 32 * e;
        qi[e] = c < d.D ? (A)qh[i * g.sq.s[2] + c * g.sq.s[3]] : A(0);
        doi[e] = c < d.Dv ? (A)doh[i * g.sdo.s[2] + c * g.sdo.s[3]] : A(0);
        dot += qi[e] * kr[e];
        dp += doi[e] * vr[e];
      }
      dot = warp_sum(dot);
      dp = warp_sum(dp);
      const A p = gexp(dot * (A)g.scale + madd - lse);
      const A ds = p * (dp - ((const A*)g.row_dot)[r0 + i]) * (A)g.scale;
#pragma unroll
      for (int e = 0; e < kMaxPerLane; ++e) {
        dk[e] += ds * qi[e];
        dv[e] += p * doi[e];
      }
    }
  }
  T* dkp = (T*)dk_out + b * sdk.s[0] + hk * sdk.s[1] + j * sdk.s[2];
  T* dvp = (T*)dv_out + b * sdv.s[0] + hk * sdv.s[1] + j * sdv.s[2];
#pragma unroll
  for (int e = 0; e < kMaxPerLane; ++e) {
    const int64_t c = lane + 32 * e;
    if (c < d.D) dkp[c * sdk.s[3]] = convert<T>(dk[e]);
    if (c < d.Dv) dvp[c * sdv.s[3]] = convert<T>(dv[e]);
  }
}

// ----------------------------------------------------------------------------
// flash eligibility

bool rows_aligned(const gn_tensor_view& t) {
  // last dim contiguous, every other stride a multiple of 8 elements (16 bytes), 16-byte base
  if (t.strides[3] != 1) return false;
  for (int i = 0; i < 3; ++i)
    if (t.shape[i] != 1 && t.strides[i] % 8 != 0) return false;
  return aligned16(gn_view_ptr(&t));
}

bool lse_dense_f32(const gn_tensor_view& l) { return l.dtype == GN_F32 && is_contiguous(l); }

bool flash_ok(const AttnDims& d, int32_t dt, bool has_mask) {
  return (dt == GN_BF16 || dt == GN_F16) && !has_mask && d.D == d.Dv && flash::flash_head_dim_ok((int)d.D) &&
         d.Sq < (1 << 30) && d.Sk < (1 << 30) && d.Hkv > 0 &&
         // the 1-D grids (tiles x heads, flash_launch.cuh) stay below 2^31 CTAs
         (std::max(d.Sq, d.Sk) / 16 + 1) * d.B * d.Hq < (int64_t(1) << 31);
}

flash::Params flash_params(const AttnDims& d, const gn_tensor_view& q, const gn_tensor_view& k, const gn_tensor_view& v,
                           int causal, double scale) {
  flash::Params p{};
  p.q = gn_view_ptr(&q);
  p.k = gn_view_ptr(&k);
  p.v = gn_view_ptr(&v);
  flash_strides(q, p.q_sb, p.q_sh, p.q_ss);
  flash_strides(k, p.k_sb, p.k_sh, p.k_ss);
  flash_strides(v, p.v_sb, p.v_sh, p.v_ss);
  set_dims(p, d);
  p.causal = causal != 0;
  p.causal_off = causal == 2 ? (int)(d.Sk - d.Sq) : 0;
  p.scale = (float)scale;
  return p;
}

double resolve_scale(double s, int64_t D) { return std::isnan(s) ? 1.0 / std::sqrt((double)D) : s; }

int64_t causal_attr(const char* op, const gn_attr_value* attrs, size_t n) {
  const int64_t c = attr_int(op, attrs, n, 0);
  if (c < 0 || c > 2) fail_op(GN_ERR_INVALID_ARGUMENT, op, "causal must be 0, 1 or 2");
  return c;
}

// ----------------------------------------------------------------------------
// decode path (few query rows, split-K)

constexpr int64_t kDecodeMaxSq = 8;

// K/V usable by the decode kernel: rows of T contiguous, 16-byte aligned rows.
bool decode_rows_ok(const gn_tensor_view& t, int64_t esize) {
  const int64_t e = 16 / esize;
  if (t.strides[3] != 1 || t.shape[3] % e != 0) return false;
  const Str4 s = str4(t);
  for (int i = 0; i < 3; ++i)
    if (s.s[i] % e != 0) return false;
  return aligned16(gn_view_ptr(&t));
}

bool decode_ok(const AttnDims& d, int32_t dt, const gn_tensor_view& k, const gn_tensor_view& v) {
  if (dt != GN_BF16 && dt != GN_F16 && dt != GN_F32) return false;
  const int64_t es = dt == GN_F32 ? 4 : 2;
  return d.Sq <= kDecodeMaxSq && d.Sk > 0 && d.Sk < (int64_t(1) << 30) && d.Hkv > 0 && d.D > 0 && d.Dv > 0 &&
         d.D <= decode::kMaxHeadDim && d.Dv <= decode::kMaxHeadDim && d.B * d.Hq < (int64_t(1) << 24) &&
         decode_rows_ok(k, es) && decode_rows_ok(v, es);
}

// q, k, v, [mask] -> out, [lse]; shapes and dtypes already checked.
void decode_fwd(const gn_kernel_ctx* ctx, const gn_tensor_view* in, bool has_mask, const gn_tensor_view* out,
                bool has_lse, const AttnDims& d, int causal, double scale) {
  const char* op = "scaled_dot_product_attention";
  const int32_t dt = out[0].dtype;
  decode::Params p{};
  set_qkv(p, in[0], in[1], in[2]);
  p.out = gn_view_ptr(&out[0]);
  put_str4(p.so, str4(out[0]));
  set_mask(op, p, has_mask ? &in[3] : nullptr, d);
  if (has_lse) set_lse(op, out[1], p.lse, p.lse_f64, p.slse);
  set_dims(p, d);
  p.D = (int)d.D;
  p.Dv = (int)d.Dv;
  p.causal = causal;
  p.scale_log2 = (float)(scale * 1.4426950408889634);
  // causal 1 keeps j <= i < Sq: later keys are dropped for every row
  p.sk_eff = causal == 1 ? (int)std::min(d.Sk, d.Sq) : (int)d.Sk;

  // rows of a (b, kv head) group, balanced over row blocks of <= kMaxRows.
  // Few groups (decode at a small batch: B * Hkv CTAs of 64-key chunks would
  // not cover the SMs): one row per CTA and 32-key chunks, so the grid spreads
  // over the SMs and each CTA's serial chain is short; the group's K/V tiles
  // are then read once per row, the repeats from L2.
  const int group_rows = (int)(d.Hq / d.Hkv * d.Sq);
  const int64_t sms = sm_count(ctx);
  const bool few = d.B * d.Hkv * ((p.sk_eff + 63) / 64) < sms;
  const int64_t gran = few ? 32 : 64;  // keys per chunk, a multiple of
  p.row_blocks = few ? group_rows : (group_rows + decode::kMaxRows - 1) / decode::kMaxRows;
  p.rows_per_cta = (group_rows + p.row_blocks - 1) / p.row_blocks;
  // lanes per key: one 16-byte vector of K each, up to a warp
  const int es = dt == GN_F32 ? 4 : 2, nvk = p.D * es / 16;
  p.lanes = 1;
  while (p.lanes < nvk && p.lanes < 32) p.lanes *= 2;
  // largest key tile that keeps shared memory within the default 48 KiB
  auto smem_of = [&](int tk) {
    return dt == GN_F32 ? decode::smem_bytes<float>(tk, p.rows_per_cta, p.D, p.Dv)
                        : decode::smem_bytes<__half>(tk, p.rows_per_cta, p.D, p.Dv);
  };
  p.tk = 64;
  while (p.tk > 8 && smem_of(p.tk) > 48 * 1024) p.tk /= 2;
  const int smem = smem_of(p.tk);
  // key chunks: about two CTAs per SM in all (both resident at once), chunks
  // of a multiple of `gran` keys; fewer chunks, less to merge
  const int64_t groups = d.B * d.Hkv * p.row_blocks;
  const int64_t target = 2 * sms;
  int64_t nsplit = std::min<int64_t>((target + groups - 1) / groups, (p.sk_eff + gran - 1) / gran);
  nsplit = std::clamp<int64_t>(nsplit, 1, decode::kMaxSplits);
  int64_t chunk = (p.sk_eff + nsplit - 1) / nsplit;
  chunk = (chunk + gran - 1) / gran * gran;
  nsplit = (p.sk_eff + chunk - 1) / chunk;
  p.chunk = (int)chunk;
  p.nsplit = (int)nsplit;
  if (groups >= (int64_t(1) << 31)) fail_op(GN_ERR_UNSUPPORTED, op, "too many heads for the decode kernel");

  const int64_t rows = d.B * d.Hq * d.Sq;
  if (p.nsplit > 1) {
    // workspace from the call (capture-safe): partial o, then (m, l), per (row, chunk)
    const size_t no = (size_t)rows * p.nsplit * p.Dv, nml = (size_t)rows * p.nsplit * 2;
    float* ws = static_cast<float*>(workspace(ctx, (no + nml) * sizeof(float)));
    p.part_o = ws;
    p.part_ml = ws + no;
  }
  cudaStream_t st = stream(ctx);
  const dim3 grid((unsigned)groups, (unsigned)p.nsplit);
  const unsigned cgrid = (unsigned)rows;  // one CTA per (b, h, i)
  if (dt == GN_BF16) {
    launch_pdl<decode::decode_kernel<__nv_bfloat16>>(grid, decode::kThreads, smem, st, p);
    if (p.nsplit > 1) launch_pdl<decode::decode_combine<__nv_bfloat16>>(cgrid, decode::kCombineThreads, 0, st, p);
  } else if (dt == GN_F16) {
    launch_pdl<decode::decode_kernel<__half>>(grid, decode::kThreads, smem, st, p);
    if (p.nsplit > 1) launch_pdl<decode::decode_combine<__half>>(cgrid, decode::kCombineThreads, 0, st, p);
  } else {
    launch_pdl<decode::decode_kernel<float>>(grid, decode::kThreads, smem, st, p);
    if (p.nsplit > 1) launch_pdl<decode::decode_combine<float>>(cgrid, decode::kCombineThreads, 0, st, p);
  }
}

// ----------------------------------------------------------------------------
// kernels

// in: q, k, v, [mask]; out: out, lse; attrs: causal, scale
GN_SDK_KERNEL(sdpa_kernel) {
  const char* op = "scaled_dot_product_attention";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard guard(ctx);
  const int64_t causal = causal_attr(op, attrs, n_attrs);
  const AttnDims d = attn_dims(op, in[0], in[1], in[2]);
  const double scale = resolve_scale(attr_float(op, attrs, n_attrs, 1), d.D);
  expect_shape4(op, "out", out[0], d.B, d.Hq, d.Sq, d.Dv);
  const bool has_lse = n_out > 1;
  if (has_lse && (out[1].ndim != 3 || out[1].shape[0] != d.B || out[1].shape[1] != d.Hq || out[1].shape[2] != d.Sq))
    fail_op(GN_ERR_SHAPE, op, "lse has shape " + shape_str(out[1]));
  const int32_t dt = out[0].dtype;
  for (int i = 0; i < 3; ++i)
    if (in[i].dtype != dt) fail_op(GN_ERR_DTYPE, op, "q, k, v and out must share one dtype");
  const bool has_mask = n_in > 3;
  cudaStream_t st = stream(ctx);
  if (d.B * d.Hq * d.Sq == 0) return;
  if (decode_ok(d, dt, in[1], in[2])) {
    decode_fwd(ctx, in, has_mask, out, has_lse, d, (int)causal, scale);
    return;
  }
  if (flash_ok(d, dt, has_mask) && rows_aligned(in[0]) && rows_aligned(in[1]) && rows_aligned(in[2]) &&
      rows_aligned(out[0]) && (!has_lse || lse_dense_f32(out[1])) && d.Sk > 0) {
    flash::Params p = flash_params(d, in[0], in[1], in[2], (int)causal, scale);
    p.out = gn_view_ptr(&out[0]);
    flash_strides(out[0], p.o_sb, p.o_sh, p.o_ss);
    p.lse = has_lse ? data_ptr<float>(out[1])
                    : static_cast<float*>(workspace(ctx, (size_t)(d.B * d.Hq * d.Sq) * sizeof(float)));
    GN_CUDA_CHECK(flash::flash_fwd(p, dt == GN_BF16 ? flash::Half16::bf16 : flash::Half16::f16, (int)d.D, st));
    return;
  }
  if (d.D > 32 * kMaxPerLane || d.Dv > 32 * kMaxPerLane)
    fail_op(GN_ERR_UNSUPPORTED, op, "head dims above 512 are not supported on cuda");
  GenericArgs g{};
  set_qkv(g, in[0], in[1], in[2]);
  g.out = gn_view_ptr(&out[0]);
  g.so = str4(out[0]);
  set_mask(op, g, has_mask ? &in[3] : nullptr, d);
  if (has_lse) set_lse(op, out[1], g.lse, g.lse_f64, g.lse_s);
  g.d = d;
  g.causal = (int)causal;
  g.scale = scale;
  const int64_t rows = d.B * d.Hq * d.Sq;
  dispatch_float(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    attn_fwd_generic<T, A><<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(g);
  });
  GN_CUDA_CHECK_LAUNCH();
}

// in: grad_out, q, k, v, out, lse, [mask]; out: grad_q, grad_k, grad_v; attrs: causal, scale
GN_SDK_KERNEL(sdpa_backward_kernel) {
  const char* op = "scaled_dot_product_attention_backward";
  need_io(op, n_in, 6, n_out, 3);
  DeviceGuard guard(ctx);
  const int64_t causal = causal_attr(op, attrs, n_attrs);
  const AttnDims d = attn_dims(op, in[1], in[2], in[3]);
  const double scale = resolve_scale(attr_float(op, attrs, n_attrs, 1), d.D);
  expect_shape4(op, "grad_out", in[0], d.B, d.Hq, d.Sq, d.Dv);
  expect_shape4(op, "out", in[4], d.B, d.Hq, d.Sq, d.Dv);
  if (in[5].ndim != 3 || in[5].shape[0] != d.B || in[5].shape[1] != d.Hq || in[5].shape[2] != d.Sq)
    fail_op(GN_ERR_SHAPE, op, "lse has shape " + shape_str(in[5]));
  expect_shape4(op, "grad_q", out[0], d.B, d.Hq, d.Sq, d.D);
  expect_shape4(op, "grad_k", out[1], d.B, d.Hkv, d.Sk, d.D);
  expect_shape4(op, "grad_v", out[2], d.B, d.Hkv, d.Sk, d.Dv);
  const int32_t dt = out[0].dtype;
  for (int i : {0, 1, 2, 3, 4})
    if (in[i].dtype != dt) fail_op(GN_ERR_DTYPE, op, "grad_out, q, k, v, out and the grads must share one dtype");
  const bool has_mask = n_in > 6;
  cudaStream_t st = stream(ctx);
  const int64_t nq = d.B * d.Hq * d.Sq, nk = d.B * d.Hkv * d.Sk;
  if (flash_ok(d, dt, has_mask) && d.Sk > 0 && nq > 0 && lse_dense_f32(in[5]) && rows_aligned(in[0]) &&
      rows_aligned(in[1]) && rows_aligned(in[2]) && rows_aligned(in[3]) && rows_aligned(in[4]) &&
      rows_aligned(out[0]) && rows_aligned(out[1]) && rows_aligned(out[2])) {
    flash::Params p = flash_params(d, in[1], in[2], in[3], (int)causal, scale);
    p.dout = gn_view_ptr(&in[0]);
    flash_strides(in[0], p.do_sb, p.do_sh, p.do_ss);
    p.o = gn_view_ptr(&in[4]);
    flash_strides(in[4], p.o_sb, p.o_sh, p.o_ss);
    p.lse = const_cast<float*>(data_ptr<const float>(in[5]));
    p.dq = gn_view_ptr(&out[0]);
    flash_strides(out[0], p.dq_sb, p.dq_sh, p.dq_ss);
    p.dk = gn_view_ptr(&out[1]);
    flash_strides(out[1], p.dk_sb, p.dk_sh, p.dk_ss);
    p.dv = gn_view_ptr(&out[2]);
    flash_strides(out[2], p.dv_sb, p.dv_sh, p.dv_ss);
    p.delta = static_cast<float*>(workspace(ctx, (size_t)nq * sizeof(float)));
    GN_CUDA_CHECK(flash::flash_bwd(p, dt == GN_BF16 ? flash::Half16::bf16 : flash::Half16::f16, (int)d.D, st));
    return;
  }
  if (d.D > 32 * kMaxPerLane || d.Dv > 32 * kMaxPerLane)
    fail_op(GN_ERR_UNSUPPORTED, op, "head dims above 512 are not supported on cuda");
  GenericArgs g{};
  g.dout = gn_view_ptr(&in[0]);
  g.sdo = str4(in[0]);
  set_qkv(g, in[1], in[2], in[3]);
  g.dq = gn_view_ptr(&out[0]);
  g.sdq = str4(out[0]);
  set_mask(op, g, has_mask ? &in[6] : nullptr, d);
  g.d = d;
  g.causal = (int)causal;
  g.scale = scale;
  dispatch_float(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    char* ws = static_cast<char*>(workspace(ctx, std::max<size_t>(2 * (size_t)nq * sizeof(A), 1)));
    g.row_lse = ws;
    g.row_dot = ws + (size_t)nq * sizeof(A);
    if (nq > 0) attn_bwd_generic_dq<T, A><<<(unsigned)((nq + 7) / 8), 256, 0, st>>>(g);
    GN_CUDA_CHECK_LAUNCH();
    if (nk > 0)
      attn_bwd_generic_dkv<T, A><<<(unsigned)((nk + 7) / 8), 256, 0, st>>>(g, str4(out[1]), str4(out[2]),
                                                                           gn_view_ptr(&out[1]), gn_view_ptr(&out[2]));
    GN_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

GN_CUDA_FAMILY(attention) {
  r.kernel("scaled_dot_product_attention", kFloatDtypes, sdpa_kernel);
  r.kernel("scaled_dot_product_attention_backward", kFloatDtypes, sdpa_backward_kernel);
}

}  // namespace gn::cuda
