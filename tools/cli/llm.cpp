// llm.cpp - `genesis generate`, `genesis chat` and `genesis bench llm`: Qwen models from Hugging
// Face folders (or a named config shape with random weights) on the C++ frontend. generate and chat run their
// prompts as requests of the serving engine (docs/serving.md); chat keeps the earlier turns of a conversation in
// its prefix cache, so a turn only computes what is new.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GENESIS_CLI_LINE_EDITING
#include <editline/readline.h>
#endif

#include "cli.h"
#include "genesis/chat_template.hpp"
#include "genesis/memory.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"
#include "genesis/serving/engine.hpp"
#include "genesis/serving/llm.hpp"
#include "genesis/tokenizer.hpp"

namespace genesis::cli {

namespace M = genesis::models;
namespace S = genesis::serving;

namespace {

// The options of one of these commands (each has its own; the ones it does not take stay unset).
struct LlmState {
  std::string model_dir;
  DeviceFlags dev;
  // sampling (unset = the model's generation_config.json, else greedy)
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  int64_t max_new_tokens = 256;
  uint64_t seed = 0;
  std::vector<std::string> stop_strings;
  std::vector<int64_t> stop_ids;
  bool ignore_eos = false, no_graph = false;
  // engine (generate, chat)
  int64_t kv_cache_blocks = 0, max_running = 256, max_tokens_per_step = 2048;
  std::optional<double> kv_cache_memory;
  bool no_prefix_cache = false;
  std::string engine_mode = "auto";  // --engine
  // generate
  std::string prompt, prompt_ids, system, prompts_file;
  bool print_ids = false, use_chat_template = false;
  CLI::Option* prompt_opt = nullptr;  // --prompt given (an empty text is still given)
  // chat
  bool no_thinking = false, thinking = false;
  // bench
  std::string config_name;
  int64_t batch = 1, prompt_len = 128, new_tokens = 256, prefill_len = 512, repeats = 3;
  bool json = false, profile = false;
  // convert
  std::string out_dir;
  std::string max_shard_size = "5GB";
  std::string adapter_dir;  // a PEFT LoRA adapter folder merged into the model at load ("" = none)
};

void add_model_options(CLI::App& c, LlmState& s) {
  add_device_options(c, s.dev, kDeviceHelp,
                     "float32, bfloat16 or float16 (default: the config's dtype on cuda, float32 on cpu)");
}

void add_sampling_options(CLI::App& c, LlmState& s) {
  c.add_option("--max-new-tokens", s.max_new_tokens, "new tokens at most")->check(CLI::NonNegativeNumber);
  c.add_option("--temperature", s.temperature, "0 = greedy (default: generation_config.json, else greedy)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--top-k", s.top_k, "keep the k most likely tokens, 0 = off (default: generation_config.json, else 0)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--top-p", s.top_p, "nucleus sampling mass in (0, 1] (default: generation_config.json, else 1)")
      ->check(CLI::Range(0.0, 1.0));
  c.add_option("--min-p", s.min_p,
               "drop tokens below min-p times the top probability (default: generation_config.json, else 0)")
      ->check(CLI::Range(0.0, 1.0));
  c.add_option("--repetition-penalty", s.repetition_penalty,
               "> 1 discourages repeats (default: generation_config.json, else 1)")
      ->check(CLI::PositiveNumber);
  c.add_option("--seed", s.seed, "sampling seed (same seed, same tokens)");
  c.add_option("--stop", s.stop_strings, "stop when this text appears (repeatable)");
  c.add_option("--stop-id", s.stop_ids, "stop at this token id (repeatable)");
  c.add_flag("--ignore-eos", s.ignore_eos, "do not stop at the model's end-of-sequence ids");
  c.add_flag("--no-cuda-graph", s.no_graph, "run every decode step eagerly");
}

// The serving engine's knobs; `pool` says what the pool holds by default.
void add_engine_options(CLI::App& c, LlmState& s, const std::string& pool) {
  c.add_option("--kv-cache-blocks", s.kv_cache_blocks,
               "KV cache blocks of 16 positions (default: " + pool + "; see --kv-cache-memory)")
      ->check(CLI::PositiveNumber);
  c.add_option("--kv-cache-memory", s.kv_cache_memory,
               "size the KV cache as this fraction of the device's free memory, where the device reports it "
               "(default: --kv-cache-blocks' default)")
      ->check(CLI::Range(0.0, 1.0));
  c.add_option("--max-running", s.max_running, "sequences the engine runs at once")->check(CLI::PositiveNumber);
  c.add_option("--max-tokens-per-step", s.max_tokens_per_step,
               "tokens one engine step computes at most (longer prompts are prefilled in chunks)")
      ->check(CLI::PositiveNumber);
  c.add_flag("--no-prefix-cache", s.no_prefix_cache, "compute every prompt in full (no reuse of cached prefixes)");
  c.add_option("--engine", s.engine_mode,
               "run on the serving engine: on, off (the static batch of generate() with its CUDA-graph decode), or "
               "auto: on except on CUDA, where the engine does not replay graphs yet (default: auto)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
}

// Whether prompts run on the serving engine (--engine).
bool use_engine(const LlmState& s, const Device& d) {
  return s.engine_mode == "on" || (s.engine_mode == "auto" && d.type() != "cuda");
}

// The engine's sizes from the flags: --kv-cache-blocks, else --kv-cache-memory, else a pool of `positions`.
S::EngineConfig engine_config(const LlmState& s, const M::QwenForCausalLM& m, int64_t positions) {
  S::EngineConfig e;
  e.max_running = s.max_running;
  e.max_tokens_per_step = s.max_tokens_per_step;
  e.prefix_caching = !s.no_prefix_cache;
  if (s.kv_cache_blocks > 0) {
    e.num_blocks = s.kv_cache_blocks;
  } else if (s.kv_cache_memory) {
    if (!(*s.kv_cache_memory > 0)) throw Error(GN_ERR_INVALID_ARGUMENT, "--kv-cache-memory must be in (0, 1]");
    e.kv_cache_memory_fraction = *s.kv_cache_memory;
  } else {
    positions = std::clamp<int64_t>(positions, 1, m.config.max_position_embeddings);
    e.num_blocks = (positions + e.block_size - 1) / e.block_size;
  }
  return e;
}

// --dtype, else float32 on cpu and the config's dtype elsewhere (nullopt).
std::optional<DType> model_dtype(const LlmState& s, const Device& d) {
  if (std::optional<DType> dt = pick_dtype(s.dev)) return dt;
  if (d.type() == "cpu") return DType::f32;
  return std::nullopt;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Loads --model; config_dtype: an unset --dtype keeps the config's dtype on every device.
std::unique_ptr<M::QwenForCausalLM> load_model(const LlmState& s, const Device& d, bool config_dtype = false) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::optional<DType> dt = config_dtype ? pick_dtype(s.dev) : model_dtype(s, d);
  auto m = M::QwenForCausalLM::from_pretrained(s.model_dir, {.device = d, .dtype = dt});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "loaded %s (%s, %.1fM parameters) on %s as %s in %.2f s\n", s.model_dir.c_str(),
               m->config.model_type.c_str(), static_cast<double>(m->config.num_parameters()) / 1e6, d.str().c_str(),
               dtype_name(m->model.embed_tokens.weight.dtype()), secs);
  if (!s.adapter_dir.empty()) M::LoraModel::from_pretrained(*m, s.adapter_dir)->merge_and_unload();
  return m;
}

M::GenerationConfig sampling(const LlmState& s, const M::QwenForCausalLM& m) {
  const M::QwenGenerationDefaults& d = m.generation_defaults;
  M::GenerationConfig g;
  g.max_new_tokens = s.max_new_tokens;
  const bool sample_default = d.do_sample.value_or(false);
  g.temperature = s.temperature.value_or(sample_default ? d.temperature.value_or(1.0) : 0.0);
  g.top_k = s.top_k.value_or(sample_default ? d.top_k.value_or(0) : 0);
  g.top_p = s.top_p.value_or(sample_default ? d.top_p.value_or(1.0) : 1.0);
  g.min_p = s.min_p.value_or(sample_default ? d.min_p.value_or(0.0) : 0.0);
  g.repetition_penalty = s.repetition_penalty.value_or(d.repetition_penalty.value_or(1.0));
  g.seed = s.seed;
  g.stop_strings = s.stop_strings;
  g.stop_ids = s.stop_ids;
  g.ignore_eos = s.ignore_eos;
  g.cuda_graph = !s.no_graph;
  return g;
}

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::string t = text;
  for (char& c : t)
    if (c == ',') c = ' ';
  std::istringstream in(t);
  std::string w;
  while (in >> w) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || v < 0)
      throw Error(GN_ERR_INVALID_ARGUMENT, "token ids must be non-negative integers, got '" + w + "'");
    ids.push_back(v);
  }
  return ids;
}

