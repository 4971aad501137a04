// backends/cpu/ops/elementwise.cpp - the generic C++ path of the elementwise
// unary ops: every dtype that neither oneDNN (eltwise.cpp: f32/bf16/f16) nor
// the vectorised loops (unary.cpp: f32/f64) serve - f64 activations, f16 where
// this CPU's oneDNN has no f16 eltwise (it needs AVX512-FP16), integers and
// bool, and ops whose output dtype differs from the input's (exp of an int is
// f32, square of a bool is i64).  Integer inputs of float ops (exp, log, ...)
// mostly never arrive: the core casts them to f32 first and the f32 kernels run.
//
// x (dense) -> y (dense, same numel).  Each element is loaded as double,
// computed with the reference's formula in double and stored once in y's
// dtype through the SDK's conversions, so results are bit-identical to the
// reference kernel (compiled with -ffp-contract=off: no FMA contraction); integer inputs of ops with an integer form (neg, abs,
// sign, relu, square, floor, ceil, round, logical_not, clamp) use int64
// arithmetic that wraps like the reference's.  Split over threads above 32K
// elements.  Speed: f64 runs the libm double functions per element (glibc
// declares no vector variants without -ffast-math); the f32/bf16 fast paths
// stay in oneDNN.
#include <cmath>
#include <string>

#include "loops.h"

namespace gn::cpu {
namespace {

using gn::sdk::load;
using gn::sdk::load_int;
using gn::sdk::store;
using gn::sdk::store_int;

int64_t wrap_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
int64_t wrap_sq(int64_t x) { return (int64_t)((uint64_t)x * (uint64_t)x); }
double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Fn {
  const char* name;
  double (*f)(double);
  int64_t (*fi)(int64_t);  // nullptr: no integer form
};

// The reference's table (plugins/reference/unary.cpp), formula for formula.
const Fn kFns[] = {
    {"neg", [](double x) { return -x; }, wrap_neg},
    {"abs", [](double x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? wrap_neg(x) : x; }},
    {"sign", [](double x) { return (double)((0.0 < x) - (x < 0.0)); }, [](int64_t x) -> int64_t { return (0 < x) - (x < 0); }},
    {"exp", [](double x) { return std::exp(x); }, nullptr},
    {"log", [](double x) { return std::log(x); }, nullptr},
    {"log1p", [](double x) { return std::log1p(x); }, nullptr},
    {"sqrt", [](double x) { return std::sqrt(x); }, nullptr},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, nullptr},
    {"sin", [](double x) { return std::sin(x); }, nullptr},
    {"cos", [](double x) { return std::cos(x); }, nullptr},
    {"tanh", [](double x) { return std::tanh(x); }, nullptr},
    {"sigmoid", sigm, nullptr},
    {"relu", [](double x) { return std::isnan(x) ? x : (x > 0.0 ? x : 0.0); }, [](int64_t x) { return x > 0 ? x : (int64_t)0; }},
    {"silu", [](double x) { return x * sigm(x); }, nullptr},
    {"reciprocal", [](double x) { return 1.0 / x; }, nullptr},
    {"square", [](double x) { return x * x; }, wrap_sq},
    {"floor", [](double x) { return std::floor(x); }, [](int64_t x) { return x; }},
    {"ceil", [](double x) { return std::ceil(x); }, [](int64_t x) { return x; }},
    {"round", [](double x) { return std::nearbyint(x); }, [](int64_t x) { return x; }},
    {"logical_not", [](double x) { return x == 0.0 ? 1.0 : 0.0; }, [](int64_t x) -> int64_t { return x == 0; }},
    {"isnan", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, nullptr},
    {"isinf", [](double x) { return std::isinf(x) ? 1.0 : 0.0; }, nullptr},
    {"isfinite", [](double x) { return std::isfinite(x) ? 1.0 : 0.0; }, nullptr},
    {"gelu", nullptr, nullptr},   // attribute-dependent: below
    {"clamp", nullptr, nullptr},  // attribute-dependent: below
};

bool intlike(int32_t dt) { return dt == GN_I8 || dt == GN_U8 || dt == GN_I32 || dt == GN_I64 || dt == GN_BOOL; }

int64_t saturate_i64(double v) {
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

// y[i] = g(x[i]) through double (or int64 when `ints`), over threads.
template <class G>
void apply(const gn_tensor_view& x, const gn_tensor_view& y, G&& g) {
  const size_t xs = gn_dtype_size(x.dtype), ys = gn_dtype_size(y.dtype);
  const char* px = (const char*)data_of(x);
  char* py = (char*)data_of(y);
  parallel_range(gn_view_numel(&x), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) g(py + i * ys, px + i * xs);
  });
}

}  // namespace

