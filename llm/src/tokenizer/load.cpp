// llm/src/tokenizer/load.cpp - Tokenizer::from_files / from_pretrained: reads tokenizer.json and
// tokenizer_config.json with nlohmann-json, checks every field the pipeline depends on and refuses
// what it does not implement (naming the file, the field and the value), then builds the tables.
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer_impl.h"

namespace genesis {

namespace tokenizer_detail {
namespace {

using json = nlohmann::json;

// Short rendering of a JSON value for messages.
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// Where a field lives, for messages: "tokenizer.json: pre_tokenizer.pretokenizers[0].behavior".
struct Where {
  const std::string& file;
  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    fail(GN_ERR_INVALID_ARGUMENT, file + ": " + field + ": " + what);
  }
  const json& object(const json& j, const std::string& field) const {
    if (!j.is_object()) bad(field, "expected an object, got " + show(j));
    return j;
  }
  std::string string(const json& j, const std::string& field) const {
    if (!j.is_string()) bad(field, "expected a string, got " + show(j));
    return j.get<std::string>();
  }
  bool boolean(const json& obj, const char* key, bool fallback, const std::string& field) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) bad(field + "." + key, "expected true or false, got " + show(*it));
    return it->get<bool>();
  }
  int64_t id(const json& j, const std::string& field) const {
    // Ids index dense tables, so they are capped well above any real vocabulary (Qwen: 151669).
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= kMaxId)
      bad(field, "expected a token id (integer 0.." + std::to_string(kMaxId - 1) + "), got " + show(j));
    return j.get<int64_t>();
  }
  static constexpr int64_t kMaxId = int64_t(1) << 24;
  std::string type(const json& j, const std::string& field) const {
    object(j, field);
    auto it = j.find("type");
    if (it == j.end()) bad(field, "missing \"type\"");
    return string(*it, field + ".type");
  }
};

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(GN_ERR_IO, path + ": cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(GN_ERR_IO, path + ": read error");
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {  // syntax, and numbers beyond a double (out_of_range)
    fail(GN_ERR_INVALID_ARGUMENT, path + ": not valid JSON (" + e.what() + ")");
  }
}

// Grows the id tables so `id` is addressable.
void ensure_id(Impl& impl, int64_t id) {
  if (id >= int64_t(impl.id_to_token.size())) {
    impl.id_to_token.resize(size_t(id) + 1);
    impl.id_flags.resize(size_t(id) + 1, 0);
  }
}

// ---- model

// Ids index dense tables: an id may exceed the number of tokens a file defines by this much at most, so a hostile
// file cannot make a few tokens allocate tables for millions of ids.
int64_t dense_limit(size_t tokens) { return int64_t(tokens) * 2 + 1024; }

// Most added tokens, and the longest added-token content.
constexpr size_t kMaxAddedTokens = size_t(1) << 20;
constexpr size_t kMaxAddedTokenBytes = size_t(1) << 16;

