// tests/llm/tokenizer/errors_test.cpp - bad files and unsupported tokenizer.json content raise
// genesis::Error with the right code and a message naming the file, the field and the value.
#include <unistd.h>

#include <filesystem>

#include "../test_files.h"
#include "common.h"

using genesis::Tokenizer;
using namespace toktest;

namespace {

struct TokenizerErrors : ::testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("genesis_tok_err_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string file(const std::string& name, const std::string& data) const {
    const std::string p = (dir / name).string();
    write_file(p, data);
    return p;
  }

  // A small valid byte-level BPE tokenizer.json, without added tokens, to break one field at a time.
  static json base() {
    json j = llm_test::small_tokenizer_json();
    j["added_tokens"] = json::array();
    return j;
  }

  // Loads `j` and expects genesis::Error with `code` and every word in `words`.
  void fails(const json& j, int32_t code, const std::vector<std::string>& words) {
    fails_path(file("tokenizer.json", j.dump()), code, words);
  }
  void fails_path(const std::string& path, int32_t code, const std::vector<std::string>& words) {
    try {
      Tokenizer::from_files(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const genesis::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("[tokenizer] ", 0), 0u) << msg;
      for (const std::string& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
    }
  }

  std::filesystem::path dir;
};

TEST_F(TokenizerErrors, TheBaseFileLoads) {
  const Tokenizer tok = Tokenizer::from_files(file("tokenizer.json", base().dump()));
  EXPECT_EQ(tok.encode("ab ba"), (std::vector<int64_t>{2, 1, 0}));  // the space byte is not in the vocab
}

TEST_F(TokenizerErrors, MissingFileIsAnIoError) {
  fails_path((dir / "nope.json").string(), GN_ERR_IO, {"nope.json", "cannot open"});
  try {
    Tokenizer::from_pretrained(dir.string());
    ADD_FAILURE();
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos);
  }
}

TEST_F(TokenizerErrors, TruncatedJsonNamesTheFile) {
  const std::string real = read_file(kQwen3Dir + "/tokenizer.json");
  fails_path(file("cut.json", real.substr(0, 5000)), GN_ERR_INVALID_ARGUMENT, {"cut.json", "not valid JSON"});
  fails_path(file("empty.json", ""), GN_ERR_INVALID_ARGUMENT, {"empty.json", "not valid JSON"});
  // A number no double holds: nlohmann throws out_of_range, not parse_error (it escaped once).
  fails_path(file("huge.json", R"({"version": 8888888888E88888888888})"), GN_ERR_INVALID_ARGUMENT,
             {"huge.json", "not valid JSON", "number overflow"});
}

TEST_F(TokenizerErrors, BrokenMergesNameTheMergeIndex) {
  json j = base();
  j["model"]["merges"] = json::parse(R"(["a b", "a q"])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.merges[1]", "\"q\"", "not in model.vocab"});
  j["model"]["merges"] = json::parse(R"(["a b", "b a"])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.merges[1]", "merged token", "\"ba\""});
  j["model"]["merges"] = json::parse(R"(["ab"])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.merges[0]", "\"ab\""});
  j["model"]["merges"] = json::parse(R"([["a", "b", "c"]])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.merges[0]"});
  j["model"]["merges"] = json::parse(R"([42])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.merges[0]", "42"});
}

TEST_F(TokenizerErrors, UnsupportedStagesAreRefusedByName) {
  json j = base();
  j["pre_tokenizer"] = json::parse(R"({"type": "Whitespace"})");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"pre_tokenizer.type", "Whitespace"});
  j = base();
  j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Digits";
  fails(j, GN_ERR_INVALID_ARGUMENT, {"pre_tokenizer.pretokenizers[0].type", "Digits"});
  j = base();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  fails(j, GN_ERR_INVALID_ARGUMENT, {"behavior", "Removed"});
  j = base();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  fails(j, GN_ERR_INVALID_ARGUMENT, {"pattern.Regex", "(unclosed", "PCRE2"});
  j = base();
  j["normalizer"] = json::parse(R"({"type": "NFKC"})");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"normalizer.type", "NFKC"});
  j = base();
  j["decoder"] = json::parse(R"({"type": "WordPiece", "prefix": "##"})");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"decoder.type", "WordPiece"});
  j = base();
  j["post_processor"] = json::parse(R"({"type": "BertProcessing"})");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"post_processor.type", "BertProcessing"});
  j = base();
  j["model"]["type"] = "Unigram";
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.type", "Unigram"});
  j = base();
  j["model"]["dropout"] = 0.1;
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.dropout", "0.1"});
  j = base();
  j["truncation"] = json::parse(R"({"max_length": 512})");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"truncation", "512"});
}

