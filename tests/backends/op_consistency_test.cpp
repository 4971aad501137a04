// tests/backends/op_consistency_test.cpp - the cross-backend op suite.
//
// Two runtimes live in this process: "reference" alone (the oracle) and
// "reference,cpu", where the oneDNN plugin serves device type "cpu" and the
// reference kernels only catch what it refuses.  Every case (op x dtype x
// shape x layout) runs on both from the same host data; outputs are copied
// back as float64 and compared elementwise with |got - want| <= atol + rtol*|want|
// (NaN must match NaN).  Errors must agree in code.
//
// Tolerances, per dtype and op family (eps_f32 = 2^-23 ~ 1.2e-7, bf16 keeps 8
// significant bits: half an ulp is 2^-9 ~ 2e-3 relative):
//  * f32 add/sub/mul/div/max/min: oneDNN computes in f32 with one rounding, the
//    reference in double rounded once to f32: results differ by at most an ulp
//    or so -> rtol 1e-6.  With alpha != 1, oneDNN rounds alpha*b before adding
//    (two roundings): the error is then up to eps*|alpha*b| <= 2.5*eps, absolute
//    -> atol 1e-6 as well.
//  * f32 eltwise (exp, tanh, gelu, ...): oneDNN's vectorised polynomial
//    approximations are within a few ulp; rtol 1e-5 (~80 ulp) with atol 1e-6
//    for results near 0 where relative error means nothing (log(1+tiny)).
//  * f32 softmax/log_softmax/layer_norm: f32 accumulation of N terms in
//    oneDNN vs double in the reference; rtol 1e-5, atol 1e-6 (1e-5 for log_softmax
//    and layer_norm outputs, which are O(1) to O(10)).
//  * f32 matmul: a K-term dot product in f32 has a worst-case-ish error of
//    ~sqrt(K)*eps*(sum |a_k b_k|); inputs are in [-1, 1], so we allow
//    8*sqrt(K)*eps*(1 + |want|) (atol and rtol both 8*sqrt(K)*eps).
//  * bf16 (and f16): both backends see the same bf16 inputs and compute in at
//    least f32, so the results differ by the final rounding: one bf16 ulp,
//    2^-8 ~ 4e-3 relative; we allow rtol 1e-2 with atol 1e-2 (matmul: atol
//    1e-2*sqrt(K)/4, the size of the outputs' rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "util.h"  // tests/core/runtime/util.h

namespace {

enum Layout { kContig = 0, kTransposed = 1, kSliced = 2 };

// One input: logical shape, dtype, layout and value range.
struct Input {
  std::vector<int64_t> shape;
  int32_t dtype = GN_F32;
  Layout layout = kContig;
  double lo = -1.0, hi = 1.0;
};

struct Tol {
  double rtol, atol;
};

struct Case {
  std::string name;
  std::string op;
  std::vector<Input> inputs;
  std::vector<gn_attr_value> attrs;
  size_t n_out = 1;
  Tol tol;
};

// Test names in failure messages instead of byte dumps.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// ---------------------------------------------------------------- runtimes

bool cpu_plugin_built() {
  return std::filesystem::exists(std::string(GENESIS_TEST_PLUGIN_DIR) + "/libgenesis_plugin_cpu.so");
}

struct Runtimes {
  gt::Runtime ref{"reference"};
  gt::Runtime cpu{"reference,cpu"};
};

Runtimes& runtimes() {
  static Runtimes* r = new Runtimes();  // lives to the end of the process
  return *r;
}

// Backend serving device type `name` in rt ("" if absent).
std::string backend_of(gn_runtime* rt, const char* name) {
  for (size_t i = 0; i < gn_device_type_count(rt); ++i) {
    gn_device_type_record rec{};
    rec.struct_size = sizeof(rec);
    gn_status* st = gn_device_type_get(rt, i, &rec);
    if (st) { gn_status_free(st); continue; }
    if (std::string(rec.name) == name) return rec.backend;
  }
  return "";
}

// ---------------------------------------------------------------- tensors

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

gn_tensor* check(gn_status* st, gn_tensor* t) {
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return t;
}

// Build `in` on rt from seed: random storage (larger for non-contiguous
// layouts), converted to the dtype, then viewed as asked.
gt::T build(gn_runtime* rt, gn_device dev, const Input& in, uint32_t seed) {
  std::vector<int64_t> base = in.shape;
  const size_t n = base.size();
  Layout layout = in.layout;
  if (layout == kTransposed && n >= 2) std::swap(base[n - 2], base[n - 1]);
  else if (layout == kSliced && n >= 1) base[n - 1] = 2 * base[n - 1] + 1;
  else layout = kContig;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(in.lo, in.hi);
  std::vector<double> data((size_t)numel(base));
  for (double& v : data) v = dist(gen);
  gn_tensor* t64 = nullptr;
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(rt, data.data(), base.data(), (int32_t)n, GN_F64, dev, &t64), t64);
  check(gn_tensor_to_dtype(t64, in.dtype, &t), t);
  gn_tensor_release(t64);
  gn_tensor* v = nullptr;
  if (layout == kTransposed) check(gn_tensor_transpose(t, -1, -2, &v), v);
  else if (layout == kSliced) check(gn_tensor_slice(t, (int64_t)n - 1, 1, base[n - 1], 2, &v), v);
  else return gt::T(t);
  gn_tensor_release(t);
  return gt::T(v);
}

