// backends/reference/attention.cpp - scaled_dot_product_attention and backward.
//
// q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv); query head h reads kv head
// h / (Hq/Hkv) (GQA; Hq == Hkv is plain multi-head attention).
//   s_ij = scale * q_i.k_j (+ mask_ij when the mask is float)
//   position (i, j) is dropped when causal == 1 and j > i (top-left, torch
//   is_causal), causal == 2 and j > i + Sk - Sq (bottom-right, flash-attn / KV
//   cache), or a bool mask is false there; a float mask of -inf drops it too.
//   lse_i = log(sum_j exp(s_ij)) over kept j,  out_i = sum_j exp(s_ij - lse_i) v_j
// A row with no kept position gives out 0 and lse -inf (flash-attn's choice;
// torch returns NaN there), and no gradient.
// The mask broadcasts to (B,Hq,Sq,Sk).  scale NaN means 1/sqrt(D).
// The backward recomputes the probabilities from q, k (and mask) in double;
// out and lse are only shape-checked.
#include <cmath>
#include <limits>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct AttnDims {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
};

AttnDims check_dims(const char* op, const gn_tensor_view& q, const gn_tensor_view& k, const gn_tensor_view& v) {
  expect_ndim(op, "q", q, 4);
  expect_ndim(op, "k", k, 4);
  expect_ndim(op, "v", v, 4);
  AttnDims d{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  expect_shape(op, "k", k, {d.B, d.Hkv, d.Sk, d.D});
  expect_shape(op, "v", v, {d.B, d.Hkv, d.Sk, d.Dv});
  if (d.Hkv == 0 ? d.Hq != 0 : d.Hq % d.Hkv != 0)
    fail(GN_ERR_SHAPE,
         std::string("[") + op + "] Hq " + std::to_string(d.Hq) + " is not a multiple of Hkv " + std::to_string(d.Hkv));
  return d;
}

double resolve_scale(double scale, int64_t D) { return std::isnan(scale) ? 1.0 / std::sqrt((double)D) : scale; }

// Attention probabilities of every (b, h, i) row: P (B,Hq,Sq,Sk) and lse (B,Hq,Sq).
// q (B,Hq,Sq,D), k (B,Hkv,Sk,D), mask (B,Hq,Sq,Sk) or empty (bool keep / float add).
void attention_probs(double* P, double* lse, const double* q, const double* k, const double* mask, bool mask_bool,
                     const AttnDims& d, int64_t causal, double scale) {
  int64_t group = d.Hkv ? d.Hq / d.Hkv : 1;
  std::vector<double> s((size_t)d.Sk);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h)
      for (int64_t i = 0; i < d.Sq; ++i) {
        int64_t row = (b * d.Hq + h) * d.Sq + i;
        const double* qi = q + row * d.D;
        const double* kh = k + (b * d.Hkv + h / group) * d.Sk * d.D;
        double m = kNegInf;
        for (int64_t j = 0; j < d.Sk; ++j) {
          bool keep = !(causal == 1 && j > i) && !(causal == 2 && j > i + d.Sk - d.Sq);
          double sj = kNegInf;
          if (keep && mask && mask_bool) keep = mask[row * d.Sk + j] != 0.0;
          if (keep) {
            double dot = 0.0;
            for (int64_t c = 0; c < d.D; ++c) dot += qi[c] * kh[j * d.D + c];
            sj = scale * dot + (mask && !mask_bool ? mask[row * d.Sk + j] : 0.0);
          }
          s[(size_t)j] = sj;
          if (sj > m || std::isnan(sj)) m = std::isnan(m) ? m : sj;
        }
        double* Pi = P + row * d.Sk;
        if (m == kNegInf) {  // nothing kept: zero probabilities, lse -inf
          for (int64_t j = 0; j < d.Sk; ++j) Pi[j] = 0.0;
          lse[row] = kNegInf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < d.Sk; ++j) sum += s[(size_t)j] == kNegInf ? 0.0 : std::exp(s[(size_t)j] - m);
        lse[row] = m + std::log(sum);
        for (int64_t j = 0; j < d.Sk; ++j) Pi[j] = s[(size_t)j] == kNegInf ? 0.0 : std::exp(s[(size_t)j] - lse[row]);
      }
}

