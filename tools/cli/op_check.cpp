// op_check.cpp - `genesis test-ops`: the ops a loaded plugin implements, run
// on it and on the reference backend from the same random inputs and
// compared (--mode test), timed (--mode perf), or differentiated through the
// frontend and checked against central differences (--mode grad, the
// differentiable ops' samples of autograd::grad_samples: float64 where the
// plugin has a float64 kernel of the op, else float32 with looser
// tolerances; see autograd::gradcheck_sample).  It needs no source tree:
// the cases come from each op's schema (arity, attribute defaults) and the
// kernels the plugin registered (device type, dtypes), so a third-party
// backend or op plugin is checked the way the built-in ones are.
//
// Cases: for every op with a kernel of the plugin, every dtype it registered
// (all dtypes for GN_DTYPE_ANY) and two layouts (dense, and a transposed
// view of the same values), the first shape family the reference accepts:
// every input (4, 6); a (4, 6) @ (6, 5) chain; a (2, 3, 4, 6) batch.  Values
// are uniform in [-2, 2] (integers in [-4, 4], bools 0/1), the same bits on
// both runtimes.  An op the reference lacks (an op plugin's own op) is checked
// against itself: the transposed layout must give the dense layout's result.
// Ops that need attributes without defaults, or inputs the families cannot
// build (index tensors, in-place optimizer state), are counted as skipped.
//
// Comparison (test): outputs as float64, |got - want| <= atol + rtol |want|,
// NaN matches NaN, per dtype: f64 1e-9, f32 1e-4 (oneDNN's and libdevice's
// approximations; reductions of 24 terms), f16/bf16 2e-2, integers and bool
// exact.  Errors must agree in code.  Exit status 1 when a case fails.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli.h"
#include "genesis/autograd.hpp"

namespace genesis::cli {
namespace {

// Options of `genesis test-ops`.
struct OpCheckOptions {
  std::string backend;        // plugin under test
  std::string op;             // only this op ("" = all)
  std::string mode = "test";  // test | perf | grad
  bool verbose = false;
};

constexpr int32_t kAllDtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};

// Releases a status and tells whether there was one.
struct Status {
  int32_t code = 0;
  std::string msg;
  explicit Status(gn_status* st) {
    if (!st) return;
    code = gn_status_code(st);
    msg = gn_status_message(st);
    gn_status_free(st);
  }
  bool ok() const { return code == 0; }
};

// Owns tensors.
struct Tensors {
  std::vector<gn_tensor*> v;
  Tensors() = default;
  Tensors(const Tensors&) = delete;
  Tensors& operator=(const Tensors&) = delete;
  ~Tensors() {
    for (gn_tensor* t : v)
      if (t) gn_tensor_release(t);
  }
};

bool is_float(int32_t dt) { return dt == GN_F32 || dt == GN_F64 || dt == GN_F16 || dt == GN_BF16; }

// Host values of one input: float64, rounded to what dtype can hold.
std::vector<double> random_values(std::mt19937_64& rng, int64_t n, int32_t dtype) {
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int> i(-4, 4), b(0, 1);
  std::vector<double> v((size_t)n);
  for (double& x : v) {
    if (dtype == GN_BOOL)
      x = b(rng);
    else if (dtype == GN_U8)
      x = i(rng) + 4;
    else if (!is_float(dtype))
      x = i(rng);
    else
      x = u(rng);
  }
  return v;
}

// A tensor of `dtype` on dev holding `values` (shape dims), made on the host
// device and moved (the device may have no cast kernel); transposed: laid out
// as the transpose of the last two dims, viewed back.
gn_tensor* make_input(gn_runtime* rt, gn_device dev, const std::vector<int64_t>& dims, int32_t dtype,
                      const std::vector<double>& values, bool transposed, Status& st) {
  std::vector<int64_t> shape = dims;
  const int32_t nd = (int32_t)dims.size();
  std::vector<double> data = values;
  if (transposed && nd >= 2) {
    std::swap(shape[nd - 1], shape[nd - 2]);
    const int64_t r = dims[nd - 2], c = dims[nd - 1], batch = (int64_t)values.size() / (r * c);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) data[(size_t)(b * r * c + j * r + i)] = values[(size_t)(b * r * c + i * c + j)];
  }
  gn_device host{};
  st = Status(gn_device_parse(rt, "cpu:0", &host));
  if (!st.ok()) return nullptr;
  gn_tensor *f64 = nullptr, *cast = nullptr, *moved = nullptr, *view = nullptr;
  st = Status(gn_tensor_from_host(rt, data.data(), shape.data(), nd, GN_F64, host, &f64));
  if (!st.ok()) return nullptr;
  st = Status(gn_tensor_to_dtype(f64, dtype, &cast));
  gn_tensor_release(f64);
  if (!st.ok()) return nullptr;
  st = Status(gn_tensor_to_device(cast, dev, &moved));
  gn_tensor_release(cast);
  if (!st.ok()) return nullptr;
  if (!transposed || nd < 2) return moved;
  st = Status(gn_tensor_transpose(moved, nd - 2, nd - 1, &view));
  gn_tensor_release(moved);
  return st.ok() ? view : nullptr;
}

