// backends/reference/softmax.cpp - softmax, log_softmax and their backward.
//
// Every op works on lines along `dim`: x (..., L, ...) is seen as outer_n
// lines of L elements (any strides); the output has x's shape and is walked
// with the same line layout.  Computed in double with the max subtracted.
#include <cmath>
#include <cstdint>
#include <vector>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::load;
using gn::sdk::store;

// Fail unless v has exactly ref's shape.
void same_shape(const char* op, const gn_tensor_view& v, const gn_tensor_view& like) {
  bool ok = v.ndim == like.ndim;
  for (int32_t d = 0; ok && d < v.ndim; ++d) ok = v.shape[d] == like.shape[d];
  if (!ok) fail_op(GN_ERR_SHAPE, op, "shapes " + shape_str(v) + " and " + shape_str(like) + " differ");
}

// softmax / log_softmax(x; dim, dtype) -> y (x's shape).
void softmax_forward(const char* op, bool log, const gn_tensor_view& x, const gn_tensor_view& y,
                     const gn_attr_value* attrs, size_t n_attrs) {
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), x.ndim);
  same_shape(op, y, x);
  const Groups gx = line_groups(x, dim), gy = line_groups(y, dim);
  std::vector<const char*> px, py;
  std::vector<double> v;
  for (int64_t o = 0; o < gx.outer_n; ++o) {
    gx.pointers(o, px);
    gy.pointers(o, py);
    v.resize(px.size());
    double m = -INFINITY;
    for (size_t j = 0; j < px.size(); ++j) {
      v[j] = load(px[j], x.dtype);
      if (v[j] > m || std::isnan(v[j])) m = std::isnan(m) ? m : v[j];
    }
    double s = 0.0;
    for (double e : v) s += std::exp(e - m);
    for (size_t j = 0; j < v.size(); ++j) {
      double r = log ? v[j] - m - std::log(s) : std::exp(v[j] - m) / s;
      store((char*)py[j], y.dtype, r);
    }
  }
}

GN_SDK_KERNEL(softmax_kernel) {
  need_io("softmax", n_in, 1, n_out, 1);
  softmax_forward("softmax", false, in[0], out[0], attrs, n_attrs);
}

GN_SDK_KERNEL(log_softmax_kernel) {
  need_io("log_softmax", n_in, 1, n_out, 1);
  softmax_forward("log_softmax", true, in[0], out[0], attrs, n_attrs);
}

// softmax_backward(g, y; dim)     -> gx = y*(g - sum(g*y))
// log_softmax_backward(g, y; dim) -> gx = g - exp(y)*sum(g)
void softmax_backward(const char* op, bool log, const gn_tensor_view& g, const gn_tensor_view& y,
                      const gn_tensor_view& gx, const gn_attr_value* attrs, size_t n_attrs) {
  const int32_t dim = wrap_dim_checked(op, attr_int(op, attrs, n_attrs, 0), y.ndim);
  same_shape(op, g, y);
  same_shape(op, gx, y);
  const Groups gg = line_groups(g, dim), gy = line_groups(y, dim), go = line_groups(gx, dim);
  std::vector<const char*> pg, py, po;
  for (int64_t o = 0; o < gy.outer_n; ++o) {
    gg.pointers(o, pg);
    gy.pointers(o, py);
    go.pointers(o, po);
    double s = 0.0;
    for (size_t j = 0; j < pg.size(); ++j)
      s += log ? load(pg[j], g.dtype) : load(pg[j], g.dtype) * load(py[j], y.dtype);
    for (size_t j = 0; j < pg.size(); ++j) {
      double gv = load(pg[j], g.dtype), yv = load(py[j], y.dtype);
      store((char*)po[j], gx.dtype, log ? gv - std::exp(yv) * s : yv * (gv - s));
    }
  }
}

GN_SDK_KERNEL(softmax_backward_kernel) {
  need_io("softmax_backward", n_in, 2, n_out, 1);
  softmax_backward("softmax_backward", false, in[0], in[1], out[0], attrs, n_attrs);
}

GN_SDK_KERNEL(log_softmax_backward_kernel) {
  need_io("log_softmax_backward", n_in, 2, n_out, 1);
  softmax_backward("log_softmax_backward", true, in[0], in[1], out[0], attrs, n_attrs);
}

}  // namespace

void register_softmax(const gn::sdk::Registrar& r) {
  // int/bool x: computed in double, stored in y's (float) dtype.
  r.kernel("softmax", kAllDtypes, softmax_kernel);
  r.kernel("log_softmax", kAllDtypes, log_softmax_kernel);
  r.kernel("softmax_backward", kFloatingDtypes, softmax_backward_kernel);
  r.kernel("log_softmax_backward", kFloatingDtypes, log_softmax_backward_kernel);
}

}  // namespace gn::reference
