// tools/python/src/peft.cpp - genesis._C.peft: LoRA adapters over the Qwen models (genesis/models/lora.hpp) in
// Hugging Face PEFT's folder format.  genesis.peft (tools/python/genesis/peft.py) builds PEFT's API on top:
// LoraConfig, get_peft_model, PeftModel.
//
// A LoraModel here is a handle on the C++ adapters of one model: the model stays the caller's (the handle keeps
// its Python object alive), the adapter weights come out as the very tensors the model's forward reads, so an
// optimizer stepping them in Python trains the adapters in place.
#include "bind.h"
#include "genesis/models/lora.hpp"

namespace genesis::python {
namespace {

using models::LoraConfig;
using models::LoraLayer;
using models::LoraModel;
using models::QwenForCausalLM;

// The model's adapter slot for a module path as Hugging Face names it (model.layers.3.mlp.up_proj).
std::shared_ptr<LoraLayer>* slot_of(QwenForCausalLM& m, const std::string& path) {
  const std::string head = "model.layers.";
  if (path.compare(0, head.size(), head) == 0) {
    const size_t dot = path.find('.', head.size());
    const size_t i = std::stoul(path.substr(head.size(), dot - head.size()));
    const std::string leaf = path.substr(dot + 1);
    if (i < m.model.layers.size()) {
      models::QwenDecoderLayer& L = *m.model.layers[i];
      if (leaf == "self_attn.q_proj") return &L.self_attn.q_lora;
      if (leaf == "self_attn.k_proj") return &L.self_attn.k_lora;
      if (leaf == "self_attn.v_proj") return &L.self_attn.v_lora;
      if (leaf == "self_attn.o_proj") return &L.self_attn.o_lora;
      if (leaf == "mlp.gate_proj") return &L.mlp.gate_lora;
      if (leaf == "mlp.up_proj") return &L.mlp.up_lora;
      if (leaf == "mlp.down_proj") return &L.mlp.down_lora;
    }
  }
  throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + path + " is not an adaptable projection of this model");
}

// The adapters of one model as Python holds them; attached until merge_and_unload() or unload().
struct Adapters {
  std::shared_ptr<LoraModel> lm;
  bool attached = true;
  bool enabled = true;

  void check(const char* what) const {
    if (!attached)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  std::string("[lora] ") + what + ": the adapters were merged or unloaded (the model has none now)");
  }
  // Takes the adapters out of the model's forward (off) or puts them back (on); their weights are kept.
  void set_enabled(bool on) {
    check("enable/disable");
    for (auto& [path, a] : lm->adapters) *slot_of(*lm->model, path) = on ? a : nullptr;
    enabled = on;
  }
  // merge_and_unload() and unload() reach the base weights through the model's slots: adapters disabled are put
  // back first so both see the model as attach() left it.
  void detach(bool merge) {
    check(merge ? "merge_and_unload" : "unload");
    if (!enabled) set_enabled(true);
    if (merge)
      lm->merge_and_unload();
    else
      lm->unload();
    attached = false;
  }
};

}  // namespace

void bind_peft(py::module_& m) {
  py::module_ pm = m.def_submodule("peft", "genesis.peft: LoRA adapters in Hugging Face PEFT's format");

  py::class_<LoraConfig>(pm, "LoraConfig")
      .def(py::init<>())
      .def_readwrite("r", &LoraConfig::r)
      .def_readwrite("lora_alpha", &LoraConfig::lora_alpha)
      .def_readwrite("lora_dropout", &LoraConfig::lora_dropout)
      .def_readwrite("use_rslora", &LoraConfig::use_rslora)
      .def_readwrite("target_modules", &LoraConfig::target_modules)
      .def_readwrite("base_model_name_or_path", &LoraConfig::base_model_name_or_path)
      .def_readwrite("source_json", &LoraConfig::source_json)
      .def("scale", &LoraConfig::scale)
      .def("to_json", &LoraConfig::to_json)
      .def("validate", &LoraConfig::validate, py::arg("where") = "LoRA")
      .def_static("from_json", &LoraConfig::from_json, py::arg("text"), py::arg("where") = "adapter_config.json")
      .def_static("all_linear", &LoraConfig::all_linear);

  py::class_<Adapters>(pm, "LoraModel")
      .def_static(
          "attach", [](QwenForCausalLM& model, const LoraConfig& c) { return Adapters{LoraModel::attach(model, c)}; },
          py::arg("model"), py::arg("config"), py::keep_alive<0, 1>(),
          "Fresh adapters on the targeted projections (A kaiming-uniform, B zero); the base is frozen")
      .def_static(
          "from_pretrained",
          [](QwenForCausalLM& model, const std::string& dir, bool trainable) {
            py::gil_scoped_release nogil;
            return Adapters{LoraModel::from_pretrained(model, dir, trainable)};
          },
          py::arg("model"), py::arg("dir"), py::arg("trainable") = false, py::keep_alive<0, 1>(),
          "The adapters of a PEFT folder (adapter_config.json, adapter_model.safetensors) attached to model")
      .def(
          "save_pretrained",
          [](const Adapters& a, const std::string& dir) {
            a.check("save_pretrained");
            py::gil_scoped_release nogil;
            a.lm->save_pretrained(dir);
          },
          py::arg("dir"), "Writes adapter_config.json and adapter_model.safetensors")
      .def(
          "peft_state_dict",
          [](const Adapters& a) {
            a.check("peft_state_dict");
            return a.lm->peft_state_dict();
          },
          "The adapter weights under PEFT's saved names (base_model.model.<module>.lora_A.weight, ...)")
      .def(
          "load_peft_state_dict",
          [](Adapters& a, const TensorMap& tensors, const std::string& where) {
            a.check("load_peft_state_dict");
            a.lm->load_peft_state_dict(tensors, where);
          },
          py::arg("tensors"), py::arg("where") = "adapter")
      .def(
          "adapters",
          [](const Adapters& a) {
            py::list out;
            for (const auto& [path, l] : a.lm->adapters)
              out.append(py::make_tuple(path, l->lora_A.weight, l->lora_B.weight, l->scale));
            return out;
          },
          "(module path, lora_A weight (r, in), lora_B weight (out, r), scale) per adapter, in model order")
      .def(
          "merge_and_unload", [](Adapters& a) { a.detach(true); }, "Folds W += B A * scale in and drops the adapters")
      .def(
          "unload", [](Adapters& a) { a.detach(false); }, "Drops the adapters, leaving the base weights as they are")
      .def("set_enabled", &Adapters::set_enabled, py::arg("on"))
      .def_readonly("enabled", &Adapters::enabled)
      .def_readonly("attached", &Adapters::attached)
      .def(
          "train", [](Adapters& a, bool on) { a.lm->train(on); }, py::arg("mode") = true,
          "Training mode of the adapters (their dropout)")
      .def_property_readonly("training", [](const Adapters& a) { return a.lm->is_training(); })
      .def_property_readonly("config", [](const Adapters& a) { return a.lm->config; });
}

}  // namespace genesis::python
