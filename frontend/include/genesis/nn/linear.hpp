// genesis/nn/linear.hpp - Linear, Embedding, Dropout, Flatten, Identity.
#pragma once

#include <optional>

#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** y = x W^T + b (torch.nn.Linear); weight kaiming_uniform(a = sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in)). */
class Linear : public Module {
 public:
  /** A layer from in_features to out_features, with a bias unless told otherwise. */
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  /** Same, with the parameters created with factory's dtype and device (torch's device=, dtype=). */
  Linear(int64_t in_features, int64_t out_features, bool bias, const Options& factory);
  /** x (*, in) -> (*, out). */
  Tensor forward(const Tensor& x) override;
  /** "Linear". */
  std::string name() const override { return "Linear"; }
  /** Re-draws weight and bias with torch's default scheme. */
  void reset_parameters();

  int64_t in_features, out_features;
  Tensor weight;  // (out, in)
  Tensor bias;    // (out) or undefined
};

/** A lookup table of num_embeddings vectors (torch.nn.Embedding); weight N(0, 1). */
class Embedding : public Module {
 public:
  /** Table (num_embeddings, embedding_dim); the padding_idx row starts at zero and gets no gradient. */
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = {});
  /** Same, with the table created with factory's dtype and device. */
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx, const Options& factory);
  /** ids (*) int -> (*, embedding_dim). */
  Tensor forward(const Tensor& ids) override;
  /** "Embedding". */
  std::string name() const override { return "Embedding"; }

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;  // (num_embeddings, embedding_dim)
};

/** Zeroes elements with probability p in training (scaling the rest by 1/(1-p)); identity in eval. */
class Dropout : public Module {
 public:
  /** Dropout with probability p in [0, 1]. */
  explicit Dropout(double p = 0.5);
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override;
  /** "Dropout". */
  std::string name() const override { return "Dropout"; }

  double p;
};

/** Merges dims start_dim..end_dim (torch.nn.Flatten; default keeps the batch dim). */
class Flatten : public Module {
 public:
  /** Flatten from start_dim to end_dim. */
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  /** (N, C, H, W) -> (N, C*H*W) by default. */
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  /** "Flatten". */
  std::string name() const override { return "Flatten"; }

  int64_t start_dim, end_dim;
};

/** Returns its input. */
class Identity : public Module {
 public:
  /** x. */
  Tensor forward(const Tensor& x) override { return x; }
  /** "Identity". */
  std::string name() const override { return "Identity"; }
};

}  // namespace genesis::nn
