// llm/src/tokenizer/text.cpp - UTF-8 repair and scanning, NFC through utf8proc, the GPT-2
// byte-level table and the added-token matcher.
#include <utf8proc.h>

#include <cstdlib>
#include <cstring>

#include "tokenizer_impl.h"

namespace genesis::tokenizer_detail {

void fail(int32_t code, const std::string& msg) { throw Error(code, "[tokenizer] " + msg); }

// ---- UTF-8

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Bytes after a lead byte (0 for ASCII, -1 for bytes that never start a sequence) and the range
// the first continuation byte must fall in (which excludes overlongs, surrogates and > U+10FFFF).
struct Lead {
  int need;
  uint8_t lo, hi;
};

inline Lead lead_of(uint8_t b) {
  if (b < 0x80) return {0, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

// Length of the well-formed sequence at s[i], or 0 when it is ill-formed; `bad_end` receives where
// the maximal ill-formed subpart ends (the next byte to look at).
inline size_t sequence_at(std::string_view s, size_t i, size_t& bad_end) {
  const Lead l = lead_of(uint8_t(s[i]));
  if (l.need == 0) return 1;
  bad_end = i + 1;
  if (l.need < 0) return 0;
  size_t j = i + 1;
  for (int k = 0; k < l.need; ++k, ++j) {
    if (j >= s.size()) {
      bad_end = j;
      return 0;
    }
    const uint8_t c = uint8_t(s[j]);
    const uint8_t lo = k == 0 ? l.lo : 0x80, hi = k == 0 ? l.hi : 0xBF;
    if (c < lo || c > hi) {
      bad_end = j;
      return 0;
    }
  }
  return size_t(l.need) + 1;
}

}  // namespace

bool utf8_valid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (i + 8 <= n) {  // skip ASCII 8 bytes at a time
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    size_t bad_end = 0;
    const size_t len = sequence_at(s, i, bad_end);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void utf8_repair_append(std::string_view s, std::string& out) {
  size_t i = 0, run = 0;  // s[run, i) is well-formed and not yet copied
  while (i < s.size()) {
    size_t bad_end = 0;
    const size_t len = sequence_at(s, i, bad_end);
    if (len > 0) {
      i += len;
      continue;
    }
    out.append(s.data() + run, i - run);
    out += kReplacement;
    i = run = bad_end;
  }
  out.append(s.data() + run, i - run);
}

size_t utf8_incomplete_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t b = uint8_t(s[n - back]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation byte: the lead is further back
    const Lead l = lead_of(b);
    if (l.need <= 0 || size_t(l.need) < back) return 0;  // ASCII, invalid lead, or complete
    for (size_t k = 1; k < back; ++k) {
      const uint8_t c = uint8_t(s[n - back + k]);
      const uint8_t lo = k == 1 ? l.lo : 0x80, hi = k == 1 ? l.hi : 0xBF;
      if (c < lo || c > hi) return 0;  // already ill-formed: nothing to wait for
    }
    return back;
  }
  return 0;
}

int32_t next_code_point(std::string_view s, size_t& i) {
  const uint8_t b = uint8_t(s[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  const int need = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
  int32_t cp = b & (0x3F >> need);
  for (int k = 1; k <= need; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
  i += size_t(need) + 1;
  return cp;
}

int32_t prev_code_point(std::string_view s, size_t& i) {
  size_t j = i - 1;
  while (j > 0 && (uint8_t(s[j]) & 0xC0) == 0x80) --j;
  size_t k = j;
  const int32_t cp = next_code_point(s, k);
  i = j;
  return cp;
}

// ---- Unicode properties

namespace {

// True when the code point (>= U+0300) is NFC-inert: it never decomposes, reorders or composes with
// what precedes it, so NFC(x + c + y) = NFC(x) + NFC(c + y).
bool nfc_inert(int32_t cp) {
  if (cp >= 0x1100 && cp <= 0x11FF) return false;  // Hangul jamo compose algorithmically
  if (cp >= 0xAC00 && cp <= 0xD7A3) return true;   // precomposed Hangul syllables (LV + T is caught at T)
  const utf8proc_property_t* p = utf8proc_get_property(cp);
  if (p->combining_class != 0) return false;                                  // may reorder or compose
  if (p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) return false;  // canonical decomposition
  return p->comb_index == UINT16_MAX || p->comb_index < 0x8000;               // not the second of a pair
}

}  // namespace

bool nfc_if_needed(std::string_view s, std::string& out) {
  // Code points below U+0300 (UTF-8 lead bytes < 0xCC) are inert too.  Only the stretches from the last
  // inert character before a non-inert one to the next inert character go through utf8proc.
  const size_t n = s.size();
  size_t i = 0, boundary = 0, copied = 0;
  bool changed = false;
  auto inert_at = [&](size_t& j) {  // decodes the character at j, advances j, says whether it is inert
    const uint8_t b = uint8_t(s[j]);
    if (b < 0xCC) {
      j += b < 0x80 ? 1 : 2;
      return true;
    }
    return nfc_inert(next_code_point(s, j));
  };
  while (i < n) {
    if (i + 8 <= n) {  // skip ASCII 8 bytes at a time
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        boundary = i + 7;
        i += 8;
        continue;
      }
    }
    const size_t start = i;
    if (inert_at(i)) {
      boundary = start;
      continue;
    }
    size_t end = i;
    while (end < n) {
      size_t j = end;
      if (inert_at(j)) break;
      end = j;
    }
    const std::string seg = nfc(s.substr(boundary, end - boundary));
    if (!changed) out.clear();
    out.append(s.data() + copied, boundary - copied);
    out += seg;
    copied = i = boundary = end;
    changed = true;
  }
  if (changed) out.append(s.data() + copied, n - copied);
  return changed;
}

std::string nfc(std::string_view s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &out,
                   utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) fail(GN_ERR_INTERNAL, std::string("NFC failed: ") + utf8proc_errmsg(n));
  std::string r(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return r;
}

bool is_whitespace(int32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_alphanumeric(int32_t cp) {
  const utf8proc_category_t c = utf8proc_category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

// ---- byte level

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table = [] {
    // GPT-2 bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes take
    // U+0100.. in byte order, so no stand-in is whitespace or a control character.
    ByteLevelTable t;
    t.cp_to_byte.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : 256 + extra++;
      t.cp_to_byte[size_t(cp)] = int16_t(b);
      std::string u;
      if (cp < 0x80) {
        u += char(cp);
      } else {
        u += char(0xC0 | (cp >> 6));
        u += char(0x80 | (cp & 0x3F));
      }
      t.byte_to_utf8[size_t(b)] = u;
    }
    return t;
  }();
  return table;
}

// ---- added-token matcher

void AddedMatcher::add(const std::string& s, int32_t index) {
  int32_t node = 0;
  for (char ch : s) {
    const uint8_t b = uint8_t(ch);
    int32_t child = -1;
    for (const auto& [byte, idx] : nodes_[size_t(node)].next)
      if (byte == b) child = idx;
    if (child < 0) {
      child = int32_t(nodes_.size());
      nodes_[size_t(node)].next.emplace_back(b, child);
      nodes_.emplace_back();
    }
    node = child;
  }
  if (nodes_[size_t(node)].value < 0) nodes_[size_t(node)].value = index;  // first one of equal strings wins
  first_[uint8_t(s[0])] = true;
}

int32_t AddedMatcher::match_at(std::string_view text, size_t pos, size_t& len) const {
  int32_t node = 0, found = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint8_t b = uint8_t(text[i]);
    int32_t child = -1;
    for (const auto& [byte, idx] : nodes_[size_t(node)].next)
      if (byte == b) {
        child = idx;
        break;
      }
    if (child < 0) break;
    node = child;
    if (nodes_[size_t(node)].value >= 0) {
      found = nodes_[size_t(node)].value;
      len = i + 1 - pos;
    }
  }
  return found;
}

size_t AddedMatcher::next_candidate(std::string_view text, size_t pos) const {
  while (pos < text.size() && !first_[uint8_t(text[pos])]) ++pos;
  return pos;
}

}  // namespace genesis::tokenizer_detail
