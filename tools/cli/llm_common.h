// llm_common.h - what the LLM commands share (generate.cpp, chat.cpp, bench_llm.cpp, convert.cpp): their options,
// model loading, sampling flags, prompt checks and running one prompt on the serving engine.
#pragma once

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

namespace genesis::cli::llm {

namespace M = genesis::models;
namespace S = genesis::serving;

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

/** --device / --dtype of a model command. */
void add_model_options(CLI::App& c, LlmState& s);
/** --temperature, --top-p, ..., --max-new-tokens, --seed, --stop, --no-cuda-graph. */
void add_sampling_options(CLI::App& c, LlmState& s);
/** The serving engine's knobs; `pool` says what the pool holds by default. */
void add_engine_options(CLI::App& c, LlmState& s, const std::string& pool);
/** Whether prompts run on the serving engine (--engine). */
bool use_engine(const LlmState& s, const Device& d);
/** The engine's sizes from the flags: --kv-cache-blocks, else --kv-cache-memory, else a pool of `positions`. */
S::EngineConfig engine_config(const LlmState& s, const M::QwenForCausalLM& m, int64_t positions);
/** --dtype, else float32 on cpu and the config's dtype elsewhere (nullopt). */
std::optional<DType> model_dtype(const LlmState& s, const Device& d);
/** Whether path p exists. */
bool exists(const std::string& p);
/** Loads --model; config_dtype: an unset --dtype keeps the config's dtype on every device. */
std::unique_ptr<M::QwenForCausalLM> load_model(const LlmState& s, const Device& d, bool config_dtype = false);
/** The generation config from the sampling flags over the model's generation_config.json defaults. */
M::GenerationConfig sampling(const LlmState& s, const M::QwenForCausalLM& m);
/** "1,2,3" or "1 2 3" as token ids. */
std::vector<int64_t> parse_ids(const std::string& text);
/** Prefill and decode figures of a result on stderr. */
void print_stats(const M::GenerationResult& r);
/** Warns when a prompt and its new tokens do not fit the model's context (max_position_embeddings). */
void check_context(const M::QwenForCausalLM& m, size_t prompt_tokens, int64_t max_new_tokens);
/** Prompt ids must name tokens of the model's vocabulary. */
void check_ids(const M::QwenForCausalLM& m, const std::vector<int64_t>& ids);
/** Adds the tokenizer's end-of-turn tokens (<|im_end|>, <|endoftext|>, its eos) to the stop ids. */
void add_tokenizer_stops(const Tokenizer& tok, M::GenerationConfig& g);

/** A prompt's result as generate() reports it plus the prompt tokens the prefix cache held. */
struct RequestResult : M::GenerationResult {
  int64_t cached_tokens = 0;
};
/** Runs one prompt as an engine request, streaming its tokens to on_token (time to the first token as the
 * prefill, the rest as decode). */
RequestResult run_request(S::Engine& engine, const std::vector<int64_t>& prompt, const M::GenerationConfig& g,
                          const std::function<void(int64_t)>& on_token);
/** One prompt on the engine when there is one, else through generate()'s static batch (same result fields). */
RequestResult run_prompt(S::Engine* engine, M::QwenForCausalLM& model, const std::vector<int64_t>& prompt,
                         const M::GenerationConfig& g, const std::function<void(int64_t)>& on_token);

}  // namespace genesis::cli::llm
