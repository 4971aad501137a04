// config.cpp - decoder config.json / generation_config.json parsing, presets and writing.
//
// One decoder serves Qwen2/2.5/3 dense, Llama, Mistral, Gemma 2 and Gemma 3 text: from_json maps each family's
// fields (model_type picks the family) onto the switches of QwenConfig.  Every field that changes the maths is
// either understood or refused: a config that turns on MoE, an unknown rope type or activation, biased MLPs, ...
// fails with a message naming the field instead of loading a model that computes something else.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "genesis/models/qwen.hpp"

namespace genesis::models {

using json = nlohmann::ordered_json;

namespace {

// Bounds on config.json fields (each far above released models: Qwen's largest vocab is 152064, hidden
// size 8192, 80 layers, 64 heads, 131072 positions).
constexpr int64_t kMaxVocab = int64_t{1} << 22;
constexpr int64_t kMaxWidth = int64_t{1} << 16;
constexpr int64_t kMaxFfn = int64_t{1} << 18;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kMaxPositions = int64_t{1} << 24;
constexpr int64_t kMaxParameters = int64_t{1} << 40;
constexpr int64_t kMaxExperts = 4096;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] " + where + ": " + what);
}

json parse_object(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad(where, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad(where, "the top level must be a JSON object");
  return j;
}

int64_t get_int(const json& j, const char* key, const std::string& where, int64_t fallback, bool required,
                int64_t min_value = 1, int64_t max_value = INT64_MAX) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) bad(where, std::string("missing field '") + key + "'");
    return fallback;
  }
  const json& v = j[key];
  if (!v.is_number_integer()) bad(where, std::string("field '") + key + "' must be an integer, got " + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    bad(where, std::string("field '") + key + "' = " + v.dump() + " is out of range");
  const int64_t x = v.get<int64_t>();
  if (x < min_value)
    bad(where,
        std::string("field '") + key + "' must be >= " + std::to_string(min_value) + ", got " + std::to_string(x));
  if (x > max_value)
    bad(where, std::string("field '") + key + "' = " + std::to_string(x) + " is larger than the limit " +
                   std::to_string(max_value) + " (a damaged or hostile config?)");
  return x;
}

double get_num(const json& j, const char* key, const std::string& where, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) bad(where, std::string("field '") + key + "' must be a number, got " + j[key].dump());
  const double x = j[key].get<double>();
  if (!std::isfinite(x)) bad(where, std::string("field '") + key + "' must be a finite number, got " + j[key].dump());
  return x;
}

bool get_bool(const json& j, const char* key, const std::string& where, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) bad(where, std::string("field '") + key + "' must be true or false, got " + j[key].dump());
  return j[key].get<bool>();
}

