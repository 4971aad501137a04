// llm/src/tokenizer/decode.cpp - ids -> text (byte-level decoding, U+FFFD for ill-formed UTF-8),
// the streaming decoder and the Tokenizer's vocabulary accessors.
#include <string>

#include "tokenizer_impl.h"

namespace genesis {

using tokenizer_detail::Impl;

namespace {

// transformers' clean_up_tokenization: drops the space before punctuation and English contractions.
std::string clean_up_tokenization(std::string s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string r;
    r.reserve(s.size());
    size_t i = 0;
    for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) {
      r.append(s, i, j - i);
      r += to;
    }
    r.append(s, i);
    s = std::move(r);
  }
  return s;
}

// Bytes of `id` for decoding, or nullptr when it is skipped (unused id, or special and skipping).
const std::string* bytes_for(const Impl& impl, int64_t id, bool skip_special) {
  if (id < 0 || id >= int64_t(impl.id_bytes.size())) return nullptr;
  const size_t i = size_t(id);
  if (impl.id_to_token[i].empty()) return nullptr;
  if (skip_special && (impl.id_flags[i] & Impl::kSpecialFlag)) return nullptr;
  return &impl.id_bytes[i];
}

}  // namespace

namespace {

// Fails for an id outside [0, vocab_size): such an id names no token of this tokenizer.
void check_id(int64_t vocab_size, int64_t id) {
  if (id < 0 || id >= vocab_size)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[tokenizer] token id " + std::to_string(id) +
                                             " is out of range: this tokenizer's ids are 0.." +
                                             std::to_string(vocab_size - 1));
}

}  // namespace

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  for (int64_t id : ids) check_id(vocab_size(), id);
  // Added tokens decode to their content and byte-level tokens to their bytes; the whole byte string is
  // then read as UTF-8 with U+FFFD for ill-formed parts.  Added tokens are well-formed UTF-8, so this
  // equals decoding each run between added tokens on its own (transformers.js, tokenizers >= 0.21).
  // SentencePiece-style tokenizers run their decoder chain on the token strings instead.
  if (!impl_->decoders.empty()) {
    std::string text = impl_->decode_chain(ids, skip_special_tokens);
    return impl_->clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
  }
  std::string bytes;
  for (int64_t id : ids)
    if (const std::string* b = bytes_for(*impl_, id, skip_special_tokens)) bytes += *b;
  std::string text;
  if (tokenizer_detail::utf8_valid(bytes)) {
    text = std::move(bytes);
  } else {
    text.reserve(bytes.size() + 8);
    tokenizer_detail::utf8_repair_append(bytes, text);
  }
  return impl_->clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

int64_t Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->token_to_id.find(token);
  return it == impl_->token_to_id.end() ? -1 : it->second;
}

std::string Tokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id >= int64_t(impl_->id_to_token.size())) return "";
  return impl_->id_to_token[size_t(id)];
}

const std::string& Tokenizer::token_bytes(int64_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= int64_t(impl_->id_bytes.size())) return kEmpty;
  return impl_->id_bytes[size_t(id)];
}

int64_t Tokenizer::vocab_size() const { return int64_t(impl_->id_to_token.size()); }

bool Tokenizer::is_special(int64_t id) const {
  return id >= 0 && id < vocab_size() && (impl_->id_flags[size_t(id)] & Impl::kSpecialFlag);
}

bool Tokenizer::is_added(int64_t id) const {
  return id >= 0 && id < vocab_size() && (impl_->id_flags[size_t(id)] & Impl::kAddedFlag);
}

const std::string& Tokenizer::chat_template() const { return chat_template_; }

// ---- streaming

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special_tokens)
    : tok_(&tok), skip_special_(skip_special_tokens), strip_(tok.impl_->stream_strip) {}

std::string StreamDecoder::put(int64_t id) {
  // Only an unfinished but so far well-formed sequence at the end is held back: everything before it
  // reads the same whatever bytes come next, so the chunks concatenate to decode() of all ids.
  check_id(tok_->vocab_size(), id);
  const std::string& bytes = tok_->token_bytes(id);  // "" for ids with no token
  if (bytes.empty() || (skip_special_ && tok_->is_special(id))) return "";
  pending_ += bytes;
  const size_t keep = tokenizer_detail::utf8_incomplete_tail(pending_);
  const std::string_view ready(pending_.data(), pending_.size() - keep);
  std::string out;
  tokenizer_detail::utf8_repair_append(ready, out);
  pending_.erase(0, pending_.size() - keep);
  return strip_leading(std::move(out));
}

std::string StreamDecoder::strip_leading(std::string out) {
  // A chain ending in Strip drops the whole text's first spaces: drop them from the first chunks.
  size_t n = 0;
  while (strip_ > 0 && n < out.size() && out[n] == ' ') {
    ++n;
    --strip_;
  }
  if (n < out.size()) strip_ = 0;
  return n ? out.substr(n) : out;
}

std::string StreamDecoder::flush() {
  std::string out;
  tokenizer_detail::utf8_repair_append(pending_, out);
  pending_.clear();
  out = strip_leading(std::move(out));
  strip_ = tok_->impl_->stream_strip;
  return out;
}

}  // namespace genesis