// A tensor's values as float64 (any dtype, any layout).
std::vector<double> as_f64(gn_tensor* t) {
  gn_tensor* d = nullptr;
  check(gn_tensor_to_dtype(t, GN_F64, &d), d);
  std::vector<double> out((size_t)gn_tensor_numel(d));
  gn_status* st = gn_tensor_to_host(d, out.data(), out.size() * sizeof(double));
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  gn_tensor_release(d);
  return out;
}

struct Result {
  int32_t code = GN_OK;
  std::string msg;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int32_t> dtypes;
  std::vector<std::vector<double>> values;
};

Result run_case(gt::Runtime& r, const Case& c) {
  std::vector<gt::T> ins;
  std::vector<gn_tensor*> raw;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ins.push_back(build(r.rt, r.cpu, c.inputs[i], 1234u + 77u * (uint32_t)i));
    raw.push_back(ins.back().t);
  }
  Result res;
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(r.rt, c.op.c_str(), &op);
  if (!st) {
    std::vector<gn_tensor*> outs(c.n_out, nullptr);
    st = gn_op_call(r.rt, op, raw.data(), raw.size(), c.attrs.data(), c.attrs.size(), outs.data(), outs.size());
    if (!st)
      for (gn_tensor* o : outs) {
        gt::T keep(o);
        res.shapes.push_back(keep.shape());
        res.dtypes.push_back(gn_tensor_dtype(o));
        res.values.push_back(as_f64(o));
      }
  }
  if (st) {
    res.code = gn_status_code(st);
    res.msg = gn_status_message(st);
    gn_status_free(st);
  }
  return res;
}

// ---------------------------------------------------------------- the cases

constexpr double kEpsF32 = 1.1920928955078125e-7;
const Tol kExactF32{1e-6, 0.0};
const Tol kAlphaF32{1e-6, 1e-6};
const Tol kEltF32{1e-5, 1e-6};
const Tol kNormF32{1e-5, 1e-5};
const Tol kBf16{1e-2, 1e-2};

Tol matmul_tol(int32_t dtype, int64_t K) {
  const double s = std::sqrt((double)std::max<int64_t>(K, 1));
  if (dtype == GN_F32) return {8 * s * kEpsF32, 8 * s * kEpsF32};
  return {1e-2, 1e-2 * std::max(1.0, s / 4)};
}