// A tensor's values as float64 on the host (moved to the host device first).
std::vector<double> values_of(gn_runtime* rt, gn_tensor* t) {
  std::vector<double> v((size_t)gn_tensor_numel(t));
  gn_device host{};
  gn_tensor *dense = nullptr, *moved = nullptr, *f = nullptr;
  if (!Status(gn_device_parse(rt, "cpu:0", &host)).ok()) return {};
  if (gn_tensor_is_contiguous(t)) {
    gn_tensor_retain(t);
    dense = t;
  } else if (!Status(gn_tensor_contiguous(t, &dense)).ok()) {
    return {};
  }
  const bool ok = Status(gn_tensor_to_device(dense, host, &moved)).ok() &&
                  Status(gn_tensor_to_dtype(moved, GN_F64, &f)).ok() &&
                  Status(gn_tensor_to_host(f, v.data(), v.size() * sizeof(double))).ok();
  for (gn_tensor* x : {dense, moved, f})
    if (x) gn_tensor_release(x);
  return ok ? v : std::vector<double>{};
}

struct Tol {
  double rtol, atol;
};
Tol tol_of(int32_t dtype) {
  switch (dtype) {
    case GN_F64: return {1e-9, 1e-9};
    case GN_F32: return {1e-4, 1e-4};
    case GN_F16:
    case GN_BF16: return {2e-2, 2e-2};
    default: return {0, 0};
  }
}

// The attributes of a call: every attribute's default (none required).
bool default_attrs(const gn_op_schema* s, std::vector<gn_attr_value>& out) {
  out.clear();
  for (size_t i = 0; i < s->n_attrs; ++i) {
    if (!s->attrs[i].has_default) return false;
    out.push_back(s->attrs[i].default_value);
  }
  return true;
}

// Input shapes to try, per input count.
std::vector<std::vector<std::vector<int64_t>>> shape_families(int n_in) {
  std::vector<std::vector<std::vector<int64_t>>> f(3);
  for (int i = 0; i < n_in; ++i) {
    f[0].push_back({4, 6});
    f[1].push_back(i == 0 ? std::vector<int64_t>{4, 6} : i == 1 ? std::vector<int64_t>{6, 5} : std::vector<int64_t>{5});
    f[2].push_back({2, 3, 4, 6});
  }
  return f;
}

// One runtime and the device its cases run on.
struct Side {
  Runtime rt;
  gn_device dev{};
  const gn_op* op = nullptr;
};

struct CallResult {
  Status status{nullptr};
  std::vector<std::vector<double>> outs;  // outputs, or the inputs of an in-place op
  std::vector<int32_t> dtypes;
  double seconds = 0;
};

