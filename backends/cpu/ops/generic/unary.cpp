// backends/cpu/ops/generic/unary.cpp - the generic C++ path of the elementwise
// unary ops: every dtype that neither oneDNN (onednn/unary.cpp: f32/bf16/f16)
// nor the vectorised loops (simd/unary.cpp: f32/f64) serve - f64 activations, f16 where
// this CPU's oneDNN has no f16 eltwise (it needs AVX512-FP16), integers and
// bool, and ops whose output dtype differs from the input's (exp of an int is
// f32, square of a bool is i64).  Integer inputs of float ops (exp, log, ...)
// mostly never arrive: the core casts them to f32 first and the f32 kernels run.
//
// x (dense) -> y (dense, same numel).  Each element is loaded as double,
// computed with the reference's formula in double and stored once in y's
// dtype through the SDK's conversions with the reference's formulas
// (genesis/sdk/scalar_ops.h), so results are bit-identical to the reference
// kernel (compiled with -ffp-contract=off: no FMA contraction); integer
// inputs of ops with an integer form (neg, abs, sign, relu, square, floor,
// ceil, round, logical_not, clamp) use the same wrapping int64 forms.  Split over threads above 32K
// elements.  Speed: f64 runs the libm double functions per element (glibc
// declares no vector variants without -ffast-math); the f32/bf16 fast paths
// stay in oneDNN, except small calls of the ops it rounds exactly (onednn/unary.cpp).
#include <cmath>
#include <cstring>
#include <string>

#include "genesis/sdk/scalar_tables.h"
#include "loops.h"
#include "tiers.h"
#include "scalar_access.h"

namespace gn::cpu::generic {
namespace {

// fn(F{}) for the functor F of the shared list (GN_SCALAR_UNARY_OPS) named `name`; false when none.
template <class Fn>
bool with_formula(const char* name, Fn&& fn) {
#define GN_CPU_UNARY_CASE(op, F)     \
  if (std::strcmp(name, #op) == 0) { \
    fn(sc::F{});                     \
    return true;                     \
  }
  GN_SCALAR_UNARY_OPS(GN_CPU_UNARY_CASE)
#undef GN_CPU_UNARY_CASE
  return false;
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

// Shared with onednn/unary.cpp (its f16 fallback and small calls) and
// simd/unary.cpp, and registered below.
void unary(const char* name, const gn_tensor_view& x, const gn_tensor_view& y, const gn_attr_value* attrs,
           size_t n_attrs) {
  if (gn_view_numel(&x) != gn_view_numel(&y)) fail_op(GN_ERR_SHAPE, name, "x and y sizes differ");
  const int32_t xd = x.dtype, yd = y.dtype;
  const bool ints = intlike(xd) && intlike(yd);
  if (std::string(name) == "gelu") {
    const bool tanh_form = attr_i(attrs, n_attrs, 0, 0) != 0;
    apply(x, y, [&](char* o, const char* p) {
      const double v = load(p, xd);
      store(o, yd, tanh_form ? sc::GeluTanh{}(v) : sc::GeluErf{}(v));
    });
    return;
  }
  if (std::string(name) == "clamp") {
    const double lo = attr_d(attrs, n_attrs, 0, -INFINITY), hi = attr_d(attrs, n_attrs, 1, INFINITY);
    if (ints && !std::isnan(lo) && !std::isnan(hi)) {
      const int64_t ilo = gn::sdk::saturate_i64(std::ceil(lo)), ihi = gn::sdk::saturate_i64(std::floor(hi));
      apply(x, y,
            [&](char* o, const char* p) { store_int(o, yd, sc::Clamp{}.exact(load_int(p, xd), lo, hi, ilo, ihi)); });
      return;
    }
    apply(x, y, [&](char* o, const char* p) { store(o, yd, sc::Clamp{}(load(p, xd), lo, hi)); });
    return;
  }
  // The plain ops: the functor itself in the loops (inlined, no call per element).
  const bool found = with_formula(name, [&](auto f) {
    using F = decltype(f);
    if constexpr (F::kExact) {
      if (ints) {
        apply(x, y, [&](char* o, const char* p) { store_int(o, yd, f.exact(load_int(p, xd))); });
        return;
      }
    }
    if (xd == GN_F64 && yd == GN_F64) {  // the common case without conversions
      const double* px = (const double*)data_of(x);
      double* py = (double*)data_of(y);
      parallel_range(gn_view_numel(&x), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
      });
      return;
    }
    // x and y both f32, f16 or bf16: typed loads and stores (the SDK's
    // load/store switch on the dtype, and may stay out of line).
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      parallel_range(gn_view_numel(&x), [&](int64_t b, int64_t e) {
        const T* px = (const T*)data_of(x);
        T* py = (T*)data_of(y);
        for (int64_t i = b; i < e; ++i) st(py + i, f(ld(px + i)));
      });
    };
    if (xd == yd && xd == GN_F32) return typed(float{});
    if (xd == yd && xd == GN_F16) return typed(f16_t{});
    if (xd == yd && xd == GN_BF16) return typed(bf16_t{});
    apply(x, y, [&](char* o, const char* p) { store(o, yd, f(load(p, xd))); });
  });
  if (!found) GN_UNSUPPORTED(std::string("[") + name + "] in the generic elementwise path");
}

namespace {

GN_SDK_KERNEL(unary_generic_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "unary";
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, name, "expects 1 input and 1 output");
  unary(name, in[0], out[0], attrs, n_attrs);
}

}  // namespace

void register_unary(const gn::sdk::Registrar& r) {
  // The last tier (plugin.cpp, kTiers): every dtype of every op of the shared
  // list that the oneDNN (onednn/unary.cpp) and SIMD (simd/unary.cpp) tiers left.
  // gelu and clamp (attributes) are served by unary() too.
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  auto reg = [&](const char* op, bool takes_bool) {
    for (int32_t dt : all)
      if ((takes_bool || dt != GN_BOOL) && !tier_serves(op, dt))
        r.kernel(op, dt, unary_generic_kernel, GN_KERNEL_CONTIGUOUS);
  };
  for (const sc::UnaryFormula& f : sc::kUnaryFormulas) reg(f.name, f.takes_bool);
  reg("gelu", false);
  reg("clamp", false);
}

}  // namespace gn::cpu::generic