TEST_F(TokenizerErrors, BadFieldTypesNameTheField) {
  json j = base();
  j["model"]["vocab"]["c"] = "three";
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.vocab[\"c\"]", "\"three\""});
  j = base();
  j["model"]["vocab"]["c"] = 2147483647;  // would need a 2^31-entry table
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.vocab[\"c\"]", "2147483647"});
  j = base();
  j["added_tokens"] = json::parse(R"([{"id": 5}])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens[0]", "content"});
  j = base();
  j.erase("model");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"missing \"model\""});
  fails_path(file("array.json", "[1, 2]"), GN_ERR_INVALID_ARGUMENT, {"array.json", "expected an object"});
}

TEST_F(TokenizerErrors, BadConfigNamesTheConfigFile) {
  const std::string tj = file("tokenizer.json", base().dump());
  try {
    Tokenizer::from_files(tj, file("tokenizer_config.json", R"({"eos_token": 7})"));
    ADD_FAILURE();
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: eos_token"), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerErrors, HostileIdsAndDuplicatesAreRefused) {
  json j = base();
  j["model"]["vocab"]["c"] = 16000000;  // below the id cap, but a 3-token file would allocate 16M slots
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.vocab[\"c\"]", "far beyond", "nearly dense"});
  j = base();
  j["model"]["vocab"]["c"] = 1;
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.vocab[\"c\"]", "duplicate token id", "\"b\""});
  j = base();
  j["model"]["vocab"]["c"] = -1;
  fails(j, GN_ERR_INVALID_ARGUMENT, {"model.vocab[\"c\"]", "-1"});
  j = base();
  j["added_tokens"] = json::parse(R"([{"id": 16777215, "content": "<x>", "special": true}])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens[0].id", "far beyond"});
  j["added_tokens"] = json::parse(R"([{"id": 2, "content": "<x>", "special": true}])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens[0].id", "already the token", "\"ab\""});
  j["added_tokens"] = json::parse(R"([{"id": 3, "content": "<x>"}, {"id": 4, "content": "<x>"}])");
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens[1].content", "duplicate token"});
  j["added_tokens"] = json::array({{{"id", 3}, {"content", std::string(100000, 'x')}}});
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens[0].content", "over the limit"});
  json many = json::array();
  for (int i = 0; i < (1 << 20) + 1; ++i) many.push_back({{"id", 3}, {"content", "t"}});
  j["added_tokens"] = std::move(many);
  fails(j, GN_ERR_INVALID_ARGUMENT, {"added_tokens", "over the limit"});
  // An added token that repeats a vocabulary entry with the same id is fine (HF files do this).
  j = base();
  j["added_tokens"] = json::parse(R"([{"id": 2, "content": "ab", "special": false}])");
  EXPECT_EQ(Tokenizer::from_files(file("tokenizer.json", j.dump())).vocab_size(), 3);
}

TEST_F(TokenizerErrors, DecodingAnIdOutsideTheVocabularyIsAnError) {
  const Tokenizer tok = Tokenizer::from_files(file("tokenizer.json", base().dump()));
  EXPECT_EQ(tok.decode({2, 1}), "abb");
  for (int64_t bad : {int64_t{99999999}, int64_t{-7}, int64_t{3}}) {
    try {
      (void)tok.decode({0, bad});
      ADD_FAILURE() << bad;
    } catch (const genesis::Error& e) {
      EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(bad) +
                                           " is out of range: this tokenizer's "
                                           "ids are 0..2"),
                std::string::npos)
          << e.what();
    }
    genesis::StreamDecoder stream(tok);
    EXPECT_THROW((void)stream.put(bad), genesis::Error);
  }
}

}  // namespace
