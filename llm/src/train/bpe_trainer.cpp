// bpe_trainer.cpp - byte-level BPE training (genesis/train/bpe_trainer.hpp): piece counts from the
// pre-tokenizer, then greedy merges of the most frequent adjacent pair, written as tokenizer.json.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unordered_map>

#include "genesis/io.hpp"
#include "genesis/train/bpe_trainer.hpp"
#include "../tokenizer/tokenizer_impl.h"

namespace genesis::train {

namespace td = tokenizer_detail;
using json = nlohmann::ordered_json;

namespace {

// Qwen2's pre-tokenizer: contractions, letters with one leading non-letter, single digits,
// punctuation runs, newlines, spaces.
const char* kSplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(GN_ERR_NOT_FOUND, "[bpe] " + path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] " + path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(GN_ERR_IO, "[bpe] " + path + ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The text a file contributes: chat JSONL gives its messages' contents (or "text" fields), one
// per line; anything else is taken as it is.
std::string corpus_text(const std::string& path) {
  std::string raw = read_file(path);
  if (path.size() < 6 || path.compare(path.size() - 6, 6, ".jsonl") != 0) return raw;
  std::string out;
  size_t line_no = 0, at = 0;
  while (at < raw.size()) {
    size_t end = raw.find('\n', at);
    if (end == std::string::npos) end = raw.size();
    std::string_view line(raw.data() + at, end - at);
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] " + path + ":" + std::to_string(line_no) + ": not a JSON object");
    if (j.contains("messages") && j["messages"].is_array()) {
      for (const auto& m : j["messages"])
        if (m.is_object() && m.contains("content") && m["content"].is_string())
          out += m["content"].get<std::string>() + "\n";
    } else if (j.contains("text") && j["text"].is_string()) {
      out += j["text"].get<std::string>() + "\n";
    }
  }
  return out;
}

struct Regex {
  pcre2_code* code = nullptr;
  pcre2_match_data* md = nullptr;
  Regex() {
    int err = 0;
    PCRE2_SIZE off = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kSplitPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                         &err, &off, nullptr);
    if (!code) throw Error(GN_ERR_INTERNAL, "[bpe] pre-tokenizer regex does not compile");
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    md = pcre2_match_data_create_from_pattern(code, nullptr);
  }
  ~Regex() {
    pcre2_match_data_free(md);
    pcre2_code_free(code);
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
};

// Counts the pre-tokenized pieces of `text` (valid UTF-8) into `counts`.
void count_pieces(const std::string& text, Regex& re, std::unordered_map<std::string, int64_t>& counts) {
  const auto* s = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(re.code, s, text.size(), pos, PCRE2_NO_UTF_CHECK, re.md, nullptr);
    if (rc < 0) break;  // the last alternative (\s+) and the others cover every character
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re.md);
    if (ov[1] == ov[0]) {  // empty match: step over one character
      size_t i = pos;
      td::next_code_point(text, i);
      pos = i;
      continue;
    }
    ++counts[text.substr(ov[0], ov[1] - ov[0])];
    pos = ov[1];
  }
}

// `text` with every `token` replaced by a line break.
std::string cut_out(const std::string& text, const std::string& token) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (size_t p = text.find(token); p != std::string::npos; p = text.find(token, at)) {
    out.append(text, at, p - at);
    out.push_back('\n');
    at = p + token.size();
  }
  out.append(text, at, std::string::npos);
  return out;
}

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

const std::string& chatml_template() {
  static const std::string t =
      "{%- for message in messages %}"
      "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
      "{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  return t;
}

