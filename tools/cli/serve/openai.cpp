// openai.cpp - OpenAI request bodies checked and turned into prompts and sampling (openai.h).
#include "openai.h"

#include <cmath>
#include <random>

namespace genesis::cli::serve {

namespace {

const char* type_of(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 500: return "server_error";
    case 503: return "server_error";
    default: return "invalid_request_error";
  }
}

[[noreturn]] void bad(const std::string& param, const std::string& message) { throw ApiError(400, message, param); }

// body[key] as a number in [lo, hi], or nullopt when absent or null.
std::optional<double> number(const json& body, const char* key, double lo, double hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number()) bad(key, std::string("'") + key + "' must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    bad(key, std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " +
                 v.dump());
  return x;
}

// body[key] as an integer in [lo, hi], or nullopt when absent or null.
std::optional<int64_t> integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number_integer()) bad(key, std::string("'") + key + "' must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad(key, std::string("'") + key + "' must be at most " + std::to_string(hi) + ", got " + v.dump());
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                 ", got " + v.dump());
  return x;
}

std::optional<bool> boolean(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_boolean()) bad(key, std::string("'") + key + "' must be a boolean");
  return body[key].get<bool>();
}

// The settings both endpoints share: sampling, stop, n, stream, penalties.
void parse_common(const json& body, const ModelInfo& m, ParsedRequest& r) {
  models::GenerationConfig& g = r.sub.cfg;
  const models::QwenGenerationDefaults& d = m.defaults;
  // Absent fields take the model's generation_config.json values, else OpenAI's defaults.
  g.temperature = number(body, "temperature", 0, 2).value_or(d.temperature.value_or(1.0));
  if (d.do_sample.has_value() && !*d.do_sample && !body.contains("temperature")) g.temperature = 0;
  g.top_p = number(body, "top_p", 0, 1).value_or(d.top_p.value_or(1.0));
  if (g.top_p <= 0) bad("top_p", "'top_p' must be greater than 0");
  const std::optional<int64_t> top_k = integer(body, "top_k", -1, int64_t{1} << 31);
  g.top_k = top_k ? std::max<int64_t>(0, *top_k) : d.top_k.value_or(0);
  g.min_p = number(body, "min_p", 0, 1).value_or(d.min_p.value_or(0.0));
  g.repetition_penalty = number(body, "repetition_penalty", 1e-6, 100).value_or(d.repetition_penalty.value_or(1.0));
  for (const char* p : {"presence_penalty", "frequency_penalty"})
    if (std::optional<double> v = number(body, p, -2, 2); v && *v != 0)
      bad(p, std::string("'") + p +
                 "' is not supported by this server (only 0): use 'repetition_penalty' (> 1 discourages repeats)");
  if (std::optional<int64_t> seed =
          integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    g.seed = static_cast<uint64_t>(*seed);
  else
    g.seed = std::random_device{}() * 0x100000000ull + std::random_device{}();
  r.sub.n = static_cast<int>(integer(body, "n", 1, 128).value_or(1));
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.out.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const json& x : s) {
        if (!x.is_string()) bad("stop", "'stop' must be a string or a list of strings");
        r.out.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "'stop' must be a string or a list of strings");
    }
    for (const std::string& x : r.out.stop)
      if (x.empty()) bad("stop", "'stop' strings must not be empty");
  }
  g.stop_strings = r.out.stop;
  g.ignore_eos = boolean(body, "ignore_eos").value_or(false);
  if (!g.ignore_eos) {
    if (m.tok->eos_token_id >= 0) g.stop_ids.push_back(m.tok->eos_token_id);
    for (const char* t : {"<|im_end|>", "<|endoftext|>"})
      if (int64_t id = m.tok->token_to_id(t); id >= 0) g.stop_ids.push_back(id);
  }
  if (body.contains("stop_token_ids") && !body["stop_token_ids"].is_null()) {
    if (!body["stop_token_ids"].is_array()) bad("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    for (const json& x : body["stop_token_ids"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= m.vocab_size)
        bad("stop_token_ids", "'stop_token_ids' must hold token ids of the vocabulary");
      g.stop_ids.push_back(x.get<int64_t>());
    }
  }
  g.cuda_graph = true;
  r.stream = boolean(body, "stream").value_or(false);
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) bad("stream_options", "'stream_options' must be an object");
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed when 'stream' is true");
    r.include_usage = boolean(so, "include_usage").value_or(false);
  }
  if (body.contains("model") && !body["model"].is_null() && !body["model"].is_string())
    bad("model", "'model' must be a string");
  r.model = body.contains("model") && body["model"].is_string() ? body["model"].get<std::string>() : m.served_name;
}

