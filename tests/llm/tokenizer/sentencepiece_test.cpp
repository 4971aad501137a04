// tests/llm/tokenizer/sentencepiece_test.cpp - the SentencePiece-style components on a toy tokenizer whose
// results are worked out by hand: Prepend/Replace normalizers, character-level BPE with byte fallback and
// (fused) unknown tokens, the Split behaviours and Metaspace, the Replace/ByteFallback/Fuse/Strip decoder
// chain (one U+FFFD per byte of an ill-formed byte run, as HF tokenizers), streaming, and refusals.
#include <unistd.h>

#include <filesystem>

#include "common.h"

using genesis::Tokenizer;
using namespace toktest;

namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581

// vocab: <unk> <s> ▁ a b ▁a ab <0xC3> <0xA9> <0xE2> <0x82> b▁; merges by rank: "b ▁", "▁ a", "a b".
json toy() {
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = json::parse(R"([{"id": 0, "content": "<unk>", "special": true},
                                      {"id": 1, "content": "<s>", "special": true}])");
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", kSpace}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}};
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = json::parse(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>",
      "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
      "tokens": ["<s>"]}}})");
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["model"] = {{"type", "BPE"},
                {"unk_token", "<unk>"},
                {"byte_fallback", true},
                {"fuse_unk", true},
                {"dropout", nullptr},
                {"ignore_merges", false},
                {"vocab",
                 {{"<unk>", 0},
                  {"<s>", 1},
                  {kSpace, 2},
                  {"a", 3},
                  {"b", 4},
                  {kSpace + "a", 5},
                  {"ab", 6},
                  {"<0xC3>", 7},
                  {"<0xA9>", 8},
                  {"<0xE2>", 9},
                  {"<0x82>", 10},
                  {"b" + kSpace, 11}}},
                {"merges", {"b " + kSpace, kSpace + " a", "a b"}}};
  return j;
}

struct SentencePieceToy : ::testing::Test {
  Tokenizer load(const json& j) {
    // One file per process: ctest runs the cases of this binary in parallel processes.
    const std::string path = ::testing::TempDir() + "sp_toy_tokenizer_" + std::to_string(::getpid()) + ".json";
    write_file(path, j.dump());
    Tokenizer tok = Tokenizer::from_files(path);
    std::filesystem::remove(path);
    return tok;
  }
  using Ids = std::vector<int64_t>;
};

TEST_F(SentencePieceToy, ByteFallbackUnknownsAndMerges) {
  const Tokenizer tok = load(toy());
  // "▁ab▁é": é is not in the vocabulary -> <0xC3> <0xA9>; "b ▁" merges first, then "▁ a".
  EXPECT_EQ(tok.encode("ab \xC3\xA9"), (Ids{1, 5, 11, 7, 8}));
  EXPECT_EQ(tok.encode("ab \xC3\xA9", false), (Ids{5, 11, 7, 8}));
  // ✓ has no byte tokens (E2 9C 93: 9C and 93 are missing): unknown, and two of them fuse into one.
  EXPECT_EQ(tok.encode("ab\xE2\x9C\x93\xE2\x9C\x93", false), (Ids{5, 4, 0}));
  json j = toy();
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(j).encode("ab\xE2\x9C\x93\xE2\x9C\x93", false), (Ids{5, 4, 0, 0}));
  EXPECT_EQ(tok.encode(""), (Ids{1}));                // Prepend adds nothing to empty text
  EXPECT_EQ(tok.encode("<s>a", false), (Ids{1, 5}));  // the section after an added token gets its own ▁
}

TEST_F(SentencePieceToy, DecoderChain) {
  const Tokenizer tok = load(toy());
  EXPECT_EQ(tok.decode({1, 5, 11, 7, 8}), "<s> ab \xC3\xA9");
  EXPECT_EQ(tok.decode({1, 5, 11, 7, 8}, true), "ab \xC3\xA9");  // Strip drops the first space
  EXPECT_EQ(tok.decode({2, 2, 3}), " a");                        // ... only one
  // An ill-formed run of byte tokens: one U+FFFD per byte token (E2 82 is one maximal subpart, yet two).
  EXPECT_EQ(tok.decode({9, 10, 3}),
            "\xEF\xBF\xBD\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(tok.decode({7, 3, 8}),
            "\xEF\xBF\xBD"
            "a\xEF\xBF\xBD");
  EXPECT_EQ(tok.token_bytes(5), " a");
  EXPECT_EQ(tok.token_bytes(7), "\xC3");
}

