// core/ops/infer_index.cpp - inference of the indexing and shape ops:
// embedding, gather/scatter, index_select/index_add, masked_fill, cat, stack,
// split, topk, sort, one_hot.  Index tensors are integer and never cast (the
// kernels read every integer dtype); data inputs are cast to x's dtype.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// Index tensors: any integer dtype (bool is not an index).
void need_index(const gn_tensor_meta& m, const char* role) {
  if (!is_int(m.dtype)) fail(GN_ERR_DTYPE, std::string(role) + " must be an integer tensor, got " + dtype_str(m.dtype));
}

// A 0-d or 1-D integer index; returns its length.
int64_t need_index_list(const gn_tensor_meta& m) {
  need_index(m, "index");
  if (m.ndim > 1) fail(GN_ERR_SHAPE, "index must be 0-D or 1-D, got shape " + shape_str(m));
  return numel(m);
}

// x's shape with size(dim) replaced by len (0-d x stays 0-d and needs len 1).
Dims with_dim_size(const gn_tensor_meta& x, int dim, int64_t len, const char* what) {
  if (x.ndim == 0) {
    if (len != 1)
      fail(GN_ERR_SHAPE, std::string(what) + " of a 0-d tensor needs exactly one index, got " + std::to_string(len));
    return Dims{};
  }
  Dims d = dims_of(x);
  d.d[dim] = len;
  return d;
}

void one_out(const Args& a, const gn_tensor_meta& m, int32_t kernel) { a.set_outputs(kernel, {m}); }

}  // namespace

// embedding(weight (V, D), ids (*) int) -> (*, D) in weight's dtype.
GN_DEFINE_INFER(embedding) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& w = a.at(0);
  const gn_tensor_meta& ids = a.at(1);
  if (w.ndim != 2) fail(GN_ERR_SHAPE, "weight must be 2-D (num_embeddings, dim), got shape " + shape_str(w));
  need_index(ids, "ids");
  Dims out = dims_of(ids);
  out.push(w.shape[1]);
  one_out(a, make_meta(w.dtype, out), w.dtype);
}

// embedding_backward(grad (*, D), ids (*)) -> (num_weights, D) in grad's dtype.
GN_DEFINE_INFER(embedding_backward) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& g = a.at(0);
  const gn_tensor_meta& ids = a.at(1);
  const int64_t num = a.attr_int(0);
  if (num <= 0) fail(GN_ERR_INVALID_ARGUMENT, "num_weights must be > 0, got " + std::to_string(num));
  need_index(ids, "ids");
  if (g.ndim < 1) fail(GN_ERR_SHAPE, "grad must have at least 1 dim (*, D), got shape " + shape_str(g));
  if (!same_shape(ids, dims_of(g, 0, g.ndim - 1)))
    fail(GN_ERR_SHAPE,
         "grad shape " + shape_str(g) + " must be the ids shape " + shape_str(ids) + " plus the embedding dim");
  one_out(a, make_meta(g.dtype, dims_of({num, g.shape[g.ndim - 1]})), g.dtype);
}

// gather(x, index; dim) -> index's shape, x's dtype; index.size(d) <= x.size(d) for d != dim.
GN_DEFINE_INFER(gather) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& idx = a.at(1);
  need_index(idx, "index");
  const int dim = wrap_dim(a.attr_int(0), x.ndim);
  if (idx.ndim != x.ndim)
    fail(GN_ERR_SHAPE, "index " + shape_str(idx) + " must have the same rank as x " + shape_str(x));
  for (int d = 0; d < x.ndim; ++d)
    if (d != dim && idx.shape[d] > x.shape[d])
      fail(GN_ERR_SHAPE, "index " + shape_str(idx) + " is larger than x " + shape_str(x) + " at dim " +
                             std::to_string(d) + " (only dim " + std::to_string(dim) + " may differ)");
  one_out(a, like(idx, x.dtype), x.dtype);
}

// scatter, scatter_add(x, index, src; dim) -> x's shape; src cast to x's dtype;
// index.size(d) <= src.size(d) for all d and <= x.size(d) for d != dim.
GN_DEFINE_INFER(scatter) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& idx = a.at(1);
  const gn_tensor_meta& src = a.at(2);
  need_index(idx, "index");
  const int dim = wrap_dim(a.attr_int(0), x.ndim);
  if (idx.ndim != x.ndim || src.ndim != x.ndim)
    fail(GN_ERR_SHAPE,
         "index " + shape_str(idx) + " and src " + shape_str(src) + " must have the same rank as x " + shape_str(x));
  for (int d = 0; d < x.ndim; ++d) {
    if (idx.shape[d] > src.shape[d])
      fail(GN_ERR_SHAPE,
           "index " + shape_str(idx) + " is larger than src " + shape_str(src) + " at dim " + std::to_string(d));
    if (d != dim && idx.shape[d] > x.shape[d])
      fail(GN_ERR_SHAPE, "index " + shape_str(idx) + " is larger than x " + shape_str(x) + " at dim " +
                             std::to_string(d) + " (only dim " + std::to_string(dim) + " may differ)");
  }
  a.cast_input(2, x.dtype);
  one_out(a, like(x, x.dtype), x.dtype);
}

