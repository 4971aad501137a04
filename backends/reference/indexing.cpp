// backends/reference/indexing.cpp - embedding and its backward, gather,
// scatter, scatter_add, index_select, index_add, masked_fill, one_hot,
// scatter_reduce.
//
// Index tensors may have any integer dtype; every index value is checked
// (0 <= idx < size, no negative indices) and a bad one fails with GN_ERR_INDEX
// naming the op, the value and the size.  Values are copied exactly between
// integer dtypes; accumulations are in double (int64 when all are integers).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::elem_ptr;
using gn::sdk::elem_ptr_at;
using gn::sdk::load;
using gn::sdk::next_index;

// ----------------------------------------------------------------------------
// helpers

// Index value at p, checked against size.
int64_t checked_index(const char* op, const char* p, int32_t dtype, int64_t size) {
  if (!is_intlike(dtype))
    fail_op(GN_ERR_DTYPE, op, std::string("indices must be integers, got ") + gn_dtype_name(dtype));
  int64_t v = gn::sdk::load_int(p, dtype);
  if (v < 0 || v >= size)
    fail_op(GN_ERR_INDEX, op, "index " + std::to_string(v) + " is out of range for size " + std::to_string(size));
  return v;
}

// All values of a 0-d/1-D index tensor (row-major), checked against size.
std::vector<int64_t> checked_indices(const char* op, const gn_tensor_view& index, int64_t size) {
  if (index.ndim > 1) fail_op(GN_ERR_SHAPE, op, "index must be 0-d or 1-D, got " + shape_str(index));
  std::vector<int64_t> r((size_t)numel(index));
  for (size_t i = 0; i < r.size(); ++i) r[i] = checked_index(op, elem_ptr(index, (int64_t)i), index.dtype, size);
  return r;
}

// dst += alpha * src for one element (exact when both are integer-like).
void add_elem(char* dst, int32_t dst_dtype, const char* src, int32_t src_dtype, double alpha) {
  if (is_intlike(dst_dtype) && is_intlike(src_dtype)) {
    int64_t v = gn::sdk::load_int(src, src_dtype);
    gn::sdk::store_int(dst, dst_dtype, wrap_add(gn::sdk::load_int(dst, dst_dtype), wrap_mul((int64_t)alpha, v)));
  } else {
    gn::sdk::store(dst, dst_dtype, load(dst, dst_dtype) + alpha * load(src, src_dtype));
  }
}

// Fail unless alpha is integral when the accumulation is integral.
void check_alpha(const char* op, double alpha, int32_t dst_dtype, int32_t src_dtype) {
  if (is_intlike(dst_dtype) && is_intlike(src_dtype) && (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18))
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "alpha must be an integer for integer tensors, got " + std::to_string(alpha));
}

// Size of dim d of v (a 0-d view counts as size 1).
int64_t dim_size(const gn_tensor_view& v, int32_t d) { return v.ndim == 0 ? 1 : v.shape[d]; }

// For gather/scatter: index has x's rank and index.shape[d] <= x.shape[d] for
// d != dim (torch's rule); a 0-d x takes any index of one element.
void check_index_shape(const char* op, const gn_tensor_view& index, const gn_tensor_view& x, int32_t dim) {
  if (x.ndim == 0) {
    if (numel(index) > 1) fail_op(GN_ERR_SHAPE, op, "index " + shape_str(index) + " is too large for a 0-d input");
    return;
  }
  bool ok = index.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d) ok = d == dim || index.shape[d] <= x.shape[d];
  if (!ok)
    fail_op(GN_ERR_SHAPE, op,
            "index " + shape_str(index) + " does not fit input " + shape_str(x) + " at dim " + std::to_string(dim));
}

// ----------------------------------------------------------------------------
// embedding

// embedding(weight (V,D), ids (*)) -> out (*, D): out[r, :] = weight[ids[r], :]
GN_SDK_KERNEL(embedding_kernel) {
  need_io("embedding", n_in, 2, n_out, 1);
  const gn_tensor_view &w = in[0], &ids = in[1], &o = out[0];
  if (w.ndim != 2) fail_op(GN_ERR_SHAPE, "embedding", "weight must be 2-D, got " + shape_str(w));
  const int64_t V = w.shape[0], D = w.shape[1], n = numel(ids);
  if (numel(o) != n * D)
    fail_op(GN_ERR_SHAPE, "embedding", "output " + shape_str(o) + " does not match ids " + shape_str(ids));
  for (int64_t r = 0; r < n; ++r) {
    int64_t row[2] = {checked_index("embedding", elem_ptr(ids, r), ids.dtype, V), 0};
    for (row[1] = 0; row[1] < D; ++row[1])
      convert_elem(elem_ptr(o, r * D + row[1]), o.dtype, elem_ptr_at(w, row), w.dtype);
  }
}

