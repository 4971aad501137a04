// llm/src/tokenizer/tokenizer_impl.h - the tables behind genesis::Tokenizer (vocabulary,
// merges, added tokens, compiled pre-tokenizer regex, word cache) and the internal functions the
// tokenizer's .cpp files share.  Loaded once by load.cpp, then read-only except for the cache.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genesis/tokenizer.hpp"

namespace genesis::tokenizer_detail {

// ---- UTF-8 and Unicode functions (text.cpp)

/** Throws genesis::Error(code) with "[tokenizer] " + msg. */
[[noreturn]] void fail(int32_t code, const std::string& msg);

/** True when `s` is well-formed UTF-8. */
bool utf8_valid(std::string_view s);
/** Appends `s` with every ill-formed sequence replaced by U+FFFD, one per maximal subpart (WHATWG
 * TextDecoder and Rust String::from_utf8_lossy agree on this). */
void utf8_repair_append(std::string_view s, std::string& out);
/** Length in bytes (0..3) of an unfinished but so far well-formed UTF-8 sequence ending `s`. */
size_t utf8_incomplete_tail(std::string_view s);
/** When the valid UTF-8 `s` may not be in NFC, sets out = NFC(s) and returns true; returns false (out
 * untouched) when `s` certainly is NFC.  Only the stretches around suspect characters are normalized. */
bool nfc_if_needed(std::string_view s, std::string& out);
/** NFC of the valid UTF-8 `s` (utf8proc). */
std::string nfc(std::string_view s);
/** True when the code point is Unicode White_Space (Rust char::is_whitespace). */
bool is_whitespace(int32_t cp);
/** True when the code point is a letter or number (Rust char::is_alphanumeric, for single_word). */
bool is_alphanumeric(int32_t cp);
/** Decodes the code point starting at s[i] (valid UTF-8) and advances i. */
int32_t next_code_point(std::string_view s, size_t& i);
/** Decodes the code point ending just before s[i] (valid UTF-8) and moves i back to its start. */
int32_t prev_code_point(std::string_view s, size_t& i);

/** GPT-2's byte <-> printable character table used by the ByteLevel pre-tokenizer and decoder. */
struct ByteLevelTable {
  std::array<std::string, 256> byte_to_utf8;  // byte -> its stand-in character, UTF-8
  std::array<int16_t, 512> cp_to_byte;        // stand-in code point (all < 512) -> byte, -1 for none
};
/** The table (built once). */
const ByteLevelTable& byte_level_table();

// ---- added tokens

/** One added token and the flags of tokenizer.json's "added_tokens" entries. */
struct AddedToken {
  std::string content;
  int64_t id = -1;
  bool special = false;
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // matches only when not inside a word
  bool normalized = false;   // matched in the normalized text rather than the raw text
};

/** Leftmost-longest matcher over a set of strings (a byte trie; HF uses Aho-Corasick LeftmostLongest). */
class AddedMatcher {
 public:
  /** Adds `s` (non-empty), reported as `index`. */
  void add(const std::string& s, int32_t index);
  /** True when nothing was added. */
  bool empty() const { return nodes_.size() <= 1; }
  /** Finds the longest match starting at `pos`; returns its index (-1 if none) and sets len. */
  int32_t match_at(std::string_view text, size_t pos, size_t& len) const;
  /** Position of the first byte at or after `pos` that can start a match (text.size() if none). */
  size_t next_candidate(std::string_view text, size_t pos) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // (byte, node index)
    int32_t value = -1;
  };
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};  // bytes that start some token
};

// ---- BPE model (bpe.cpp)

/** (left id, right id) -> (rank, merged id), open addressing keyed by left << 32 | right. */
class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t merged = 0;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  /** Sizes the table for n merges. */
  void reserve(size_t n);
  /** Inserts a merge; returns false when the pair is already present (the first rank wins). */
  bool insert(int32_t left, int32_t right, int32_t rank, int32_t merged);
  /** The entry for (left, right), or nullptr. */
  const Entry* find(int32_t left, int32_t right) const {
    const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }

 private:
  size_t slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::vector<Entry> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
};

/** Piece bytes -> BPE ids: open addressing over two arenas (key bytes, ids), no allocation per entry.
 * Emptied when the arenas exceed kMaxBytes.  Not thread-safe (Impl guards it). */
class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 16384;  // longer pieces are not cached
  static constexpr size_t kMaxBytes = size_t(64) << 20;
  /** Appends the ids cached for `piece` (whose hash is `hash`) to out; false when absent. */
  bool find(std::string_view piece, uint64_t hash, std::vector<int64_t>& out) const;
  /** Caches ids for `piece`. */
  void insert(std::string_view piece, uint64_t hash, const std::vector<int32_t>& ids);

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty (real hashes have bit 0 set)
    uint32_t key_off = 0, key_len = 0, ids_off = 0, ids_len = 0;
  };
  void grow();
  std::vector<Slot> slots_;
  size_t used_ = 0;
  std::string keys_;
  std::vector<int32_t> ids_;
};

/** Transparent string hash so maps keyed by std::string can be probed with a string_view. */
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

// ---- SentencePiece-style components (normalize.cpp, decoders.cpp)

/** One normalizer of a Sequence: Prepend(a) or Replace(a -> b, a literal string). */
struct NormalizerStep {
  enum class Kind { Prepend, Replace, NFC } kind;
  std::string a, b;
};

