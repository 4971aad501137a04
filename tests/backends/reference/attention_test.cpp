// attention_test.cpp - scaled_dot_product_attention (GQA, causal top-left and
// bottom-right, bool / float masks, fully masked rows) against a naive loop
// written here, and its backward against central finite differences.
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

struct Dims {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
};

// mask(b, h, i, j): +0 keep / -inf drop / any additive value; empty = none
using MaskFn = std::function<double(int64_t, int64_t, int64_t, int64_t)>;

// softmax(scale * q k^T + mask) v per (b, h, i), with the causal rule spelled
// out; rows without any finite score give out 0 and lse -inf.
void naive_sdpa(const Dims& d, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                int causal, double scale, const MaskFn& mask, std::vector<double>* out, std::vector<double>* lse) {
  out->assign((size_t)(d.B * d.Hq * d.Sq * d.Dv), 0.0);
  lse->assign((size_t)(d.B * d.Hq * d.Sq), -kInf);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h) {
      int64_t hk = h / (d.Hq / d.Hkv);
      for (int64_t i = 0; i < d.Sq; ++i) {
        std::vector<double> s((size_t)d.Sk, -kInf);
        for (int64_t j = 0; j < d.Sk; ++j) {
          if (causal == 1 && j > i) continue;
          if (causal == 2 && j - (d.Sk - d.Sq) > i) continue;
          double dot = 0;
          for (int64_t c = 0; c < d.D; ++c)
            dot += q[(size_t)(((b * d.Hq + h) * d.Sq + i) * d.D + c)] *
                   k[(size_t)(((b * d.Hkv + hk) * d.Sk + j) * d.D + c)];
          s[(size_t)j] = scale * dot + (mask ? mask(b, h, i, j) : 0.0);
        }
        double z = 0;
        for (double e : s) z += std::exp(e);  // inputs are small: no max shift needed
        if (z == 0) continue;
        size_t row = (size_t)((b * d.Hq + h) * d.Sq + i);
        (*lse)[row] = std::log(z);
        for (int64_t j = 0; j < d.Sk; ++j)
          for (int64_t c = 0; c < d.Dv; ++c)
            (*out)[row * d.Dv + c] +=
                std::exp(s[(size_t)j]) / z * v[(size_t)(((b * d.Hkv + hk) * d.Sk + j) * d.Dv + c)];
      }
    }
}

Shape q_shape(const Dims& d) { return {d.B, d.Hq, d.Sq, d.D}; }
Shape k_shape(const Dims& d) { return {d.B, d.Hkv, d.Sk, d.D}; }
Shape v_shape(const Dims& d) { return {d.B, d.Hkv, d.Sk, d.Dv}; }

std::vector<HostTensor> sdpa_fwd(const Dims& d, const std::vector<HostTensor>& in, int causal, double scale) {
  std::vector<HostTensor> out = {HostTensor::zeros({d.B, d.Hq, d.Sq, d.Dv}, GN_F64),
                                 HostTensor::zeros({d.B, d.Hq, d.Sq}, GN_F64)};
  EXPECT_OK(run("scaled_dot_product_attention", GN_F64, in, out, {ai(causal), af(scale)}));
  return out;
}

struct Case {
  const char* name;
  Dims d;
  int causal;
  double scale;   // NaN = default
  int mask_kind;  // 0 none, 1 bool (Sq,Sk), 2 float (B,1,1,Sk)
};