void print_stats(const M::GenerationResult& r) {
  std::fflush(stdout);  // the text first: the stats go to stderr, on a line of their own
  const double pre = r.prefill_seconds > 0 ? static_cast<double>(r.prompt_tokens) / r.prefill_seconds : 0;
  if (r.generated_tokens == 0) {
    std::fprintf(stderr, "prompt %lld tokens; no new tokens generated\n", static_cast<long long>(r.prompt_tokens));
    return;
  }
  // The first new token of each row comes out of the prefill; the decode steps make the rest.
  const int64_t steps_tokens = std::max<int64_t>(0, r.generated_tokens - static_cast<int64_t>(r.tokens.size()));
  const double dec = r.decode_seconds > 0 ? static_cast<double>(steps_tokens) / r.decode_seconds : 0;
  std::fprintf(stderr, "prefill %lld tokens in %.3f s (%.1f tok/s); decode %lld tokens in %.3f s (%.1f tok/s%s)\n",
               static_cast<long long>(r.prompt_tokens), r.prefill_seconds, pre, static_cast<long long>(steps_tokens),
               r.decode_seconds, dec, r.used_cuda_graph ? ", CUDA graph" : "");
}

// Warns when a prompt and its new tokens do not fit the model's context (max_position_embeddings).
void check_context(const M::QwenForCausalLM& m, size_t prompt_tokens, int64_t max_new_tokens) {
  const int64_t ctx = m.config.max_position_embeddings, n = static_cast<int64_t>(prompt_tokens);
  if (n + max_new_tokens <= ctx) return;
  std::fprintf(stderr,
               "warning: the prompt (%lld tokens) and --max-new-tokens %lld exceed the model's context of %lld "
               "tokens (max_position_embeddings): positions past it were never trained\n",
               static_cast<long long>(n), static_cast<long long>(max_new_tokens), static_cast<long long>(ctx));
}

