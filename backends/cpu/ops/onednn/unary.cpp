// backends/cpu/ops/onednn/unary.cpp - elementwise unary ops through oneDNN eltwise.
//
// x (any shape) -> y (x's shape, x's dtype).  Registered GN_KERNEL_CONTIGUOUS,
// so both are dense and seen as one 1-D run of numel elements.  Float dtypes
// only (f32, bf16, f16: computed in f32 by oneDNN and rounded once); integer
// inputs of ops that promote (exp of int -> f32) arrive with a different x and
// y dtype and are refused, so the reference kernel serves them.
// What oneDNN refuses (f16 on CPUs without AVX512-FP16, clamp bounds that f32
// cannot hold) goes to the generic C++ path (generic/unary.cpp), as do f64,
// integer and bool inputs (registered there).
// Not here: log (oneDNN 2.6's eltwise_log is off by ~3e-6 absolute near x = 1,
// tens of ulp; the cross-backend suite caught it), so the reference serves it.
//
//   op       oneDNN algorithm        alpha / beta
//   neg      eltwise_linear          -1 / 0
//   abs      eltwise_abs
//   exp      eltwise_exp
//   sqrt     eltwise_sqrt
//   tanh     eltwise_tanh
//   sigmoid  eltwise_logistic
//   relu     eltwise_relu            0 (negative slope)
//   gelu     eltwise_gelu_erf / eltwise_gelu_tanh (attr approximate)
//   silu     eltwise_swish           1
//   square   eltwise_square
//   clamp    eltwise_clip_v2         min / max (attrs; NaN passes through)
//
// Small calls (at most kSmallNumel elements) skip the primitive call, which
// costs ~1 us against nanoseconds of work.  The ops whose
// oneDNN result is the correctly rounded one (neg abs relu square sqrt clamp:
// `exact` below) run the generic C++ loop, which gives the same values (and
// the reference's NaN and signed zero, which oneDNN's relu, clamp and neg
// do not keep); the others (exp tanh sigmoid gelu silu: oneDNN's own
// approximations) run the primitive on the calling thread, unchanged.
#include <cmath>
#include <limits>

#include "common.h"
#include "tiers.h"

