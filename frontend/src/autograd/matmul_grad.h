// matmul_grad.h - the operand shapes shared by matmul's backward rules (first and higher order).
#pragma once

#include "genesis/tensor.hpp"

namespace genesis::autograd {

/** matmul's operands as the (..., M, K) @ (..., K, N) product that ran, and its gradient G. */
struct MatmulOperands {
  Tensor A, B, G;
};

/** 1-D a and b were promoted to (1, K) / (K, 1) and the unit dim dropped from the result: restore both on g. */
inline MatmulOperands matmul_operands(const Tensor& a, const Tensor& b, const Tensor& g) {
  MatmulOperands m{a.dim() == 1 ? a.unsqueeze(0) : a, b.dim() == 1 ? b.unsqueeze(-1) : b, g};
  if (a.dim() == 1 && b.dim() == 1)
    m.G = g.reshape({1, 1});
  else if (a.dim() == 1)
    m.G = g.unsqueeze(-2);
  else if (b.dim() == 1)
    m.G = g.unsqueeze(-1);
  return m;
}

}  // namespace genesis::autograd