// An id field that may be an integer or a list of integers (eos_token_id).
std::vector<int64_t> get_ids(const json& j, const char* key, const std::string& where) {
  std::vector<int64_t> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  const json& v = j[key];
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (!v.is_array()) bad(where, std::string("field '") + key + "' must be an integer or a list of integers");
  if (v.size() > 1024) bad(where, std::string("field '") + key + "' holds more than 1024 ids");
  for (const json& e : v) {
    if (!e.is_number_integer()) bad(where, std::string("field '") + key + "' must hold integers, got " + e.dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

const char* const kArchitectures[][2] = {
    {"qwen2", "Qwen2ForCausalLM"},        {"qwen3", "Qwen3ForCausalLM"},   {"llama", "LlamaForCausalLM"},
    {"mistral", "MistralForCausalLM"},    {"gemma2", "Gemma2ForCausalLM"}, {"gemma3_text", "Gemma3ForCausalLM"},
    {"qwen3_moe", "Qwen3MoeForCausalLM"},
};

// A rope object (rope_parameters / rope_scaling, or one layer type's entry): its theta (fallback when absent) and
// its scaling, as transformers' modeling_rope_utils reads them.  Unknown types and partial rotary are refused.
RopeParameters parse_rope(const json& r, const std::string& field, const std::string& where, double* theta) {
  RopeParameters p;
  if (r.is_null()) return p;
  if (!r.is_object()) bad(where, "field '" + field + "' must be an object");
  if (theta) *theta = get_num(r, "rope_theta", where + " " + field, *theta);
  std::string type = "default", type_key = "rope_type";
  for (const char* k : {"type", "rope_type"})
    if (r.contains(k) && !r[k].is_null()) {
      if (!r[k].is_string()) bad(where, "field '" + field + "." + k + "' must be a string");
      type = r[k].get<std::string>();
      type_key = k;
    }
  if (field == "rope_scaling" && !r.empty() && !r.contains("rope_type") && !r.contains("type"))
    bad(where, "field 'rope_scaling' is set but names no rope type");
  if (type != "default" && type != "linear" && type != "dynamic" && type != "yarn" && type != "llama3")
    bad(where, "field '" + field + "." + type_key + "' = \"" + type +
                   "\" is not supported (default, linear, dynamic, yarn and llama3 are)");
  p.rope_type = type;
  const std::string w = where + " " + field;
  if (get_num(r, "partial_rotary_factor", w, 1.0) != 1.0)
    bad(where, "field '" + field + ".partial_rotary_factor' must be 1 (partial rotary embeddings are not supported)");
  if (type == "default") return p;
  if (!r.contains("factor") || r["factor"].is_null()) bad(where, "field '" + field + ".factor' is required by " + type);
  p.factor = get_num(r, "factor", w, 1.0);
  if (!(p.factor > 0)) bad(where, "field '" + field + ".factor' must be > 0");
  if (type == "linear" || type == "dynamic") {
    if (type == "dynamic" && p.factor < 1) bad(where, "field '" + field + ".factor' must be >= 1 for dynamic");
    p.original_max_position_embeddings = get_int(r, "original_max_position_embeddings", w, 0, false, 1, kMaxPositions);
    return p;
  }
  p.original_max_position_embeddings =
      get_int(r, "original_max_position_embeddings", w, 0, type == "llama3", 1, kMaxPositions);
  if (type == "llama3") {
    p.low_freq_factor = get_num(r, "low_freq_factor", w, 1.0);
    p.high_freq_factor = get_num(r, "high_freq_factor", w, 4.0);
    if (!(p.low_freq_factor > 0) || !(p.high_freq_factor > p.low_freq_factor))
      bad(where, "field '" + field + "': llama3 needs 0 < low_freq_factor < high_freq_factor");
    return p;
  }
  // yarn
  if (r.contains("attention_factor") && !r["attention_factor"].is_null())
    p.attention_factor = get_num(r, "attention_factor", w, 1.0);
  if (r.contains("mscale") && !r["mscale"].is_null()) p.mscale = get_num(r, "mscale", w, 0.0);
  if (r.contains("mscale_all_dim") && !r["mscale_all_dim"].is_null())
    p.mscale_all_dim = get_num(r, "mscale_all_dim", w, 0.0);
  const double bf = get_num(r, "beta_fast", w, 0.0), bs = get_num(r, "beta_slow", w, 0.0);
  p.beta_fast = bf != 0 ? bf : 32;  // transformers: `or 32`, `or 1`
  p.beta_slow = bs != 0 ? bs : 1;
  p.truncate = get_bool(r, "truncate", w, true);
  return p;
}

// Qwen3-MoE's fields: experts, routing, which layers are sparse, the load-balancing loss.
void parse_moe(const json& j, const std::string& where, QwenConfig& c) {
  const char* experts = j.contains("num_experts") && !j["num_experts"].is_null() ? "num_experts" : "num_local_experts";
  c.num_experts = get_int(j, experts, where, 0, true, 1, kMaxExperts);
  c.num_experts_per_tok = get_int(j, "num_experts_per_tok", where, 0, true, 1, c.num_experts);
  c.moe_intermediate_size = get_int(j, "moe_intermediate_size", where, 0, true, 1, kMaxFfn);
  c.decoder_sparse_step = get_int(j, "decoder_sparse_step", where, 1, false, 1, kMaxLayers);
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", where, false);
  c.router_aux_loss_coef = get_num(j, "router_aux_loss_coef", where, 0.001);
  c.output_router_logits = get_bool(j, "output_router_logits", where, false);
  c.mlp_only_layers.clear();
  if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
    const json& m = j["mlp_only_layers"];
    if (!m.is_array() || m.size() > static_cast<size_t>(kMaxLayers))
      bad(where, "field 'mlp_only_layers' must be a list of layer numbers");
    for (const json& l : m) {
      if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= c.num_hidden_layers)
        bad(where, "field 'mlp_only_layers' holds " + l.dump() + ", not a layer number in [0, " +
                       std::to_string(c.num_hidden_layers) + ")");
      c.mlp_only_layers.push_back(l.get<int64_t>());
    }
  }
  if (c.hidden_act != "silu")
    bad(where, "field 'hidden_act' = \"" + c.hidden_act + "\": qwen3_moe's experts are SwiGLU (\"silu\")");
  if (get_bool(j, "use_qk_norm", where, true) == false) bad(where, "field 'use_qk_norm' = false is not supported");
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(GN_ERR_NOT_FOUND, "[qwen] cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(GN_ERR_IO, "[qwen] cannot read " + path);
  return ss.str();
}

QwenConfig QwenConfig::from_json(const std::string& text, const std::string& where) {
  const json j = parse_object(text, where);
  QwenConfig c;
  c.source_json = text;
  if (!j.contains("model_type") || !j["model_type"].is_string()) bad(where, "missing string field 'model_type'");
  c.model_type = j["model_type"].get<std::string>();
  if (c.model_type == "gemma3") c.model_type = "gemma3_text";  // a text-only Gemma3ForCausalLM config
  if (c.model_type == "qwen2_moe")
    bad(where, "model_type 'qwen2_moe' (shared-expert mixture of experts) is not supported; qwen3_moe is");
  bool known = false;
  for (const auto& a : kArchitectures) known = known || c.model_type == a[0];
  if (!known)
    bad(where, "model_type '" + c.model_type +
                   "' is not a supported decoder (qwen2, qwen3, qwen3_moe, llama, mistral, gemma2, gemma3_text)");
  if (j.contains("architectures") && j["architectures"].is_array())
    for (const json& a : j["architectures"]) {
      bool ok = false;
      for (const auto& k : kArchitectures) {
        if (!a.is_string() || a.get<std::string>() != k[1]) continue;
        ok = true;
        if (c.model_type != k[0])
          bad(where, "field 'architectures' holds " + a.dump() + " but model_type is '" + c.model_type + "'");
      }
      if (!ok)
        bad(where, "field 'architectures' holds " + a.dump() +
                       "; supported: Qwen2ForCausalLM, Qwen3ForCausalLM, LlamaForCausalLM, MistralForCausalLM, "
                       "Gemma2ForCausalLM, Gemma3ForCausalLM, Qwen3MoeForCausalLM");
    }
  const bool moe = c.model_type == "qwen3_moe";
  if (!moe)
    for (const char* k : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_local_experts"})
      if (j.contains(k) && !j[k].is_null() && !(j[k].is_number() && j[k].get<double>() == 0))
        bad(where, std::string("field '") + k + "' (mixture of experts) is read by qwen3_moe only");
  const bool gemma = c.model_type == "gemma2" || c.model_type == "gemma3_text";

  // Bounds far above any released model, so a damaged or hostile config is refused before anything is
  // allocated (the weight files are then checked against it, see from_pretrained).
  c.vocab_size = get_int(j, "vocab_size", where, 0, true, 1, kMaxVocab);
  c.hidden_size = get_int(j, "hidden_size", where, 0, true, 1, kMaxWidth);
  c.intermediate_size = get_int(j, "intermediate_size", where, 0, true, 1, kMaxFfn);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", where, 0, true, 1, kMaxLayers);
  c.num_attention_heads = get_int(j, "num_attention_heads", where, 0, true, 1, kMaxHeads);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", where, c.num_attention_heads, false, 1, kMaxHeads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    bad(where, "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                   ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = get_int(j, "head_dim", where, 0, true, 1, kMaxHeadDim);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      bad(where, "hidden_size must be a multiple of num_attention_heads when head_dim is absent");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) bad(where, "head_dim must be even for rotary embeddings, got " + std::to_string(c.head_dim));
  if (c.head_dim > kMaxHeadDim)
    bad(where, "head_dim (hidden_size / num_attention_heads) = " + std::to_string(c.head_dim) +
                   " is larger than the limit " + std::to_string(kMaxHeadDim));
  c.max_position_embeddings = get_int(j, "max_position_embeddings", where, 32768, false, 1, kMaxPositions);
  c.rms_norm_eps = get_num(j, "rms_norm_eps", where, 1e-6);
  if (!(c.rms_norm_eps > 0 && c.rms_norm_eps < 1))
    bad(where, "field 'rms_norm_eps' must be in (0, 1), got " + std::to_string(c.rms_norm_eps));
  c.initializer_range = get_num(j, "initializer_range", where, 0.02);
  if (c.initializer_range < 0)
    bad(where, "field 'initializer_range' must be >= 0, got " + std::to_string(c.initializer_range));
  // transformers' defaults: Gemma ties the head unless told otherwise; the others do not.
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", where, gemma);
  c.attention_bias = c.model_type == "qwen2" ? true : get_bool(j, "attention_bias", where, false);
  c.qk_norm = c.model_type == "qwen3" || c.model_type == "qwen3_moe" || c.model_type == "gemma3_text";
  if (get_bool(j, "mlp_bias", where, false)) bad(where, "field 'mlp_bias' = true is not supported");
  if (get_num(j, "pretraining_tp", where, 1) != 1) bad(where, "field 'pretraining_tp' must be 1");
  if (gemma) {
    c.norm_offset = c.sandwich_norms = c.scale_embeddings = true;
    c.query_pre_attn_scalar = get_num(j, "query_pre_attn_scalar", where, 256);
    if (!(c.query_pre_attn_scalar > 0)) bad(where, "field 'query_pre_attn_scalar' must be > 0");
    c.attn_logit_softcapping = get_num(j, "attn_logit_softcapping", where, c.model_type == "gemma2" ? 50.0 : 0.0);
    c.final_logit_softcapping = get_num(j, "final_logit_softcapping", where, c.model_type == "gemma2" ? 30.0 : 0.0);
    if (c.attn_logit_softcapping < 0) bad(where, "field 'attn_logit_softcapping' must be >= 0");
    if (c.final_logit_softcapping < 0) bad(where, "field 'final_logit_softcapping' must be >= 0");
    if (get_bool(j, "use_bidirectional_attention", where, false))
      bad(where, "field 'use_bidirectional_attention' = true is not supported (causal attention only)");
  } else {
    for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"})
      if (j.contains(k) && !j[k].is_null()) bad(where, std::string("field '") + k + "' is not read by " + c.model_type);
  }

  // Rope: 4.x "rope_theta" (+ "rope_scaling"), 5.x "rope_parameters" {"rope_theta", "rope_type", ...}; Gemma 3:
  // 5.x keys rope_parameters by layer type, 4.x gives the sliding layers "rope_local_base_freq".
  c.rope_theta = get_num(j, "rope_theta", where, c.model_type == "gemma3_text" ? 1000000.0 : 10000.0);
  const bool per_type =
      j.contains("rope_parameters") && j["rope_parameters"].is_object() &&
      (j["rope_parameters"].contains("full_attention") || j["rope_parameters"].contains("sliding_attention"));
  if (per_type) {
    if (c.model_type != "gemma3_text")
      bad(where, "field 'rope_parameters' is keyed by layer type, which " + c.model_type + " does not read");
    const json& rp = j["rope_parameters"];
    for (auto it = rp.begin(); it != rp.end(); ++it)
      if (it.key() != "full_attention" && it.key() != "sliding_attention")
        bad(where, "field 'rope_parameters." + it.key() + "': only full_attention and sliding_attention are read");
    if (rp.contains("full_attention"))
      c.rope_scaling = parse_rope(rp["full_attention"], "rope_parameters.full_attention", where, &c.rope_theta);
    c.rope_local_theta = 10000.0;
    if (rp.contains("sliding_attention")) {
      const RopeParameters local =
          parse_rope(rp["sliding_attention"], "rope_parameters.sliding_attention", where, &c.rope_local_theta);
      if (local.rope_type != "default")
        bad(where, "field 'rope_parameters.sliding_attention.rope_type' must be \"default\"");
    }
  } else {
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
      c.rope_scaling = parse_rope(j["rope_scaling"], "rope_scaling", where, nullptr);
    if (j.contains("rope_parameters") && !j["rope_parameters"].is_null())
      c.rope_scaling = parse_rope(j["rope_parameters"], "rope_parameters", where, &c.rope_theta);
    if (c.model_type == "gemma3_text") c.rope_local_theta = get_num(j, "rope_local_base_freq", where, 10000.0);
  }
  if (!(c.rope_theta > 0)) bad(where, "rope_theta must be > 0");
  if (c.rope_local_theta < 0 || (c.model_type == "gemma3_text" && !(c.rope_local_theta > 0)))
    bad(where, "the sliding layers' rope_theta must be > 0");
  if (c.rope_scaling.rope_type == "dynamic" && c.rope_local_theta > 0)
    bad(where, "dynamic rope scaling with a per-layer-type rope is not supported");

  // Sliding windows: Mistral's on every layer; Gemma's on the layers layer_types names (default: Gemma 2
  // alternates from layer 0, Gemma 3 keeps every sliding_window_pattern-th layer full).
  const bool has_types = j.contains("layer_types") && !j["layer_types"].is_null();
  if (has_types) {
    const json& lt = j["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != c.num_hidden_layers)
      bad(where, "field 'layer_types' must be a list of num_hidden_layers (" + std::to_string(c.num_hidden_layers) +
                     ") strings");
    for (const json& t : lt) {
      if (t != "full_attention" && t != "sliding_attention")
        bad(where, "field 'layer_types' holds " + t.dump() +
                       "; only \"full_attention\" and \"sliding_attention\" are supported");
      c.layer_types.push_back(t.get<std::string>());
    }
  }
  if (c.model_type == "qwen2" || c.model_type == "qwen3" || moe) {
    if (get_bool(j, "use_sliding_window", where, false))
      bad(where, "field 'use_sliding_window' = true is not supported for " + c.model_type);
    for (const std::string& t : c.layer_types)
      if (t != "full_attention")
        bad(where, "field 'layer_types' holds \"" + t + "\"; " + c.model_type + " supports only \"full_attention\"");
  } else if (c.model_type == "llama") {
    for (const std::string& t : c.layer_types)
      if (t != "full_attention") bad(where, "field 'layer_types': llama has no sliding layers");
  } else {
    c.sliding_window = get_int(j, "sliding_window", where, gemma ? 4096 : 0, false, 1, kMaxPositions);
    if (c.model_type == "mistral") {
      if (has_types) bad(where, "field 'layer_types' is not read by mistral (its window is on every layer)");
      c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "sliding_attention");
    } else if (!has_types) {
      const int64_t pattern =
          c.model_type == "gemma2" ? 2 : get_int(j, "sliding_window_pattern", where, 6, false, 1, kMaxLayers);
      for (int64_t l = 0; l < c.num_hidden_layers; ++l)
        c.layer_types.push_back((l + 1) % pattern ? "sliding_attention" : "full_attention");
    }
    if (c.sliding_window == 0) c.layer_types.clear();  // Mistral without a window: full attention
  }
  const char* act_field = gemma && j.contains("hidden_activation") ? "hidden_activation" : "hidden_act";
  if (j.contains(act_field) && !j[act_field].is_null()) {
    if (!j[act_field].is_string()) bad(where, std::string("field '") + act_field + "' must be a string");
    c.hidden_act = j[act_field].get<std::string>();
  } else {
    c.hidden_act = gemma ? "gelu_pytorch_tanh" : "silu";
  }
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    bad(where, std::string("field '") + act_field + "' = \"" + c.hidden_act +
                   "\" is not supported (\"silu\" and \"gelu_pytorch_tanh\" are)");
  if (moe) parse_moe(j, where, c);
  if (get_num(j, "attention_dropout", where, 0.0) != 0.0)
    bad(where, "field 'attention_dropout' must be 0 (attention dropout is not supported)");
  if (j.contains("quantization_config"))
    bad(where, "field 'quantization_config': quantized checkpoints are not supported");

  for (const char* k : {"dtype", "torch_dtype"})
    if (j.contains(k) && j[k].is_string()) c.dtype = j[k].get<std::string>();
  // Special ids are only compared with generated ids, so one past vocab_size is harmless (never produced); absurd
  // ones are refused.
  c.bos_token_id = get_int(j, "bos_token_id", where, -1, false, 0, kMaxVocab);
  c.eos_token_ids = get_ids(j, "eos_token_id", where);
  for (int64_t id : c.eos_token_ids)
    if (id < 0 || id > kMaxVocab)
      bad(where,
          "field 'eos_token_id' holds " + std::to_string(id) + ", not an id in [0, " + std::to_string(kMaxVocab) + "]");
  if (c.num_parameters() > kMaxParameters)
    bad(where, "the config describes " + std::to_string(c.num_parameters()) + " parameters, over the limit " +
                   std::to_string(kMaxParameters));
  return c;
}

QwenConfig QwenConfig::from_file(const std::string& path) { return from_json(read_text_file(path), path); }

std::string QwenConfig::to_json() const {
  json j = source_json.empty() ? json::object() : parse_object(source_json, "config");
  std::string arch = "Qwen2ForCausalLM";
  for (const auto& a : kArchitectures)
    if (model_type == a[0]) arch = a[1];
  if (!j.contains("architectures")) j["architectures"] = json::array({arch});
  const bool gemma = model_type == "gemma2" || model_type == "gemma3_text";
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["max_position_embeddings"] = max_position_embeddings;
  j["rms_norm_eps"] = rms_norm_eps;
  j["initializer_range"] = initializer_range;
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (model_type == "qwen3" || model_type == "qwen3_moe") j["attention_bias"] = attention_bias;
  if (model_type == "qwen3_moe") {
    j[j.contains("num_local_experts") ? "num_local_experts" : "num_experts"] = num_experts;
    j["num_experts_per_tok"] = num_experts_per_tok;
    j["moe_intermediate_size"] = moe_intermediate_size;
    j["decoder_sparse_step"] = decoder_sparse_step;
    j["mlp_only_layers"] = mlp_only_layers;
    j["norm_topk_prob"] = norm_topk_prob;
    j["router_aux_loss_coef"] = router_aux_loss_coef;
    j["output_router_logits"] = output_router_logits;
  }
  j[gemma ? "hidden_activation" : "hidden_act"] = hidden_act;
  if (model_type != "qwen2" && model_type != "qwen3" && model_type != "llama") {
    j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
    if (model_type != "mistral" && !layer_types.empty()) j["layer_types"] = layer_types;
  }
  if (gemma) {
    j["query_pre_attn_scalar"] = query_pre_attn_scalar;
    j["attn_logit_softcapping"] = attn_logit_softcapping > 0 ? json(attn_logit_softcapping) : json(nullptr);
    j["final_logit_softcapping"] = final_logit_softcapping > 0 ? json(final_logit_softcapping) : json(nullptr);
  }
  const bool per_type = j.contains("rope_parameters") && j["rope_parameters"].is_object() &&
                        j["rope_parameters"].contains("full_attention");
  if (!j.contains("rope_parameters") && !j.contains("rope_theta")) {
    json rp = {{"rope_theta", rope_theta}, {"rope_type", rope_scaling.rope_type}};
    const RopeParameters& r = rope_scaling;
    if (r.rope_type != "default") rp["factor"] = r.factor;
    if (r.original_max_position_embeddings > 0)
      rp["original_max_position_embeddings"] = r.original_max_position_embeddings;
    if (r.rope_type == "llama3") {
      rp["low_freq_factor"] = r.low_freq_factor;
      rp["high_freq_factor"] = r.high_freq_factor;
    }
    if (r.rope_type == "yarn") {
      rp["beta_fast"] = r.beta_fast;
      rp["beta_slow"] = r.beta_slow;
      if (r.attention_factor) rp["attention_factor"] = *r.attention_factor;
      if (r.mscale) rp["mscale"] = *r.mscale;
      if (r.mscale_all_dim) rp["mscale_all_dim"] = *r.mscale_all_dim;
      if (!r.truncate) rp["truncate"] = false;
    }
    if (rope_local_theta > 0)
      rp = {{"full_attention", rp},
            {"sliding_attention", {{"rope_theta", rope_local_theta}, {"rope_type", "default"}}}};
    j["rope_parameters"] = rp;
  } else if (per_type) {
    j["rope_parameters"]["full_attention"]["rope_theta"] = rope_theta;
    if (rope_local_theta > 0) j["rope_parameters"]["sliding_attention"]["rope_theta"] = rope_local_theta;
  } else if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    j["rope_parameters"]["rope_theta"] = rope_theta;
  } else {
    j["rope_theta"] = rope_theta;
  }
  j["dtype"] = dtype;
  if (j.contains("torch_dtype")) j["torch_dtype"] = dtype;
  if (bos_token_id >= 0) j["bos_token_id"] = bos_token_id;
  if (eos_token_ids.size() == 1)
    j["eos_token_id"] = eos_token_ids[0];
  else if (!eos_token_ids.empty())
    j["eos_token_id"] = eos_token_ids;
  return j.dump(2) + "\n";
}

bool QwenConfig::is_sparse_layer(int64_t l) const {
  return num_experts > 0 && (l + 1) % decoder_sparse_step == 0 &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), l) == mlp_only_layers.end();
}

