// common.h - shared setup of the nn tests: the reference plugin, float64 leaves, value checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/nn.hpp"
#include "genesis/tensor.hpp"
#include "../test_common.h"

namespace nn_test {

using genesis::Tensor;
using V = std::vector<Tensor>;

inline const bool g_init = genesis_test::init_reference();

/** Random float64 leaf requiring grad. */
inline Tensor leaf(genesis::Shape s, double scale = 1, double shift = 0) {
  Tensor t = genesis::randn(s, {.dtype = genesis::float64}) * scale + shift;
  return t.detach().requires_grad_();
}

/** Float64 tensor of values. */
inline Tensor f64(const std::vector<double>& v, genesis::Shape s) { return genesis::tensor(v, s); }

/** Values seq(n, a, b)[i] = sin(a*i + b) * 2 (as gen_expected.py builds its inputs). */
inline std::vector<double> seq(int n, double a, double b) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::sin(a * i + b) * 2);
  return v;
}

/** Expects t's values to equal want within tol. */
inline void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  const std::vector<double> got = t.tolist();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace nn_test
