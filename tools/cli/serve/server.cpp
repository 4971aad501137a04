// server.cpp - `genesis serve`: the HTTP routes of an OpenAI-compatible server over the serving
// engine (cpp-httplib), its streaming (server-sent events) and its shutdown on SIGINT/SIGTERM.
#include "server.h"

#include <CLI/CLI.hpp>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "genesis/chat_template.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/tokenizer.hpp"
#include "metrics.h"
#include "openai.h"
#include "output.h"

namespace genesis::cli::serve {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_signalled{false};

void on_signal(int) { g_signalled.store(true); }

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string random_hex(size_t n) {
  std::string id = new_call_id();  // "call_" + 24 hex digits
  return id.substr(5, n);
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param = "") {
  res.status = status;
  res.set_content(dump(error_body(status, message, param)), "application/json");
}

// One request's events, handed from the engine's thread to the HTTP thread that answers it.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;
  int finished = 0;
};

// One choice being answered.
struct Choice {
  std::optional<ChoiceText> text;
  std::string engine_reason;  // the engine's finish reason once finished
  bool finished = false, reported = false, started = false;
  int64_t tokens = 0;
  json logprobs = json::array();  // chat: the content entries; completions: unused
  json lp_tokens = json::array(), lp_values = json::array(), lp_top = json::array();  // completions
};

// Everything the routes share.
class Server {
 public:
  explicit Server(ServeOptions& o) : o_(o) {}

  int run(const GlobalOptions& g);

 private:
  void routes();
  bool authorized(const httplib::Request& req) const;
  void completions(const httplib::Request& req, httplib::Response& res, bool chat);
  std::string token_text(int64_t id) const;
  json token_logprob(int64_t id, double lp) const;
  json logprob_entry(const Event& e) const;
  void on_token(const Event& e, Choice& c, bool chat, const ParsedRequest& pr);
  std::string finish_reason(const Choice& c) const;

  ServeOptions& o_;
  httplib::Server svr_;
  Metrics metrics_;
  std::atomic<bool> ready_{false}, stopping_{false};
  std::string api_key_, fingerprint_;
  // A model the API serves: the base ([0]) or the base with an adapter merged, each on its own engine.
  struct Served {
    std::string name, root, parent;  // parent: the base's name, for an adapter
    std::unique_ptr<models::QwenForCausalLM> model;
    std::unique_ptr<Backend> backend;
  };
  json model_card(const Served& s) const;
  std::vector<Served> served_;
  std::optional<Tokenizer> tok_;
  std::optional<ChatTemplate> tmpl_;
  ModelInfo info_;
  std::atomic<int64_t> next_rid_{1};
};

bool Server::authorized(const httplib::Request& req) const {
  if (api_key_.empty()) return true;
  const std::string want = "Bearer " + api_key_;
  const std::string got = req.get_header_value("Authorization");
  unsigned diff = got.size() != want.size();
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(want[i]) ^ (i < got.size() ? got[i] : 0);
  return diff == 0;
}

std::string Server::token_text(int64_t id) const {
  // Ids past the tokenizer's vocabulary (padding rows of the embedding) have no text.
  return id >= 0 && id < tok_->vocab_size() ? tok_->decode({id}) : std::string();
}

json Server::token_logprob(int64_t id, double lp) const {
  json b = json::array();
  if (id >= 0 && id < tok_->vocab_size())
    for (unsigned char c : tok_->token_bytes(id)) b.push_back(c);
  return {{"token", token_text(id)}, {"logprob", lp}, {"bytes", b}};
}

json Server::logprob_entry(const Event& e) const {
  json entry = token_logprob(e.token, e.logprob);
  json top = json::array();
  for (const TokenLogprob& t : e.top) top.push_back(token_logprob(t.id, t.logprob));
  entry["top_logprobs"] = top;
  return entry;
}

std::string Server::finish_reason(const Choice& c) const {
  if (c.text->stopped()) return c.text->tool_calls().empty() ? "stop" : "tool_calls";
  if (c.engine_reason == "stop" && !c.text->tool_calls().empty()) return "tool_calls";
  if (c.engine_reason == "stop" || c.engine_reason == "length") return c.engine_reason;
  return "abort";
}