void load_model(Impl& impl, const json& m, const Where& w, size_t added_count) {
  w.object(m, "model");
  // HF also reads a model without "type" as BPE when it has vocab and merges.
  const std::string type = m.contains("type") ? w.string(m["type"], "model.type") : "BPE";
  if (type != "BPE") w.bad("model.type", "unsupported model \"" + type + "\" (only \"BPE\" is implemented)");
  if (auto it = m.find("dropout"); it != m.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
    w.bad("model.dropout", "BPE dropout " + show(*it) + " is not supported (only null or 0)");
  impl.byte_fallback = w.boolean(m, "byte_fallback", false, "model");  // checked against the pre-tokenizer later
  impl.fuse_unk = w.boolean(m, "fuse_unk", false, "model");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = m.find(key);
    if (it != m.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      w.bad(std::string("model.") + key, show(*it) + " is not supported (only null or \"\")");
  }
  impl.ignore_merges = w.boolean(m, "ignore_merges", false, "model");

  auto vit = m.find("vocab");
  if (vit == m.end()) w.bad("model", "missing \"vocab\"");
  w.object(*vit, "model.vocab");
  impl.token_to_id.reserve(vit->size() + 64);
  const int64_t max_id = dense_limit(vit->size() + added_count);
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    const std::string field = "model.vocab[" + show(it.key()) + "]";
    const int64_t id = w.id(it.value(), field);
    if (id >= max_id)
      w.bad(field, "id " + std::to_string(id) + " is far beyond the " + std::to_string(vit->size() + added_count) +
                       " tokens the file defines (ids must be nearly dense)");
    ensure_id(impl, id);
    if (!impl.id_to_token[size_t(id)].empty())
      w.bad(field, "id " + std::to_string(id) + " is also given to " + show(impl.id_to_token[size_t(id)]) +
                       " (duplicate token id)");
    if (it.key().empty()) w.bad(field, "a token cannot be empty");
    impl.id_to_token[size_t(id)] = it.key();
    impl.id_flags[size_t(id)] = Impl::kModelFlag;
    impl.token_to_id[it.key()] = id;
  }

  if (auto it = m.find("unk_token"); it != m.end() && !it->is_null()) {
    const std::string unk = w.string(*it, "model.unk_token");
    auto u = impl.token_to_id.find(unk);
    if (u == impl.token_to_id.end()) w.bad("model.unk_token", show(*it) + " is not in model.vocab");
    impl.unk_id = u->second;
  }

  auto mit = m.find("merges");
  if (mit == m.end()) w.bad("model", "missing \"merges\"");
  if (!mit->is_array()) w.bad("model.merges", "expected an array, got " + show(*mit));
  impl.merges.reserve(mit->size());
  std::string merged;
  for (size_t r = 0; r < mit->size(); ++r) {
    const json& e = (*mit)[r];
    const std::string field = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (e.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
        w.bad(field, "expected \"left right\" (two tokens, one space), got " + show(e));
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      w.bad(field, "expected \"left right\" or [\"left\", \"right\"], got " + show(e));
    }
    auto ia = impl.token_to_id.find(a), ib = impl.token_to_id.find(b);
    if (ia == impl.token_to_id.end()) w.bad(field, "left token " + show(a) + " is not in model.vocab");
    if (ib == impl.token_to_id.end()) w.bad(field, "right token " + show(b) + " is not in model.vocab");
    merged = a + b;
    auto im = impl.token_to_id.find(merged);
    if (im == impl.token_to_id.end()) w.bad(field, "merged token " + show(merged) + " is not in model.vocab");
    impl.merges.insert(int32_t(ia->second), int32_t(ib->second), int32_t(r), int32_t(im->second));
  }
}

// ---- added tokens

void load_added_tokens(Impl& impl, const json& list, const Where& w) {
  if (list.is_null()) return;
  if (!list.is_array()) w.bad("added_tokens", "expected an array, got " + show(list));
  if (list.size() > kMaxAddedTokens)
    w.bad("added_tokens",
          std::to_string(list.size()) + " entries is over the limit of " + std::to_string(kMaxAddedTokens));
  const int64_t max_id = dense_limit(impl.token_to_id.size() + list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json& e = w.object(list[i], field);
    AddedToken t;
    if (!e.contains("id")) w.bad(field, "missing \"id\"");
    if (!e.contains("content")) w.bad(field, "missing \"content\"");
    t.id = w.id(e["id"], field + ".id");
    t.content = w.string(e["content"], field + ".content");
    if (t.content.empty()) w.bad(field + ".content", "an added token cannot be empty");
    if (t.content.size() > kMaxAddedTokenBytes)
      w.bad(field + ".content", std::to_string(t.content.size()) + " bytes is over the limit of " +
                                    std::to_string(kMaxAddedTokenBytes) + " for one added token");
    if (t.id >= max_id)
      w.bad(field + ".id", "id " + std::to_string(t.id) +
                               " is far beyond the tokens the file defines (ids must be "
                               "nearly dense)");
    if (t.id < int64_t(impl.id_to_token.size()) && !impl.id_to_token[size_t(t.id)].empty() &&
        impl.id_to_token[size_t(t.id)] != t.content)
      w.bad(field + ".id", "id " + std::to_string(t.id) + " is already the token " +
                               show(impl.id_to_token[size_t(t.id)]) + ", not " + show(t.content));
    if (auto dup = impl.token_to_id.find(t.content); dup != impl.token_to_id.end() && dup->second != t.id)
      w.bad(field + ".content", show(t.content) + " is already token " + std::to_string(dup->second) +
                                    " (duplicate token with another id)");
    t.special = w.boolean(e, "special", false, field);
    t.lstrip = w.boolean(e, "lstrip", false, field);
    t.rstrip = w.boolean(e, "rstrip", false, field);
    t.single_word = w.boolean(e, "single_word", false, field);
    t.normalized = w.boolean(e, "normalized", !t.special, field);
    ensure_id(impl, t.id);
    impl.id_to_token[size_t(t.id)] = t.content;
    impl.id_flags[size_t(t.id)] |= uint8_t(Impl::kAddedFlag | (t.special ? Impl::kSpecialFlag : 0));
    impl.token_to_id[t.content] = t.id;
    impl.added.push_back(std::move(t));
  }
}

// ---- pipeline stages

// One normalizer: NFC, Prepend or Replace (a literal pattern).
NormalizerStep normalizer_step(const json& n, const Where& w, const std::string& field) {
  const std::string type = w.type(n, field);
  if (type == "NFC") return {NormalizerStep::Kind::NFC, "", ""};
  if (type == "Prepend") {
    if (!n.contains("prepend")) w.bad(field, "missing \"prepend\"");
    return {NormalizerStep::Kind::Prepend, w.string(n["prepend"], field + ".prepend"), ""};
  }
  if (type == "Replace") {
    if (!n.contains("pattern") || !n.contains("content")) w.bad(field, "needs \"pattern\" and \"content\"");
    const json& p = w.object(n["pattern"], field + ".pattern");
    if (!p.contains("String"))
      w.bad(field + ".pattern", "only {\"String\": ...} patterns are supported, got " + show(p));
    const std::string from = w.string(p["String"], field + ".pattern.String");
    if (from.empty()) w.bad(field + ".pattern.String", "an empty pattern is not supported");
    return {NormalizerStep::Kind::Replace, from, w.string(n["content"], field + ".content")};
  }
  w.bad(field + ".type",
        "unsupported normalizer \"" + type + "\" (supported: NFC, Prepend, Replace, a Sequence of these, null)");
}

void load_normalizer(Impl& impl, const json& n, const Where& w) {
  if (n.is_null()) return;
  std::vector<NormalizerStep> steps;
  if (w.type(n, "normalizer") == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    const json& list = n["normalizers"];
    for (size_t i = 0; i < list.size(); ++i)
      steps.push_back(normalizer_step(list[i], w, "normalizer.normalizers[" + std::to_string(i) + "]"));
  } else {
    steps.push_back(normalizer_step(n, w, "normalizer"));
  }
  bool only_nfc = true;
  for (const NormalizerStep& st : steps) only_nfc = only_nfc && st.kind == NormalizerStep::Kind::NFC;
  if (only_nfc)
    impl.use_nfc = !steps.empty();  // the fast path: NFC-inert stretches are skipped
  else
    impl.normalizers = std::move(steps);
}

// GPT-2's split, applied by a ByteLevel pre-tokenizer with use_regex true.
constexpr char kGpt2Pattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void compile_split(Impl& impl, const std::string& pattern, bool literal, const Where& w, const std::string& field) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options =
      literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;  // UCP is not allowed with LITERAL
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    w.bad(field, "PCRE2 cannot compile " + show(pattern) + " at offset " + std::to_string(offset) + ": " +
                     reinterpret_cast<const char*>(buf));
  }
  impl.split_regex.reset(code, pcre2_code_free);
  impl.split_jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;  // else the interpreter runs it
}

// Checks a ByteLevel pre-tokenizer entry; returns its use_regex.
bool check_byte_level(const json& b, const Where& w, const std::string& field) {
  if (w.boolean(b, "add_prefix_space", false, field))
    w.bad(field + ".add_prefix_space", "true is not supported (only false)");
  return w.boolean(b, "use_regex", true, field);
}