// The mask tensor of a case and the same mask as a function for naive_sdpa.
HostTensor make_mask(const Case& c, MaskFn* fn) {
  const Dims& d = c.d;
  if (c.mask_kind == 1) {  // keep (i + 2j) % 3 != 0, and row 1 fully masked
    std::vector<double> m((size_t)(d.Sq * d.Sk));
    for (int64_t i = 0; i < d.Sq; ++i)
      for (int64_t j = 0; j < d.Sk; ++j) m[(size_t)(i * d.Sk + j)] = (i != 1 && (i + 2 * j) % 3 != 0) ? 1.0 : 0.0;
    *fn = [m, d](int64_t, int64_t, int64_t i, int64_t j) { return m[(size_t)(i * d.Sk + j)] != 0 ? 0.0 : -kInf; };
    return HostTensor::of(m, {d.Sq, d.Sk}, GN_BOOL);
  }
  if (c.mask_kind == 2) {  // padding-style: batch b drops its last b keys, plus a bias
    std::vector<double> m((size_t)(d.B * d.Sk));
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t j = 0; j < d.Sk; ++j) m[(size_t)(b * d.Sk + j)] = j >= d.Sk - b ? -kInf : 0.1 * (double)j;
    *fn = [m, d](int64_t b, int64_t, int64_t, int64_t j) { return m[(size_t)(b * d.Sk + j)]; };
    return HostTensor::of(m, {d.B, 1, 1, d.Sk}, GN_F64);
  }
  *fn = nullptr;
  return HostTensor();
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"mha", {2, 2, 2, 3, 4, 3, 2}, 0, NAN, 0},
      {"gqa", {1, 4, 2, 3, 5, 4, 3}, 0, NAN, 0},
      {"mqa explicit scale", {1, 3, 1, 2, 3, 2, 2}, 0, 0.3, 0},
      {"causal top-left", {1, 2, 1, 3, 5, 3, 2}, 1, NAN, 0},
      {"causal bottom-right", {1, 2, 1, 3, 5, 3, 2}, 2, NAN, 0},
      {"causal bottom-right Sq > Sk", {1, 2, 2, 4, 2, 3, 2}, 2, NAN, 0},
      {"causal top-left Sq > Sk", {1, 1, 1, 4, 2, 2, 2}, 1, NAN, 0},
      {"bool mask", {2, 2, 1, 3, 4, 3, 2}, 0, NAN, 1},
      {"float mask + causal", {2, 2, 2, 3, 4, 2, 3}, 1, NAN, 2},
  };
  return c;
}

}  // namespace

TEST(AttentionRef, HandComputed) {
  // one query against two keys, D = 1, scale 1: weights softmax(0, 1)
  HostTensor q = HostTensor::of({1}, {1, 1, 1, 1}, GN_F64), k = HostTensor::of({0, 1}, {1, 1, 2, 1}, GN_F64);
  HostTensor v = HostTensor::of({1, 3}, {1, 1, 2, 1}, GN_F64);
  HostTensor out = HostTensor::zeros({1, 1, 1, 1}, GN_F64), lse = HostTensor::zeros({1, 1, 1}, GN_F64);
  ASSERT_OK(run("scaled_dot_product_attention", GN_F64, {q, k, v}, {out, lse}, {ai(0), af(1.0)}));
  const double e = std::exp(1.0);
  expect_values(out, {(1 + 3 * e) / (1 + e)}, 1e-15);
  expect_values(lse, {std::log(1 + e)}, 1e-15);
  // default scale 1/sqrt(D) with D = 4: q.k = 8 -> score 4
  HostTensor q4 = HostTensor::of({1, 1, 1, 1}, {1, 1, 1, 4}, GN_F64),
             k4 = HostTensor::of({2, 2, 2, 2, 0, 0, 0, 0}, {1, 1, 2, 4}, GN_F64);
  ASSERT_OK(run("scaled_dot_product_attention", GN_F64, {q4, k4, v}, {out, lse}, {ai(0), af(NAN)}));
  const double e4 = std::exp(4.0);
  expect_values(out, {(e4 + 3) / (e4 + 1)}, 1e-15);
  expect_values(lse, {std::log(e4 + 1)}, 1e-15);
}

TEST(AttentionRef, ForwardMatchesNaiveLoop) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    const Dims& d = c.d;
    std::vector<double> q = rand_values(numel_of(q_shape(d)), seed++), k = rand_values(numel_of(k_shape(d)), seed++),
                        v = rand_values(numel_of(v_shape(d)), seed++);
    MaskFn fn;
    HostTensor mask = make_mask(c, &fn);
    double scale = std::isnan(c.scale) ? 1.0 / std::sqrt((double)d.D) : c.scale;
    std::vector<double> want_out, want_lse;
    naive_sdpa(d, q, k, v, c.causal, scale, fn, &want_out, &want_lse);
    std::vector<HostTensor> in = {HostTensor::of(q, q_shape(d), GN_F64), HostTensor::strided_of(k, k_shape(d), GN_F64),
                                  HostTensor::of(v, v_shape(d), GN_F64).contiguous()};
    if (c.mask_kind) in.push_back(mask);
    std::vector<HostTensor> out = sdpa_fwd(d, in, c.causal, c.scale);
    SCOPED_TRACE(c.name);
    expect_values(out[0], want_out, 1e-13);
    expect_values(out[1], want_lse, 1e-13);
  }
}

