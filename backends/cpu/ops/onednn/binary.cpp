// backends/cpu/ops/onednn/binary.cpp - add/sub/mul/div/maximum/minimum with broadcasting.
//
// a, b (broadcast to out's shape; the core has promoted both to out's dtype)
// -> out.  Dense same-shape f32 add/sub/mul/div (alpha 1) run a plain
// vectorised loop, with streaming stores for outputs of 4 MiB and more (see
// binary_dense_f32).  Otherwise two paths:
//  * oneDNN binary (f32, bf16, f16) for add/sub/mul/div: src0 must have out's
//    dims (oneDNN 2.6 broadcasts src1 only), so a broadcast `a` swaps the
//    operands where the op commutes; add/sub alpha is a src1 scale
//    (dst = src0 op alpha*src1).  Strided views go in as they are.
//  * a C++ loop (f32, f64) for what oneDNN lacks: maximum/minimum (oneDNN's max
//    does not propagate NaN as torch does), f64, and the broadcasts above.
//    It walks out's rows (last dim) in parallel with per-operand strides;
//    f32 is computed in double and rounded once, like the reference.
// Anything else (bf16/f16 layouts oneDNN refuses, mixed dtypes, div rounding
// modes) goes to the generic path (generic/binary.cpp), as do integers and
// bool (registered there).
#include <immintrin.h>

#include <cmath>

#include "loops.h"
#include "tiers.h"

namespace gn::cpu::onednn {
namespace {

using dnnl::algorithm;

enum class BinOp { add, sub, mul, div, maximum, minimum };

struct BinaryDef {
  const char* name;
  BinOp op;
  algorithm alg;  // undef: no oneDNN path
};

const BinaryDef kBinary[] = {
    {"add", BinOp::add, algorithm::binary_add},    {"sub", BinOp::sub, algorithm::binary_sub},
    {"mul", BinOp::mul, algorithm::binary_mul},    {"div", BinOp::div, algorithm::binary_div},
    {"maximum", BinOp::maximum, algorithm::undef}, {"minimum", BinOp::minimum, algorithm::undef},
};

// v broadcast to out (rank R): dims (1 where broadcast) and element strides
// (0 where broadcast).  Size-1 dims of v, and dims expanded with stride 0,
// both broadcast.
void bcast(const gn_tensor_view& v, const gn_tensor_view& out, std::vector<int64_t>& dims,
           std::vector<int64_t>& strides) {
  const int32_t R = out.ndim;
  dims.assign((size_t)R, 1);
  strides.assign((size_t)R, 0);
  for (int32_t d = 0; d < R; ++d) {
    const int32_t vd = d - (R - v.ndim);
    if (vd < 0) continue;
    if (v.shape[vd] != 1 && v.strides[vd] != 0) {
      dims[d] = v.shape[vd];
      strides[d] = v.strides[vd];
    }
  }
}

// oneDNN wants positive strides; unit dims get a harmless dense-looking one.
std::vector<int64_t> md_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<int64_t> s = strides;
  int64_t span = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != 1) span = std::max(span, strides[d] * dims[d]);
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] == 1) s[d] = span;
  return s;
}

// Try the oneDNN path; false when it does not apply (nothing written then).
bool binary_dnnl(const gn_kernel_ctx* ctx, const BinaryDef& def, const gn_tensor_view& a, const gn_tensor_view& b,
                 const gn_tensor_view& out, double alpha) {
  const int32_t dt = out.dtype;
  if (def.alg == algorithm::undef || (dt != GN_F32 && dt != GN_BF16 && dt != GN_F16)) return false;
  if (out.ndim > DNNL_MAX_NDIMS) return false;
  const std::vector<int64_t> od = shape_of(out);
  std::vector<int64_t> ad, as, bd, bs;
  bcast(a, out, ad, as);
  bcast(b, out, bd, bs);
  const gn_tensor_view* s0 = &a;
  const gn_tensor_view* s1 = &b;
  if (ad != od) {  // src0 must be full size: swap if the op commutes
    const bool commutes = def.op == BinOp::mul || (def.op == BinOp::add && alpha == 1.0);
    if (!commutes || bd != od) return false;
    std::swap(s0, s1);
    std::swap(ad, bd);
    std::swap(as, bs);
  }
  for (size_t d = 0; d < od.size(); ++d)
    if ((od[d] != 1 && out.strides[d] <= 0) || as[d] < 0 || bs[d] < 0) return false;
  if (alpha != 1.0 && (double)(float)alpha != alpha) return false;  // scale is an f32
  std::vector<int64_t> dims0 = od.empty() ? std::vector<int64_t>{1} : od;
  if (od.empty()) {
    ad = bd = {1};
    as = bs = {1};
  }
  const std::vector<int64_t> os = od.empty() ? std::vector<int64_t>{1} : md_strides(od, strides_of(out));
  as = md_strides(ad, as);
  bs = md_strides(bd, bs);

  Key key("binary");
  key.add((int64_t)def.alg).add(alpha).add((int64_t)dt).add(dims0).add(os).add(ad).add(as).add(bd).add(bs);
  auto c = cached(key, [&](Cached& e) {
    e.src_md = make_md(ad, as, dt);
    e.src1_md = make_md(bd, bs, dt);
    e.dst_md = make_md(dims0, os, dt);
    dnnl::binary::desc d(def.alg, e.src_md, e.src1_md, e.dst_md);
    dnnl::primitive_attr attr = base_attr();
    if (alpha != 1.0) attr.set_scales(DNNL_ARG_SRC_1, 0, {(float)alpha});
    dnnl::binary::primitive_desc pd(d, attr, engine());
    finish(e, pd);
    e.prim = dnnl::binary(pd);
  });
  if (!c->supported) return false;
  execute(ctx, *c,
          {{DNNL_ARG_SRC_0, mem(c->src_md, data_of(*s0))},
           {DNNL_ARG_SRC_1, mem(c->src1_md, data_of(*s1))},
           {DNNL_ARG_DST, mem(c->dst_md, data_of(out))}});
  return true;
}

