// tests/llm/tokenizer/tokenizer_test.cpp - Qwen3's real tokenizer against the transformers.js oracle
// (ids and decoded text for every case in cases.txt), round trips, vocabulary and config accessors,
// special tokens, and a hand-checked toy tokenizer for template post-processing and merge formats.
#include <cstdio>
#include <filesystem>
#include <thread>

#include "common.h"

using genesis::Tokenizer;
using namespace toktest;

namespace {

TEST(TokenizerOracle, CasesFileMatchesTheOracleFile) {
  // A stale qwen3_expected.json (cases.txt edited, generator not rerun) fails here.
  const std::vector<std::string> cases = read_cases(kFixtures + "/cases.txt");
  const auto& expected = oracle();
  ASSERT_EQ(cases.size(), expected.size()) << "rerun tests/llm/tokenizer/gen_oracle.mjs";
  ASSERT_GE(cases.size(), 200u);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(cases[i], expected[i].input) << "case " << i;
}

TEST(TokenizerOracle, EveryCaseEncodesToTheOracleIds) {
  const Tokenizer& tok = qwen3();
  size_t same = 0;
  for (size_t i = 0; i < oracle().size(); ++i) {
    const OracleCase& c = oracle()[i];
    const std::vector<int64_t> ids = tok.encode(c.input);
    EXPECT_EQ(ids, c.ids) << "case " << i << ": \"" << show(c.input) << "\"";
    same += ids == c.ids;
  }
  std::printf("[ oracle   ] %zu of %zu cases encode to the oracle ids\n", same, oracle().size());
}

TEST(TokenizerOracle, EveryCaseDecodesToTheOracleText) {
  const Tokenizer& tok = qwen3();
  for (size_t i = 0; i < oracle().size(); ++i) {
    const OracleCase& c = oracle()[i];
    EXPECT_EQ(tok.decode(c.ids), c.decoded) << "case " << i << ": \"" << show(c.input) << "\"";
    EXPECT_EQ(tok.decode(c.ids, true), c.decoded_skip_special) << "case " << i << ": \"" << show(c.input) << "\"";
  }
}

TEST(TokenizerOracle, RandomIdSequencesDecodeToTheOracleText) {
  // Byte tokens that split characters, next to words and added tokens: U+FFFD placement must agree.
  const Tokenizer& tok = qwen3();
  ASSERT_GE(decode_oracle().size(), 100u);
  for (size_t i = 0; i < decode_oracle().size(); ++i) {
    const OracleCase& c = decode_oracle()[i];
    EXPECT_EQ(tok.decode(c.ids), c.decoded) << "decode case " << i;
    EXPECT_EQ(tok.decode(c.ids, true), c.decoded_skip_special) << "decode case " << i;
  }
}

TEST(TokenizerOracle, ValidNfcTextRoundTrips) {
  // Where the oracle's decoded text equals the input (valid UTF-8, already NFC), decode(encode(x)) == x.
  const Tokenizer& tok = qwen3();
  size_t checked = 0;
  for (const OracleCase& c : oracle()) {
    if (c.decoded != c.input) continue;
    EXPECT_EQ(tok.decode(tok.encode(c.input)), c.input) << "\"" << show(c.input) << "\"";
    ++checked;
  }
  EXPECT_GE(checked, 200u);
}

TEST(TokenizerOracle, QwenAddsNoSpecialTokens) {
  const Tokenizer& tok = qwen3();
  for (const OracleCase& c : oracle()) EXPECT_EQ(tok.encode(c.input, false), c.ids);
}

TEST(TokenizerOracle, ConcurrentEncodesAgree) {
  const Tokenizer& tok = qwen3();
  auto run = [&](size_t offset, int* mismatches) {
    for (size_t k = 0; k < oracle().size(); ++k) {
      const OracleCase& c = oracle()[(k + offset) % oracle().size()];
      *mismatches += tok.encode(c.input) != c.ids;
    }
  };
  int m1 = 0, m2 = 0;
  std::thread a(run, 0, &m1), b(run, oracle().size() / 2, &m2);
  a.join();
  b.join();
  EXPECT_EQ(m1 + m2, 0);
}

// ---- vocabulary and config (values read off Qwen3's tokenizer.json / tokenizer_config.json)

TEST(TokenizerQwen3, VocabularyAndAddedTokens) {
  const Tokenizer& tok = qwen3();
  EXPECT_EQ(tok.vocab_size(), 151669);  // model vocab 0..151642, added tokens 151643..151668
  EXPECT_EQ(tok.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(tok.token_to_id("<think>"), 151667);
  EXPECT_EQ(tok.token_to_id("!"), 0);
  EXPECT_EQ(tok.token_to_id("Ġ"), 220);  // the stand-in for a space
  EXPECT_EQ(tok.token_to_id("no such token"), -1);
  EXPECT_EQ(tok.id_to_token(151644), "<|im_start|>");
  EXPECT_EQ(tok.id_to_token(220), "Ġ");
  EXPECT_EQ(tok.id_to_token(-1), "");
  EXPECT_EQ(tok.id_to_token(151669), "");
  EXPECT_EQ(tok.token_bytes(220), " ");
  EXPECT_TRUE(tok.is_special(151645));
  EXPECT_FALSE(tok.is_special(151667));  // <think> is added but not special
  EXPECT_TRUE(tok.is_added(151667));
  EXPECT_FALSE(tok.is_added(220));
  EXPECT_FALSE(tok.is_special(5));
  EXPECT_FALSE(tok.is_special(1 << 30));
}

TEST(TokenizerQwen3, ConfigTokensAndChatTemplate) {
  const Tokenizer& tok = qwen3();
  EXPECT_EQ(tok.eos_token, "<|im_end|>");
  EXPECT_EQ(tok.eos_token_id, 151645);
  EXPECT_EQ(tok.pad_token, "<|endoftext|>");
  EXPECT_EQ(tok.pad_token_id, 151643);
  EXPECT_EQ(tok.bos_token, "");  // null in the config
  EXPECT_EQ(tok.bos_token_id, -1);
  EXPECT_NE(tok.chat_template().find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(tok.chat_template(),
            json::parse(read_file(kQwen3Dir + "/tokenizer_config.json")).at("chat_template").get<std::string>());
}

TEST(TokenizerQwen3, WithoutConfigTheTokensAreEmpty) {
  const Tokenizer tok = Tokenizer::from_files(kQwen3Dir + "/tokenizer.json");
  EXPECT_EQ(tok.eos_token, "");
  EXPECT_EQ(tok.eos_token_id, -1);
  EXPECT_EQ(tok.chat_template(), "");
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int64_t>{9707, 1879}));
}

TEST(TokenizerQwen3, SpecialTokensSplitOutAndSkipOnDecode) {
  const Tokenizer& tok = qwen3();
  const std::vector<int64_t> ids = tok.encode("<|im_start|>user\nhi<|im_end|><think>x</think>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 151645), ids.end());
  EXPECT_EQ(tok.decode(ids, true), "user\nhi<think>x</think>");  // only special tokens are dropped
  EXPECT_EQ(tok.decode({151644, 151645}, true), "");
  EXPECT_EQ(tok.decode({151644, 151645}), "<|im_start|><|im_end|>");
}

TEST(TokenizerQwen3, DecodeRefusesIdsOutsideTheVocabulary) {
  const Tokenizer& tok = qwen3();
  EXPECT_EQ(tok.decode({9707, 1879}), "Hello world");
  // Qwen3's embedding has 151936 rows for 151669 ids; HF decodes the others to nothing, here they are an error
  // naming the id (a hostile or mistyped id must not print nothing and succeed).
  for (int64_t bad : {int64_t{151669}, int64_t{151900}, int64_t{-3}, int64_t{99999999}}) {
    try {
      (void)tok.decode({9707, bad, 1879});
      ADD_FAILURE() << bad;
    } catch (const genesis::Error& e) {
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(bad) + " is out of range"), std::string::npos)
          << e.what();
    }
  }
}

