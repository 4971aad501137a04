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

}  // namespace

std::unique_ptr<QwenForCausalLM> QwenForCausalLM::from_pretrained(const std::string& dir, const LoadOptions& opts) {
  QwenConfig cfg = QwenConfig::from_file(dir + "/config.json");
  const DType dt = opts.dtype.value_or(config_dtype(cfg.dtype));
  if (!is_floating(dt) || dt == DType::f64)
    throw Error(GN_ERR_DTYPE,
                std::string("[qwen] load dtype must be float32, bfloat16 or float16, got ") + dtype_name(dt));
  std::unique_ptr<QwenForCausalLM> m;
  {
    nn::init::SkipInitGuard skip;  // every parameter is overwritten below
    m = std::make_unique<QwenForCausalLM>(cfg, Options{.dtype = dt, .device = opts.device});
  }
  m->config.dtype = dtype_config_name(dt);
  if (file_exists(dir + "/generation_config.json"))
    m->generation_defaults = QwenGenerationDefaults::from_json(read_text_file(dir + "/generation_config.json"),
                                                               dir + "/generation_config.json");

  // Expected tensors; a tied head may still be stored (some exports do): accepted and ignored.
  std::map<std::string, Tensor> want;
  for (auto& [k, v] : m->named_parameters()) want[k] = v;
  std::set<std::string> seen;
  const ShardPlan plan = plan_shards(dir);
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
