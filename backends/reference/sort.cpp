// backends/reference/sort.cpp - sort, argsort and topk along one dim; searchsorted.
//
// Each line along `dim` is ordered with a stable sort of its positions, so
// equal values keep their original order (lower index first) in both
// directions; NaN sorts as the largest value.  Integer values are compared
// exactly as int64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

// Positions 0..L-1 of one line in sorted order.
std::vector<int64_t> sorted_order(const std::vector<const char*>& p, int32_t dtype, bool descending) {
  std::vector<int64_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  if (is_intlike(dtype)) {
    std::vector<int64_t> v(p.size());
    for (size_t j = 0; j < p.size(); ++j) v[j] = gn::sdk::load_int(p[j], dtype);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return descending ? v[(size_t)a] > v[(size_t)b] : v[(size_t)a] < v[(size_t)b];
    });
    return order;
  }
  std::vector<double> v(p.size());
  for (size_t j = 0; j < p.size(); ++j) v[j] = gn::sdk::load(p[j], dtype);
  // "a before b" with NaN as the largest value.
  auto less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return descending ? less(v[(size_t)b], v[(size_t)a]) : less(v[(size_t)a], v[(size_t)b]);
  });
  return order;
}

// Check that an output has x's shape except `len` along dim.
void check_out(const char* op, const gn_tensor_view& o, const gn_tensor_view& x, int32_t dim, int64_t len) {
  bool ok = o.ndim == x.ndim;
  for (int32_t d = 0; ok && d < x.ndim; ++d) ok = o.shape[d] == (d == dim ? len : x.shape[d]);
  if (!ok) fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match input " + shape_str(x));
}

// Order every line of x along dim and write the first `k` entries: values
// (optional) and int64 indices (optional).
void sort_lines(const char* op, const gn_tensor_view& x, int32_t dim, bool descending, int64_t k,
                const gn_tensor_view* values, const gn_tensor_view* indices) {
  const int64_t L = x.ndim == 0 ? 1 : x.shape[dim];
  if (k < 0 || k > L)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "k " + std::to_string(k) + " is out of range for a dim of size " + std::to_string(L));
  if (values) check_out(op, *values, x, dim, k);
  if (indices) check_out(op, *indices, x, dim, k);
  const Groups gx = line_groups(x, dim);
  Groups gv, gi;
  if (values) gv = line_groups(*values, dim);
  if (indices) gi = line_groups(*indices, dim);
  std::vector<const char*> px, pv, pi;
  for (int64_t o = 0; o < gx.outer_n; ++o) {
    gx.pointers(o, px);
    std::vector<int64_t> order = sorted_order(px, x.dtype, descending);
    if (values) gv.pointers(o, pv);
    if (indices) gi.pointers(o, pi);
    for (int64_t j = 0; j < k; ++j) {
      if (values) convert_elem((char*)pv[(size_t)j], values->dtype, px[(size_t)order[(size_t)j]], x.dtype);
      if (indices) gn::sdk::store_int((char*)pi[(size_t)j], indices->dtype, order[(size_t)j]);
    }
  }
}

// sort(x; dim, descending, stable) -> (values, indices)
GN_SDK_KERNEL(sort_kernel) {
  need_io("sort", n_in, 1, n_out, 2);
  const gn_tensor_view& x = in[0];
  const int32_t dim = wrap_dim_checked("sort", attr_int("sort", attrs, n_attrs, 0), x.ndim);
  const bool descending = attr_int("sort", attrs, n_attrs, 1) != 0;
  sort_lines("sort", x, dim, descending, x.ndim == 0 ? 1 : x.shape[dim], &out[0], &out[1]);
}

// argsort(x; dim, descending, stable) -> indices
GN_SDK_KERNEL(argsort_kernel) {
  need_io("argsort", n_in, 1, n_out, 1);
  const gn_tensor_view& x = in[0];
  const int32_t dim = wrap_dim_checked("argsort", attr_int("argsort", attrs, n_attrs, 0), x.ndim);
  const bool descending = attr_int("argsort", attrs, n_attrs, 1) != 0;
  sort_lines("argsort", x, dim, descending, x.ndim == 0 ? 1 : x.shape[dim], nullptr, &out[0]);
}