// Prompt ids must name tokens of the model's vocabulary.
void check_ids(const M::QwenForCausalLM& m, const std::vector<int64_t>& ids) {
  for (int64_t id : ids)
    if (id >= m.config.vocab_size)
      throw Error(GN_ERR_INVALID_ARGUMENT, "--prompt-ids: token id " + std::to_string(id) +
                                               " is out of range: the model's vocabulary has ids 0 to " +
                                               std::to_string(m.config.vocab_size - 1));
}

// Adds the tokenizer's end-of-turn tokens (<|im_end|>, <|endoftext|>, its eos) to the stop ids.
void add_tokenizer_stops(const Tokenizer& tok, M::GenerationConfig& g) {
  if (tok.eos_token_id >= 0) g.stop_ids.push_back(tok.eos_token_id);
  for (const char* t : {"<|im_end|>", "<|endoftext|>"})
    if (int64_t id = tok.token_to_id(t); id >= 0) g.stop_ids.push_back(id);
}

// Runs one prompt as an engine request, streaming its tokens to on_token; the result as generate() reports it
// (the time to the first token as the prefill, the rest as decode) plus the prompt tokens the prefix cache held.
struct RequestResult : M::GenerationResult {
  int64_t cached_tokens = 0;
};
RequestResult run_request(S::Engine& engine, const std::vector<int64_t>& prompt, const M::GenerationConfig& g,
                          const std::function<void(int64_t)>& on_token) {
  using clock = std::chrono::steady_clock;
  RequestResult r;
  r.tokens.resize(1);
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  const S::EngineStats before = engine.stats();
  const auto t0 = clock::now();
  auto t1 = t0;
  S::Request req;
  req.prompt = prompt;
  req.sampling = g;
  engine.submit(std::move(req), [&](const S::TokenEvent& e) {
    if (e.token >= 0) {
      if (r.tokens[0].empty()) t1 = clock::now();
      r.tokens[0].push_back(e.token);
      on_token(e.token);
    }
    if (e.finished) r.finish_reasons.push_back(e.finish_reason);
  });
  engine.run_until_idle();
  const auto t2 = clock::now();
  r.generated_tokens = static_cast<int64_t>(r.tokens[0].size());
  if (r.generated_tokens == 0) t1 = t2;
  r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  r.decode_seconds = std::chrono::duration<double>(t2 - t1).count();
  r.decode_steps = std::max<int64_t>(0, r.generated_tokens - 1);
  // Computed: the prompt's uncached tokens, then every new token but the last fed back as a decode.
  const S::EngineStats after = engine.stats();
  const int64_t computed = after.computed_tokens - before.computed_tokens;
  r.cached_tokens = std::max<int64_t>(0, r.prompt_tokens - (computed - r.decode_steps));
  return r;
}