template <class T, BinOp OP>
inline T apply(T x, T y, double alpha) {
  const double a = x, b = y;
  switch (OP) {
    case BinOp::add: return (T)(a + alpha * b);
    case BinOp::sub: return (T)(a - alpha * b);
    case BinOp::mul: return (T)(a * b);
    case BinOp::div: return (T)(a / b);
    case BinOp::maximum: return std::isnan(a) || std::isnan(b) ? (T)NAN : (T)(a > b ? a : b);
    case BinOp::minimum: return std::isnan(a) || std::isnan(b) ? (T)NAN : (T)(a < b ? a : b);
  }
  return T(0);
}

// out[i] = a[i] OP b[i] over out's shape, rows of its last dim in parallel.
template <class T, BinOp OP>
void binary_loop(const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& out, double alpha) {
  const int32_t R = out.ndim;
  std::vector<int64_t> ad, as, bd, bs;
  bcast(a, out, ad, as);
  bcast(b, out, bd, bs);
  const int64_t inner = R ? out.shape[R - 1] : 1;
  const int64_t ia = R ? as[R - 1] : 0, ib = R ? bs[R - 1] : 0, io = R ? out.strides[R - 1] : 0;
  const int64_t rows = inner ? gn_view_numel(&out) / inner : 0;
  const T* pa = (const T*)data_of(a);
  const T* pb = (const T*)data_of(b);
  T* po = (T*)data_of(out);
  auto row = [&](int64_t r) {
    int64_t oa = 0, ob = 0, oo = 0, rem = r;
    for (int32_t d = R - 2; d >= 0; --d) {
      const int64_t i = rem % out.shape[d];
      rem /= out.shape[d];
      oa += i * as[d];
      ob += i * bs[d];
      oo += i * out.strides[d];
    }
    const T* xa = pa + oa;
    const T* xb = pb + ob;
    T* xo = po + oo;
    if (ia == 1 && ib == 1 && io == 1) {
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j) xo[j] = apply<T, OP>(xa[j], xb[j], alpha);
    } else if (ia == 1 && ib == 0 && io == 1) {
      const T y = xb[0];
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j) xo[j] = apply<T, OP>(xa[j], y, alpha);
    } else {
      for (int64_t j = 0; j < inner; ++j) xo[j * io] = apply<T, OP>(xa[j * ia], xb[j * ib], alpha);
    }
  };
  parallel_for(rows, inner, row);
}

template <class T>
void binary_loop_dispatch(BinOp op, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& out,
                          double alpha) {
  switch (op) {
    case BinOp::add: return binary_loop<T, BinOp::add>(a, b, out, alpha);
    case BinOp::sub: return binary_loop<T, BinOp::sub>(a, b, out, alpha);
    case BinOp::mul: return binary_loop<T, BinOp::mul>(a, b, out, alpha);
    case BinOp::div: return binary_loop<T, BinOp::div>(a, b, out, alpha);
    case BinOp::maximum: return binary_loop<T, BinOp::maximum>(a, b, out, alpha);
    case BinOp::minimum: return binary_loop<T, BinOp::minimum>(a, b, out, alpha);
  }
}

// Dense f32 a OP b of one shape (add/sub with alpha 1, mul, div): one IEEE
// operation per element, which is exactly the reference's double result
// rounded once (double has more than 2*24+2 bits).  Large outputs (>= 4 MiB,
// well past L2) are written with non-temporal stores: the output lines are
// not read for ownership first, which saves a quarter of the memory traffic
// (measured on this machine, 2 threads, 4M elements: 41 GB/s plain, 74 GB/s
// streaming; oneDNN's binary 44 GB/s).  Smaller outputs stay in cache for
// whoever reads them next.
constexpr int64_t kStreamBytes = int64_t(4) << 20;

template <BinOp OP>
inline float op_f32(float x, float y) {
  if constexpr (OP == BinOp::add) return x + y;
  if constexpr (OP == BinOp::sub) return x - y;
  if constexpr (OP == BinOp::mul) return x * y;
  return x / y;
}

