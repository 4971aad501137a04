// genesis/chat_template.hpp - renders Hugging Face chat templates (a Jinja subset) as
// transformers does: jinja2 with trim_blocks, lstrip_blocks, its own tojson,
// raise_exception and strftime_now.  See docs/chat_templates.md for what is supported.
#pragma once

#include <cstdint>
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

/** What one render may use. Templates come with downloaded models, so a hostile one must end with a
 * genesis::Error naming the limit it crossed, never a crash, a hang or exhausted memory. The defaults are far
 * above what real chat templates need. (Parsing has fixed limits too: 64 nested blocks, 128 nested
 * parentheses/literals/arguments, expressions 256 operations deep.) */
struct ChatTemplateLimits {
  int64_t max_call_depth = 64;                 ///< macro calls in progress at once (recursion depth)
  int64_t max_calls = 100000;                  ///< macro calls in one render
  int64_t max_loop_iterations = 1000000;       ///< for-loop iterations in one render (all loops together)
  int64_t max_output_bytes = 64 << 20;         ///< the rendered text
  int64_t max_string_bytes = 16 << 20;         ///< any one string the template builds
  int64_t max_total_bytes = int64_t{1} << 30;  ///< all strings the template builds, together
  int64_t max_list_items = 1000000;            ///< any one list the template builds
  int64_t max_value_depth = 128;               ///< lists/dicts nested in one another
  int64_t max_nesting = 1000;                  ///< statements and expressions being evaluated at once
};

/** A parsed chat template; rendering is const and may run from several threads at once. */
class ChatTemplate {
 public:
  /** Parses a Jinja template; throws genesis::Error (GN_ERR_INVALID_ARGUMENT) naming the unsupported construct or
   * syntax error with its line, or the parse limit it crossed. */
  explicit ChatTemplate(const std::string& source, const ChatTemplateLimits& limits = {});
  /** Renders with a JSON object as the context ({"messages": [...], "add_generation_prompt": true, ...}); throws
   * genesis::Error on template errors, raise_exception and a crossed ChatTemplateLimits limit. */
  std::string render(const std::string& context_json) const;
  /** Renders messages as transformers' apply_chat_template does (tools and documents null unless given);
   * extra_context_json (a JSON object or "") is merged in last. */
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                    std::optional<bool> enable_thinking = {}, const std::string& extra_context_json = "") const;
  /** The template source as given. */
  const std::string& source() const { return source_; }
  /** The limits renders run under. */
  const ChatTemplateLimits& limits() const { return limits_; }

 private:
  std::string source_;
  ChatTemplateLimits limits_;
  std::shared_ptr<const chat::Program> program_;
};

}  // namespace genesis
