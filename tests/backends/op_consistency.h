// tests/backends/op_consistency.h - the harness of the cross-backend op suite
// (op_consistency_*_test.cpp): cases, the two runtimes, building inputs,
// running a case on both and comparing.  Everything is in an anonymous
// namespace: each test file has its own copy and its own fixture.
#pragma once
//
// Two runtimes live in this process: "reference" alone (the oracle) and the
// runtime under test, GN_SUITE_PLUGINS: "reference,cpu" by default, where the
// oneDNN plugin serves device type "cpu" and the reference kernels only catch
// what it refuses; "reference,cuda" in op_consistency_cuda_test (device
// "cuda:0"; it skips where cuda reports no device).  Every case (op x dtype x
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
//    f64 matmul (C++ loops, double accumulation in the reference's k order,
//    FMA allowed): the same bound with eps_f64; integer matmul: exact (int64
//    wrapping arithmetic in both).
//  * bf16 (and f16): both backends see the same bf16 inputs and compute in at
//    least f32, so the results differ by the final rounding: one bf16 ulp,
//    2^-8 ~ 4e-3 relative; we allow rtol 1e-2 with atol 1e-2 (matmul: atol
//    1e-2*sqrt(K)/4, the size of the outputs' rounding).
//  * exact (tolerance 0): comparisons, where, casts, copies, indexing, the
//    random ops, and whatever a backend computes in double and rounds once.
//
// cuda (GN_SUITE_TOL_FACTOR = 2): every non-zero tolerance above is doubled.
// CUDA's libdevice float functions are specified to 1-4 ulp where glibc's are
// within 1, block/warp tree reductions sum in another order than oneDNN, and
// nvcc contracts a*b+c into FMA by default (one rounding fewer, so a different
// result by up to an ulp per step).  A factor 2 covers that and still fails a
// kernel that is wrong by one bf16 ulp times a few (e.g. a bf16 result rounded
// twice) or uses TF32 for f32 matmul (10-bit mantissa: ~1e-3 relative, far
// above 16*sqrt(K)*eps).  Exact cases stay exact; the in-place optimizer
// steps, bit-identical on cpu, are compared within 4 ulp of the tensor's
// largest value on cuda (FMA contraction).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <string_view>
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
  // Attributes that need storage or the runtime: (position, ints) replace
  // attrs[position] with an ints attribute; device_attr >= 0 puts the cpu
  // device there.  seed != 0: gn_rng_manual_seed(seed) before the call (random ops).
  std::vector<std::pair<size_t, std::vector<int64_t>>> ints;
  int device_attr = -1;
  uint64_t seed = 0;
  // Outputs not compared (e.g. values that are allowed to differ); bit mask.
  uint32_t skip_outputs = 0;
  // The backend may refuse this case (the reference then serves it); every
  // other case that succeeds on the reference must run on the backend itself
  // (checked by the coverage test, see OPC_SUITE).
  bool may_fall_back = false;
};

// Test names in failure messages instead of byte dumps.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// ---------------------------------------------------------------- runtimes
//
// The backend under test is a compile-time parameter (tests/backends/CMakeLists.txt
// builds one executable per backend from these same sources):
//   GN_SUITE_PLUGINS  plugins of the runtime under test   "reference,cpu"
//   GN_SUITE_BACKEND  backend that must serve the device   "cpu"
//   GN_SUITE_DEVICE   device the cases run on              "cpu"
//   GN_SUITE_TOL_FACTOR  multiplies every non-zero tolerance (1 on cpu; see
//                     the header comment for the cuda value's reason)
// Inputs are always made on the host ("cpu", served by the reference in a
// runtime without the cpu plugin) and moved to the device; outputs come back
// to the host before the f64 conversion, so a backend without an f64 cast or
// without host-visible memory is still compared.
#ifndef GN_SUITE_PLUGINS
#define GN_SUITE_PLUGINS "reference,cpu"
#endif
#ifndef GN_SUITE_BACKEND
#define GN_SUITE_BACKEND "cpu"
#endif
#ifndef GN_SUITE_DEVICE
#define GN_SUITE_DEVICE "cpu"
#endif
#ifndef GN_SUITE_TOL_FACTOR
#define GN_SUITE_TOL_FACTOR 1.0
#endif
constexpr double kSuiteTolFactor = GN_SUITE_TOL_FACTOR;
constexpr bool kSuiteIsCpu = std::string_view(GN_SUITE_BACKEND) == "cpu";

// Device type of GN_SUITE_DEVICE ("cuda:0" -> "cuda").
inline std::string suite_device_type() {
  std::string d = GN_SUITE_DEVICE;
  return d.substr(0, d.find(':'));
}

inline bool suite_plugin_built() {
  return std::filesystem::exists(std::string(GENESIS_TEST_PLUGIN_DIR) + "/libgenesis_plugin_" GN_SUITE_BACKEND ".so");
}

