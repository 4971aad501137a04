// backends/cpu/ops/simd/attention.cpp - scaled_dot_product_attention and its
// backward in C++ (oneDNN 2.6 has no attention primitive).
//
// q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv), optional mask broadcast to
// (B,Hq,Sq,Sk) (bool keep / float additive); causal 1 = top-left (j > i
// dropped), 2 = bottom-right (j > i + Sk - Sq dropped); GQA: query head h
// reads kv head h / (Hq/Hkv).  A row with nothing kept gives out 0, lse -inf
// and no gradient (the reference's rule).  Everything is computed in double
// from inputs widened once, with the reference's formulas and summation
// order, and rounded once into the outputs (compiled without FMA contraction,
// so f64 results match the reference to the last bit or so).
//   forward:  rows (b, h, i) in parallel: scores, max, lse, P, out = P @ v
//   backward: kv heads (b, g) in parallel: each walks its query heads and rows
//             in the reference's order, so dk/dv accumulate in the same order
//             without atomics; dq rows are private.
// f32, f64, bf16, f16 (the reference's dtypes).
#include <algorithm>
#include <cmath>
#include <limits>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Dims {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
};

bool dims_of(const gn_tensor_view& q, const gn_tensor_view& k, const gn_tensor_view& v, Dims& d) {
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4) return false;
  d = {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  if (k.shape[0] != d.B || k.shape[3] != d.D || v.shape[0] != d.B || v.shape[1] != d.Hkv || v.shape[2] != d.Sk)
    return false;
  return d.Hkv == 0 ? d.Hq == 0 : d.Hq % d.Hkv == 0;
}

bool shape_is(const gn_tensor_view& t, std::initializer_list<int64_t> s) {
  if (t.ndim != (int32_t)s.size()) return false;
  int32_t i = 0;
  for (int64_t v : s)
    if (t.shape[i++] != v) return false;
  return true;
}

// A dense float view widened to double.
std::vector<double> widen(const gn_tensor_view& t) {
  std::vector<double> out((size_t)gn_view_numel(&t));
  const char* p = (const char*)data_of(t);
  const size_t es = gn_dtype_size(t.dtype);
  const int32_t dt = t.dtype;
  parallel_range((int64_t)out.size(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[(size_t)i] = gn::sdk::load(p + i * (int64_t)es, dt);
  });
  return out;
}

void narrow(const std::vector<double>& v, const gn_tensor_view& t) {
  char* p = (char*)data_of(t);
  const size_t es = gn_dtype_size(t.dtype);
  const int32_t dt = t.dtype;
  parallel_range((int64_t)v.size(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) gn::sdk::store(p + i * (int64_t)es, dt, v[(size_t)i]);
  });
}

// The mask widened, with its strides broadcast to (B,Hq,Sq,Sk).
struct Mask {
  std::vector<double> v;
  std::vector<int64_t> st;
  bool present = false, is_bool = false;
  double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return v[(size_t)(b * st[0] + h * st[1] + i * st[2] + j * st[3])];
  }
};

bool load_mask(const gn_tensor_view* in, size_t n_in, size_t idx, const Dims& d, Mask& m) {
  if (n_in <= idx) return true;
  const gn_tensor_view& t = in[idx];
  if (t.dtype != GN_BOOL && t.dtype != GN_F32 && t.dtype != GN_F64 && t.dtype != GN_F16 && t.dtype != GN_BF16)
    return false;
  const int64_t shape[4] = {d.B, d.Hq, d.Sq, d.Sk};
  if (!bcast_strides(t, 4, shape, m.st)) return false;
  m.v = widen(t);
  m.present = true;
  m.is_bool = t.dtype == GN_BOOL;
  return true;
}

