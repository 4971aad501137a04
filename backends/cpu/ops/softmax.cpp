// backends/cpu/ops/softmax.cpp - softmax / log_softmax through oneDNN softmax v2.
//
// x (..., L, ...) -> y (x's shape, dtype from the op's dtype attribute, already
// decided by inference): dense (GN_KERNEL_CONTIGUOUS), so x is seen as
// (outer, L, inner) with the softmax axis in the middle, whatever dim is asked.
// softmax_v2 takes src and dst dtypes apart (bf16 in, f32 out, ...) and
// accumulates in f32 with the max subtracted (algorithm softmax_accurate /
// softmax_log).
#include "common.h"

namespace gn::cpu {
namespace {

bool is_dnnl_float(int32_t dt) { return dt == GN_F32 || dt == GN_BF16 || dt == GN_F16; }

void softmax_run(const gn_kernel_ctx* ctx, const char* op, bool log, const gn_tensor_view& x, const gn_tensor_view& y,
                 const gn_attr_value* attrs, size_t n_attrs) {
  if (!is_dnnl_float(x.dtype) || !is_dnnl_float(y.dtype))
    GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(x.dtype) + " -> " + gn_dtype_name(y.dtype));
  if (x.ndim == 0) GN_UNSUPPORTED(std::string("[") + op + "] 0-d input");
  int64_t dim = n_attrs > 0 && attrs[0].kind == GN_ATTR_INT ? attrs[0].u.i : -1;
  if (dim < 0) dim += x.ndim;
  if (dim < 0 || dim >= x.ndim) fail_op(GN_ERR_INVALID_ARGUMENT, op, "dim out of range");
  if (y.ndim != x.ndim) fail_op(GN_ERR_SHAPE, op, "x and y ranks differ");
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < x.ndim; ++d) {
    if (y.shape[d] != x.shape[d]) fail_op(GN_ERR_SHAPE, op, "x and y shapes differ");
    if (d < dim) outer *= x.shape[d];
    if (d > dim) inner *= x.shape[d];
  }
  const int64_t L = x.shape[dim];
  if (outer * L * inner == 0) return;

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
  if (!c->supported) GN_UNSUPPORTED(std::string("[") + op + "] this dtype in oneDNN");
  execute(ctx, *c, {{DNNL_ARG_SRC, mem(c->src_md, data_of(x))},
                                        {DNNL_ARG_DST, mem(c->dst_md, data_of(y))}});
}

GN_SDK_KERNEL(softmax_kernel) {
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "softmax", "expects 1 input and 1 output");
  softmax_run(ctx, "softmax", false, in[0], out[0], attrs, n_attrs);
}

GN_SDK_KERNEL(log_softmax_kernel) {
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "log_softmax", "expects 1 input and 1 output");
  softmax_run(ctx, "log_softmax", true, in[0], out[0], attrs, n_attrs);
}

}  // namespace

void register_softmax(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16};
  r.kernel("softmax", dtypes, softmax_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("log_softmax", dtypes, log_softmax_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu
