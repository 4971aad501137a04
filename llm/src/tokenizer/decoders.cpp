// llm/src/tokenizer/decoders.cpp - the token-string decoder chain of SentencePiece-style tokenizers
// (HF Decoder::decode_chain): Replace, ByteFallback, Fuse, Strip and Metaspace, applied in order to the
// list of token strings, whose concatenation is the text.
#include <string>

#include "tokenizer_impl.h"

namespace genesis::tokenizer_detail {

namespace {

constexpr char kReplacementChar[] = "\xEF\xBF\xBD";  // U+FFFD

// The byte a "<0xNN>" token stands for, or -1.
int byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t i = 0;
  for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) {
    out.append(s, i, j - i);
    out += to;
  }
  out.append(s, i);
  return out;
}

// ByteFallback: each run of byte tokens becomes its UTF-8 text, or one U+FFFD per byte when the run is
// ill-formed (HF tokenizers; transformers.js writes one per maximal ill-formed subpart instead).
void apply_byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string run;
  size_t run_len = 0;
  auto flush = [&] {
    if (run_len == 0) return;
    if (utf8_valid(run)) {
      out.push_back(run);
    } else {
      for (size_t k = 0; k < run_len; ++k) out.emplace_back(kReplacementChar);
    }
    run.clear();
    run_len = 0;
  };
  for (std::string& t : tokens) {
    const int b = byte_token(t);
    if (b >= 0) {
      run += char(b);
      ++run_len;
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  tokens.swap(out);
}

// Strip: removes up to `start` leading and `stop` trailing copies of the character `c` from a token.
std::string strip(const std::string& t, const std::string& c, size_t start, size_t stop) {
  size_t b = 0, e = t.size();
  for (size_t k = 0; k < start && e - b >= c.size() && t.compare(b, c.size(), c) == 0; ++k) b += c.size();
  for (size_t k = 0; k < stop && e - b >= c.size() && t.compare(e - c.size(), c.size(), c) == 0; ++k) e -= c.size();
  return t.substr(b, e - b);
}

}  // namespace

std::string Impl::decode_chain(const std::vector<int64_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= int64_t(id_to_token.size()) || id_to_token[size_t(id)].empty()) continue;
    if (skip_special && (id_flags[size_t(id)] & kSpecialFlag)) continue;
    tokens.push_back(id_to_token[size_t(id)]);
  }
  for (const DecoderStep& step : decoders) {
    switch (step.kind) {
      case DecoderStep::Kind::Replace:
        for (std::string& t : tokens) t = replace_all(t, step.a, step.b);
        break;
      case DecoderStep::Kind::ByteFallback: apply_byte_fallback(tokens); break;
      case DecoderStep::Kind::Fuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Kind::Strip:
        for (std::string& t : tokens) t = strip(t, step.a, step.start, step.stop);
        break;
      case DecoderStep::Kind::Metaspace:  // HF drops every replacement character of the first token
        for (size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = replace_all(tokens[i], step.metaspace.replacement,
                                  i == 0 && step.metaspace.prepend != MetaspaceOptions::Prepend::Never ? "" : " ");
        break;
    }
  }
  std::string text;
  for (const std::string& t : tokens) text += t;
  return text;
}

std::string Impl::token_text(size_t id) const {
  // What the chain makes of this token inside a text, for streaming: a byte token its byte (with
  // ByteFallback), any other token its string through the Replace and Metaspace steps.
  const std::string& tok = id_to_token[id];
  for (const DecoderStep& step : decoders)
    if (step.kind == DecoderStep::Kind::ByteFallback && byte_token(tok) >= 0)
      return std::string(1, char(byte_token(tok)));
  std::string t = tok;
  for (const DecoderStep& step : decoders) {
    if (step.kind == DecoderStep::Kind::Replace) t = replace_all(t, step.a, step.b);
    if (step.kind == DecoderStep::Kind::Metaspace) t = replace_all(t, step.metaspace.replacement, " ");
  }
  return t;
}

}  // namespace genesis::tokenizer_detail