// embedding_backward(grad (*, D), ids (*); num_weights) -> (num_weights, D):
// repeated ids accumulate.
GN_SDK_KERNEL(embedding_backward_kernel) {
  const char* op = "embedding_backward";
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &g = in[0], &ids = in[1], &o = out[0];
  const int64_t num_weights = attr_int(op, attrs, n_attrs, 0);
  if (o.ndim != 2 || o.shape[0] != num_weights)
    fail_op(GN_ERR_SHAPE, op, "output must be (num_weights, D), got " + shape_str(o));
  const int64_t D = o.shape[1], n = numel(ids);
  if (numel(g) != n * D) fail_op(GN_ERR_SHAPE, op, "grad " + shape_str(g) + " does not match ids " + shape_str(ids));
  std::vector<double> acc((size_t)(num_weights * D), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    int64_t id = checked_index(op, elem_ptr(ids, r), ids.dtype, num_weights);
    for (int64_t d = 0; d < D; ++d) acc[(size_t)(id * D + d)] += load(elem_ptr(g, r * D + d), g.dtype);
  }
  for (int64_t i = 0; i < num_weights * D; ++i) gn::sdk::store(elem_ptr(o, i), o.dtype, acc[(size_t)i]);
}

// ----------------------------------------------------------------------------
// gather / scatter

// gather, scatter and scatter_reduce: f(i, p, q) for every position p of index (the
// i-th), where q is p with q[dim] = index[p], checked against t's size at dim (a 0-d
// t keeps q).
template <class F>
void for_each_index(const char* op, const gn_tensor_view& index, const gn_tensor_view& t, int32_t dim, F f) {
  const int64_t n = numel(index);
  std::vector<int64_t> p((size_t)index.ndim + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = checked_index(op, elem_ptr_at(index, p.data()), index.dtype, dim_size(t, dim));
    std::vector<int64_t> q(p);
    if (t.ndim > 0) q[(size_t)dim] = v;
    f(i, p.data(), q.data());
    next_index(p.data(), index.shape, index.ndim);
  }
}

// gather(x, index; dim) -> out (index's shape): out[p] = x[p with p[dim] = index[p]].
GN_SDK_KERNEL(gather_kernel) {
  const char* op = "gather";
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &x = in[0], &index = in[1], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  check_index_shape(op, index, x, dim);
  if (numel(o) != numel(index))
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " must have index's shape " + shape_str(index));
  for_each_index(op, index, x, dim, [&](int64_t i, const int64_t*, const int64_t* q) {
    convert_elem(elem_ptr(o, i), o.dtype, elem_ptr_at(x, q), x.dtype);
  });
}

// scatter and scatter_reduce: a src that is not 0-d has index's rank and is at least
// as large as index in every dim.
void check_scatter_src(const char* op, const gn_tensor_view& src, const gn_tensor_view& index) {
  if (src.ndim == 0) return;
  bool ok = src.ndim == index.ndim;
  for (int32_t d = 0; ok && d < src.ndim; ++d) ok = index.shape[d] <= src.shape[d];
  if (!ok) fail_op(GN_ERR_SHAPE, op, "src " + shape_str(src) + " is smaller than index " + shape_str(index));
}

// scatter / scatter_add(x, index, src; dim) -> out = copy of x, then for every
// p in index: out[p with p[dim] = index[p]] (+)= src[p] (a 0-d src is a scalar).
void scatter_impl(const char* op, bool add, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                  size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  need_io(op, n_in, 3, n_out, 1);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  check_index_shape(op, index, o, dim);
  const bool scalar_src = src.ndim == 0;
  check_scatter_src(op, src, index);
  copy_convert(op, o, x);
  for_each_index(op, index, o, dim, [&](int64_t, const int64_t* p, const int64_t* q) {
    char* dst = elem_ptr_at(o, q);
    const char* s = scalar_src ? base_ptr(src) : elem_ptr_at(src, p);
    if (add)
      add_elem(dst, o.dtype, s, src.dtype, 1.0);
    else
      convert_elem(dst, o.dtype, s, src.dtype);
  });
}

