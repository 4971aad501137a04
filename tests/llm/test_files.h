// tests/llm/test_files.h - what several LLM test files share: reading a whole file and a tiny
// tokenizer.json to break one field at a time.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace llm_test {

/** The bytes of the file at path; throws std::runtime_error when it cannot be opened. */
inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/** A small valid byte-level BPE tokenizer.json: vocab {a: 0, b: 1, ab: 2}, the merge "a b" and the
 * special added token <|end|> (id 3). */
inline nlohmann::json small_tokenizer_json() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 3, "content": "<|end|>", "special": true, "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {"a": 0, "b": 1, "ab": 2},
              "merges": ["a b"]}
  })");
}

}  // namespace llm_test
