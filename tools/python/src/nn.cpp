// tools/python/src/nn.cpp - genesis.nn's C++ side: the initialisers
// (nn.init, drawing from the default generator as the C++ layers do), the
// base of C++ modules (parameters, buffers, children, modes), and the C++
// layers whose Python classes wrap them (BatchNorm, MultiheadAttention).  The
// Python wrapper registers the C++ layer's tensors as its own attributes: the
// same tensors, so state_dict, to() and optimizers see one set of data.
#include "bind.h"
#include "genesis/nn.hpp"

namespace genesis::python {

void bind_nn(py::module_& m) {
  py::module_ n = m.def_submodule("nn", "genesis.nn's C++ side");
  // ---- init (in place, returns the tensor)
  py::module_ i = n.def_submodule("init", "genesis.nn.init");
  i.def(
      "uniform_", [](Tensor& t, double a, double b) { return nn::init::uniform_(t, a, b); }, py::arg("tensor"),
      py::arg("a") = 0.0, py::arg("b") = 1.0);
  i.def(
      "normal_", [](Tensor& t, double mean, double std) { return nn::init::normal_(t, mean, std); }, py::arg("tensor"),
      py::arg("mean") = 0.0, py::arg("std") = 1.0);
  i.def(
      "constant_", [](Tensor& t, double v) { return nn::init::constant_(t, v); }, py::arg("tensor"), py::arg("val"));
  i.def(
      "zeros_", [](Tensor& t) { return nn::init::zeros_(t); }, py::arg("tensor"));
  i.def(
      "ones_", [](Tensor& t) { return nn::init::ones_(t); }, py::arg("tensor"));
  i.def(
      "xavier_uniform_", [](Tensor& t, double gain) { return nn::init::xavier_uniform_(t, gain); }, py::arg("tensor"),
      py::arg("gain") = 1.0);
  i.def(
      "xavier_normal_", [](Tensor& t, double gain) { return nn::init::xavier_normal_(t, gain); }, py::arg("tensor"),
      py::arg("gain") = 1.0);
  i.def(
      "kaiming_uniform_",
      [](Tensor& t, double a, const std::string& mode, const std::string& nl) {
        return nn::init::kaiming_uniform_(t, a, mode, nl);
      },
      py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  i.def(
      "kaiming_normal_",
      [](Tensor& t, double a, const std::string& mode, const std::string& nl) {
        return nn::init::kaiming_normal_(t, a, mode, nl);
      },
      py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
  i.def("calculate_gain", &nn::init::calculate_gain, py::arg("nonlinearity"), py::arg("param") = 0.01);
  i.def("_calculate_fan_in_and_fan_out", &nn::init::calculate_fan_in_and_fan_out, py::arg("tensor"));

  // ---- the base of C++ modules
  py::class_<nn::Module>(n, "CppModule")
      .def("forward", [](nn::Module& mod, const Tensor& x) { return mod.forward(x); })
      .def("named_parameters", &nn::Module::named_parameters, py::arg("recurse") = true)
      .def("named_buffers", &nn::Module::named_buffers, py::arg("recurse") = true)
      .def("named_children", &nn::Module::named_children, py::return_value_policy::reference_internal)
      .def(
          "train", [](nn::Module& mod, bool on) { mod.train(on); }, py::arg("mode") = true)
      .def_property_readonly("training", &nn::Module::is_training)
      .def("state_dict",
           [](const nn::Module& mod) {
             py::dict d;
             for (const auto& [k, v] : mod.state_dict()) d[py::str(k)] = v;
             return d;
           })
      .def(
          "load_state_dict",
          [](nn::Module& mod, const std::map<std::string, Tensor>& sd, bool strict) {
            nn::LoadResult r = mod.load_state_dict(nn::StateDict(sd), strict);
            return py::make_tuple(r.missing_keys, r.unexpected_keys);
          },
          py::arg("state_dict"), py::arg("strict") = true)
      .def("to",
           [](nn::Module& mod, py::handle target) {
             if (py::isinstance<DType>(target))
               mod.to(target.cast<DType>());
             else
               mod.to(to_device(target));
           })
      .def("name", &nn::Module::name);

  py::class_<nn::BatchNorm, nn::Module>(n, "BatchNorm").def("reset_running_stats", &nn::BatchNorm::reset_running_stats);
  py::class_<nn::BatchNorm1d, nn::BatchNorm>(n, "BatchNorm1d")
      .def(py::init<int64_t, double, std::optional<double>, bool, bool>(), py::arg("num_features"),
           py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::arg("affine") = true,
           py::arg("track_running_stats") = true);
  py::class_<nn::BatchNorm2d, nn::BatchNorm>(n, "BatchNorm2d")
      .def(py::init<int64_t, double, std::optional<double>, bool, bool>(), py::arg("num_features"),
           py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::arg("affine") = true,
           py::arg("track_running_stats") = true);
  py::class_<nn::MultiheadAttention, nn::Module>(n, "MultiheadAttention")
      .def(py::init<int64_t, int64_t, double, bool, bool>(), py::arg("embed_dim"), py::arg("num_heads"),
           py::arg("dropout") = 0.0, py::arg("bias") = true, py::arg("batch_first") = false)
      .def(
          "attend",
          [](nn::MultiheadAttention& a, const Tensor& q, const Tensor& k, const Tensor& v, py::handle kpm,
             bool need_weights, py::handle mask, bool is_causal) {
            auto opt = [](py::handle t) { return t.is_none() ? Tensor() : t.cast<Tensor>(); };
            return a.forward(q, k, v, opt(kpm), need_weights, opt(mask), is_causal);
          },
          py::arg("query"), py::arg("key"), py::arg("value"), py::arg("key_padding_mask") = py::none(),
          py::arg("need_weights") = false, py::arg("attn_mask") = py::none(), py::arg("is_causal") = false);
}

}  // namespace genesis::python