namespace gn::cpu::onednn {
namespace {

using dnnl::algorithm;

struct EltwiseDef {
  const char* name;
  algorithm alg;
  float alpha, beta;
  bool exact;  // oneDNN rounds the exact result once: the generic loop matches it
};

const EltwiseDef kEltwise[] = {
    {"neg", algorithm::eltwise_linear, -1.f, 0.f, true},
    {"abs", algorithm::eltwise_abs, 0.f, 0.f, true},
    {"exp", algorithm::eltwise_exp, 0.f, 0.f, false},
    {"sqrt", algorithm::eltwise_sqrt, 0.f, 0.f, true},
    {"tanh", algorithm::eltwise_tanh, 0.f, 0.f, false},
    {"sigmoid", algorithm::eltwise_logistic, 0.f, 0.f, false},
    {"relu", algorithm::eltwise_relu, 0.f, 0.f, true},
    {"gelu", algorithm::eltwise_gelu_erf, 0.f, 0.f, false},  // attr approximate=1: gelu_tanh
    {"silu", algorithm::eltwise_swish, 1.f, 0.f, false},
    {"square", algorithm::eltwise_square, 0.f, 0.f, true},
    {"clamp", algorithm::eltwise_clip_v2, 0.f, 0.f, true},  // alpha/beta from attrs
};

// Run algorithm alg(alpha, beta) over the dense x -> y.
// false: oneDNN has no kernel for this (dtype, algorithm) on this CPU.
bool eltwise_run(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& x, const gn_tensor_view& y,
                 algorithm alg, float alpha, float beta) {
  const int32_t dt = x.dtype;
  if (y.dtype != dt || (dt != GN_F32 && dt != GN_BF16 && dt != GN_F16)) return false;
  const int64_t n = gn_view_numel(&x);
  if (gn_view_numel(&y) != n) fail_op(GN_ERR_SHAPE, op, "x and y sizes differ");
  if (n == 0) return true;

  // Long tensors go in blocks of kBlock elements to the pool, one primitive per
  // block (at most two block lengths, so two cached primitives).
  constexpr int64_t kBlock = 32768;
  const char* px = (const char*)data_of(x);
  char* py = (char*)data_of(y);
  const size_t es = gn_dtype_size(dt);
  auto block = [&](const gn_kernel_ctx* bctx, int64_t begin, int64_t len) {
    Key key("eltwise");
    key.add((int64_t)alg).add((double)alpha).add((double)beta).add((int64_t)dt).add(len);
    auto c = cached(key, [&](Cached& e) {
      e.src_md = make_md({len}, {1}, dt);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, e.src_md, alpha, beta);
      dnnl::eltwise_forward::primitive_desc pd(d, base_attr(), engine());
      finish(e, pd);
      e.prim = dnnl::eltwise_forward(pd);
    });
    if (!c->supported) return false;
    execute(bctx, *c,
            {{DNNL_ARG_SRC, mem(c->src_md, px + (size_t)begin * es)},
             {DNNL_ARG_DST, mem(c->src_md, py + (size_t)begin * es)}});
    return true;
  };
  if (n < 4 * kBlock || num_threads() == 1) return block(ctx, 0, n);
  if (!block(ctx, 0, kBlock)) return false;  // unsupported: nothing written yet
  parallel_chunks((n - 1) / kBlock, [&](int64_t i) {
    const int64_t begin = (i + 1) * kBlock;
    block(nullptr, begin, std::min(kBlock, n - begin));
  });
  return true;
}

double attr_f(const gn_attr_value* attrs, size_t n_attrs, size_t i, double dflt) {
  return i < n_attrs && attrs[i].kind == GN_ATTR_FLOAT ? attrs[i].u.f : dflt;
}

// One kernel for all ops: the def rides in ctx->kernel_data.
GN_SDK_KERNEL(eltwise_kernel) {
  const EltwiseDef* def = (const EltwiseDef*)ctx->kernel_data;
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, def->name, "expects 1 input and 1 output");
  if (def->exact && gn_view_numel(&in[0]) <= kSmallNumel)
    return generic::unary(def->name, in[0], out[0], attrs, n_attrs);
  algorithm alg = def->alg;
  float alpha = def->alpha, beta = def->beta;
  if (alg == algorithm::eltwise_gelu_erf && n_attrs > 0 && attrs[0].kind == GN_ATTR_INT && attrs[0].u.i != 0)
    alg = algorithm::eltwise_gelu_tanh;
  if (alg == algorithm::eltwise_clip_v2) {
    const double lo = attr_f(attrs, n_attrs, 0, -INFINITY), hi = attr_f(attrs, n_attrs, 1, INFINITY);
    // Bounds that are NaN, or not representable as the float oneDNN compares
    // with, would change the answer: leave those to the reference.
    if (std::isnan(lo) || std::isnan(hi) || (double)(float)lo != lo || (double)(float)hi != hi || lo > hi)
      return generic::unary(def->name, in[0], out[0], attrs, n_attrs);
    alpha = (float)lo;
    beta = (float)hi;
  }
  // f16 (no oneDNN f16 eltwise without AVX512-FP16) and anything else oneDNN
  // refuses: the generic C++ path (generic/unary.cpp), same answer as the reference.
  if (!eltwise_run(ctx, def->name, in[0], out[0], alg, alpha, beta))
    generic::unary(def->name, in[0], out[0], attrs, n_attrs);
}

}  // namespace

void register_unary(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16};
  for (const EltwiseDef& d : kEltwise) r.kernel(d.name, dtypes, eltwise_kernel, GN_KERNEL_CONTIGUOUS, (void*)&d);
}

}  // namespace gn::cpu::onednn