// Probabilities of row (b, h, i) into P (Sk); returns lse (-inf: nothing kept).
double row_probs(double* P, const double* q, const double* k, const Mask& mask, const Dims& d, int64_t b, int64_t h,
                 int64_t i, int64_t causal, double scale) {
  const int64_t group = d.Hq / d.Hkv;
  const int64_t row = (b * d.Hq + h) * d.Sq + i;
  const double* qi = q + row * d.D;
  const double* kh = k + (b * d.Hkv + h / group) * d.Sk * d.D;
  double m = kNegInf;
  for (int64_t j = 0; j < d.Sk; ++j) {
    bool keep = !(causal == 1 && j > i) && !(causal == 2 && j > i + d.Sk - d.Sq);
    double sj = kNegInf;
    if (keep && mask.present && mask.is_bool) keep = mask.at(b, h, i, j) != 0.0;
    if (keep) {
      double dot = 0.0;
      for (int64_t c = 0; c < d.D; ++c) dot += qi[c] * kh[j * d.D + c];
      sj = scale * dot + (mask.present && !mask.is_bool ? mask.at(b, h, i, j) : 0.0);
    }
    P[j] = sj;
    if (sj > m || std::isnan(sj)) m = std::isnan(m) ? m : sj;
  }
  if (m == kNegInf) {
    for (int64_t j = 0; j < d.Sk; ++j) P[j] = 0.0;
    return kNegInf;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < d.Sk; ++j) sum += P[j] == kNegInf ? 0.0 : std::exp(P[j] - m);
  const double lse = m + std::log(sum);
  for (int64_t j = 0; j < d.Sk; ++j) P[j] = P[j] == kNegInf ? 0.0 : std::exp(P[j] - lse);
  return lse;
}

// Keys past this one are dropped by the causal rule for query row i (all kept without one): their
// probabilities are exactly 0, so products with them are skipped.
int64_t causal_end(const Dims& d, int64_t causal, int64_t i) {
  if (causal == 1) return std::min(d.Sk, i + 1);
  if (causal == 2) return std::max<int64_t>(0, std::min(d.Sk, i + d.Sk - d.Sq + 1));
  return d.Sk;
}

bool float_dtype(int32_t dt) { return dt == GN_F32 || dt == GN_F64 || dt == GN_F16 || dt == GN_BF16; }

GN_SDK_KERNEL(sdpa_kernel) {
  const char* op = "[scaled_dot_product_attention] ";
  Dims d{};
  const int64_t causal = attr_i(attrs, n_attrs, 0, 0);
  if (n_in < 3 || n_in > 4 || n_out < 1 || n_out > 2 || causal < 0 || causal > 2 || !dims_of(in[0], in[1], in[2], d) ||
      !shape_is(out[0], {d.B, d.Hq, d.Sq, d.Dv}) || (n_out > 1 && !shape_is(out[1], {d.B, d.Hq, d.Sq})))
    GN_UNSUPPORTED(std::string(op) + "these arguments");  // the reference reports the error
  for (size_t i = 0; i < 3; ++i)
    if (!float_dtype(in[i].dtype)) GN_UNSUPPORTED(std::string(op) + "dtype");
  double scale = attr_d(attrs, n_attrs, 1, NAN);
  if (std::isnan(scale)) scale = 1.0 / std::sqrt((double)d.D);
  Mask mask;
  if (!load_mask(in, n_in, 3, d, mask)) GN_UNSUPPORTED(std::string(op) + "mask");
  const std::vector<double> q = widen(in[0]), k = widen(in[1]), v = widen(in[2]);
  std::vector<double> o((size_t)(d.B * d.Hq * d.Sq * d.Dv)), lse((size_t)(d.B * d.Hq * d.Sq));
  const int64_t group = d.Hkv ? d.Hq / d.Hkv : 1;
  parallel_for(d.B * d.Hq * d.Sq, d.Sk * (d.D + d.Dv), [&](int64_t row) {
    const int64_t i = row % d.Sq, h = (row / d.Sq) % d.Hq, b = row / (d.Sq * d.Hq);
    thread_local std::vector<double> P;
    P.resize((size_t)d.Sk);
    lse[(size_t)row] = row_probs(P.data(), q.data(), k.data(), mask, d, b, h, i, causal, scale);
    const double* vh = v.data() + (b * d.Hkv + h / group) * d.Sk * d.Dv;
    double* orow = o.data() + row * d.Dv;
    for (int64_t c = 0; c < d.Dv; ++c) orow[c] = 0.0;
    const int64_t end = causal_end(d, causal, i);
    for (int64_t j = 0; j < end; ++j)  // per c, the terms arrive in j order, as in the reference
      for (int64_t c = 0; c < d.Dv; ++c) orow[c] += P[(size_t)j] * vh[j * d.Dv + c];
  });
  narrow(o, out[0]);
  if (n_out > 1) narrow(lse, out[1]);
}

