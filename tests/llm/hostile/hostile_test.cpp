// hostile_test.cpp - the LLM surface under hostile input: model folders (config.json, weights, index files),
// prompts and limits, tokenizer files, chat templates and chat JSONL, each built in a temporary folder from the
// small fixtures in tests/fixtures.  Every case must end in a genesis::Error whose message names what is wrong
// (a substring), and must neither crash nor hang: each runs in its own child process under a time limit, so a
// crash or a hang is counted instead of ending the run.  The last line is the summary, e.g.
//   hostile: 120 cases, 0 crashes, 0 hangs, 0 silent accepts, 0 unclear messages
// and the exit status is 0 only when every case passed.
//
//   hostile_test [substring]   runs the cases whose group/name contains substring
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../test_files.h"
#include "genesis/chat_template.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/tokenizer.hpp"
#include "genesis/train/sft.hpp"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
namespace M = genesis::models;
namespace T = genesis::train;

namespace {

const std::string kSource = GENESIS_SOURCE_DIR;
const std::string kTinyModel = kSource + "/tests/fixtures/qwen/qwen3-tiny";
const std::string kQwen3Tokenizer = kSource + "/tests/fixtures/tokenizer/qwen3";
constexpr int kCaseSeconds = 60;  // a case running longer counts as a hang

fs::path g_root;  // this run's temporary folder
int g_serial = 0;

// ---------------------------------------------------------------- files

using llm_test::read_file;

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// A fresh folder for one case (cases run in child processes: the pid keeps their folders apart).
fs::path fresh_dir(const std::string& tag) {
  fs::path d = g_root / (tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(++g_serial));
  fs::create_directories(d);
  return d;
}

// A copy of the tiny Qwen3 model folder (config.json, generation_config.json, model.safetensors).
fs::path model_copy() {
  fs::path d = fresh_dir("model");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(fs::path(kTinyModel) / f, d / f);
  return d;
}

json tiny_config() { return json::parse(read_file(kTinyModel + "/config.json")); }

// A model folder whose config.json is the tiny one changed by `edit`.
fs::path model_with_config(const std::function<void(json&)>& edit) {
  fs::path d = model_copy();
  json c = tiny_config();
  edit(c);
  write_file(d / "config.json", c.dump(2));
  return d;
}

// A safetensors file split into its header and data.
struct Safetensors {
  json header;
  std::string data;
};

Safetensors read_safetensors(const std::string& path) {
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string encode_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// A model folder whose model.safetensors header is the tiny one changed by `edit` (the data is kept).
fs::path model_with_header(const std::function<void(json&)>& edit) {
  fs::path d = model_copy();
  Safetensors st = read_safetensors((d / "model.safetensors").string());
  edit(st.header);
  write_file(d / "model.safetensors", encode_safetensors(st.header.dump(), st.data));
  return d;
}

// A model folder with its weights in two shards and an index, then changed by `edit` (index json, folder).
fs::path sharded_model(const std::function<void(json&, const fs::path&)>& edit) {
  fs::path d = model_copy();
  Safetensors st = read_safetensors((d / "model.safetensors").string());
  fs::remove(d / "model.safetensors");
  json h1 = json::object(), h2 = json::object(), wm = json::object();
  std::string d1, d2;
  size_t k = 0;
  for (auto it = st.header.begin(); it != st.header.end(); ++it, ++k) {
    if (it.key() == "__metadata__") continue;
    json e = it.value();
    const uint64_t b = e["data_offsets"][0], en = e["data_offsets"][1];
    const std::string part = st.data.substr(b, en - b);
    std::string& dst = k % 2 ? d2 : d1;
    e["data_offsets"] = {dst.size(), dst.size() + part.size()};
    dst += part;
    (k % 2 ? h2 : h1)[it.key()] = e;
    wm[it.key()] = k % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  write_file(d / "model-00001-of-00002.safetensors", encode_safetensors(h1.dump(), d1));
  write_file(d / "model-00002-of-00002.safetensors", encode_safetensors(h2.dump(), d2));
  json index = {{"metadata", {{"total_size", st.data.size()}}}, {"weight_map", wm}};
  edit(index, d);
  if (!index.is_null()) write_file(d / "model.safetensors.index.json", index.dump(2));
  return d;
}

void load(const fs::path& dir) { (void)M::QwenForCausalLM::from_pretrained(dir.string()); }

// A small valid byte-level BPE tokenizer.json to break one field at a time.
json small_tokenizer() { return llm_test::small_tokenizer_json(); }

std::string tokenizer_file(const json& j) {
  fs::path p = fresh_dir("tok") / "tokenizer.json";
  write_file(p, j.dump());
  return p.string();
}

std::string tokenizer_with(const std::function<void(json&)>& edit) {
  json j = small_tokenizer();
  edit(j);
  return tokenizer_file(j);
}

genesis::Tokenizer good_tokenizer() { return genesis::Tokenizer::from_files(tokenizer_file(small_tokenizer())); }

void render(const std::string& source, const std::string& context = "{}") {
  (void)genesis::ChatTemplate(source).render(context);
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string jsonl_file(const std::string& text) {
  fs::path p = fresh_dir("jsonl") / "data.jsonl";
  write_file(p, text);
  return p.string();
}

const char* kChat = R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})";

// train_sft on the tiny model with the Qwen3 tokenizer (its chat template) over `data`.
void train_on(const std::string& data, int64_t max_length = 64) {
  auto model = M::QwenForCausalLM::from_pretrained(kTinyModel);
  genesis::Tokenizer tok = genesis::Tokenizer::from_pretrained(kQwen3Tokenizer);
  T::SftOptions o;
  o.train_file = data;
  o.output_dir = (fresh_dir("sft") / "out").string();
  o.batches.max_length = max_length;
  o.save_final = false;
  (void)T::train_sft(*model, tok, o);
}

// ---------------------------------------------------------------- cases

struct Case {
  std::string name;    // group/what
  std::string expect;  // a substring the error message must hold
  std::function<void()> run;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](std::string name, std::string expect, std::function<void()> run) {
    c.push_back({std::move(name), std::move(expect), std::move(run)});
  };
  auto config_case = [&](const std::string& name, const std::string& expect, std::function<void(json&)> edit) {
    add("config/" + name, expect, [edit] { load(model_with_config(edit)); });
  };
  auto header_case = [&](const std::string& name, const std::string& expect, std::function<void(json&)> edit) {
    add("weights/" + name, expect, [edit] { load(model_with_header(edit)); });
  };
  auto index_case = [&](const std::string& name, const std::string& expect,
                        std::function<void(json&, const fs::path&)> edit) {
    add("index/" + name, expect, [edit] { load(sharded_model(edit)); });
  };
  auto tok_case = [&](const std::string& name, const std::string& expect, std::function<void(json&)> edit) {
    add("tokenizer/" + name, expect, [edit] { (void)genesis::Tokenizer::from_files(tokenizer_with(edit)); });
  };
  auto tpl_case = [&](const std::string& name, const std::string& expect, const std::string& source) {
    add("template/" + name, expect, [source] { render(source); });
  };
  auto jsonl_case = [&](const std::string& name, const std::string& expect, const std::string& text) {
    add("jsonl/" + name, expect, [text] { (void)T::read_chat_jsonl(jsonl_file(text)); });
  };

  // ---- model folders
  add("folder/missing", "does not exist", [] { load(g_root / "no-such-model"); });
  add("folder/is_a_file", "does not exist", [] {
    fs::path d = fresh_dir("file");
    write_file(d / "model", "x");
    load(d / "model");
  });
  add("folder/no_config", "no config.json", [] {
    fs::path d = model_copy();
    fs::remove(d / "config.json");
    load(d);
  });
  add("folder/config_not_json", "not valid JSON", [] {
    fs::path d = model_copy();
    write_file(d / "config.json", "{\"model_type\": \"qwen3\",");
    load(d);
  });
  add("folder/config_array", "must be a JSON object", [] {
    fs::path d = model_copy();
    write_file(d / "config.json", "[1, 2]");
    load(d);
  });
  add("folder/config_empty", "not valid JSON", [] {
    fs::path d = model_copy();
    write_file(d / "config.json", "");
    load(d);
  });
  add("folder/generation_config_not_json", "generation_config.json", [] {
    fs::path d = model_copy();
    write_file(d / "generation_config.json", "{oops");
    load(d);
  });
  add("folder/generation_config_temperature", "temperature", [] {
    fs::path d = model_copy();
    write_file(d / "generation_config.json", R"({"temperature": -1})");
    load(d);
  });
  add("folder/generation_config_top_p", "top_p", [] {
    fs::path d = model_copy();
    write_file(d / "generation_config.json", R"({"top_p": 5})");
    load(d);
  });
  add("folder/generation_config_max_new_tokens", "max_new_tokens", [] {
    fs::path d = model_copy();
    write_file(d / "generation_config.json", R"({"max_new_tokens": 1000000000000000})");
    load(d);
  });

  // ---- config.json fields
  config_case("layers_1e9", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = 1000000000; });
  config_case("layers_more_than_weights", "missing tensor 'model.layers.2.", [](json& j) {
    j["num_hidden_layers"] = 3;
    j["layer_types"].push_back("full_attention");
  });
  config_case("layers_fewer_than_weights", "unexpected tensor 'model.layers.1.", [](json& j) {
    j["num_hidden_layers"] = 1;
    j["layer_types"] = {"full_attention"};
  });
  config_case("layers_zero", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = 0; });
  config_case("layers_negative", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = -2; });
  config_case("layers_string", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = "2"; });
  config_case("layers_float", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = 2.5; });
  config_case("layers_u64_max", "num_hidden_layers", [](json& j) { j["num_hidden_layers"] = UINT64_MAX; });
  config_case("hidden_size_mismatch", "hidden_size", [](json& j) { j["hidden_size"] = 128; });
  config_case("hidden_size_huge", "hidden_size", [](json& j) { j["hidden_size"] = int64_t{1} << 40; });
  config_case("hidden_size_missing", "hidden_size", [](json& j) { j.erase("hidden_size"); });
  config_case("vocab_zero", "vocab_size", [](json& j) { j["vocab_size"] = 0; });
  config_case("vocab_huge", "vocab_size", [](json& j) { j["vocab_size"] = int64_t{1} << 40; });
  config_case("vocab_mismatch", "vocab_size", [](json& j) { j["vocab_size"] = 600; });
  config_case("vocab_null", "vocab_size", [](json& j) { j["vocab_size"] = nullptr; });
  config_case("intermediate_huge", "intermediate_size", [](json& j) { j["intermediate_size"] = 1000000000; });
  config_case("intermediate_mismatch", "intermediate_size", [](json& j) { j["intermediate_size"] = 128; });
  config_case("heads_not_multiple", "num_attention_heads", [](json& j) { j["num_attention_heads"] = 3; });
  config_case("heads_huge", "num_attention_heads", [](json& j) { j["num_attention_heads"] = 1 << 20; });
  config_case("kv_heads_zero", "num_key_value_heads", [](json& j) { j["num_key_value_heads"] = 0; });
  config_case("kv_heads_mismatch", "has shape", [](json& j) { j["num_key_value_heads"] = 4; });
  config_case("head_dim_odd", "head_dim", [](json& j) { j["head_dim"] = 33; });
  config_case("head_dim_huge", "head_dim", [](json& j) { j["head_dim"] = 1 << 20; });
  config_case("head_dim_mismatch", "head_dim", [](json& j) { j["head_dim"] = 16; });
  config_case("max_positions_zero", "max_position_embeddings", [](json& j) { j["max_position_embeddings"] = 0; });
  config_case("max_positions_huge", "max_position_embeddings",
              [](json& j) { j["max_position_embeddings"] = int64_t{1} << 50; });
  config_case("rms_norm_eps_negative", "rms_norm_eps", [](json& j) { j["rms_norm_eps"] = -1; });
  config_case("rope_theta_zero", "rope_theta", [](json& j) { j["rope_parameters"]["rope_theta"] = 0; });
  config_case("rope_scaling_longrope", "rope_scaling", [](json& j) {
    j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 4}};
  });
  config_case("model_type_llama", "model_type", [](json& j) { j["model_type"] = "llama"; });
  config_case("model_type_missing", "model_type", [](json& j) { j.erase("model_type"); });
  config_case("moe", "mixture of experts", [](json& j) { j["num_experts"] = 8; });
  config_case("hidden_act_gelu", "hidden_act", [](json& j) { j["hidden_act"] = "gelu"; });
  config_case("sliding_window", "use_sliding_window", [](json& j) { j["use_sliding_window"] = true; });
  config_case("quantized", "quantization_config", [](json& j) { j["quantization_config"] = {{"bits", 4}}; });
  config_case("eos_negative", "eos_token_id", [](json& j) { j["eos_token_id"] = -3; });
  config_case("eos_many", "eos_token_id", [](json& j) { j["eos_token_id"] = std::vector<int>(5000, 1); });
  config_case("bos_string", "bos_token_id", [](json& j) { j["bos_token_id"] = "<s>"; });

  // ---- weights (model.safetensors)
  add("weights/missing", "neither model.safetensors", [] {
    fs::path d = model_copy();
    fs::remove(d / "model.safetensors");
    load(d);
  });
  add("weights/is_a_folder", "neither model.safetensors", [] {
    fs::path d = model_copy();
    fs::remove(d / "model.safetensors");
    fs::create_directory(d / "model.safetensors");
    load(d);
  });
  add("weights/empty_file", "truncated", [] {
    fs::path d = model_copy();
    write_file(d / "model.safetensors", "");
    load(d);
  });
  add("weights/four_bytes", "truncated", [] {
    fs::path d = model_copy();
    write_file(d / "model.safetensors", "abcd");
    load(d);
  });
  add("weights/truncated_data", "run past", [] {
    fs::path d = model_copy();
    const std::string bytes = read_file((d / "model.safetensors").string());
    write_file(d / "model.safetensors", bytes.substr(0, bytes.size() / 2));
    load(d);
  });
  add("weights/truncated_header", "runs past the end", [] {
    fs::path d = model_copy();
    write_file(d / "model.safetensors", read_file((d / "model.safetensors").string()).substr(0, 100));
    load(d);
  });
  add("weights/header_length_huge", "header length", [] {
    fs::path d = model_copy();
    std::string bytes = read_file((d / "model.safetensors").string());
    for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(0x7f);
    write_file(d / "model.safetensors", bytes);
    load(d);
  });
  add("weights/header_not_json", "not valid JSON", [] {
    fs::path d = model_copy();
    write_file(d / "model.safetensors", encode_safetensors("{\"a\": [1,", "xxxx"));
    load(d);
  });
  add("weights/header_array", "not a JSON object", [] {
    fs::path d = model_copy();
    write_file(d / "model.safetensors", encode_safetensors("[1, 2, 3]", ""));
    load(d);
  });
  header_case("tensor_renamed", "unexpected tensor 'model.layers.0.mlp.gate_proj.weightX'", [](json& h) {
    h["model.layers.0.mlp.gate_proj.weightX"] = h["model.layers.0.mlp.gate_proj.weight"];
    h.erase("model.layers.0.mlp.gate_proj.weight");
  });
  header_case("tensor_missing", "missing tensor 'model.norm.weight'", [](json& h) { h.erase("model.norm.weight"); });
  header_case("tensor_extra", "unexpected tensor 'model.layers.9.extra'",
              [](json& h) { h["model.layers.9.extra"] = h["model.norm.weight"]; });
  header_case("shape_transposed", "has shape [160, 64]", [](json& h) {
    h["model.layers.0.mlp.down_proj.weight"]["shape"] = {160, 64};
  });
  header_case("shape_rank", "has shape [64, 1]", [](json& h) { h["model.norm.weight"]["shape"] = {64, 1}; });
  header_case("dtype_int", "floating point", [](json& h) { h["model.norm.weight"]["dtype"] = "I32"; });
  header_case("dtype_unknown", "unknown dtype 'Q4_K'", [](json& h) { h["model.norm.weight"]["dtype"] = "Q4_K"; });
  header_case("dtype_size_mismatch", "bytes but shape", [](json& h) { h["model.norm.weight"]["dtype"] = "F16"; });
  header_case("offsets_reversed", "data_offsets", [](json& h) {
    json& o = h["model.norm.weight"]["data_offsets"];
    o = {o[1], o[0]};
  });
  header_case("offsets_past_end", "run past", [](json& h) {
    h["model.norm.weight"]["data_offsets"] = {uint64_t{1} << 40, (uint64_t{1} << 40) + 256};
  });
  header_case("offsets_negative", "data_offsets", [](json& h) { h["model.norm.weight"]["data_offsets"] = {-8, 248}; });
  header_case("dimension_negative", "bad dimension", [](json& h) { h["model.norm.weight"]["shape"] = {-64}; });
  header_case("shape_overflow", "overflows", [](json& h) {
    h["model.norm.weight"]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40};
  });
  header_case("entry_without_dtype", "dtype", [](json& h) { h["model.norm.weight"].erase("dtype"); });
  header_case("entry_not_object", "header entry", [](json& h) { h["model.norm.weight"] = 7; });

  // ---- index files (sharded weights)
  add("index/valid_sharded_loads", "", [] { load(sharded_model([](json&, const fs::path&) {})); });
  index_case("not_json", "not valid JSON", [](json& j, const fs::path& d) {
    write_file(d / "model.safetensors.index.json", "{\"weight_map\": {");
    j = nullptr;
  });
  index_case("no_weight_map", "weight_map", [](json& j, const fs::path&) { j.erase("weight_map"); });
  index_case("array", "weight_map", [](json& j, const fs::path&) { j = json::array({1, 2}); });
  index_case("shard_not_string", "is not a file name",
             [](json& j, const fs::path&) { j["weight_map"]["model.norm.weight"] = 3; });
  index_case("shard_escapes_folder", "plain file name",
             [](json& j, const fs::path&) { j["weight_map"]["model.norm.weight"] = "../../etc/passwd"; });
  index_case("shard_absolute", "plain file name",
             [](json& j, const fs::path&) { j["weight_map"]["model.norm.weight"] = "/etc/passwd"; });
  index_case("shard_missing", "does not exist", [](json& j, const fs::path&) {
    j["weight_map"]["model.norm.weight"] = "model-00003-of-00003.safetensors";
  });
  index_case("lists_tensor_not_in_shard", "the index lists tensor 'model.norm.weight'", [](json& j, const fs::path&) {
    std::string other = j["weight_map"]["model.norm.weight"] == "model-00001-of-00002.safetensors"
                            ? "model-00002-of-00002.safetensors"
                            : "model-00001-of-00002.safetensors";
    j["weight_map"]["model.norm.weight"] = other;
  });
  index_case("empty_weight_map", "missing tensor", [](json& j, const fs::path&) { j["weight_map"] = json::object(); });
  index_case("tensor_in_two_shards", "more than one shard", [](json& j, const fs::path& d) {
    // the second shard gets a copy of a tensor the first holds
    Safetensors a = read_safetensors((d / "model-00001-of-00002.safetensors").string());
    Safetensors b = read_safetensors((d / "model-00002-of-00002.safetensors").string());
    std::string name;
    for (auto it = a.header.begin(); it != a.header.end(); ++it)
      if (it.key() != "__metadata__") name = it.key();
    json e = a.header[name];
    const uint64_t s = e["data_offsets"][0], en = e["data_offsets"][1];
    e["data_offsets"] = {b.data.size(), b.data.size() + (en - s)};
    b.data += a.data.substr(s, en - s);
    b.header[name] = e;
    write_file(d / "model-00002-of-00002.safetensors", encode_safetensors(b.header.dump(), b.data));
    (void)j;
  });
  index_case("truncated_shard", "run past", [](json&, const fs::path& d) {
    const std::string p = (d / "model-00002-of-00002.safetensors").string();
    const std::string bytes = read_file(p);
    write_file(p, bytes.substr(0, bytes.size() - 100));
  });

  // ---- prompts and limits (the tiny model: vocab 512, 256 positions)
  auto gen = [](std::vector<std::vector<int64_t>> prompts, M::GenerationConfig g) {
    auto m = M::QwenForCausalLM::from_pretrained(kTinyModel);
    (void)M::generate(*m, prompts, g);
  };
  add("prompt/longer_than_context", "max_position_embeddings",
      [gen] { gen({std::vector<int64_t>(300, 5)}, M::GenerationConfig{.max_new_tokens = 4}); });
  add("prompt/exactly_the_context", "max_position_embeddings",
      [gen] { gen({std::vector<int64_t>(256, 5)}, M::GenerationConfig{.max_new_tokens = 4}); });
  add("prompt/second_row_too_long", "prompt 1", [gen] {
    gen({{1, 2, 3}, std::vector<int64_t>(5000, 5)}, M::GenerationConfig{.max_new_tokens = 4});
  });
  add("prompt/id_huge", "outside the vocabulary", [gen] { gen({{1, 99999999}}, M::GenerationConfig{}); });
  add("prompt/id_negative", "outside the vocabulary", [gen] { gen({{-7, 1}}, M::GenerationConfig{}); });
  add("prompt/id_vocab_size", "outside the vocabulary", [gen] { gen({{512}}, M::GenerationConfig{}); });
  add("prompt/empty", "is empty", [gen] { gen({{}}, M::GenerationConfig{}); });
  add("prompt/none", "no prompts", [gen] { gen({}, M::GenerationConfig{}); });
  add("prompt/max_new_tokens_negative", "max_new_tokens",
      [gen] { gen({{1}}, M::GenerationConfig{.max_new_tokens = -1}); });
  add("prompt/temperature_negative", "temperature", [gen] { gen({{1}}, M::GenerationConfig{.temperature = -1}); });
  add("prompt/top_p_zero", "top_p", [gen] { gen({{1}}, M::GenerationConfig{.top_p = 0}); });
  add("prompt/stop_strings_without_decode", "decode",
      [gen] { gen({{1}}, M::GenerationConfig{.stop_strings = {"x"}}); });
  add("prompt/huge_max_new_tokens_stops_at_context", "", [] {
    auto m = M::QwenForCausalLM::from_pretrained(kTinyModel);
    auto r = M::generate(*m, {std::vector<int64_t>(250, 5)},
                         M::GenerationConfig{.max_new_tokens = int64_t{1} << 60, .ignore_eos = true});
    if (r.tokens[0].size() != 6 || r.finish_reasons[0] != "length")
      throw std::runtime_error("expected 6 tokens ending in 'length', got " + std::to_string(r.tokens[0].size()));
  });

  // ---- tokenizer files and decoding
  add("tokenizer/decode_huge_id", "token id 99999999 is out of range", [] {
    (void)good_tokenizer().decode({0, 99999999});
  });
  add("tokenizer/decode_negative_id", "token id -7 is out of range", [] { (void)good_tokenizer().decode({-7}); });
  add("tokenizer/decode_vocab_size", "token id 4 is out of range", [] { (void)good_tokenizer().decode({4}); });
  add("tokenizer/stream_huge_id", "out of range", [] {
    genesis::Tokenizer tok = good_tokenizer();
    genesis::StreamDecoder s(tok);
    (void)s.put(99999999);
  });
  add("tokenizer/qwen3_decode_huge_id", "out of range", [] {
    (void)genesis::Tokenizer::from_pretrained(kQwen3Tokenizer).decode({151643, 99999999});
  });
  add("tokenizer/missing_file", "cannot open",
      [] { (void)genesis::Tokenizer::from_files((g_root / "none.json").string()); });
  add("tokenizer/folder_without_tokenizer", "tokenizer.json",
      [] { (void)genesis::Tokenizer::from_pretrained(fresh_dir("empty").string()); });
  add("tokenizer/not_json", "not valid JSON", [] {
    fs::path p = fresh_dir("tok") / "tokenizer.json";
    write_file(p, "{\"model\": ");
    (void)genesis::Tokenizer::from_files(p.string());
  });
  add("tokenizer/truncated_qwen3", "not valid JSON", [] {
    fs::path p = fresh_dir("tok") / "tokenizer.json";
    write_file(p, read_file(kQwen3Tokenizer + "/tokenizer.json").substr(0, 100000));
    (void)genesis::Tokenizer::from_files(p.string());
  });
  tok_case("model_missing", "missing \"model\"", [](json& j) { j.erase("model"); });
  tok_case("model_null", "model", [](json& j) { j["model"] = nullptr; });
  tok_case("model_wordpiece", "unsupported model", [](json& j) { j["model"]["type"] = "WordPiece"; });
  tok_case("vocab_missing", "missing \"vocab\"", [](json& j) { j["model"].erase("vocab"); });
  tok_case("vocab_array", "expected an object", [](json& j) { j["model"]["vocab"] = json::array(); });
  tok_case("id_huge", "far beyond", [](json& j) { j["model"]["vocab"]["c"] = 16000000; });
  tok_case("id_over_cap", "expected a token id", [](json& j) { j["model"]["vocab"]["c"] = int64_t{1} << 40; });
  tok_case("id_negative", "expected a token id", [](json& j) { j["model"]["vocab"]["c"] = -1; });
  tok_case("id_string", "expected a token id", [](json& j) { j["model"]["vocab"]["c"] = "4"; });
  tok_case("id_duplicate", "duplicate token id", [](json& j) { j["model"]["vocab"]["c"] = 1; });
  tok_case("merges_unknown_left", "not in model.vocab", [](json& j) { j["model"]["merges"].push_back("q b"); });
  tok_case("merges_unknown_merged", "merged token", [](json& j) { j["model"]["merges"].push_back("b a"); });
  tok_case("merges_not_array", "expected an array", [](json& j) { j["model"]["merges"] = "a b"; });
  tok_case("merges_bad_entry", "model.merges[1]", [](json& j) { j["model"]["merges"].push_back("abc"); });
  tok_case("added_id_huge", "far beyond", [](json& j) { j["added_tokens"][0]["id"] = 16777215; });
  tok_case("added_id_negative", "expected a token id", [](json& j) { j["added_tokens"][0]["id"] = -5; });
  tok_case("added_content_empty", "cannot be empty", [](json& j) { j["added_tokens"][0]["content"] = ""; });
  tok_case("added_content_huge", "over the limit",
           [](json& j) { j["added_tokens"][0]["content"] = repeat("x", 1 << 20); });
  tok_case("added_too_many", "over the limit", [](json& j) {
    json list = json::array();
    for (int i = 0; i < (1 << 20) + 1; ++i) list.push_back({{"id", 4 + i}, {"content", "t"}});
    j["added_tokens"] = std::move(list);
  });
  tok_case("added_duplicate_content", "duplicate token", [](json& j) {
    j["added_tokens"].push_back(j["added_tokens"][0]);
    j["added_tokens"][1]["id"] = 4;
  });
  tok_case("added_id_taken", "is already the token", [](json& j) { j["added_tokens"][0]["id"] = 2; });
  tok_case("added_not_array", "expected an array", [](json& j) { j["added_tokens"] = json::object(); });
  tok_case("added_missing_id", "missing \"id\"", [](json& j) { j["added_tokens"][0].erase("id"); });
  tok_case("bad_regex", "PCRE2",
           [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed"; });
  tok_case("normalizer_unsupported", "unsupported normalizer", [](json& j) { j["normalizer"] = {{"type", "NFKD"}}; });
  tok_case("truncation_set", "truncation", [](json& j) { j["truncation"] = {{"max_length", 4}}; });
  add("tokenizer/config_chat_template_number", "chat_template", [] {
    fs::path d = fresh_dir("tok");
    write_file(d / "tokenizer.json", small_tokenizer().dump());
    write_file(d / "tokenizer_config.json", R"({"chat_template": 42})");
    (void)genesis::Tokenizer::from_pretrained(d.string());
  });
  add("tokenizer/recursive_chat_template_from_folder", "call depth limit", [] {
    fs::path d = fresh_dir("tok");
    write_file(d / "tokenizer.json", small_tokenizer().dump());
    write_file(d / "chat_template.jinja", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    genesis::Tokenizer tok = genesis::Tokenizer::from_pretrained(d.string());
    (void)genesis::ChatTemplate(tok.chat_template()).apply({{"user", "hi"}});
  });

  // ---- chat templates
  tpl_case("unbounded_recursion", "call depth limit", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  tpl_case("mutual_recursion", "call depth limit",
           "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}");
  tpl_case("fan_out_recursion", "call count limit",
           "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}");
  tpl_case("nested_loops", "loop iteration limit",
           "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}");
  tpl_case("output_blowup", "output size limit", "{% for a in range(1000) %}{{ 'x' * 10000000 }}{% endfor %}");
  tpl_case("namespace_string_doubling", "string size limit",
           "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}");
  tpl_case("namespace_plus_doubling", "string size limit",
           "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}");
  tpl_case("namespace_list_doubling", "list size limit",
           "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
  tpl_case("string_repeat_huge", "string size limit", "{{ 'x' * 1000000000000 }}");
  tpl_case("list_repeat_huge", "list size limit", "{{ [1, 2] * 1000000000000 }}");
  tpl_case("replace_doubling", "string size limit",
           "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s.replace('a', ns.s) %}"
           "{% endfor %}");
  tpl_case("join_doubling", "string size limit",
           "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}");
  tpl_case("indent_huge", "string size limit", "{{ 'x'|indent(10000000000) }}");
  tpl_case("total_bytes", "total string size limit",
           "{% for i in range(100000) %}{% set x = 'y' * 15000000 %}{% endfor %}");
  tpl_case("range_huge", "range() too big", "{% for i in range(1000000000) %}{% endfor %}");
  tpl_case("deep_parentheses", "parse depth limit", "{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}");
  tpl_case("deep_lists", "parse depth limit", "{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}");
  tpl_case("deep_not", "parse depth limit", "{{ " + repeat("not ", 100000) + "1 }}");
  tpl_case("deep_unary_minus", "parse depth limit", "{{ " + repeat("-", 100000) + "1 }}");
  tpl_case("long_operator_chain", "expression depth limit", "{{ 1" + repeat(" + 1", 100000) + " }}");
  tpl_case("long_attribute_chain", "expression depth limit", "{{ x" + repeat(".a", 100000) + " }}");
  tpl_case("long_filter_chain", "expression depth limit", "{{ 'x'" + repeat("|trim", 100000) + " }}");
  tpl_case("deep_if_blocks", "block depth limit", repeat("{% if true %}", 100000) + repeat("{% endif %}", 100000));
  tpl_case("deep_for_blocks", "block depth limit",
           repeat("{% for i in [1] %}", 100000) + repeat("{% endfor %}", 100000));
  tpl_case("deep_value_nesting", "value nesting limit",
           "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}");
  tpl_case("namespace_contains_itself", "cannot store a namespace",
           "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  tpl_case("namespace_cycle_through_list", "cannot store a namespace",
           "{% set ns = namespace() %}{% set ns.l = [1, {'a': ns}] %}{{ ns }}");
  tpl_case("unclosed_block", "missing", "{% for m in messages %}{{ m }}");
  tpl_case("raise_exception", "no system role", "{{ raise_exception('no system role') }}");
  add("template/deep_context", "nested deeper",
      [] { render("{{ x }}", "{\"x\": " + repeat("[", 100000) + repeat("]", 100000) + "}"); });
  add("template/context_not_object", "must be a JSON object", [] { render("{{ x }}", "[1]"); });

  // ---- chat JSONL (supervised fine-tuning data)
  jsonl_case("bad_json_line", "data.jsonl:3", std::string(kChat) + "\n" + kChat + "\n{\"messages\": [\n");
  jsonl_case("line_not_object", "data.jsonl:1", "[1, 2]\n");
  jsonl_case("messages_missing", "expected {\"messages\"", "{\"turns\": []}\n");
  jsonl_case("message_without_role", "data.jsonl:2",
             std::string(kChat) + "\n{\"messages\": [{\"content\": \"hi\"}]}\n");
  jsonl_case("content_number", "\"role\" and \"content\"", "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}\n");
  jsonl_case("messages_empty", "\"messages\" is empty", "{\"messages\": []}\n");
  jsonl_case("invalid_utf8", "data.jsonl:1", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}\n");
  add("jsonl/missing_file", "no such file", [] { (void)T::read_chat_jsonl((g_root / "none.jsonl").string()); });
  add("jsonl/no_assistant_turn", "no conversation has an \"assistant\" turn", [] {
    train_on(jsonl_file(R"({"messages": [{"role": "user", "content": "hi"}]})"
                        "\n"
                        R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x"}]})"
                        "\n"));
  });
  add("jsonl/empty_file", "no conversations", [] { train_on(jsonl_file("\n\n")); });
  add("jsonl/assistant_truncated_away", "no assistant token survives", [] {
    train_on(jsonl_file(R"({"messages": [{"role": "system", "content": ")" + repeat("long ", 200) +
                        R"("}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})"
                        "\n"),
             16);
  });
  return c;
}