TEST_F(SentencePieceToy, StreamingDropsTheStrippedSpace) {
  const Tokenizer tok = load(toy());
  for (bool skip : {false, true}) {
    const Ids ids{1, 5, 11, 7, 8, 2, 3};
    genesis::StreamDecoder stream(tok, skip);
    std::string text;
    for (int64_t id : ids) text += stream.put(id);
    text += stream.flush();
    EXPECT_EQ(text, tok.decode(ids, skip));
  }
}

TEST_F(SentencePieceToy, SplitBehaviours) {
  // "ab ab" normalizes to "▁ab▁ab".  Unsplit: b▁ first, then ▁a, then ab -> ▁a b▁ ab.
  json j = toy();
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{5, 11, 6}));
  j["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"String", kSpace}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}};
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{2, 3, 11, 6}));  // "▁" "ab▁" "ab"
  j["pre_tokenizer"]["behavior"] = "MergedWithNext";
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{5, 4, 5, 4}));  // "▁ab" "▁ab"
  j["pre_tokenizer"]["behavior"] = "Isolated";
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{2, 6, 2, 6}));  // "▁" "ab" "▁" "ab"
  // Metaspace in place of the normalizer: split at each ▁ (MergedWithNext), prepend "first" only at the start.
  j = toy();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "first"}, {"split", true}};
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{5, 4, 5, 4}));
  EXPECT_EQ(load(j).encode("<s>ab", false), (Ids{1, 6}));  // not first: no ▁
  j["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(load(j).encode("<s>ab", false), (Ids{1, 5, 4}));
  j["pre_tokenizer"]["split"] = false;
  EXPECT_EQ(load(j).encode("ab ab", false), (Ids{5, 11, 6}));
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "always"}, {"split", false}};
  EXPECT_EQ(load(j).decode({5, 11, 6}), "ab ab");  // no ▁ of the first token becomes a space
}

TEST_F(SentencePieceToy, UnsupportedComponentsAreRefusedByName) {
  auto fails = [&](const json& j, const std::vector<std::string>& words) {
    try {
      load(j);
      ADD_FAILURE() << "no error for " << j.dump().substr(0, 200);
    } catch (const genesis::Error& e) {
      EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
      for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  json j = toy();
  j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}};
  fails(j, {"normalizer.normalizers[1].pattern", "String"});
  j = toy();
  j["normalizer"]["normalizers"][0] = {{"type", "Lowercase"}};
  fails(j, {"normalizer.normalizers[0].type", "Lowercase"});
  j = toy();
  j["decoder"]["decoders"][1] = {{"type", "CTC"}};
  fails(j, {"decoder.decoders[1].type", "CTC"});
  j = toy();
  j["decoder"]["decoders"][1] = {{"type", "ByteLevel"}};
  fails(j, {"decoder", "ByteLevel mixed"});
  j = toy();
  j["decoder"]["decoders"][3]["content"] = "ab";
  fails(j, {"decoder.decoders[3].content", "one character"});
  j = toy();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", kSpace}}}, {"behavior", "Contiguous"}};
  fails(j, {"pre_tokenizer.behavior", "Contiguous"});
  j = toy();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}};
  fails(j, {"pre_tokenizer.prepend_scheme", "sometimes"});
  j = toy();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  fails(j, {"decoder", "ByteLevel pre-tokenizer needs the ByteLevel decoder"});
  j["decoder"] = {{"type", "ByteLevel"}};
  fails(j, {"model.byte_fallback", "ByteLevel"});
  j = toy();
  j["decoder"] = {{"type", "ByteLevel"}};
  fails(j, {"pre_tokenizer", "ByteLevel decoder needs a ByteLevel pre-tokenizer"});
  j = toy();
  j["decoder"] = nullptr;
  fails(j, {"decoder", "null"});
}

}  // namespace
