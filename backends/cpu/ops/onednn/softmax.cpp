// backends/cpu/ops/onednn/softmax.cpp - softmax / log_softmax through oneDNN softmax v2.
//
// x (..., L, ...) -> y (x's shape, dtype from the op's dtype attribute, already
// decided by inference): dense (GN_KERNEL_CONTIGUOUS), so x is seen as
// (outer, L, inner) with the softmax axis in the middle, whatever dim is asked.
// softmax_v2 takes src and dst dtypes apart (bf16 in, f32 out, ...) and
// accumulates in f32 with the max subtracted (algorithm softmax_accurate /
// softmax_log).
//
// C++ lines (f64, and whatever oneDNN refuses: f16 on CPUs without
// AVX512-FP16, integer inputs): the reference's double formulas, lines of the
// (outer, L, inner) view in parallel.  softmax_backward / log_softmax_backward
// (g, y) -> gx are C++ only (oneDNN's softmax backward wants its own forward
// descriptor and f32 accumulation; these are two passes of a line):
//   softmax:      gx = y * (g - sum(g*y))        log_softmax: gx = g - exp(y) * sum(g)
// in double per line, rounded once.
#include <cmath>

#include "loops.h"

namespace gn::cpu::onednn {
namespace {

bool is_dnnl_float(int32_t dt) { return dt == GN_F32 || dt == GN_BF16 || dt == GN_F16; }

// The (outer, L, inner) split of x around dim; false when dim is out of range
// or y's shape differs from x's.  A 0-d x is one line of one element.
bool lines(const gn_tensor_view& x, const gn_tensor_view& y, const gn_attr_value* attrs, size_t n_attrs, int64_t& outer,
           int64_t& L, int64_t& inner) {
  outer = inner = L = 1;
  if (x.ndim == 0) return y.ndim == 0;
  int64_t dim = attr_i(attrs, n_attrs, 0, -1);
  if (dim < 0) dim += x.ndim;
  if (dim < 0 || dim >= x.ndim || y.ndim != x.ndim) return false;
  for (int32_t d = 0; d < x.ndim; ++d) {
    if (y.shape[d] != x.shape[d]) return false;
    if (d < dim) outer *= x.shape[d];
    if (d > dim) inner *= x.shape[d];
  }
  L = x.shape[dim];
  return true;
}

// softmax / log_softmax lines in double (the reference's formula, NaN rule included).
template <class TX, class TY>
void softmax_lines(bool log, const TX* x, TY* y, int64_t outer, int64_t L, int64_t inner) {
  parallel_for(outer * inner, 3 * L, [&](int64_t r) {
    const int64_t base = (r / inner) * L * inner + r % inner;
    thread_local std::vector<double> v;
    v.resize((size_t)L);
    double m = -INFINITY;
    for (int64_t j = 0; j < L; ++j) {
      v[(size_t)j] = ld(x + base + j * inner);
      if (v[(size_t)j] > m || std::isnan(v[(size_t)j])) m = std::isnan(m) ? m : v[(size_t)j];
    }
    double s = 0.0;
    for (int64_t j = 0; j < L; ++j) s += std::exp(v[(size_t)j] - m);
    const double ls = std::log(s);
    for (int64_t j = 0; j < L; ++j)
      st(y + base + j * inner, log ? v[(size_t)j] - m - ls : std::exp(v[(size_t)j] - m) / s);
  });
}

void softmax_cpp(const char* op, bool log, const gn_tensor_view& x, const gn_tensor_view& y, int64_t outer, int64_t L,
                 int64_t inner) {
  bool done = false;
  dispatch_dtype(x.dtype, [&](auto xtag) {
    dispatch_float_h(y.dtype, [&](auto ty) {
      using TX = typename Storage<decltype(xtag)::value>::T;
      using TY = decltype(ty);
      softmax_lines<TX, TY>(log, (const TX*)data_of(x), (TY*)data_of(y), outer, L, inner);
      done = true;
    });
  });
  if (!done) GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(x.dtype) + " -> " + gn_dtype_name(y.dtype));
}

void softmax_run(const gn_kernel_ctx* ctx, const char* op, bool log, const gn_tensor_view& x, const gn_tensor_view& y,
                 const gn_attr_value* attrs, size_t n_attrs) {
  int64_t outer, L, inner;
  if (!lines(x, y, attrs, n_attrs, outer, L, inner)) GN_UNSUPPORTED(std::string("[") + op + "] these shapes");
  if (outer * L * inner == 0) return;
  if (!is_dnnl_float(x.dtype) || !is_dnnl_float(y.dtype) || x.ndim == 0)
    return softmax_cpp(op, log, x, y, outer, L, inner);

  // (outer, L) when the axis is last, else (outer, L, inner); dense.
  std::vector<int64_t> dims = inner == 1 ? std::vector<int64_t>{outer, L} : std::vector<int64_t>{outer, L, inner};
  const std::vector<int64_t> strides = dense_strides(dims);
  Key key("softmax");
  key.add((int64_t)log).add((int64_t)x.dtype).add((int64_t)y.dtype).add(dims);
  auto c = cached(key, [&](Cached& e) {
    e.src_md = make_md(dims, strides, x.dtype);
    e.dst_md = make_md(dims, strides, y.dtype);
    const auto alg = log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
    dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, e.src_md, e.dst_md, 1);
    dnnl::softmax_v2_forward::primitive_desc pd(d, base_attr(), engine());
    finish(e, pd);
    e.prim = dnnl::softmax_v2_forward(pd);
  });
  if (!c->supported) return softmax_cpp(op, log, x, y, outer, L, inner);
  execute(ctx, *c, {{DNNL_ARG_SRC, mem(c->src_md, data_of(x))}, {DNNL_ARG_DST, mem(c->dst_md, data_of(y))}});
}