// Sets max_new_tokens from max_tokens (or max_completion_tokens) and checks the context.
void fit_context(const json& body, const ModelInfo& m, ParsedRequest& r, const char* what) {
  const int64_t n = static_cast<int64_t>(r.sub.prompt.size());
  if (n == 0) bad("prompt", "the prompt is empty");
  if (n >= m.context)
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(m.context) + " tokens. However, your " +
                       what + " resulted in " + std::to_string(n) + " tokens. Please reduce the length of the " + what +
                       ".",
                   "messages");
  std::optional<int64_t> max_tokens = integer(body, "max_tokens", 1, int64_t{1} << 40);
  const char* key = "max_tokens";
  if (std::optional<int64_t> mct = integer(body, "max_completion_tokens", 1, int64_t{1} << 40)) {
    max_tokens = mct;
    key = "max_completion_tokens";
  }
  if (max_tokens && n + *max_tokens > m.context)
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(m.context) + " tokens. However, you " +
                       "requested " + std::to_string(n + *max_tokens) + " tokens (" + std::to_string(n) + " in the " +
                       what + ", " + std::to_string(*max_tokens) + " in the completion). Please reduce the length " +
                       "of the " + what + " or '" + key + "'.",
                   key);
  r.sub.cfg.max_new_tokens = max_tokens.value_or(m.context - n);
}

// The text of a message's content: a string, a list of text parts, or null.
std::string content_text(const json& c, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad(where, "'" + where + "' must be a string or a list of content parts");
  std::string text;
  for (size_t k = 0; k < c.size(); ++k) {
    const json& p = c[k];
    const std::string pw = where + "[" + std::to_string(k) + "]";
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
      bad(pw, "'" + pw + "' must be an object with a 'type'");
    if (p["type"] != "text")
      bad(pw + ".type", "content parts of type '" + p["type"].get<std::string>() +
                            "' are not supported by this text-only model (only 'text')");
    if (!p.contains("text") || !p["text"].is_string()) bad(pw + ".text", "'" + pw + ".text' must be a string");
    text += p["text"].get<std::string>();
  }
  return text;
}

void check_tools(const json& tools) {
  if (!tools.is_array()) bad("tools", "'tools' must be a list");
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string w = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
      bad(w, "'" + w + "' must be {\"type\": \"function\", \"function\": {...}}");
    if (!t["function"].contains("name") || !t["function"]["name"].is_string())
      bad(w + ".function.name", "'" + w + ".function.name' must be a string");
  }
}

}  // namespace

