// llm/src/tokenizer/sentencepiece.cpp - what tokenizer.json files converted from SentencePiece (Llama 2,
// Mistral, Gemma) need beyond byte-level BPE: the Prepend / Replace normalizers, the Metaspace
// pre-tokenizer and character-level BPE with byte fallback (<0xNN> tokens) and unknown-token fusing.
#include <string>

#include "tokenizer_impl.h"

namespace genesis::tokenizer_detail {

namespace {

// Appends `s` to out with every occurrence of `from` (non-empty) replaced by `to`, left to right.
void replace_all(std::string_view s, std::string_view from, std::string_view to, std::string& out) {
  size_t i = 0;
  for (size_t j; (j = s.find(from, i)) != std::string_view::npos; i = j + from.size()) {
    out.append(s, i, j - i);
    out += to;
  }
  out.append(s, i);
}

}  // namespace

bool Impl::normalize(std::string_view text, std::string& out) const {
  std::string cur(text), next;
  for (const NormalizerStep& step : normalizers) {
    next.clear();
    switch (step.kind) {
      case NormalizerStep::Kind::NFC:
        if (!nfc_if_needed(cur, next)) continue;
        break;
      case NormalizerStep::Kind::Prepend:  // HF prepends only to non-empty text
        if (cur.empty()) continue;
        next = step.a + cur;
        break;
      case NormalizerStep::Kind::Replace:
        if (cur.find(step.a) == std::string::npos) continue;
        replace_all(cur, step.a, step.b, next);
        break;
    }
    cur.swap(next);
  }
  if (cur == text) return false;
  out = std::move(cur);
  return true;
}

void Impl::metaspace_split(std::string_view text, bool at_start,
                           const std::function<void(std::string_view)>& piece) const {
  const std::string& rep = metaspace.replacement;
  std::string s;
  const bool prepend = metaspace.prepend == MetaspaceOptions::Prepend::Always ||
                       (metaspace.prepend == MetaspaceOptions::Prepend::First && at_start);
  if (prepend && text.substr(0, 1) != " " && text.substr(0, rep.size()) != rep) s = rep;
  replace_all(text, " ", rep, s);
  if (!metaspace.split) {
    piece(s);
    return;
  }
  // MergedWithNext: every replacement character starts a new piece.
  size_t start = 0;
  for (size_t j = s.find(rep); j != std::string::npos; j = s.find(rep, j + rep.size())) {
    if (j > start) piece(std::string_view(s).substr(start, j - start));
    start = j;
  }
  if (start < s.size()) piece(std::string_view(s).substr(start));
}

void Impl::bpe_chars(std::string_view piece, std::vector<int32_t>& sym) const {
  // HF BPE::merge_word: each character is its vocabulary id, else its UTF-8 bytes as <0xNN> tokens
  // (byte_fallback, when all of them exist), else the unknown token; with fuse_unk consecutive unknown
  // characters share one.  The pending unknown token is written when the next known character arrives
  // (byte-fallback tokens do not flush it, as in HF).
  bool pending_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t begin = i;
    next_code_point(piece, i);
    const std::string_view ch = piece.substr(begin, i - begin);
    int64_t id = -1;
    if (ch.size() == 1) {
      id = byte_id[uint8_t(ch[0])];
    } else if (auto it = token_to_id.find(ch); it != token_to_id.end() && (id_flags[size_t(it->second)] & kModelFlag)) {
      id = it->second;
    }
    if (id >= 0) {
      if (pending_unk) sym.push_back(int32_t(unk_id));
      pending_unk = false;
      sym.push_back(int32_t(id));
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (char b : ch) all = all && fallback_id[uint8_t(b)] >= 0;
      if (all) {
        for (char b : ch) sym.push_back(fallback_id[uint8_t(b)]);
        continue;
      }
    }
    if (unk_id < 0) continue;  // HF drops a character with no token at all
    if (pending_unk && !fuse_unk) sym.push_back(int32_t(unk_id));
    pending_unk = true;
  }
  if (pending_unk) sym.push_back(int32_t(unk_id));
}

}  // namespace genesis::tokenizer_detail
