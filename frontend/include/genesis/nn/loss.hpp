// genesis/nn/loss.hpp - loss modules: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, BCELoss,
// BCEWithLogitsLoss.  Each is called as loss(input, target); reduction is "none", "mean" or "sum".
#pragma once

#include <string>

#include "genesis/nn/functional.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** Base of the losses: operator()(input, target) calls forward(input, target). */
class Loss : public Module {
 public:
  /** With this reduction. */
  explicit Loss(std::string reduction) : reduction(std::move(reduction)) {}
  /** The loss of input against target. */
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  using Module::forward;
  /** Calls forward(input, target). */
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  std::string reduction;
};

/** Cross-entropy of logits (N, C) / (N, C, d...) against class ids (N) / (N, d...) or class probabilities. */
class CrossEntropyLoss : public Loss {
 public:
  /** Targets equal to ignore_index add nothing (and are not counted by "mean"); weight (C) scales each class. */
  explicit CrossEntropyLoss(int64_t ignore_index = -100, std::string reduction = "mean", double label_smoothing = 0,
                            Tensor weight = {})
      : Loss(std::move(reduction)),
        ignore_index(ignore_index),
        label_smoothing(label_smoothing),
        weight(std::move(weight)) {}
  /** See functional::cross_entropy. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::cross_entropy(input, target, ignore_index, reduction, label_smoothing, weight);
  }
  /** "CrossEntropyLoss". */
  std::string name() const override { return "CrossEntropyLoss"; }

  int64_t ignore_index;
  double label_smoothing;
  Tensor weight;  ///< class weights (C), or undefined
};

/** Negative log-likelihood of log-probabilities (N, C[, d...]) at target ids. */
class NLLLoss : public Loss {
 public:
  /** Targets equal to ignore_index add nothing; weight (C) scales each class. */
  explicit NLLLoss(int64_t ignore_index = -100, std::string reduction = "mean", Tensor weight = {})
      : Loss(std::move(reduction)), ignore_index(ignore_index), weight(std::move(weight)) {}
  /** See functional::nll_loss. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::nll_loss(input, target, ignore_index, reduction, weight);
  }
  /** "NLLLoss". */
  std::string name() const override { return "NLLLoss"; }

  int64_t ignore_index;
  Tensor weight;  ///< class weights (C), or undefined
};

/** Mean squared error. */
class MSELoss : public Loss {
 public:
  /** With this reduction. */
  explicit MSELoss(std::string reduction = "mean") : Loss(std::move(reduction)) {}
  /** (input - target)^2 reduced. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::mse_loss(input, target, reduction);
  }
  /** "MSELoss". */
  std::string name() const override { return "MSELoss"; }
};

/** Mean absolute error. */
class L1Loss : public Loss {
 public:
  /** With this reduction. */
  explicit L1Loss(std::string reduction = "mean") : Loss(std::move(reduction)) {}
  /** |input - target| reduced. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::l1_loss(input, target, reduction);
  }
  /** "L1Loss". */
  std::string name() const override { return "L1Loss"; }
};

/** Binary cross-entropy of probabilities. */
class BCELoss : public Loss {
 public:
  /** With this reduction; weight (broadcast) scales each element's loss. */
  explicit BCELoss(std::string reduction = "mean", Tensor weight = {})
      : Loss(std::move(reduction)), weight(std::move(weight)) {}
  /** See functional::binary_cross_entropy. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy(input, target, reduction, weight);
  }
  /** "BCELoss". */
  std::string name() const override { return "BCELoss"; }

  Tensor weight;  ///< elementwise weights, or undefined
};

/** Binary cross-entropy of logits, in the numerically stable form. */
class BCEWithLogitsLoss : public Loss {
 public:
  /** pos_weight (broadcast to the classes) scales the positive term, weight (broadcast) the whole loss. */
  explicit BCEWithLogitsLoss(std::string reduction = "mean", Tensor pos_weight = {}, Tensor weight = {})
      : Loss(std::move(reduction)), pos_weight(std::move(pos_weight)), weight(std::move(weight)) {}
  /** See functional::binary_cross_entropy_with_logits. */
  Tensor forward(const Tensor& input, const Tensor& target) override {
    return functional::binary_cross_entropy_with_logits(input, target, reduction, pos_weight, weight);
  }
  /** "BCEWithLogitsLoss". */
  std::string name() const override { return "BCEWithLogitsLoss"; }

  Tensor pos_weight;
  Tensor weight;  ///< elementwise weights, or undefined
};

}  // namespace genesis::nn
