// backends/cpu/ops/conv_loops.h - conv2d geometry shared by the oneDNN path
// (conv.cpp) and the direct C++ loops (conv_loops.cpp).
#pragma once

#include "loops.h"

namespace gn::cpu {

// NCHW conv geometry: x (N,C,H,W), w (O,Cg,KH,KW) with Cg = C/G, strides,
// paddings, dilations, output (Ho, Wo) by torch's floor formula.
struct ConvShape {
  int64_t N, C, H, W, O, Cg, KH, KW, G, sh, sw, ph, pw, dh, dw, Ho, Wo;
};

// Dense views of the conv's dtype (f32, f64, f16, bf16); bias/gx/gw/gb may be null.
void conv2d_loops(const ConvShape& p, const gn_tensor_view& x, const gn_tensor_view& w, const gn_tensor_view* bias,
                  const gn_tensor_view& y);
void conv2d_backward_loops(const ConvShape& p, const gn_tensor_view& gy, const gn_tensor_view& x,
                           const gn_tensor_view& w, const gn_tensor_view* gx, const gn_tensor_view* gw,
                           const gn_tensor_view* gb);

}  // namespace gn::cpu
