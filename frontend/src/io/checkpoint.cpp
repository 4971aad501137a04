// checkpoint.cpp - training checkpoints in one safetensors file.
//
// Tensors are stored as "<section>.<name>" ("model.fc1.weight",
// "optim.state.0.exp_avg").  The metadata holds "genesis.checkpoint" (the
// format tag) and "genesis.manifest", a JSON document:
//   {"step": "12", "epoch": "1",
//    "sections": {"model": {"tensors": 4, "meta": {...}}, ...},
//    "rng": [{"device": "cpu:0", "seed": "42", "offset": "1024"}],
//    "generators": {"loader": {"seed": "7", "offset": "0"}},
//    "user": {...}}
// (64-bit numbers as decimal strings so that any JSON reader keeps them exact).
// load_checkpoint checks the tensors against the manifest.
#include <cctype>
#include <nlohmann/json.hpp>

#include "genesis/io.hpp"

namespace genesis {

// Plain (std::map) objects: an ordered_json object finds keys by linear search,
// quadratic in a hostile manifest.
using json = nlohmann::json;

namespace {

const char* const kBuiltin[] = {"model", "optim", "scheduler", "scaler"};

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(GN_ERR_IO, "[checkpoint] " + file + ": " + problem);
}

bool valid_section_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// Every (name, section) of a checkpoint, built-ins first.
std::vector<std::pair<std::string, const CheckpointSection*>> sections_of(const Checkpoint& c) {
  std::vector<std::pair<std::string, const CheckpointSection*>> out = {
      {"model", &c.model}, {"optim", &c.optim}, {"scheduler", &c.scheduler}, {"scaler", &c.scaler}};
  for (const auto& [name, s] : c.extra) out.emplace_back(name, &s);
  return out;
}

uint64_t parse_u64(const json& v, const std::string& file, const std::string& what) {
  if (!v.is_string()) fail(file, "manifest: " + what + " is not a decimal string");
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
    fail(file, "manifest: " + what + " = '" + s + "' is not an unsigned integer");
  try {
    return std::stoull(s);
  } catch (const std::exception&) {
    fail(file, "manifest: " + what + " = '" + s + "' is out of range");
  }
}

int64_t parse_i64(const json& v, const std::string& file, const std::string& what) {
  if (!v.is_string()) fail(file, "manifest: " + what + " is not a decimal string");
  try {
    size_t used = 0;
    const std::string s = v.get<std::string>();
    const long long r = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return r;
  } catch (const std::exception&) {
    fail(file, "manifest: " + what + " = " + v.dump() + " is not an integer");
  }
}

json string_map(const StringMap& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

StringMap to_string_map(const json& j, const std::string& file, const std::string& what) {
  if (!j.is_object()) fail(file, "manifest: " + what + " is not an object");
  StringMap m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) fail(file, "manifest: " + what + "['" + it.key() + "'] is not a string");
    m[it.key()] = it.value().get<std::string>();
  }
  return m;
}

}  // namespace

void Checkpoint::capture_rng() { rng = get_all_rng_states(); }

void Checkpoint::restore_rng() const { set_all_rng_states(rng); }

CheckpointSection& Checkpoint::section(const std::string& name) {
  if (name == "model") return model;
  if (name == "optim") return optim;
  if (name == "scheduler") return scheduler;
  if (name == "scaler") return scaler;
  return extra[name];
}

const CheckpointSection& Checkpoint::section(const std::string& name) const {
  if (name == "model") return model;
  if (name == "optim") return optim;
  if (name == "scheduler") return scheduler;
  if (name == "scaler") return scaler;
  auto it = extra.find(name);
  if (it == extra.end()) throw Error(GN_ERR_NOT_FOUND, "[checkpoint] no section '" + name + "'");
  return it->second;
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  TensorMap all;
  json sections = json::object();
  for (const auto& [name, s] : sections_of(ckpt)) {
    if (!valid_section_name(name)) fail(path, "section name '" + name + "' must match [A-Za-z0-9_-]+");
    for (const char* b : kBuiltin)
      if (name == b && ckpt.extra.count(name)) fail(path, "extra section '" + name + "' clashes with the built-in one");
    for (const auto& [k, t] : s->tensors) {
      if (!t.defined()) fail(path, "tensor '" + name + "." + k + "' is undefined");
      all[name + "." + k] = t;
    }
    if (s->empty() && ckpt.extra.count(name) == 0) continue;  // omit empty built-ins
    sections[name] = {{"tensors", std::to_string(s->tensors.size())}, {"meta", string_map(s->meta)}};
  }
  json rng = json::array();
  for (const RngState& r : ckpt.rng)
    rng.push_back({{"device", r.device.str()}, {"seed", std::to_string(r.seed)}, {"offset", std::to_string(r.offset)}});
  json gens = json::object();
  for (const auto& [name, r] : ckpt.generators)
    gens[name] = {{"seed", std::to_string(r.seed)}, {"offset", std::to_string(r.offset)}};
  json manifest = {{"step", std::to_string(ckpt.step)},
                   {"epoch", std::to_string(ckpt.epoch)},
                   {"sections", sections},
                   {"rng", rng},
                   {"generators", gens},
                   {"user", string_map(ckpt.user)}};
  std::string text;
  try {
    text = manifest.dump();
  } catch (const json::exception& e) {
    fail(path, std::string("cannot encode the metadata (strings must be UTF-8): ") + e.what());
  }
  StringMap meta = {{"genesis.checkpoint", kCheckpointFormat},
                    {"genesis.manifest", text},
                    {"step", std::to_string(ckpt.step)},
                    {"epoch", std::to_string(ckpt.epoch)}};
  save_safetensors(path, all, meta);
}

