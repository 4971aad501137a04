// quickstart.cpp - the quick start of the docs, tensors and autograd, in C++.
//
//   x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
//   y = genesis.tensor([[2.0, 0.0], [0.0, 2.0]], requires_grad=True)
//   z = genesis.matmul(x, y)
//   loss = z.sum()
//   loss.backward()
//   print(f"Gradient of x: {x.grad}")
#include <iostream>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

int main() {
  try {
    // Create tensors with automatic differentiation
    auto x = genesis::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.requires_grad = true});
    auto y = genesis::tensor({{2.0, 0.0}, {0.0, 2.0}}, {.requires_grad = true});

    // Perform operations
    auto z = genesis::matmul(x, y);
    auto loss = z.sum();

    // Automatic differentiation
    loss.backward();
    std::cout << "Gradient of x: " << x.grad() << "\n";

    // A little more: devices, broadcasting, hooks, no_grad.
    genesis::Device device = genesis::cuda_available() ? "cuda" : "cpu";
    auto w = genesis::randn({3, 2}, {.device = device, .requires_grad = true});
    auto b = genesis::zeros({2}, {.device = device, .requires_grad = true});
    auto inputs = genesis::randn({4, 3}, {.device = device});
    w.register_hook([](const genesis::Tensor& g) { std::cout << "w.grad norm: " << g.norm().item<double>() << "\n"; });
    auto out = (inputs.matmul(w) + b).relu().mean();
    out.backward();
    std::cout << "loss: " << out << "\nb.grad: " << b.grad() << "\n";
    {
      genesis::NoGradGuard no_grad;  // plain SGD step, not recorded
      w.sub_(w.grad(), 0.1);
      b.sub_(b.grad(), 0.1);
    }
    return 0;
  } catch (const genesis::Error& e) {
    std::cerr << "genesis: " << e.what() << "\n";
    return 1;
  }
}
