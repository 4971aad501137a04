// genesis/nn/normalization.hpp - LayerNorm, RMSNorm, BatchNorm1d, BatchNorm2d.
#pragma once

#include <optional>

#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** Normalises over the trailing normalized_shape dims (torch.nn.LayerNorm); weight 1, bias 0. */
class LayerNorm : public Module {
 public:
  /** Over one trailing dim of size normalized_shape. */
  explicit LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true)
      : LayerNorm(Shape{normalized_shape}, eps, elementwise_affine, bias) {}
  /** Over the trailing dims normalized_shape. */
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override;
  /** "LayerNorm". */
  std::string name() const override { return "LayerNorm"; }

  Shape normalized_shape;
  double eps;
  Tensor weight;  // (normalized_shape) or undefined
  Tensor bias;    // (normalized_shape) or undefined
};

/** x / sqrt(mean(x^2) + eps) * weight over the last dim (torch.nn.RMSNorm); eps unset = dtype epsilon. */
class RMSNorm : public Module {
 public:
  /** Over a last dim of size normalized_shape. */
  explicit RMSNorm(int64_t normalized_shape, std::optional<double> eps = {}, bool elementwise_affine = true);
  /** Same, with the weight created with factory's dtype and device. */
  RMSNorm(int64_t normalized_shape, std::optional<double> eps, bool elementwise_affine, const Options& factory);
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override;
  /** "RMSNorm". */
  std::string name() const override { return "RMSNorm"; }

  int64_t normalized_shape;
  std::optional<double> eps;
  Tensor weight;  // (normalized_shape) or undefined
};

/** Shared BatchNorm logic: per-channel (dim 1) batch statistics in training, running ones in eval. */
class BatchNorm : public Module {
 public:
  /** num_features channels; momentum unset = cumulative average (torch's momentum=None). */
  BatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine, bool track_running_stats);
  /** Same shape as x; updates running_mean/var and num_batches_tracked in training. */
  Tensor forward(const Tensor& x) override;
  /** Running stats back to mean 0, var 1, count 0. */
  void reset_running_stats();

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight;               // (C) or undefined
  Tensor bias;                 // (C) or undefined
  Tensor running_mean;         // (C)
  Tensor running_var;          // (C), unbiased batch variances averaged
  Tensor num_batches_tracked;  // () int64

 protected:
  /** Throws unless x has a rank this layer accepts. */
  virtual void check_input(const Tensor& x) const = 0;
};

/** BatchNorm over (N, C) or (N, C, L) (torch.nn.BatchNorm1d). */
class BatchNorm1d : public BatchNorm {
 public:
  /** See BatchNorm. */
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /** "BatchNorm1d". */
  std::string name() const override { return "BatchNorm1d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

/** BatchNorm over (N, C, H, W) (torch.nn.BatchNorm2d). */
class BatchNorm2d : public BatchNorm {
 public:
  /** See BatchNorm. */
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /** "BatchNorm2d". */
  std::string name() const override { return "BatchNorm2d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

}  // namespace genesis::nn