// One prompt on the engine when there is one, else through generate()'s static batch (same result fields).
RequestResult run_prompt(S::Engine* engine, M::QwenForCausalLM& model, const std::vector<int64_t>& prompt,
                         const M::GenerationConfig& g, const std::function<void(int64_t)>& on_token) {
  if (engine) return run_request(*engine, prompt, g, on_token);
  RequestResult r;
  static_cast<M::GenerationResult&>(r) = M::generate(model, {prompt}, g, [&](size_t, int64_t id) {
    on_token(id);
    return true;
  });
  return r;
}

// --prompts-file: every non-empty line is a prompt (a user message with --chat); they all run as requests of one
// engine, and each output is a JSON line, in the file's order.
int run_generate_file(const GlobalOptions& go, LlmState& s, const Device& d, bool has_tok) {
  if (!has_tok) throw Error(GN_ERR_NOT_FOUND, s.model_dir + " has no tokenizer.json: --prompts-file needs one");
  std::ifstream f(s.prompts_file, std::ios::binary);
  if (!f) throw Error(GN_ERR_IO, "cannot open " + s.prompts_file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, s.prompts_file + " holds no prompt (one per line)");
  Tokenizer tok = Tokenizer::from_pretrained(s.model_dir);
  if (s.use_chat_template && tok.chat_template().empty())
    throw Error(GN_ERR_NOT_FOUND, "the tokenizer has no chat_template");
  std::vector<std::vector<int64_t>> prompts;
  int64_t need = 0, longest = 0;
  auto model = load_model(s, d);
  const int64_t ctx = model->config.max_position_embeddings;
  for (const std::string& line : lines) {
    std::vector<ChatMessage> msgs;
    if (!s.system.empty()) msgs.push_back({"system", s.system});
    msgs.push_back({"user", line});
    prompts.push_back(s.use_chat_template ? tok.encode(ChatTemplate(tok.chat_template()).apply(msgs, true), false)
                                          : tok.encode(line, false));
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(prompts.back().size()) + s.max_new_tokens, ctx);
    need += n;
    longest = std::max(longest, n);
  }
  S::SamplingParams p;
  static_cast<M::GenerationConfig&>(p) = sampling(s, *model);
  if (!s.ignore_eos) add_tokenizer_stops(tok, p);
  // The pool holds every prompt and its new tokens, up to 16384 positions (at least the longest request).
  const S::EngineConfig cfg = engine_config(s, *model, std::max(longest, std::min<int64_t>(need, 16384)));
  S::LLM llm(std::move(model), tok, cfg);
  const S::EngineStats before = llm.engine().stats();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<S::RequestOutput> outs = llm.generate(prompts, p);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < outs.size(); ++i) {
    const S::CompletionOutput& c = outs[i].outputs[0];
    const nlohmann::ordered_json j = {{"index", i},
                                      {"prompt", lines[i]},
                                      {"text", c.text},
                                      {"token_ids", c.token_ids},
                                      {"finish_reason", c.finish_reason}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
  const S::EngineStats st = llm.engine().stats();
  const int64_t gen = st.generated_tokens - before.generated_tokens;
  std::fprintf(stderr,
               "%zu prompts, %lld prompt tokens, %lld new tokens in %.3f s (%.1f tok/s); prefix cache hit rate "
               "%.1f%%, preemptions %lld\n",
               outs.size(), static_cast<long long>(st.prompt_tokens - before.prompt_tokens),
               static_cast<long long>(gen), secs, secs > 0 ? static_cast<double>(gen) / secs : 0.0,
               100.0 * st.prefix_hit_rate, static_cast<long long>(st.preemptions - before.preemptions));
  (void)go;
  return 0;
}

int run_generate(const GlobalOptions& go, LlmState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  const bool has_tok = exists(s.model_dir + "/tokenizer.json");
  const bool has_prompt = s.prompt_opt && s.prompt_opt->count() > 0;
  if (int(has_prompt) + int(!s.prompt_ids.empty()) + int(!s.prompts_file.empty()) != 1)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "give exactly one of --prompt TEXT, --prompt-ids 1,2,3 and --prompts-file FILE");
  if (!s.prompts_file.empty()) return run_generate_file(go, s, d, has_tok);
  if (has_prompt && s.prompt.empty() && !s.use_chat_template)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "--prompt is empty: give some text to continue (with --chat an empty user message is sent)");
  if (has_prompt && !has_tok) throw Error(GN_ERR_NOT_FOUND, s.model_dir + " has no tokenizer.json: use --prompt-ids");
  std::optional<Tokenizer> tok;
  if (has_tok) tok = Tokenizer::from_pretrained(s.model_dir);
  if (has_prompt && !s.use_chat_template && !tok->chat_template().empty() && !go.quiet)
    std::fprintf(stderr,
                 "note: %s has a chat template (an instruct model): --chat sends the prompt through it as a user "
                 "message; without --chat the text is continued as it is\n",
                 s.model_dir.c_str());
  auto model = load_model(s, d);
  M::GenerationConfig g = sampling(s, *model);
  std::vector<int64_t> prompt;
  if (!s.prompt_ids.empty()) {
    prompt = parse_ids(s.prompt_ids);
    if (prompt.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "--prompt-ids holds no token id");
    check_ids(*model, prompt);
  } else if (s.use_chat_template) {
    if (tok->chat_template().empty()) throw Error(GN_ERR_NOT_FOUND, "the tokenizer has no chat_template");
    std::vector<ChatMessage> msgs;
    if (!s.system.empty()) msgs.push_back({"system", s.system});
    msgs.push_back({"user", s.prompt});
    prompt = tok->encode(ChatTemplate(tok->chat_template()).apply(msgs, true), false);
  } else {
    prompt = tok->encode(s.prompt, false);
  }
  check_context(*model, prompt.size(), g.max_new_tokens);
  if (tok) {
    if (!s.ignore_eos) add_tokenizer_stops(*tok, g);
    g.decode = [&](const std::vector<int64_t>& ids) { return tok->decode(ids); };
  }
  const bool text_out = tok && !s.print_ids;
  std::optional<StreamDecoder> stream;
  if (text_out) stream.emplace(*tok, true);
  // One engine request; its pool holds the prompt and its new tokens unless the flags say otherwise.
  std::unique_ptr<S::Engine> engine;
  if (use_engine(s, d))
    engine = std::make_unique<S::Engine>(
        *model, engine_config(s, *model, static_cast<int64_t>(prompt.size()) + g.max_new_tokens));
  const M::GenerationResult r = run_prompt(engine.get(), *model, prompt, g, [&](int64_t id) {
    if (stream) {
      std::fputs(stream->put(id).c_str(), stdout);
      std::fflush(stdout);
    }
  });
  if (stream) std::printf("%s\n", stream->flush().c_str());
  if (!text_out) {
    for (size_t i = 0; i < r.tokens[0].size(); ++i)
      std::printf(i ? " %lld" : "%lld", static_cast<long long>(r.tokens[0][i]));
    std::printf("\n");
  }
  print_stats(r);
  return 0;
}

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

int run_bench_llm(const GlobalOptions& go, LlmState& s) {
  init_frontend(go);
  const Device d = pick_device(s.dev);
  std::unique_ptr<M::QwenForCausalLM> model;
  std::string what;
  if (!s.model_dir.empty() && !s.config_name.empty())
    throw Error(GN_ERR_INVALID_ARGUMENT, "give --model (trained weights) or --config (random weights), not both");
  const int64_t ctx =
      !s.model_dir.empty()
          ? M::QwenConfig::from_file(s.model_dir + "/config.json").max_position_embeddings
          : config_from_name_or_file(s.config_name.empty() ? "qwen2.5-0.5b" : s.config_name).max_position_embeddings;
  // Positions past the context were never trained (and rotary tables end there): refuse, before loading.
  if (s.prompt_len + s.new_tokens > ctx || s.prefill_len + 1 > ctx)
    throw Error(
        GN_ERR_INVALID_ARGUMENT,
        "the model's context is " + std::to_string(ctx) + " tokens (max_position_embeddings), but --prompt-len " +
            std::to_string(s.prompt_len) + " + --new-tokens " + std::to_string(s.new_tokens) + " = " +
            std::to_string(s.prompt_len + s.new_tokens) + " and --prefill-len " + std::to_string(s.prefill_len) +
            " + 1 = " + std::to_string(s.prefill_len + 1) + ": lower them to fit");
  if (!s.model_dir.empty()) {
    model = load_model(s, d);
    what = s.model_dir;
  } else {
    const std::string name = s.config_name.empty() ? "qwen2.5-0.5b" : s.config_name;
    M::QwenConfig c = config_from_name_or_file(name);
    const DType dt = model_dtype(s, d).value_or(DType::bf16);
    manual_seed(0);
    model = std::make_unique<M::QwenForCausalLM>(c, Options{.dtype = dt, .device = d});
    what = name + " (random weights)";
  }
  const int64_t V = model->config.vocab_size;
  auto random_prompts = [&](int64_t n, uint64_t seed) {
    HostRng rng(seed);
    std::vector<std::vector<int64_t>> p(static_cast<size_t>(s.batch));
    for (auto& row : p)
      for (int64_t i = 0; i < n; ++i) row.push_back(rng.below(V));
    return p;
  };
  M::GenerationConfig g;
  g.ignore_eos = true;
  g.cuda_graph = !s.no_graph;
  // Prefill: time to the first token of batch x prefill_len prompts (best of repeats).
  double prefill = 1e30, decode = 1e30;
  bool graph = false;
  reset_peak_memory_stats(d);
  for (int64_t rep = 0; rep <= s.repeats; ++rep) {  // rep 0 warms up
    if (rep == 0)
      std::fprintf(stderr, "bench llm: warm-up ...\n");
    else
      std::fprintf(stderr, "bench llm: repeat %lld/%lld ...", static_cast<long long>(rep),
                   static_cast<long long>(s.repeats));
    g.max_new_tokens = 1;
    auto r = M::generate(*model, random_prompts(s.prefill_len, 100 + static_cast<uint64_t>(rep)), g);
    const double prefill_s = r.prefill_seconds;
    if (rep > 0) prefill = std::min(prefill, prefill_s);
    g.max_new_tokens = s.new_tokens;
    r = M::generate(*model, random_prompts(s.prompt_len, 200 + static_cast<uint64_t>(rep)), g);
    const double step = r.decode_seconds / static_cast<double>(std::max<int64_t>(1, r.decode_steps));
    if (rep > 0) {
      decode = std::min(decode, step);
      std::fprintf(stderr, " prefill %.1f tok/s, decode %.1f tok/s\n",
                   static_cast<double>(s.batch * s.prefill_len) / prefill_s, static_cast<double>(s.batch) / step);
    }
    graph = r.used_cuda_graph;
  }
  if (s.profile) {  // per-op host times of a short eager decode (with CUDA_LAUNCH_BLOCKING=1: device times)
    g.max_new_tokens = 16;
    g.cuda_graph = false;
    Profiler prof("", false);
    M::generate(*model, random_prompts(s.prompt_len, 300), g);
    prof.stop();
    std::fputs(prof.summary().c_str(), stderr);
  }
  const double prefill_tps = static_cast<double>(s.batch * s.prefill_len) / prefill;
  const double decode_tps = static_cast<double>(s.batch) / decode;
  const double peak_mb = static_cast<double>(max_memory_allocated(d)) / (1 << 20);
  if (s.json) {
    nlohmann::json j = {{"model", what},
                        {"device", d.str()},
                        {"dtype", dtype_name(model->model.embed_tokens.weight.dtype())},
                        {"batch", s.batch},
                        {"prefill_len", s.prefill_len},
                        {"prompt_len", s.prompt_len},
                        {"new_tokens", s.new_tokens},
                        {"prefill_tok_s", prefill_tps},
                        {"decode_tok_s", decode_tps},
                        {"decode_ms_per_step", decode * 1e3},
                        {"peak_mb", peak_mb},
                        {"cuda_graph", graph}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("model      %s on %s, %s\n", what.c_str(), d.str().c_str(),
                dtype_name(model->model.embed_tokens.weight.dtype()));
    std::printf("prefill    %lld x %lld tokens: %.1f tok/s\n", static_cast<long long>(s.batch),
                static_cast<long long>(s.prefill_len), prefill_tps);
    std::printf("decode     batch %lld after %lld prompt tokens, %lld new: %.1f tok/s (%.3f ms a step%s)\n",
                static_cast<long long>(s.batch), static_cast<long long>(s.prompt_len),
                static_cast<long long>(s.new_tokens), decode_tps, decode * 1e3, graph ? ", CUDA graph" : "");
    std::printf("peak mem   %.1f MiB allocated\n", peak_mb);
  }
  return 0;
}

// "5GB", "500MB", "64KB", "1000" (bytes): decimal units, as transformers' max_shard_size.
int64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double mult = unit.empty() || unit == "B" ? 1
                      : unit == "KB"              ? 1e3
                      : unit == "MB"              ? 1e6
                      : unit == "GB"              ? 1e9
                                                  : -1;
  if (used == 0 || mult < 0 || !(v * mult >= 1) || v * mult > 9e18)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "--max-shard-size must be a size such as 5GB, 500MB or 64KB, got '" + text + "'");
  return static_cast<int64_t>(v * mult);
}