GN_SDK_KERNEL(scatter_kernel) { scatter_impl("scatter", false, in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(scatter_add_kernel) { scatter_impl("scatter_add", true, in, n_in, out, n_out, attrs, n_attrs); }

// ----------------------------------------------------------------------------
// index_select / index_add

// Shared by index_select and index_add past their 0-d case: `t` (named `role`) must have
// x's shape but ids.size() at dim; then f(p, q) for every index p of t, where q is p with
// q[dim] = ids[p[dim]].
template <class F>
void along_index(const char* op, const char* role, const gn_tensor_view& t, const gn_tensor_view& x, int32_t dim,
                 const std::vector<int64_t>& ids, F f) {
  bool ok = t.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d) ok = t.shape[d] == (d == dim ? (int64_t)ids.size() : x.shape[d]);
  if (!ok)
    fail_op(GN_ERR_SHAPE, op,
            std::string(role) + " " + shape_str(t) + " does not match input " + shape_str(x) + " and the index");
  const int64_t n = numel(t);
  std::vector<int64_t> p((size_t)t.ndim, 0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> q(p);
    q[(size_t)dim] = ids[(size_t)p[(size_t)dim]];
    f(p.data(), q.data());
    next_index(p.data(), t.shape, t.ndim);
  }
}

// index_select(x, index (k); dim) -> out: out[p] = x[p with p[dim] = index[p[dim]]].
GN_SDK_KERNEL(index_select_kernel) {
  const char* op = "index_select";
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &x = in[0], &index = in[1], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const std::vector<int64_t> ids = checked_indices(op, index, dim_size(x, dim));
  if (x.ndim == 0) {
    if (numel(o) != (int64_t)ids.size())
      fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match the index");
    for (int64_t i = 0; i < numel(o); ++i) convert_elem(elem_ptr(o, i), o.dtype, base_ptr(x), x.dtype);
    return;
  }
  along_index(op, "output", o, x, dim, ids, [&](const int64_t* p, const int64_t* q) {
    convert_elem(elem_ptr_at(o, p), o.dtype, elem_ptr_at(x, q), x.dtype);
  });
}

// index_add(x, index (k), src; dim, alpha) -> out = copy of x with
// out.select(dim, index[i]) += alpha * src.select(dim, i).
GN_SDK_KERNEL(index_add_kernel) {
  const char* op = "index_add";
  need_io(op, n_in, 3, n_out, 1);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const double alpha = attr_float(op, attrs, n_attrs, 1);
  check_alpha(op, alpha, o.dtype, src.dtype);
  const std::vector<int64_t> ids = checked_indices(op, index, dim_size(o, dim));
  copy_convert(op, o, x);
  if (o.ndim == 0) {
    if (numel(src) != (int64_t)ids.size())
      fail_op(GN_ERR_SHAPE, op, "src " + shape_str(src) + " does not match the index");
    for (int64_t i = 0; i < numel(src); ++i) add_elem(base_ptr(o), o.dtype, elem_ptr(src, i), src.dtype, alpha);
    return;
  }
  along_index(op, "src", src, o, dim, ids, [&](const int64_t* p, const int64_t* q) {
    add_elem(elem_ptr_at(o, q), o.dtype, elem_ptr_at(src, p), src.dtype, alpha);
  });
}

// ----------------------------------------------------------------------------
// masked_fill, one_hot

// masked_fill(x, mask; value) -> out = mask ? value : x (both broadcast to out).
GN_SDK_KERNEL(masked_fill_kernel) {
  need_io("masked_fill", n_in, 2, n_out, 1);
  const double value = attr_float("masked_fill", attrs, n_attrs, 0);
  const gn_tensor_view &x = in[0], &mask = in[1], &o = out[0];
  const gn_tensor_view* ins[] = {&x, &mask};
  for_each_bcast("masked_fill", o, ins, [&](char* po, const char* const* p) {
    if (load(p[1], mask.dtype) != 0.0)
      gn::sdk::store(po, o.dtype, value);
    else
      convert_elem(po, o.dtype, p[0], x.dtype);
  });
}

// one_hot(ids (*); num_classes) -> int64 (*, C): out[r, ids[r]] = 1.
GN_SDK_KERNEL(one_hot_kernel) {
  const char* op = "one_hot";
  need_io(op, n_in, 1, n_out, 1);
  const gn_tensor_view &ids = in[0], &o = out[0];
  const int64_t n = numel(ids);
  int64_t C = attr_int(op, attrs, n_attrs, 0);
  if (C < 0 && o.ndim > 0) C = o.shape[o.ndim - 1];  // -1: decided by inference
  if (o.ndim != ids.ndim + 1 || o.shape[o.ndim - 1] != C || numel(o) != n * C)
    fail_op(
        GN_ERR_SHAPE, op,
        "output " + shape_str(o) + " does not match ids " + shape_str(ids) + " and " + std::to_string(C) + " classes");
  for (int64_t i = 0; i < n * C; ++i) gn::sdk::store_int(elem_ptr(o, i), o.dtype, 0);
  for (int64_t r = 0; r < n; ++r) {
    int64_t c = checked_index(op, elem_ptr(ids, r), ids.dtype, C);
    gn::sdk::store_int(elem_ptr(o, r * C + c), o.dtype, 1);
  }
}

// ----------------------------------------------------------------------------
// scatter_reduce

// scatter_reduce(x, index, src; dim, reduce, include_self) -> out = copy of x, then for every
// p in index, out[q] = reduce(out[q], src[p]) with q = p but q[dim] = index[p], in index's
// row-major order.  reduce: 0 sum, 1 prod, 2 mean (the sum divided by the number of values
// reduced, x's included unless include_self is 0; integers divide with floor), 3 amax, 4 amin
// (a NaN propagates).  include_self 0: the positions that receive a value start from the first
// one instead of x's.  Floating values are combined in double and rounded to out's dtype after
// every step (torch's in-dtype accumulation); integers exactly with int64 wrapping.
GN_SDK_KERNEL(scatter_reduce_kernel) {
  const char* op = "scatter_reduce";
  need_io(op, n_in, 3, n_out, 1);
  const gn_tensor_view &x = in[0], &index = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  const int64_t reduce = attr_int(op, attrs, n_attrs, 1);
  const bool include_self = attr_int(op, attrs, n_attrs, 2) != 0;
  if (reduce < 0 || reduce > 4)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "reduce must be 0 (sum), 1 (prod), 2 (mean), 3 (amax) or 4 (amin), got " + std::to_string(reduce));
  check_index_shape(op, index, o, dim);
  const bool scalar_src = src.ndim == 0;
  check_scatter_src(op, src, index);
  copy_convert(op, o, x);
  const int64_t n_out_el = numel(o);
  const bool exact = is_intlike(o.dtype);
  std::vector<int64_t> count((size_t)n_out_el, include_self ? 1 : 0);
  std::vector<bool> fresh((size_t)n_out_el, !include_self);
  for_each_index(op, index, o, dim, [&](int64_t, const int64_t* p, const int64_t* q) {
    int64_t lin = 0;  // row-major position of q in o
    for (int32_t d = 0; d < o.ndim; ++d) lin = lin * o.shape[d] + q[d];
    char* dst = elem_ptr_at(o, q);
    const char* s = scalar_src ? base_ptr(src) : elem_ptr_at(src, p);
    const bool first = fresh[(size_t)lin];
    fresh[(size_t)lin] = false;
    ++count[(size_t)lin];
    if (exact) {
      const int64_t b = load_i64(s, src.dtype), a = first ? (reduce == 1 ? 1 : 0) : gn::sdk::load_int(dst, o.dtype);
      int64_t r = 0;
      switch (reduce) {
        case 0:
        case 2: r = wrap_add(a, b); break;
        case 1: r = wrap_mul(a, b); break;
        case 3: r = first ? b : std::max(a, b); break;
        default: r = first ? b : std::min(a, b); break;
      }
      gn::sdk::store_int(dst, o.dtype, r);
    } else {
      const double b = load(s, src.dtype);
      double a = first ? (reduce == 1   ? 1.0
                          : reduce == 3 ? -INFINITY
                          : reduce == 4 ? INFINITY
                                        : 0.0)
                       : load(dst, o.dtype);
      double r = 0;
      switch (reduce) {
        case 0:
        case 2: r = a + b; break;
        case 1: r = a * b; break;
        case 3: r = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); break;
        default: r = std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); break;
      }
      gn::sdk::store(dst, o.dtype, r);
    }
  });
  if (reduce != 2) return;
  std::vector<int64_t> q((size_t)o.ndim + 1, 0);
  for (int64_t lin = 0; lin < n_out_el; ++lin) {
    const int64_t c = count[(size_t)lin];
    char* dst = elem_ptr_at(o, q.data());
    next_index(q.data(), o.shape, o.ndim);
    if (c <= 1) continue;
    if (exact) {
      const int64_t a = gn::sdk::load_int(dst, o.dtype);
      int64_t r = a / c;
      if (a % c != 0 && a < 0) --r;  // floor
      gn::sdk::store_int(dst, o.dtype, r);
    } else {
      gn::sdk::store(dst, o.dtype, load(dst, o.dtype) / (double)c);
    }
  }
}

}  // namespace

void register_indexing(const gn::sdk::Registrar& r) {
  r.kernel("embedding", kAllDtypes, embedding_kernel);
  r.kernel("embedding_backward", kFloatingDtypes, embedding_backward_kernel);
  r.kernel("gather", kAllDtypes, gather_kernel);
  r.kernel("scatter", kAllDtypes, scatter_kernel);
  r.kernel("scatter_add", kNumericDtypes, scatter_add_kernel);
  r.kernel("index_select", kAllDtypes, index_select_kernel);
  r.kernel("index_add", kNumericDtypes, index_add_kernel);
  r.kernel("masked_fill", kAllDtypes, masked_fill_kernel);
  r.kernel("one_hot", kIntDtypes, one_hot_kernel);
  r.kernel("scatter_reduce", kNumericDtypes, scatter_reduce_kernel);
}

}  // namespace gn::reference
