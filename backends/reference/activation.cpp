// backends/reference/activation.cpp - rope (HF rotate-half convention) and
// swiglu, forward and backward.
#include <cmath>
#include <string>

#include "dense.h"
#include "families.h"

namespace ref {
namespace {

using namespace ref::dense;
using gn::sdk::fail;

// ----------------------------------------------------------------------------
// rope
//
// x is seen as (R, D) rows; cos/sin are broadcast to x's full shape first.
// rotate_half(x)   = cat(-x[h:], x[:h])   (h = D/2)
// rotate_half_T(z) = cat(z[h:], -z[:h])   (its transpose: the backward map)

// x (R,D), cos (R,D), sin (R,D) -> y (R,D) = x*cos + rotate_half(x)*sin
void rope_forward(double* y, const double* x, const double* cos, const double* sin, int64_t R, int64_t D) {
  int64_t h = D / 2;
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = x + r * D;
    for (int64_t d = 0; d < D; ++d) {
      double rot = d < h ? -xr[d + h] : xr[d - h];
      y[r * D + d] = xr[d] * cos[r * D + d] + rot * sin[r * D + d];
    }
  }
}

// g (R,D), cos (R,D), sin (R,D) -> dx (R,D) = g*cos + rotate_half_T(g*sin)
void rope_backward(double* dx, const double* g, const double* cos, const double* sin, int64_t R, int64_t D) {
  int64_t h = D / 2;
  for (int64_t r = 0; r < R; ++r) {
    const double* gr = g + r * D;
    const double* sr = sin + r * D;
    for (int64_t d = 0; d < D; ++d) {
      double rot = d < h ? gr[d + h] * sr[d + h] : -gr[d - h] * sr[d - h];
      dx[r * D + d] = gr[d] * cos[r * D + d] + rot;
    }
  }
}

// Shared by rope and rope_backward: in (x or grad_y, cos, sin) -> out.
void rope_common(const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out, size_t n_out,
                 bool backward) {
  expect_io(op, n_in, 3, n_out, 1);
  const gn_tensor_view& x = in[0];
  if (x.ndim < 1) fail(GN_ERR_SHAPE, std::string("[") + op + "] input must be at least 1-D");
  Shape shape = shape_of(x);
  int64_t D = shape.back();
  if (D % 2 != 0) fail(GN_ERR_SHAPE, std::string("[") + op + "] last dim " + std::to_string(D) + " must be even");
  expect_shape(op, "output", out[0], shape);
  Vec xv = load_all(x);
  Vec c = load_broadcast(op, "cos", in[1], shape), s = load_broadcast(op, "sin", in[2], shape);
  int64_t R = D ? (int64_t)xv.size() / D : 0;
  Vec y(xv.size());
  if (backward) rope_backward(y.data(), xv.data(), c.data(), s.data(), R, D);
  else rope_forward(y.data(), xv.data(), c.data(), s.data(), R, D);
  store_all(out[0], y);
}

GN_SDK_KERNEL(rope_kernel) { rope_common("rope", in, n_in, out, n_out, false); }
GN_SDK_KERNEL(rope_backward_kernel) { rope_common("rope_backward", in, n_in, out, n_out, true); }

// ----------------------------------------------------------------------------
// swiglu

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// gate (n), up (n) -> y (n) = silu(gate) * up
void swiglu_forward(double* y, const double* gate, const double* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

// g (n), gate (n), up (n) -> dgate = g*up*sig*(1 + gate*(1-sig)), dup = g*silu(gate)
void swiglu_backward(double* dgate, double* dup, const double* g, const double* gate, const double* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double s = sigmoid(gate[i]);
    dgate[i] = g[i] * up[i] * s * (1.0 + gate[i] * (1.0 - s));
    dup[i] = g[i] * gate[i] * s;
  }
}

GN_SDK_KERNEL(swiglu_kernel) {
  const char* op = "swiglu";
  expect_io(op, n_in, 2, n_out, 1);
  Shape shape = shape_of(in[0]);
  expect_shape(op, "up", in[1], shape);
  expect_shape(op, "output", out[0], shape);
  Vec gate = load_all(in[0]), up = load_all(in[1]), y(gate.size());
  swiglu_forward(y.data(), gate.data(), up.data(), (int64_t)y.size());
  store_all(out[0], y);
}

GN_SDK_KERNEL(swiglu_backward_kernel) {
  const char* op = "swiglu_backward";
  expect_io(op, n_in, 3, n_out, 2);
  Shape shape = shape_of(in[1]);
  expect_shape(op, "grad", in[0], shape);
  expect_shape(op, "up", in[2], shape);
  expect_shape(op, "grad_gate", out[0], shape);
  expect_shape(op, "grad_up", out[1], shape);
  Vec g = load_all(in[0]), gate = load_all(in[1]), up = load_all(in[2]);
  Vec dgate(g.size()), dup(g.size());
  swiglu_backward(dgate.data(), dup.data(), g.data(), gate.data(), up.data(), (int64_t)g.size());
  store_all(out[0], dgate);
  store_all(out[1], dup);
}

}  // namespace

void register_activation(const gn::sdk::Registrar& r) {
  r.kernel("rope", kFloatDtypes, rope_kernel);
  r.kernel("rope_backward", kFloatDtypes, rope_backward_kernel);
  r.kernel("swiglu", kFloatDtypes, swiglu_kernel);
  r.kernel("swiglu_backward", kFloatDtypes, swiglu_backward_kernel);
}

}  // namespace ref