// What a model folder holds beside the weights and config.json that a converted copy keeps as
// they are: the tokenizer (every format transformers reads), the chat template, the generation
// defaults (all their fields, also those genesis does not use) and the licence and model card.
constexpr const char* kCopiedFiles[] = {"tokenizer.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json",
                                        "added_tokens.json",
                                        "vocab.json",
                                        "merges.txt",
                                        "tokenizer.model",
                                        "chat_template.jinja",
                                        "chat_template.json",
                                        "generation_config.json",
                                        "LICENSE",
                                        "README.md"};

int run_convert(const GlobalOptions& go, LlmState& s) {
  namespace fs = std::filesystem;
  const int64_t shard = parse_size(s.max_shard_size);
  init_frontend(go);
  const Device d = pick_device(s.dev, "cpu");
  auto model = load_model(s, d, true);
  model->save_pretrained(s.out_dir, shard);
  std::error_code ec;
  std::string copied;
  if (!fs::equivalent(s.model_dir, s.out_dir, ec)) {
    for (const char* name : kCopiedFiles) {
      const fs::path from = fs::path(s.model_dir) / name;
      if (!fs::is_regular_file(from, ec)) continue;
      fs::copy_file(from, fs::path(s.out_dir) / name, fs::copy_options::overwrite_existing);
      copied += std::string(copied.empty() ? "" : ", ") + name;
    }
  }
  std::fprintf(stderr, "wrote %s (weights and config.json%s%s)\n", s.out_dir.c_str(), copied.empty() ? "" : "; copied ",
               copied.c_str());
  if (!fs::exists(fs::path(s.out_dir) / "tokenizer.json", ec))
    std::fprintf(stderr, "note: %s has no tokenizer.json, so neither has the copy (generate needs --prompt-ids)\n",
                 s.model_dir.c_str());
  return 0;
}

}  // namespace

