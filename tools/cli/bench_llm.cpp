// bench_llm.cpp - `genesis bench llm`: prefill and decode throughput of a model or a named shape with random weights.
#include "llm_common.h"

namespace genesis::cli {

using namespace llm;  // the LLM commands' shared helpers (llm_common.h)

namespace {

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

}  // namespace

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