void load_split(Impl& impl, const json& s, const Where& w, const std::string& field) {
  if (!s.contains("pattern")) w.bad(field, "missing \"pattern\"");
  const json& p = w.object(s["pattern"], field + ".pattern");
  const std::string behavior = s.contains("behavior") ? w.string(s["behavior"], field + ".behavior") : "";
  if (behavior == "Isolated")
    impl.split_behavior = SplitBehavior::Isolated;
  else if (behavior == "MergedWithPrevious")
    impl.split_behavior = SplitBehavior::MergedWithPrevious;
  else if (behavior == "MergedWithNext")
    impl.split_behavior = SplitBehavior::MergedWithNext;
  else
    w.bad(field + ".behavior", "unsupported split behavior " + show(behavior) +
                                   " (supported: Isolated, MergedWithPrevious, MergedWithNext)");
  if (w.boolean(s, "invert", false, field)) w.bad(field + ".invert", "true is not supported (only false)");
  if (p.contains("Regex"))
    compile_split(impl, w.string(p["Regex"], field + ".pattern.Regex"), false, w, field + ".pattern.Regex");
  else if (p.contains("String"))
    compile_split(impl, w.string(p["String"], field + ".pattern.String"), true, w, field + ".pattern.String");
  else
    w.bad(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}, got " + show(p));
}

// The Metaspace pre-tokenizer or decoder's options.
MetaspaceOptions load_metaspace(const json& m, const Where& w, const std::string& field) {
  MetaspaceOptions o;
  o.on = true;
  if (auto it = m.find("replacement"); it != m.end()) {
    o.replacement = w.string(*it, field + ".replacement");
    size_t i = 0;
    if (o.replacement.empty() || (next_code_point(o.replacement, i), i != o.replacement.size()))
      w.bad(field + ".replacement", "expected one character, got " + show(*it));
  }
  if (auto it = m.find("prepend_scheme"); it != m.end() && !it->is_null()) {
    const std::string scheme = w.string(*it, field + ".prepend_scheme");
    if (scheme == "always")
      o.prepend = MetaspaceOptions::Prepend::Always;
    else if (scheme == "first")
      o.prepend = MetaspaceOptions::Prepend::First;
    else if (scheme == "never")
      o.prepend = MetaspaceOptions::Prepend::Never;
    else
      w.bad(field + ".prepend_scheme", "expected \"always\", \"first\" or \"never\", got " + show(*it));
  } else if (!w.boolean(m, "add_prefix_space", true, field)) {  // files before prepend_scheme
    o.prepend = MetaspaceOptions::Prepend::Never;
  }
  o.split = w.boolean(m, "split", true, field);
  return o;
}

void load_pre_tokenizer(Impl& impl, const json& pt, const Where& w) {
  // Byte-level: Sequence[Split, ByteLevel(use_regex=false)] (Qwen2/3, Llama 3) and ByteLevel(use_regex=true)
  // alone or as a one-element Sequence (GPT-2).  Character-level (SentencePiece-style BPE): null (Llama 2),
  // Split alone (Gemma) or Metaspace.
  if (pt.is_null()) {
    impl.byte_level = false;
    return;
  }
  const std::string type = w.type(pt, "pre_tokenizer");
  if (type == "Split") {
    impl.byte_level = false;
    load_split(impl, pt, w, "pre_tokenizer");
    return;
  }
  if (type == "Metaspace") {
    impl.byte_level = false;
    impl.metaspace = load_metaspace(pt, w, "pre_tokenizer");
    return;
  }
  if (type == "ByteLevel") {
    if (!check_byte_level(pt, w, "pre_tokenizer"))
      w.bad("pre_tokenizer.use_regex", "false without a preceding Split leaves the text unsplit; not supported");
    compile_split(impl, kGpt2Pattern, false, w, "pre_tokenizer");
    return;
  }
  if (type != "Sequence")
    w.bad("pre_tokenizer.type",
          "unsupported pre-tokenizer \"" + type + "\" (supported: Sequence, ByteLevel, Split, Metaspace, null)");
  if (!pt.contains("pretokenizers") || !pt["pretokenizers"].is_array())
    w.bad("pre_tokenizer.pretokenizers", "expected an array");
  const json& list = pt["pretokenizers"];
  std::vector<std::string> types;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = w.type(list[i], field);
    if (t != "Split" && t != "ByteLevel" && t != "Metaspace")
      w.bad(field + ".type", "unsupported pre-tokenizer \"" + t + "\" (supported: Split, ByteLevel, Metaspace)");
    types.push_back(t);
  }
  if (types.size() == 1) {
    load_pre_tokenizer(impl, list[0], w);
    return;
  }
  if (types.size() != 2 || types[0] != "Split" || types[1] != "ByteLevel")
    w.bad("pre_tokenizer.pretokenizers", "unsupported sequence of " + std::to_string(types.size()) +
                                             " pre-tokenizers (supported: [Split, ByteLevel] or one of them)");
  if (check_byte_level(list[1], w, "pre_tokenizer.pretokenizers[1]"))
    w.bad("pre_tokenizer.pretokenizers[1].use_regex", "true after a Split is not supported (only false)");
  load_split(impl, list[0], w, "pre_tokenizer.pretokenizers[0]");
}

