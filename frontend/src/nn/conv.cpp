// conv.cpp - Conv2d (pooling modules are inline in conv.hpp).
#include "genesis/nn/conv.hpp"

#include <cmath>

#include "genesis/nn/init.hpp"

namespace genesis::nn {

Conv2d::Conv2d(int64_t in, int64_t out, IntPair k, IntPair s, IntPair p, IntPair d, int64_t g, bool has_bias)
    : in_channels(in), out_channels(out), kernel_size(k), stride(s), padding(p), dilation(d), groups(g) {
  if (g <= 0 || in % g || out % g)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[Conv2d] in_channels and out_channels must be divisible by groups");
  weight = register_parameter("weight", empty({out, in / g, k.h, k.w}));
  if (has_bias) bias = register_parameter("bias", empty({out}));
  // torch's reset_parameters: kaiming_uniform(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = in / g * k.h * k.w;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  return functional::conv2d(x, weight, bias, stride, padding, dilation, groups);
}

}  // namespace genesis::nn
