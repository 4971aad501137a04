// generate.cpp - `genesis generate`: prompts (a text, ids or a file of prompts) on the serving engine or generate().
#include "llm_common.h"

namespace genesis::cli {

using namespace llm;  // the LLM commands' shared helpers (llm_common.h)

namespace {

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
}  // namespace genesis::cli
