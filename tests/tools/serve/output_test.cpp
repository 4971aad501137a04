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
using genesis::cli::serve::ToolCall;
using genesis::cli::serve::ToolCallDelta;

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

// The tool calls a stream's deltas make, put together as a client does.
std::vector<ToolCall> join(const std::vector<Delta>& ds) {
  std::vector<ToolCall> out;
  for (const Delta& d : ds)
    for (const ToolCallDelta& t : d.tool_calls) {
      if (out.size() <= t.index) out.resize(t.index + 1);
      if (!t.id.empty()) out[t.index].id = t.id;
      if (!t.name.empty()) out[t.index].name = t.name;
      out[t.index].arguments += t.arguments;
    }
  return out;
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
  for (const Delta& d : ds) EXPECT_EQ(d.content.find("tool_call"), std::string::npos);
  // The stream's pieces put together are the calls: the name first, then the arguments as written.
  const std::vector<ToolCall> joined = join(ds);
  ASSERT_EQ(joined.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(joined[i].id, c.tool_calls()[i].id);
    EXPECT_EQ(joined[i].name, c.tool_calls()[i].name);
    EXPECT_EQ(joined[i].arguments, c.tool_calls()[i].arguments);
  }
  EXPECT_EQ(c.tool_calls()[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(ServeOutput, ToolCallArgumentsStreamInPieces) {
  OutputOptions o;
  o.tools = true;
  ChoiceText c(tok(), o);
  const std::string args = "{\"city\": \"Paris\", \"days\": [1, 2, 3], \"unit\": {\"temp\": \"celsius\"}}";
  const std::string text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args + "}\n</tool_call>";
  const std::vector<int64_t> ids = tok().encode(text, false);
  std::vector<Delta> ds;
  size_t name_at = 0, pieces = 0;
  std::string got;
  for (size_t i = 0; i < ids.size(); ++i) {
    ds.push_back(c.put(ids[i]));
    for (const ToolCallDelta& t : ds.back().tool_calls) {
      EXPECT_EQ(t.index, 0u);
      if (!t.name.empty()) {
        EXPECT_EQ(t.name, "get_weather");
        EXPECT_EQ(name_at, 0u);
        name_at = i + 1;
      } else {
        ++pieces;
      }
      got += t.arguments;
      EXPECT_EQ(args.compare(0, got.size(), got), 0) << got;  // always a prefix of the arguments
    }
    EXPECT_EQ(c.tool_calls().empty(), i + 1 < ids.size());  // the call completes with its closing tag
  }
  ds.push_back(c.finish());
  EXPECT_GT(name_at, 0u);
  EXPECT_GT(pieces, 5u);  // piece by piece, not at once
  ASSERT_EQ(c.tool_calls().size(), 1u);
  EXPECT_EQ(c.tool_calls()[0].arguments, args);
  EXPECT_EQ(join(ds)[0].arguments, args);
  EXPECT_EQ(c.content(), "");
}

TEST(ServeOutput, ToolCallOfAnotherShapeComesWhole) {
  OutputOptions o;
  o.tools = true;
  ChoiceText c(tok(), o);
  // String arguments (a JSON text in a string) and another key order: parsed once the block closes.
  const std::vector<Delta> ds = feed(c,
                                     "<tool_call>{\"arguments\": {\"x\": 1}, \"name\": \"f\"}</tool_call>"
                                     "<tool_call>{\"name\": \"g\", \"arguments\": \"{\\\"y\\\": 2}\"}</tool_call>");
  ASSERT_EQ(c.tool_calls().size(), 2u);
  EXPECT_EQ(c.tool_calls()[0].name, "f");
  EXPECT_EQ(c.tool_calls()[0].arguments, "{\"x\":1}");
  EXPECT_EQ(c.tool_calls()[1].name, "g");
  EXPECT_EQ(c.tool_calls()[1].arguments, "{\"y\": 2}");
  const std::vector<ToolCall> joined = join(ds);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[1].arguments, "{\"y\": 2}");
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
