// backends/cpu/ops/onednn/matmul.h - the matmul path of onednn/linalg.cpp,
// shared with linear and linear_swiglu (onednn/llm.cpp).
#pragma once

#include "loops.h"

namespace gn::cpu::onednn {

// out = a @ b with torch.matmul semantics (trans_a/trans_b transpose the last
// two dims first), any strides: a oneDNN matmul primitive (f32, bf16, f16;
// cached by dtype, dims and strides) or C++ loops (f64, i32/i64, K == 0, and
// whatever oneDNN refuses).  a, b and out of one dtype, else "unsupported".
void matmul_run(const char* op, const gn_kernel_ctx* ctx, const gn_tensor_view& a, const gn_tensor_view& b,
                const gn_tensor_view& out, bool trans_a, bool trans_b);

}  // namespace gn::cpu::onednn