CommandRun setup_generate(CLI::App& c) {
  auto s = std::make_shared<LlmState>();
  existing_folder(c.add_option("--model", s->model_dir, "Hugging Face model folder"))->required();
  s->prompt_opt = c.add_option("--prompt", s->prompt,
                               "prompt text (needs tokenizer.json; one of --prompt, --prompt-ids and --prompts-file)");
  c.add_option("--prompt-ids", s->prompt_ids,
               "prompt token ids, e.g. 1,2,3 (one of --prompt, --prompt-ids and --prompts-file)");
  c.add_option("--prompts-file", s->prompts_file,
               "a file of prompts, one a line, run together on the engine; prints a JSON line per prompt (index, "
               "prompt, text, token_ids, finish_reason) in the file's order (one of --prompt, --prompt-ids and "
               "--prompts-file)")
      ->check(CLI::ExistingFile);
  c.add_flag("--print-ids", s->print_ids, "print the generated ids space-separated on one line");
  c.add_flag("--chat", s->use_chat_template, "wrap the prompt as a user message with the chat template");
  c.add_option("--system", s->system, "system prompt (with --chat; default: none)");
  existing_folder(c.add_option("--adapter", s->adapter_dir,
                               "PEFT LoRA adapter folder, merged into the model at load (default: none)"));
  add_model_options(c, *s);
  add_sampling_options(c, *s);
  add_engine_options(c, *s, "the prompt and its new tokens");
  c.fallthrough();
  return bind_command(s, run_generate);
}

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