// Build the inputs on `side`, call the op (repeats times) and read the results back.
CallResult run_case(Side& side, const std::vector<std::vector<int64_t>>& shapes, const std::vector<int32_t>& dtypes,
                    const std::vector<std::vector<double>>& values, bool transposed,
                    const std::vector<gn_attr_value>& attrs, uint32_t flags, int repeats) {
  CallResult r;
  Tensors in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Status st(nullptr);
    gn_tensor* t = make_input(side.rt.get(), side.dev, shapes[i], dtypes[i], values[i], transposed, st);
    if (!t) {
      r.status = st;
      return r;
    }
    in.v.push_back(t);
  }
  size_t n_out = 0;
  r.status =
      Status(gn_op_output_count(side.rt.get(), side.op, in.v.data(), in.v.size(), attrs.data(), attrs.size(), &n_out));
  if (!r.status.ok()) return r;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < repeats; ++k) {
    Tensors out;
    out.v.assign(n_out, nullptr);
    r.status = Status(
        gn_op_call(side.rt.get(), side.op, in.v.data(), in.v.size(), attrs.data(), attrs.size(), out.v.data(), n_out));
    if (!r.status.ok()) return r;
    if (k + 1 < repeats) continue;
    Status(gn_device_synchronize(side.rt.get(), side.dev));
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
    const std::vector<gn_tensor*>& results = (flags & GN_OP_INPLACE) ? in.v : out.v;
    for (gn_tensor* t : results) {
      r.outs.push_back(values_of(side.rt.get(), t));
      r.dtypes.push_back(gn_tensor_dtype(t));
    }
  }
  return r;
}

// "" when got matches want, else what differs.
std::string compare(const CallResult& got, const CallResult& want) {
  if (got.status.code != want.status.code)
    return "error codes differ: " + std::string(gn_status_code_name(got.status.code)) + " (" + got.status.msg +
           ") vs " + gn_status_code_name(want.status.code) + " (" + want.status.msg + ")";
  if (got.outs.size() != want.outs.size()) return "output counts differ";
  for (size_t o = 0; o < got.outs.size(); ++o) {
    if (got.dtypes[o] != want.dtypes[o]) return "output " + std::to_string(o) + " dtypes differ";
    const std::vector<double>&g = got.outs[o], &w = want.outs[o];
    if (g.size() != w.size()) return "output " + std::to_string(o) + " sizes differ";
    const Tol t = tol_of(got.dtypes[o]);
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(g[i]) && std::isnan(w[i])) continue;
      if (g[i] == w[i]) continue;
      if (std::fabs(g[i] - w[i]) <= t.atol + t.rtol * std::fabs(w[i])) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "output %zu element %zu: %.17g vs reference %.17g (rtol %g, atol %g)", o, i, g[i],
                    w[i], t.rtol, t.atol);
      return buf;
    }
  }
  return "";
}

// Device types and dtypes the plugin registered kernels for, per op.
struct Served {
  std::string device_type;
  std::vector<int32_t> dtypes;
};
Served served_by(const gn_op* op, const std::string& backend) {
  Served s;
  std::set<int32_t> seen;
  for (size_t k = 0; k < gn_op_kernel_count(op); ++k) {
    gn_kernel_record rec{};
    rec.struct_size = sizeof rec;
    if (!Status(gn_op_kernel_get(op, k, &rec)).ok() || backend != rec.backend) continue;
    if (s.device_type.empty()) s.device_type = rec.device_type;
    if (s.device_type != rec.device_type) continue;
    if (rec.dtype == GN_DTYPE_ANY)
      for (int32_t d : kAllDtypes) seen.insert(d);
    else
      seen.insert(rec.dtype);
  }
  for (int32_t d : kAllDtypes)
    if (seen.count(d)) s.dtypes.push_back(d);
  return s;
}

bool make_side(const GlobalOptions& g, const std::string& plugins, const std::string& backends, Side& side) {
  GlobalOptions o = g;
  o.plugins = plugins;
  o.has_plugins = true;
  o.backends = backends;
  o.quiet = true;
  return create_runtime(o, side.rt);
}

// Whether rt loaded the plugin `name` (else says so).
bool plugin_loaded(gn_runtime* rt, const std::string& name) {
  for (size_t i = 0; i < gn_runtime_plugin_count(rt); ++i) {
    gn_plugin_record rec{};
    rec.struct_size = sizeof rec;
    if (Status(gn_runtime_plugin_get(rt, i, &rec)).ok() && rec.loaded && name == rec.name) return true;
  }
  std::fprintf(stderr, "genesis test-ops: plugin '%s' is not loaded (see genesis info)\n", name.c_str());
  return false;
}

