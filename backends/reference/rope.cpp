// backends/reference/rope.cpp - rope (HF rotate-half convention), forward and
// backward.
#include <string>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
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
  if (backward)
    rope_backward(y.data(), xv.data(), c.data(), s.data(), R, D);
  else
    rope_forward(y.data(), xv.data(), c.data(), s.data(), R, D);
  store_all(out[0], y);
}

GN_SDK_KERNEL(rope_kernel) { rope_common("rope", in, n_in, out, n_out, false); }
GN_SDK_KERNEL(rope_backward_kernel) { rope_common("rope_backward", in, n_in, out, n_out, true); }

}  // namespace

void register_rope(const gn::sdk::Registrar& r) {
  r.kernel("rope", kFloatDtypes, rope_kernel);
  r.kernel("rope_backward", kFloatDtypes, rope_backward_kernel);
}

}  // namespace gn::reference
