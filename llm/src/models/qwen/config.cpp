// config.cpp - Qwen config.json / generation_config.json parsing, presets and writing.
//
// Every field that changes the maths is either understood or refused: a config
// that turns on sliding windows, rope scaling, MoE or another activation fails
// with a message naming the field instead of loading a model that computes
// something else.
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

// The rope_scaling / rope_parameters object: only the default (unscaled) rope is implemented.
void check_rope_type(const json& r, const char* field, const std::string& where) {
  if (r.is_null()) return;
  if (!r.is_object()) bad(where, std::string("field '") + field + "' must be an object");
  for (const char* k : {"rope_type", "type"}) {
    if (r.contains(k) && !r[k].is_null() && r[k] != "default")
      bad(where, std::string("field '") + field + "." + k + "' = " + r[k].dump() +
                     " is not supported (only the default rope; no scaling types)");
  }
  if (std::string(field) == "rope_scaling" && !r.empty() && !r.contains("rope_type") && !r.contains("type"))
    bad(where, "field 'rope_scaling' is set but names no type; rope scaling is not supported");
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
  if (c.model_type == "qwen2_moe" || c.model_type == "qwen3_moe")
    bad(where, "model_type '" + c.model_type + "' (mixture of experts) is not supported; dense qwen2 and qwen3 are");
  if (c.model_type != "qwen2" && c.model_type != "qwen3")
    bad(where, "model_type '" + c.model_type + "' is not a Qwen dense decoder (expected qwen2 or qwen3)");
  for (const char* moe : {"num_experts", "num_experts_per_tok", "moe_intermediate_size"})
    if (j.contains(moe) && !j[moe].is_null() && !(j[moe].is_number() && j[moe].get<double>() == 0))
      bad(where, std::string("field '") + moe + "' (mixture of experts) is not supported");

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
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", where, false);
  c.attention_bias = c.model_type == "qwen2" ? true : get_bool(j, "attention_bias", where, false);
  c.qk_norm = c.model_type == "qwen3";

  // Rope: 4.x "rope_theta" (+ "rope_scaling"), 5.x "rope_parameters" {"rope_theta", "rope_type"}.
  c.rope_theta = get_num(j, "rope_theta", where, 10000.0);
  if (j.contains("rope_scaling")) check_rope_type(j["rope_scaling"], "rope_scaling", where);
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {
    const json& rp = j["rope_parameters"];
    check_rope_type(rp, "rope_parameters", where);
    c.rope_theta = get_num(rp, "rope_theta", where + " rope_parameters", c.rope_theta);
  }
  if (!(c.rope_theta > 0)) bad(where, "rope_theta must be > 0");

  if (get_bool(j, "use_sliding_window", where, false))
    bad(where, "field 'use_sliding_window' = true is not supported (full attention only)");
  if (j.contains("layer_types") && j["layer_types"].is_array())
    for (const json& t : j["layer_types"])
      if (t != "full_attention")
        bad(where, "field 'layer_types' holds " + t.dump() + "; only \"full_attention\" is supported");
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    bad(where, "field 'hidden_act' = " + j["hidden_act"].dump() + " is not supported (only \"silu\")");
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
  const char* arch = model_type == "qwen3" ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM";
  if (!j.contains("architectures")) j["architectures"] = json::array({arch});
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
  if (model_type == "qwen3") j["attention_bias"] = attention_bias;
  j["hidden_act"] = "silu";
  if (!j.contains("rope_parameters") && !j.contains("rope_theta")) {
    j["rope_parameters"] = {{"rope_theta", rope_theta}, {"rope_type", "default"}};
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

int64_t QwenConfig::num_parameters() const {
  const int64_t h = hidden_size, d = head_dim;
  const int64_t q = num_attention_heads * d, kv = num_key_value_heads * d;
  int64_t attn = h * q + 2 * h * kv + q * h + (attention_bias ? q + 2 * kv : 0) + (qk_norm ? 2 * d : 0);
  int64_t mlp = 3 * h * intermediate_size;
  int64_t layer = attn + mlp + 2 * h;
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + h;
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
    c.qk_norm = c.model_type == "qwen3";
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