// A model's entry in /v1/models (vLLM's fields: root, parent for an adapter, max_model_len).
json Server::model_card(const Served& s) const {
  return {{"id", s.name},
          {"object", "model"},
          {"created", unix_time()},
          {"owned_by", "genesis"},
          {"root", s.root},
          {"parent", s.parent.empty() ? json(nullptr) : json(s.parent)},
          {"max_model_len", info_.context}};
}

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

// A stream's tool-call pieces as OpenAI streams them: a call's first piece with its index, id, type and
// name, the following ones with the index and more of the arguments.
json tool_call_deltas_json(const std::vector<ToolCallDelta>& calls) {
  json out = json::array();
  for (const ToolCallDelta& c : calls) {
    if (!c.id.empty())
      out.push_back({{"index", c.index},
                     {"id", c.id},
                     {"type", "function"},
                     {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    else
      out.push_back({{"index", c.index}, {"function", {{"arguments", c.arguments}}}});
  }
  return out;
}

void Server::completions(const httplib::Request& req, httplib::Response& res, bool chat) {
  if (!ready_) return send_error(res, 503, "the model is still loading");
  const Clock::time_point t0 = Clock::now();
  const json body = parse_body(req.body);
  ParsedRequest pr = chat ? parse_chat(body, info_) : parse_completion(body, info_);
  Backend* backend = served_[check_model(body, info_)].backend.get();
  const int n = pr.sub.n;
  const int64_t prompt_len = static_cast<int64_t>(pr.sub.prompt.size());
  if (pr.sub.cfg.stop_strings.size())
    pr.sub.cfg.decode = [this](const std::vector<int64_t>& ids) {
      std::vector<int64_t> known;  // ids past the tokenizer (an embedding's padding rows) have no text
      for (int64_t id : ids)
        if (id >= 0 && id < tok_->vocab_size()) known.push_back(id);
      return tok_->decode(known, true);
    };
  auto pending = std::make_shared<Pending>();
  int64_t id = 0;
  try {
    id = backend->submit(pr.sub, [pending](const Event& e) {
      std::lock_guard<std::mutex> lock(pending->mu);
      pending->events.push_back(e);
      if (e.finished) ++pending->finished;
      pending->cv.notify_all();
    });
  } catch (const QueueFull& e) {
    res.set_header("Retry-After", "1");
    throw ApiError(429, std::string("the server is busy: ") + e.what() + "; retry later");
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "messages");
  }
  const std::string rid = (chat ? "chatcmpl-" : "cmpl-") + random_hex(24);
  const int64_t created = unix_time();

  // The state of the request's choices, advanced with each event on the answering thread.
  struct State {
    std::vector<Choice> choices;
    int finished = 0;
    bool first_token = true;
    Clock::time_point last_token;
    int64_t generated = 0;
  };
  auto st = std::make_shared<State>();
  st->choices.resize(static_cast<size_t>(n));
  for (Choice& c : st->choices) c.text.emplace(*tok_, pr.out);

  // Takes the events that arrived (waiting up to `wait` for one); returns them.
  auto take = [pending](std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(pending->mu);
    pending->cv.wait_for(lock, wait, [&] { return !pending->events.empty(); });
    std::deque<Event> got;
    got.swap(pending->events);
    return got;
  };
  auto note_token = [this, st, t0] {
    const Clock::time_point now = Clock::now();
    if (st->first_token) {
      metrics_.time_to_first_token(std::chrono::duration<double>(now - t0).count());
      st->first_token = false;
    } else {
      metrics_.inter_token(std::chrono::duration<double>(now - st->last_token).count());
    }
    st->last_token = now;
    ++st->generated;
  };
  auto usage = [st, prompt_len] {
    return json{{"prompt_tokens", prompt_len},
                {"completion_tokens", st->generated},
                {"total_tokens", prompt_len + st->generated}};
  };

  if (!pr.stream) {
    bool error = false;
    while (st->finished < n) {
      for (const Event& e : take(std::chrono::milliseconds(100))) {
        Choice& c = st->choices[static_cast<size_t>(e.index)];
        if (e.has_token) {
          note_token();
          if (!c.text->stopped()) {
            c.text->put(e.token);
            ++c.tokens;
            if (pr.logprobs) {
              if (chat) {
                c.logprobs.push_back(logprob_entry(e));
              } else {
                c.lp_tokens.push_back(token_text(e.token));
                c.lp_values.push_back(e.logprob);
                json top = json::object();
                for (const TokenLogprob& t : e.top) top[token_text(t.id)] = t.logprob;
                c.lp_top.push_back(top);
              }
            }
          }
        }
        if (e.finished) {
          c.text->finish();
          c.finished = true;
          c.engine_reason = e.finish_reason;
          error |= e.finish_reason == "error";
          ++st->finished;
        }
      }
      if (stopping_) backend->cancel(id);
    }
    metrics_.add_tokens(prompt_len, st->generated);
    if (error) throw ApiError(500, "the engine failed on this request; the server keeps serving");
    json choices = json::array();
    for (int i = 0; i < n; ++i) {
      Choice& c = st->choices[static_cast<size_t>(i)];
      json ch = {{"index", i}, {"finish_reason", finish_reason(c)}};
      if (chat) {
        json msg = {{"role", "assistant"}};
        const bool calls = !c.text->tool_calls().empty();
        msg["content"] = calls && c.text->content().empty() ? json(nullptr) : json(c.text->content());
        if (!c.text->reasoning().empty()) msg["reasoning_content"] = c.text->reasoning();
        if (calls) msg["tool_calls"] = tool_calls_json(c.text->tool_calls());
        ch["message"] = msg;
        ch["logprobs"] = pr.logprobs ? json{{"content", c.logprobs}} : json(nullptr);
      } else {
        ch["text"] = c.text->content();
        ch["logprobs"] = pr.logprobs ? json{{"tokens", c.lp_tokens},
                                            {"token_logprobs", c.lp_values},
                                            {"top_logprobs", c.lp_top},
                                            {"text_offset", json::array()}}
                                     : json(nullptr);
      }
      choices.push_back(ch);
    }
    json out = {{"id", rid},
                {"object", chat ? "chat.completion" : "text_completion"},
                {"created", created},
                {"model", pr.model},
                {"system_fingerprint", fingerprint_},
                {"choices", choices},
                {"usage", usage()}};
    res.set_content(dump(out), "application/json");
    return;
  }

  // Streaming: server-sent events, one chunk per step of events (a token or more per choice).
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto done = std::make_shared<bool>(false);
  const std::string object = chat ? "chat.completion.chunk" : "text_completion";
  auto chunk = [rid, created, object, model = pr.model, fp = fingerprint_, inc = pr.include_usage](json choices) {
    json j = {{"id", rid},      {"object", object},         {"created", created},
              {"model", model}, {"system_fingerprint", fp}, {"choices", std::move(choices)}};
    if (inc) j["usage"] = nullptr;
    return "data: " + dump(j) + "\n\n";
  };
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st, pending, pr, chat, n, id, backend, take, note_token, usage, chunk, done, prompt_len,
       req_id = res.get_header_value("x-request-id")](size_t, httplib::DataSink& sink) {
        if (*done) {
          sink.done();
          return true;
        }
        if (stopping_) backend->cancel(id);
        std::string out;
        if (chat)  // the role comes first, in a chunk of its own per choice
          for (int i = 0; i < n; ++i) {
            Choice& c = st->choices[static_cast<size_t>(i)];
            if (c.started) continue;
            c.started = true;
            out += chunk(json::array({{{"index", i},
                                       {"delta", {{"role", "assistant"}, {"content", ""}}},
                                       {"logprobs", nullptr},
                                       {"finish_reason", nullptr}}}));
          }
        bool error = false;
        // Per choice, what this step adds.
        std::vector<Delta> deltas(static_cast<size_t>(n));
        std::vector<json> lps(static_cast<size_t>(n), json::array());
        std::vector<json> clp(static_cast<size_t>(n), json());
        for (const Event& e : take(std::chrono::milliseconds(50))) {
          Choice& c = st->choices[static_cast<size_t>(e.index)];
          Delta& d = deltas[static_cast<size_t>(e.index)];
          auto merge = [&d](Delta x) { d.append(std::move(x)); };
          if (e.has_token) {
            note_token();
            if (!c.text->stopped()) {
              merge(c.text->put(e.token));
              ++c.tokens;
              if (pr.logprobs) {
                if (chat) {
                  lps[static_cast<size_t>(e.index)].push_back(logprob_entry(e));
                } else {
                  json& l = clp[static_cast<size_t>(e.index)];
                  if (l.is_null())
                    l = {{"tokens", json::array()},
                         {"token_logprobs", json::array()},
                         {"top_logprobs", json::array()},
                         {"text_offset", json::array()}};
                  l["tokens"].push_back(token_text(e.token));
                  l["token_logprobs"].push_back(e.logprob);
                  json top = json::object();
                  for (const TokenLogprob& t : e.top) top[token_text(t.id)] = t.logprob;
                  l["top_logprobs"].push_back(top);
                }
              }
            }
          }
          if (e.finished) {
            merge(c.text->finish());
            c.finished = true;
            c.engine_reason = e.finish_reason;
            error |= e.finish_reason == "error";
            ++st->finished;
          }
        }
        for (int i = 0; i < n; ++i) {
          Choice& c = st->choices[static_cast<size_t>(i)];
          const Delta& d = deltas[static_cast<size_t>(i)];
          const bool ending = c.finished && !c.reported;
          const bool has_lp = chat ? !lps[static_cast<size_t>(i)].empty() : !clp[static_cast<size_t>(i)].is_null();
          if (d.empty() && !ending && !has_lp) continue;
          json ch = {{"index", i}};
          if (chat) {
            json delta = json::object();
            if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
            if (!d.content.empty() || (d.reasoning.empty() && d.tool_calls.empty() && has_lp))
              delta["content"] = d.content;
            if (!d.tool_calls.empty()) delta["tool_calls"] = tool_call_deltas_json(d.tool_calls);
            ch["delta"] = delta;
            ch["logprobs"] = has_lp ? json{{"content", lps[static_cast<size_t>(i)]}} : json(nullptr);
          } else {
            ch["text"] = d.content;
            ch["logprobs"] = has_lp ? clp[static_cast<size_t>(i)] : json(nullptr);
          }
          ch["finish_reason"] = ending ? json(finish_reason(c)) : json(nullptr);
          if (ending) c.reported = true;
          out += chunk(json::array({ch}));
        }
        if (error) {
          std::fprintf(stderr, "serve: %s stream -> 500: the engine failed on this request\n", req_id.c_str());
          out +=
              "data: " + dump(error_body(500, "the engine failed on this request; the server keeps serving")) + "\n\n";
        }
        if (st->finished == n) {
          metrics_.add_tokens(prompt_len, st->generated);
          if (pr.include_usage) {
            json u = json::parse(chunk(json::array()).substr(6));
            u["usage"] = usage();
            out += "data: " + dump(u) + "\n\n";
          }
          out += "data: [DONE]\n\n";
          *done = true;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          backend->cancel(id);
          return false;
        }
        if (out.empty() && !sink.is_writable()) {  // the client went away while nothing was sent
          backend->cancel(id);
          return false;
        }
        if (*done) sink.done();
        return true;
      },
      [backend, id, done](bool success) {
        if (!success || !*done) backend->cancel(id);
      });
}