void load_template(Impl& impl, const json& t, const Where& w, const std::string& field) {
  if (!t.contains("single") || !t["single"].is_array()) w.bad(field + ".single", "expected an array");
  const json specials = t.contains("special_tokens") ? t["special_tokens"] : json::object();
  bool seen_sequence = false;
  const json& single = t["single"];
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string f = field + ".single[" + std::to_string(i) + "]";
    const json& piece = w.object(single[i], f);
    if (piece.contains("Sequence")) {
      if (seen_sequence) w.bad(f, "a second Sequence piece is not supported");
      seen_sequence = true;
    } else if (piece.contains("SpecialToken")) {
      const json& st = w.object(piece["SpecialToken"], f + ".SpecialToken");
      const std::string name = st.contains("id") ? w.string(st["id"], f + ".SpecialToken.id") : "";
      if (!specials.contains(name)) w.bad(f, "special token " + show(name) + " is not in " + field + ".special_tokens");
      const json& entry = specials[name];
      if (!entry.contains("ids") || !entry["ids"].is_array())
        w.bad(field + ".special_tokens[" + show(name) + "].ids", "expected an array");
      for (const json& id : entry["ids"]) {
        const int64_t v = w.id(id, field + ".special_tokens[" + show(name) + "].ids");
        (seen_sequence ? impl.suffix_ids : impl.prefix_ids).push_back(v);
      }
    } else {
      w.bad(f, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " + show(piece));
    }
  }
  if (!seen_sequence) w.bad(field + ".single", "has no Sequence piece");
}

void load_post_processor(Impl& impl, const json& p, const Where& w, const std::string& field) {
  if (p.is_null()) return;
  const std::string type = w.type(p, field);
  if (type == "ByteLevel") return;  // only trims offsets; ids are unchanged
  if (type == "TemplateProcessing") {
    load_template(impl, p, w, field);
    return;
  }
  if (type == "Sequence" && p.contains("processors") && p["processors"].is_array()) {
    for (size_t i = 0; i < p["processors"].size(); ++i)
      load_post_processor(impl, p["processors"][i], w, field + ".processors[" + std::to_string(i) + "]");
    return;
  }
  w.bad(field + ".type", "unsupported post-processor \"" + type +
                             "\" (supported: ByteLevel, TemplateProcessing, Sequence of these, null)");
}

// Reads the decoder into impl.decoders (left empty for ByteLevel); returns whether it is ByteLevel.
bool load_decoder(Impl& impl, const json& d, const Where& w, const std::string& field) {
  if (d.is_null()) w.bad(field, "null is not supported (a decoder is needed)");
  const std::string type = w.type(d, field);
  if (type == "ByteLevel") return true;
  if (type == "Sequence" && d.contains("decoders") && d["decoders"].is_array() && !d["decoders"].empty()) {
    size_t byte_level = 0;
    const json& list = d["decoders"];
    for (size_t i = 0; i < list.size(); ++i)
      byte_level += load_decoder(impl, list[i], w, field + ".decoders[" + std::to_string(i) + "]");
    if (byte_level != 0 && byte_level != list.size())
      w.bad(field, "ByteLevel mixed with other decoders is not supported");
    return byte_level != 0;
  }
  DecoderStep step{DecoderStep::Kind::Fuse, "", "", 0, 0, {}};
  if (type == "Fuse") {
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::ByteFallback;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::Replace;
    const NormalizerStep r = normalizer_step(d, w, field);  // same fields as the Replace normalizer
    step.a = r.a;
    step.b = r.b;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::Strip;
    if (!d.contains("content")) w.bad(field, "missing \"content\"");
    step.a = w.string(d["content"], field + ".content");
    size_t i = 0;
    if (step.a.empty() || (next_code_point(step.a, i), i != step.a.size()))
      w.bad(field + ".content", "expected one character, got " + show(d["content"]));
    for (const char* key : {"start", "stop"}) {
      auto it = d.find(key);
      if (it == d.end() || !it->is_number_unsigned() || it->get<uint64_t>() > 1024)
        w.bad(field + "." + key, "expected a count (0..1024)");
      (std::string(key) == "start" ? step.start : step.stop) = it->get<size_t>();
    }
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::Metaspace;
    step.metaspace = load_metaspace(d, w, field);
  } else {
    w.bad(field + ".type", "unsupported decoder \"" + type +
                               "\" (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
  }
  impl.decoders.push_back(std::move(step));
  return false;
}

// ---- tokenizer_config.json

// A special token given as "text", null or {"content": "text", ...}.
std::string config_token(const json& cfg, const char* key, const Where& w) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return w.string((*it)["content"], std::string(key) + ".content");
  w.bad(key, "expected a string, null or {\"content\": ...}, got " + show(*it));
}

