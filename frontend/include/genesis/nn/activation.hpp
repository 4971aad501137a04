// genesis/nn/activation.hpp - activation modules: ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax.
#pragma once

#include <string>

#include "genesis/nn/functional.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** max(x, 0). */
class ReLU : public Module {
 public:
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return x.relu(); }
  /** "ReLU". */
  std::string name() const override { return "ReLU"; }
};

/** x * Phi(x); approximate "tanh" uses the tanh form. */
class GELU : public Module {
 public:
  /** approximate: "none" or "tanh". */
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return functional::gelu(x, approximate); }
  /** "GELU". */
  std::string name() const override { return "GELU"; }

  std::string approximate;
};

/** x * sigmoid(x). */
class SiLU : public Module {
 public:
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return x.silu(); }
  /** "SiLU". */
  std::string name() const override { return "SiLU"; }
};

/** tanh(x). */
class Tanh : public Module {
 public:
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return x.tanh(); }
  /** "Tanh". */
  std::string name() const override { return "Tanh"; }
};

/** 1 / (1 + exp(-x)). */
class Sigmoid : public Module {
 public:
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return x.sigmoid(); }
  /** "Sigmoid". */
  std::string name() const override { return "Sigmoid"; }
};

/** Softmax along dim. */
class Softmax : public Module {
 public:
  /** Normalises along dim. */
  explicit Softmax(int64_t dim) : dim(dim) {}
  /** Same shape as x. */
  Tensor forward(const Tensor& x) override { return x.softmax(dim); }
  /** "Softmax". */
  std::string name() const override { return "Softmax"; }

  int64_t dim;
};

}  // namespace genesis::nn
