// tools/python/src/functional.cpp - genesis.nn.functional (_C.functional)
// and the free ops of the genesis namespace (matmul, where, cat, stack, bmm,
// ...).  Optional tensors are None; int-or-pair sizes are an int or a tuple.
#include "bind.h"
#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"

namespace genesis::python {
namespace {

namespace F = nn::functional;

Tensor opt(py::handle t) { return t.is_none() ? Tensor() : t.cast<Tensor>(); }

nn::IntPair pair(py::handle o) {
  if (PyLong_Check(o.ptr())) return nn::IntPair(o.cast<int64_t>());
  Shape s = shape_from_object(o);
  if (s.size() != 2) throw py::value_error("expected an int or a pair of ints");
  return nn::IntPair(s[0], s[1]);
}

std::optional<nn::IntPair> opt_pair(py::handle o) {
  if (o.is_none()) return std::nullopt;
  if (!PyLong_Check(o.ptr()) && py::len(o) == 0) return std::nullopt;  // torch: stride=[] means the kernel
  return pair(o);
}

}  // namespace

void bind_functional(py::module_& m) {
  py::module_ f = m.def_submodule("functional", "genesis.nn.functional");
  // ---- activations
  f.def("relu", &F::relu, py::arg("input"));
  f.def("gelu", &F::gelu, py::arg("input"), py::kw_only(), py::arg("approximate") = "none");
  f.def("silu", &F::silu, py::arg("input"));
  f.def("tanh", &F::tanh, py::arg("input"));
  f.def("sigmoid", &F::sigmoid, py::arg("input"));
  f.def("softmax", &F::softmax, py::arg("input"), py::arg("dim"));
  f.def("log_softmax", &F::log_softmax, py::arg("input"), py::arg("dim"));
  f.def("swiglu", &F::swiglu, py::arg("gate"), py::arg("up"));
  f.def("dropout", &F::dropout, py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true);
  // ---- linear, embedding, convolution, pooling
  f.def(
      "linear", [](const Tensor& x, const Tensor& w, py::handle b) { return F::linear(x, w, opt(b)); },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none());
  f.def(
      "embedding", [](const Tensor& ids, const Tensor& w) { return F::embedding(ids, w); }, py::arg("input"),
      py::arg("weight"));
  f.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, py::handle b, py::handle stride, py::handle padding, py::handle dilation,
         int64_t groups) { return F::conv2d(x, w, opt(b), pair(stride), pair(padding), pair(dilation), groups); },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1);
  f.def(
      "max_pool2d",
      [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, py::handle dilation, bool ceil_mode,
         bool return_indices) {
        if (return_indices) throw py::value_error("max_pool2d: return_indices=True is not supported");
        return F::max_pool2d(x, pair(k), opt_pair(stride), pair(padding), pair(dilation), ceil_mode);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  f.def(
      "avg_pool2d",
      [](const Tensor& x, py::handle k, py::handle stride, py::handle padding, bool ceil_mode, bool count_include_pad) {
        return F::avg_pool2d(x, pair(k), opt_pair(stride), pair(padding), ceil_mode, count_include_pad);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  // ---- attention and normalisation
  f.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, py::handle mask, double dropout_p, bool is_causal,
         std::optional<double> scale) {
        return F::scaled_dot_product_attention(q, k, v, opt(mask), dropout_p, is_causal, scale);
      },
      py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(), py::arg("dropout_p") = 0.0,
      py::arg("is_causal") = false, py::kw_only(), py::arg("scale") = py::none());
  f.def("rope", &F::rope, py::arg("input"), py::arg("cos"), py::arg("sin"));
  f.def(
      "layer_norm",
      [](const Tensor& x, py::handle shape, py::handle w, py::handle b, double eps) {
        return F::layer_norm(x, shape_from_object(shape), opt(w), opt(b), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
      py::arg("eps") = 1e-5);
  f.def(
      "rms_norm",
      [](const Tensor& x, py::handle shape, py::handle w, std::optional<double> eps) {
        return F::rms_norm(x, shape_from_object(shape), opt(w), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("eps") = py::none());
  f.def(
      "one_hot", [](const Tensor& ids, int64_t n) { return one_hot(ids, n); }, py::arg("input"),
      py::arg("num_classes"));
  // ---- losses
  f.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, py::handle weight, int64_t ignore_index, const std::string& reduction,
         double label_smoothing) {
        return F::cross_entropy(x, t, ignore_index, reduction, label_smoothing, opt(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
      py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0);
  f.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, py::handle weight, int64_t ignore_index, const std::string& reduction) {
        return F::nll_loss(x, t, ignore_index, reduction, opt(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
      py::arg("reduction") = "mean");
  f.def("mse_loss", &F::mse_loss, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  f.def("l1_loss", &F::l1_loss, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  f.def(
      "binary_cross_entropy",
      [](const Tensor& x, const Tensor& t, py::handle weight, const std::string& reduction) {
        return F::binary_cross_entropy(x, t, reduction, opt(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("reduction") = "mean");
  f.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& x, const Tensor& t, py::handle weight, const std::string& reduction, py::handle pos_weight) {
        return F::binary_cross_entropy_with_logits(x, t, reduction, opt(pos_weight), opt(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("reduction") = "mean",
      py::arg("pos_weight") = py::none());

  // ---- free ops of the genesis namespace
  m.def("matmul", &matmul, py::arg("input"), py::arg("other"));
  m.def(
      "where",
      [](const Tensor& c, py::handle a, py::handle b) {
        const Tensor& like = py::isinstance<Tensor>(a)   ? a.cast<const Tensor&>()
                             : py::isinstance<Tensor>(b) ? b.cast<const Tensor&>()
                                                         : c;
        return where(c, as_tensor_like(a, like), as_tensor_like(b, like));
      },
      py::arg("condition"), py::arg("input"), py::arg("other"));
  m.def(
      "cat", [](const std::vector<Tensor>& xs, int64_t dim) { return F::cat(xs, dim); }, py::arg("tensors"),
      py::arg("dim") = 0);
  m.def(
      "stack", [](const std::vector<Tensor>& xs, int64_t dim) { return F::stack(xs, dim); }, py::arg("tensors"),
      py::arg("dim") = 0);
  m.def(
      "bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, py::arg("input"), py::arg("mat2"));
  m.def("call_unary", &call_unary, py::arg("op"), py::arg("input"),
        "Any one-input op by its ops.def name (recorded for autograd when it has a gradient rule)");
  m.def("sum_to_size", &sum_to_size, py::arg("input"), py::arg("size"));
  m.def("differentiable_ops", &autograd::differentiable_ops);
  m.def(
      "gradcheck",
      [](py::function fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
        auto wrapped = [&fn](const std::vector<Tensor>& xs) {
          py::tuple args(xs.size());
          for (size_t i = 0; i < xs.size(); ++i) args[i] = py::cast(xs[i]);
          return fn(*args).cast<Tensor>();
        };
        std::string err = autograd::gradcheck(wrapped, inputs, {eps, atol, rtol});
        if (!err.empty()) throw py::value_error("gradcheck: " + err);
        return true;
      },
      py::arg("func"), py::arg("inputs"), py::kw_only(), py::arg("eps") = 1e-6, py::arg("atol") = 1e-5,
      py::arg("rtol") = 1e-3);
  m.def(
      "checkpoint",
      [](py::function fn, const py::args& inputs) {
        auto keep = keep_callable(fn);
        std::vector<Tensor> xs;
        for (py::handle x : inputs) xs.push_back(x.cast<Tensor>());
        // backward runs fn again: from a GIL-less backward, take the GIL for the call
        return autograd::checkpoint(
            [keep](const std::vector<Tensor>& v) {
              py::gil_scoped_acquire gil;
              py::tuple args(v.size());
              for (size_t i = 0; i < v.size(); ++i) args[i] = py::cast(v[i]);
              return (*keep)(*args).cast<Tensor>();
            },
            xs);
      },
      py::arg("function"), "Activation checkpointing (torch.utils.checkpoint, non-reentrant)");
}

}  // namespace genesis::python