// Shared with eltwise.cpp (its f16 fallback) and registered below.
void unary_generic(const char* name, const gn_tensor_view& x, const gn_tensor_view& y, const gn_attr_value* attrs,
                   size_t n_attrs) {
  if (gn_view_numel(&x) != gn_view_numel(&y)) fail_op(GN_ERR_SHAPE, name, "x and y sizes differ");
  const Fn* fn = nullptr;
  for (const Fn& f : kFns)
    if (std::string(f.name) == name) fn = &f;
  if (!fn) GN_UNSUPPORTED(std::string("[") + name + "] in the generic elementwise path");
  const int32_t xd = x.dtype, yd = y.dtype;
  const bool ints = intlike(xd) && intlike(yd);
  if (std::string(name) == "gelu") {
    const bool tanh_form = attr_i(attrs, n_attrs, 0, 0) != 0;
    const double k = std::sqrt(2.0 / M_PI), r2 = std::sqrt(2.0);
    apply(x, y, [&](char* o, const char* p) {
      const double v = load(p, xd);
      store(o, yd, tanh_form ? 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)))
                             : 0.5 * v * (1.0 + std::erf(v / r2)));
    });
    return;
  }
  if (std::string(name) == "clamp") {
    const double lo = attr_d(attrs, n_attrs, 0, -INFINITY), hi = attr_d(attrs, n_attrs, 1, INFINITY);
    const bool nan_bound = std::isnan(lo) || std::isnan(hi);
    if (ints && !nan_bound) {
      const int64_t ilo = saturate_i64(std::ceil(lo)), ihi = saturate_i64(std::floor(hi));
      apply(x, y, [&](char* o, const char* p) {
        int64_t v = load_int(p, xd);
        if ((double)v < lo) v = ilo;
        if ((double)v > hi) v = ihi;
        store_int(o, yd, v);
      });
      return;
    }
    apply(x, y, [&](char* o, const char* p) {
      double v = nan_bound ? NAN : load(p, xd);
      if (!std::isnan(v)) v = v < lo ? lo : v > hi ? hi : v;
      store(o, yd, v);
    });
    return;
  }
  if (fn->fi && ints) {
    apply(x, y, [&](char* o, const char* p) { store_int(o, yd, fn->fi(load_int(p, xd))); });
    return;
  }
  if (xd == GN_F64 && yd == GN_F64) {  // the common case without conversions
    const double* px = (const double*)data_of(x);
    double* py = (double*)data_of(y);
    parallel_range(gn_view_numel(&x), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = fn->f(px[i]);
    });
    return;
  }
  apply(x, y, [&](char* o, const char* p) { store(o, yd, fn->f(load(p, xd))); });
}

namespace {

GN_SDK_KERNEL(unary_generic_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "unary";
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, name, "expects 1 input and 1 output");
  unary_generic(name, in[0], out[0], attrs, n_attrs);
}

}  // namespace

void register_elementwise(const gn::sdk::Registrar& r) {
  // ops with oneDNN kernels for f32/bf16/f16 (eltwise.cpp): the other dtypes
  // (bool only where the op takes bool: not neg, abs, relu, clamp, floor, ceil, round)
  const int32_t rest_dnnl[] = {GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  const int32_t rest_dnnl_nb[] = {GN_F64, GN_I8, GN_U8, GN_I32, GN_I64};
  for (const char* op : {"exp", "sqrt", "tanh", "sigmoid", "gelu", "silu", "square"})
    r.kernel(op, rest_dnnl, unary_generic_kernel, GN_KERNEL_CONTIGUOUS);
  for (const char* op : {"neg", "abs", "relu", "clamp"}) r.kernel(op, rest_dnnl_nb, unary_generic_kernel, GN_KERNEL_CONTIGUOUS);
  // ops with f32/f64 loops (unary.cpp): the other dtypes
  const int32_t rest_loops[] = {GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  const int32_t rest_loops_nb[] = {GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64};
  for (const char* op : {"log", "log1p", "sin", "cos", "rsqrt", "reciprocal", "sign", "logical_not", "isnan", "isinf",
                         "isfinite"})
    r.kernel(op, rest_loops, unary_generic_kernel, GN_KERNEL_CONTIGUOUS);
  for (const char* op : {"floor", "ceil", "round"}) r.kernel(op, rest_loops_nb, unary_generic_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu
