// lora.cpp - genesis/models/lora.hpp: LoRA adapters beside the Qwen projections, PEFT's adapter_config.json and
// adapter_model.safetensors, merging.
#include "genesis/models/lora.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "genesis/autograd.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/init.hpp"

namespace genesis::models {

namespace F = nn::functional;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string shape_text(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

[[noreturn]] void bad_field(const std::string& where, const std::string& field, const std::string& what) {
  throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + where + ": " + field + " " + what);
}

}  // namespace

// ---------------------------------------------------------------- config

std::vector<std::string> LoraConfig::all_linear() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

std::vector<std::string> LoraConfig::parse_targets(const std::string& s) {
  if (s == "all-linear") return all_linear();
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    std::string t = s.substr(at, comma - at);
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    if (!t.empty()) out.push_back(t);
    at = comma + 1;
  }
  return out;
}

double LoraConfig::scale() const {
  return use_rslora ? lora_alpha / std::sqrt(static_cast<double>(r)) : lora_alpha / static_cast<double>(r);
}

void LoraConfig::validate(const std::string& where) const {
  if (r < 1) bad_field(where, "r", "must be >= 1, got " + std::to_string(r));
  if (!std::isfinite(lora_alpha) || lora_alpha == 0) bad_field(where, "lora_alpha", "must be a non-zero number");
  if (!(lora_dropout >= 0 && lora_dropout < 1)) bad_field(where, "lora_dropout", "must be in [0, 1)");
  if (target_modules.empty()) bad_field(where, "target_modules", "names no module");
  const std::vector<std::string> known = all_linear();
  for (const std::string& t : target_modules)
    if (std::find(known.begin(), known.end(), t) == known.end())
      bad_field(where, "target_modules",
                "\"" + t +
                    "\" is not a Qwen projection (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                    "down_proj or all-linear)");
}

LoraConfig LoraConfig::from_json(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + where + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + where + ": not a JSON object");
  LoraConfig c;
  c.source_json = text;
  auto str = [&](const char* k) -> std::string {
    if (!j.contains(k) || j[k].is_null()) return "";
    if (!j[k].is_string()) bad_field(where, k, "must be a string");
    return j[k].get<std::string>();
  };
  auto num = [&](const char* k, double dflt) -> double {
    if (!j.contains(k) || j[k].is_null()) return dflt;
    if (!j[k].is_number()) bad_field(where, k, "must be a number");
    return j[k].get<double>();
  };
  auto flag = [&](const char* k) -> bool {
    if (!j.contains(k) || j[k].is_null()) return false;
    if (!j[k].is_boolean()) bad_field(where, k, "must be true or false");
    return j[k].get<bool>();
  };
  const std::string type = str("peft_type");
  if (type != "LORA") bad_field(where, "peft_type", "\"" + type + "\" is not supported (only LORA)");
  if (!j.contains("r") || !j["r"].is_number_integer()) bad_field(where, "r", "must be an integer");
  c.r = j["r"].get<int64_t>();
  c.lora_alpha = num("lora_alpha", 8);
  c.lora_dropout = num("lora_dropout", 0);
  c.use_rslora = flag("use_rslora");
  const std::string bias = str("bias");
  if (!bias.empty() && bias != "none") bad_field(where, "bias", "\"" + bias + "\" is not supported (only \"none\")");
  if (flag("fan_in_fan_out")) bad_field(where, "fan_in_fan_out", "true is not supported (Qwen's Linear layers)");
  if (flag("use_dora")) bad_field(where, "use_dora", "true is not supported (DoRA)");
  if (flag("lora_bias")) bad_field(where, "lora_bias", "true is not supported (bias-free adapters only)");
  const std::string task = str("task_type");
  if (!task.empty() && task != "CAUSAL_LM")
    bad_field(where, "task_type", "\"" + task + "\" is not supported (only CAUSAL_LM)");
  for (const char* k : {"layers_to_transform", "layers_pattern", "modules_to_save", "exclude_modules",
                        "layer_replication", "trainable_token_indices"})
    if (j.contains(k) && !j[k].is_null() && !(j[k].is_array() && j[k].empty()))
      bad_field(where, k, "is not supported (only null)");
  for (const char* k : {"rank_pattern", "alpha_pattern"})
    if (j.contains(k) && !j[k].is_null() && !(j[k].is_object() && j[k].empty()))
      bad_field(where, k, "is not supported (only {})");
  if (!j.contains("target_modules") || j["target_modules"].is_null()) bad_field(where, "target_modules", "is missing");
  const json& t = j["target_modules"];
  if (t.is_string()) {
    if (t.get<std::string>() != "all-linear")
      bad_field(where, "target_modules", "as a string must be \"all-linear\" (regular expressions are not supported)");
    c.target_modules = all_linear();
  } else if (t.is_array()) {
    c.target_modules.clear();
    for (const json& e : t) {
      if (!e.is_string()) bad_field(where, "target_modules", "must hold strings");
      if (e.get<std::string>() == "lm_head") bad_field(where, "target_modules", "\"lm_head\" is not supported");
      c.target_modules.push_back(e.get<std::string>());
    }
    // PEFT writes the list in set order: keep the model's order.
    std::vector<std::string> ordered;
    for (const std::string& n : all_linear())
      if (std::find(c.target_modules.begin(), c.target_modules.end(), n) != c.target_modules.end())
        ordered.push_back(n);
    for (const std::string& n : c.target_modules)
      if (std::find(ordered.begin(), ordered.end(), n) == ordered.end()) ordered.push_back(n);
    c.target_modules = ordered;
  } else {
    bad_field(where, "target_modules", "must be a list of names or \"all-linear\"");
  }
  c.base_model_name_or_path = str("base_model_name_or_path");
  c.validate(where);
  return c;
}

