// normalization.cpp - LayerNorm, RMSNorm, BatchNorm1d/2d.
#include "genesis/nn/normalization.hpp"

#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"

namespace genesis::nn {

// ------------------------------------------------------------------ LayerNorm

LayerNorm::LayerNorm(Shape shape, double eps_, bool affine, bool has_bias)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    if (has_bias) bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return functional::layer_norm(x, normalized_shape, weight, bias, eps); }

// -------------------------------------------------------------------- RMSNorm

RMSNorm::RMSNorm(int64_t shape, std::optional<double> eps_, bool affine) : RMSNorm(shape, eps_, affine, Options{}) {}

RMSNorm::RMSNorm(int64_t shape, std::optional<double> eps_, bool affine, const Options& factory)
    : normalized_shape(shape), eps(eps_) {
  if (affine)
    weight = register_parameter("weight", init::skip_init() ? empty({shape}, factory) : ones({shape}, factory));
}

Tensor RMSNorm::forward(const Tensor& x) { return functional::rms_norm(x, {normalized_shape}, weight, eps); }

// ------------------------------------------------------------------ BatchNorm

BatchNorm::BatchNorm(int64_t c, double eps_, std::optional<double> momentum_, bool affine_, bool track)
    : num_features(c), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  if (affine) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::i64, .device = Device()}));
  }
}

void BatchNorm::reset_running_stats() {
  if (!track_running_stats) return;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  if (x.size(1) != num_features)
    throw Error(GN_ERR_SHAPE, "[" + name() + "] expected " + std::to_string(num_features) + " channels, got " +
                                  std::to_string(x.size(1)));
  Shape stat_shape(x.dim(), 1);  // (1, C, 1, ...): broadcasts per channel
  stat_shape[1] = num_features;
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  const int64_t n = x.numel() / num_features;  // values per channel

  Tensor mean, var;
  if (training_ || !track_running_stats) {
    if (training_ && n <= 1)
      throw Error(GN_ERR_INVALID_ARGUMENT, "[" + name() + "] expected more than 1 value per channel when training");
    mean = x.mean(dims);
    var = x.var(dims, 0);  // biased: used to normalise
    if (training_ && track_running_stats) {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
      const double m = momentum ? *momentum : 1.0 / num_batches_tracked.item<double>();
      running_mean.mul_(1 - m);
      running_mean.add_(mean.detach().to(running_mean.dtype()), m);
      running_var.mul_(1 - m);  // the running variance is unbiased, as torch
      running_var.add_((var.detach() * (static_cast<double>(n) / static_cast<double>(n - 1))).to(running_var.dtype()),
                       m);
    }
  } else {
    mean = running_mean;
    var = running_var;
  }
  Tensor y = (x - mean.reshape(stat_shape)) * (var + eps).rsqrt().reshape(stat_shape);
  if (affine) y = y * weight.reshape(stat_shape) + bias.reshape(stat_shape);
  return y;
}

void BatchNorm1d::check_input(const Tensor& x) const {
  if (x.dim() != 2 && x.dim() != 3)
    throw Error(GN_ERR_SHAPE, "[BatchNorm1d] expected 2-D or 3-D input, got " + std::to_string(x.dim()) + "-D");
}

void BatchNorm2d::check_input(const Tensor& x) const {
  if (x.dim() != 4)
    throw Error(GN_ERR_SHAPE, "[BatchNorm2d] expected 4-D input, got " + std::to_string(x.dim()) + "-D");
}

}  // namespace genesis::nn
