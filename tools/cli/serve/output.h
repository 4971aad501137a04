// output.h - one choice's generated tokens as the text an OpenAI response carries: UTF-8-whole
// pieces, cut at a stop string, the reasoning of <think>...</think> apart from the content, and
// Qwen's <tool_call>{json}</tool_call> blocks as tool calls (malformed ones stay content), streamed as
// OpenAI streams them: the name first, then the arguments' text piece by piece.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "genesis/tokenizer.hpp"

namespace genesis::cli::serve {

/** A tool call the model made. */
struct ToolCall {
  std::string id;         ///< "call_" and 24 hex digits
  std::string name;       ///< the function's name
  std::string arguments;  ///< its arguments, a JSON text
};

/** A piece of a tool call as a stream carries it: the first piece of call `index` holds its id and name,
 * the following ones further text of its arguments (their concatenation is the call's arguments). */
struct ToolCallDelta {
  size_t index = 0;       ///< the call's position among the choice's tool calls
  std::string id, name;   ///< set on the call's first piece only
  std::string arguments;  ///< more text of the arguments
};

/** What a choice adds to its message at one point of the stream. */
struct Delta {
  std::string content, reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
  /** Appends what `x` adds after this (argument pieces of the same call are joined). */
  void append(Delta x);
};

/** How a choice's text is split. */
struct OutputOptions {
  std::vector<std::string> stop;  ///< the text ends before the first of these
  bool reasoning = false;         ///< a leading <think>...</think> is reasoning
  bool tools = false;             ///< <tool_call>{json}</tool_call> blocks are tool calls
  std::string prefix;             ///< text the prompt already holds of the answer (a forced "<tool_call>\n")
};

/** Turns one choice's tokens into deltas. */
class ChoiceText {
 public:
  ChoiceText(const Tokenizer& tok, OutputOptions opts);
  /** Adds a token; returns what can be sent now (never half a UTF-8 character, never the start of a
   * possible stop string or tag). Tokens after a stop string are ignored. */
  Delta put(int64_t token);
  /** The end of the choice: returns whatever was held back. */
  Delta finish();
  /** A stop string ended the text. */
  bool stopped() const { return stopped_; }
  /** The whole message so far. */
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::vector<ToolCall>& tool_calls() const { return calls_; }

 private:
  void feed_stop(const std::string& piece, bool last, Delta& d);
  void feed_reasoning(const std::string& text, bool last, Delta& d);
  void feed_tools(const std::string& text, bool last, Delta& d);
  void emit_content(const std::string& text, Delta& d);

  StreamDecoder decoder_;
  int64_t vocab_;
  OutputOptions opts_;
  bool stopped_ = false;
  std::string stop_buf_;  // text held back: it may start a stop string
  enum class Think { kUndecided, kInside, kDone } think_;
  std::string think_buf_;
  bool strip_newlines_ = false;  // content right after </think>: its leading newlines are dropped
  std::string tool_buf_;         // text held back: a partial <tool_call> tag, or a whole block in progress
  bool in_tool_ = false;
  bool call_open_ = false;  // the block's name is out: its arguments stream as they come
  size_t args_at_ = 0;      // where the arguments start in tool_buf_
  ToolCall open_call_;      // the call being streamed (its arguments so far)
  std::string content_, reasoning_;
  std::vector<ToolCall> calls_;
};

/** A new tool-call id: "call_" and 24 random hex digits. */
std::string new_call_id();

/** The length of the longest suffix of `text` that is a proper prefix of `tag`. */
size_t partial_suffix(const std::string& text, const std::string& tag);

}  // namespace genesis::cli::serve
