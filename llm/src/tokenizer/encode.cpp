// llm/src/tokenizer/encode.cpp - text -> ids: UTF-8 repair, added-token extraction (with the
// lstrip/rstrip/single_word flags), the normalizers, the pre-tokenizer split (regex or literal, Isolated or
// merged with a neighbour; or Metaspace) and BPE per piece.
#include <string>

#include "tokenizer_impl.h"

namespace genesis::tokenizer_detail {

namespace {

// Calls section(text) for the text between added-token matches and out.push_back(id) for each match,
// in order (HF AddedVocabulary::find_matches).  Matches are leftmost-longest and do not overlap.
template <class Section>
void split_added(const Impl& impl, const AddedMatcher& matcher, std::string_view text, std::vector<int64_t>& out,
                 Section&& section) {
  const size_t n = text.size();
  size_t start = 0;  // text[start, ...) is not yet emitted
  size_t pos = 0;
  while ((pos = matcher.next_candidate(text, pos)) < n) {
    size_t len = 0;
    const int32_t index = matcher.match_at(text, pos, len);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = impl.added[size_t(index)];
    size_t mstart = pos, mstop = pos + len;
    pos = mstop;
    if (tok.single_word) {
      size_t i = mstart, j = mstop;
      const bool word_before = mstart > 0 && is_alphanumeric(prev_code_point(text, i));
      const bool word_after = mstop < n && is_alphanumeric(next_code_point(text, j));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      while (mstart > start) {
        size_t i = mstart;
        if (!is_whitespace(prev_code_point(text, i))) break;
        mstart = i;
      }
    }
    if (tok.rstrip) {
      while (mstop < n) {
        size_t j = mstop;
        if (!is_whitespace(next_code_point(text, j))) break;
        mstop = j;
      }
      pos = mstop;
    }
    if (mstart > start) section(text.substr(start, mstart - start));
    out.push_back(tok.id);
    start = mstop;
  }
  if (start < n) section(text.substr(start));
}

// pcre2_match_data sized for the split regex, freed on scope exit.
struct MatchData {
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!md) fail(GN_ERR_OUT_OF_MEMORY, "cannot allocate PCRE2 match data");
  }
  ~MatchData() {
    pcre2_match_data_free(md);
    if (ctx) pcre2_match_context_free(ctx);
    if (stack) pcre2_jit_stack_free(stack);
  }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* md;
  pcre2_match_context* ctx = nullptr;
  pcre2_jit_stack* stack = nullptr;  // only when the default 32 KiB JIT stack ran out
};

// The split regex's next match at or after `pos`; returns false when there is none.
bool next_match(const Impl& impl, MatchData& m, std::string_view s, size_t pos, size_t& ms, size_t& me) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  for (;;) {
    const int rc = impl.split_jit
                       ? pcre2_jit_match(impl.split_regex.get(), subject, s.size(), pos, 0, m.md, m.ctx)
                       : pcre2_match(impl.split_regex.get(), subject, s.size(), pos, PCRE2_NO_UTF_CHECK, m.md, m.ctx);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !m.stack) {  // retry once with a larger JIT stack
      m.stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
      m.ctx = pcre2_match_context_create(nullptr);
      if (!m.stack || !m.ctx) fail(GN_ERR_OUT_OF_MEMORY, "cannot allocate a PCRE2 JIT stack");
      pcre2_jit_stack_assign(m.ctx, nullptr, m.stack);
      continue;
    }
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof buf);
      fail(GN_ERR_INTERNAL, "pre-tokenizer regex failed at byte " + std::to_string(pos) + " of a " +
                                std::to_string(s.size()) + "-byte section: " + reinterpret_cast<const char*>(buf));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.md);
    ms = ov[0];
    me = ov[1];
    return true;
  }
}

}  // namespace

void Impl::encode_section(std::string_view text, std::vector<int64_t>& out, bool cache_held, bool at_start) const {
  std::string normalized;
  if (!normalizers.empty()) {
    if (normalize(text, normalized)) text = normalized;
  } else if (use_nfc && nfc_if_needed(text, normalized)) {
    text = normalized;
  }
  const auto word = [&](std::string_view s) { encode_word(s, out, cache_held); };
  const std::string_view whole = text;
  auto pre_tokenize = [&](std::string_view s) {
    if (metaspace.on) {
      metaspace_split(s, at_start && s.data() == whole.data(), word);
      return;
    }
    if (!split_regex) {
      word(s);
      return;
    }
    MatchData m(split_regex.get());
    // last: end of the previous match; seg: start of the piece a Merged* behaviour is still growing.
    size_t pos = 0, last = 0, seg = 0, ms = 0, me = 0;
    while (pos <= s.size() && next_match(*this, m, s, pos, ms, me)) {
      if (split_behavior == SplitBehavior::Isolated) {
        if (ms > last) word(s.substr(last, ms - last));  // "Isolated": the gap is a piece too
        if (me > ms) word(s.substr(ms, me - ms));
      } else if (me > ms && split_behavior == SplitBehavior::MergedWithPrevious) {
        word(s.substr(seg, me - seg));  // the gap and the match
        seg = me;
      } else if (me > ms && ms > seg) {  // MergedWithNext: a piece ends where a match begins
        word(s.substr(seg, ms - seg));
        seg = ms;
      }
      last = me;
      if (me > ms) {
        pos = me;
      } else {  // empty match: step over one character
        if (me >= s.size()) break;
        size_t i = me;
        next_code_point(s, i);
        pos = i;
      }
    }
    const size_t rest = split_behavior == SplitBehavior::Isolated ? last : seg;
    if (rest < s.size()) word(s.substr(rest));
  };
  if (normalized_matcher.empty())
    pre_tokenize(text);
  else
    split_added(*this, normalized_matcher, text, out, pre_tokenize);
}

void Impl::encode_text(std::string_view text, std::vector<int64_t>& out, bool cache_held) const {
  if (raw_matcher.empty()) {
    encode_section(text, out, cache_held, true);
    return;
  }
  split_added(*this, raw_matcher, text, out,
              [&](std::string_view s) { encode_section(s, out, cache_held, s.data() == text.data()); });
}

}  // namespace genesis::tokenizer_detail

namespace genesis {

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  using tokenizer_detail::Impl;
  const Impl& impl = *impl_;
  // Text is read as UTF-8; ill-formed bytes become U+FFFD first, exactly as a JS TextDecoder (and
  // hence transformers.js) does before tokenizing.  HF's Rust API only accepts valid strings.
  std::string repaired;
  if (!tokenizer_detail::utf8_valid(text)) {
    tokenizer_detail::utf8_repair_append(text, repaired);
    text = repaired;
  }
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 8);
  if (add_special_tokens) out.insert(out.end(), impl.prefix_ids.begin(), impl.prefix_ids.end());
  std::unique_lock<std::mutex> cache_lock(impl.cache_mutex, std::try_to_lock);
  impl.encode_text(text, out, cache_lock.owns_lock());
  if (add_special_tokens) out.insert(out.end(), impl.suffix_ids.begin(), impl.suffix_ids.end());
  return out;
}

}  // namespace genesis