int64_t QwenConfig::num_parameters() const {
  const int64_t h = hidden_size, d = head_dim;
  const int64_t q = num_attention_heads * d, kv = num_key_value_heads * d;
  int64_t attn = h * q + 2 * h * kv + q * h + (attention_bias ? q + 2 * kv : 0) + (qk_norm ? 2 * d : 0);
  const int64_t norms = (sandwich_norms ? 4 : 2) * h;
  int64_t layers = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l)
    layers += attn + norms +
              (is_sparse_layer(l) ? num_experts * (h + 3 * h * moe_intermediate_size) : 3 * h * intermediate_size);
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + layers + h;
}

double QwenConfig::attention_scale() const {
  return 1.0 / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : static_cast<double>(head_dim));
}

int64_t QwenConfig::context_length() const {
  return rope_scaling.rope_type == "dynamic" ? kMaxPositions : max_position_embeddings;
}

std::string QwenConfig::paged_unsupported() const {
  // The paged op takes the scale, the window and soft-capping; dynamic rope scaling would need a rotary table per
  // sequence length.
  return rope_scaling.rope_type == "dynamic" ? "dynamic rope scaling (rope_parameters.rope_type)" : "";
}

namespace {

// name, type, vocab, hidden, ffn, layers, heads, kv heads, head_dim, tied, theta, max positions
struct Preset {
  const char* name;
  const char* type;
  int64_t vocab, hidden, ffn, layers, heads, kv, head_dim;
  bool tied;
  double theta;
  int64_t max_pos;
};
constexpr Preset kPresets[] = {
    {"qwen2.5-0.5b", "qwen2", 151936, 896, 4864, 24, 14, 2, 64, true, 1e6, 32768},
    {"qwen2.5-1.5b", "qwen2", 151936, 1536, 8960, 28, 12, 2, 128, true, 1e6, 32768},
    {"qwen2.5-3b", "qwen2", 151936, 2048, 11008, 36, 16, 2, 128, true, 1e6, 32768},
    {"qwen2.5-7b", "qwen2", 152064, 3584, 18944, 28, 28, 4, 128, false, 1e6, 32768},
    {"qwen3-0.6b", "qwen3", 151936, 1024, 3072, 28, 16, 8, 128, true, 1e6, 40960},
    {"qwen3-1.7b", "qwen3", 151936, 2048, 6144, 28, 16, 8, 128, true, 1e6, 40960},
    {"qwen3-4b", "qwen3", 151936, 2560, 9728, 36, 32, 8, 128, true, 1e6, 40960},
    {"qwen3-8b", "qwen3", 151936, 4096, 12288, 36, 32, 8, 128, false, 1e6, 40960},
    {"qwen3-30b-a3b", "qwen3_moe", 151936, 2048, 6144, 48, 32, 4, 128, false, 1e6, 40960},  // 128 experts, top 8
};

}  // namespace

