// chat_template/chat_template.cpp - genesis::ChatTemplate: parse once, render with a JSON context
// (objects keep their key order, as Python's json.loads does, so tojson matches).
#include "genesis/chat_template.hpp"

#include <nlohmann/json.hpp>

#include "ast.h"
#include "render.h"

namespace genesis {

namespace {

using json = nlohmann::ordered_json;

// Context nesting past this is refused (the conversion below recurses once per level).
constexpr int kMaxContextDepth = 256;

chat::Value from_json(const json& j, int depth = 0) {
  using chat::Value;
  if (depth > kMaxContextDepth)
    chat::fail("the context is nested deeper than " + std::to_string(kMaxContextDepth) + " levels");
  switch (j.type()) {
    case json::value_t::null: return Value::none();
    case json::value_t::boolean: return Value::boolean(j.get<bool>());
    case json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) chat::fail("context integer " + std::to_string(u) + " is out of range");
      return Value::integer(static_cast<int64_t>(u));
    }
    case json::value_t::number_float: return Value::real(j.get<double>());
    case json::value_t::string: return Value::string(j.get<std::string>());
    case json::value_t::array: {
      chat::List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x, depth + 1));
      return Value::make_list(std::move(items));
    }
    case json::value_t::object: {
      auto d = std::make_shared<chat::Dict>();
      for (const auto& [k, v] : j.items()) d->items.emplace_back(k, from_json(v, depth + 1));
      return Value::make_dict(d);
    }
    default: chat::fail("unsupported JSON value in the context");
  }
}

json parse_object(const std::string& text, const char* what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // syntax, and numbers beyond a double (out_of_range)
    chat::fail(std::string(what) + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) chat::fail(std::string(what) + " must be a JSON object, got " + j.type_name());
  return j;
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, const ChatTemplateLimits& limits)
    : source_(source), limits_(limits), program_(chat::parse(source)) {}

std::string ChatTemplate::render(const std::string& context_json) const {
  chat::Value ctx = from_json(parse_object(context_json, "the context"));
  return chat::render_program(*program_, *ctx.dict, limits_);
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                std::optional<bool> enable_thinking, const std::string& extra_context_json) const {
  // The keyword arguments transformers' render_jinja_template passes.
  json ctx = json::object();
  json msgs = json::array();
  for (const ChatMessage& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  ctx["messages"] = std::move(msgs);
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  if (enable_thinking) ctx["enable_thinking"] = *enable_thinking;
  if (!extra_context_json.empty()) {
    json extra = parse_object(extra_context_json, "extra_context_json");
    for (auto& [k, v] : extra.items()) ctx[k] = v;
  }
  return render(ctx.dump());
}

}  // namespace genesis
