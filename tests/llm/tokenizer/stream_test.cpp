// tests/llm/tokenizer/stream_test.cpp - StreamDecoder: chunks are always whole UTF-8 characters and
// concatenate to Tokenizer::decode, on every oracle case and on characters split across byte tokens.
#include "common.h"

using genesis::StreamDecoder;
using genesis::Tokenizer;
using namespace toktest;

namespace {

// Streams ids one at a time; checks every chunk is valid UTF-8; returns the concatenation.
std::string stream(const Tokenizer& tok, const std::vector<int64_t>& ids, bool skip, size_t* held_back = nullptr) {
  StreamDecoder d(tok, skip);
  std::string all;
  for (int64_t id : ids) {
    const std::string chunk = d.put(id);
    EXPECT_TRUE(valid_utf8(chunk)) << "chunk \"" << show(chunk) << "\" after id " << id;
    if (chunk.empty() && held_back) ++*held_back;
    all += chunk;
  }
  const std::string rest = d.flush();
  EXPECT_TRUE(valid_utf8(rest));
  return all + rest;
}

TEST(TokenizerStream, ChunksConcatenateToDecodeOnEveryOracleCase) {
  const Tokenizer& tok = toktest::qwen3();
  size_t held_back = 0;
  for (const OracleCase& c : oracle()) {
    EXPECT_EQ(stream(tok, c.ids, false, &held_back), c.decoded) << "\"" << show(c.input) << "\"";
    EXPECT_EQ(stream(tok, c.ids, true), c.decoded_skip_special) << "\"" << show(c.input) << "\"";
  }
  EXPECT_GT(held_back, 0u);  // emoji and rare CJK span several tokens, so some puts must wait
}

TEST(TokenizerStream, RandomIdSequencesStreamToTheOracleText) {
  const Tokenizer& tok = toktest::qwen3();
  for (const OracleCase& c : decode_oracle()) {
    EXPECT_EQ(stream(tok, c.ids, false), c.decoded);
    EXPECT_EQ(stream(tok, c.ids, true), c.decoded_skip_special);
  }
}

TEST(TokenizerStream, RandomBytesNeverBreakEncodeOrStreaming) {
  // Seeded random byte strings built from ASCII, UTF-8 fragments, combining marks, bare continuation
  // bytes and pieces of special tokens: encoding never throws, decoding is valid UTF-8, streaming
  // agrees with decode(), and ASCII-only inputs round-trip exactly.
  const Tokenizer& tok = toktest::qwen3();
  const std::vector<std::string> atoms = {"a",
                                          "Z",
                                          " ",
                                          "  ",
                                          "\n",
                                          "\r\n",
                                          "\t",
                                          "7",
                                          "'s",
                                          "\xC3\xA9",
                                          "e\xCC\x81",
                                          "\xE4\xBD\xA0",
                                          "\xF0\x9F\x98\x80",
                                          "\xE2\x80\x8D",
                                          "\xF0\x9F",
                                          "\x80",
                                          "\xFF",
                                          "\xC0",
                                          "\xED\xA0\x80",
                                          "<|im_",
                                          "end|>",
                                          "<|im_end|>",
                                          "<think>",
                                          "\xE1\x84\x80",
                                          "\xE1\x85\xA1",
                                          "\xEA\xB0\x80",
                                          ".",
                                          "{",
                                          "\xD9\x85"};
  uint64_t seed = 42;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int k = 0; k < 3000; ++k) {
    std::string s;
    bool ascii = true;
    const int n = int(next() % 40);
    for (int i = 0; i < n; ++i) {
      const std::string& a = atoms[next() % atoms.size()];
      s += a;
      for (unsigned char c : a) ascii = ascii && c < 0x80;
    }
    std::vector<int64_t> ids;
    ASSERT_NO_THROW(ids = tok.encode(s)) << show(s);
    const std::string text = tok.decode(ids);
    EXPECT_TRUE(valid_utf8(text)) << show(s);
    EXPECT_EQ(stream(tok, ids, false), text) << show(s);
    if (ascii) {
      EXPECT_EQ(text, s);
    }
  }
}

TEST(TokenizerStream, HoldsBackAPartialCharacterUntilItCompletes) {
  const Tokenizer& tok = toktest::qwen3();
  // GPT-2 stand-ins: byte 0xE4 is "ä", 0xBD is "½", 0xA0 is "ł" (U+0100 + 66); E4 BD A0 is "你".
  const int64_t e4 = tok.token_to_id("ä"), bd = tok.token_to_id("½"), a0 = tok.token_to_id("ł");
  ASSERT_GE(e4, 0);
  ASSERT_GE(bd, 0);
  ASSERT_GE(a0, 0);
  StreamDecoder d(tok);
  EXPECT_EQ(d.put(e4), "");
  EXPECT_EQ(d.put(bd), "");
  EXPECT_EQ(d.put(a0), "你");
  EXPECT_EQ(d.flush(), "");
  EXPECT_EQ(tok.decode({e4, bd, a0}), "你");
}

TEST(TokenizerStream, FlushTurnsAnUnfinishedCharacterIntoOneReplacement) {
  const Tokenizer& tok = toktest::qwen3();
  const int64_t e4 = tok.token_to_id("ä"), bd = tok.token_to_id("½");
  StreamDecoder d(tok);
  EXPECT_EQ(d.put(e4), "");
  EXPECT_EQ(d.put(bd), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.decode({e4, bd}), "\xEF\xBF\xBD");
  EXPECT_EQ(d.put(tok.token_to_id("a")), "a");  // flush reset the decoder
}

TEST(TokenizerStream, AnInterruptedCharacterIsReplacedAsSoonAsItCannotComplete) {
  const Tokenizer& tok = toktest::qwen3();
  const int64_t e4 = tok.token_to_id("ä");
  StreamDecoder d(tok);
  EXPECT_EQ(d.put(e4), "");
  EXPECT_EQ(d.put(tok.token_to_id("a")),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(d.put(151645), "<|im_end|>");
  EXPECT_EQ(tok.decode({e4, tok.token_to_id("a"), 151645}),
            "\xEF\xBF\xBD"
            "a<|im_end|>");
}

TEST(TokenizerStream, SkipsSpecialTokensWhenAsked) {
  const Tokenizer& tok = toktest::qwen3();
  StreamDecoder d(tok, true);
  EXPECT_EQ(d.put(151644), "");
  EXPECT_EQ(d.put(151667), "<think>");          // added, not special
  EXPECT_THROW(d.put(151900), genesis::Error);  // past the vocabulary: an error, as in decode()
  EXPECT_THROW(d.put(-1), genesis::Error);
}

}  // namespace
