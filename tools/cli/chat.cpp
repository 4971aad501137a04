// chat.cpp - `genesis chat`: an interactive conversation whose earlier turns stay in the engine's prefix cache.
#include "llm_common.h"

namespace genesis::cli {

using namespace llm;  // the LLM commands' shared helpers (llm_common.h)

namespace {

// Reads the chat's lines: with line editing and history (libedit) when both ends are a
// terminal and the tool was built with it, else plain lines from standard input.
class LineReader {
 public:
  LineReader() {
#ifdef GENESIS_CLI_LINE_EDITING
    editing_ = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (!editing_) return;
    if (const char* f = std::getenv("GENESIS_CHAT_HISTORY"))
      history_ = f;
    else if (const char* home = std::getenv("HOME"))
      history_ = std::string(home) + "/.genesis_chat_history";
    using_history();
    stifle_history(1000);
    if (!history_.empty()) read_history(history_.c_str());
#endif
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  ~LineReader() {
#ifdef GENESIS_CLI_LINE_EDITING
    if (editing_ && !history_.empty()) write_history(history_.c_str());
#endif
  }

  // Shows `prompt` and reads a line; false at the end of the input.
  bool read(const char* prompt, std::string& line) {
#ifdef GENESIS_CLI_LINE_EDITING
    if (editing_) {
      std::fflush(stdout);
      char* got = readline(prompt);
      if (!got) return false;
      line = got;
      std::free(got);
      if (!line.empty() && line != last_) add_history(line.c_str());  // a repeat is kept once
      last_ = line;
      return true;
    }
#endif
    std::fputs(prompt, stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) return false;
    if (!isatty(STDIN_FILENO)) std::printf("%s\n", line.c_str());  // piped input: show what was asked
    return true;
  }

 private:
  bool editing_ = false;
  std::string history_, last_;
};

constexpr const char* kChatHelp =
    "/help           this list\n"
    "/system TEXT    set the system prompt (and start over); /system alone removes it\n"
    "/save FILE      write the conversation as JSON ({\"messages\": [{\"role\", \"content\"}, ...]})\n"
    "/load FILE      continue a conversation saved by /save (or a JSON list of messages)\n"
    "/clear          start over (/reset too)\n"
    "/exit           quit (/quit, or the end of the input)\n"
    "//TEXT          send a line that starts with '/'\n";

// The messages of a JSON conversation: {"messages": [...]} or a bare list of {"role", "content"}.
std::vector<ChatMessage> read_conversation(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(GN_ERR_IO, "cannot open " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw Error(GN_ERR_INVALID_ARGUMENT, path + " is not JSON: " + e.what());
  }
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array())
    throw Error(GN_ERR_INVALID_ARGUMENT, path + ": expected {\"messages\": [...]} or a list of messages");
  std::vector<ChatMessage> msgs;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  path + ": message " + std::to_string(i) + " needs a string \"role\" and a string \"content\"");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  path + ": message " + std::to_string(i) + " has role '" + role + "' (system, user or assistant)");
    msgs.push_back({role, m["content"].get<std::string>()});
  }
  return msgs;
}

void write_conversation(const std::string& path, const std::vector<ChatMessage>& msgs) {
  nlohmann::json list = nlohmann::json::array();
  for (const ChatMessage& m : msgs) list.push_back({{"role", m.role}, {"content", m.content}});
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << nlohmann::json{{"messages", list}}.dump(2) << "\n";
  if (!f.flush()) throw Error(GN_ERR_IO, "cannot write " + path);
}

