// backends/reference/optim.cpp - optimizer steps (in place, as torch.optim 1.13
// single-tensor code computes them) and the multi-tensor helpers of grad
// clipping and AMP.  Every tensor is read and written in its own dtype and
// through its own strides; elements pair up in row-major order.
#include <cmath>
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

// ----------------------------------------------------------------------------
// sgd_step

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  int64_t step;
};

// param (n), grad (n), buf (n) or null (momentum 0), in place:
//   d = (maximize ? -grad : grad) + wd*param
//   momentum: buf = (step == 1) ? d : momentum*buf + (1-dampening)*d
//             d = nesterov ? d + momentum*buf : buf
//   param -= lr*d
void sgd_step(double* param, const double* grad, double* buf, int64_t n, const SgdHyper& h) {
  for (int64_t i = 0; i < n; ++i) {
    double d = h.maximize ? -grad[i] : grad[i];
    if (h.weight_decay != 0.0) d += h.weight_decay * param[i];
    if (h.momentum != 0.0) {
      buf[i] = h.step == 1 ? d : h.momentum * buf[i] + (1.0 - h.dampening) * d;
      d = h.nesterov ? d + h.momentum * buf[i] : buf[i];
    }
    param[i] -= h.lr * d;
  }
}

// in: param, grad, [momentum_buf] (all updated in place); attrs: lr, momentum,
// dampening, weight_decay, nesterov, maximize, step
GN_SDK_KERNEL(sgd_step_kernel) {
  const char* op = "sgd_step";
  expect_io(op, n_in, 2, n_out, 0);
  SgdHyper h{attr_float(op, attrs, n_attrs, 0),    attr_float(op, attrs, n_attrs, 1),
             attr_float(op, attrs, n_attrs, 2),    attr_float(op, attrs, n_attrs, 3),
             attr_int(op, attrs, n_attrs, 4) != 0, attr_int(op, attrs, n_attrs, 5) != 0,
             attr_int(op, attrs, n_attrs, 6)};
  if (h.step < 1) fail(GN_ERR_INVALID_ARGUMENT, "[sgd_step] step counts from 1, got " + std::to_string(h.step));
  if (h.nesterov && (h.momentum <= 0.0 || h.dampening != 0.0))
    fail(GN_ERR_INVALID_ARGUMENT, "[sgd_step] nesterov needs momentum > 0 and dampening 0");
  bool use_buf = h.momentum != 0.0;
  if (use_buf && n_in < 3) fail(GN_ERR_INVALID_ARGUMENT, "[sgd_step] momentum needs a momentum_buf input");
  Shape shape = shape_of(in[0]);
  expect_shape(op, "grad", in[1], shape);
  if (use_buf) expect_shape(op, "momentum_buf", in[2], shape);
  Vec p = load_all(in[0]), g = load_all(in[1]), buf;
  if (use_buf) buf = load_all(in[2]);
  sgd_step(p.data(), g.data(), use_buf ? buf.data() : nullptr, (int64_t)p.size(), h);
  if (use_buf) store_all(in[2], buf);
  store_all(in[0], p);
}

// ----------------------------------------------------------------------------
// adamw_step

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;
  bool decoupled, maximize;
};

// param (n), grad (n), m (n), v (n), in place:
//   g = maximize ? -grad : grad
//   decoupled (AdamW): param *= 1 - lr*wd;  else (Adam): g += wd*param
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
//   param -= lr/(1-b1^step) * m / (sqrt(v)/sqrt(1-b2^step) + eps)
void adamw_step(double* param, const double* grad, double* m, double* v, int64_t n, const AdamHyper& h) {
  double bc1 = 1.0 - std::pow(h.beta1, (double)h.step);
  double bc2 = 1.0 - std::pow(h.beta2, (double)h.step);
  for (int64_t i = 0; i < n; ++i) {
    double g = h.maximize ? -grad[i] : grad[i];
    if (h.decoupled)
      param[i] *= 1.0 - h.lr * h.weight_decay;
    else if (h.weight_decay != 0.0)
      g += h.weight_decay * param[i];
    m[i] = h.beta1 * m[i] + (1.0 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1.0 - h.beta2) * g * g;
    param[i] -= (h.lr / bc1) * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + h.eps);
  }
}

