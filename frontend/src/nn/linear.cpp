// linear.cpp - Linear, Embedding, Dropout (genesis/nn/linear.hpp).
#include <cmath>

#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"
#include "genesis/nn/linear.hpp"

namespace genesis::nn {

// --------------------------------------------------------------------- Linear

Linear::Linear(int64_t in, int64_t out, bool has_bias) : Linear(in, out, has_bias, Options{}) {}

Linear::Linear(int64_t in, int64_t out, bool has_bias, const Options& factory) : in_features(in), out_features(out) {
  if (in < 0 || out < 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[Linear] feature counts must be >= 0");
  weight = register_parameter("weight", empty({out, in}, factory));
  if (has_bias) bias = register_parameter("bias", empty({out}, factory));
  if (!init::skip_init()) reset_parameters();
}

void Linear::reset_parameters() {
  // torch: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(in), 1/sqrt(in)) for the weight too.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) { return functional::linear(x, weight, bias); }

// ------------------------------------------------------------------ Embedding

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad) : Embedding(num, dim, pad, Options{}) {}

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad, const Options& factory)
    : num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  if (pad && (*pad < -num || *pad >= num))
    throw Error(GN_ERR_INVALID_ARGUMENT, "[Embedding] padding_idx must be within num_embeddings");
  if (pad && *pad < 0) padding_idx = *pad + num;
  weight = register_parameter("weight", empty({num, dim}, factory));
  if (!init::skip_init()) init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
    // The padding row gets no gradient (torch skips it in embedding's backward).
    const int64_t p = *padding_idx;
    weight.register_hook([p](const Tensor& g) {
      Tensor r = g.clone();
      r.select(0, p).zero_();
      return r;
    });
  }
}

Tensor Embedding::forward(const Tensor& ids) { return functional::embedding(ids, weight); }

// -------------------------------------------------------------------- Dropout

Dropout::Dropout(double p_) : p(p_) {
  if (p < 0 || p > 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[Dropout] p must be in [0, 1], got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) { return functional::dropout(x, p, training_); }

}  // namespace genesis::nn
