// genesis/optim/clip_grad.hpp - gradient clipping (torch.nn.utils.clip_grad_norm_,
// clip_grad_value_).  The norm is one fused multi_sum_sq over all gradients; the
// coefficient stays on the device, so nothing syncs until the caller reads it.
#pragma once

#include <limits>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::nn::utils {

/** Scales the gradients of params so their total norm is at most max_norm; returns the
 * total norm (before clipping) as a 0-d tensor, without a host sync. norm_type may be inf. */
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/** Clamps every gradient of params to [-clip_value, clip_value] in place. */
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace genesis::nn::utils

namespace genesis {
using nn::utils::clip_grad_norm_;
using nn::utils::clip_grad_value_;
}  // namespace genesis
