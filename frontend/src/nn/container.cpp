// container.cpp - ModuleList and Sequential (genesis/nn/container.hpp).
#include <string>

#include "genesis/nn/container.hpp"

namespace genesis::nn {

// ---------------------------------------------------------- ModuleList, Sequential

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> m) {
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

std::shared_ptr<Module> ModuleList::operator[](int64_t i) const {
  const int64_t n = static_cast<int64_t>(modules_.size());
  if (i < -n || i >= n)
    throw Error(GN_ERR_INDEX,
                "[" + name() + "] index " + std::to_string(i) + " out of range for " + std::to_string(n) + " modules");
  return modules_[i < 0 ? i + n : i];
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : *this) y = m->forward(y);
  return y;
}

}  // namespace genesis::nn