int run_chat(const GlobalOptions& go, LlmState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  Tokenizer tok = Tokenizer::from_pretrained(s.model_dir);
  if (tok.chat_template().empty())
    throw Error(GN_ERR_NOT_FOUND, s.model_dir + ": tokenizer_config.json has no chat_template");
  ChatTemplate tmpl(tok.chat_template());
  auto model = load_model(s, d);
  M::GenerationConfig g = sampling(s, *model);
  add_tokenizer_stops(tok, g);
  // One engine for the whole chat: each turn's prompt starts with the previous turn's, whose blocks the prefix
  // cache still holds (the pool holds two conversations of up to 8192 positions unless the flags say otherwise).
  std::unique_ptr<S::Engine> engine;
  if (use_engine(s, d))
    engine = std::make_unique<S::Engine>(
        *model, engine_config(s, *model, 2 * std::min<int64_t>(model->config.max_position_embeddings, 8192)));
  std::optional<bool> thinking;
  if (s.no_thinking) thinking = false;
  if (s.thinking) thinking = true;
  std::vector<ChatMessage> msgs;
  auto reset = [&] {
    msgs.clear();
    if (!s.system.empty()) msgs.push_back({"system", s.system});
  };
  reset();
  std::fprintf(stderr, "chat with %s: /help lists the commands, /exit (or end of input) quits\n", s.model_dir.c_str());
  LineReader reader;
  std::string line;
  while (true) {
    std::fputs("\n", stdout);
    if (!reader.read(">>> ", line)) break;
    // "/word rest": a command; "//text" sends "/text".
    const std::string word = line.substr(0, line.find(' '));
    const std::string arg = word.size() < line.size() ? line.substr(word.size() + 1) : "";
    if (line.rfind("//", 0) == 0) {
      line.erase(0, 1);
    } else if (!line.empty() && line[0] == '/') {
      if (word == "/exit" || word == "/quit") break;
      if (word == "/help") {
        std::fputs(kChatHelp, stdout);
      } else if (word == "/reset" || word == "/clear") {
        reset();
        std::fputs("(conversation cleared)\n", stdout);
      } else if (word == "/system") {
        s.system = arg;
        reset();
        std::fputs(arg.empty() ? "(system prompt removed; conversation cleared)\n"
                               : "(system prompt set; conversation cleared)\n",
                   stdout);
      } else if (word == "/save" || word == "/load") {
        if (arg.empty()) {
          std::printf("(%s needs a file name)\n", word.c_str());
          continue;
        }
        try {
          if (word == "/save") {
            write_conversation(arg, msgs);
            std::printf("(saved %zu messages to %s)\n", msgs.size(), arg.c_str());
          } else {
            msgs = read_conversation(arg);
            s.system = !msgs.empty() && msgs[0].role == "system" ? msgs[0].content : "";
            std::printf("(loaded %zu messages from %s)\n", msgs.size(), arg.c_str());
          }
        } catch (const std::exception& e) {
          std::printf("(%s failed: %s)\n", word.c_str(), e.what());
        }
      } else {
        std::printf("(unknown command %s: /help lists them; //TEXT sends a line starting with '/')\n", word.c_str());
      }
      continue;
    }
    if (line.empty()) continue;
    msgs.push_back({"user", line});
    const std::vector<int64_t> prompt = tok.encode(tmpl.apply(msgs, true, thinking), false);
    check_context(*model, prompt.size(), g.max_new_tokens);
    StreamDecoder stream(tok, true);
    RequestResult r;
    try {
      r = run_prompt(engine.get(), *model, prompt, g, [&](int64_t id) {
        std::fputs(stream.put(id).c_str(), stdout);
        std::fflush(stdout);
      });
    } catch (const Error& e) {  // a conversation the pool or the context cannot hold: the chat goes on
      msgs.pop_back();
      std::printf("(%s: /clear starts over; --kv-cache-blocks sizes the pool)\n", e.what());
      continue;
    }
    std::fputs(stream.flush().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);  // the reply ends its line before the stats (stderr) start theirs
    const double secs = r.prefill_seconds + r.decode_seconds;
    const std::string cached =
        r.cached_tokens > 0 ? ", " + std::to_string(r.cached_tokens) + " from the prefix cache" : std::string();
    std::fprintf(stderr, "[%lld tokens, %.1f tok/s, prompt %lld tokens%s]\n",
                 static_cast<long long>(r.generated_tokens),
                 secs > 0 ? static_cast<double>(r.generated_tokens) / secs : 0.0,
                 static_cast<long long>(r.prompt_tokens), cached.c_str());
    msgs.push_back({"assistant", tok.decode(r.tokens[0], true)});
  }
  return 0;
}

}  // namespace

CommandRun setup_chat(CLI::App& c) {
  auto s = std::make_shared<LlmState>();
  existing_folder(c.add_option("--model", s->model_dir, "Hugging Face model folder with tokenizer files"))->required();
  c.add_option("--system", s->system, "system prompt (default: none)");
  c.add_flag("--no-thinking", s->no_thinking, "enable_thinking=false in the template (Qwen3)");
  c.add_flag("--thinking", s->thinking, "enable_thinking=true in the template (Qwen3)");
  existing_folder(c.add_option("--adapter", s->adapter_dir,
                               "PEFT LoRA adapter folder, merged into the model at load (default: none)"));
  add_model_options(c, *s);
  add_sampling_options(c, *s);
  add_engine_options(c, *s, "two conversations of up to 8192 positions, or the context if shorter");
  c.fallthrough();
  return bind_command(s, run_chat);
}
}  // namespace genesis::cli
