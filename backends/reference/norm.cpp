// backends/reference/norm.cpp - layer_norm and rms_norm, forward and backward.
//
// Every op views x as (R, N): R rows (the leading dims) of N normalized
// elements (the last normalized_ndim dims, or the last dim for rms_norm).
// Statistics are computed in double with a two-pass variance.
#include <cmath>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

// Number of trailing elements that one row normalizes over.
int64_t norm_size(const char* op, const gn_tensor_view& x, int64_t normalized_ndim) {
  if (normalized_ndim < 0 || normalized_ndim > x.ndim)
    fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] normalized_ndim " + std::to_string(normalized_ndim) +
                                      " out of range for a " + std::to_string(x.ndim) + "-D input");
  return prod(shape_of(x), (size_t)(x.ndim - normalized_ndim));
}

// ----------------------------------------------------------------------------
// layer_norm

// x (R,N), w (N) or empty, b (N) or empty -> y (R,N), mean (R), rstd (R)
// y = (x - mean) * rstd * w + b, rstd = 1/sqrt(var_biased + eps)
void layer_norm_forward(double* y, double* mean, double* rstd, const double* x, const double* w, const double* b,
                        int64_t R, int64_t N, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * N;
    double m = 0.0;
    for (int64_t i = 0; i < N; ++i) m += xr[i];
    m /= (double)N;
    double v = 0.0;
    for (int64_t i = 0; i < N; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= (double)N;
    double s = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < N; ++i) {
      double o = (xr[i] - m) * s;
      if (w) o *= w[i];
      if (b) o += b[i];
      y[r * N + i] = o;
    }
    mean[r] = m;
    rstd[r] = s;
  }
}

// dy (R,N), x (R,N), mean (R), rstd (R), w (N) or empty -> dx (R,N), dw (N), db (N)
// xhat = (x-mean)*rstd, dxhat = dy*w
// dx = rstd * (dxhat - mean(dxhat) - xhat*mean(dxhat*xhat)); dw = sum_r dy*xhat; db = sum_r dy
void layer_norm_backward(double* dx, double* dw, double* db, const double* dy, const double* x, const double* mean,
                         const double* rstd, const double* w, int64_t R, int64_t N) {
  for (int64_t i = 0; i < N; ++i) dw[i] = db[i] = 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * N;
    const double* gr = dy + r * N;
    double m = mean[r], s = rstd[r];
    double sum_d = 0.0, sum_dx = 0.0;
    for (int64_t i = 0; i < N; ++i) {
      double xhat = (xr[i] - m) * s;
      double d = gr[i] * (w ? w[i] : 1.0);
      sum_d += d;
      sum_dx += d * xhat;
      dw[i] += gr[i] * xhat;
      db[i] += gr[i];
    }
    double mean_d = sum_d / (double)N, mean_dx = sum_dx / (double)N;
    for (int64_t i = 0; i < N; ++i) {
      double xhat = (xr[i] - m) * s;
      double d = gr[i] * (w ? w[i] : 1.0);
      dx[r * N + i] = s * (d - mean_d - xhat * mean_dx);
    }
  }
}

// in: x, [weight, [bias]]; out: y, mean, rstd; attrs: normalized_ndim, eps
GN_SDK_KERNEL(layer_norm_kernel) {
  const char* op = "layer_norm";
  expect_io(op, n_in, 1, n_out, 1);
  int64_t N = norm_size(op, in[0], attr_int(op, attrs, n_attrs, 0));
  double eps = attr_float(op, attrs, n_attrs, 1);
  int64_t R = N ? numel(in[0]) / N : 0;
  expect_shape(op, "y", out[0], shape_of(in[0]));
  Vec x = load_all(in[0]), w, b;
  if (n_in > 1) {
    expect_numel(op, "weight", in[1], N);
    w = load_all(in[1]);
  }
  if (n_in > 2) {
    expect_numel(op, "bias", in[2], N);
    b = load_all(in[2]);
  }
  if (n_out > 1) expect_numel(op, "mean", out[1], R);
  if (n_out > 2) expect_numel(op, "rstd", out[2], R);
  Vec y(x.size()), mean((size_t)R), rstd((size_t)R);
  layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), n_in > 1 ? w.data() : nullptr,
                     n_in > 2 ? b.data() : nullptr, R, N, eps);
  store_all(out[0], y);
  if (n_out > 1) store_all(out[1], mean);
  if (n_out > 2) store_all(out[2], rstd);
}