std::string dname(int32_t dt) {
  switch (dt) {
    case GN_F32: return "f32";
    case GN_BF16: return "bf16";
    case GN_F16: return "f16";
    case GN_F64: return "f64";
    default: return "dt" + std::to_string(dt);
  }
}

std::string sname(const std::vector<int64_t>& s) {
  std::string r;
  for (int64_t d : s) r += (r.empty() ? "" : "x") + std::to_string(d);
  return r.empty() ? "scalar" : r;
}

const char* lname(Layout l) { return l == kTransposed ? "_T" : l == kSliced ? "_S" : ""; }

std::vector<Case> unary_cases() {
  struct U {
    const char* op;
    double lo, hi;
    std::vector<gn_attr_value> attrs;
    const char* tag;
  };
  const std::vector<U> ops = {
      {"exp", -4, 4, {}, ""},        {"log", 0.01, 10, {}, ""},     {"sqrt", 0, 10, {}, ""},
      {"tanh", -4, 4, {}, ""},       {"sigmoid", -8, 8, {}, ""},    {"relu", -2, 2, {}, ""},
      {"gelu", -5, 5, {gn_attr_int(0)}, "erf"}, {"gelu", -5, 5, {gn_attr_int(1)}, "tanh"},
      {"silu", -6, 6, {}, ""},       {"abs", -2, 2, {}, ""},        {"square", -3, 3, {}, ""},
      {"neg", -2, 2, {}, ""},        {"clamp", -2, 2, {gn_attr_float(-0.5), gn_attr_float(0.25)}, ""},
  };
  const std::vector<std::pair<std::vector<int64_t>, Layout>> shapes = {
      {{257, 513}, kContig}, {{3, 5, 7}, kContig}, {{31, 17}, kTransposed}, {{6, 9}, kSliced},
      {{0, 4}, kContig},     {{}, kContig},       {{1}, kContig}};
  std::vector<Case> cs;
  for (const U& u : ops)
    for (int32_t dt : {GN_F32, GN_BF16, GN_F16})
      for (const auto& [shape, layout] : shapes) {
        if (dt == GN_F16 && shape.size() != 2) continue;  // f16: a taste of the fallback path
        Case c;
        c.name = std::string(u.op) + u.tag + "_" + dname(dt) + "_" + sname(shape) + lname(layout);
        c.op = u.op;
        c.inputs = {{shape, dt, layout, u.lo, u.hi}};
        c.attrs = u.attrs;
        c.tol = dt == GN_F32 ? kEltF32 : kBf16;
        cs.push_back(c);
      }
  return cs;
}

std::vector<Case> binary_cases() {
  struct B {
    const char* op;
    std::vector<gn_attr_value> attrs;
    const char* tag;
  };
  const std::vector<B> ops = {{"add", {}, ""},  {"add", {gn_attr_float(2.5)}, "a25"}, {"sub", {}, ""},
                              {"sub", {gn_attr_float(0.5)}, "a05"}, {"mul", {}, ""}, {"div", {}, ""},
                              {"maximum", {}, ""}, {"minimum", {}, ""}};
  struct S {
    std::vector<int64_t> a, b;
    Layout la, lb;
  };
  const std::vector<S> shapes = {
      {{257, 513}, {257, 513}, kContig, kContig},  // large, same shape
      {{4, 1, 5}, {3, 1}, kContig, kContig},       // both broadcast
      {{6, 7}, {7}, kContig, kContig},             // row vector
      {{1, 7}, {6, 7}, kContig, kContig},          // src0 broadcast
      {{5, 3}, {}, kContig, kContig},              // 0-d b
      {{9, 11}, {9, 11}, kTransposed, kContig},    // non-contiguous a
      {{9, 11}, {9, 11}, kContig, kSliced},        // non-contiguous b
      {{0, 3}, {0, 3}, kContig, kContig},          // empty
      {{13}, {13}, kContig, kContig},              // odd 1-D
  };
  std::vector<Case> cs;
  for (const B& b : ops)
    for (int32_t dt : {GN_F32, GN_BF16, GN_F64})
      for (const S& s : shapes) {
        Case c;
        c.name = std::string(b.op) + b.tag + "_" + dname(dt) + "_" + sname(s.a) + lname(s.la) + "_" + sname(s.b) +
                 lname(s.lb);
        c.op = b.op;
        // div: keep the denominator away from 0
        const double blo = std::string(b.op) == "div" ? 0.5 : -1.0, bhi = std::string(b.op) == "div" ? 2.0 : 1.0;
        c.inputs = {{s.a, dt, s.la, -1, 1}, {s.b, dt, s.lb, blo, bhi}};
        c.attrs = b.attrs;
        c.tol = dt == GN_BF16 ? kBf16 : b.attrs.empty() ? kExactF32 : kAlphaF32;
        cs.push_back(c);
      }
  return cs;
}