// Reads the config's fields into tok and impl; returns its split_special_tokens.
bool load_config(Tokenizer& tok, Impl& impl, const std::string& path) {
  const json cfg = read_json(path);
  const Where w{path};
  w.object(cfg, "(top level)");
  if (auto it = cfg.find("chat_template"); it != cfg.end() && !it->is_null()) {
    if (it->is_string()) {
      impl.chat_template = it->get<std::string>();
    } else if (it->is_array()) {  // [{"name": "default", "template": ...}, ...]
      for (const json& e : *it)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template"))
          impl.chat_template = w.string(e["template"], "chat_template[default].template");
    } else {
      w.bad("chat_template", "expected a string or a list of named templates, got " + show(*it));
    }
  }
  tok.eos_token = config_token(cfg, "eos_token", w);
  tok.bos_token = config_token(cfg, "bos_token", w);
  tok.pad_token = config_token(cfg, "pad_token", w);
  impl.clean_up_spaces = w.boolean(cfg, "clean_up_tokenization_spaces", false, "(top level)");
  return w.boolean(cfg, "split_special_tokens", false, "(top level)");
}

}  // namespace
}  // namespace tokenizer_detail

Tokenizer Tokenizer::from_files(const std::string& tokenizer_json, const std::string& tokenizer_config_json) {
  using namespace tokenizer_detail;
  const json j = read_json(tokenizer_json);
  const Where w{tokenizer_json};
  w.object(j, "(top level)");
  for (const char* key : {"truncation", "padding"})
    if (j.contains(key) && !j[key].is_null())
      w.bad(key, "encode-time " + std::string(key) + " is not supported (only null), got " + show(j[key]));
  for (const char* key : {"model", "normalizer", "pre_tokenizer", "post_processor", "decoder"})
    if (!j.contains(key)) w.bad("(top level)", std::string("missing \"") + key + "\"");

  auto impl = std::make_shared<Impl>();
  const size_t added_count = j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"].size() : 0;
  load_model(*impl, j["model"], w, added_count);
  load_added_tokens(*impl, j.contains("added_tokens") ? j["added_tokens"] : json(), w);
  load_normalizer(*impl, j["normalizer"], w);
  load_pre_tokenizer(*impl, j["pre_tokenizer"], w);
  load_post_processor(*impl, j["post_processor"], w, "post_processor");
  const bool byte_level_decoder = load_decoder(*impl, j["decoder"], w, "decoder");
  if (impl->byte_level != byte_level_decoder)
    w.bad(impl->byte_level ? "decoder" : "pre_tokenizer",
          impl->byte_level ? "a ByteLevel pre-tokenizer needs the ByteLevel decoder"
                           : "the ByteLevel decoder needs a ByteLevel pre-tokenizer");
  if (impl->byte_level && impl->byte_fallback)
    w.bad("model.byte_fallback",
          "true is not supported with a ByteLevel pre-tokenizer (byte-level BPE covers every byte)");

  Tokenizer tok;
  const bool split_special = !tokenizer_config_json.empty() && load_config(tok, *impl, tokenizer_config_json);

  // Added tokens are matched in the raw text unless "normalized"; with split_special_tokens the
  // special ones are not matched at all (they are then tokenized as plain text).
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& t = impl->added[i];
    if (split_special && t.special) continue;
    (t.normalized ? impl->normalized_matcher : impl->raw_matcher).add(t.content, int32_t(i));
  }

  auto model_id = [&](const std::string& s) -> int32_t {
    auto it = impl->token_to_id.find(s);
    return it == impl->token_to_id.end() || !(impl->id_flags[size_t(it->second)] & Impl::kModelFlag)
               ? -1
               : int32_t(it->second);
  };
  if (!impl->byte_level) {
    // Character-level BPE: ASCII characters looked up directly, <0xNN> tokens for byte fallback, and each
    // token decodes to what the decoder chain makes of it.
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      impl->fallback_id[size_t(b)] = model_id(name);
      impl->byte_id[size_t(b)] = b < 0x80 ? model_id(std::string(1, char(b))) : -1;
    }
    impl->id_bytes.resize(impl->id_to_token.size());
    for (size_t id = 0; id < impl->id_to_token.size(); ++id)
      if (!impl->id_to_token[id].empty()) impl->id_bytes[id] = impl->token_text(id);
    bool fused = false;
    for (const DecoderStep& st : impl->decoders) {
      fused = fused || st.kind == DecoderStep::Kind::Fuse;
      if (st.kind == DecoderStep::Kind::Strip && fused && st.a == " ") impl->stream_strip = st.start;
      if (st.kind == DecoderStep::Kind::Metaspace && st.metaspace.prepend != MetaspaceOptions::Prepend::Never)
        impl->stream_strip = 1;
    }
  }
  const ByteLevelTable& table = byte_level_table();
  for (int b = 0; b < 256 && impl->byte_level; ++b) {
    auto it = impl->token_to_id.find(table.byte_to_utf8[size_t(b)]);
    impl->byte_id[size_t(b)] = it == impl->token_to_id.end() ? -1 : int32_t(it->second);
  }
  // What each id decodes to: added tokens their content; model tokens the bytes their characters stand
  // for, or (like HF) their own UTF-8 when some character is not a byte-level stand-in.
  if (impl->byte_level) impl->id_bytes.resize(impl->id_to_token.size());
  for (size_t id = 0; id < impl->id_to_token.size() && impl->byte_level; ++id) {
    const std::string& t = impl->id_to_token[id];
    if (impl->id_flags[id] & Impl::kAddedFlag) {
      impl->id_bytes[id] = t;
      continue;
    }
    std::string bytes;
    bool ok = true;
    for (size_t i = 0; i < t.size() && ok;) {
      const int32_t cp = next_code_point(t, i);
      ok = cp < 512 && table.cp_to_byte[size_t(cp)] >= 0;
      if (ok) bytes += char(table.cp_to_byte[size_t(cp)]);
    }
    impl->id_bytes[id] = ok ? bytes : t;
  }

  auto id_of = [&](const std::string& s) -> int64_t {
    auto it = impl->token_to_id.find(s);
    return s.empty() || it == impl->token_to_id.end() ? -1 : it->second;
  };
  tok.eos_token_id = id_of(tok.eos_token);
  tok.bos_token_id = id_of(tok.bos_token);
  tok.pad_token_id = id_of(tok.pad_token);
  tok.chat_template_ = impl->chat_template;
  tok.impl_ = std::move(impl);
  return tok;
}

Tokenizer Tokenizer::from_pretrained(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path json_path = fs::path(dir) / "tokenizer.json";
  const fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(json_path, ec))
    tokenizer_detail::fail(GN_ERR_IO, json_path.string() + ": not found (a model folder needs tokenizer.json)");
  Tokenizer tok = from_files(json_path.string(), fs::is_regular_file(config_path, ec) ? config_path.string() : "");
  // Newer transformers save the template beside the config instead of inside it.
  const fs::path template_path = fs::path(dir) / "chat_template.jinja";
  if (tok.chat_template_.empty() && fs::is_regular_file(template_path, ec)) {
    std::ifstream f(template_path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) tokenizer_detail::fail(GN_ERR_IO, template_path.string() + ": cannot read");
    tok.chat_template_ = ss.str();
  }
  return tok;
}

}  // namespace genesis