void Server::routes() {
  svr_.set_payload_max_length(static_cast<size_t>(o_.max_body_bytes));
  svr_.new_task_queue = [n = o_.http_threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  svr_.set_keep_alive_timeout(2);
  svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    res.set_header("x-request-id", "req-" + std::to_string(next_rid_++));
    if (req.path == "/health" || (req.path == "/" && req.method == "GET") || authorized(req))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "Incorrect API key provided: pass it as 'Authorization: Bearer KEY'");
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr_.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string msg = res.status == 413   ? "the request body is larger than the server's limit"
                      : res.status == 404 ? "no route " + req.method + " " + req.path
                                          : "HTTP error " + std::to_string(res.status);
    if (res.status == 404 && (req.method == "GET" || req.method == "POST")) msg += " (see GET /v1/models)";
    send_error(res, res.status, msg);
  });
  svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      res.status = e.status;
      res.set_content(dump(error_body(e.status, e.what(), e.param, e.type)), "application/json");
    } catch (const std::exception& e) {
      send_error(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      send_error(res, 500, "internal error");
    }
  });
  svr_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    std::string path = req.path;
    if (path != "/" && path != "/health" && path != "/metrics" && path != "/tokenize" && path != "/detokenize" &&
        path.rfind("/v1/", 0) != 0)
      path = "other";
    metrics_.request_done(path, res.status);
    if (res.status >= 400 && !(req.path == "/health" && res.status == 503)) {
      const json b = json::parse(res.body, nullptr, false);
      const std::string msg =
          b.is_object() && b.contains("error") ? b["error"].value("message", "") : std::string("(no message)");
      std::fprintf(stderr, "serve: %s %s %s -> %d: %s\n", res.get_header_value("x-request-id").c_str(),
                   req.method.c_str(), req.path.c_str(), res.status, msg.c_str());
    }
  });

  svr_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the model is still loading");
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  svr_.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kChatHtml, "text/html; charset=utf-8");
  });
  svr_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the model is still loading");
    json data = json::array();
    for (const Served& s : served_) data.push_back(model_card(s));
    res.set_content(dump({{"object", "list"}, {"data", data}}), "application/json");
  });
  svr_.Get("/v1/models/(.*)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the model is still loading");
    for (const Served& s : served_)
      if (req.matches[1] == s.name) return res.set_content(dump(model_card(s)), "application/json");
    send_error(res, 404, "The model '" + std::string(req.matches[1]) + "' does not exist", "model");
  });
  svr_.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { completions(req, res, true); });
  svr_.Post("/v1/completions",
            [this](const httplib::Request& req, httplib::Response& res) { completions(req, res, false); });
  svr_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the model is still loading");
    const json body = parse_body(req.body);
    check_model(body, info_);
    if (body.contains("messages")) {  // a chat (with its tools): the prompt a chat completion would run
      const ParsedRequest pr = parse_chat(body, info_);
      res.set_content(
          dump({{"tokens", pr.sub.prompt}, {"count", pr.sub.prompt.size()}, {"max_model_len", info_.context}}),
          "application/json");
      return;
    }
    if (!body.contains("prompt") || !body["prompt"].is_string())
      throw ApiError(400, "'prompt' (a string) or 'messages' (a chat) is needed", "prompt");
    bool special = true;
    if (body.contains("add_special_tokens")) {
      if (!body["add_special_tokens"].is_boolean())
        throw ApiError(400, "'add_special_tokens' must be a boolean", "add_special_tokens");
      special = body["add_special_tokens"].get<bool>();
    }
    const std::vector<int64_t> ids = tok_->encode(body["prompt"].get<std::string>(), special);
    res.set_content(dump({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", info_.context}}),
                    "application/json");
  });
  svr_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the model is still loading");
    const json body = parse_body(req.body);
    check_model(body, info_);
    if (!body.contains("tokens") || !body["tokens"].is_array())
      throw ApiError(400, "'tokens' must be a list of token ids", "tokens");
    std::vector<int64_t> ids;
    for (const json& x : body["tokens"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tok_->vocab_size())
        throw ApiError(400, "'tokens' must hold ids from 0 to " + std::to_string(tok_->vocab_size() - 1), "tokens");
      ids.push_back(x.get<int64_t>());
    }
    res.set_content(dump({{"prompt", tok_->decode(ids)}}), "application/json");
  });
  svr_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    BackendStats s;
    int with_engine = 0;
    for (const Served& m : served_) {  // written while loading, before ready_
      if (!ready_ || !m.backend) break;
      const BackendStats b = m.backend->stats();
      s.running += b.running, s.waiting += b.waiting, s.blocks_used += b.blocks_used, s.blocks_free += b.blocks_free,
          s.blocks_total += b.blocks_total, s.prefix_hit_rate += b.prefix_hit_rate;
      ++with_engine;
    }
    if (with_engine) s.prefix_hit_rate /= with_engine;
    res.set_content(metrics_.render(s, o_.served_model_name), "text/plain; version=0.0.4");
  });
}