// One runtime: `host` is "cpu", `dev` is where the cases run (== host for the
// reference oracle and for the cpu backend).
struct Rt {
  gt::Runtime base;
  gn_runtime* rt;
  gn_device host{}, dev{};
  bool has_dev = false;
  Rt(const char* plugins, const char* device) : base(plugins), rt(base.rt), host(base.cpu) {
    const std::string type = std::string(device).substr(0, std::string(device).find(':'));
    if (gn_device_count(rt, type.c_str()) > 0) {
      gn_status* st = gn_device_parse(rt, device, &dev);
      has_dev = st == nullptr;
      gn_status_free(st);
    }
    if (!has_dev) dev = host;
  }
};

struct Runtimes {
  Rt ref{"reference", "cpu"};
  Rt dut{GN_SUITE_PLUGINS, GN_SUITE_DEVICE};
  // The cpu backend alone (no reference to fall back to): the coverage test
  // runs cases here to see that the backend serves them itself.  Other
  // backends' devices have no reference kernels, so dut already shows that.
  Rt solo{kSuiteIsCpu ? GN_SUITE_BACKEND : GN_SUITE_PLUGINS, GN_SUITE_DEVICE};
};

inline Runtimes& runtimes() {
  static Runtimes* r = new Runtimes();  // lives to the end of the process
  return *r;
}

// Why the suite cannot run here ("" when it can): plugin not built, or the
// device type reports no devices (CI machines without a GPU).
inline std::string suite_skip_reason() {
  if (!suite_plugin_built()) return "libgenesis_plugin_" GN_SUITE_BACKEND ".so not built";
  if (!runtimes().dut.has_dev) return "no " + suite_device_type() + " device";
  return "";
}
#define OPC_REQUIRE_SUITE()                       \
  do {                                            \
    const std::string why_ = suite_skip_reason(); \
    if (!why_.empty()) GTEST_SKIP() << why_;      \
  } while (0)

// Backend serving device type `name` in rt ("" if absent).
inline std::string backend_of(gn_runtime* rt, const char* name) {
  for (size_t i = 0; i < gn_device_type_count(rt); ++i) {
    gn_device_type_record rec{};
    rec.struct_size = sizeof(rec);
    gn_status* st = gn_device_type_get(rt, i, &rec);
    if (st) {
      gn_status_free(st);
      continue;
    }
    if (std::string(rec.name) == name) return rec.backend;
  }
  return "";
}

// "reference", "cpu", "cpu alone" ... for messages.
inline std::string rt_name(const Rt* r) {
  if (r == &runtimes().ref) return "reference";
  return r == &runtimes().solo && r != &runtimes().dut && kSuiteIsCpu ? GN_SUITE_BACKEND " alone" : GN_SUITE_BACKEND;
}

// Calls op `name` on r; its outputs are kept in `outs` (released when it is null; none on failure).
inline gt::Err call(Rt& r, const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> attrs, size_t n_out,
                    std::vector<gt::T>* outs = nullptr) {
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(r.rt, name, &op);
  std::vector<gn_tensor*> o(n_out, nullptr);
  if (!st) st = gn_op_call(r.rt, op, in.data(), in.size(), attrs.data(), attrs.size(), o.data(), n_out);
  if (st) return gt::take(st);
  if (outs)
    for (gn_tensor* t : o) outs->emplace_back(t);
  else
    for (gn_tensor* t : o) gn_tensor_release(t);
  return {GN_OK, ""};
}

// ---------------------------------------------------------------- tensors

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline gn_tensor* check(gn_status* st, gn_tensor* t) {
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  return t;
}

// t (released) moved to dev; a retain when it is there already.
inline gn_tensor* move_to(gn_tensor* t, gn_device dev) {
  gn_tensor* d = nullptr;
  check(gn_tensor_to_device(t, dev, &d), d);
  gn_tensor_release(t);
  return d;
}

// Build `in` on r's device from seed: random storage (larger for
// non-contiguous layouts) made on the host, converted to the dtype there,
// moved to the device, then viewed as asked.
inline gt::T build(Rt& r, const Input& in, uint32_t seed) {
  std::vector<int64_t> base = in.shape;
  const size_t n = base.size();
  Layout layout = in.layout;
  if (layout == kTransposed && n >= 2)
    std::swap(base[n - 2], base[n - 1]);
  else if (layout == kSliced && n >= 1)
    base[n - 1] = 2 * base[n - 1] + 1;
  else
    layout = kContig;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(in.lo, in.hi);
  std::vector<double> data((size_t)numel(base));
  for (double& v : data) v = dist(gen);
  // bool inputs: floor first, so [-1, 1) gives about half false (x == 0)
  if (in.dtype == GN_BOOL)
    for (double& v : data) v = std::floor(v);
  gn_tensor* t64 = nullptr;
  gn_tensor* t = nullptr;
  check(gn_tensor_from_host(r.rt, data.data(), base.data(), (int32_t)n, GN_F64, r.host, &t64), t64);
  check(gn_tensor_to_dtype(t64, in.dtype, &t), t);
  gn_tensor_release(t64);
  t = move_to(t, r.dev);
  gn_tensor* v = nullptr;
  if (layout == kTransposed)
    check(gn_tensor_transpose(t, -1, -2, &v), v);
  else if (layout == kSliced)
    check(gn_tensor_slice(t, (int64_t)n - 1, 1, base[n - 1], 2, &v), v);
  else
    return gt::T(t);
  gn_tensor_release(t);
  return gt::T(v);
}