QwenConfig QwenConfig::preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    QwenConfig c;
    c.model_type = p.type;
    c.vocab_size = p.vocab;
    c.hidden_size = p.hidden;
    c.intermediate_size = p.ffn;
    c.num_hidden_layers = p.layers;
    c.num_attention_heads = p.heads;
    c.num_key_value_heads = p.kv;
    c.head_dim = p.head_dim;
    c.tie_word_embeddings = p.tied;
    c.rope_theta = p.theta;
    c.max_position_embeddings = p.max_pos;
    c.attention_bias = c.model_type == "qwen2";
    c.qk_norm = c.model_type == "qwen3" || c.model_type == "qwen3_moe";
    if (c.model_type == "qwen3_moe") {  // Qwen3-30B-A3B's mixture of experts
      c.num_experts = 128;
      c.num_experts_per_tok = 8;
      c.moe_intermediate_size = 768;
      c.norm_topk_prob = true;
    }
    c.eos_token_ids = {151645, 151643};
    return c;
  }
  std::string known;
  for (const Preset& p : kPresets) known += std::string(known.empty() ? "" : ", ") + p.name;
  throw Error(GN_ERR_NOT_FOUND, "[qwen] unknown config preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> QwenConfig::preset_names() {
  std::vector<std::string> out;
  for (const Preset& p : kPresets) out.emplace_back(p.name);
  return out;
}