// --mode grad: every differentiable op the plugin has a kernel for, through the frontend.
int run_grad_check(const GlobalOptions& g, const OpCheckOptions& opts) {
  GlobalOptions o = g;
  o.plugins = opts.backend == "reference" ? "reference" : "reference," + opts.backend;
  o.has_plugins = true;
  o.quiet = true;
  try {
    init_frontend(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "genesis test-ops: %s\n", e.what());
    return 2;
  }
  gn_runtime* rt = genesis::runtime();
  if (!plugin_loaded(rt, opts.backend)) return 2;
  size_t passed = 0, failed = 0, skipped = 0;
  for (const std::string& name : autograd::differentiable_ops()) {
    if (!opts.op.empty() && name != opts.op) continue;
    const gn_op* op = nullptr;
    const Served served = Status(gn_op_find(rt, name.c_str(), &op)).ok() ? served_by(op, opts.backend) : Served{};
    const bool f64 = std::find(served.dtypes.begin(), served.dtypes.end(), GN_F64) != served.dtypes.end();
    const bool f32 = std::find(served.dtypes.begin(), served.dtypes.end(), GN_F32) != served.dtypes.end();
    const autograd::GradSample* sample = autograd::find_grad_sample(name);
    if ((!f64 && !f32) || !sample) {
      ++skipped;
      const bool view = op && (gn_op_get_schema(op)->flags & GN_OP_VIEW);
      const char* why = !sample ? "no sample"
                        : view  ? "a view (the core computes it, no kernel)"
                                : "no float kernel in this plugin";
      if (opts.verbose) std::printf("SKIP %-28s %s\n", name.c_str(), why);
      continue;
    }
    if (gn_device_count(rt, served.device_type.c_str()) < 1) {
      std::fprintf(stderr, "genesis test-ops: no %s device\n", served.device_type.c_str());
      return 2;
    }
    const DType dtype = f64 ? DType::f64 : DType::f32;
    std::string why;
    try {
      why = autograd::gradcheck_sample(*sample, dtype, Device(served.device_type));
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      ++passed;
      if (opts.verbose) std::printf("OK   %-28s %s\n", name.c_str(), gn_dtype_name(f64 ? GN_F64 : GN_F32));
    } else {
      ++failed;
      std::printf("FAIL %-28s %s: %s\n", name.c_str(), gn_dtype_name(f64 ? GN_F64 : GN_F32), why.c_str());
    }
  }
  std::printf("test-ops %s grad: %zu ops passed, %zu failed, %zu skipped\n", opts.backend.c_str(), passed, failed,
              skipped);
  if (passed + failed == 0) {
    std::fprintf(stderr, "genesis test-ops: no differentiable op with a float kernel of '%s'%s\n", opts.backend.c_str(),
                 opts.op.empty() ? "" : (" named '" + opts.op + "'").c_str());
    return 1;
  }
  return failed ? 1 : 0;
}

