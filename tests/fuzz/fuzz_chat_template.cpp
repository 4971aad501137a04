// fuzz_chat_template.cpp - any text as a Jinja chat template: ChatTemplate either refuses it with a
// genesis::Error (syntax, unsupported construct) or parses it, and then renders a short
// conversation (with and without the generation prompt, thinking on and off, and a tools list),
// where raise_exception and template errors are genesis::Errors too.
#include <optional>
#include <vector>

#include "fuzz_common.h"
#include "genesis/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<genesis::ChatTemplate> tpl;
  try {
    tpl.emplace(fuzz::bytes(data, size));
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