QwenGenerationDefaults QwenGenerationDefaults::from_json(const std::string& text, const std::string& where) {
  const json j = parse_object(text, where);
  QwenGenerationDefaults g;
  g.source_json = text;
  g.eos_token_ids = get_ids(j, "eos_token_id", where);
  g.bos_token_id = get_int(j, "bos_token_id", where, -1, false, 0, kMaxVocab);
  g.pad_token_id = get_int(j, "pad_token_id", where, -1, false, 0, kMaxVocab);
  for (int64_t id : g.eos_token_ids)
    if (id < 0 || id > kMaxVocab)
      bad(where,
          "field 'eos_token_id' holds " + std::to_string(id) + ", not an id in [0, " + std::to_string(kMaxVocab) + "]");
  if (j.contains("do_sample") && !j["do_sample"].is_null()) g.do_sample = get_bool(j, "do_sample", where, false);
  auto num = [&](const char* k, std::optional<double>& out) {
    if (j.contains(k) && !j[k].is_null()) out = get_num(j, k, where, 0);
  };
  num("temperature", g.temperature);
  num("top_p", g.top_p);
  num("min_p", g.min_p);
  num("repetition_penalty", g.repetition_penalty);
  if (g.temperature && *g.temperature < 0) bad(where, "field 'temperature' must be >= 0");
  if (g.top_p && !(*g.top_p > 0 && *g.top_p <= 1)) bad(where, "field 'top_p' must be in (0, 1]");
  if (g.min_p && !(*g.min_p >= 0 && *g.min_p <= 1)) bad(where, "field 'min_p' must be in [0, 1]");
  if (g.repetition_penalty && !(*g.repetition_penalty > 0)) bad(where, "field 'repetition_penalty' must be > 0");
  if (j.contains("top_k") && !j["top_k"].is_null()) g.top_k = get_int(j, "top_k", where, 0, true, 0, kMaxVocab);
  if (j.contains("max_new_tokens") && !j["max_new_tokens"].is_null())
    g.max_new_tokens = get_int(j, "max_new_tokens", where, 0, true, 0, kMaxPositions);
  return g;
}

}  // namespace genesis::models
