// openai.h - OpenAI's request bodies (chat completions, completions) checked and turned into a
// prompt and sampling settings; OpenAI's error object.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "genesis/chat_template.hpp"
#include "genesis/tokenizer.hpp"
#include "output.h"

namespace genesis::cli::serve {

// Insertion-ordered: a request's objects (tools, arguments) reach the chat template in the order the client wrote
// them, as transformers renders them.
using json = nlohmann::ordered_json;

/** An error answered with OpenAI's error object: {"error": {"message", "type", "param", "code"}}. */
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = "", std::string type = "")
      : std::runtime_error(message), status(status), param(std::move(param)), type(std::move(type)) {}
  int status;
  std::string param, type;
};

/** OpenAI's error body. */
json error_body(int status, const std::string& message, const std::string& param = "", const std::string& type = "");

/** What the requests are checked against: the model, its tokenizer and template. */
struct ModelInfo {
  std::string served_name;         // the default model (the base)
  std::vector<std::string> names;  // every model the server serves (the base and its adapters)
  const Tokenizer* tok = nullptr;
  const ChatTemplate* tmpl = nullptr;  // nullptr: the tokenizer has none
  int64_t context = 0;                 // max_position_embeddings
  int64_t vocab_size = 0;
  models::QwenGenerationDefaults defaults;
  bool has_think = false;  // the vocabulary has <think> and </think>
  bool logprobs = false;   // the backend gives log-probabilities
};

/** A checked request. */
struct ParsedRequest {
  Submission sub;
  bool stream = false, include_usage = false;
  bool logprobs = false;  // chat: logprobs true; completions: logprobs given
  int top_logprobs = 0;
  OutputOptions out;  // stop strings, reasoning, tools
  bool tools = false;
  std::string model;
};

/** Checks a /v1/chat/completions body and renders its prompt; throws ApiError. */
ParsedRequest parse_chat(const json& body, const ModelInfo& m);
/** Checks a /v1/completions body (a text or token ids prompt); throws ApiError. */
ParsedRequest parse_completion(const json& body, const ModelInfo& m);
/** The body of a POST parsed as a JSON object; throws ApiError (400). */
json parse_body(const std::string& text);
/** Checks "model" against the served names (404 for another); returns its index in m.names (0 when absent). */
size_t check_model(const json& body, const ModelInfo& m);

}  // namespace genesis::cli::serve
