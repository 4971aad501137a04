// backends/reference/loss.cpp - cross_entropy with the class dim LAST, as
// torch.nn.functional.cross_entropy(logits.reshape(-1, C), target.reshape(-1),
// ignore_index, label_smoothing, reduction) computes it.
//
// Per row i with target t (not ignore_index), lse_i = logsumexp(x_i):
//   loss_i = (1-ls) * (lse_i - x_i[t]) + ls * mean_c(lse_i - x_i[c])
// ignored rows: loss_i = 0 and they do not count for the mean.
// reduction 0: loss (*) per row; 1: sum / (number of non-ignored rows), 0/0 =
// NaN like torch; 2: sum.  lse is written for every row, ignored ones too.
// Backward: grad_i = scale_i * (softmax(x_i) - (1-ls)*onehot(t) - ls/C), 0 for
// ignored rows; scale_i = grad_loss[i] (none), grad_loss/count (mean),
// grad_loss (sum).  The backward recomputes the softmax from the logits in
// double (the lse input is only shape-checked): the exact gradient.
// A target outside [0, C) that is not ignore_index is GN_ERR_INDEX.
#include <cmath>
#include <limits>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

// logsumexp of one row (NaN propagates; all -inf gives -inf; +inf gives +inf).
double row_lse(const double* x, int64_t C) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) {
    if (std::isnan(x[c])) return x[c];
    if (x[c] > m) m = x[c];
  }
  if (std::isinf(m)) return m;
  double s = 0.0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(x[c] - m);
  return m + std::log(s);
}

struct CeShape {
  int64_t R = 0, C = 0;  // rows, classes
};

// Checks logits (*, C) against target (*) and every target value.
CeShape check_inputs(const char* op, const gn_tensor_view& logits, const gn_tensor_view& target,
                     const std::vector<int64_t>& t, int64_t ignore_index) {
  if (logits.ndim < 1) fail(GN_ERR_SHAPE, std::string("[") + op + "] logits must be at least 1-D");
  Shape ls = shape_of(logits);
  CeShape s;
  s.C = ls.back();
  ls.pop_back();
  expect_shape(op, "target", target, ls);
  if (!gn_dtype_is_int(target.dtype))
    fail(GN_ERR_DTYPE,
         std::string("[") + op + "] target must be an integer tensor, got " + gn_dtype_name(target.dtype));
  s.R = prod(ls);
  for (int64_t v : t)
    if (v != ignore_index && (v < 0 || v >= s.C))
      fail(GN_ERR_INDEX,
           std::string("[") + op + "] target " + std::to_string(v) + " out of range [0, " + std::to_string(s.C) + ")");
  return s;
}

// The attributes of cross_entropy and its backward: ignore_index, label_smoothing, reduction.
struct CeAttrs {
  int64_t ignore;
  double ls;
  int64_t reduction;
};

CeAttrs ce_attrs(const char* op, const gn_attr_value* attrs, size_t n_attrs) {
  CeAttrs a{attr_int(op, attrs, n_attrs, 0), attr_float(op, attrs, n_attrs, 1), attr_int(op, attrs, n_attrs, 2)};
  if (a.reduction < 0 || a.reduction > 2)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] reduction must be 0, 1 or 2");
  return a;
}

// The loss or its gradient, v (`role`): target's shape without a reduction, one element with one.
void expect_loss_shape(const char* op, const char* role, const gn_tensor_view& v, const gn_tensor_view& target,
                       int64_t reduction) {
  if (reduction == 0)
    expect_shape(op, role, v, shape_of(target));
  else
    expect_numel(op, role, v, 1);
}

// ----------------------------------------------------------------------------
// forward