TEST(AttentionRef, FullyMaskedRowsGiveZeroAndMinusInf) {
  // bottom-right causal with Sq = 3 > Sk = 1: rows 0 and 1 see no key
  Dims d{1, 1, 1, 3, 1, 2, 2};
  std::vector<HostTensor> in = {rand_f64(q_shape(d), 1), rand_f64(k_shape(d), 2), rand_f64(v_shape(d), 3)};
  std::vector<HostTensor> out = sdpa_fwd(d, in, 2, NAN);
  std::vector<double> v = in[2].values();
  expect_values(out[0], {0, 0, 0, 0, v[0], v[1]}, 1e-15);
  std::vector<double> q = in[0].values(), k = in[1].values();
  // row 2 sees key 0 alone: lse = its score
  expect_values(out[1], {-kInf, -kInf, (q[4] * k[0] + q[5] * k[1]) / std::sqrt(2.0)}, 1e-15);
  HostTensor gq = HostTensor::zeros(q_shape(d), GN_F64), gk = HostTensor::zeros(k_shape(d), GN_F64),
             gv = HostTensor::zeros(v_shape(d), GN_F64);
  HostTensor go = HostTensor::of({1, 1, 1, 1, 0, 0}, {1, 1, 3, 2}, GN_F64);
  ASSERT_OK(run("scaled_dot_product_attention_backward", GN_F64, {go, in[0], in[1], in[2], out[0], out[1]},
                {gq, gk, gv}, {ai(2), af(NAN)}));
  expect_values(gq, std::vector<double>(6, 0.0));
  expect_values(gk, {0, 0});
  expect_values(gv, {0, 0});
  // an all-false bool mask does the same
  HostTensor none = HostTensor::of({0, 0, 0}, {3, 1}, GN_BOOL);
  out = sdpa_fwd(d, {in[0], in[1], in[2], none}, 0, NAN);
  expect_values(out[0], std::vector<double>(6, 0.0));
  expect_values(out[1], {-kInf, -kInf, -kInf});
}

TEST(AttentionRef, BackwardMatchesFiniteDifferences) {
  uint64_t seed = 200;
  for (const Case& c : cases()) {
    const Dims& d = c.d;
    MaskFn fn;
    HostTensor mask = make_mask(c, &fn);
    std::vector<HostTensor> in = {rand_f64(q_shape(d), seed++), rand_f64(k_shape(d), seed++),
                                  rand_f64(v_shape(d), seed++)};
    if (c.mask_kind) in.push_back(mask);
    std::vector<HostTensor> fwd = sdpa_fwd(d, in, c.causal, c.scale);
    std::vector<double> g = rand_values(numel_of({d.B, d.Hq, d.Sq, d.Dv}), seed++);
    HostTensor gq = HostTensor::zeros(q_shape(d), GN_F64), gk = HostTensor::zeros(k_shape(d), GN_F64),
               gv = HostTensor::zeros(v_shape(d), GN_F64);
    std::vector<HostTensor> bin = {
        HostTensor::of(g, {d.B, d.Hq, d.Sq, d.Dv}, GN_F64), in[0], in[1], in[2], fwd[0], fwd[1]};
    if (c.mask_kind) bin.push_back(mask);
    ASSERT_OK(run("scaled_dot_product_attention_backward", GN_F64, bin, {gq, gk, gv}, {ai(c.causal), af(c.scale)}));
    Forward f = [&](const std::vector<HostTensor>& i) { return sdpa_fwd(d, i, c.causal, c.scale); };
    SCOPED_TRACE(c.name);
    expect_values(gq, numeric_grad(f, in, 0, {g}), kFdTol);
    expect_values(gk, numeric_grad(f, in, 1, {g}), kFdTol);
    expect_values(gv, numeric_grad(f, in, 2, {g}), kFdTol);
  }
}