// index_select(x, index 0-D/1-D; dim) -> x with size(dim) = len(index).
GN_DEFINE_INFER(index_select) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const int64_t len = need_index_list(a.at(1));
  const int dim = wrap_dim(a.attr_int(0), x.ndim);
  one_out(a, make_meta(x.dtype, with_dim_size(x, dim, len, "index_select")), x.dtype);
}

// index_add(x, index, src; dim, alpha) -> x's shape; src is x's shape with
// size(dim) = len(index), cast to x's dtype.
GN_DEFINE_INFER(index_add) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& src = a.at(2);
  const int64_t len = need_index_list(a.at(1));
  const int dim = wrap_dim(a.attr_int(0), x.ndim);
  const Dims want = with_dim_size(x, dim, len, "index_add");
  if (!same_shape(src, want))
    fail(GN_ERR_SHAPE, "src shape " + shape_str(src) + " must be " + dims_str(want) + " (x " + shape_str(x) +
                           " with dim " + std::to_string(dim) + " sized by the " + std::to_string(len) + " indices)");
  a.cast_input(2, x.dtype);
  one_out(a, like(x, x.dtype), x.dtype);
}

// masked_fill(x, mask bool; value) -> x's shape; the mask broadcasts to x.
GN_DEFINE_INFER(masked_fill) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& mask = a.at(1);
  if (mask.dtype != GN_BOOL)
    fail(GN_ERR_DTYPE, std::string("mask must be a bool tensor, got ") + dtype_str(mask.dtype));
  gn_tensor_meta b{};
  if (!broadcast_shapes(x, mask, &b) || !same_shape(b, x))
    fail(GN_ERR_SHAPE, "mask of shape " + shape_str(mask) + " does not broadcast to x's shape " + shape_str(x));
  one_out(a, like(x, x.dtype), x.dtype);
}

// cat(x0, x1, ...; dim): same rank (>= 1), equal sizes except dim; dtypes promoted.
GN_DEFINE_INFER(cat) {
  a.need_inputs(1, -1);
  const gn_tensor_meta& x0 = a.at(0);
  for (size_t i = 0; i < a.n_in; ++i)
    if (a.at(i).ndim == 0) fail(GN_ERR_SHAPE, "input " + std::to_string(i) + " is 0-d and cannot be concatenated");
  const int dim = wrap_dim(a.attr_int(0), x0.ndim);
  int64_t total = 0;
  for (size_t i = 0; i < a.n_in; ++i) {
    const gn_tensor_meta& t = a.at(i);
    if (t.ndim != x0.ndim)
      fail(GN_ERR_SHAPE, "all inputs must have the same rank: input 0 has shape " + shape_str(x0) + " but input " +
                             std::to_string(i) + " has shape " + shape_str(t));
    for (int d = 0; d < x0.ndim; ++d)
      if (d != dim && t.shape[d] != x0.shape[d])
        fail(GN_ERR_SHAPE, "sizes must match except in dim " + std::to_string(dim) + ": input " + std::to_string(i) +
                               " has shape " + shape_str(t) + " but input 0 has shape " + shape_str(x0));
    total += t.shape[dim];
  }
  const int32_t dt = result_type_of(a, 0, a.n_in);
  a.cast_inputs(0, a.n_in, dt);
  Dims out = dims_of(x0);
  out.d[dim] = total;
  one_out(a, make_meta(dt, out), dt);
}

// stack(x0, x1, ...; dim): same shapes, a new dim in [-(ndim+1), ndim]; dtypes promoted.
GN_DEFINE_INFER(stack) {
  a.need_inputs(1, -1);
  const gn_tensor_meta& x0 = a.at(0);
  for (size_t i = 1; i < a.n_in; ++i)
    if (!same_shape(a.at(i), x0))
      fail(GN_ERR_SHAPE, "all inputs must have the same shape: input 0 has shape " + shape_str(x0) + " but input " +
                             std::to_string(i) + " has shape " + shape_str(a.at(i)));
  const int64_t nd = x0.ndim + 1;
  const int64_t dim = a.attr_int(0);
  if (dim == GN_DIM_NONE || dim < -nd || dim >= nd)
    fail(GN_ERR_INDEX, "dim " + dim_label(dim) + " is out of range [" + std::to_string(-nd) + ", " +
                           std::to_string(nd - 1) + "] for stacking tensors of rank " + std::to_string(x0.ndim));
  const int w = static_cast<int>(dim < 0 ? dim + nd : dim);
  Dims out = dims_of(x0, 0, w);
  out.push(static_cast<int64_t>(a.n_in));
  out.append(x0, w, x0.ndim);
  const int32_t dt = result_type_of(a, 0, a.n_in);
  a.cast_inputs(0, a.n_in, dt);
  one_out(a, make_meta(dt, out), dt);
}

