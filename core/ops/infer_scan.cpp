// core/ops/infer_scan.cpp - inference of the ops that walk a dim in order or search one:
// cumsum, cumprod, logcumsumexp (cumulative), cummax, cummin and searchsorted.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

// cumsum, cumprod, logcumsumexp(x; dim, dtype, reverse) -> x's shape.  cumsum/cumprod: bool and
// integer x accumulate in int64 unless dtype is given; dtype casts x first.  logcumsumexp:
// floating dtypes only.
GN_DEFINE_INFER(cumulative) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  wrap_dim(a.attr_int(0), x.ndim);
  int32_t dt = a.attr_dtype(1, true);
  if (a.op() == "logcumsumexp") {
    if (dt < 0) need_float(x, "x");
    if (dt >= 0 && !is_float(dt)) fail(GN_ERR_DTYPE, std::string("dtype must be floating point, got ") + dtype_str(dt));
    if (dt < 0) dt = x.dtype;
  } else if (dt < 0) {
    dt = is_float(x.dtype) ? x.dtype : GN_I64;
  }
  a.cast_input(0, dt);
  a.set_outputs(dt, {like(x, dt)});
}

// cummax, cummin(x; dim) -> (values of x's dtype, int64 indices), both of x's shape.
GN_DEFINE_INFER(cummax) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  wrap_dim(a.attr_int(0), x.ndim);
  a.set_outputs(x.dtype, {like(x, x.dtype), like(x, GN_I64)});
}

// searchsorted(sorted (M) or (*, M), values; right, out_int32) -> values' shape, int64 (int32).
// A 1-D sorted sequence serves values of any shape; otherwise values must have its rank and
// leading dims.  Both are compared in their promoted dtype (16-bit floats in float32).
GN_DEFINE_INFER(searchsorted) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& s = a.at(0);
  const gn_tensor_meta& v = a.at(1);
  if (s.ndim == 0) fail(GN_ERR_SHAPE, "the sorted sequence must have at least one dim, got a 0-d tensor");
  if (s.dtype == GN_BOOL || v.dtype == GN_BOOL) fail(GN_ERR_DTYPE, "bool tensors are not supported");
  bool ok = s.ndim == 1 || s.ndim == v.ndim;
  for (int d = 0; ok && s.ndim > 1 && d + 1 < s.ndim; ++d) ok = s.shape[d] == v.shape[d];
  if (!ok)
    fail(GN_ERR_SHAPE,
         "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value "
         "tensor must match, but we got boundaries tensor " +
             shape_str(s) + " and input value tensor " + shape_str(v));
  int32_t dt = promote_types(s.dtype, v.dtype);
  if (dt == GN_F16 || dt == GN_BF16) dt = GN_F32;  // widening is exact: the same comparisons
  a.cast_input(0, dt);
  a.cast_input(1, dt);
  a.set_outputs(dt, {like(v, a.attr_int(1) ? GN_I32 : GN_I64)});
}

}  // namespace genesis::core
