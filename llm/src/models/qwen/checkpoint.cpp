// checkpoint.cpp - Hugging Face model folders: from_pretrained and save_pretrained.
//
// A folder holds config.json, optionally generation_config.json, and either
// model.safetensors or shards model-0000N-of-0000M.safetensors listed by
// model.safetensors.index.json ({"metadata": {"total_size"}, "weight_map":
// {name: shard}}).  Shards are memory-mapped and copied tensor by tensor into
// the model's parameters (converted to their dtype), one shard at a time.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/init.hpp"

namespace genesis::models {

using json = nlohmann::ordered_json;

namespace {

bool file_exists(const std::string& p) {
  struct stat s {};
  return ::stat(p.c_str(), &s) == 0 && S_ISREG(s.st_mode);
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// The dtype a config names when it is one a checkpoint is loaded as (float32, bfloat16, float16),
// else float32.
DType config_dtype(const std::string& name) {
  const std::optional<DType> d = dtype_from_name(name);
  return d && (*d == DType::bf16 || *d == DType::f16) ? *d : DType::f32;
}

const char* dtype_config_name(DType d) {
  switch (d) {
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    case DType::f64: return "float64";
    default: return "float32";
  }
}

// The shards of a folder, in order, with the tensors each one must hold (empty = single file).
struct ShardPlan {
  std::vector<std::string> files;
  std::map<std::string, std::set<std::string>> names;  // file -> tensor names from the index
};

ShardPlan plan_shards(const std::string& dir) {
  ShardPlan plan;
  const std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
  if (file_exists(single)) {
    plan.files.push_back(single);
    return plan;
  }
  if (!file_exists(index))
    throw Error(GN_ERR_NOT_FOUND, "[qwen] " + dir + ": neither model.safetensors nor model.safetensors.index.json");
  json j;
  try {
    j = json::parse(read_text_file(index));
  } catch (const json::exception& e) {
    throw Error(GN_ERR_IO, "[qwen] " + index + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(GN_ERR_IO, "[qwen] " + index + ": missing object 'weight_map'");
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      throw Error(GN_ERR_IO, "[qwen] " + index + ": weight_map[" + it.key() + "] is not a file name");
    const std::string f = it.value().get<std::string>();
    if (f.find('/') != std::string::npos || f.empty() || f[0] == '.')
      throw Error(GN_ERR_IO, "[qwen] " + index + ": shard name '" + f + "' must be a plain file name in the folder");
    const std::string path = dir + "/" + f;
    if (!plan.names.count(path)) plan.files.push_back(path);
    plan.names[path].insert(it.key());
  }
  return plan;
}

// The parameters (name -> shape) a model of config c has, computed without building it.
std::map<std::string, Shape> expected_tensors(const QwenConfig& c) {
  std::map<std::string, Shape> m;
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  m["model.embed_tokens.weight"] = {c.vocab_size, h};
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m[p + "self_attn.q_proj.weight"] = {q, h};
    m[p + "self_attn.k_proj.weight"] = {kv, h};
    m[p + "self_attn.v_proj.weight"] = {kv, h};
    m[p + "self_attn.o_proj.weight"] = {h, q};
    if (c.attention_bias) {
      m[p + "self_attn.q_proj.bias"] = {q};
      m[p + "self_attn.k_proj.bias"] = {kv};
      m[p + "self_attn.v_proj.bias"] = {kv};
    }
    if (c.qk_norm) {
      m[p + "self_attn.q_norm.weight"] = {c.head_dim};
      m[p + "self_attn.k_norm.weight"] = {c.head_dim};
    }
    if (c.is_sparse_layer(l)) {  // the router and each expert's own tensors
      const int64_t i = c.moe_intermediate_size;
      m[p + "mlp.gate.weight"] = {c.num_experts, h};
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        m[x + "gate_proj.weight"] = {i, h};
        m[x + "up_proj.weight"] = {i, h};
        m[x + "down_proj.weight"] = {h, i};
      }
    } else {
      m[p + "mlp.gate_proj.weight"] = {c.intermediate_size, h};
      m[p + "mlp.up_proj.weight"] = {c.intermediate_size, h};
      m[p + "mlp.down_proj.weight"] = {h, c.intermediate_size};
    }
    m[p + "input_layernorm.weight"] = {h};
    m[p + "post_attention_layernorm.weight"] = {h};
    if (c.sandwich_norms) {
      m[p + "pre_feedforward_layernorm.weight"] = {h};
      m[p + "post_feedforward_layernorm.weight"] = {h};
    }
  }
  m["model.norm.weight"] = {h};
  if (!c.tie_word_embeddings) m["lm_head.weight"] = {c.vocab_size, h};
  return m;
}

// One tensor entry of a safetensors header.
struct HeaderEntry {
  std::string dtype;
  Shape shape;
};

// The tensor entries of a safetensors file's header (the data is not read): checks the header length against the
// file size and each entry's shape and byte range against the data that follows.
[[noreturn]] void header_fail(const std::string& path, const std::string& what) {
  throw Error(GN_ERR_IO, "[qwen] " + path + ": " + what);
}

std::map<std::string, HeaderEntry> read_safetensors_header(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(GN_ERR_NOT_FOUND, "[qwen] cannot open " + path + ": " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  struct stat st {};
  if (::fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) header_fail(path, "not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  unsigned char len8[8];
  if (file_size < 8 || std::fread(len8, 1, 8, f) != 8)
    header_fail(path, "truncated safetensors file (" + std::to_string(file_size) + " bytes, no header length)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len8[i];
  if (n > (uint64_t{100} << 20))
    header_fail(path, "safetensors header length " + std::to_string(n) + " is over the 100 MB limit");
  if (n > file_size - 8)
    header_fail(path, "truncated safetensors file: the header length " + std::to_string(n) +
                          " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  std::string text(static_cast<size_t>(n), '\0');
  if (n && std::fread(text.data(), 1, text.size(), f) != text.size())
    header_fail(path, "cannot read the safetensors header");
  const uint64_t data_size = file_size - 8 - n;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    header_fail(path, std::string("the safetensors header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) header_fail(path, "the safetensors header is not a JSON object");
  std::map<std::string, HeaderEntry> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const json& e = it.value();
    const std::string where = "tensor '" + it.key() + "': ";
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
        !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2)
      header_fail(path, where + "a header entry needs a string 'dtype', an array 'shape' and two 'data_offsets'");
    HeaderEntry h;
    h.dtype = e["dtype"].get<std::string>();
    std::optional<DType> dt;
    try {
      dt = dtype_from_safetensors(h.dtype);
    } catch (const Error&) {
    }
    if (!dt) header_fail(path, where + "unknown dtype '" + h.dtype + "'");
    uint64_t numel = 1;
    for (const json& d : e["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40))
        header_fail(path, where + "bad dimension " + d.dump() + " in shape " + e["shape"].dump());
      const uint64_t x = d.get<uint64_t>();
      if (x && numel > UINT64_MAX / x) header_fail(path, where + "shape " + e["shape"].dump() + " overflows");
      numel *= x;
      h.shape.push_back(static_cast<int64_t>(x));
    }
    const json& off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      header_fail(path, where + "data_offsets must be non-negative integers, got " + off.dump());
    const uint64_t b = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (b > end || end > data_size)
      header_fail(path, where + "data_offsets " + off.dump() + " run past the " + std::to_string(data_size) +
                            " bytes of data (a truncated file?)");
    const uint64_t esize = gn_dtype_size(static_cast<int32_t>(*dt));
    if (numel > UINT64_MAX / std::max<uint64_t>(esize, 1) || end - b != numel * esize)
      header_fail(path, where + "data_offsets " + off.dump() + " hold " + std::to_string(end - b) +
                            " bytes but shape " + e["shape"].dump() + " of " + h.dtype + " needs " +
                            std::to_string(numel * esize));
    out.emplace(it.key(), std::move(h));
  }
  return out;
}

// Checks every weight file's header (names, shapes, dtypes) and the index against what config describes, before
// anything is allocated: a config whose sizes do not match the weights fails here, naming the tensor and the field.
void check_weights_against_config(const QwenConfig& cfg, const std::string& dir, const ShardPlan& plan) {
  const std::map<std::string, Shape> want = expected_tensors(cfg);
  std::map<std::string, std::string> found;  // tensor -> file
  for (const std::string& file : plan.files) {
    if (!file_exists(file))
      throw Error(GN_ERR_NOT_FOUND, "[qwen] " + dir + ": shard '" + file.substr(dir.size() + 1) +
                                        "' named by model.safetensors.index.json does not exist");
    const auto header = read_safetensors_header(file);
    if (plan.names.count(file)) {
      for (const std::string& n : plan.names.at(file))
        if (!header.count(n))
          throw Error(GN_ERR_IO,
                      "[qwen] " + file + ": the index lists tensor '" + n + "' in this shard but it is not there");
    }
    for (const auto& [name, h] : header) {
      auto it = want.find(name);
      if (it == want.end()) {
        if (name == "lm_head.weight" && cfg.tie_word_embeddings) continue;
        throw Error(GN_ERR_IO, "[qwen] " + file + ": unexpected tensor '" + name + "' " + shape_str(h.shape) +
                                   " (the model config.json describes has no such parameter; num_hidden_layers = " +
                                   std::to_string(cfg.num_hidden_layers) + ")");
      }
      if (h.shape != it->second)
        throw Error(GN_ERR_SHAPE, "[qwen] " + file + ": tensor '" + name + "' has shape " + shape_str(h.shape) +
                                      " but config.json (vocab_size " + std::to_string(cfg.vocab_size) +
                                      ", hidden_size " + std::to_string(cfg.hidden_size) + ", intermediate_size " +
                                      std::to_string(cfg.intermediate_size) + ", heads " +
                                      std::to_string(cfg.num_attention_heads) + "/" +
                                      std::to_string(cfg.num_key_value_heads) + ", head_dim " +
                                      std::to_string(cfg.head_dim) + ") expects " + shape_str(it->second));
      const DType dt = dtype_from_safetensors(h.dtype);
      if (!is_floating(dt))
        throw Error(GN_ERR_DTYPE, "[qwen] " + file + ": tensor '" + name + "' has dtype " + h.dtype +
                                      "; weights must be floating point");
      auto [pos, fresh] = found.emplace(name, file);
      if (!fresh)
        throw Error(GN_ERR_IO, "[qwen] " + file + ": tensor '" + name + "' appears in more than one shard (also in " +
                                   pos->second + ")");
    }
  }
  for (const auto& [name, shape] : want)
    if (!found.count(name))
      throw Error(GN_ERR_IO, "[qwen] " + dir + ": missing tensor '" + name + "' " + shape_str(shape) +
                                 " (config.json has num_hidden_layers = " + std::to_string(cfg.num_hidden_layers) +
                                 ")");
}

}  // namespace

std::unique_ptr<QwenForCausalLM> QwenForCausalLM::from_pretrained(const std::string& dir, const LoadOptions& opts) {
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    throw Error(GN_ERR_NOT_FOUND, "[qwen] model folder " + dir + " does not exist (or is not a folder)");
  if (!file_exists(dir + "/config.json"))
    throw Error(GN_ERR_NOT_FOUND, "[qwen] " + dir + ": no config.json in the model folder");
  QwenConfig cfg = QwenConfig::from_file(dir + "/config.json");
  // Everything on disk is checked against the config before the model is built.
  const ShardPlan plan = plan_shards(dir);
  check_weights_against_config(cfg, dir, plan);
  const DType dt = opts.dtype.value_or(config_dtype(cfg.dtype));
  if (!is_floating(dt) || dt == DType::f64)
    throw Error(GN_ERR_DTYPE,
                std::string("[qwen] load dtype must be float32, bfloat16 or float16, got ") + dtype_name(dt));
  QwenGenerationDefaults gen_defaults;
  if (file_exists(dir + "/generation_config.json"))
    gen_defaults = QwenGenerationDefaults::from_json(read_text_file(dir + "/generation_config.json"),
                                                     dir + "/generation_config.json");
  std::unique_ptr<QwenForCausalLM> m;
  {
    nn::init::SkipInitGuard skip;  // every parameter is overwritten below
    m = std::make_unique<QwenForCausalLM>(cfg, Options{.dtype = dt, .device = opts.device});
  }
  m->config.dtype = dtype_config_name(dt);
  m->generation_defaults = std::move(gen_defaults);

  // Expected tensors; a tied head may still be stored (some exports do): accepted and ignored.
  std::map<std::string, Tensor> want;
  for (auto& [k, v] : m->named_parameters()) want[k] = v;
  // The check above described this model's parameters exactly (names and shapes).
  const std::map<std::string, Shape> described = expected_tensors(cfg);
  bool same = described.size() == want.size();
  for (auto it = described.begin(); same && it != described.end(); ++it)
    same = want.count(it->first) && want.at(it->first).shape() == it->second;
  if (!same) throw Error(GN_ERR_INTERNAL, "[qwen] the weight check does not describe the model's parameters");
  std::set<std::string> seen;
  NoGradGuard no_grad;
  for (const std::string& file : plan.files) {
    SafetensorsFile sf = load_safetensors(file, opts.device);
    if (plan.names.count(file)) {
      for (const std::string& n : plan.names.at(file))
        if (!sf.tensors.count(n))
          throw Error(GN_ERR_IO,
                      "[qwen] " + file + ": the index lists tensor '" + n + "' in this shard but it is not there");
    }
    for (auto& [name, t] : sf.tensors) {
      auto it = want.find(name);
      if (it == want.end()) {
        if (name == "lm_head.weight" && cfg.tie_word_embeddings) continue;
        throw Error(GN_ERR_IO, "[qwen] " + file + ": unexpected tensor '" + name + "' " + shape_str(t.shape()) +
                                   " (the model has no such parameter)");
      }
      if (t.shape() != it->second.shape())
        throw Error(GN_ERR_SHAPE, "[qwen] " + file + ": tensor '" + name + "' has shape " + shape_str(t.shape()) +
                                      " but the model expects " + shape_str(it->second.shape()));
      if (!is_floating(t.dtype()))
        throw Error(GN_ERR_DTYPE, "[qwen] " + file + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype()) +
                                      "; weights must be floating point");
      if (!seen.insert(name).second)
        throw Error(GN_ERR_IO, "[qwen] " + file + ": tensor '" + name + "' appears in more than one shard");
      Tensor dst = it->second;
      dst.copy_(t);  // converts the on-disk dtype to the parameter's
    }
  }
  for (const auto& [name, t] : want)
    if (!seen.count(name))
      throw Error(GN_ERR_IO, "[qwen] " + dir + ": missing tensor '" + name + "' " + shape_str(t.shape()));
  return m;
}

void QwenForCausalLM::save_pretrained(const std::string& dir, int64_t max_shard_bytes) const {
  if (max_shard_bytes < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[qwen] max_shard_bytes must be >= 1");
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(GN_ERR_IO, "[qwen] cannot create folder " + dir + ": " + std::strerror(errno));
  struct stat s {};
  if (::stat(dir.c_str(), &s) != 0 || !S_ISDIR(s.st_mode)) throw Error(GN_ERR_IO, "[qwen] " + dir + " is not a folder");

  // Shards in name order, a new one whenever the next tensor would pass the limit (HF's rule).
  const nn::StateDict sd = state_dict();
  std::vector<TensorMap> shards(1);
  std::vector<int64_t> sizes(1, 0);
  int64_t total = 0;
  const std::map<std::string, Tensor> sorted = sd;
  for (const auto& [name, t] : sorted) {
    const int64_t bytes = t.numel() * static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(t.dtype())));
    if (sizes.back() > 0 && sizes.back() + bytes > max_shard_bytes) {
      shards.emplace_back();
      sizes.push_back(0);
    }
    shards.back()[name] = t;
    sizes.back() += bytes;
    total += bytes;
  }
  QwenConfig c = config;
  c.dtype = dtype_config_name(model.embed_tokens.weight.dtype());
  atomic_write_file(dir + "/config.json", c.to_json());
  json gen = generation_defaults.source_json.empty() ? json::object() : json::parse(generation_defaults.source_json);
  if (!gen.contains("eos_token_id") && !c.eos_token_ids.empty()) gen["eos_token_id"] = c.eos_token_ids;
  atomic_write_file(dir + "/generation_config.json", gen.dump(2) + "\n");

  const std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
  if (shards.size() == 1) {
    save_safetensors(single, shards[0], {{"format", "pt"}});
    std::remove(index.c_str());  // a stale index would describe other files
    return;
  }
  json wm = json::object();
  char fname[64];
  const int n = static_cast<int>(shards.size());
  for (int i = 0; i < n; ++i) {
    std::snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", i + 1, n);
    save_safetensors(dir + "/" + fname, shards[static_cast<size_t>(i)], {{"format", "pt"}});
    for (const auto& [name, t] : shards[static_cast<size_t>(i)]) wm[name] = fname;
  }
  json idx = {{"metadata", {{"total_size", total}}}, {"weight_map", wm}};
  atomic_write_file(index, idx.dump(2) + "\n");
  std::remove(single.c_str());  // transformers prefers model.safetensors when both exist
}

}  // namespace genesis::models
