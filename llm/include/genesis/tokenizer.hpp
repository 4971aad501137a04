// genesis/tokenizer.hpp - Hugging Face byte-level BPE tokenizers (Qwen2/2.5/3, Llama 3, GPT-2 style)
// and SentencePiece-style BPE tokenizers (Gemma 3, Llama 2, Mistral: ▁ for spaces, <0xNN> byte fallback)
// read from tokenizer.json, with an incremental decoder for streaming generation.
//
//   auto tok = genesis::Tokenizer::from_pretrained("models/Qwen3-0.6B");
//   std::vector<int64_t> ids = tok.encode("<|im_start|>user\nHello<|im_end|>\n");
//   std::string text = tok.decode(ids);
//
//   genesis::StreamDecoder stream(tok);
//   for (int64_t id : generated) std::cout << stream.put(id) << std::flush;  // whole characters only
//   std::cout << stream.flush();
//
// The pipeline is the one HF `tokenizers` runs: added tokens are split out first, the rest is
// normalized (NFC; Prepend/Replace), split by the pre-tokenizer (regex, literal or Metaspace), mapped
// through the GPT-2 byte <-> unicode table (byte-level) or into characters with byte fallback, and
// merged by BPE rank.  Anything in tokenizer.json this pipeline does not implement is
// refused at load time with a genesis::Error naming the field.  See docs/tokenizer.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "genesis/tensor.hpp"  // genesis::Error

namespace genesis {

namespace tokenizer_detail {
struct Impl;
}

/** A loaded tokenizer; immutable after loading, cheap to copy (copies share the tables), safe to use
 * from several threads at once. */
class Tokenizer {
 public:
  /** Loads tokenizer.json (and tokenizer_config.json when the path is non-empty); throws genesis::Error
   * (GN_ERR_IO for unreadable files, GN_ERR_INVALID_ARGUMENT for bad or unsupported content). */
  static Tokenizer from_files(const std::string& tokenizer_json, const std::string& tokenizer_config_json = "");
  /** Loads DIR/tokenizer.json and DIR/tokenizer_config.json (when present); the chat template comes from
   * the config or else from DIR/chat_template.jinja. */
  static Tokenizer from_pretrained(const std::string& dir);

  /** Token ids of `text` (UTF-8; invalid bytes are read as U+FFFD); add_special_tokens applies the
   * post-processor's template (Qwen adds nothing). */
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  /** Text of `ids`; undecodable bytes become U+FFFD, ids with no token are skipped (as HF does). */
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;
  /** Id of a vocabulary or added token given in its stored form ("Ġthe", "<|im_end|>"); -1 when absent. */
  int64_t token_to_id(std::string_view token) const;
  /** Stored form of token `id`; "" when out of range or unused. */
  std::string id_to_token(int64_t id) const;
  /** Number of ids, added tokens included (max id + 1). */
  int64_t vocab_size() const;
  /** True for added tokens marked "special" (these are dropped by skip_special_tokens). */
  bool is_special(int64_t id) const;
  /** True for any added token (special or not, e.g. Qwen's <think>). */
  bool is_added(int64_t id) const;
  /** tokenizer_config.json "chat_template" (or chat_template.jinja, see from_pretrained); "" when none. */
  const std::string& chat_template() const;
  /** The bytes token `id` decodes to (no UTF-8 repair); "" when out of range. */
  const std::string& token_bytes(int64_t id) const;

  std::string eos_token, bos_token, pad_token;  ///< from tokenizer_config.json; "" when absent or null
  int64_t eos_token_id = -1, bos_token_id = -1, pad_token_id = -1;  ///< -1 when the token is absent

 private:
  Tokenizer() = default;
  std::shared_ptr<const tokenizer_detail::Impl> impl_;
  std::string chat_template_;
  friend class StreamDecoder;
};

/** Incremental decoder for streaming: put() returns only whole UTF-8 characters, and the
 * concatenation of every put() and the final flush() equals Tokenizer::decode of all ids. */
class StreamDecoder {
 public:
  /** Decodes with `tok`, which must outlive this decoder. */
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special_tokens = false);
  /** Adds one id; returns the text that is now complete ("" while a character is still partial). */
  std::string put(int64_t id);
  /** Returns what is still pending (an unfinished character becomes U+FFFD) and resets the decoder. */
  std::string flush();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  /** Drops the spaces still owed to a stripping decoder from the start of `out`. */
  std::string strip_leading(std::string out);

  std::string pending_;  // bytes of an unfinished UTF-8 sequence (at most 3)
  size_t strip_ = 0;     // leading spaces still to drop (decoders that strip the text's first space)
};

}  // namespace genesis
