// genesis/chat_template.hpp - renders Hugging Face chat templates (a Jinja subset) as
// transformers does: jinja2 with trim_blocks, lstrip_blocks, its own tojson,
// raise_exception and strftime_now.  See docs/chat_templates.md for what is supported.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis {

/** One chat turn: a role ("system", "user", "assistant", "tool") and its text. */
struct ChatMessage {
  std::string role;
  std::string content;
};

namespace chat {
struct Program;
}

/** A parsed chat template; rendering is const and may run from several threads at once. */
class ChatTemplate {
 public:
  /** Parses a Jinja template; throws genesis::Error (GN_ERR_INVALID_ARGUMENT) naming the unsupported construct or
   * syntax error with its line. */
  explicit ChatTemplate(const std::string& source);
  /** Renders with a JSON object as the context ({"messages": [...], "add_generation_prompt": true, ...}); throws
   * genesis::Error on template errors and raise_exception. */
  std::string render(const std::string& context_json) const;
  /** Renders messages as transformers' apply_chat_template does (tools and documents null unless given);
   * extra_context_json (a JSON object or "") is merged in last. */
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                    std::optional<bool> enable_thinking = {}, const std::string& extra_context_json = "") const;
  /** The template source as given. */
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const chat::Program> program_;
};

}  // namespace genesis