// topk(x; k, dim, largest, sorted) -> (values, indices): always sorted; ties:
// lower index first.
GN_SDK_KERNEL(topk_kernel) {
  need_io("topk", n_in, 1, n_out, 2);
  const gn_tensor_view& x = in[0];
  const int64_t k = attr_int("topk", attrs, n_attrs, 0);
  const int32_t dim = wrap_dim_checked("topk", attr_int("topk", attrs, n_attrs, 1), x.ndim);
  const bool largest = attr_int("topk", attrs, n_attrs, 2) != 0;
  sort_lines("topk", x, dim, largest, k, &out[0], &out[1]);
}

// ----------------------------------------------------------------------------
// searchsorted

// Position of v in the sorted line `line` by torch's binary search: the first i with
// line[i] >= v (right: line[i] > v), comparisons as written (a NaN compares false).
template <class K>
int64_t search_line(const std::vector<K>& line, K v, bool right) {
  int64_t lo = 0, hi = (int64_t)line.size();
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const K x = line[(size_t)mid];
    if (right ? !(x > v) : !(x >= v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// searchsorted(sorted (M) or (*, M), values; right, out_int32) -> positions of values' shape.
GN_SDK_KERNEL(searchsorted_kernel) {
  const char* op = "searchsorted";
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &s = in[0], &v = in[1], &o = out[0];
  const bool right = attr_int(op, attrs, n_attrs, 0) != 0;
  if (s.ndim < 1) fail_op(GN_ERR_SHAPE, op, "the sorted sequence must have at least one dim");
  if (numel(o) != numel(v)) fail_op(GN_ERR_SHAPE, op, "output " + shape_str(o) + " does not match " + shape_str(v));
  const bool exact = is_intlike(s.dtype) && is_intlike(v.dtype);
  // Lines of s along its last dim; a 1-D s serves every value, else line k serves the values'
  // line k (same leading dims).
  const Groups gs = line_groups(s, s.ndim - 1);
  const bool one = s.ndim == 1;
  if (!one && (v.ndim != s.ndim || numel(v) / std::max<int64_t>(v.shape[v.ndim - 1], 1) != gs.outer_n) && numel(v) != 0)
    fail_op(GN_ERR_SHAPE, op, "values " + shape_str(v) + " do not match the sorted sequence " + shape_str(s));
  const int64_t per_line = one ? numel(v) : (v.ndim ? v.shape[v.ndim - 1] : 1);
  std::vector<const char*> ps;
  std::vector<int64_t> ks;
  std::vector<double> kd;
  for (int64_t line = 0; line < (one ? 1 : gs.outer_n); ++line) {
    gs.pointers(line, ps);
    if (exact) {
      ks.resize(ps.size());
      for (size_t j = 0; j < ps.size(); ++j) ks[j] = gn::sdk::load_int(ps[j], s.dtype);
    } else {
      kd.resize(ps.size());
      for (size_t j = 0; j < ps.size(); ++j) kd[j] = gn::sdk::load(ps[j], s.dtype);
    }
    for (int64_t j = 0; j < per_line; ++j) {
      const int64_t i = line * per_line + j;
      const char* pv = gn::sdk::elem_ptr(v, i);
      const int64_t pos = exact ? search_line(ks, gn::sdk::load_int(pv, v.dtype), right)
                                : search_line(kd, gn::sdk::load(pv, v.dtype), right);
      gn::sdk::store_int(gn::sdk::elem_ptr(o, i), o.dtype, pos);
    }
  }
}

}  // namespace

void register_sort(const gn::sdk::Registrar& r) {
  r.kernel("sort", kAllDtypes, sort_kernel);
  r.kernel("argsort", kAllDtypes, argsort_kernel);
  r.kernel("topk", kNumericDtypes, topk_kernel);
  r.kernel("searchsorted", kNumericDtypes, searchsorted_kernel);
}

}  // namespace gn::reference