// x (R,C), t (R) -> loss (R) per row (0 for ignored), lse (R); returns the
// number of non-ignored rows.
int64_t cross_entropy_forward(double* loss, double* lse, const double* x, const int64_t* t, int64_t R, int64_t C,
                              int64_t ignore_index, double ls) {
  int64_t count = 0;
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * C;
    lse[r] = row_lse(xr, C);
    if (t[r] == ignore_index) {
      loss[r] = 0.0;
      continue;
    }
    ++count;
    double nll = lse[r] - xr[t[r]];
    double smooth = 0.0;
    if (ls != 0.0) {
      for (int64_t c = 0; c < C; ++c) smooth += lse[r] - xr[c];
      smooth /= (double)C;
    }
    loss[r] = (1.0 - ls) * nll + ls * smooth;
  }
  return count;
}

// in: logits (*,C), target (*); out: loss, lse (*); attrs: ignore_index, label_smoothing, reduction
GN_SDK_KERNEL(cross_entropy_kernel) {
  const char* op = "cross_entropy";
  expect_io(op, n_in, 2, n_out, 1);
  const auto [ignore, ls, reduction] = ce_attrs(op, attrs, n_attrs);
  std::vector<int64_t> t = load_ints(in[1]);
  CeShape s = check_inputs(op, in[0], in[1], t, ignore);
  expect_loss_shape(op, "loss", out[0], in[1], reduction);
  if (n_out > 1) expect_shape(op, "lse", out[1], shape_of(in[1]));
  Vec x = load_all(in[0]), loss((size_t)s.R), lse((size_t)s.R);
  int64_t count = cross_entropy_forward(loss.data(), lse.data(), x.data(), t.data(), s.R, s.C, ignore, ls);
  if (reduction == 0) {
    store_all(out[0], loss);
  } else {
    double sum = 0.0;
    for (double v : loss) sum += v;
    store_all(out[0], Vec{reduction == 1 ? sum / (double)count : sum});
  }
  if (n_out > 1) store_all(out[1], lse);
}

// ----------------------------------------------------------------------------
// backward

// scale (R), x (R,C), t (R) -> dx (R,C) = scale*(softmax(x) - (1-ls)*onehot(t) - ls/C)
void cross_entropy_backward(double* dx, const double* scale, const double* x, const int64_t* t, int64_t R, int64_t C,
                            int64_t ignore_index, double ls) {
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * C;
    double* dr = dx + r * C;
    if (t[r] == ignore_index) {
      for (int64_t c = 0; c < C; ++c) dr[c] = 0.0;
      continue;
    }
    double lse = row_lse(xr, C);
    for (int64_t c = 0; c < C; ++c) {
      double p = std::exp(xr[c] - lse);
      dr[c] = scale[r] * (p - (c == t[r] ? 1.0 - ls : 0.0) - ls / (double)C);
    }
  }
}

// in: grad_loss, logits (*,C), target (*), lse (*); out: grad_logits
GN_SDK_KERNEL(cross_entropy_backward_kernel) {
  const char* op = "cross_entropy_backward";
  expect_io(op, n_in, 4, n_out, 1);
  const auto [ignore, ls, reduction] = ce_attrs(op, attrs, n_attrs);
  std::vector<int64_t> t = load_ints(in[2]);
  CeShape s = check_inputs(op, in[1], in[2], t, ignore);
  expect_shape(op, "lse", in[3], shape_of(in[2]));
  expect_shape(op, "grad_logits", out[0], shape_of(in[1]));
  expect_loss_shape(op, "grad_loss", in[0], in[2], reduction);
  Vec g = load_all(in[0]), scale((size_t)s.R);
  int64_t count = 0;
  for (int64_t v : t) count += v != ignore;
  for (int64_t r = 0; r < s.R; ++r)
    scale[(size_t)r] = reduction == 0 ? g[(size_t)r] : reduction == 1 ? g[0] / (double)count : g[0];
  Vec x = load_all(in[1]), dx(x.size());
  cross_entropy_backward(dx.data(), scale.data(), x.data(), t.data(), s.R, s.C, ignore, ls);
  store_all(out[0], dx);
}

}  // namespace

void register_loss(const gn::sdk::Registrar& r) {
  r.kernel("cross_entropy", kFloatDtypes, cross_entropy_kernel);
  r.kernel("cross_entropy_backward", kFloatDtypes, cross_entropy_backward_kernel);
}

}  // namespace gn::reference