GN_SDK_KERNEL(softmax_kernel) {
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "softmax", "expects 1 input and 1 output");
  softmax_run(ctx, "softmax", false, in[0], out[0], attrs, n_attrs);
}

GN_SDK_KERNEL(log_softmax_kernel) {
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "log_softmax", "expects 1 input and 1 output");
  softmax_run(ctx, "log_softmax", true, in[0], out[0], attrs, n_attrs);
}

// (g, y) -> gx, all one float dtype.
template <class T>
void softmax_backward_lines(bool log, const T* g, const T* y, T* gx, int64_t outer, int64_t L, int64_t inner) {
  parallel_for(outer * inner, 3 * L, [&](int64_t r) {
    const int64_t base = (r / inner) * L * inner + r % inner;
    double s = 0.0;
    for (int64_t j = 0; j < L; ++j) {
      const int64_t i = base + j * inner;
      s += log ? ld(g + i) : ld(g + i) * ld(y + i);
    }
    for (int64_t j = 0; j < L; ++j) {
      const int64_t i = base + j * inner;
      const double gv = ld(g + i), yv = ld(y + i);
      st(gx + i, log ? gv - std::exp(yv) * s : yv * (gv - s));
    }
  });
}

void softmax_backward_run(const char* op, bool log, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                          size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "expects 2 inputs and 1 output");
  const gn_tensor_view &g = in[0], &y = in[1], &gx = out[0];
  int64_t outer, L, inner, o2, l2, i2;
  if (g.dtype != y.dtype || gx.dtype != y.dtype || !lines(y, gx, attrs, n_attrs, outer, L, inner) ||
      !lines(g, y, attrs, n_attrs, o2, l2, i2))
    GN_UNSUPPORTED(std::string("[") + op + "] these arguments");  // the reference reports the error
  if (outer * L * inner == 0) return;
  if (!dispatch_float_h(y.dtype, [&](auto t) {
        using T = decltype(t);
        softmax_backward_lines<T>(log, (const T*)data_of(g), (const T*)data_of(y), (T*)data_of(gx), outer, L, inner);
      }))
    GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(y.dtype));
}

GN_SDK_KERNEL(softmax_backward_kernel) {
  softmax_backward_run("softmax_backward", false, in, n_in, out, n_out, attrs, n_attrs);
}
GN_SDK_KERNEL(log_softmax_backward_kernel) {
  softmax_backward_run("log_softmax_backward", true, in, n_in, out, n_out, attrs, n_attrs);
}

}  // namespace

void register_softmax(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("softmax", dtypes, softmax_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("log_softmax", dtypes, log_softmax_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t floats[] = {GN_F32, GN_BF16, GN_F16, GN_F64};
  r.kernel("softmax_backward", floats, softmax_backward_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("log_softmax_backward", floats, log_softmax_backward_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::onednn