// in: grad_y, x, mean, rstd, [weight]; out: grad_x, grad_weight, grad_bias; attrs: normalized_ndim
GN_SDK_KERNEL(layer_norm_backward_kernel) {
  const char* op = "layer_norm_backward";
  expect_io(op, n_in, 4, n_out, 1);
  int64_t N = norm_size(op, in[1], attr_int(op, attrs, n_attrs, 0));
  int64_t R = N ? numel(in[1]) / N : 0;
  expect_shape(op, "grad_y", in[0], shape_of(in[1]));
  expect_numel(op, "mean", in[2], R);
  expect_numel(op, "rstd", in[3], R);
  expect_shape(op, "grad_x", out[0], shape_of(in[1]));
  Vec w;
  if (n_in > 4) {
    expect_numel(op, "weight", in[4], N);
    w = load_all(in[4]);
  }
  if (n_out > 1) expect_numel(op, "grad_weight", out[1], N);
  if (n_out > 2) expect_numel(op, "grad_bias", out[2], N);
  Vec dy = load_all(in[0]), x = load_all(in[1]), mean = load_all(in[2]), rstd = load_all(in[3]);
  Vec dx(x.size()), dw((size_t)N), db((size_t)N);
  layer_norm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), mean.data(), rstd.data(),
                      n_in > 4 ? w.data() : nullptr, R, N);
  store_all(out[0], dx);
  if (n_out > 1) store_all(out[1], dw);
  if (n_out > 2) store_all(out[2], db);
}

// ----------------------------------------------------------------------------
// rms_norm

// x (R,N), w (N) or empty -> y (R,N), rstd (R); y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps)
void rms_norm_forward(double* y, double* rstd, const double* x, const double* w, int64_t R, int64_t N, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * N;
    double ss = 0.0;
    for (int64_t i = 0; i < N; ++i) ss += xr[i] * xr[i];
    double s = 1.0 / std::sqrt(ss / (double)N + eps);
    for (int64_t i = 0; i < N; ++i) y[r * N + i] = xr[i] * s * (w ? w[i] : 1.0);
    rstd[r] = s;
  }
}

// dy (R,N), x (R,N), rstd (R), w (N) or empty -> dx (R,N), dw (N)
// dx = rstd*dy*w - x * rstd^3/N * sum(dy*w*x);  dw = sum_r dy*x*rstd
void rms_norm_backward(double* dx, double* dw, const double* dy, const double* x, const double* rstd, const double* w,
                       int64_t R, int64_t N) {
  for (int64_t i = 0; i < N; ++i) dw[i] = 0.0;
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * N;
    const double* gr = dy + r * N;
    double s = rstd[r];
    double dot = 0.0;
    for (int64_t i = 0; i < N; ++i) {
      dot += gr[i] * (w ? w[i] : 1.0) * xr[i];
      dw[i] += gr[i] * xr[i] * s;
    }
    double c = s * s * s * dot / (double)N;
    for (int64_t i = 0; i < N; ++i) dx[r * N + i] = s * gr[i] * (w ? w[i] : 1.0) - xr[i] * c;
  }
}

// in: x, [weight]; out: y, rstd; attrs: eps
GN_SDK_KERNEL(rms_norm_kernel) {
  const char* op = "rms_norm";
  expect_io(op, n_in, 1, n_out, 1);
  int64_t N = norm_size(op, in[0], 1);
  int64_t R = N ? numel(in[0]) / N : 0;
  double eps = attr_float(op, attrs, n_attrs, 0);
  expect_shape(op, "y", out[0], shape_of(in[0]));
  Vec x = load_all(in[0]), w;
  if (n_in > 1) {
    expect_numel(op, "weight", in[1], N);
    w = load_all(in[1]);
  }
  if (n_out > 1) expect_numel(op, "rstd", out[1], R);
  Vec y(x.size()), rstd((size_t)R);
  rms_norm_forward(y.data(), rstd.data(), x.data(), n_in > 1 ? w.data() : nullptr, R, N, eps);
  store_all(out[0], y);
  if (n_out > 1) store_all(out[1], rstd);
}

// in: grad_y, x, rstd, [weight]; out: grad_x, grad_weight
GN_SDK_KERNEL(rms_norm_backward_kernel) {
  const char* op = "rms_norm_backward";
  expect_io(op, n_in, 3, n_out, 1);
  int64_t N = norm_size(op, in[1], 1);
  int64_t R = N ? numel(in[1]) / N : 0;
  expect_shape(op, "grad_y", in[0], shape_of(in[1]));
  expect_numel(op, "rstd", in[2], R);
  expect_shape(op, "grad_x", out[0], shape_of(in[1]));
  Vec w;
  if (n_in > 3) {
    expect_numel(op, "weight", in[3], N);
    w = load_all(in[3]);
  }
  if (n_out > 1) expect_numel(op, "grad_weight", out[1], N);
  Vec dy = load_all(in[0]), x = load_all(in[1]), rstd = load_all(in[2]);
  Vec dx(x.size()), dw((size_t)N);
  rms_norm_backward(dx.data(), dw.data(), dy.data(), x.data(), rstd.data(), n_in > 3 ? w.data() : nullptr, R, N);
  store_all(out[0], dx);
  if (n_out > 1) store_all(out[1], dw);
}

}  // namespace

void register_norm(const gn::sdk::Registrar& r) {
  r.kernel("layer_norm", kFloatDtypes, layer_norm_kernel);
  r.kernel("layer_norm_backward", kFloatDtypes, layer_norm_backward_kernel);
  r.kernel("rms_norm", kFloatDtypes, rms_norm_kernel);
  r.kernel("rms_norm_backward", kFloatDtypes, rms_norm_backward_kernel);
}

}  // namespace gn::reference