std::vector<Case> matmul_cases() {
  struct M {
    const char* op;
    std::vector<int64_t> a, b;
    Layout la, lb;
    int64_t ta, tb, K;
  };
  const std::vector<M> shapes = {
      {"matmul", {1, 1}, {1, 1}, kContig, kContig, 0, 0, 1},
      {"matmul", {17, 33}, {33, 9}, kContig, kContig, 0, 0, 33},
      {"matmul", {257, 129}, {129, 65}, kContig, kContig, 0, 0, 129},
      {"matmul", {64, 513}, {513, 31}, kContig, kContig, 0, 0, 513},
      {"matmul", {33, 17}, {9, 33}, kContig, kContig, 1, 1, 33},          // trans flags
      {"matmul", {17, 33}, {33, 9}, kTransposed, kTransposed, 0, 0, 33},  // transposed views
      {"matmul", {17, 33}, {33, 9}, kSliced, kContig, 0, 0, 33},          // strided rows
      {"matmul", {2, 1, 5, 6}, {3, 6, 4}, kContig, kContig, 0, 0, 6},     // batch broadcast
      {"matmul", {3, 5, 6}, {6, 4}, kContig, kContig, 0, 0, 6},           // b shared
      {"matmul", {6}, {3, 6, 4}, kContig, kContig, 0, 0, 6},              // 1-D a
      {"matmul", {5, 6}, {6}, kContig, kContig, 0, 0, 6},                 // 1-D b
      {"matmul", {7}, {7}, kContig, kContig, 0, 0, 7},                    // dot
      {"matmul", {0, 5}, {5, 3}, kContig, kContig, 0, 0, 5},              // empty M
      {"matmul", {4, 0}, {0, 3}, kContig, kContig, 0, 0, 0},              // K == 0: zeros
      {"bmm", {4, 5, 6}, {4, 6, 7}, kContig, kContig, 0, 0, 6},
      {"bmm", {4, 6, 5}, {4, 7, 6}, kContig, kContig, 1, 1, 6},
      {"bmm", {4, 5, 6}, {4, 6, 7}, kTransposed, kSliced, 0, 0, 6},
  };
  std::vector<Case> cs;
  int idx = 0;
  for (const M& m : shapes) {
    ++idx;
    for (int32_t dt : {GN_F32, GN_BF16, GN_F16}) {
      if (dt != GN_F32 && m.K > 200) continue;
      Case c;
      c.name = std::string(m.op) + std::to_string(idx) + "_" + dname(dt) + "_" + sname(m.a) + lname(m.la) + "_" +
               sname(m.b) + lname(m.lb) + (m.ta ? "_ta" : "") + (m.tb ? "_tb" : "");
      c.op = m.op;
      c.inputs = {{m.a, dt, m.la, -1, 1}, {m.b, dt, m.lb, -1, 1}};
      c.attrs = {gn_attr_int(m.ta), gn_attr_int(m.tb)};
      c.tol = matmul_tol(dt, m.K);
      cs.push_back(c);
    }
  }
  return cs;
}

