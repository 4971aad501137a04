// backends/reference/shape.cpp - cat, stack, triu, tril (split is a core view
// op: no kernel).  Values are converted exactly between dtypes, through any
// strides on both sides.
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::next_index;

// ----------------------------------------------------------------------------
// cat, stack

// cat(x0, x1, ...; dim) -> out: each xi copied into its slice of out along dim.
// 1-D empty inputs are skipped when out is not 1-D (torch's legacy rule).
GN_SDK_KERNEL(cat_kernel) {
  need_io("cat", n_in, 1, n_out, 1);
  const gn_tensor_view& o = out[0];
  if (o.ndim == 0) fail_op(GN_ERR_SHAPE, "cat", "cannot concatenate 0-d tensors");
  const int32_t dim = wrap_dim_checked("cat", attr_int("cat", attrs, n_attrs, 0), o.ndim);
  int64_t offset = 0;
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    if (x.ndim != o.ndim) {
      if (x.ndim == 1 && x.shape[0] == 0) continue;
      fail_op(GN_ERR_SHAPE, "cat",
              "input " + std::to_string(k) + " " + shape_str(x) + " has another rank than " + shape_str(o));
    }
    bool ok = offset + x.shape[dim] <= o.shape[dim];
    for (int32_t d = 0; ok && d < o.ndim; ++d) ok = d == dim || x.shape[d] == o.shape[d];
    if (!ok)
      fail_op(GN_ERR_SHAPE, "cat",
              "input " + std::to_string(k) + " " + shape_str(x) + " does not fit output " + shape_str(o));
    Dims shape(x.shape, x.shape + x.ndim), strides(o.strides, o.strides + o.ndim);
    OwnedView slice(o, shape, strides, offset * o.strides[dim]);
    copy_convert("cat", slice.v, x);
    offset += x.shape[dim];
  }
  if (offset != o.shape[dim]) fail_op(GN_ERR_SHAPE, "cat", "inputs do not fill output " + shape_str(o));
}

// stack(x0, x1, ...; dim) -> out with a new dim of size n_in: out.select(dim, k) = xk.
GN_SDK_KERNEL(stack_kernel) {
  need_io("stack", n_in, 1, n_out, 1);
  const gn_tensor_view& o = out[0];
  const int32_t dim = wrap_dim_checked("stack", attr_int("stack", attrs, n_attrs, 0), o.ndim);
  if (o.ndim == 0 || o.shape[dim] != (int64_t)n_in)
    fail_op(GN_ERR_SHAPE, "stack", "output " + shape_str(o) + " does not stack " + std::to_string(n_in) + " inputs");
  Dims shape, strides;
  for (int32_t d = 0; d < o.ndim; ++d)
    if (d != dim) {
      shape.push_back(o.shape[d]);
      strides.push_back(o.strides[d]);
    }
  for (size_t k = 0; k < n_in; ++k) {
    const gn_tensor_view& x = in[k];
    if (Dims(x.shape, x.shape + x.ndim) != shape)
      fail_op(GN_ERR_SHAPE, "stack",
              "input " + std::to_string(k) + " " + shape_str(x) + " has another shape than the others");
    OwnedView slice(o, shape, strides, (int64_t)k * o.strides[dim]);
    copy_convert("stack", slice.v, x);
  }
}

// ----------------------------------------------------------------------------
// triu, tril

// triu/tril(x (..., M, N); diagonal) -> out: keep j - i >= diagonal (triu) or
// j - i <= diagonal (tril), zero elsewhere.
void tri_impl(const char* op, bool upper, const gn_tensor_view& x, const gn_tensor_view& o, int64_t diagonal) {
  if (x.ndim < 2) fail_op(GN_ERR_SHAPE, op, "input must have at least 2 dims, got " + shape_str(x));
  const gn_tensor_view* ins[] = {&x};
  std::vector<int64_t> p((size_t)o.ndim, 0);
  for_each_bcast(op, o, ins, [&](char* po, const char* const* pp) {
    int64_t i = p[(size_t)o.ndim - 2], j = p[(size_t)o.ndim - 1];
    bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    if (keep)
      convert_elem(po, o.dtype, pp[0], x.dtype);
    else
      gn::sdk::store_int(po, o.dtype, 0);
    next_index(p.data(), o.shape, o.ndim);
  });
}

GN_SDK_KERNEL(triu_kernel) {
  need_io("triu", n_in, 1, n_out, 1);
  tri_impl("triu", true, in[0], out[0], attr_int("triu", attrs, n_attrs, 0));
}

GN_SDK_KERNEL(tril_kernel) {
  need_io("tril", n_in, 1, n_out, 1);
  tri_impl("tril", false, in[0], out[0], attr_int("tril", attrs, n_attrs, 0));
}

}  // namespace

void register_shape(const gn::sdk::Registrar& r) {
  r.kernel("cat", kAllDtypes, cat_kernel);
  r.kernel("stack", kAllDtypes, stack_kernel);
  r.kernel("triu", kAllDtypes, triu_kernel);
  r.kernel("tril", kAllDtypes, tril_kernel);
}

}  // namespace gn::reference
