// output_test.cpp - a choice's tokens as OpenAI text (tools/cli/serve/output.h) with the Qwen3
// tokenizer: whole UTF-8 pieces, stop strings, <think> reasoning, <tool_call> blocks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "genesis/tokenizer.hpp"
#include "output.h"

namespace {

using genesis::cli::serve::ChoiceText;
using genesis::cli::serve::Delta;
using genesis::cli::serve::OutputOptions;

const genesis::Tokenizer& tok() {
  static const genesis::Tokenizer t =
      genesis::Tokenizer::from_pretrained(std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3");
  return t;
}

// Whether s is whole UTF-8 (no sequence cut short).
bool whole_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

// Feeds `text`'s tokens one at a time; returns every delta (the last from finish()).
std::vector<Delta> feed(ChoiceText& c, const std::string& text) {
  std::vector<Delta> out;
  for (int64_t id : tok().encode(text, false)) out.push_back(c.put(id));
  out.push_back(c.finish());
  return out;
}

std::string joined_content(const std::vector<Delta>& ds) {
  std::string s;
  for (const Delta& d : ds) s += d.content;
  return s;
}

std::string joined_reasoning(const std::vector<Delta>& ds) {
  std::string s;
  for (const Delta& d : ds) s += d.reasoning;
  return s;
}

TEST(ServeOutput, PiecesAreWholeUtf8AndSpellTheText) {
  const std::string text = "héllo 你好, wörld! 🙂 done";
  ChoiceText c(tok(), {});
  const std::vector<Delta> ds = feed(c, text);
  for (const Delta& d : ds) EXPECT_TRUE(whole_utf8(d.content)) << d.content;
  EXPECT_EQ(joined_content(ds), text);
  EXPECT_EQ(c.content(), text);
  EXPECT_FALSE(c.stopped());
}

TEST(ServeOutput, SpecialTokensAreSkipped) {
  ChoiceText c(tok(), {});
  std::vector<Delta> ds = feed(c, "Hi there");
  ds.push_back(c.put(tok().token_to_id("<|im_end|>")));
  EXPECT_EQ(c.content(), "Hi there");
}

TEST(ServeOutput, StopStringEndsTheTextBeforeIt) {
  OutputOptions o;
  o.stop = {"wor", "zzz"};
  ChoiceText c(tok(), o);
  const std::vector<Delta> ds = feed(c, "Hello world, goodbye");
  EXPECT_EQ(joined_content(ds), "Hello ");
  EXPECT_TRUE(c.stopped());
  for (const Delta& d : ds) EXPECT_EQ(d.content.find('w'), std::string::npos);  // never sent, then taken back
}

TEST(ServeOutput, HeldBackPrefixOfAStopStringComesOutAtTheEnd) {
  OutputOptions o;
  o.stop = {"goodbye!"};
  ChoiceText c(tok(), o);
  const std::vector<Delta> ds = feed(c, "Hello and good");
  EXPECT_EQ(joined_content(ds), "Hello and good");
  EXPECT_FALSE(c.stopped());
  EXPECT_EQ(ds.back().content.find("good") != std::string::npos, true);  // held until finish()
}

TEST(ServeOutput, ThinkBlockIsReasoning) {
  OutputOptions o;
  o.reasoning = true;
  ChoiceText c(tok(), o);
  const std::vector<Delta> ds = feed(c, "<think>\nLet me think.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(joined_reasoning(ds), "\nLet me think.\n");
  EXPECT_EQ(joined_content(ds), "The answer is 4.");
  EXPECT_EQ(c.reasoning(), "\nLet me think.\n");
  for (const Delta& d : ds) {
    EXPECT_EQ(d.content.find('<'), std::string::npos);
    EXPECT_EQ(d.reasoning.find("</"), std::string::npos);
  }
}

TEST(ServeOutput, ThinkOnlyCountsAtTheStart) {
  OutputOptions o;
  o.reasoning = true;
  ChoiceText c(tok(), o);
  feed(c, "Sure. <think>no</think> done");
  EXPECT_EQ(c.content(), "Sure. <think>no</think> done");
  EXPECT_EQ(c.reasoning(), "");
}

TEST(ServeOutput, UnclosedThinkIsAllReasoning) {
  OutputOptions o;
  o.reasoning = true;
  ChoiceText c(tok(), o);
  feed(c, "<think>still going");
  EXPECT_EQ(c.reasoning(), "still going");
  EXPECT_EQ(c.content(), "");
}

TEST(ServeOutput, ToolCallBlocksBecomeToolCalls) {
  OutputOptions o;
  o.tools = true;
  o.reasoning = true;
  ChoiceText c(tok(), o);
  const std::vector<Delta> ds =
      feed(c,
           "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
           "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
           "{}}\n</tool_call>");
  ASSERT_EQ(c.tool_calls().size(), 2u);
  EXPECT_EQ(c.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(c.tool_calls()[0].arguments), nlohmann::json({{"city", "Paris"}}));
  EXPECT_EQ(c.tool_calls()[1].name, "get_time");
  EXPECT_EQ(c.tool_calls()[1].arguments, "{}");
  EXPECT_EQ(c.tool_calls()[0].id.size(), 5u + 24u);
  EXPECT_NE(c.tool_calls()[0].id, c.tool_calls()[1].id);
  EXPECT_EQ(c.content(), "Let me check.\n");
  size_t deltas_with_calls = 0;
  for (const Delta& d : ds) {
    deltas_with_calls += d.tool_calls.size();
    EXPECT_EQ(d.content.find("tool_call"), std::string::npos);
  }
  EXPECT_EQ(deltas_with_calls, 2u);
}

TEST(ServeOutput, MalformedToolCallStaysContent) {
  OutputOptions o;
  o.tools = true;
  ChoiceText c(tok(), o);
  const std::string text = "<tool_call>\n{\"name\": get_weather}\n</tool_call> ok";
  feed(c, text);
  EXPECT_TRUE(c.tool_calls().empty());
  EXPECT_EQ(c.content(), text);
}

TEST(ServeOutput, ToolCallWithoutClosingTagAtTheEnd) {
  OutputOptions o;
  o.tools = true;
  ChoiceText c(tok(), o);
  feed(c, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n");
  ASSERT_EQ(c.tool_calls().size(), 1u);
  EXPECT_EQ(c.tool_calls()[0].name, "f");
  ChoiceText d(tok(), o);
  feed(d, "<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(d.tool_calls().empty());
  EXPECT_EQ(d.content(), "<tool_call>\n{\"name\": \"f\", \"argu");
}

TEST(ServeOutput, ForcedPrefixIsPartOfTheCall) {
  OutputOptions o;
  o.tools = true;
  o.prefix = "<tool_call>\n{\"name\": \"f\", \"arguments\": ";
  ChoiceText c(tok(), o);
  feed(c, "{\"x\": [1, 2]}}\n</tool_call>");
  ASSERT_EQ(c.tool_calls().size(), 1u);
  EXPECT_EQ(c.tool_calls()[0].name, "f");
  EXPECT_EQ(nlohmann::json::parse(c.tool_calls()[0].arguments), nlohmann::json({{"x", {1, 2}}}));
  EXPECT_EQ(c.content(), "");
}

TEST(ServeOutput, WithoutToolsTagsAreContent) {
  ChoiceText c(tok(), {});
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  feed(c, text);
  EXPECT_TRUE(c.tool_calls().empty());
  EXPECT_EQ(c.content(), text);
}

TEST(ServeOutput, IdsPastTheTokenizerAreIgnored) {
  ChoiceText c(tok(), {});
  c.put(tok().vocab_size() + 5);
  feed(c, "ok");
  EXPECT_EQ(c.content(), "ok");
}

TEST(ServeOutput, PartialSuffix) {
  using genesis::cli::serve::partial_suffix;
  EXPECT_EQ(partial_suffix("abc<too", "<tool_call>"), 4u);
  EXPECT_EQ(partial_suffix("abc", "<tool_call>"), 0u);
  EXPECT_EQ(partial_suffix("<tool_call>", "<tool_call>"), 0u);  // the whole tag is not a partial one
  EXPECT_EQ(partial_suffix("x<", "<tool_call>"), 1u);
}

}  // namespace
