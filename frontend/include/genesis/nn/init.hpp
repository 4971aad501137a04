// genesis/nn/init.hpp - in-place parameter initialisers (torch.nn.init).
//
// Each fills its tensor in place (without recording autograd) from the
// default generator of the tensor's device, so genesis::manual_seed makes
// initialisation reproducible.  Fans follow torch: fan_in = size(1) * the
// receptive field (product of dims 2..), fan_out = size(0) * the same.
#pragma once

#include <string>
#include <utility>

#include "genesis/tensor.hpp"

namespace genesis::nn::init {

/** While alive on this thread, layer constructors allocate their parameters but skip the random
 * initialisation (transformers' no_init_weights): for models whose weights are loaded next. */
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;

 private:
  bool prev_;
};
/** True inside a SkipInitGuard. */
bool skip_init();

/** Recommended gain for a nonlinearity ("linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"). */
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
/** (fan_in, fan_out) of a weight with at least 2 dims. */
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

/** Fills t with U(a, b); returns t. */
Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
/** Fills t with N(mean, std^2); returns t. */
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
/** Fills t with val; returns t. */
Tensor& constant_(Tensor& t, double val);
/** Fills t with 0; returns t. */
Tensor& zeros_(Tensor& t);
/** Fills t with 1; returns t. */
Tensor& ones_(Tensor& t);
/** Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)); returns t. */
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
/** Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)); returns t. */
Tensor& xavier_normal_(Tensor& t, double gain = 1);
/** He uniform: U(-b, b), b = gain(nonlinearity, a) * sqrt(3 / fan); mode "fan_in" or "fan_out"; returns t. */
Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
/** He normal: N(0, std^2), std = gain(nonlinearity, a) / sqrt(fan); returns t. */
Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");

}  // namespace genesis::nn::init