CommandRun setup_convert(CLI::App& c) {
  auto s = std::make_shared<LlmState>();
  existing_folder(c.add_option("--model", s->model_dir, "Hugging Face model folder"))->required();
  c.add_option("--out", s->out_dir, "output folder (created when missing)")->required();
  c.add_option("--max-shard-size", s->max_shard_size, "shard the weights above this size (5GB, 500MB, 64KB)");
  existing_folder(
      c.add_option("--adapter", s->adapter_dir, "PEFT LoRA adapter folder merged into the weights (default: none)"));
  c.footer("The copy keeps the tokenizer files, the chat template, generation_config.json, LICENSE and README.md.");
  add_device_options(c, s->dev, "device used while converting (default: cpu)",
                     "float32, bfloat16 or float16 (default: the config's)");
  c.fallthrough();
  return bind_command(s, run_convert);
}

CommandRun setup_bench_llm(CLI::App& c) {
  auto s = std::make_shared<LlmState>();
  existing_folder(
      c.add_option("--model", s->model_dir, "Hugging Face model folder (default: --config, random weights)"));
  c.add_option("--config", s->config_name,
               std::string("random weights of this shape (default: qwen2.5-0.5b): ") + kConfigHelp);
  c.add_option("--batch", s->batch, "sequences per batch")->check(CLI::PositiveNumber);
  c.add_option("--prompt-len", s->prompt_len, "prompt tokens before decoding")->check(CLI::PositiveNumber);
  c.add_option("--new-tokens", s->new_tokens, "tokens decoded")->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  c.add_option("--prefill-len", s->prefill_len, "prompt tokens of the prefill measure")->check(CLI::PositiveNumber);
  c.add_option("--repeats", s->repeats, "timed repeats after one warm-up (best is reported)")
      ->check(CLI::PositiveNumber);
  c.add_flag("--json", s->json, "one JSON line");
  c.add_flag("--profile", s->profile, "print a per-op profile of a short eager decode to stderr");
  c.add_flag("--no-cuda-graph", s->no_graph, "run every decode step eagerly");
  add_model_options(c, *s);
  c.fallthrough();
  return bind_command(s, run_bench_llm);
}

}  // namespace genesis::cli
