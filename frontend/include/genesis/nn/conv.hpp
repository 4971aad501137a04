// genesis/nn/conv.hpp - Conv2d, MaxPool2d, AvgPool2d (NCHW).
#pragma once

#include <optional>

#include "genesis/nn/functional.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** 2-D convolution (torch.nn.Conv2d); weight kaiming_uniform(a = sqrt(5)), bias U(-1/sqrt(fan_in), ..). */
class Conv2d : public Module {
 public:
  /** in_channels -> out_channels with a kernel_size window. */
  Conv2d(int64_t in_channels, int64_t out_channels, IntPair kernel_size, IntPair stride = 1, IntPair padding = 0,
         IntPair dilation = 1, int64_t groups = 1, bool bias = true);
  /** x (N, C_in, H, W) -> (N, C_out, Ho, Wo). */
  Tensor forward(const Tensor& x) override;
  /** "Conv2d". */
  std::string name() const override { return "Conv2d"; }

  int64_t in_channels, out_channels;
  IntPair kernel_size, stride, padding, dilation;
  int64_t groups;
  Tensor weight;  // (out_channels, in_channels / groups, kh, kw)
  Tensor bias;    // (out_channels) or undefined
};

/** Max over windows (torch.nn.MaxPool2d); stride unset = kernel_size. */
class MaxPool2d : public Module {
 public:
  /** Pooling with these window parameters. */
  explicit MaxPool2d(IntPair kernel_size, std::optional<IntPair> stride = {}, IntPair padding = 0, IntPair dilation = 1,
                     bool ceil_mode = false)
      : kernel_size(kernel_size), stride(stride), padding(padding), dilation(dilation), ceil_mode(ceil_mode) {}
  /** (N, C, H, W) -> (N, C, Ho, Wo). */
  Tensor forward(const Tensor& x) override {
    return functional::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
  /** "MaxPool2d". */
  std::string name() const override { return "MaxPool2d"; }

  IntPair kernel_size;
  std::optional<IntPair> stride;
  IntPair padding, dilation;
  bool ceil_mode;
};

/** Mean over windows (torch.nn.AvgPool2d); stride unset = kernel_size. */
class AvgPool2d : public Module {
 public:
  /** Pooling with these window parameters. */
  explicit AvgPool2d(IntPair kernel_size, std::optional<IntPair> stride = {}, IntPair padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true)
      : kernel_size(kernel_size),
        stride(stride),
        padding(padding),
        ceil_mode(ceil_mode),
        count_include_pad(count_include_pad) {}
  /** (N, C, H, W) -> (N, C, Ho, Wo). */
  Tensor forward(const Tensor& x) override {
    return functional::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
  }
  /** "AvgPool2d". */
  std::string name() const override { return "AvgPool2d"; }

  IntPair kernel_size;
  std::optional<IntPair> stride;
  IntPair padding;
  bool ceil_mode, count_include_pad;
};

}  // namespace genesis::nn
