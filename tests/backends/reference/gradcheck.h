// tests/backends/reference/gradcheck.h - helpers of the linalg, norm,
// activation, loss, attention, conv, pool and optim tests: deterministic
// random data and central finite differences of a forward kernel in float64.
//
//   Forward f = [&](const std::vector<HostTensor>& in) { ...run the op...; return outputs; };
//   // L = sum_k dot(outputs_k, weights_k); dL/d(in[i]) by central differences:
//   std::vector<double> g = numeric_grad(f, inputs, i, weights);
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "harness.h"

namespace reftest {

using Shape = std::vector<int64_t>;
// Tolerance of a float64 gradient against central finite differences.
constexpr double kFdTol = 1e-6;

// n values uniform in [lo, hi), the same for the same seed on every platform
// (a 64-bit LCG, not std distributions whose output is implementation-defined).
inline std::vector<double> rand_values(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::vector<double> v((size_t)n);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * (double)(s >> 11) * (1.0 / 9007199254740992.0);
  }
  return v;
}

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Random f64 tensor of shape.
inline HostTensor rand_f64(const std::vector<int64_t>& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return HostTensor::of(rand_values(numel_of(shape), seed, lo, hi), shape, GN_F64);
}

// Runs a forward op on the given inputs and returns its outputs.
using Forward = std::function<std::vector<HostTensor>(const std::vector<HostTensor>&)>;

// sum_k dot(outs[k], weights[k]) (outputs without a weight vector are skipped).
inline double weighted_sum(const std::vector<HostTensor>& outs, const std::vector<std::vector<double>>& weights) {
  double s = 0.0;
  for (size_t k = 0; k < outs.size() && k < weights.size(); ++k) {
    std::vector<double> v = outs[k].values();
    if (v.size() != weights[k].size()) {
      ADD_FAILURE() << "weighted_sum: output " << k << " has " << v.size() << " values, weights " << weights[k].size();
      return 0.0;
    }
    for (size_t i = 0; i < v.size(); ++i) s += v[i] * weights[k][i];
  }
  return s;
}

// The forward of a float64 op with one output shaped like its first input.
inline Forward elementwise_forward(const char* op) {
  return [op](const std::vector<HostTensor>& in) {
    std::vector<HostTensor> out = {HostTensor::zeros(in[0].shape, GN_F64)};
    EXPECT_OK(run(op, GN_F64, in, out, {}));
    return out;
  };
}

// d/d(inputs[which]) of sum_k dot(f(inputs)[k], weights[k]), central differences with step h.
inline std::vector<double> numeric_grad(const Forward& f, const std::vector<HostTensor>& inputs, size_t which,
                                        const std::vector<std::vector<double>>& weights, double h = 1e-6) {
  std::vector<double> base = inputs[which].values();
  std::vector<double> g(base.size());
  for (size_t e = 0; e < base.size(); ++e) {
    double lr[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<double> pert = base;
      pert[e] += side == 0 ? h : -h;
      std::vector<HostTensor> in = inputs;
      in[which] = HostTensor::of(pert, inputs[which].shape, GN_F64);
      lr[side] = weighted_sum(f(in), weights);
    }
    g[e] = (lr[0] - lr[1]) / (2.0 * h);
  }
  return g;
}

}  // namespace reftest