std::vector<Case> softmax_cases() {
  struct S {
    std::vector<int64_t> shape;
    Layout layout;
    int64_t dim;
  };
  const std::vector<S> shapes = {{{257, 513}, kContig, -1}, {{257, 513}, kContig, 0}, {{3, 4, 5}, kContig, 1},
                                 {{7, 9}, kTransposed, -1}, {{5, 6}, kSliced, 1},    {{0, 5}, kContig, -1},
                                 {{1, 1}, kContig, 0},      {{11}, kContig, 0}};
  std::vector<Case> cs;
  for (const char* op : {"softmax", "log_softmax"})
    for (int32_t dt : {GN_F32, GN_BF16})
      for (int64_t out_dt : {(int64_t)GN_DIM_NONE, (int64_t)GN_F32})
        for (const S& s : shapes) {
          if (dt == GN_F32 && out_dt != GN_DIM_NONE) continue;
          Case c;
          c.name = std::string(op) + "_" + dname(dt) + (out_dt == GN_DIM_NONE ? "" : "_to_f32") + "_" +
                   sname(s.shape) + lname(s.layout) + "_d" + std::to_string(s.dim < 0 ? 9 : s.dim);
          c.op = op;
          c.inputs = {{s.shape, dt, s.layout, -5, 5}};
          c.attrs = {gn_attr_int(s.dim), gn_attr_int(out_dt)};
          const bool f32_out = dt == GN_F32 || out_dt == GN_F32;
          // bf16 input widened to f32 out: only f32 accumulation error remains
          c.tol = f32_out ? (std::string(op) == "softmax" ? kEltF32 : kNormF32) : kBf16;
          cs.push_back(c);
        }
  return cs;
}

std::vector<Case> layer_norm_cases() {
  struct L {
    std::vector<int64_t> x;
    Layout layout;
    int64_t nd;
    int n_in;
  };
  const std::vector<L> shapes = {{{257, 513}, kContig, 1, 3}, {{64, 1024}, kContig, 1, 1}, {{9, 33}, kContig, 1, 2},
                                 {{4, 6, 8}, kContig, 2, 3},  {{13, 7}, kTransposed, 1, 3}, {{0, 16}, kContig, 1, 3},
                                 {{5, 1}, kContig, 1, 3}};
  std::vector<Case> cs;
  for (int32_t dt : {GN_F32, GN_BF16})
    for (const L& l : shapes) {
      Case c;
      c.name = "layer_norm_" + dname(dt) + "_" + sname(l.x) + lname(l.layout) + "_n" + std::to_string(l.nd) + "_in" +
               std::to_string(l.n_in);
      c.op = "layer_norm";
      c.inputs = {{l.x, dt, l.layout, -3, 5}};
      const std::vector<int64_t> norm(l.x.end() - l.nd, l.x.end());
      if (l.n_in > 1) c.inputs.push_back({norm, dt, kContig, 0.5, 1.5});
      if (l.n_in > 2) c.inputs.push_back({norm, dt, kContig, -1, 1});
      c.attrs = {gn_attr_int(l.nd), gn_attr_float(1e-5)};
      c.n_out = 3;
      c.tol = dt == GN_F32 ? kNormF32 : kBf16;
      cs.push_back(c);
    }
  return cs;
}

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (auto* f : {unary_cases, binary_cases, matmul_cases, softmax_cases, layer_norm_cases}) {
    std::vector<Case> v = f();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// ---------------------------------------------------------------- the tests

class OpConsistency : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cpu_plugin_built()) GTEST_SKIP() << "libgenesis_plugin_cpu.so not built";
  }
};

