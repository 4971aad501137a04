// genesis/nn/module.hpp - nn::Module, the base of every layer (torch.nn.Module).
//
//   struct SimpleNet : genesis::nn::Module {
//     nn::Linear fc1{784, 256};
//     nn::ReLU relu;
//     nn::Linear fc2{256, 10};
//     SimpleNet() { register_module("fc1", fc1); register_module("relu", relu); register_module("fc2", fc2); }
//     Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
//   };
//
// A module owns named parameters, buffers and children, all in registration
// order.  Parameters and buffers are shared Tensor handles: a layer keeps the
// same Tensor as a member, and to()/load_state_dict() change the data in
// place, so members, optimizers and the registry always agree.  Modules are
// neither copied nor moved (children are registered by address).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::nn {

/** A state dict: name -> tensor in registration order (like torch's OrderedDict). */
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;
  /** Empty. */
  StateDict() = default;
  /** From a sorted map (e.g. genesis::load's result). */
  StateDict(const std::map<std::string, Tensor>& m) {  // NOLINT: implicit, interoperates with io
    for (const auto& [k, v] : m) insert(k, v);
  }
  /** As a sorted map (for genesis::save and checkpoints). */
  operator std::map<std::string, Tensor>() const {  // NOLINT
    return std::map<std::string, Tensor>(items_.begin(), items_.end());
  }
  /** Adds or replaces key. */
  void insert(const std::string& key, const Tensor& t);
  /** The tensor at key (throws genesis::Error naming the key when absent). */
  const Tensor& at(const std::string& key) const;
  /** The tensor at key, inserted undefined when absent. */
  Tensor& operator[](const std::string& key);
  /** 1 when key is present, else 0. */
  size_t count(const std::string& key) const { return index_.count(key); }
  /** Number of entries. */
  size_t size() const { return items_.size(); }
  /** True when there are no entries. */
  bool empty() const { return items_.empty(); }
  /** Keys in order. */
  std::vector<std::string> keys() const;
  /** First entry. */
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  /** Past the last entry. */
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::map<std::string, size_t> index_;
};

/** What load_state_dict(strict = false) skipped. */
struct LoadResult {
  std::vector<std::string> missing_keys;     ///< in the model, not in the dict
  std::vector<std::string> unexpected_keys;  ///< in the dict, not in the model
};

/** Base class of all layers (torch.nn.Module). */
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /** The computation of a single-input module (throws unless overridden). */
  virtual Tensor forward(const Tensor& x);
  /** Calls forward(x). */
  Tensor operator()(const Tensor& x) { return forward(x); }
  /** Class name used in messages ("Linear"); defaults to "Module". */
  virtual std::string name() const { return "Module"; }

  // ---- registration
  /** Registers t (detached, requires_grad set) as parameter `name`; returns the stored tensor. */
  Tensor register_parameter(const std::string& name, const Tensor& t, bool requires_grad = true);
  /** Registers t as buffer `name`; non-persistent buffers stay out of state_dict(); returns it. */
  Tensor register_buffer(const std::string& name, const Tensor& t, bool persistent = true);
  /** Registers a child owned by the caller (usually a member); returns it. */
  template <class M>
  M& register_module(const std::string& name, M& m) {
    add_child(name, &m, nullptr);
    return m;
  }
  /** Registers a shared child (kept alive by this module); returns it. */
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m.get(), m);
    return m;
  }

  // ---- traversal
  /** Parameters of this module (and of all descendants when recurse), each once. */
  std::vector<Tensor> parameters(bool recurse = true) const;
  /** Parameters with dotted names ("fc1.weight"). */
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  /** Buffers of this module (and descendants when recurse). */
  std::vector<Tensor> buffers(bool recurse = true) const;
  /** Buffers with dotted names. */
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  /** Direct children. */
  std::vector<Module*> children() const;
  /** Direct children with their names. */
  std::vector<std::pair<std::string, Module*>> named_children() const;
  /** This module and all descendants with dotted names ("" for this one). */
  std::vector<std::pair<std::string, Module*>> named_modules() const;

  // ---- mode, placement, gradients
  /** Sets training mode here and in every descendant; returns *this. */
  Module& train(bool on = true);
  /** Evaluation mode (train(false)); returns *this. */
  Module& eval() { return train(false); }
  /** True in training mode. */
  bool is_training() const { return training_; }
  /** Moves every parameter, buffer and gradient to device, in place (tensors keep their identity). */
  Module& to(const Device& device);
  /** Casts floating parameters, buffers and gradients to dtype, in place. */
  Module& to(DType dtype);
  /** Clears (set_to_none) or zeroes every parameter's gradient. */
  void zero_grad(bool set_to_none = true);

  // ---- state
  /** Parameters and persistent buffers by dotted name, in registration order (detached, shared data). */
  StateDict state_dict() const;
  /** Copies values in; strict also rejects missing/unexpected keys; on any error throws and changes nothing. */
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

 protected:
  bool training_ = true;

 private:
  struct Buffer {
    std::string name;
    Tensor t;
    bool persistent;
  };
  void add_child(const std::string& name, Module* m, std::shared_ptr<Module> owned);
  void collect(const std::string& prefix, bool recurse, bool params, bool persistent_only,
               std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::shared_ptr<Module>> owned_;
};

}  // namespace genesis::nn
