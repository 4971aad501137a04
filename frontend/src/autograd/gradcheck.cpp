// gradcheck.cpp - autograd against central finite differences (float64).
//
// For L(inputs) = sum(fn(inputs) * w) with a fixed random w, compares dL/dx
// from backward with (L(x + eps e_i) - L(x - eps e_i)) / (2 eps) for every
// element i of every floating input that requires grad.  One projection w
// checks the vector-Jacobian product the rules compute, at the cost of two
// forward passes per element.
#include <cmath>
#include <sstream>

#include "../internal.h"

namespace genesis::autograd {

std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                      GradcheckOptions opts) {
  // Analytic gradients.
  for (const Tensor& x : inputs)
    if (x.defined() && x.requires_grad()) x.set_grad(Tensor());
  Tensor out = fn(inputs);
  Tensor w = randn(out.shape(), {.dtype = DType::f64, .device = out.device()});
  (out.to(DType::f64) * w).sum().backward();

  NoGradGuard no_grad;
  auto loss = [&](const std::vector<Tensor>& in) { return (fn(in).to(DType::f64) * w).sum().item<double>(); };
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    const std::vector<double> base = x.tolist();
    const Tensor g = x.grad();
    const std::vector<double> analytic = g.defined() ? g.tolist() : std::vector<double>(base.size(), 0.0);
    std::vector<Tensor> in = inputs;
    for (size_t i = 0; i < base.size(); ++i) {
      std::vector<double> v = base;
      v[i] = base[i] + opts.eps;
      in[k] = tensor(v, x.shape(), {.dtype = x.dtype(), .device = x.device()});
      const double up = loss(in);
      v[i] = base[i] - opts.eps;
      in[k] = tensor(v, x.shape(), {.dtype = x.dtype(), .device = x.device()});
      const double down = loss(in);
      const double numeric = (up - down) / (2 * opts.eps);
      if (std::fabs(numeric - analytic[i]) > opts.atol + opts.rtol * std::fabs(numeric)) {
        std::ostringstream os;
        os << "input " << k << " element " << i << ": autograd " << analytic[i] << " vs numeric " << numeric;
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace genesis::autograd