GN_SDK_KERNEL(sdpa_backward_kernel) {
  const char* op = "[scaled_dot_product_attention_backward] ";
  Dims d{};
  const int64_t causal = attr_i(attrs, n_attrs, 0, 0);
  if (n_in < 6 || n_in > 7 || n_out != 3 || causal < 0 || causal > 2 || !dims_of(in[1], in[2], in[3], d) ||
      !shape_is(in[0], {d.B, d.Hq, d.Sq, d.Dv}) || !shape_is(in[4], {d.B, d.Hq, d.Sq, d.Dv}) ||
      !shape_is(in[5], {d.B, d.Hq, d.Sq}) || gn_view_numel(&out[0]) != gn_view_numel(&in[1]) ||
      gn_view_numel(&out[1]) != gn_view_numel(&in[2]) || gn_view_numel(&out[2]) != gn_view_numel(&in[3]))
    GN_UNSUPPORTED(std::string(op) + "these arguments");
  for (size_t i = 0; i < 4; ++i)
    if (!float_dtype(in[i].dtype)) GN_UNSUPPORTED(std::string(op) + "dtype");
  double scale = attr_d(attrs, n_attrs, 1, NAN);
  if (std::isnan(scale)) scale = 1.0 / std::sqrt((double)d.D);
  Mask mask;
  if (!load_mask(in, n_in, 6, d, mask)) GN_UNSUPPORTED(std::string(op) + "mask");
  const std::vector<double> dO = widen(in[0]), q = widen(in[1]), k = widen(in[2]), v = widen(in[3]);
  std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
  const int64_t group = d.Hkv ? d.Hq / d.Hkv : 1;
  parallel_for(d.B * d.Hkv, group * d.Sq * d.Sk * (2 * d.D + 2 * d.Dv), [&](int64_t bg) {
    const int64_t b = bg / d.Hkv, g = bg % d.Hkv, kv = (b * d.Hkv + g) * d.Sk;
    thread_local std::vector<double> P, dP;
    P.resize((size_t)d.Sk);
    dP.resize((size_t)d.Sk);
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
      for (int64_t i = 0; i < d.Sq; ++i) {
        const int64_t row = (b * d.Hq + h) * d.Sq + i;
        row_probs(P.data(), q.data(), k.data(), mask, d, b, h, i, causal, scale);
        const double* dOi = dO.data() + row * d.Dv;
        double rowdot = 0.0;
        const int64_t end = causal_end(d, causal, i);
        for (int64_t j = 0; j < end; ++j) {
          double acc = 0.0;
          for (int64_t c = 0; c < d.Dv; ++c) {
            acc += dOi[c] * v[(size_t)((kv + j) * d.Dv + c)];
            dv[(size_t)((kv + j) * d.Dv + c)] += P[(size_t)j] * dOi[c];
          }
          dP[(size_t)j] = acc;
          rowdot += P[(size_t)j] * acc;
        }
        double* dqi = dq.data() + row * d.D;
        for (int64_t j = 0; j < end; ++j) {
          const double dS = P[(size_t)j] * (dP[(size_t)j] - rowdot);
          if (dS == 0.0) continue;
          for (int64_t c = 0; c < d.D; ++c) {
            dqi[c] += scale * dS * k[(size_t)((kv + j) * d.D + c)];
            dk[(size_t)((kv + j) * d.D + c)] += scale * dS * q[(size_t)(row * d.D + c)];
          }
        }
      }
  });
  narrow(dq, out[0]);
  narrow(dk, out[1]);
  narrow(dv, out[2]);
}

}  // namespace

void register_attention(const gn::sdk::Registrar& r) {
  const int32_t floats[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("scaled_dot_product_attention", floats, sdpa_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("scaled_dot_product_attention_backward", floats, sdpa_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