json error_body(int status, const std::string& message, const std::string& param, const std::string& type) {
  return {{"error",
           {{"message", message},
            {"type", type.empty() ? type_of(status) : type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", status}}}};
}

json parse_body(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "body");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", "body");
  return j;
}

size_t check_model(const json& body, const ModelInfo& m) {
  if (!body.contains("model") || !body["model"].is_string()) return 0;
  const std::string want = body["model"].get<std::string>();
  std::string all;
  for (size_t i = 0; i < m.names.size(); ++i) {
    if (m.names[i] == want) return i;
    all += (i ? "', '" : "'") + m.names[i];
  }
  if (m.names.empty() && want == m.served_name) return 0;
  if (m.names.empty()) all = "'" + m.served_name;
  throw ApiError(404, "The model '" + want + "' does not exist (this server serves " + all + "')", "model");
}

ParsedRequest parse_chat(const json& body, const ModelInfo& m) {
  ParsedRequest r;
  parse_common(body, m, r);
  if (!m.tmpl) throw ApiError(400, "this model's tokenizer has no chat template: use /v1/completions", "messages");
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    bad("messages", "'messages' must be a non-empty list of messages");
  json msgs = json::array();
  const json& in = body["messages"];
  for (size_t i = 0; i < in.size(); ++i) {
    const json& msg = in[i];
    const std::string w = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) bad(w, "'" + w + "' must be an object");
    if (!msg.contains("role") || !msg["role"].is_string()) bad(w + ".role", "'" + w + ".role' must be a string");
    std::string role = msg["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      bad(w + ".role", "'" + w + ".role' must be system, developer, user, assistant or tool, got '" + role + "'");
    if (!msg.contains("content") && !(role == "assistant" && msg.contains("tool_calls")))
      bad(w + ".content", "'" + w + ".content' is missing");
    json out = {{"role", role}, {"content", content_text(msg.value("content", json()), i)}};
    if (role == "assistant" && msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
      if (!msg["tool_calls"].is_array()) bad(w + ".tool_calls", "'" + w + ".tool_calls' must be a list");
      json calls = json::array();
      for (json c : msg["tool_calls"]) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
          bad(w + ".tool_calls", "'" + w + ".tool_calls' entries must hold a 'function'");
        // Templates write the arguments with tojson: give them the object, as transformers' callers do.
        json& f = c["function"];
        if (f.contains("arguments") && f["arguments"].is_string()) {
          json a = json::parse(f["arguments"].get<std::string>(), nullptr, false);
          if (!a.is_discarded()) f["arguments"] = a;
        }
        calls.push_back(c);
      }
      out["tool_calls"] = calls;
    }
    if (role == "tool" && msg.contains("tool_call_id")) out["tool_call_id"] = msg["tool_call_id"];
    if (msg.contains("name") && msg["name"].is_string()) out["name"] = msg["name"];
    msgs.push_back(std::move(out));
  }
  json ctx = {{"messages", msgs}, {"add_generation_prompt", true}};
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object())
      bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    for (auto& [k, v] : body["chat_template_kwargs"].items())
      if (k != "messages") ctx[k] = v;
  }
  // Tools: into the template unless tool_choice is "none"; "required" and a named function start
  // the answer with the tool-call tag (and the name) in the prompt.
  std::string forced;
  if (body.contains("tools") && !body["tools"].is_null()) {
    check_tools(body["tools"]);
    json tools = body["tools"];
    std::string choice = "auto";
    if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
      const json& tc = body["tool_choice"];
      if (tc.is_string()) {
        choice = tc.get<std::string>();
        if (choice != "auto" && choice != "none" && choice != "required")
          bad("tool_choice", "'tool_choice' must be auto, none, required or {\"type\": \"function\", ...}");
      } else if (tc.is_object() && tc.contains("function") && tc["function"].is_object() &&
                 tc["function"].contains("name") && tc["function"]["name"].is_string()) {
        const std::string name = tc["function"]["name"].get<std::string>();
        json only = json::array();
        for (const json& t : tools)
          if (t["function"]["name"] == name) only.push_back(t);
        if (only.empty()) bad("tool_choice", "'tool_choice' names the function '" + name + "' that 'tools' lacks");
        tools = only;
        choice = "named";
        forced = "<tool_call>\n{\"name\": " + json(name).dump() + ", \"arguments\": ";
      } else {
        bad("tool_choice", "'tool_choice' must be auto, none, required or {\"type\": \"function\", ...}");
      }
    }
    if (choice != "none") {
      ctx["tools"] = tools;
      r.tools = true;
      if (choice == "required") forced = "<tool_call>\n";
    }
  } else if (body.contains("tool_choice") && !body["tool_choice"].is_null() && body["tool_choice"] != "none" &&
             body["tool_choice"] != "auto") {
    bad("tool_choice", "'tool_choice' needs 'tools'");
  }
  std::string prompt;
  try {
    prompt = m.tmpl->apply({}, true, std::nullopt, ctx.dump());
  } catch (const std::exception& e) {
    bad("messages", std::string("the chat template failed on these messages: ") + e.what());
  }
  prompt += forced;
  r.out.prefix = forced;
  r.out.tools = r.tools;
  r.out.reasoning = m.has_think;
  r.sub.prompt = m.tok->encode(prompt, false);
  fit_context(body, m, r, "messages");
  if (std::optional<bool> lp = boolean(body, "logprobs"); lp && *lp) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(integer(body, "top_logprobs", 0, 20).value_or(0));
  } else if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
    bad("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  }
  if (r.logprobs) {
    if (!m.logprobs) bad("logprobs", "'logprobs' is not supported by this server's engine");
    r.sub.logprobs = r.top_logprobs;
  }
  return r;
}

ParsedRequest parse_completion(const json& body, const ModelInfo& m) {
  ParsedRequest r;
  parse_common(body, m, r);
  if (!body.contains("prompt")) bad("prompt", "'prompt' is missing");
  json p = body["prompt"];
  // A one-prompt list stands for its prompt.
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = p[0];
  if (p.is_string()) {
    r.sub.prompt = m.tok->encode(p.get<std::string>(), false);
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    for (const json& x : p) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= m.vocab_size)
        bad("prompt", "'prompt' token ids must be integers from 0 to " + std::to_string(m.vocab_size - 1));
      r.sub.prompt.push_back(x.get<int64_t>());
    }
  } else if (p.is_array() && p.size() > 1) {
    bad("prompt", "'prompt' holds several prompts: send one per request");
  } else {
    bad("prompt", "'prompt' must be a string or a list of token ids");
  }
  if (boolean(body, "echo").value_or(false)) bad("echo", "'echo' is not supported by this server");
  if (body.contains("suffix") && !body["suffix"].is_null()) bad("suffix", "'suffix' is not supported by this server");
  if (body.contains("best_of") && !body["best_of"].is_null() && body["best_of"] != body.value("n", json(1)))
    bad("best_of", "'best_of' is not supported by this server (only equal to n)");
  fit_context(body, m, r, "prompt");
  if (std::optional<int64_t> lp = integer(body, "logprobs", 0, 20)) {
    if (!m.logprobs) bad("logprobs", "'logprobs' is not supported by this server's engine");
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*lp);
    r.sub.logprobs = r.top_logprobs;
  }
  return r;
}

}  // namespace genesis::cli::serve