Checkpoint load_checkpoint(const std::string& path, const Device& device) {
  SafetensorsFile f = load_safetensors(path, device);
  auto tag = f.metadata.find("genesis.checkpoint");
  if (tag == f.metadata.end())
    fail(path, "not a Genesis checkpoint (no 'genesis.checkpoint' metadata; use load_safetensors for plain files)");
  if (tag->second != kCheckpointFormat)
    fail(path, "unsupported checkpoint format '" + tag->second + "' (this build reads '" + kCheckpointFormat + "')");
  auto mtext = f.metadata.find("genesis.manifest");
  if (mtext == f.metadata.end()) fail(path, "the 'genesis.manifest' metadata is missing");
  json m;
  try {
    m = json::parse(mtext->second);
  } catch (const json::exception& e) {
    fail(path, std::string("the manifest is not valid JSON: ") + e.what());
  }
  if (!m.is_object()) fail(path, "the manifest is not a JSON object");
  for (const char* k : {"step", "epoch", "sections", "rng", "generators", "user"})
    if (!m.contains(k)) fail(path, std::string("the manifest lacks '") + k + "'");

  Checkpoint c;
  c.step = parse_i64(m["step"], path, "step");
  c.epoch = parse_i64(m["epoch"], path, "epoch");
  c.user = to_string_map(m["user"], path, "user");
  if (!m["sections"].is_object()) fail(path, "manifest: 'sections' is not an object");
  std::map<std::string, uint64_t> expected;
  for (auto it = m["sections"].begin(); it != m["sections"].end(); ++it) {
    const std::string& name = it.key();
    if (!valid_section_name(name)) fail(path, "manifest: bad section name '" + name + "'");
    const json& s = it.value();
    if (!s.is_object() || !s.contains("tensors") || !s.contains("meta"))
      fail(path, "manifest: section '" + name + "' needs 'tensors' and 'meta'");
    expected[name] = parse_u64(s["tensors"], path, "sections." + name + ".tensors");
    c.section(name).meta = to_string_map(s["meta"], path, "sections." + name + ".meta");
  }
  std::map<std::string, uint64_t> seen;
  for (auto& [key, t] : f.tensors) {
    const size_t dot = key.find('.');
    const std::string sec = dot == std::string::npos ? key : key.substr(0, dot);
    if (dot == std::string::npos || !expected.count(sec))
      fail(path, "tensor '" + key + "' belongs to no section of the manifest");
    c.section(sec).tensors[key.substr(dot + 1)] = std::move(t);
    ++seen[sec];
  }
  for (const auto& [name, n] : expected)
    if (seen[name] != n)
      fail(path, "section '" + name + "' should hold " + std::to_string(n) + " tensors but the file has " +
                     std::to_string(seen[name]));
  if (!m["rng"].is_array()) fail(path, "manifest: 'rng' is not an array");
  const std::vector<Device> now = all_devices();
  for (const json& r : m["rng"]) {
    if (!r.is_object() || !r.contains("device") || !r["device"].is_string() || !r.contains("seed") ||
        !r.contains("offset"))
      fail(path, "manifest: an 'rng' entry needs 'device', 'seed' and 'offset'");
    RngState s;
    s.seed = parse_u64(r["seed"], path, "rng.seed");
    s.offset = parse_u64(r["offset"], path, "rng.offset");
    const std::string dev = r["device"].get<std::string>();
    bool found = false;
    for (const Device& d : now) {
      if (d.str() == dev) {
        s.device = d;
        found = true;
      }
    }
    if (found) c.rng.push_back(s);  // states of devices this process lacks are dropped
  }
  if (!m["generators"].is_object()) fail(path, "manifest: 'generators' is not an object");
  for (auto it = m["generators"].begin(); it != m["generators"].end(); ++it) {
    const json& g = it.value();
    if (!g.is_object() || !g.contains("seed") || !g.contains("offset"))
      fail(path, "manifest: generator '" + it.key() + "' needs 'seed' and 'offset'");
    RngState s;
    s.seed = parse_u64(g["seed"], path, "generators." + it.key() + ".seed");
    s.offset = parse_u64(g["offset"], path, "generators." + it.key() + ".offset");
    c.generators[it.key()] = s;
  }
  return c;
}

void check_state_dict_match(const TensorMap& expected, const TensorMap& got, const std::string& what, bool strict) {
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [k, t] : expected) {
    auto it = got.find(k);
    if (it == got.end()) {
      missing.push_back(k);
      continue;
    }
    if (it->second.shape() != t.shape() || it->second.dtype() != t.dtype()) {
      std::string a = "[", b = "[";
      for (int64_t s : t.shape()) a += std::to_string(s) + ",";
      for (int64_t s : it->second.shape()) b += std::to_string(s) + ",";
      mismatched.push_back(k + " (expected " + a + "] " + dtype_name(t.dtype()) + ", got " + b + "] " +
                           dtype_name(it->second.dtype()) + ")");
    }
  }
  for (const auto& [k, t] : got)
    if (!expected.count(k)) unexpected.push_back(k);
  if (!strict) {
    missing.clear();
    unexpected.clear();
  }
  if (missing.empty() && unexpected.empty() && mismatched.empty()) return;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  std::string msg = "[" + what + "] state dict mismatch:";
  if (!missing.empty()) msg += " missing keys: " + join(missing) + ";";
  if (!unexpected.empty()) msg += " unexpected keys: " + join(unexpected) + ";";
  if (!mismatched.empty()) msg += " shape/dtype mismatches: " + join(mismatched) + ";";
  msg.pop_back();
  throw Error(GN_ERR_SHAPE, msg);
}

}  // namespace genesis