std::string LoraConfig::to_json() const {
  json j = json::object();
  if (!source_json.empty()) {
    try {
      j = json::parse(source_json);
    } catch (const json::exception&) {
      j = json::object();
    }
  }
  j["peft_type"] = "LORA";
  j["task_type"] = "CAUSAL_LM";
  j["r"] = r;
  j["lora_alpha"] = lora_alpha;
  j["lora_dropout"] = lora_dropout;
  j["use_rslora"] = use_rslora;
  j["target_modules"] = target_modules;
  j["bias"] = "none";
  j["fan_in_fan_out"] = false;
  j["base_model_name_or_path"] = base_model_name_or_path.empty() ? json(nullptr) : json(base_model_name_or_path);
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["use_dora"] = false;
  j["modules_to_save"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["rank_pattern"] = json::object();
  j["alpha_pattern"] = json::object();
  j["revision"] = nullptr;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------- one adapter

LoraLayer::LoraLayer(int64_t in, int64_t out, const LoraConfig& c, const Options& f)
    : lora_A(in, c.r, false, f), lora_B(c.r, out, false, f), scale(c.scale()), dropout(c.lora_dropout) {
  register_module("lora_A", lora_A);
  register_module("lora_B", lora_B);
  NoGradGuard no_grad;
  nn::init::kaiming_uniform_(lora_A.weight, std::sqrt(5.0));  // PEFT's init_lora_weights=True
  nn::init::zeros_(lora_B.weight);
}

Tensor LoraLayer::delta(const Tensor& x) {
  Tensor in = x.dtype() == lora_A.weight.dtype() ? x : x.to(lora_A.weight.dtype());
  if (dropout > 0 && is_training() && autograd::grad_enabled()) in = F::dropout(in, dropout, true);
  Tensor y = F::linear(F::linear(in, lora_A.weight), lora_B.weight) * scale;
  return y.dtype() == x.dtype() ? y : y.to(x.dtype());
}

Tensor LoraLayer::weight_delta() const { return lora_B.weight.matmul(lora_A.weight) * scale; }

Tensor lora_add(const Tensor& y, const std::shared_ptr<LoraLayer>& adapter, const Tensor& x) {
  return adapter ? y + adapter->delta(x) : y;
}

Tensor lora_add_fused(const Tensor& y, const std::vector<const std::shared_ptr<LoraLayer>*>& adapters,
                      const std::vector<int64_t>& sizes, const Tensor& x) {
  if (std::none_of(adapters.begin(), adapters.end(), [](const std::shared_ptr<LoraLayer>* a) { return bool(*a); }))
    return y;
  std::vector<Tensor> parts;
  for (size_t i = 0; i < adapters.size(); ++i) {
    if (*adapters[i]) {
      parts.push_back((*adapters[i])->delta(x));
    } else {
      Shape s = x.shape();
      s.back() = sizes[i];
      parts.push_back(zeros(s, {.dtype = y.dtype(), .device = y.device()}));
    }
  }
  return y + (parts.size() == 1 ? parts[0] : F::cat(parts, -1));
}

bool lora_requires_grad(const QwenDecoderLayer& l) {
  for (const std::shared_ptr<LoraLayer>* a : {&l.self_attn.q_lora, &l.self_attn.k_lora, &l.self_attn.v_lora,
                                              &l.self_attn.o_lora, &l.mlp.gate_lora, &l.mlp.up_lora, &l.mlp.down_lora})
    if (*a && ((*a)->lora_A.weight.requires_grad() || (*a)->lora_B.weight.requires_grad())) return true;
  return false;
}

// ---------------------------------------------------------------- the model's adapters

std::shared_ptr<LoraModel> LoraModel::attach(QwenForCausalLM& m, const LoraConfig& c) {
  c.validate();
  auto lm = std::make_shared<LoraModel>();
  lm->config = c;
  lm->model = &m;
  NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters()) p.requires_grad_(false);
  for (size_t i = 0; i < m.model.layers.size(); ++i) {
    QwenDecoderLayer& L = *m.model.layers[i];
    const std::string at = "model.layers." + std::to_string(i) + ".";
    const std::vector<std::tuple<std::string, std::shared_ptr<LoraLayer>*, nn::Linear*>> projections = {
        {"self_attn.q_proj", &L.self_attn.q_lora, &L.self_attn.q_proj},
        {"self_attn.k_proj", &L.self_attn.k_lora, &L.self_attn.k_proj},
        {"self_attn.v_proj", &L.self_attn.v_lora, &L.self_attn.v_proj},
        {"self_attn.o_proj", &L.self_attn.o_lora, &L.self_attn.o_proj},
        {"mlp.gate_proj", &L.mlp.gate_lora, &L.mlp.gate_proj},
        {"mlp.up_proj", &L.mlp.up_lora, &L.mlp.up_proj},
        {"mlp.down_proj", &L.mlp.down_lora, &L.mlp.down_proj}};
    for (const auto& [path, hook, base] : projections) {
      const std::string leaf = path.substr(path.find('.') + 1);
      if (std::find(c.target_modules.begin(), c.target_modules.end(), leaf) == c.target_modules.end()) continue;
      // A mixture-of-experts layer's experts get no adapters (as PEFT over transformers 5's fused experts).
      if (L.feed_forward_block && path.rfind("mlp.", 0) == 0) continue;
      if (*hook) {
        lm->unload();
        throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + at + path + " already has an adapter (unload it first)");
      }
      // Adapters over a bfloat16/float16 base are kept in float32, as PEFT does (autocast_adapter_dtype).
      const Tensor& w = base->weight;
      const DType dt = w.dtype() == DType::bf16 || w.dtype() == DType::f16 ? DType::f32 : w.dtype();
      auto a = std::make_shared<LoraLayer>(base->in_features, base->out_features, c,
                                           Options{.dtype = dt, .device = w.device()});
      a->lora_A.weight.requires_grad_(true);
      a->lora_B.weight.requires_grad_(true);
      std::string reg = at + path;
      std::replace(reg.begin(), reg.end(), '.', '_');
      lm->register_module(reg, a);
      lm->adapters.emplace_back(at + path, a);
      lm->slots_.push_back({hook, base});
      *hook = a;
    }
  }
  return lm;
}

