// backends/reference/activation.cpp - swiglu, forward and backward.
#include <cmath>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;

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
  r.kernel("swiglu", kFloatDtypes, swiglu_kernel);
  r.kernel("swiglu_backward", kFloatDtypes, swiglu_backward_kernel);
}

}  // namespace gn::reference
