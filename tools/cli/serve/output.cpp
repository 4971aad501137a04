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
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  call.name = j["name"].get<std::string>();
  if (call.name.empty()) return false;
  const nlohmann::ordered_json args = j.contains("arguments") ? j["arguments"] : nlohmann::ordered_json::object();
  if (args.is_string()) {  // already a JSON text
    if (nlohmann::ordered_json::parse(args.get<std::string>(), nullptr, false).is_discarded()) return false;
    call.arguments = args.get<std::string>();
  } else if (args.is_object()) {
    call.arguments = args.dump();
  } else {
    return false;
  }
  call.id = new_call_id();
  return true;
}

enum class Header { kNeedMore, kNoMatch, kMatch };

// Reads the start of a block's JSON, text[from, end): `{"name": "<name>", "arguments": {` (any spacing).
// kMatch sets `name` and `args_at` (the offset of the arguments' "{"); kNeedMore: the text so far
// could still become one; kNoMatch: another shape (string arguments, other key order), parsed whole.
Header scan_header(const std::string& text, size_t from, size_t end, std::string& name, size_t& args_at) {
  size_t i = from;
  auto ws = [&] {
    while (i < end && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
    return i < end;
  };
  auto lit = [&](const std::string& w) {  // kMatch: w is there; kNeedMore: a prefix of it ends the text
    const size_t n = std::min(w.size(), end - i);
    if (text.compare(i, n, w, 0, n) != 0) return Header::kNoMatch;
    if (n < w.size()) return Header::kNeedMore;
    i += n;
    return Header::kMatch;
  };
  Header h;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit("{")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit("\"name\"")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit(":")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if (text[i] != '"') return Header::kNoMatch;
  const size_t name_at = i++;
  while (i < end && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  if (i >= end) return Header::kNeedMore;
  const nlohmann::json n = nlohmann::json::parse(text.substr(name_at, i + 1 - name_at), nullptr, false);
  if (!n.is_string() || n.get<std::string>().empty()) return Header::kNoMatch;
  ++i;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit(",")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit("\"arguments\"")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if ((h = lit(":")) != Header::kMatch) return h;
  if (!ws()) return Header::kNeedMore;
  if (text[i] != '{') return Header::kNoMatch;
  name = n.get<std::string>();
  args_at = i;
  return Header::kMatch;
}

// The arguments' text as far as it is sure: without trailing space, the block's own closing "}" (when
// it is the last one yet) and the space before it. A prefix of what it will be once more text comes.
std::string sure_arguments(const std::string& text) {
  size_t n = text.find_last_not_of(" \t\r\n");
  if (n == std::string::npos) return "";
  if (text[n] == '}') {
    if (n == 0) return "";
    const size_t m = text.find_last_not_of(" \t\r\n", n - 1);
    return m == std::string::npos ? "" : text.substr(0, m + 1);
  }
  return text.substr(0, n + 1);
}
}  // namespace

void Delta::append(Delta x) {
  content += x.content, reasoning += x.reasoning;
  for (ToolCallDelta& t : x.tool_calls) {
    if (!tool_calls.empty() && tool_calls.back().index == t.index && t.id.empty())
      tool_calls.back().arguments += t.arguments;
    else
      tool_calls.push_back(std::move(t));
  }
}

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
    const bool complete = close != std::string::npos || last;
    // The block's text so far, less a partial closing tag.
    const size_t body_end =
        close != std::string::npos ? close : tool_buf_.size() - (last ? 0 : partial_suffix(tool_buf_, kToolClose));
    if (!call_open_) {
      std::string name;
      const Header h = scan_header(tool_buf_, open_len, body_end, name, args_at_);
      if (h == Header::kMatch) {  // the name goes out now, the arguments as they come
        call_open_ = true;
        open_call_ = {new_call_id(), name, ""};
        d.tool_calls.push_back({calls_.size(), open_call_.id, open_call_.name, ""});
      } else if (!complete) {
        return;
      }
    }
    if (call_open_) {
      const std::string sure = sure_arguments(tool_buf_.substr(args_at_, body_end - args_at_));
      if (sure.size() > open_call_.arguments.size()) {
        const std::string piece = sure.substr(open_call_.arguments.size());
        open_call_.arguments += piece;
        d.tool_calls.push_back({calls_.size(), "", "", piece});
      }
      if (!complete) return;
      // Once its name is out a block stays a tool call; its arguments are the text the model wrote.
      calls_.push_back(open_call_);
      call_open_ = false;
    } else {
      // Another shape: the block is parsed whole, a call at once or content.
      const std::string body = tool_buf_.substr(open_len, body_end - open_len);
      ToolCall call;
      if (parse_call(body, call)) {
        calls_.push_back(call);
        d.tool_calls.push_back({calls_.size() - 1, call.id, call.name, call.arguments});
      } else {
        emit_content(
            close != std::string::npos ? tool_buf_.substr(0, close + std::string(kToolClose).size()) : tool_buf_, d);
        if (close == std::string::npos) {
          tool_buf_.clear();
          in_tool_ = false;
          return;
        }
        tool_buf_.erase(0, close + std::string(kToolClose).size());
        in_tool_ = false;
        continue;
      }
    }
    if (close == std::string::npos) {  // the output ended inside the block
      tool_buf_.clear();
      in_tool_ = false;
      return;
    }
    tool_buf_.erase(0, close + std::string(kToolClose).size());
    in_tool_ = false;
    strip_newlines_ = true;
  }
}

}  // namespace genesis::cli::serve