TensorMap LoraModel::peft_state_dict() const {
  TensorMap out;
  for (const auto& [path, a] : adapters) {
    out["base_model.model." + path + ".lora_A.weight"] = a->lora_A.weight.detach();
    out["base_model.model." + path + ".lora_B.weight"] = a->lora_B.weight.detach();
  }
  return out;
}

void LoraModel::load_peft_state_dict(const TensorMap& tensors, const std::string& where) {
  const TensorMap want = peft_state_dict();
  for (const auto& [k, t] : tensors) {
    // PEFT keeps the adapter name out of saved keys; a ".default." left in is accepted too.
    std::string key = k;
    const size_t d = key.find(".default.weight");
    if (d != std::string::npos) key = key.substr(0, d) + ".weight";
    if (!want.count(key))
      throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + where + ": unexpected tensor " + k +
                                               " (not a LoRA weight of a targeted projection of this model)");
  }
  NoGradGuard no_grad;
  for (const auto& [k, dst] : want) {
    auto it = tensors.find(k);
    if (it == tensors.end()) {
      const std::string alt = k.substr(0, k.size() - std::string(".weight").size()) + ".default.weight";
      it = tensors.find(alt);
    }
    if (it == tensors.end())
      throw Error(GN_ERR_INVALID_ARGUMENT, "[lora] " + where + ": missing tensor " + k + " " + shape_text(dst.shape()));
    if (it->second.shape() != dst.shape())
      throw Error(GN_ERR_SHAPE, "[lora] " + where + ": tensor " + k + " has shape " + shape_text(it->second.shape()) +
                                    " but this base model needs " + shape_text(dst.shape()) +
                                    " (an adapter for another base model or rank?)");
  }
  for (const auto& [k, dst] : want) {
    auto it = tensors.find(k);
    if (it == tensors.end()) it = tensors.find(k.substr(0, k.size() - 7) + ".default.weight");
    Tensor d = dst;
    d.copy_(it->second.to(dst.device()).to(dst.dtype()));
  }
}

