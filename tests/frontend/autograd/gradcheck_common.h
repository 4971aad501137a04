// gradcheck_common.h - shared setup of the gradcheck test files: the backend they run on (the
// reference plugin by default; GENESIS_GRADCHECK_PLUGINS, e.g. "cpu", "cuda,reference", and
// GENESIS_GRADCHECK_DEVICE, e.g. "cuda", run the same rules on another backend's kernels) and
// the float64 leaves the checks differentiate.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/linalg.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/tensor.hpp"
#include "test_common.h"

namespace gradcheck_test {

using genesis::Tensor;
using V = std::vector<Tensor>;
using I64 = std::vector<int64_t>;
namespace ag = genesis::autograd;
namespace F = genesis::nn::functional;

/** op name (ops.def) -> finite-difference checks of its rule, several shapes/attributes each. */
using Checks = std::map<std::string, std::function<void()>>;
/** The checks of the factorizations and solves (gradcheck_linalg_test.cpp). */
const Checks& linalg_checks();

inline genesis_test::TestBackend& g_backend = genesis_test::add_test_backend("GENESIS_GRADCHECK", "gradcheck");
/** The device every test tensor is created on. */
inline const genesis::Device& dev() { return g_backend.device(); }

/** float64 on dev(). */
inline genesis::Options f64() { return {.dtype = genesis::float64, .device = dev()}; }

/** Random float64 leaf requiring grad. */
inline Tensor leaf(genesis::Shape s, double scale = 1, double shift = 0) {
  Tensor t = genesis::randn(s, f64()) * scale + shift;
  return t.detach().requires_grad_();
}
/** Random positive float64 leaf (for log, sqrt, pow...). */
inline Tensor pos(genesis::Shape s) { return (genesis::rand(s, f64()) + 0.5).requires_grad_(); }

/** An int64 index tensor on dev(). */
inline Tensor ids(const I64& v, genesis::Shape s) { return genesis::tensor(v, s, {.device = dev()}); }

/** A float64 leaf with these values. */
inline Tensor fixed(const std::vector<double>& v, genesis::Shape s) {
  return genesis::tensor(v, s, {.device = dev()}).requires_grad_();
}

}  // namespace gradcheck_test
