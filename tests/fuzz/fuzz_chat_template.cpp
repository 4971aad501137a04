// fuzz_chat_template.cpp - any text as a Jinja chat template: ChatTemplate either refuses it with a
// genesis::Error (syntax, unsupported construct) or parses it, and then renders a short
// conversation (with and without the generation prompt, thinking on and off, and a tools list),
// where raise_exception and template errors are genesis::Errors too.  A hostile template (unbounded
// recursion, nested loops, doubling strings or lists, deep nesting: corpus/chat_template/limit_*) must end
// in the genesis::Error of a ChatTemplateLimits limit.  The limits that bound work and memory are scaled
// down so every input fits libFuzzer's per-input timeout and memory limit; those that bound the stack
// (call depth, nesting, value depth) and the parser's stay at their defaults, so the fuzzer checks them
// as shipped.
#include <optional>
#include <vector>

#include "fuzz_common.h"
#include "genesis/chat_template.hpp"

namespace {

genesis::ChatTemplateLimits fuzz_limits() {
  genesis::ChatTemplateLimits l;
  l.max_calls = 5000;
  l.max_loop_iterations = 5000;
  l.max_output_bytes = 1 << 20;
  l.max_string_bytes = 256 << 10;
  l.max_total_bytes = 8 << 20;
  l.max_list_items = 5000;
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<genesis::ChatTemplate> tpl;
  try {
    tpl.emplace(fuzz::bytes(data, size), fuzz_limits());
  } catch (const genesis::Error&) {
    return 0;
  }
  const std::vector<genesis::ChatMessage> messages = {{"system", "You are terse."},
                                                      {"user", "Hi <b>there</b> 你好"},
                                                      {"assistant", "<think>\nok\n</think>\n\nHello."},
                                                      {"user", "And \"quotes\" \\ and {{ braces }}?"}};
  const char* tools = R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})";
  try {
    (void)tpl->apply(messages, true);
  } catch (const genesis::Error&) {
  }
  try {
    (void)tpl->apply(messages, false, false, tools);
  } catch (const genesis::Error&) {
  }
  try {
    (void)tpl->render("{}");
  } catch (const genesis::Error&) {
  }
  return 0;
}