// split(x; sizes, dim) -> views.  sizes [n]: chunks of n, the last smaller
// (an empty dim gives one empty part); longer lists: one size per part.
GN_DEFINE_INFER(split) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const std::span<const int64_t> sizes = a.attr_ints(0);
  if (x.ndim == 0) fail(GN_ERR_SHAPE, "cannot split a 0-d tensor");
  const int dim = wrap_dim(a.attr_int(1), x.ndim);
  const int64_t total = x.shape[dim];
  if (sizes.empty()) fail(GN_ERR_INVALID_ARGUMENT, "sizes must not be empty");
  size_t parts = 0;
  int64_t chunk = 0;
  if (sizes.size() == 1) {
    chunk = sizes[0];
    if (chunk <= 0) fail(GN_ERR_INVALID_ARGUMENT, "split size must be > 0, got " + std::to_string(chunk));
    parts = total == 0 ? 1 : static_cast<size_t>(total / chunk + (total % chunk != 0));
  } else {
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) fail(GN_ERR_INVALID_ARGUMENT, "sizes " + ints_str(sizes) + " contain a negative size");
      if (__builtin_add_overflow(sum, s, &sum))
        fail(GN_ERR_INVALID_ARGUMENT, "sizes " + ints_str(sizes) + " overflow int64");
    }
    if (sum != total)
      fail(GN_ERR_SHAPE, "sizes " + ints_str(sizes) + " sum to " + std::to_string(sum) + " but dim " +
                             std::to_string(dim) + " of shape " + shape_str(x) + " has size " + std::to_string(total));
    parts = sizes.size();
  }
  if (parts > a.capacity())
    fail(GN_ERR_INVALID_ARGUMENT, "splitting dim " + std::to_string(dim) + " of shape " + shape_str(x) + " gives " +
                                      std::to_string(parts) + " parts but only " + std::to_string(a.capacity()) +
                                      " outputs can be returned");
  a.set_n_out(parts);
  for (size_t k = 0; k < parts; ++k) {
    gn_tensor_meta m = like(x, x.dtype);
    if (sizes.size() == 1)
      m.shape[dim] = k + 1 < parts ? chunk : total - chunk * static_cast<int64_t>(parts - 1);
    else
      m.shape[dim] = sizes[k];
    a.set_out(k, m);
  }
  a.set_kernel(x.dtype);
}

// topk(x; k, dim) -> (values, int64 indices) with size(dim) = k.
GN_DEFINE_INFER(topk) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const int64_t k = a.attr_int(0);
  const int dim = wrap_dim(a.attr_int(1), x.ndim);
  const int64_t size = x.ndim > 0 ? x.shape[dim] : 1;
  if (k < 0 || k > size)
    fail(GN_ERR_INVALID_ARGUMENT, "k " + std::to_string(k) + " is out of range [0, " + std::to_string(size) +
                                      "] for dim " + std::to_string(dim) + " of shape " + shape_str(x));
  gn_tensor_meta v = like(x, x.dtype);
  if (x.ndim > 0) v.shape[dim] = k;
  a.set_outputs(x.dtype, {v, like(v, GN_I64)});
}

// sort(x; dim) -> (values, int64 indices); argsort -> indices only.
GN_DEFINE_INFER(sort) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  wrap_dim(a.attr_int(0), x.ndim);
  if (a.op() == "argsort") {
    a.set_n_out(1);
    a.set_out(0, like(x, GN_I64));
  } else {
    a.set_n_out(2);
    a.set_out(0, like(x, x.dtype));
    a.set_out(1, like(x, GN_I64));
  }
  a.set_kernel(x.dtype);
}

// one_hot(ids int (*); num_classes) -> int64 (*, num_classes).
GN_DEFINE_INFER(one_hot) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& ids = a.at(0);
  need_index(ids, "ids");
  const int64_t c = a.attr_int(0);
  if (c < 1) fail(GN_ERR_INVALID_ARGUMENT, "num_classes must be >= 1, got " + std::to_string(c));
  Dims out = dims_of(ids);
  out.push(c);
  one_out(a, make_meta(GN_I64, out), ids.dtype);
}

}  // namespace genesis::core