std::shared_ptr<LoraModel> LoraModel::from_pretrained(QwenForCausalLM& m, const std::string& dir, bool trainable) {
  const fs::path cfg = fs::path(dir) / "adapter_config.json";
  const fs::path st = fs::path(dir) / "adapter_model.safetensors";
  LoraConfig c = LoraConfig::from_json(read_text_file(cfg.string()), cfg.string());
  if (!fs::is_regular_file(st)) {
    if (fs::is_regular_file(fs::path(dir) / "adapter_model.bin"))
      throw Error(GN_ERR_UNSUPPORTED, "[lora] " + dir +
                                          ": adapter_model.bin (pickle) is not supported; save the "
                                          "adapter with safe_serialization=True");
    throw Error(GN_ERR_NOT_FOUND, "[lora] " + st.string() + ": not found");
  }
  SafetensorsFile f = load_safetensors(st.string(), m.model.embed_tokens.weight.device());
  auto lm = attach(m, c);
  try {
    lm->load_peft_state_dict(f.tensors, st.string());
  } catch (...) {
    lm->unload();
    throw;
  }
  if (!trainable)
    for (auto& [path, a] : lm->adapters) {
      a->lora_A.weight.requires_grad_(false);
      a->lora_B.weight.requires_grad_(false);
    }
  lm->eval();
  return lm;
}

void LoraModel::save_pretrained(const std::string& dir) const {
  fs::create_directories(dir);
  atomic_write_file((fs::path(dir) / "adapter_config.json").string(), config.to_json());
  save_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), peft_state_dict(), {{"format", "pt"}});
}

void LoraModel::merge_and_unload() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < slots_.size(); ++i) {
    // W + B A * scale in at least float32, rounded once to W's dtype; W is a view of the fused buffer, updated in
    // place (the fused inference kernels stay on).
    Tensor w = slots_[i].base->weight;
    const Tensor d = adapters[i].second->weight_delta();
    const DType hi = w.dtype() == DType::f64 || d.dtype() == DType::f64 ? DType::f64 : DType::f32;
    w.copy_((w.to(hi) + d.to(hi)).to(w.dtype()));
  }
  unload();
}

void LoraModel::unload() {
  for (Slot& s : slots_) s.hook->reset();
  slots_.clear();
}

}  // namespace genesis::models
