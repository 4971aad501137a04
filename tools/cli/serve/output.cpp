// output.cpp - a choice's tokens as content, reasoning and tool calls (output.h).
#include "output.h"

#include <nlohmann/json.hpp>
#include <random>

namespace genesis::cli::serve {

namespace {
constexpr const char* kThinkOpen = "<think>";
constexpr const char* kThinkClose = "</think>";
constexpr const char* kToolOpen = "<tool_call>";
constexpr const char* kToolClose = "</tool_call>";

// A tool call from the JSON text of a <tool_call> block: {"name": "...", "arguments": {...}}; false
// when it is not one.
bool parse_call(const std::string& text, ToolCall& call) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  call.name = j["name"].get<std::string>();
  if (call.name.empty()) return false;
  const nlohmann::json args = j.contains("arguments") ? j["arguments"] : nlohmann::json::object();
  if (args.is_string()) {  // already a JSON text
    if (nlohmann::json::parse(args.get<std::string>(), nullptr, false).is_discarded()) return false;
    call.arguments = args.get<std::string>();
  } else if (args.is_object()) {
    call.arguments = args.dump();
  } else {
    return false;
  }
  call.id = new_call_id();
  return true;
}
}  // namespace

std::string new_call_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += hex[rng() % 16];
  return id;
}

size_t partial_suffix(const std::string& text, const std::string& tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.compare(text.size() - n, n, tag, 0, n) == 0) return n;
  return 0;
}

ChoiceText::ChoiceText(const Tokenizer& tok, OutputOptions opts)
    : decoder_(tok, true),
      vocab_(tok.vocab_size()),
      opts_(std::move(opts)),
      think_(opts_.reasoning ? Think::kUndecided : Think::kDone) {
  if (!opts_.prefix.empty()) {
    Delta ignored;
    feed_tools(opts_.prefix, false, ignored);
  }
}

Delta ChoiceText::put(int64_t token) {
  Delta d;
  if (stopped_ || token < 0 || token >= vocab_) return d;  // past the tokenizer: an embedding's padding row
  feed_stop(decoder_.put(token), false, d);
  return d;
}

Delta ChoiceText::finish() {
  Delta d;
  if (!stopped_)
    feed_stop(decoder_.flush(), true, d);
  else
    feed_reasoning("", true, d);
  return d;
}

void ChoiceText::feed_stop(const std::string& piece, bool last, Delta& d) {
  stop_buf_ += piece;
  if (opts_.stop.empty()) {
    std::string t = std::move(stop_buf_);
    stop_buf_.clear();
    feed_reasoning(t, last, d);
    return;
  }
  size_t cut = std::string::npos;
  for (const std::string& s : opts_.stop)
    if (!s.empty()) cut = std::min(cut, stop_buf_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string t = stop_buf_.substr(0, cut);
    stop_buf_.clear();
    feed_reasoning(t, true, d);
    return;
  }
  size_t hold = 0;
  if (!last)
    for (const std::string& s : opts_.stop)
      if (!s.empty()) hold = std::max(hold, partial_suffix(stop_buf_, s));
  std::string t = stop_buf_.substr(0, stop_buf_.size() - hold);
  stop_buf_.erase(0, stop_buf_.size() - hold);
  feed_reasoning(t, last, d);
}

void ChoiceText::feed_reasoning(const std::string& text, bool last, Delta& d) {
  if (think_ == Think::kDone) {
    feed_tools(text, last, d);
    return;
  }
  think_buf_ += text;
  if (think_ == Think::kUndecided) {
    const size_t start = think_buf_.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) {
      if (last) {
        std::string t = std::move(think_buf_);
        think_buf_.clear();
        think_ = Think::kDone;
        feed_tools(t, last, d);
      }
      return;
    }
    const std::string rest = think_buf_.substr(start);
    if (rest.rfind(kThinkOpen, 0) == 0) {
      think_ = Think::kInside;
      think_buf_ = rest.substr(std::string(kThinkOpen).size());
    } else if (!last && std::string(kThinkOpen).rfind(rest, 0) == 0) {
      return;  // "<thi": wait
    } else {
      std::string t = std::move(think_buf_);
      think_buf_.clear();
      think_ = Think::kDone;
      feed_tools(t, last, d);
      return;
    }
  }
  // Inside <think>: reasoning up to </think>.
  const size_t close = think_buf_.find(kThinkClose);
  if (close != std::string::npos) {
    const std::string r = think_buf_.substr(0, close);
    reasoning_ += r, d.reasoning += r;
    std::string t = think_buf_.substr(close + std::string(kThinkClose).size());
    think_buf_.clear();
    think_ = Think::kDone;
    strip_newlines_ = true;
    feed_tools(t, last, d);
    return;
  }
  const size_t hold = last ? 0 : partial_suffix(think_buf_, kThinkClose);
  const std::string r = think_buf_.substr(0, think_buf_.size() - hold);
  reasoning_ += r, d.reasoning += r;
  think_buf_.erase(0, think_buf_.size() - hold);
}

void ChoiceText::emit_content(const std::string& text, Delta& d) {
  std::string t = text;
  if (strip_newlines_) {
    const size_t start = t.find_first_not_of("\r\n");
    if (start == std::string::npos) return;
    t.erase(0, start);
    strip_newlines_ = false;
  }
  content_ += t, d.content += t;
}

void ChoiceText::feed_tools(const std::string& text, bool last, Delta& d) {
  if (!opts_.tools) {
    emit_content(text, d);
    return;
  }
  tool_buf_ += text;
  while (true) {
    if (!in_tool_) {
      const size_t open = tool_buf_.find(kToolOpen);
      if (open == std::string::npos) {
        const size_t hold = last ? 0 : partial_suffix(tool_buf_, kToolOpen);
        emit_content(tool_buf_.substr(0, tool_buf_.size() - hold), d);
        tool_buf_.erase(0, tool_buf_.size() - hold);
        return;
      }
      emit_content(tool_buf_.substr(0, open), d);
      tool_buf_.erase(0, open);
      in_tool_ = true;
    }
    // tool_buf_ starts with <tool_call>.
    const size_t open_len = std::string(kToolOpen).size();
    const size_t close = tool_buf_.find(kToolClose, open_len);
    if (close == std::string::npos) {
      if (!last) return;
      ToolCall call;  // the output ended inside the block: a whole JSON object still counts
      if (parse_call(tool_buf_.substr(open_len), call)) {
        calls_.push_back(call);
        d.tool_calls.push_back(call);
      } else {
        emit_content(tool_buf_, d);
      }
      tool_buf_.clear();
      in_tool_ = false;
      return;
    }
    const size_t end = close + std::string(kToolClose).size();
    ToolCall call;
    if (parse_call(tool_buf_.substr(open_len, close - open_len), call)) {
      calls_.push_back(call);
      d.tool_calls.push_back(call);
      strip_newlines_ = true;
    } else {
      emit_content(tool_buf_.substr(0, end), d);
    }
    tool_buf_.erase(0, end);
    in_tool_ = false;
  }
}

}  // namespace genesis::cli::serve
