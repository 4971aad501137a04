// window.h - the sliding-window keep-masks that the decoder's attention (model.cpp) and its contexts
// (contexts.cpp) build: j > i - window besides the causal rule, from device operands only (a captured decode step
// uploads nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::models::window_mask {

// Keep-masks j > i - window (besides j <= i) from query positions qp (..., T, 1) and key positions kp (1, S) or (S);
// consts (3) int64 on the device holds 0, window, 1 (device operands: a captured decode step uploads nothing).
inline Tensor window_keep(const Tensor& qp, const Tensor& kp, const Tensor& consts) {
  const Tensor d = qp - kp;                                        // i - j
  return d.ge(consts.select(0, 0)).eq(d.lt(consts.select(0, 1)));  // 0 <= i - j < window
}

// a and b (bool keep-masks), with window_keep's consts.
inline Tensor both(const Tensor& a, const Tensor& b, const Tensor& consts) {
  return (a.to(DType::i64) + b.to(DType::i64)).gt(consts.select(0, 2));
}

// window_keep's constants on device d.
inline Tensor window_consts(int64_t window, const Device& d) {
  return tensor(std::vector<int64_t>{0, window, 1}, {3}, {.device = d});
}

}  // namespace genesis::models::window_mask