TEST_P(OpConsistency, CpuMatchesReference) {
  const Case& c = GetParam();
  Result want = run_case(runtimes().ref, c);
  Result got = run_case(runtimes().cpu, c);
  ASSERT_EQ(got.code, want.code) << "reference: " << want.msg << "\ncpu: " << got.msg;
  if (want.code != GN_OK) return;
  ASSERT_EQ(got.values.size(), want.values.size());
  for (size_t k = 0; k < want.values.size(); ++k) {
    ASSERT_EQ(got.shapes[k], want.shapes[k]) << "output " << k;
    ASSERT_EQ(got.dtypes[k], want.dtypes[k]) << "output " << k;
    const auto& g = got.values[k];
    const auto& w = want.values[k];
    ASSERT_EQ(g.size(), w.size());
    size_t bad = 0;
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const bool ok = (std::isnan(w[i]) && std::isnan(g[i])) || (std::isinf(w[i]) && g[i] == w[i]) ||
                      std::fabs(g[i] - w[i]) <= c.tol.atol + c.tol.rtol * std::fabs(w[i]);
      if (!ok) {
        ++bad;
        const double err = std::fabs(g[i] - w[i]);
        if (!(err <= worst)) { worst = err; worst_i = i; }
      }
    }
    EXPECT_EQ(bad, 0u) << "output " << k << ": " << bad << " of " << w.size() << " elements off; worst at " << worst_i
                       << ": cpu " << g[worst_i] << " vs reference " << w[worst_i] << " (rtol " << c.tol.rtol
                       << ", atol " << c.tol.atol << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpConsistency, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum((unsigned char)ch)) ch = '_';
                           return n;
                         });

TEST(CpuBackend, ServesCpuDeviceType) {
  if (!cpu_plugin_built()) GTEST_SKIP() << "libgenesis_plugin_cpu.so not built";
  EXPECT_EQ(backend_of(runtimes().cpu.rt, "cpu"), "cpu");
  EXPECT_EQ(backend_of(runtimes().ref.rt, "cpu"), "reference");
}

TEST(CpuBackend, CachingAllocatorStatistics) {
  if (!cpu_plugin_built()) GTEST_SKIP() << "libgenesis_plugin_cpu.so not built";
  gt::Runtime& r = runtimes().cpu;
  GN_OK_OR_FAIL(gn_memory_empty_cache(r.rt, r.cpu));
  gn_memory_stats s0{};
  s0.struct_size = sizeof(s0);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &s0));
  const int64_t shape[] = {1000, 1000};
  gn_tensor* t = nullptr;
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, shape, 2, GN_F32, r.cpu, &t));
  EXPECT_EQ((uintptr_t)gn_tensor_data_ptr(t) % 64, 0u);
  gn_memory_stats s1{};
  s1.struct_size = sizeof(s1);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &s1));
  EXPECT_GE(s1.allocated, s0.allocated + 4000000u);
  EXPECT_EQ(s1.num_allocs, s0.num_allocs + 1);
  EXPECT_EQ(s1.cache_misses, s0.cache_misses + 1);
  EXPECT_EQ(s1.active_blocks, s0.active_blocks + 1);
  EXPECT_GE(s1.peak_allocated, s1.allocated);
  gn_tensor_release(t);
  // The same size again comes from the cache.
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, shape, 2, GN_F32, r.cpu, &t));
  gn_memory_stats s2{};
  s2.struct_size = sizeof(s2);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &s2));
  EXPECT_EQ(s2.cache_hits, s1.cache_hits + 1);
  EXPECT_EQ(s2.num_frees, s1.num_frees + 1);
  gn_tensor_release(t);
  gn_memory_stats s3{};
  s3.struct_size = sizeof(s3);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &s3));
  EXPECT_GT(s3.reserved, s3.allocated);  // the block is cached
  GN_OK_OR_FAIL(gn_memory_empty_cache(r.rt, r.cpu));
  GN_OK_OR_FAIL(gn_memory_reset_peak(r.rt, r.cpu));
  gn_memory_stats s4{};
  s4.struct_size = sizeof(s4);
  GN_OK_OR_FAIL(gn_memory_stats_get(r.rt, r.cpu, &s4));
  EXPECT_EQ(s4.reserved, s4.allocated);
  EXPECT_EQ(s4.peak_allocated, s4.allocated);
}

}  // namespace
