// llm_common.cpp - llm_common.h: the LLM commands' shared options, loading, checks and engine requests.
#include "llm_common.h"

namespace genesis::cli::llm {

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
std::unique_ptr<M::QwenForCausalLM> load_model(const LlmState& s, const Device& d, bool config_dtype) {
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

}  // namespace genesis::cli::llm
