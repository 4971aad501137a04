// core/ops/infer_reduce.cpp - inference of the reductions (sum prod mean var
// std logsumexp norm max min argmax argmin) and the softmax family.
//
// Reductions take "dims:ints" ([] = every dim, negative dims wrap) followed,
// possibly after float attributes (var's correction), by "keepdim:int" and,
// for sum/prod/mean, "dtype:int".  The attributes are located by kind so that
// one rule serves every row of ops.def.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// Positions of the reduction attributes; dtype -1 when the op has none.
struct ReduceAttrs {
  size_t dims = 0;
  size_t keepdim = 0;
  long dtype = -1;
};

ReduceAttrs find_reduce_attrs(const Args& a) {
  ReduceAttrs r;
  size_t i = 0;
  while (i < a.n_attrs && a.attrs[i].kind != GN_ATTR_INTS) ++i;
  if (i == a.n_attrs) fail(GN_ERR_INVALID_ARGUMENT, "missing the dims attribute");
  r.dims = i++;
  while (i < a.n_attrs && a.attrs[i].kind != GN_ATTR_INT) ++i;
  if (i == a.n_attrs) fail(GN_ERR_INVALID_ARGUMENT, "missing the keepdim attribute");
  r.keepdim = i++;
  if (i < a.n_attrs && a.attrs[i].kind == GN_ATTR_INT) r.dtype = static_cast<long>(i);
  return r;
}

// The reduced shape and which input dims are reduced.
struct Reduction {
  Dims out;
  bool mask[GN_MAX_DIMS] = {};
};

// dims [] reduces everything; a 0-d x accepts dims 0/-1 and stays 0-d.
Reduction reduce_shape(const gn_tensor_meta& x, std::span<const int64_t> dims, bool keepdim) {
  Reduction r;
  if (dims.empty()) {
    for (int i = 0; i < x.ndim; ++i) r.mask[i] = true;
  } else {
    bool seen[GN_MAX_DIMS] = {};
    for (int64_t d : dims) {
      const int w = wrap_dim(d, x.ndim);
      if (seen[w])
        fail(GN_ERR_INVALID_ARGUMENT, "dim " + std::to_string(w) + " appears more than once in dims " + ints_str(dims));
      seen[w] = true;
      if (x.ndim > 0) r.mask[w] = true;
    }
  }
  for (int i = 0; i < x.ndim; ++i) {
    if (!r.mask[i])
      r.out.push(x.shape[i]);
    else if (keepdim)
      r.out.push(1);
  }
  return r;
}

void one_out(const Args& a, int32_t dtype, const Dims& d) { a.set_outputs(dtype, {make_meta(dtype, d)}); }

// The reductions with a dtype attribute: a given dtype (a float one when float_only) casts the
// input first; without one a float x keeps its dtype and other inputs are read as `fallback`.
void reduce_with_dtype(const Args& a, bool float_only, int32_t fallback) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const ReduceAttrs ra = find_reduce_attrs(a);
  const Reduction red = reduce_shape(x, a.attr_ints(ra.dims), a.attr_int(ra.keepdim) != 0);
  int32_t dt = ra.dtype >= 0 ? a.attr_dtype(static_cast<size_t>(ra.dtype), true) : -1;
  if (float_only && dt >= 0 && !is_float(dt))
    fail(GN_ERR_DTYPE, std::string("dtype must be floating point, got ") + dtype_str(dt));
  if (dt < 0) dt = is_float(x.dtype) ? x.dtype : fallback;
  a.cast_input(0, dt);
  one_out(a, dt, red.out);
}

}  // namespace

// sum, prod: bool/int accumulate in int64 unless dtype is given; with dtype the
// input is cast to it first.
GN_DEFINE_INFER(reduce_sum) { reduce_with_dtype(a, false, GN_I64); }

// mean var std logsumexp norm: float results; non-float x is read as float32;
// mean's dtype (a float dtype) casts the input first.
GN_DEFINE_INFER(reduce_float) { reduce_with_dtype(a, true, GN_F32); }

// max, min over dims: x's dtype; no identity, so reducing an empty dim fails.
GN_DEFINE_INFER(reduce_same) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const ReduceAttrs ra = find_reduce_attrs(a);
  const std::span<const int64_t> dims = a.attr_ints(ra.dims);
  const Reduction red = reduce_shape(x, dims, a.attr_int(ra.keepdim) != 0);
  if (dims.empty() && numel(x) == 0)
    fail(GN_ERR_SHAPE, "cannot reduce the empty tensor of shape " + shape_str(x) + " over all dims (no identity)");
  for (int i = 0; i < x.ndim; ++i)
    if (red.mask[i] && x.shape[i] == 0)
      fail(GN_ERR_SHAPE,
           "cannot reduce over dim " + std::to_string(i) + " of size 0 (shape " + shape_str(x) + "): no identity");
  one_out(a, x.dtype, red.out);
  a.set_kernel(x.dtype);
}

// argmax, argmin: int64 indices; dim none = over the flattened x (0-d out, or
// all-ones shape with keepdim).
GN_DEFINE_INFER(reduce_arg) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  if (x.dtype == GN_BOOL) fail(GN_ERR_DTYPE, "bool inputs are not supported");
  const int64_t dim = a.attr_int(0);
  const bool keepdim = a.attr_int(1) != 0;
  Dims out;
  if (dim == GN_DIM_NONE) {
    if (numel(x) == 0)
      fail(GN_ERR_SHAPE, "cannot take the index of an extreme of the empty tensor of shape " + shape_str(x) +
                             "; give a non-empty dim");
    if (keepdim)
      for (int i = 0; i < x.ndim; ++i) out.push(1);
  } else {
    const int w = wrap_dim(dim, x.ndim);
    if (x.ndim > 0 && x.shape[w] == 0)
      fail(GN_ERR_SHAPE, "cannot reduce over dim " + std::to_string(w) + " of size 0 (shape " + shape_str(x) + ")");
    for (int i = 0; i < x.ndim; ++i) {
      if (i != w)
        out.push(x.shape[i]);
      else if (keepdim)
        out.push(1);
    }
  }
  a.set_outputs(x.dtype, {make_meta(GN_I64, out)});
}

// softmax, log_softmax(x; dim, dtype): dtype none keeps a float x (int -> f32);
// a given dtype (float) casts x first.
GN_DEFINE_INFER(softmax) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  wrap_dim(a.attr_int(0), x.ndim);
  int32_t dt = a.attr_dtype(1, true);
  if (dt >= 0 && !is_float(dt)) fail(GN_ERR_DTYPE, std::string("dtype must be floating point, got ") + dtype_str(dt));
  if (dt < 0) dt = is_float(x.dtype) ? x.dtype : GN_F32;
  a.cast_input(0, dt);
  a.set_outputs(dt, {like(x, dt)});
}

// softmax_backward, log_softmax_backward(grad_y, y): same shapes, both cast
// to their promoted dtype (float32 if that is not float).
GN_DEFINE_INFER(softmax_backward) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& y = a.at(1);
  if (!same_shape(g, y)) fail(GN_ERR_SHAPE, "grad_y shape " + shape_str(g) + " must equal y shape " + shape_str(y));
  wrap_dim(a.attr_int(0), y.ndim);
  int32_t dt = promote_types(g.dtype, y.dtype);
  if (!is_float(dt)) dt = GN_F32;
  a.cast_input(0, dt);
  a.cast_input(1, dt);
  a.set_outputs(dt, {like(y, dt)});
}

}  // namespace genesis::core
