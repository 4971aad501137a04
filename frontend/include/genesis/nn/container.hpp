// genesis/nn/container.hpp - ModuleList and Sequential.
//
//   auto net = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 256),
//                                               std::make_shared<nn::ReLU>(),
//                                               std::make_shared<nn::Linear>(256, 10));
//   Tensor y = (*net)(x);   // children are named "0", "1", "2"
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "genesis/nn/module.hpp"

namespace genesis::nn {

/** An indexable list of shared child modules named "0", "1", ... (torch.nn.ModuleList). */
class ModuleList : public Module {
 public:
  /** Empty list. */
  ModuleList() = default;
  /** The given modules, in order. */
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  /** The given modules, in order. */
  template <class... M>
  explicit ModuleList(std::shared_ptr<M>... modules) : ModuleList({std::shared_ptr<Module>(modules)...}) {}
  /** Appends m (registered as child str(size())). */
  void push_back(std::shared_ptr<Module> m);
  /** Module i (negative counts from the end; throws when out of range). */
  std::shared_ptr<Module> operator[](int64_t i) const;
  /** Module i cast to T (throws when it is not a T). */
  template <class T>
  std::shared_ptr<T> at(int64_t i) const {
    auto p = std::dynamic_pointer_cast<T>((*this)[i]);
    if (!p) throw Error(GN_ERR_INVALID_ARGUMENT, "[" + name() + "] module " + std::to_string(i) + " has another type");
    return p;
  }
  /** Number of modules. */
  size_t size() const { return modules_.size(); }
  /** First module. */
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  /** Past the last module. */
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  /** "ModuleList". */
  std::string name() const override { return "ModuleList"; }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

/** Modules applied in order, each to the previous one's output (torch.nn.Sequential). */
class Sequential : public ModuleList {
 public:
  using ModuleList::ModuleList;
  /** Chains forward through every module. */
  Tensor forward(const Tensor& x) override;
  /** "Sequential". */
  std::string name() const override { return "Sequential"; }
};

}  // namespace genesis::nn