// ---------------------------------------------------------------- running

enum Outcome { kPass = 0, kSilent = 10, kUnclear = 11, kOtherException = 12 };

// Runs one case in this (child) process; the exit status is the outcome.
[[noreturn]] void run_child(const Case& k) {
  genesis::init(
      {.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "reference", .no_default_paths = true, .quiet = true});
  int status = kPass;
  std::string msg;
  try {
    k.run();
    if (!k.expect.empty()) status = kSilent;
  } catch (const genesis::Error& e) {
    msg = e.what();
    if (k.expect.empty() || msg.find(k.expect) == std::string::npos) status = kUnclear;
  } catch (const std::exception& e) {
    msg = std::string("(not a genesis::Error) ") + e.what();
    status = kOtherException;
  }
  if (msg.size() > 300) msg = msg.substr(0, 297) + "...";
  std::printf("      %s\n", msg.empty() ? "(no error)" : msg.c_str());
  std::fflush(stdout);
  std::_Exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  g_root = fs::temp_directory_path() / ("genesis_hostile_" + std::to_string(::getpid()));
  fs::create_directories(g_root);
  const std::vector<Case> all = cases();
  int run = 0, passed = 0, crashes = 0, hangs = 0, silent = 0, unclear = 0;
  for (const Case& k : all) {
    if (!filter.empty() && k.name.find(filter) == std::string::npos) continue;
    ++run;
    std::printf("[ %3d ] %s (expects \"%s\")\n", run, k.name.c_str(), k.expect.c_str());
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0) run_child(k);
    int st = 0;
    bool hung = false;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(kCaseSeconds)) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        hung = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const char* verdict = "ok";
    if (hung) {
      ++hangs;
      verdict = "HANG";
    } else if (WIFSIGNALED(st)) {
      ++crashes;
      verdict = "CRASH";
      std::printf("      killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
    } else if (WEXITSTATUS(st) == kSilent) {
      ++silent;
      verdict = "SILENT ACCEPT";
    } else if (WEXITSTATUS(st) != kPass) {
      ++unclear;
      verdict = "UNCLEAR MESSAGE";
    } else {
      ++passed;
    }
    std::printf("      %s (%.2f s)\n", verdict, secs);
    std::fflush(stdout);
  }
  std::error_code ec;
  fs::remove_all(g_root, ec);
  std::printf("hostile: %d cases, %d crashes, %d hangs, %d silent accepts, %d unclear messages\n", run, crashes, hangs,
              silent, unclear);
  if (filter.empty() && run < 70) {
    std::printf("hostile: fewer than 70 cases\n");
    return 1;
  }
  return passed == run ? 0 : 1;
}