int Server::run(const GlobalOptions& g) {
  if (!o_.api_key_file.empty()) {
    std::ifstream f(o_.api_key_file, std::ios::binary);
    if (!f) throw Error(GN_ERR_IO, "cannot read --api-key-file " + o_.api_key_file);
    std::getline(f, api_key_);
    while (!api_key_.empty() && (api_key_.back() == '\r' || api_key_.back() == ' ')) api_key_.pop_back();
    if (api_key_.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "--api-key-file " + o_.api_key_file + " is empty");
  } else {
    api_key_ = o_.api_key;
  }
  if (o_.served_model_name.empty())
    o_.served_model_name = std::filesystem::path(o_.model_dir).lexically_normal().filename().string();
  if (o_.served_model_name.empty())
    o_.served_model_name = std::filesystem::path(o_.model_dir).lexically_normal().parent_path().filename().string();
  fingerprint_ = std::string("fp_genesis_") + gn_version_string();
  o_.adapters.clear();
  for (const std::string& a : o_.adapter_args) {  // NAME=DIR or DIR (named after its folder)
    AdapterSpec spec;
    const size_t eq = a.find('=');
    if (eq != std::string::npos && eq > 0 && a.find('/') > eq && !std::filesystem::exists(a)) {
      spec.name = a.substr(0, eq);
      spec.dir = a.substr(eq + 1);
    } else {
      spec.dir = a;
      spec.name = std::filesystem::path(a).lexically_normal().filename().string();
      if (spec.name.empty()) spec.name = std::filesystem::path(a).lexically_normal().parent_path().filename().string();
    }
    if (!std::filesystem::exists(spec.dir + "/adapter_config.json"))
      throw Error(GN_ERR_NOT_FOUND, "--adapter " + a + ": " + spec.dir + " has no adapter_config.json");
    if (spec.name == o_.served_model_name)
      throw Error(GN_ERR_INVALID_ARGUMENT, "--adapter " + a + ": the name '" + spec.name +
                                               "' is the base model's: give it another (--adapter NAME=DIR)");
    for (const AdapterSpec& other : o_.adapters)
      if (other.name == spec.name)
        throw Error(GN_ERR_INVALID_ARGUMENT, "--adapter " + a + ": the name '" + spec.name + "' is taken twice");
    o_.adapters.push_back(spec);
  }

  // SIGINT/SIGTERM only set a flag; a watcher thread stops the server.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  routes();
  int port = o_.port;
  if (port == 0) {
    port = svr_.bind_to_any_port(o_.host);
    if (port < 0) throw Error(GN_ERR_IO, "cannot listen on " + o_.host + " (any port)");
  } else if (!svr_.bind_to_port(o_.host, port)) {
    throw Error(GN_ERR_IO, "cannot listen on " + o_.host + ":" + std::to_string(port) +
                               " (in use, or not an address of this machine)");
  }
  std::thread http([this] { svr_.listen_after_bind(); });
  std::fprintf(stderr, "serve: listening on http://%s:%d (loading %s)\n", o_.host.c_str(), port, o_.model_dir.c_str());
  bool stopped = false;
  auto stop_http = [&] {
    if (stopped) return;
    stopped = true;
    stopping_ = true;
    svr_.stop();
    http.join();
  };
  try {
    init_frontend(g);
    const Device d = pick_device(o_.dev);
    std::optional<DType> dt = pick_dtype(o_.dev);
    if (!dt && d.type() == "cpu") dt = DType::f32;
    if (!std::filesystem::exists(o_.model_dir + "/tokenizer.json"))
      throw Error(GN_ERR_NOT_FOUND, o_.model_dir + " has no tokenizer.json: the server needs the tokenizer");
    tok_ = Tokenizer::from_pretrained(o_.model_dir);
    if (!tok_->chat_template().empty()) tmpl_.emplace(tok_->chat_template());
    const auto t0 = Clock::now();
    Served& base = served_.emplace_back();
    base.name = o_.served_model_name;
    base.root = o_.model_dir;
    base.model = models::QwenForCausalLM::from_pretrained(o_.model_dir, {.device = d, .dtype = dt});
    for (const AdapterSpec& a : o_.adapters) {  // a copy of the base with the adapter merged
      Served& s = served_.emplace_back();
      s.name = a.name;
      s.root = a.dir;
      s.parent = o_.served_model_name;
      s.model = models::QwenForCausalLM::from_pretrained(o_.model_dir, {.device = d, .dtype = dt});
      models::LoraModel::from_pretrained(*s.model, a.dir)->merge_and_unload();
    }
    const models::QwenForCausalLM& model = *served_[0].model;
    info_.served_name = o_.served_model_name;
    for (const Served& s : served_) info_.names.push_back(s.name);
    info_.tok = &*tok_;
    info_.tmpl = tmpl_ ? &*tmpl_ : nullptr;
    info_.context = model.config.max_position_embeddings;
    info_.vocab_size = model.config.vocab_size;
    info_.defaults = model.generation_defaults;
    info_.has_think = o_.reasoning_parser && tok_->token_to_id("<think>") >= 0 && tok_->token_to_id("</think>") >= 0;
    for (Served& s : served_) s.backend = make_backend(*s.model, o_.limits);
    info_.logprobs = served_[0].backend->supports_logprobs();
    for (size_t i = 1; i < served_.size(); ++i)
      std::fprintf(stderr, "serve: adapter %s as '%s'\n", served_[i].root.c_str(), served_[i].name.c_str());
    std::fprintf(stderr, "serve: %s ready as '%s' on %s (%s, loaded in %.1f s)\n", o_.model_dir.c_str(),
                 o_.served_model_name.c_str(), d.str().c_str(), dtype_name(model.model.embed_tokens.weight.dtype()),
                 std::chrono::duration<double>(Clock::now() - t0).count());
    std::fflush(stderr);
    ready_ = true;
  } catch (...) {
    stop_http();
    throw;
  }
  while (!g_signalled.load() && svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "serve: shutting down\n");
  stop_http();
  for (Served& s : served_) s.backend->shutdown();
  std::fprintf(stderr, "serve: stopped\n");
  return 0;
}

}  // namespace