#ifdef __AVX__
template <BinOp OP>
inline __m256 op_f32x8(__m256 x, __m256 y) {
  if constexpr (OP == BinOp::add) return _mm256_add_ps(x, y);
  if constexpr (OP == BinOp::sub) return _mm256_sub_ps(x, y);
  if constexpr (OP == BinOp::mul) return _mm256_mul_ps(x, y);
  return _mm256_div_ps(x, y);
}
#endif

template <BinOp OP>
void dense_f32(const float* a, const float* b, float* y, int64_t n) {
#ifdef __AVX__
  if (n * 4 >= kStreamBytes) {
    parallel_range(n, [&](int64_t s, int64_t e) {
      int64_t i = s;
      for (; i < e && ((uintptr_t)(y + i) & 31); ++i) y[i] = op_f32<OP>(a[i], b[i]);
      for (; i + 8 <= e; i += 8) _mm256_stream_ps(y + i, op_f32x8<OP>(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
      for (; i < e; ++i) y[i] = op_f32<OP>(a[i], b[i]);
      _mm_sfence();  // streaming stores are weakly ordered: publish them before the region ends
    });
    return;
  }
#endif
  parallel_range(n, [&](int64_t s, int64_t e) {
#pragma omp simd
    for (int64_t i = s; i < e; ++i) y[i] = op_f32<OP>(a[i], b[i]);
  });
}

// The dense same-shape f32 fast path; false when it does not apply.
bool binary_dense_f32(BinOp op, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& o,
                      double alpha) {
  if (o.dtype != GN_F32 || alpha != 1.0 || op == BinOp::maximum || op == BinOp::minimum) return false;
  if (a.ndim != o.ndim || b.ndim != o.ndim || !is_dense(a) || !is_dense(b) || !is_dense(o)) return false;
  for (int32_t d = 0; d < o.ndim; ++d)
    if (a.shape[d] != o.shape[d] || b.shape[d] != o.shape[d]) return false;
  const float* pa = (const float*)data_of(a);
  const float* pb = (const float*)data_of(b);
  float* py = (float*)data_of(o);
  const int64_t n = gn_view_numel(&o);
  // in place (y is a or b) is fine elementwise; partial overlap is not
  auto overlaps = [&](const float* p) { return p != py && p < py + n && py < p + n; };
  if (overlaps(pa) || overlaps(pb)) return false;
  switch (op) {
    case BinOp::add: dense_f32<BinOp::add>(pa, pb, py, n); break;
    case BinOp::sub: dense_f32<BinOp::sub>(pa, pb, py, n); break;
    case BinOp::mul: dense_f32<BinOp::mul>(pa, pb, py, n); break;
    case BinOp::div: dense_f32<BinOp::div>(pa, pb, py, n); break;
    default: return false;
  }
  return true;
}

// True when no element of out aliases another (the loop writes each once).
bool out_is_simple(const gn_tensor_view& out) {
  for (int32_t d = 0; d < out.ndim; ++d)
    if (out.shape[d] > 1 && out.strides[d] <= 0) return false;
  return true;
}

GN_SDK_KERNEL(binary_kernel) {
  const BinaryDef& def = *(const BinaryDef*)ctx->kernel_data;
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, def.name, "expects 2 inputs and 1 output");
  const gn_tensor_view &a = in[0], &b = in[1], &o = out[0];
  if (a.dtype != o.dtype || b.dtype != o.dtype) return generic::binary(def.name, a, b, o, attrs, n_attrs);
  double alpha = 1.0;
  if ((def.op == BinOp::add || def.op == BinOp::sub) && n_attrs > 0 && attrs[0].kind == GN_ATTR_FLOAT)
    alpha = attrs[0].u.f;
  if (def.op == BinOp::div && n_attrs > 0 && attrs[0].kind == GN_ATTR_INT && attrs[0].u.i != 0)
    return generic::binary(def.name, a, b, o, attrs, n_attrs);  // rounding modes
  if (a.ndim > o.ndim || b.ndim > o.ndim) fail_op(GN_ERR_SHAPE, def.name, "operand rank exceeds the output's");
  if (gn_view_numel(&o) == 0) return;
  if (!out_is_simple(o)) GN_UNSUPPORTED(std::string("[") + def.name + "] output layout");
  // Small tensors: a primitive launch costs microseconds, the loop nanoseconds.
  if (binary_dense_f32(def.op, a, b, o, alpha)) return;
  const bool small = gn_view_numel(&o) <= kSmallNumel && (o.dtype == GN_F32 || o.dtype == GN_F64);
  if (!small && binary_dnnl(ctx, def, a, b, o, alpha)) return;
  if (o.dtype == GN_F32) return binary_loop_dispatch<float>(def.op, a, b, o, alpha);
  if (o.dtype == GN_F64) return binary_loop_dispatch<double>(def.op, a, b, o, alpha);
  // bf16/f16 layouts oneDNN does not take (src0 broadcast, maximum/minimum)
  generic::binary(def.name, a, b, o, attrs, n_attrs);
}

}  // namespace

void register_binary(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16, GN_F64};
  for (const BinaryDef& d : kBinary) r.kernel(d.name, dtypes, binary_kernel, 0, (void*)&d);
}

}  // namespace gn::cpu::onednn