// in: param, grad, exp_avg, exp_avg_sq (updated in place); attrs: lr, beta1,
// beta2, eps, weight_decay, step, decoupled, maximize
GN_SDK_KERNEL(adamw_step_kernel) {
  const char* op = "adamw_step";
  expect_io(op, n_in, 4, n_out, 0);
  AdamHyper h{attr_float(op, attrs, n_attrs, 0),    attr_float(op, attrs, n_attrs, 1),
              attr_float(op, attrs, n_attrs, 2),    attr_float(op, attrs, n_attrs, 3),
              attr_float(op, attrs, n_attrs, 4),    attr_int(op, attrs, n_attrs, 5),
              attr_int(op, attrs, n_attrs, 6) != 0, attr_int(op, attrs, n_attrs, 7) != 0};
  if (h.step < 1) fail(GN_ERR_INVALID_ARGUMENT, "[adamw_step] step counts from 1, got " + std::to_string(h.step));
  Shape shape = shape_of(in[0]);
  expect_shape(op, "grad", in[1], shape);
  expect_shape(op, "exp_avg", in[2], shape);
  expect_shape(op, "exp_avg_sq", in[3], shape);
  Vec p = load_all(in[0]), g = load_all(in[1]), m = load_all(in[2]), v = load_all(in[3]);
  adamw_step(p.data(), g.data(), m.data(), v.data(), (int64_t)p.size(), h);
  store_all(in[2], m);
  store_all(in[3], v);
  store_all(in[0], p);
}

// ----------------------------------------------------------------------------
// multi-tensor helpers

// A 0-d (one-element) input as a double.
double scalar_input(const char* op, const char* what, const gn_tensor_view& t) {
  expect_numel(op, what, t, 1);
  return load_all(t)[0];
}

// in: t0, t1, ... (any shapes, strides, float dtypes); out: 0-d sum of squares
GN_SDK_KERNEL(multi_sum_sq_kernel) {
  const char* op = "multi_sum_sq";
  expect_io(op, n_in, 1, n_out, 1);
  expect_numel(op, "output", out[0], 1);
  double acc = 0.0;
  for (size_t t = 0; t < n_in; ++t)
    for (double x : load_all(in[t])) acc += x * x;
  store_all(out[0], Vec{acc});
}

// in: scale (0-d), t1, t2, ...: each ti *= scale in place
GN_SDK_KERNEL(multi_scale_kernel) {
  const char* op = "multi_scale_";
  expect_io(op, n_in, 1, n_out, 0);
  double scale = scalar_input(op, "scale", in[0]);
  for (size_t t = 1; t < n_in; ++t) {
    Vec x = load_all(in[t]);
    for (double& e : x) e *= scale;
    store_all(in[t], x);
  }
}

// in: inv_scale (0-d), found_inf (0-d f32), t2, ...: ti *= inv_scale in place;
// found_inf = 1 when any element of any ti is inf or NaN (else unchanged)
GN_SDK_KERNEL(multi_unscale_check_kernel) {
  const char* op = "multi_unscale_check_";
  expect_io(op, n_in, 2, n_out, 0);
  double inv_scale = scalar_input(op, "inv_scale", in[0]);
  expect_numel(op, "found_inf", in[1], 1);
  expect_float(op, "found_inf", in[1]);
  bool found = false;
  for (size_t t = 2; t < n_in; ++t) {
    Vec x = load_all(in[t]);
    for (double& e : x) {
      if (!std::isfinite(e)) found = true;
      e *= inv_scale;
    }
    store_all(in[t], x);
  }
  if (found) store_all(in[1], Vec{1.0});
}

}  // namespace

void register_optim(const gn::sdk::Registrar& r) {
  r.kernel("sgd_step", kFloatDtypes, sgd_step_kernel);
  r.kernel("adamw_step", kFloatDtypes, adamw_step_kernel);
  r.kernel("multi_sum_sq", kFloatDtypes, multi_sum_sq_kernel);
  r.kernel("multi_scale_", kFloatDtypes, multi_scale_kernel);
  r.kernel("multi_unscale_check_", kFloatDtypes, multi_unscale_check_kernel);
}

}  // namespace gn::reference