int run_server(const GlobalOptions& g, ServeOptions& o) {
  Server s(o);
  return s.run(g);
}

}  // namespace genesis::cli::serve

namespace genesis::cli {

CommandRun setup_serve(CLI::App& c) {
  auto o = std::make_shared<serve::ServeOptions>();
  existing_folder(c.add_option("--model", o->model_dir, "Hugging Face model folder (with tokenizer.json)"))->required();
  c.add_option("--host", o->host, "address to listen on");
  c.add_option("--port", o->port, "port to listen on (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  c.add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on every endpoint but /health and /");
  c.add_option("--api-key-file", o->api_key_file, "as --api-key, the key read from the first line of this file")
      ->excludes(c.get_option("--api-key"));
  c.add_option("--served-model-name", o->served_model_name, "the model's name in the API (default: the folder's name)");
  c.add_option("--adapter", o->adapter_args,
               "[NAME=]DIR: also serve the model with this PEFT LoRA adapter merged, as model NAME (default: the "
               "folder's name); repeatable, each adapter a copy of the model on an engine of its own")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  c.add_option("--max-running", o->limits.max_running, "sequences in the running batch at most")
      ->check(CLI::PositiveNumber);
  c.add_option("--max-tokens-per-step", o->limits.max_tokens_per_step, "tokens one engine step computes at most")
      ->check(CLI::PositiveNumber);
  c.add_option("--max-waiting", o->limits.max_waiting, "requests waiting at most (beyond it: 429 Too Many Requests)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--kv-cache-blocks", o->limits.kv_cache_blocks, "KV cache blocks (0: the engine's default)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--kv-cache-memory", o->limits.kv_cache_memory,
               "share of the device's free memory for the KV cache when --kv-cache-blocks is 0 (a GPU; cpu: 512 MiB)")
      ->check(CLI::Range(0.01, 1.0));
  c.add_option("--block-size", o->limits.block_size, "positions per KV cache block")->check(CLI::PositiveNumber);
  c.add_flag("!--no-prefix-cache,!--no-prefix-caching", o->limits.prefix_caching,
             "do not reuse the KV blocks of equal prompt prefixes");
  c.add_option("--max-body-bytes", o->max_body_bytes, "request bodies above this size get 413")
      ->check(CLI::PositiveNumber);
  c.add_option("--http-threads", o->http_threads, "HTTP worker threads (each open stream holds one)")
      ->check(CLI::Range(1, 4096));
  c.add_flag("!--no-reasoning-parser", o->reasoning_parser,
             "keep <think>...</think> in the content (default: it goes to reasoning_content)");
  add_device_options(c, o->dev, kDeviceHelp,
                     "float32, bfloat16 or float16 (default: the config's on cuda, float32 on cpu)");
  c.fallthrough();
  return bind_command(o, serve::run_server);
}

}  // namespace genesis::cli