/** What a Split pre-tokenizer does with each match (HF SplitDelimiterBehavior). */
enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext };

/** The Metaspace pre-tokenizer / decoder: spaces become `replacement`, which is prepended to the text
 * ("always"; "first": only to the text that begins the input; "never") and, with split, starts each piece. */
struct MetaspaceOptions {
  bool on = false;
  std::string replacement = "\xE2\x96\x81";  // U+2581
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool split = true;
};

/** One decoder of a token-string chain (HF decode_chain): Replace(a -> b) per token, ByteFallback (<0xNN>
 * runs to their UTF-8, one U+FFFD per byte when ill-formed), Fuse (join), Strip (up to start/stop copies
 * of the character a from each end of every token), Metaspace (replacement -> space, and none at all in
 * the first token unless prepend is "never"). */
struct DecoderStep {
  enum class Kind { Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
  std::string a, b;
  size_t start = 0, stop = 0;
  MetaspaceOptions metaspace;
};

// ---- the whole tokenizer

struct Impl {
  // Vocabulary: model vocab plus added tokens.  Stored forms are byte-level strings ("Ġthe").
  StringMap token_to_id;
  std::vector<std::string> id_to_token;                                       // "" for unused ids
  std::vector<std::string> id_bytes;                                          // what each id decodes to
  std::vector<uint8_t> id_flags;                                              // kAddedFlag | kSpecialFlag
  static constexpr uint8_t kAddedFlag = 1, kSpecialFlag = 2, kModelFlag = 4;  // kModelFlag: in model.vocab

  // Added tokens, matched in the raw text (normalized=false) or in the normalized text.
  std::vector<AddedToken> added;
  AddedMatcher raw_matcher, normalized_matcher;

  bool use_nfc = false;  // normalizer: NFC (else none)
  // Further normalizers (normalize.cpp), run in order; empty for NFC-only and null normalizers.
  std::vector<NormalizerStep> normalizers;

  // Pre-tokenizer: regex split, then ByteLevel (byte_level) or nothing (SentencePiece-style BPE), or Metaspace.
  std::shared_ptr<pcre2_code> split_regex;  // null: the whole section is one piece
  bool split_jit = false;
  SplitBehavior split_behavior = SplitBehavior::Isolated;
  MetaspaceOptions metaspace;  // pre-tokenizer Metaspace (metaspace.on)

  // BPE model.  byte_level: symbols are GPT-2 byte stand-ins; otherwise they are characters, and
  // characters not in the vocabulary become <0xNN> byte tokens (byte_fallback) or unk_id.
  bool byte_level = true;
  std::array<int32_t, 256> byte_id{};      // byte_level: id of each byte's stand-in character (-1: not in vocab)
                                           // else: id of each ASCII character, -1 for others
  std::array<int32_t, 256> fallback_id{};  // id of <0xNN> (-1: absent); used with byte_fallback
  MergeTable merges;
  int64_t unk_id = -1;
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;

  // Post-processor template for one sequence (TemplateProcessing "single").
  std::vector<int64_t> prefix_ids, suffix_ids;

  // Decoding: the byte-level decoder (decoders empty), or a chain of token-string decoders (decoders.cpp).
  std::vector<DecoderStep> decoders;
  size_t stream_strip = 0;  // leading spaces the chain strips from a whole text (StreamDecoder drops as many)
  bool clean_up_spaces = false;

  // tokenizer_config.json
  std::string chat_template;

  // Word cache: pre-tokenized piece (raw bytes) -> ids, guarded by cache_mutex.  encode() try-locks it
  // once for the whole call; a call that finds it busy (another thread encoding) try-locks per word and
  // merges without the cache when that fails too, so encodes never wait on each other.
  mutable std::mutex cache_mutex;
  mutable WordCache cache;

  /** Appends the BPE ids of one pre-tokenized piece (raw bytes); cache_held: this call owns cache_mutex. */
  void encode_word(std::string_view piece, std::vector<int64_t>& out, bool cache_held) const;
  /** Appends the BPE ids of one piece without the cache. */
  void bpe(std::string_view piece, std::vector<int32_t>& out) const;
  /** Appends the symbols character-level (SentencePiece-style) BPE starts one piece from. */
  void bpe_chars(std::string_view piece, std::vector<int32_t>& sym) const;
  /** Appends the ids of one section of text that holds no added token (normalizes, splits, merges);
   * at_start: the section begins the input (Metaspace's prepend_scheme "first"). */
  void encode_section(std::string_view text, std::vector<int64_t>& out, bool cache_held, bool at_start) const;
  /** Appends the ids of `text` (valid UTF-8), added tokens included. */
  void encode_text(std::string_view text, std::vector<int64_t>& out, bool cache_held) const;
  /** Runs `normalizers` on `text`; returns false (out untouched) when they change nothing. */
  bool normalize(std::string_view text, std::string& out) const;
  /** Calls piece() for each piece the Metaspace pre-tokenizer makes of `text`. */
  void metaspace_split(std::string_view text, bool at_start, const std::function<void(std::string_view)>& piece) const;
  /** Text of `ids` through the decoder chain (before clean-up). */
  std::string decode_chain(const std::vector<int64_t>& ids, bool skip_special) const;
  /** What token `id` (a used id) contributes to a text decoded through the chain, for streaming. */
  std::string token_text(size_t id) const;
};

}  // namespace genesis::tokenizer_detail