// The mask broadcast to (B,Hq,Sq,Sk), or empty when absent.
Vec load_mask(const char* op, const gn_tensor_view* in, size_t n_in, size_t idx, const AttnDims& d, bool* is_bool) {
  *is_bool = false;
  if (n_in <= idx) return {};
  const gn_tensor_view& m = in[idx];
  if (m.dtype != GN_BOOL && !gn_dtype_is_float(m.dtype))
    fail(GN_ERR_DTYPE, std::string("[") + op + "] mask must be bool or floating point, got " + gn_dtype_name(m.dtype));
  *is_bool = m.dtype == GN_BOOL;
  return load_broadcast(op, "mask", m, {d.B, d.Hq, d.Sq, d.Sk});
}

// ----------------------------------------------------------------------------
// forward

// P (B,Hq,Sq,Sk), v (B,Hkv,Sk,Dv) -> out (B,Hq,Sq,Dv) = P @ v
void attention_forward(double* out, const double* P, const double* v, const AttnDims& d) {
  int64_t group = d.Hkv ? d.Hq / d.Hkv : 1;
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h)
      for (int64_t i = 0; i < d.Sq; ++i) {
        int64_t row = (b * d.Hq + h) * d.Sq + i;
        const double* vh = v + (b * d.Hkv + h / group) * d.Sk * d.Dv;
        for (int64_t c = 0; c < d.Dv; ++c) {
          double acc = 0.0;
          for (int64_t j = 0; j < d.Sk; ++j) acc += P[row * d.Sk + j] * vh[j * d.Dv + c];
          out[row * d.Dv + c] = acc;
        }
      }
}

// in: q, k, v, [mask]; out: out, lse; attrs: causal, scale
GN_SDK_KERNEL(sdpa_kernel) {
  const char* op = "scaled_dot_product_attention";
  expect_io(op, n_in, 3, n_out, 1);
  int64_t causal = attr_int(op, attrs, n_attrs, 0);
  if (causal < 0 || causal > 2)
    fail(GN_ERR_INVALID_ARGUMENT, "[scaled_dot_product_attention] causal must be 0, 1 or 2");
  AttnDims d = check_dims(op, in[0], in[1], in[2]);
  double scale = resolve_scale(attr_float(op, attrs, n_attrs, 1), d.D);
  expect_shape(op, "out", out[0], {d.B, d.Hq, d.Sq, d.Dv});
  if (n_out > 1) expect_shape(op, "lse", out[1], {d.B, d.Hq, d.Sq});
  bool mask_bool = false;
  Vec mask = load_mask(op, in, n_in, 3, d, &mask_bool);
  Vec q = load_all(in[0]), k = load_all(in[1]), v = load_all(in[2]);
  Vec P((size_t)(d.B * d.Hq * d.Sq * d.Sk)), lse((size_t)(d.B * d.Hq * d.Sq));
  Vec o((size_t)(d.B * d.Hq * d.Sq * d.Dv));
  attention_probs(P.data(), lse.data(), q.data(), k.data(), n_in > 3 ? mask.data() : nullptr, mask_bool, d, causal,
                  scale);
  attention_forward(o.data(), P.data(), v.data(), d);
  store_all(out[0], o);
  if (n_out > 1) store_all(out[1], lse);
}

// ----------------------------------------------------------------------------
// backward