// A tensor's values as float64 (any dtype, any layout, any device).
inline std::vector<double> as_f64(gn_tensor* t) {
  gn_device host{};
  gn_status* hs = gn_device_parse(gn_tensor_runtime(t), "cpu", &host);
  EXPECT_EQ(hs, nullptr) << gn_status_message(hs);
  gn_status_free(hs);
  gn_tensor* h = nullptr;
  check(gn_tensor_to_device(t, host, &h), h);
  gn_tensor* d = nullptr;
  check(gn_tensor_to_dtype(h, GN_F64, &d), d);
  gn_tensor_release(h);
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

inline Result run_case(Rt& r, const Case& c) {
  std::vector<gt::T> ins;
  std::vector<gn_tensor*> raw;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ins.push_back(build(r, c.inputs[i], 1234u + 77u * (uint32_t)i));
    raw.push_back(ins.back().t);
  }
  Result res;
  std::vector<gn_attr_value> attrs = c.attrs;
  for (const auto& [pos, v] : c.ints) {
    if (attrs.size() <= pos) attrs.resize(pos + 1);
    attrs[pos] = gn_attr_ints(v.data(), v.size());
  }
  if (c.device_attr >= 0) {
    if (attrs.size() <= (size_t)c.device_attr) attrs.resize((size_t)c.device_attr + 1);
    attrs[(size_t)c.device_attr] = gn_attr_device(r.dev);
  }
  if (c.seed) gn_rng_manual_seed(r.rt, c.seed);
  const gn_op* op = nullptr;
  gn_status* st = gn_op_find(r.rt, c.op.c_str(), &op);
  if (!st) {
    std::vector<gn_tensor*> outs(c.n_out, nullptr);
    st = gn_op_call(r.rt, op, raw.data(), raw.size(), attrs.data(), attrs.size(), outs.data(), outs.size());
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
constexpr double kEpsF64 = 2.220446049250313e-16;
const Tol kExactF32{1e-6, 0.0};
const Tol kAlphaF32{1e-6, 1e-6};
const Tol kEltF32{1e-5, 1e-6};
const Tol kNormF32{1e-5, 1e-5};
const Tol kBf16{1e-2, 1e-2};
const Tol kExact{0.0, 0.0};

// An input shape, the dimension an op works along, and the input's layout.
struct ShapeDim {
  std::vector<int64_t> shape;
  int64_t dim;
  Layout layout;
};

// A case of op on these inputs and attributes.
inline Case make_case(std::string name, const char* op, std::vector<Input> ins, std::vector<gn_attr_value> attrs,
                      Tol tol = kExact, size_t n_out = 1) {
  Case c;
  c.name = std::move(name);
  c.op = op;
  c.inputs = std::move(ins);
  c.attrs = std::move(attrs);
  c.tol = tol;
  c.n_out = n_out;
  return c;
}

inline Tol matmul_tol(int32_t dtype, int64_t K) {
  const double s = std::sqrt((double)std::max<int64_t>(K, 1));
  if (dtype == GN_F32) return {8 * s * kEpsF32, 8 * s * kEpsF32};
  if (dtype == GN_F64) return {8 * s * kEpsF64, 8 * s * kEpsF64};
  if (dtype == GN_I32 || dtype == GN_I64) return {0, 0};
  return {1e-2, 1e-2 * std::max(1.0, s / 4)};
}

inline std::string dname(int32_t dt) {
  switch (dt) {
    case GN_F32: return "f32";
    case GN_BF16: return "bf16";
    case GN_F16: return "f16";
    case GN_F64: return "f64";
    case GN_I64: return "i64";
    case GN_I32: return "i32";
    case GN_I8: return "i8";
    case GN_U8: return "u8";
    case GN_BOOL: return "bool";
    default: return "dt" + std::to_string(dt);
  }
}

inline std::string sname(const std::vector<int64_t>& s) {
  std::string r;
  for (int64_t d : s) {
    if (!r.empty()) r += 'x';
    r += std::to_string(d);
  }
  return r.empty() ? "scalar" : r;
}

inline const char* lname(Layout l) { return l == kTransposed ? "_T" : l == kSliced ? "_S" : ""; }

// The tolerance a case gets on the backend under test: c.tol times the
// suite factor.  One exception off the cpu backend: float64 results of the
// double-precision math functions.  The reference and the cpu backend both
// call glibc, whose double functions are (nearly) correctly rounded, so those
// cases are exact there; CUDA's libdevice exp/log/pow/tanh/erf/cos are within
// 1-2 ulp instead, so a zero tolerance becomes the suite's own f64 libm
// tolerance (rtol 1e-14, atol 1e-15: a few ulp, as for log/sin/cos f64 in
// op_consistency_elementwise_test.cpp).
inline Tol suite_tol(const Case& c, int32_t out_dtype) {
  static const std::set<std::string> libm_ops = {"exp",     "log",  "log1p", "sin", "cos",   "tanh",
                                                 "sigmoid", "gelu", "silu",  "pow", "randn", "rsqrt"};
  if (!kSuiteIsCpu && out_dtype == GN_F64 && c.tol.rtol == 0 && c.tol.atol == 0 && libm_ops.count(c.op))
    return {1e-14, 1e-15};
  return {c.tol.rtol * kSuiteTolFactor, c.tol.atol * kSuiteTolFactor};
}

inline void check_case(const Case& c) {
  Result want = run_case(runtimes().ref, c);
  Result got = run_case(runtimes().dut, c);
  ASSERT_EQ(got.code, want.code) << "reference: " << want.msg << "\n" GN_SUITE_BACKEND ": " << got.msg;
  if (want.code != GN_OK) return;
  ASSERT_EQ(got.values.size(), want.values.size());
  for (size_t k = 0; k < want.values.size(); ++k) {
    if (c.skip_outputs & (1u << k)) continue;
    ASSERT_EQ(got.shapes[k], want.shapes[k]) << "output " << k;
    ASSERT_EQ(got.dtypes[k], want.dtypes[k]) << "output " << k;
    const auto& g = got.values[k];
    const auto& w = want.values[k];
    ASSERT_EQ(g.size(), w.size());
    const Tol tol = suite_tol(c, got.dtypes[k]);
    size_t bad = 0;
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const bool ok = (std::isnan(w[i]) && std::isnan(g[i])) || (std::isinf(w[i]) && g[i] == w[i]) ||
                      std::fabs(g[i] - w[i]) <= tol.atol + tol.rtol * std::fabs(w[i]);
      if (!ok) {
        ++bad;
        const double err = std::fabs(g[i] - w[i]);
        if (!(err <= worst)) {
          worst = err;
          worst_i = i;
        }
      }
    }
    EXPECT_EQ(bad, 0u) << "output " << k << ": " << bad << " of " << w.size() << " elements off; worst at " << worst_i
                       << ": " GN_SUITE_BACKEND " " << g[worst_i] << " vs reference " << w[worst_i] << " (rtol "
                       << tol.rtol << ", atol " << tol.atol << ")";
  }
}

// Cases that the reference computes but the backend alone refuses
// (GN_ERR_UNSUPPORTED), leaving out those marked may_fall_back.
inline std::vector<std::string> refused_cases(const std::vector<Case>& cases) {
  std::vector<std::string> refused;
  for (const Case& c : cases) {
    if (c.may_fall_back) continue;
    if (run_case(runtimes().ref, c).code != GN_OK) continue;
    const Result r = run_case(runtimes().solo, c);
    if (r.code == GN_ERR_UNSUPPORTED) refused.push_back(c.name + ": " + r.msg);
  }
  return refused;
}

inline std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!std::isalnum((unsigned char)ch)) ch = '_';
  return n;
}

}  // namespace

// One parameterised suite per test file: Fixture runs every case of cases_fn().
#define OPC_SUITE(Fixture, Prefix, cases_fn)                                                        \
  namespace {                                                                                       \
  class Fixture : public ::testing::TestWithParam<Case> {                                           \
   protected:                                                                                       \
    void SetUp() override { OPC_REQUIRE_SUITE(); }                                                  \
  };                                                                                                \
  TEST_P(Fixture, MatchesReference) { check_case(GetParam()); }                                     \
  INSTANTIATE_TEST_SUITE_P(Prefix, Fixture, ::testing::ValuesIn(cases_fn()), case_name);            \
  TEST(Fixture##Coverage, ServedByTheBackendItself) {                                               \
    OPC_REQUIRE_SUITE();                                                                            \
    const std::vector<std::string> refused = refused_cases(cases_fn());                             \
    std::string list;                                                                               \
    for (const std::string& n : refused) list += "\n  " + n;                                        \
    EXPECT_TRUE(refused.empty()) << refused.size() << " cases fell back to the reference:" << list; \
  }                                                                                                 \
  }
