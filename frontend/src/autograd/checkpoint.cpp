// checkpoint.cpp - activation checkpointing: a region recorded as one node that recomputes its
// forward pass in backward instead of keeping its activations.
#include "genesis/amp.hpp"
#include "genesis/autograd.hpp"

namespace genesis::autograd {

namespace {

std::vector<Tensor> run_closure(Node& node, const Tensor& grad) { return node.closure(grad); }

thread_local int t_checkpoint_forward = 0;

}  // namespace

bool in_checkpoint_forward() { return t_checkpoint_forward > 0; }

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return fn(inputs);
  Tensor out;
  {
    NoGradGuard no_grad;
    ++t_checkpoint_forward;
    try {
      out = fn(inputs);
    } catch (...) {
      --t_checkpoint_forward;
      throw;
    }
    --t_checkpoint_forward;
  }
  std::shared_ptr<Node> node = record("checkpoint", &run_closure, inputs, out);
  if (!node) return out;
  // What the recomputation needs: the inputs (detached, with their requires_grad) and the
  // autocast state of this call.
  std::vector<Tensor> kept;
  std::vector<bool> wants;
  for (const Tensor& x : inputs) {
    kept.push_back(x.defined() ? x.detach() : Tensor());
    wants.push_back(x.defined() && x.requires_grad());
  }
  std::string device_type = "cpu";
  for (const Tensor& x : inputs)
    if (x.defined()) {
      device_type = x.device().type();
      break;
    }
  const bool ac_on = amp::is_autocast_enabled(device_type);
  const DType ac_dtype = amp::get_autocast_dtype(device_type);
  node->closure = [fn, kept = std::move(kept), wants = std::move(wants), device_type, ac_on,
                   ac_dtype](const Tensor& grad) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < kept.size(); ++i) {
      Tensor x = kept[i].defined() ? kept[i].detach() : Tensor();
      if (wants[i]) x.requires_grad_(true);
      xs.push_back(x);
    }
    Tensor y;
    {
      const bool prev = grad_enabled();
      set_grad_enabled(true);
      try {
        amp::autocast ac(device_type, ac_dtype, ac_on);
        y = fn(xs);
      } catch (...) {
        set_grad_enabled(prev);
        throw;
      }
      set_grad_enabled(prev);
    }
    std::vector<Tensor> grads(xs.size());
    if (y.requires_grad()) {
      y.backward(grad);  // parameters used by fn accumulate their .grad here
      for (size_t i = 0; i < xs.size(); ++i)
        if (wants[i]) grads[i] = xs[i].grad();
    }
    return grads;
  };
  return out;
}

}  // namespace genesis::autograd