// dO (B,Hq,Sq,Dv), P (B,Hq,Sq,Sk), q, k, v -> dq (B,Hq,Sq,D), dk (B,Hkv,Sk,D), dv (B,Hkv,Sk,Dv)
// dv_j += P_ij dO_i;  dP_ij = dO_i.v_j;  dS_ij = P_ij (dP_ij - sum_j' P_ij' dP_ij')
// dq_i = scale * sum_j dS_ij k_j;  dk_j += scale * dS_ij q_i
void attention_backward(double* dq, double* dk, double* dv, const double* dO, const double* P, const double* q,
                        const double* k, const double* v, const AttnDims& d, double scale) {
  int64_t group = d.Hkv ? d.Hq / d.Hkv : 1;
  for (int64_t i = 0; i < d.B * d.Hkv * d.Sk * d.D; ++i) dk[i] = 0.0;
  for (int64_t i = 0; i < d.B * d.Hkv * d.Sk * d.Dv; ++i) dv[i] = 0.0;
  std::vector<double> dP((size_t)d.Sk);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h)
      for (int64_t i = 0; i < d.Sq; ++i) {
        int64_t row = (b * d.Hq + h) * d.Sq + i;
        int64_t kv = (b * d.Hkv + h / group) * d.Sk;
        const double* Pi = P + row * d.Sk;
        const double* dOi = dO + row * d.Dv;
        double rowdot = 0.0;
        for (int64_t j = 0; j < d.Sk; ++j) {
          double acc = 0.0;
          for (int64_t c = 0; c < d.Dv; ++c) {
            acc += dOi[c] * v[(kv + j) * d.Dv + c];
            dv[(kv + j) * d.Dv + c] += Pi[j] * dOi[c];
          }
          dP[(size_t)j] = acc;
          rowdot += Pi[j] * acc;
        }
        double* dqi = dq + row * d.D;
        for (int64_t c = 0; c < d.D; ++c) dqi[c] = 0.0;
        for (int64_t j = 0; j < d.Sk; ++j) {
          double dS = Pi[j] * (dP[(size_t)j] - rowdot);
          if (dS == 0.0) continue;
          for (int64_t c = 0; c < d.D; ++c) {
            dqi[c] += scale * dS * k[(kv + j) * d.D + c];
            dk[(kv + j) * d.D + c] += scale * dS * q[row * d.D + c];
          }
        }
      }
}

// in: grad_out, q, k, v, out, lse, [mask]; out: grad_q, grad_k, grad_v; attrs: causal, scale
GN_SDK_KERNEL(sdpa_backward_kernel) {
  const char* op = "scaled_dot_product_attention_backward";
  expect_io(op, n_in, 6, n_out, 3);
  int64_t causal = attr_int(op, attrs, n_attrs, 0);
  if (causal < 0 || causal > 2) fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] causal must be 0, 1 or 2");
  AttnDims d = check_dims(op, in[1], in[2], in[3]);
  double scale = resolve_scale(attr_float(op, attrs, n_attrs, 1), d.D);
  expect_shape(op, "grad_out", in[0], {d.B, d.Hq, d.Sq, d.Dv});
  expect_shape(op, "out", in[4], {d.B, d.Hq, d.Sq, d.Dv});
  expect_shape(op, "lse", in[5], {d.B, d.Hq, d.Sq});
  expect_shape(op, "grad_q", out[0], shape_of(in[1]));
  expect_shape(op, "grad_k", out[1], shape_of(in[2]));
  expect_shape(op, "grad_v", out[2], shape_of(in[3]));
  bool mask_bool = false;
  Vec mask = load_mask(op, in, n_in, 6, d, &mask_bool);
  Vec dO = load_all(in[0]), q = load_all(in[1]), k = load_all(in[2]), v = load_all(in[3]);
  Vec P((size_t)(d.B * d.Hq * d.Sq * d.Sk)), lse((size_t)(d.B * d.Hq * d.Sq));
  attention_probs(P.data(), lse.data(), q.data(), k.data(), n_in > 6 ? mask.data() : nullptr, mask_bool, d, causal,
                  scale);
  Vec dq(q.size()), dk(k.size()), dv(v.size());
  attention_backward(dq.data(), dk.data(), dv.data(), dO.data(), P.data(), q.data(), k.data(), v.data(), d, scale);
  store_all(out[0], dq);
  store_all(out[1], dk);
  store_all(out[2], dv);
}

}  // namespace

void register_attention(const gn::sdk::Registrar& r) {
  r.kernel("scaled_dot_product_attention", kFloatDtypes, sdpa_kernel);
  r.kernel("scaled_dot_product_attention_backward", kFloatDtypes, sdpa_backward_kernel);
}

}  // namespace gn::reference