int run_op_check(const GlobalOptions& g, OpCheckOptions& opts) {
  if (opts.mode == "grad") return run_grad_check(g, opts);
  const bool perf = opts.mode == "perf";
  Side dut, ref;
  const std::string dut_plugins = opts.backend == "reference" ? "reference" : "reference," + opts.backend;
  if (!make_side(g, dut_plugins, "", dut) || !make_side(g, "reference", "", ref)) return 2;
  if (!plugin_loaded(dut.rt.get(), opts.backend)) return 2;
  size_t passed = 0, failed = 0, skipped = 0, ops_tested = 0;
  std::mt19937_64 rng(0x5eed);
  for (size_t oi = 0; oi < gn_op_count(dut.rt.get()); ++oi) {
    dut.op = gn_op_at(dut.rt.get(), oi);
    const std::string name = gn_op_name(dut.op);
    if (!opts.op.empty() && name != opts.op) continue;
    const Served served = served_by(dut.op, opts.backend);
    if (served.dtypes.empty()) continue;
    const gn_op_schema* schema = gn_op_get_schema(dut.op);
    std::vector<gn_attr_value> attrs;
    const int n_in = schema->min_inputs;
    if (!default_attrs(schema, attrs) || n_in < 1 || (schema->flags & (GN_OP_NEEDS_DEVICE | GN_OP_VIEW))) {
      ++skipped;
      if (opts.verbose)
        std::printf("SKIP %-28s needs attributes or inputs the generic cases cannot build\n", name.c_str());
      continue;
    }
    const bool have_ref = Status(gn_op_find(ref.rt.get(), name.c_str(), &ref.op)).ok();
    // A backend without a device (cuda on a machine with no GPU) says so before anything else.
    if (gn_device_count(dut.rt.get(), served.device_type.c_str()) < 1) {
      std::fprintf(stderr, "genesis test-ops: no %s device\n", served.device_type.c_str());
      return 2;
    }
    char spec[64];
    std::snprintf(spec, sizeof spec, "%s:0", served.device_type.c_str());
    if (!Status(gn_device_parse(dut.rt.get(), spec, &dut.dev)).ok() ||
        (have_ref && !Status(gn_device_parse(ref.rt.get(), "cpu:0", &ref.dev)).ok())) {
      ++skipped;
      continue;
    }
    ++ops_tested;
    for (int32_t dt : served.dtypes) {
      // The first shape family the reference (or, without one, the plugin) accepts.
      bool ran = false;
      for (const auto& shapes : shape_families(n_in)) {
        std::vector<int32_t> dtypes((size_t)n_in, dt);
        std::vector<std::vector<double>> values;
        for (const auto& s : shapes) {
          int64_t n = 1;
          for (int64_t d : s) n *= d;
          values.push_back(random_values(rng, n, dt));
        }
        gn_rng_manual_seed(dut.rt.get(), 1);
        gn_rng_manual_seed(ref.rt.get(), 1);
        Side& oracle = have_ref ? ref : dut;
        CallResult want = run_case(oracle, shapes, dtypes, values, false, attrs, schema->flags, 1);
        if (!want.status.ok()) continue;  // not this family
        ran = true;
        for (bool transposed : {false, true}) {
          if (!have_ref && !transposed) continue;
          gn_rng_manual_seed(dut.rt.get(), 1);
          CallResult got = run_case(dut, shapes, dtypes, values, transposed, attrs, schema->flags, perf ? 20 : 1);
          const std::string why = compare(got, want);
          const char* layout = transposed ? "transposed" : "dense";
          if (perf) {
            std::printf("%-28s %-5s %-10s %10.2f us\n", name.c_str(), gn_dtype_name(dt), layout, got.seconds * 1e6);
          } else if (why.empty()) {
            ++passed;
            if (opts.verbose) std::printf("OK   %-28s %-5s %s\n", name.c_str(), gn_dtype_name(dt), layout);
          } else {
            ++failed;
            std::printf("FAIL %-28s %-5s %s: %s\n", name.c_str(), gn_dtype_name(dt), layout, why.c_str());
          }
        }
        break;
      }
      if (!ran) {
        ++skipped;
        if (opts.verbose) std::printf("SKIP %-28s %-5s no generic input shapes fit\n", name.c_str(), gn_dtype_name(dt));
      }
    }
  }
  if (!perf)
    std::printf("test-ops %s: %zu ops, %zu cases passed, %zu failed, %zu skipped\n", opts.backend.c_str(), ops_tested,
                passed, failed, skipped);
  if (ops_tested == 0) {
    std::fprintf(stderr, "genesis test-ops: no op with a kernel of '%s'%s\n", opts.backend.c_str(),
                 opts.op.empty() ? "" : (" named '" + opts.op + "'").c_str());
    return 1;
  }
  return failed ? 1 : 0;
}

}  // namespace

CommandRun setup_op_check(CLI::App& cmd) {
  auto opts = std::make_shared<OpCheckOptions>();
  cmd.fallthrough();
  cmd.add_option("--backend", opts->backend, "plugin under test (cpu, cuda, reference, an op plugin)")->required();
  cmd.add_option("--op", opts->op, "only this op (default: every op)");
  cmd.add_option("--mode", opts->mode,
                 "test (compare with reference), perf (time the backend) or grad (gradients against finite "
                 "differences)")
      ->check(CLI::IsMember({"test", "perf", "grad"}));
  cmd.add_flag("-v,--verbose", opts->verbose, "print every case");
  return bind_command(opts, run_op_check);
}

}  // namespace genesis::cli