BpeTrainingResult train_bpe_tokenizer(const std::vector<std::string>& files, const std::string& out_dir,
                                      const BpeTrainerOptions& o) {
  const int64_t n_special = static_cast<int64_t>(o.special_tokens.size());
  if (files.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] no input files");
  if (o.vocab_size < 256 + n_special)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] vocab_size must be at least 256 + the special tokens (" +
                                             std::to_string(256 + n_special) + "), got " +
                                             std::to_string(o.vocab_size));
  if (o.min_frequency < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] min_frequency must be >= 1");
  for (size_t i = 0; i < o.special_tokens.size(); ++i) {
    if (o.special_tokens[i].empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] empty special token");
    for (size_t j = 0; j < i; ++j)
      if (o.special_tokens[i] == o.special_tokens[j])
        throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] special token " + o.special_tokens[i] + " given twice");
  }
  for (const std::string* t : {&o.eos_token, &o.pad_token})
    if (!t->empty() && std::find(o.special_tokens.begin(), o.special_tokens.end(), *t) == o.special_tokens.end())
      throw Error(GN_ERR_INVALID_ARGUMENT, "[bpe] " + *t + " is not among the special tokens");

  BpeTrainingResult res;
  // 1. Piece counts.  Special tokens in the corpus are not learned from (they are split out first
  //    when encoding), so their text is cut out of the corpus.
  std::unordered_map<std::string, int64_t> counts;
  Regex re;
  for (const std::string& f : files) {
    std::string text = corpus_text(f);
    res.bytes += static_cast<int64_t>(text.size());
    std::string valid;
    td::utf8_repair_append(text, valid);
    for (const std::string& sp : o.special_tokens) valid = cut_out(valid, sp);
    count_pieces(td::nfc(valid), re, counts);
  }
  if (o.log)
    o.log("read " + std::to_string(res.bytes) + " bytes, " + std::to_string(counts.size()) + " distinct pieces");
  res.words = static_cast<int64_t>(counts.size());

  // 2. Symbols: ids 0..255 are the bytes (as GPT-2's stand-in characters); merges append.
  const td::ByteLevelTable& table = td::byte_level_table();
  std::vector<std::string> sym(256);
  for (int b = 0; b < 256; ++b) sym[static_cast<size_t>(b)] = table.byte_to_utf8[static_cast<size_t>(b)];
  // Pieces in a fixed order (sorted), so that the merges do not depend on hash order.
  std::vector<std::pair<std::string, int64_t>> pieces(counts.begin(), counts.end());
  std::sort(pieces.begin(), pieces.end());
  std::vector<std::vector<int32_t>> words(pieces.size());
  std::vector<int64_t> freq(pieces.size());
  for (size_t w = 0; w < pieces.size(); ++w) {
    for (unsigned char c : pieces[w].first) words[w].push_back(c);
    freq[w] = pieces[w].second;
  }
  std::unordered_map<uint64_t, int64_t> pairs;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;  // pair -> words holding it (may go stale)
  auto add_pairs = [&](size_t w, int64_t sign) {
    const auto& s = words[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = pair_key(s[i], s[i + 1]);
      pairs[k] += sign * freq[w];
      if (sign > 0) where[k].push_back(static_cast<uint32_t>(w));
    }
  };
  for (size_t w = 0; w < words.size(); ++w) add_pairs(w, 1);

  // 3. Merges until the vocabulary is full or no pair is frequent enough.
  const int64_t target = o.vocab_size - n_special;
  std::vector<std::pair<int32_t, int32_t>> merges;
  int64_t next_log = 1;
  while (static_cast<int64_t>(sym.size()) < target) {
    uint64_t best = 0;
    int64_t best_n = 0;
    for (const auto& [k, n] : pairs) {
      if (n < best_n || n <= 0) continue;
      if (n == best_n) {  // tie: the pair whose strings sort first
        const auto a = std::tie(sym[k >> 32], sym[k & 0xffffffffu]);
        const auto b = std::tie(sym[best >> 32], sym[best & 0xffffffffu]);
        if (!(a < b)) continue;
      }
      best = k;
      best_n = n;
    }
    if (best_n < o.min_frequency) break;
    const int32_t l = static_cast<int32_t>(best >> 32), r = static_cast<int32_t>(best & 0xffffffffu);
    const int32_t id = static_cast<int32_t>(sym.size());
    sym.push_back(sym[static_cast<size_t>(l)] + sym[static_cast<size_t>(r)]);
    merges.emplace_back(l, r);
    std::vector<uint32_t> holders = std::move(where[best]);
    where.erase(best);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    for (uint32_t w : holders) {
      auto& s = words[w];
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; ++i) has = s[i] == l && s[i + 1] == r;
      if (!has) continue;
      add_pairs(w, -1);
      std::vector<int32_t> merged;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == l && s[i + 1] == r) {
          merged.push_back(id);
          ++i;
        } else {
          merged.push_back(s[i]);
        }
      }
      s = std::move(merged);
      add_pairs(w, 1);
    }
    pairs.erase(best);
    const int64_t done = static_cast<int64_t>(merges.size());
    if (o.log && done * 10 >= next_log * (target - 256)) {
      o.log("merges: " + std::to_string(done) + " (vocabulary " + std::to_string(sym.size()) + "/" +
            std::to_string(target) + ")");
      ++next_log;
    }
  }

  // 4. tokenizer.json in the layout Qwen's use, and tokenizer_config.json.
  json vocab = json::object();
  for (size_t i = 0; i < sym.size(); ++i) vocab[sym[i]] = i;
  json mj = json::array();
  for (auto [l, r] : merges) mj.push_back({sym[static_cast<size_t>(l)], sym[static_cast<size_t>(r)]});
  json added = json::array();
  json decoder = json::object();
  for (int64_t i = 0; i < n_special; ++i) {
    const int64_t id = static_cast<int64_t>(sym.size()) + i;
    json t = {{"id", id},
              {"content", o.special_tokens[static_cast<size_t>(i)]},
              {"single_word", false},
              {"lstrip", false},
              {"rstrip", false},
              {"normalized", false},
              {"special", true}};
    added.push_back(t);
    json d = t;
    d.erase("id");
    decoder[std::to_string(id)] = d;
  }
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  json tj = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", kSplitPattern}}}, {"behavior", "Isolated"}, {"invert", false}},
              byte_level})}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", mj}}}};
  auto opt_token = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json cj = {{"add_bos_token", false},
             {"add_prefix_space", false},
             {"added_tokens_decoder", decoder},
             {"bos_token", nullptr},
             {"chat_template", o.chat_template.empty() ? chatml_template() : o.chat_template},
             {"clean_up_tokenization_spaces", false},
             {"eos_token", opt_token(o.eos_token)},
             {"errors", "replace"},
             {"model_max_length", 32768},
             {"pad_token", opt_token(o.pad_token)},
             {"split_special_tokens", false},
             {"tokenizer_class", "Qwen2Tokenizer"},
             {"unk_token", nullptr}};
  std::filesystem::create_directories(out_dir);
  atomic_write_file((std::filesystem::path(out_dir) / "tokenizer.json").string(), tj.dump(2) + "\n");
  atomic_write_file((std::filesystem::path(out_dir) / "tokenizer_config.json").string(), cj.dump(2) + "\n");
  res.merges = static_cast<int64_t>(merges.size());
  res.vocab_size = static_cast<int64_t>(sym.size()) + n_special;
  if (o.log)
    o.log("wrote " + out_dir + ": " + std::to_string(res.vocab_size) + " ids (" + std::to_string(res.merges) +
          " merges, " + std::to_string(n_special) + " special tokens)");
  return res;
}

}  // namespace genesis::train
