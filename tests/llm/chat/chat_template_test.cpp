// tests/llm/chat/chat_template_test.cpp - genesis::ChatTemplate against jinja2: every
// conversation x template and every language snippet in expected.json (written by
// gen_expected.py with jinja2 set up as transformers does) must render byte for byte, and
// every case jinja2 rejects must throw; plus parse errors and the apply() convenience.
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../../sanitizers.h"
#include "../test_files.h"
#include "genesis/chat_template.hpp"

namespace {

using json = nlohmann::ordered_json;
using genesis::ChatMessage;
using genesis::ChatTemplate;

const std::string kDir = std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/chat_templates/";

using llm_test::read_file;

const json& oracle() {
  static const json j = json::parse(read_file(kDir + "expected.json"));
  return j;
}

struct Case {
  std::string id;  // gtest-safe name
  std::string template_source;
  std::string context;   // JSON object
  std::string expected;  // when !error
  bool error = false;
  std::string jinja_error;
};

std::string safe_id(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

Case make_case(const std::string& id, const std::string& source, const json& c) {
  Case k;
  k.id = safe_id(id);
  k.template_source = source;
  k.context = c.at("context").dump();
  k.error = c.contains("error");
  if (k.error)
    k.jinja_error = c.at("error").get<std::string>();
  else
    k.expected = c.at("expected").get<std::string>();
  return k;
}

std::vector<Case> conversation_cases() {
  std::vector<Case> out;
  for (const auto& t : oracle().at("templates")) {
    std::string source = read_file(kDir + t.at("file").get<std::string>());
    for (const auto& c : t.at("cases"))
      out.push_back(make_case(t.at("name").get<std::string>() + "__" + c.at("name").get<std::string>(), source, c));
  }
  return out;
}

std::vector<Case> snippet_cases(const char* group) {
  std::vector<Case> out;
  for (const auto& c : oracle().at(group))
    out.push_back(make_case(c.at("name").get<std::string>(), c.at("template").get<std::string>(), c));
  return out;
}

void check_case(const Case& k) {
  if (k.error) {
    EXPECT_THROW(ChatTemplate(k.template_source).render(k.context), genesis::Error)
        << "jinja2 raised " << k.jinja_error;
    return;
  }
  EXPECT_EQ(ChatTemplate(k.template_source).render(k.context), k.expected);
}

class Conversations : public ::testing::TestWithParam<Case> {};
TEST_P(Conversations, MatchesJinja2) { check_case(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Oracle, Conversations, ::testing::ValuesIn(conversation_cases()),
                         [](const auto& info) { return info.param.id; });

class Snippets : public ::testing::TestWithParam<Case> {};
TEST_P(Snippets, MatchesJinja2) { check_case(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Oracle, Snippets, ::testing::ValuesIn(snippet_cases("snippets")),
                         [](const auto& info) { return info.param.id; });

class RuntimeErrors : public ::testing::TestWithParam<Case> {};
TEST_P(RuntimeErrors, ThrowLikeJinja2) { check_case(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Oracle, RuntimeErrors, ::testing::ValuesIn(snippet_cases("errors")),
                         [](const auto& info) { return info.param.id; });

TEST(ChatTemplateOracle, FamilyTemplatesAreTheOnesTheirTokenizersShip) {
  // llama3-instruct.jinja and gemma3-it.jinja are the chat_template strings of the real tokenizer_config.json
  // files in tests/fixtures/tokenizer (Llama 2's ships none; llama2-chat.jinja is Llama 2 chat's).
  const std::string tok_dir = std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/tokenizer/";
  for (const auto& [family, file] :
       {std::pair<std::string, std::string>{"llama3", "llama3-instruct.jinja"}, {"gemma3", "gemma3-it.jinja"}}) {
    const json cfg = json::parse(read_file(tok_dir + family + "/tokenizer_config.json"));
    EXPECT_EQ(cfg.at("chat_template").get<std::string>(), read_file(kDir + file)) << family;
  }
  size_t family_cases = 0;
  for (const auto& t : oracle().at("templates"))
    if (t.at("name") == "llama3-instruct" || t.at("name") == "gemma3-it" || t.at("name") == "llama2-chat")
      for (const auto& c : t.at("cases")) family_cases += c.contains("expected");
  EXPECT_GE(family_cases, 90u);  // rendered (not raising) conversations of the three family templates
}

TEST(ChatTemplateOracle, CoversEveryTemplateWithTwentyConversations) {
  ASSERT_GE(oracle().at("templates").size(), 3u);
  for (const auto& t : oracle().at("templates")) EXPECT_GE(t.at("cases").size(), 20u) << t.at("name");
}

// ---- errors: the message names the construct and the line

std::string parse_error(const std::string& source) {
  try {
    ChatTemplate tpl(source);
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << source;
  return "";
}

std::string render_error(const std::string& source, const std::string& context = "{}") {
  ChatTemplate tpl(source);
  try {
    tpl.render(context);
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << source;
  return "";
}

TEST(ChatTemplateErrors, UnsupportedFilterAtParseTime) {
  EXPECT_EQ(parse_error("line one\n\n{{ text | wordcount }}"),
            "[chat_template] unsupported filter 'wordcount' at line 3");
  EXPECT_EQ(parse_error("{{ x is prime }}"), "[chat_template] unsupported test 'prime' at line 1");
}

TEST(ChatTemplateErrors, UnsupportedAndUnknownTags) {
  EXPECT_EQ(parse_error("a\n{% call m() %}x{% endcall %}"), "[chat_template] unsupported tag 'call' at line 2");
  EXPECT_EQ(parse_error("{% if x %}\n{% macro m() %}x{% endmacro %}{% endif %}"),
            "[chat_template] macros must be defined at the top level of the template at line 2");
  EXPECT_EQ(parse_error("{% include 'x.jinja' %}"), "[chat_template] unsupported tag 'include' at line 1");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "[chat_template] unknown tag 'frobnicate' at line 1");
  EXPECT_EQ(parse_error("{% endfor %}"), "[chat_template] unknown tag 'endfor' at line 1");
}

TEST(ChatTemplateErrors, UnclosedBlocksAndTags) {
  EXPECT_EQ(parse_error("{% for x in xs %}\n{% if x %}{{ x }}{% endif %}"),
            "[chat_template] missing '{% endfor %}' for '{% for %}' opened at line 1");
  EXPECT_EQ(parse_error("\n{% if a %}x{% else %}y"),
            "[chat_template] missing '{% endif %}' for '{% if %}' opened at line 2");
  EXPECT_EQ(parse_error("x\n{{ name"), "[chat_template] unclosed '{{' tag opened at line 2");
  EXPECT_EQ(parse_error("{# never closed"), "[chat_template] unclosed comment opened at line 1");
  EXPECT_EQ(parse_error("{{ 'abc }}"), "[chat_template] unterminated string literal at line 1");
}

TEST(ChatTemplateErrors, SyntaxErrors) {
  EXPECT_EQ(parse_error("{{ 1 + }}"), "[chat_template] unexpected end of print statement at line 1");
  EXPECT_EQ(parse_error("{% if %}{% endif %}"), "[chat_template] unexpected end of statement block at line 1");
  EXPECT_EQ(parse_error("{% for x of xs %}{% endfor %}"), "[chat_template] unexpected 'of', expected 'in' at line 1");
  EXPECT_EQ(parse_error("{% break %}"), "[chat_template] 'break' outside a for loop at line 1");
  EXPECT_EQ(parse_error("{{ (1 }}"), "[chat_template] unexpected '}', expected ')' at line 1");
}

TEST(ChatTemplateErrors, RaiseExceptionIsSurfaced) {
  std::string msg =
      render_error("{% if messages[0].role != 'user' %}\n{{ raise_exception('Roles must alternate') }}\n{% endif %}",
                   R"({"messages": [{"role": "assistant", "content": ""}]})");
  EXPECT_EQ(msg, "[chat_template] raise_exception: Roles must alternate at line 2");
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheProblem) {
  EXPECT_EQ(render_error("{{ 'x'.format(1) }}"), "[chat_template] unsupported str method 'format' at line 1");
  EXPECT_EQ(render_error("\n{{ missing.attr }}"), "[chat_template] 'missing' is undefined at line 2");
  EXPECT_EQ(render_error("{{ m.a.b }}", R"({"m": {}})"),
            "[chat_template] 'dict object' has no attribute 'a' at line 1");
  EXPECT_EQ(render_error("{{ xs.append(1) }}", R"({"xs": []})"),
            "[chat_template] access to attribute 'append' of 'list' object is unsafe at line 1");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "[chat_template] integer division or modulo by zero at line 1");
}

TEST(ChatTemplateErrors, BadContext) {
  ChatTemplate tpl("{{ x }}");
  EXPECT_THROW(tpl.render("[1, 2]"), genesis::Error);
  EXPECT_THROW(tpl.render("{not json"), genesis::Error);
  EXPECT_THROW(tpl.render(R"({"n": 1E999999})"), genesis::Error);  // beyond a double: out_of_range
  EXPECT_THROW(tpl.apply({}, true, {}, "[]"), genesis::Error);
}

// ---- apply(): the same keyword arguments as transformers' apply_chat_template

const json& oracle_case(const std::string& tpl, const std::string& name) {
  for (const auto& t : oracle().at("templates"))
    if (t.at("name") == tpl)
      for (const auto& c : t.at("cases"))
        if (c.at("name") == name) return c;
  throw std::runtime_error("no oracle case " + tpl + "/" + name);
}

std::vector<ChatMessage> messages_of(const json& c) {
  std::vector<ChatMessage> out;
  for (const auto& m : c.at("context").at("messages"))
    out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  return out;
}

TEST(ChatTemplateApply, MatchesTheOracle) {
  ChatTemplate qwen3(read_file(kDir + "qwen3.jinja"));
  ChatTemplate qwen25(read_file(kDir + "qwen2.5-instruct.jinja"));
  for (const char* name : {"user_only", "multi_turn", "unicode_emoji", "empty_contents"}) {
    const json c = oracle_case("qwen3", name);
    EXPECT_EQ(qwen3.apply(messages_of(c), c.at("context").at("add_generation_prompt").get<bool>()),
              c.at("expected").get<std::string>())
        << name;
    const json c25 = oracle_case("qwen2.5-instruct", name);
    EXPECT_EQ(qwen25.apply(messages_of(c25), c25.at("context").at("add_generation_prompt").get<bool>()),
              c25.at("expected").get<std::string>())
        << name;
  }
  const json off = oracle_case("qwen3", "enable_thinking_false");
  EXPECT_EQ(qwen3.apply(messages_of(off), true, false), off.at("expected").get<std::string>());
  const json on = oracle_case("qwen3", "enable_thinking_true");
  EXPECT_EQ(qwen3.apply(messages_of(on), true, true), on.at("expected").get<std::string>());
  const json extra = oracle_case("qwen3", "extra_kwargs");
  EXPECT_EQ(qwen3.apply(messages_of(extra), true, {}, R"({"bos_token": "<|endoftext|>", "custom": {"a": 1}})"),
            extra.at("expected").get<std::string>());
}

TEST(ChatTemplateApply, ExtraContextOverridesAndAddsTools) {
  ChatTemplate tpl(
      "{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|{{ enable_thinking is defined }}|{{ "
      "tools | tojson }}");
  EXPECT_EQ(tpl.apply({{"user", "hi"}}, false), "True|True|False|False|null");
  EXPECT_EQ(tpl.apply({{"user", "hi"}}, true, true, R"({"tools": [{"name": "f"}]})"),
            "False|True|True|True|[{\"name\": \"f\"}]");
}

TEST(ChatTemplateApply, OneTemplateRendersFromSeveralThreads) {
  std::vector<Case> cases = conversation_cases();
  ChatTemplate qwen3(read_file(kDir + "qwen3.jinja"));
  std::string source = read_file(kDir + "qwen3.jinja");
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep)
        for (const Case& k : cases)
          if (k.template_source == source && !k.error && qwen3.render(k.context) != k.expected) ++mismatches;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ChatTemplateApply, StrftimeNowUsesTheLocalClock) {
  ChatTemplate tpl("{{ strftime_now('%Y') | int > 2000 }}");
  EXPECT_EQ(tpl.render("{}"), "True");
}

// ---- limits: a hostile template ends with an error naming the limit, never a crash, a hang or exhausted memory

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Renders with `limits` and returns the error message ("" when it rendered).
std::string limit_error(const std::string& source, const genesis::ChatTemplateLimits& limits = {},
                        const std::string& context = "{}") {
  try {
    ChatTemplate(source, limits).render(context);
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

constexpr size_t kStackScale = GENESIS_TEST_ASAN ? 8 : 1;

TEST(ChatTemplateLimits, UnboundedRecursionIsACallDepthError) {
  const std::string msg = limit_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_TRUE(has(msg, "call depth limit exceeded: macro 'f'") && has(msg, "max_call_depth (64)")) << msg;
  // The same on a thread with a small stack (512 KiB; AddressSanitizer's frames are several times
  // larger, so 8x that under it) still ends in the error.
  std::string on_thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(512 << 10) * kStackScale);
  pthread_t th;
  auto body = [](void* out) -> void* {
    *static_cast<std::string*>(out) = limit_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&th, &attr, body, &on_thread), 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_TRUE(has(on_thread, "call depth limit")) << on_thread;
  // Recursion that ends within the limit renders.
  EXPECT_EQ(ChatTemplate("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}")
                .render("{}")
                .size(),
            51u);
  genesis::ChatTemplateLimits small;
  small.max_call_depth = 5;
  EXPECT_TRUE(has(limit_error("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", small),
                  "max_call_depth (5)"));
  EXPECT_EQ(limit_error("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}", small), "");
}

TEST(ChatTemplateLimits, CallsLoopsOutputStringsAndLists) {
  EXPECT_TRUE(has(limit_error("{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}"
                              "{{ f(0) }}"),
                  "call count limit exceeded"));
  EXPECT_TRUE(has(limit_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"),
                  "loop iteration limit exceeded: over max_loop_iterations (1000000)"));
  genesis::ChatTemplateLimits small;
  small.max_loop_iterations = 10;
  EXPECT_EQ(limit_error("{% for a in range(10) %}{% endfor %}", small), "");
  EXPECT_TRUE(has(limit_error("{% for a in range(11) %}{% endfor %}", small), "max_loop_iterations (10)"));
  small.max_output_bytes = 100;
  EXPECT_TRUE(has(limit_error("{{ 'x' * 101 }}", small), "output size limit exceeded"));
  EXPECT_EQ(limit_error("{{ 'x' * 100 }}", small), "");
  EXPECT_TRUE(has(limit_error("{% for a in range(1000) %}{{ 'x' * 10000000 }}{% endfor %}"),
                  "output size limit exceeded: the rendered text is over max_output_bytes (67108864)"));
  // A doubling loop through a namespace: ~, +, *, replace and join all stop at the string limit.
  for (const char* step : {"ns.s ~ ns.s", "ns.s + ns.s", "ns.s * 2", "ns.s.replace('x', ns.s)", "[ns.s, ns.s]|join"}) {
    const std::string src = std::string("{% set ns = namespace(s='xy') %}{% for i in range(100) %}{% set ns.s = ") +
                            step + " %}{% endfor %}{{ ns.s }}";
    EXPECT_TRUE(has(limit_error(src), "string size limit exceeded")) << step;
  }
  EXPECT_TRUE(has(limit_error("{{ 'ab' * 1000000000000 }}"),
                  "a string of 2000000000000 bytes is over max_string_bytes (16777216)"));
  EXPECT_TRUE(has(limit_error("{{ 'x' | indent(100000000000) }}"), "string size limit exceeded"));
  EXPECT_TRUE(has(limit_error("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
                              "{% endfor %}"),
                  "list size limit exceeded"));
  EXPECT_TRUE(has(limit_error("{{ [0] * 100000000000 }}"), "max_list_items (1000000)"));
  small = {};
  small.max_total_bytes = 1000;
  EXPECT_TRUE(has(limit_error("{% for i in range(100) %}{% set x = 'y' * 100 %}{% endfor %}", small),
                  "total string size limit exceeded"));
}

TEST(ChatTemplateLimits, NestingIsBoundedWhileParsingAndRendering) {
  EXPECT_TRUE(
      has(parse_error("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}"), "parse depth limit exceeded"));
  EXPECT_TRUE(has(parse_error("{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}"), "parse depth limit"));
  EXPECT_TRUE(has(parse_error("{{ " + repeat("not ", 100000) + "1 }}"), "parse depth limit"));
  EXPECT_TRUE(has(parse_error("{{ 1" + repeat(" + 1", 100000) + " }}"), "expression depth limit exceeded"));
  EXPECT_TRUE(has(parse_error("{{ x" + repeat(".y", 100000) + " }}"), "expression depth limit"));
  EXPECT_TRUE(has(parse_error("{{ x" + repeat("|trim", 100000) + " }}"), "expression depth limit"));
  EXPECT_TRUE(
      has(parse_error(repeat("{% if 1 %}", 100000) + repeat("{% endif %}", 100000)), "block depth limit exceeded"));
  // Real templates nest far less than the limits allow.
  EXPECT_EQ(ChatTemplate("{{ " + repeat("(", 100) + "1" + repeat(")", 100) + " }}").render("{}"), "1");
  EXPECT_EQ(ChatTemplate("{{ 0" + repeat(" + 1", 200) + " }}").render("{}"), "200");
  EXPECT_TRUE(has(limit_error("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                              "{% endfor %}{{ ns.x }}"),
                  "value nesting limit exceeded"));
  EXPECT_TRUE(has(limit_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"),
                  "cannot store a namespace in a namespace attribute ('ns.me')"));
  EXPECT_TRUE(has(limit_error("{% set ns = namespace() %}{% set ns.l = [{'a': ns}] %}"), "cannot store a namespace"));
  EXPECT_TRUE(has(limit_error("{{ x }}", {}, "{\"x\": " + repeat("[", 10000) + repeat("]", 10000) + "}"),
                  "nested deeper than 256 levels"));
  genesis::ChatTemplateLimits small;
  small.max_nesting = 20;
  EXPECT_TRUE(has(limit_error("{{ 0" + repeat(" + 1", 30) + " }}", small), "nesting limit exceeded"));
}

TEST(ChatTemplateErrors, FloatLiteralsBeyondADoubleAreInfOrZeroAsInPython) {
  // jinja2 reads them with float(): '{{ 1E800 }} {{ 1e-800 }}' renders 'inf 0.0' (the lexer used to throw
  // std::out_of_range, found by the fuzzer).
  EXPECT_EQ(ChatTemplate("{{ 1E800 }} {{ 1e-800 }} {{ -1e999 }}").render("{}"), "inf 0.0 -inf");
}

TEST(ChatTemplateLimits, RealTemplatesRenderUnderTheDefaults) {
  // Every oracle conversation already renders (Oracle tests); here a long conversation does too.
  json msgs = json::array();
  for (int i = 0; i < 2000; ++i)
    msgs.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "turn " + std::to_string(i)}});
  for (const char* name : {"qwen2.5-instruct.jinja", "qwen3.jinja", "qwen3-coder-vllm.jinja", "llama3-instruct.jinja",
                           "gemma3-it.jinja", "llama2-chat.jinja"}) {
    ChatTemplate tpl(read_file(kDir + name));
    json ctx = {{"messages", msgs}, {"add_generation_prompt", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    EXPECT_GT(tpl.render(ctx.dump()).size(), 20000u) << name;
  }
}

}  // namespace