TEST(TokenizerQwen3, InvalidUtf8IsReadAsReplacementCharacters) {
  const Tokenizer& tok = qwen3();
  // One U+FFFD per maximal ill-formed subpart: "\xF0\x9F\x98" is one, "\xFF\xFE" two.
  EXPECT_EQ(tok.encode("a\xF0\x9F\x98z"), tok.encode("a\xEF\xBF\xBDz"));
  EXPECT_EQ(tok.encode("\xFF\xFE"), tok.encode("\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_EQ(tok.decode(tok.encode("\xC3")), "\xEF\xBF\xBD");
}

TEST(TokenizerQwen3, ByteOrderMarkIsNotWhiteSpaceAsInHfTokenizers) {
  // Qwen's split regex run by HF (Oniguruma, \s = Unicode White_Space) or PCRE2: U+FEFF is not \s, so
  // " \uFEFFab" is " ?[^\s\p{L}\p{N}]+" = " \uFEFF" (token "Ġï»¿", bytes 20 EF BB BF), then "ab".
  // transformers.js counts U+FEFF as \s and splits " " | "\uFEFF" instead (not in the oracle cases).
  const Tokenizer& tok = qwen3();
  EXPECT_EQ(tok.encode(" \xEF\xBB\xBF"
                       "ab"),
            (std::vector<int64_t>{tok.token_to_id("Ġï»¿"), tok.token_to_id("ab")}));
}

TEST(TokenizerQwen3, LongInputsDoNotOverflowTheRegexStack) {
  const Tokenizer& tok = qwen3();
  for (const std::string& s :
       {std::string(1 << 20, ' '), std::string(1 << 20, 'a'), std::string(1 << 19, '\n'), std::string(300000, '7')}) {
    const std::vector<int64_t> ids = tok.encode(s);
    EXPECT_EQ(tok.decode(ids), s);
  }
}

// ---- a toy tokenizer whose results are worked out by hand

json toy_json() {
  // GPT-2 byte-level stand-ins: "Ġ" is a space.  Merges by rank: a+b, ab+c, Ġ+a.
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 8, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
                      "single_word": false, "normalized": false},
                     {"id": 9, "content": "<m>", "special": false, "lstrip": true, "rstrip": true,
                      "single_word": false, "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [8], "tokens": ["<s>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
              "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
              "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5, "Ġa": 6, "x": 7},
              "merges": ["a b", "ab c", "Ġ a"]}
  })");
}

struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("genesis_tok_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string file(const std::string& name, const std::string& data) const {
    const std::string p = (path / name).string();
    write_file(p, data);
    return p;
  }
  std::filesystem::path path;
};

TEST(TokenizerToy, TemplateAddsTheBosTokenOnlyWithSpecialTokens) {
  TempDir d;
  const Tokenizer tok = Tokenizer::from_files(d.file("tokenizer.json", toy_json().dump()));
  // "abc ab" -> pieces "abc", " ab"; "abc" -> a,b -> ab -> abc; " ab": a+b (rank 0) beats Ġ+a (rank 2).
  EXPECT_EQ(tok.encode("abc ab"), (std::vector<int64_t>{8, 4, 5, 3}));
  EXPECT_EQ(tok.encode("abc ab", false), (std::vector<int64_t>{4, 5, 3}));
  EXPECT_EQ(tok.encode(" ac", false), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(tok.decode({8, 4, 5, 3}), "<s>abc ab");
  EXPECT_EQ(tok.decode({8, 4, 5, 3}, true), "abc ab");
}

TEST(TokenizerToy, ChatTemplateFallsBackToTheJinjaFile) {
  TempDir d;
  d.file("tokenizer.json", toy_json().dump());
  d.file("chat_template.jinja", "{{ messages[0]['content'] }}\n");
  EXPECT_EQ(Tokenizer::from_pretrained(d.path.string()).chat_template(), "{{ messages[0]['content'] }}\n");
  d.file("tokenizer_config.json", R"({"chat_template": "from the config"})");
  EXPECT_EQ(Tokenizer::from_pretrained(d.path.string()).chat_template(), "from the config");
}

TEST(TokenizerToy, PairMergesReadLikeStringMerges) {
  TempDir d;
  json j = toy_json();
  j["model"]["merges"] = json::parse(R"([["a", "b"], ["ab", "c"], ["Ġ", "a"]])");
  const Tokenizer tok = Tokenizer::from_files(d.file("tokenizer.json", j.dump()));
  EXPECT_EQ(tok.encode("abc ab", false), (std::vector<int64_t>{4, 5, 3}));
}

TEST(TokenizerToy, LstripAndRstripSwallowTheSurroundingSpaces) {
  TempDir d;
  const Tokenizer tok = Tokenizer::from_files(d.file("tokenizer.json", toy_json().dump()));
  // "<m>" has lstrip and rstrip: "ab  <m>  c" -> "ab", <m>, "c" with the spaces gone.
  EXPECT_EQ(tok.encode("ab  <m>  c", false), (std::vector<int64_t>{3, 9, 2}));
  EXPECT_EQ(tok.encode("ab<m>c", false), (std::vector<int64_t>{3, 9, 2}));
}

TEST(TokenizerToy, SingleWordTokensMatchOnlyBetweenWords) {
  TempDir d;
  json j = toy_json();
  j["added_tokens"][1]["single_word"] = true;
  j["added_tokens"][1]["lstrip"] = false;
  j["added_tokens"][1]["rstrip"] = false;
  j["model"]["vocab"]["<"] = 10;
  j["model"]["vocab"][">"] = 11;
  j["model"]["vocab"]["m"] = 12;
  const Tokenizer tok = Tokenizer::from_files(d.file("tokenizer.json", j.dump()));
  EXPECT_EQ(tok.encode("<m>", false), (std::vector<int64_t>{9}));
  // Inside a word it is plain text: "x<m>" -> "x", "<", "m", ">" (GPT-2 split: "x", "<", "m", ">").
  EXPECT_EQ(tok.encode("x<m>", false), (std::vector<int64_t>{7, 10, 12, 11}));
}

TEST(TokenizerToy, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  TempDir d;
  json j = toy_json();
  j["model"]["vocab"]["ca"] = 13;  // no merge builds "ca"
  EXPECT_EQ(Tokenizer::from_files(d.file("a.json", j.dump())).encode("ca", false), (std::vector<int64_t>{2, 0}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(Tokenizer::from_files(d.file("b.json", j.dump())).encode("ca", false), (std::vector<int64_t>{13}));
}

TEST(TokenizerToy, BytesOutsideTheVocabularyBecomeUnkOrAreDropped) {
  TempDir d;
  json j = toy_json();
  // "z" is not in the vocabulary: HF drops it without an unk token (so "a" and "b" meet and merge to
  // "ab"), else emits the unk id for it.
  EXPECT_EQ(Tokenizer::from_files(d.file("a.json", j.dump())).encode("azb", false), (std::vector<int64_t>{3}));
  j["model"]["unk_token"] = "x";
  EXPECT_EQ(Tokenizer::from_files(d.file("b.json", j.dump())).encode("azb", false), (std::vector<int64_t>{0, 7, 1}));
}

TEST(TokenizerToy, NormalizedAddedTokensMatchAfterNfc) {
  TempDir d;
  json j = toy_json();
  j["normalizer"] = json::parse(R"({"type": "NFC"})");
  j["added_tokens"].push_back(json::parse(R"({"id": 14, "content": "\u00e9", "special": false, "normalized": true})"));
  const Tokenizer tok = Tokenizer::from_files(d.file("tokenizer.json", j.dump()));
  // "x" + "e" + U+0301 is NFC "x\u00e9", in which the added token is found: x, <é>.
  EXPECT_EQ(tok.encode("xe\xCC\x81", false), (std::vector<int64_t>{7, 14}));
  EXPECT_EQ(tok.encode("x\xC3\xA9", false), (std::vector<int64_t>{7, 14}));
}

}  // namespace