TEST(AttentionRef, LowPrecisionOutputsRoundTheDoubleResult) {
  // f32 / bf16 / f16 inputs exact in every dtype; lse output float32
  Dims d{1, 2, 1, 2, 3, 2, 2};
  std::vector<double> q = {0.5, -1, 0.25, 0.75, 1, 0, -0.5, 0.5}, k = {1, 0.5, -1, 0.25, 0, 2},
                      v = {1, 2, -1, 0.5, 0.25, -2};
  std::vector<double> want_out, want_lse;
  naive_sdpa(d, q, k, v, 0, 1.0 / std::sqrt(2.0), nullptr, &want_out, &want_lse);
  for (int32_t dt : {GN_F32, GN_BF16, GN_F16}) {
    HostTensor out = HostTensor::zeros({1, 2, 2, 2}, dt), lse = HostTensor::zeros({1, 2, 2}, GN_F32);
    ASSERT_OK(
        run("scaled_dot_product_attention", dt,
            {HostTensor::of(q, q_shape(d), dt), HostTensor::of(k, k_shape(d), dt), HostTensor::of(v, v_shape(d), dt)},
            {out, lse}, {ai(0), af(NAN)}));
    std::vector<double> wo, wl;
    for (double x : want_out) wo.push_back(round_to(x, dt));
    for (double x : want_lse) wl.push_back(round_to(x, GN_F32));
    expect_values(out, wo);
    expect_values(lse, wl);
  }
}

TEST(AttentionRef, EmptyAndBadShapes) {
  Dims d{1, 2, 1, 0, 3, 2, 2};  // no queries
  ASSERT_OK(run("scaled_dot_product_attention", GN_F64,
                {HostTensor::zeros(q_shape(d), GN_F64), HostTensor::zeros(k_shape(d), GN_F64),
                 HostTensor::zeros(v_shape(d), GN_F64)},
                {HostTensor::zeros({1, 2, 0, 2}, GN_F64), HostTensor::zeros({1, 2, 0}, GN_F64)}, {ai(0), af(NAN)}));
  Dims e{1, 1, 1, 2, 0, 2, 2};  // no keys: every row is empty
  std::vector<HostTensor> out = sdpa_fwd(e,
                                         {HostTensor::zeros(q_shape(e), GN_F64), HostTensor::zeros(k_shape(e), GN_F64),
                                          HostTensor::zeros(v_shape(e), GN_F64)},
                                         0, NAN);
  expect_values(out[0], {0, 0, 0, 0});
  expect_values(out[1], {-kInf, -kInf});
  std::vector<HostTensor> o3 = {HostTensor::zeros({1, 3, 2, 2}, GN_F64), HostTensor::zeros({1, 3, 2}, GN_F64)};
  EXPECT_CODE(run("scaled_dot_product_attention", GN_F64,
                  {HostTensor::zeros({1, 3, 2, 2}, GN_F64), HostTensor::zeros({1, 2, 2, 2}, GN_F64),
                   HostTensor::zeros({1, 2, 2, 2}, GN_F64)},
                  o3, {ai(0), af(NAN)}),
              GN_ERR_SHAPE);  // Hq 3 not a multiple of Hkv 2
  EXPECT_CODE(run("scaled_dot_product_attention", GN_F64,
                  {HostTensor::zeros({1, 2, 2, 2}, GN_F64), HostTensor::zeros({1, 2, 2, 3}, GN_F64),
                   HostTensor::zeros({1, 2, 2, 2}, GN_F64)},
                  {HostTensor::zeros({1, 2, 2, 2}, GN_F64), HostTensor::zeros({1, 2, 2}, GN_F64)}, {ai(0), af(NAN)}),
              GN_ERR_SHAPE);  // head dims differ
  EXPECT_CODE(run("scaled_dot_product_attention", GN_F64,
                  {HostTensor::zeros({1, 2, 2, 2}, GN_F64), HostTensor::zeros({1, 2, 2, 2}, GN_F64),
                   HostTensor::zeros({1, 2, 2, 2}, GN_F64), HostTensor::zeros({3, 2}, GN_BOOL)},
                  {HostTensor::zeros({1, 2, 2, 2}, GN_F64), HostTensor::zeros({1, 2, 2}, GN_F64)}, {ai(0), af(NAN)}),
              GN_ERR_SHAPE);  // mask does not broadcast
}
