// bench/serving/offline.cpp - the serving engine (continuous batching over a paged KV cache) against the
// static-batch models::generate(), on a Qwen shape with random weights, in one run:
//
//   1. offline throughput: N requests with log-normal (ShareGPT-like) prompt and output lengths, eos ignored,
//      all submitted at once to the engine of a serving::LLM, vs generate() over batches of --batch requests in
//      arrival order (--sorted: sorted by prompt length); a static batch runs until its longest output is done,
//      every other row stops at its own length;
//   2. decode tok/s at 1 and --concurrency sequences (engine vs generate() at that batch);
//   3. time to first token of a prompt whose --system-prompt tokens are in the prefix cache vs cold;
//   4. peak KV blocks in use, the share of the pool, peak device memory (where the runtime reports it);
//   5. memory-flat check: blocks in use and host RSS before and after --flat-requests short requests.
//
//   build/bin/bench_serving_offline --device cuda --dtype bf16 --preset qwen2.5-0.5b --json
//   build/bin/bench_serving_offline --help
//
// --requests-json FILE writes the request list (lengths, token ids, the model config) for
// bench/serving/compare_hf.py.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/memory.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/random.hpp"
#include "genesis/serving/engine.hpp"
#include "genesis/serving/llm.hpp"
#include "genesis/tensor.hpp"

namespace {

namespace M = genesis::models;
namespace S = genesis::serving;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Opts {
  std::string device, dtype, config = "qwen2.5-0.5b", requests_json, plugin_path, backends;
  int64_t requests = -1;  // -1: 1000 on an accelerator, 200 on cpu
  int64_t min_prompt = 32, max_prompt = 1024, min_output = 16, max_output = 512;
  int64_t batch = 64, concurrency = 64, decode_prompt = 128, decode_tokens = 256;
  int64_t system_prompt = 1000, ttft_suffix = 32, ttft_repeats = 3;
  int64_t flat_requests = 10000;
  int64_t kv_blocks = 0, max_tokens_per_step = 2048, max_running = 256, threads = 0;
  double kv_memory = 0;  // <= 1: fraction of free device memory; > 1: bytes
  uint64_t seed = 0;
  bool sorted = false, json = false, skip_static = false;
};

void usage() {
  std::puts(
      "bench_serving_offline: the serving engine vs the static-batch generate() (random weights)\n"
      "  --device D            cpu, cuda, cuda:1 (default: cuda when available, else cpu)\n"
      "  --dtype T             float32, bfloat16, float16 (default: bfloat16 on an accelerator, float32 on cpu)\n"
      "  --preset NAME         a named shape (qwen2.5-0.5b, ...; default qwen2.5-0.5b)\n"
      "  --config PATH         a config.json file or a model folder holding one (instead of --preset)\n"
      "  --requests N          offline requests (default 1000 on an accelerator, 200 on cpu)\n"
      "  --min-prompt/--max-prompt N   prompt length range (default 32..1024)\n"
      "  --min-output/--max-output N   output length range (default 16..512)\n"
      "  --batch N             static-batch size for generate() (default 64)\n"
      "  --sorted              static batches of prompts sorted by length (default: arrival order)\n"
      "  --skip-static         only the engine in the throughput part\n"
      "  --concurrency N       the larger decode batch (default 64; 1 is always run)\n"
      "  --decode-prompt N / --decode-tokens N   decode part: prompt and new tokens (default 128 / 256)\n"
      "  --system-prompt N     cached prefix of the time-to-first-token part (default 1000; 0 skips it)\n"
      "  --ttft-repeats N      cold/warm pairs, the median is reported (default 3)\n"
      "  --flat-requests K     requests of the memory-flat check (default 10000; 0 skips it)\n"
      "  --kv-blocks N         KV blocks per layer's pool\n"
      "  --kv-memory X         KV budget: X <= 1 a fraction of free device memory, else bytes (suffix K/M/G ok)\n"
      "                        (default: 0.9 of free memory; on cpu 1 GiB)\n"
      "  --max-tokens-per-step N / --max-running N   engine limits (default 2048 / 256)\n"
      "  --seed S              request lengths, tokens and weights (default 0)\n"
      "  --threads N           cpu threads (default: the runtime's)\n"
      "  --plugin-path DIRS    plugin directories searched first\n"
      "  --backends MAP        which plugin serves a device type, e.g. cpu=reference\n"
      "  --requests-json FILE  write the request list for compare_hf.py\n"
      "  --json                print the figures as one JSON object on stdout (the table goes to stderr)");
}

double parse_bytes(const std::string& s) {
  size_t used = 0;
  double v = std::stod(s, &used);
  const std::string unit = s.substr(used);
  if (unit.empty() || unit == "B") return v;
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
  if (u == 'K') return v * 1024;
  if (u == 'M') return v * 1024 * 1024;
  if (u == 'G') return v * 1024 * 1024 * 1024;
  throw std::invalid_argument("unknown size unit in '" + s + "'");
}

Opts parse(int argc, char** argv) {
  Opts o;
  std::map<std::string, int64_t*> ints = {
      {"--requests", &o.requests},           {"--min-prompt", &o.min_prompt},
      {"--max-prompt", &o.max_prompt},       {"--min-output", &o.min_output},
      {"--max-output", &o.max_output},       {"--batch", &o.batch},
      {"--concurrency", &o.concurrency},     {"--decode-prompt", &o.decode_prompt},
      {"--decode-tokens", &o.decode_tokens}, {"--system-prompt", &o.system_prompt},
      {"--ttft-repeats", &o.ttft_repeats},   {"--flat-requests", &o.flat_requests},
      {"--kv-blocks", &o.kv_blocks},         {"--max-tokens-per-step", &o.max_tokens_per_step},
      {"--max-running", &o.max_running},     {"--threads", &o.threads}};
  std::map<std::string, std::string*> strs = {{"--device", &o.device},
                                              {"--dtype", &o.dtype},
                                              {"--config", &o.config},
                                              {"--preset", &o.config},
                                              {"--requests-json", &o.requests_json},
                                              {"--plugin-path", &o.plugin_path},
                                              {"--backends", &o.backends}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    }
    if (a == "--sorted") {
      o.sorted = true;
      continue;
    }
    if (a == "--json") {
      o.json = true;
      continue;
    }
    if (a == "--skip-static") {
      o.skip_static = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value (see --help)");
    const std::string v = argv[++i];
    if (auto it = ints.find(a); it != ints.end()) {
      size_t used = 0;
      *it->second = std::stoll(v, &used);
      if (used != v.size()) throw std::invalid_argument(a + ": '" + v + "' is not an integer");
    } else if (auto st = strs.find(a); st != strs.end()) {
      *st->second = v;
    } else if (a == "--kv-memory") {
      o.kv_memory = parse_bytes(v);
    } else if (a == "--seed") {
      o.seed = std::stoull(v);
    } else {
      throw std::invalid_argument("unknown option " + a + " (see --help)");
    }
  }
  if (o.min_prompt < 1 || o.max_prompt < o.min_prompt || o.min_output < 1 || o.max_output < o.min_output)
    throw std::invalid_argument("length ranges must satisfy 1 <= min <= max");
  if (o.batch < 1 || o.concurrency < 1 || o.decode_prompt < 1 || o.decode_tokens < 2 || o.ttft_repeats < 1)
    throw std::invalid_argument(
        "--batch, --concurrency, --decode-prompt and --ttft-repeats must be >= 1, "
        "--decode-tokens >= 2");
  return o;
}

M::QwenConfig load_config(const std::string& what) {
  std::ifstream dir_cfg(what + "/config.json");
  if (dir_cfg) return M::QwenConfig::from_file(what + "/config.json");
  std::ifstream file(what);
  if (file) return M::QwenConfig::from_file(what);
  const std::vector<std::string> names = M::QwenConfig::preset_names();
  if (std::find(names.begin(), names.end(), what) != names.end()) return M::QwenConfig::preset(what);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("'" + what + "' is neither a config.json, a model folder nor a named shape (" + known +
                              ")");
}

// Host resident set size in bytes (VmRSS of /proc/self/status; 0 where absent).
int64_t host_rss() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

// A log-normal length in [lo, hi]: ln L ~ N((ln lo + ln hi) / 2, (ln hi - ln lo) / 4), clamped (ShareGPT's prompt
// and reply lengths are roughly log-normal; this puts 95% of draws inside the range).
int64_t lognormal_length(genesis::HostRng& rng, int64_t lo, int64_t hi) {
  if (lo == hi) return lo;
  const double mu = 0.5 * (std::log(static_cast<double>(lo)) + std::log(static_cast<double>(hi)));
  const double sigma = 0.25 * (std::log(static_cast<double>(hi)) - std::log(static_cast<double>(lo)));
  const double u1 = std::max(rng.uniform(), 1e-300), u2 = rng.uniform();
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  const auto len = static_cast<int64_t>(std::llround(std::exp(mu + sigma * z)));
  return std::clamp(len, lo, hi);
}

std::vector<int64_t> random_tokens(genesis::HostRng& rng, int64_t n, int64_t vocab) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t& x : t) x = rng.below(vocab);
  return t;
}

struct Work {
  std::vector<int64_t> prompt;
  int64_t output = 0;
};

// Runs the engine until idle, noting the peak of blocks in use; progress to stderr every few seconds.
struct Stepper {
  S::Engine& engine;
  int64_t peak_blocks = 0;
  void run(const char* what, int64_t total_requests, const int64_t* done, const int64_t* tokens) {
    const Clock::time_point t0 = Clock::now();
    double next_report = 5;
    while (engine.has_work()) {
      engine.step();
      const S::EngineStats s = engine.stats();
      peak_blocks = std::max(peak_blocks, s.blocks_used);
      if (done && since(t0) > next_report) {
        next_report += 5;
        std::fprintf(stderr, "  [%s] %lld/%lld requests, %lld tokens, %.1f tok/s, %lld running, blocks %lld/%lld\n",
                     what, static_cast<long long>(*done), static_cast<long long>(total_requests),
                     static_cast<long long>(*tokens), static_cast<double>(*tokens) / since(t0),
                     static_cast<long long>(s.running), static_cast<long long>(s.blocks_used),
                     static_cast<long long>(s.blocks_total));
      }
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

int run(const Opts& o) {
  genesis::RuntimeOptions ro;
  ro.plugin_path = !o.plugin_path.empty() ? o.plugin_path : std::string(GENESIS_BENCH_PLUGIN_DIR);
  ro.num_threads = static_cast<int>(o.threads);
  ro.backends = o.backends;
  genesis::init(ro);
  const genesis::Device dev(!o.device.empty() ? o.device : genesis::cuda_available() ? "cuda" : "cpu");
  const bool accel = dev.type() != "cpu";
  const std::optional<genesis::DType> named = genesis::dtype_from_name(o.dtype);
  if (!o.dtype.empty() && !named) throw std::invalid_argument("--dtype: unknown dtype '" + o.dtype + "'");
  const genesis::DType dt = named ? *named : accel ? genesis::DType::bf16 : genesis::DType::f32;
  const int64_t n_requests = o.requests >= 0 ? o.requests : accel ? 1000 : 200;
  const M::QwenConfig cfg = load_config(o.config);
  const int64_t V = cfg.vocab_size, ctx = cfg.max_position_embeddings;
  genesis::NoGradGuard no_grad;

  // The requests: lengths from seed, prompt tokens from seed + 1 (prompt + output below the context).
  std::vector<Work> work(static_cast<size_t>(n_requests));
  {
    genesis::HostRng lengths(o.seed), tokens(o.seed + 1);
    for (Work& w : work) {
      const int64_t p = std::min(lognormal_length(lengths, o.min_prompt, o.max_prompt), ctx - 2);
      w.output = std::min(lognormal_length(lengths, o.min_output, o.max_output), ctx - 1 - p);
      w.prompt = random_tokens(tokens, p, V);
    }
  }
  int64_t prompt_tokens = 0, output_tokens = 0;
  for (const Work& w : work) {
    prompt_tokens += static_cast<int64_t>(w.prompt.size());
    output_tokens += w.output;
  }
  if (!o.requests_json.empty()) {
    std::ofstream f(o.requests_json);
    if (!f) throw std::runtime_error("cannot write " + o.requests_json);
    f << "{\"seed\": " << o.seed << ", \"preset_or_config\": \"" << json_escape(o.config)
      << "\", \"config\": " << cfg.to_json() << ",\n \"requests\": [\n";
    for (size_t i = 0; i < work.size(); ++i) {
      f << "  {\"output_len\": " << work[i].output << ", \"prompt\": [";
      for (size_t k = 0; k < work[i].prompt.size(); ++k) f << (k ? "," : "") << work[i].prompt[k];
      f << "]}" << (i + 1 < work.size() ? ",\n" : "\n");
    }
    f << "]}\n";
    std::fprintf(stderr, "wrote %zu requests to %s\n", work.size(), o.requests_json.c_str());
  }

  // The model (weights from seed) and an LLM over it: the engine is the offline API's own.
  genesis::manual_seed(o.seed);
  auto model_ptr = std::make_unique<M::QwenForCausalLM>(cfg, genesis::Options{.dtype = dt, .device = dev});
  const uint64_t model_bytes = genesis::memory_allocated(dev);
  S::EngineConfig ec;
  ec.num_blocks = o.kv_blocks;
  if (o.kv_memory > 1) ec.kv_cache_bytes = static_cast<int64_t>(o.kv_memory);
  if (o.kv_memory > 0 && o.kv_memory <= 1) ec.kv_cache_memory_fraction = o.kv_memory;
  ec.max_tokens_per_step = o.max_tokens_per_step;
  ec.max_running = o.max_running;
  ec.max_waiting = std::max<int64_t>(4096, n_requests);
  S::LLM llm(std::move(model_ptr), std::nullopt, ec);
  M::QwenForCausalLM& model = llm.model();
  S::Engine& engine = llm.engine();
  const int64_t pool_blocks = engine.config().num_blocks, block_size = engine.config().block_size;
  const double block_bytes = static_cast<double>(M::PagedKVCache::block_bytes(cfg, block_size, dt));
  FILE* table = o.json ? stderr : stdout;
  std::fprintf(table, "model     %s (%.1fM parameters, random weights, seed %llu) on %s, %s\n", o.config.c_str(),
               static_cast<double>(cfg.num_parameters()) / 1e6, static_cast<unsigned long long>(o.seed),
               dev.str().c_str(), genesis::dtype_name(dt));
  std::fprintf(table, "KV pool   %lld blocks of %lld positions (%.1f MiB over %lld layers)\n",
               static_cast<long long>(pool_blocks), static_cast<long long>(block_size),
               block_bytes * static_cast<double>(pool_blocks) / (1 << 20),
               static_cast<long long>(cfg.num_hidden_layers));
  std::fprintf(
      table, "requests  %lld: prompts %lld..%lld (%lld tokens), outputs %lld..%lld (%lld tokens), log-normal\n",
      static_cast<long long>(n_requests), static_cast<long long>(o.min_prompt), static_cast<long long>(o.max_prompt),
      static_cast<long long>(prompt_tokens), static_cast<long long>(o.min_output), static_cast<long long>(o.max_output),
      static_cast<long long>(output_tokens));
  std::fflush(table);

  Stepper stepper{engine};
  genesis::HostRng extra(o.seed + 2);
  // Submits one request of `prompt` with `max_new` new tokens, eos ignored, greedy.
  auto submit = [&](std::vector<int64_t> prompt, int64_t max_new, S::EventCallback cb) {
    S::Request r;
    r.prompt = std::move(prompt);
    r.sampling.max_new_tokens = max_new;
    r.sampling.ignore_eos = true;
    r.sampling.cuda_graph = true;
    return engine.submit(std::move(r), std::move(cb));
  };
  auto static_generate = [&](const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& outs) {
    M::GenerationConfig g;
    g.ignore_eos = true;
    g.max_new_tokens = *std::max_element(outs.begin(), outs.end());
    std::vector<int64_t> got(prompts.size(), 0);
    return M::generate(model, prompts, g, [&](size_t row, int64_t) { return ++got[row] < outs[row]; });
  };

  // Warm-up of both paths (kernels, allocator caches, graphs).
  std::fprintf(stderr, "warm-up ...\n");
  {
    for (int i = 0; i < 4; ++i) submit(random_tokens(extra, 16 + 8 * i, V), 8, [](const S::TokenEvent&) {});
    stepper.run("warm-up", 0, nullptr, nullptr);
    std::vector<std::vector<int64_t>> p;
    for (int i = 0; i < 4; ++i) p.push_back(random_tokens(extra, 16 + 8 * i, V));
    static_generate(p, {8, 8, 8, 8});
  }
  genesis::reset_peak_memory_stats(dev);
  stepper.peak_blocks = 0;

  // 1. Offline throughput.
  std::fprintf(stderr, "1. offline throughput: engine, %lld requests ...\n", static_cast<long long>(n_requests));
  int64_t done = 0, got_tokens = 0;
  std::vector<int64_t> produced(work.size(), 0);
  const Clock::time_point t_engine = Clock::now();
  for (size_t i = 0; i < work.size(); ++i)
    submit(work[i].prompt, work[i].output, [&, i](const S::TokenEvent& e) {
      if (e.token >= 0) {
        ++produced[i];
        ++got_tokens;
      }
      if (e.request_finished) ++done;
    });
  stepper.run("engine", n_requests, &done, &got_tokens);
  const double engine_s = since(t_engine);
  const int64_t engine_peak_blocks = stepper.peak_blocks;
  for (size_t i = 0; i < work.size(); ++i)
    if (produced[i] != work[i].output)
      throw std::runtime_error("engine: request " + std::to_string(i) + " produced " + std::to_string(produced[i]) +
                               " tokens, not " + std::to_string(work[i].output));
  const S::EngineStats after_throughput = engine.stats();

  double static_s = 0;
  int64_t static_computed = 0;
  if (!o.skip_static) {
    std::vector<size_t> order(work.size());
    std::iota(order.begin(), order.end(), 0);
    if (o.sorted)
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return work[a].prompt.size() < work[b].prompt.size(); });
    std::fprintf(stderr, "1. offline throughput: generate() in batches of %lld (%s) ...\n",
                 static_cast<long long>(o.batch), o.sorted ? "sorted by prompt length" : "arrival order");
    const Clock::time_point t_static = Clock::now();
    int64_t static_tokens = 0;
    for (size_t b = 0; b < order.size(); b += static_cast<size_t>(o.batch)) {
      std::vector<std::vector<int64_t>> prompts;
      std::vector<int64_t> outs;
      for (size_t k = b; k < std::min(order.size(), b + static_cast<size_t>(o.batch)); ++k) {
        prompts.push_back(work[order[k]].prompt);
        outs.push_back(work[order[k]].output);
      }
      const M::GenerationResult r = static_generate(prompts, outs);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (static_cast<int64_t>(r.tokens[k].size()) != outs[k])
          throw std::runtime_error("generate(): a row produced " + std::to_string(r.tokens[k].size()) +
                                   " tokens, not " + std::to_string(outs[k]));
        static_tokens += outs[k];
      }
      static_computed += static_cast<int64_t>(outs.size()) * (r.decode_steps + 1);
      std::fprintf(stderr, "  [generate] %zu/%zu requests, %lld tokens, %.1f tok/s\n", b + outs.size(), order.size(),
                   static_cast<long long>(static_tokens), static_cast<double>(static_tokens) / since(t_static));
    }
    static_s = since(t_static);
  }

  // 2. Decode rate at 1 and `concurrency` sequences.
  struct DecodeFig {
    int64_t batch;
    double engine_tps, static_tps;
  };
  std::vector<DecodeFig> decode;
  for (int64_t c : std::vector<int64_t>{1, o.concurrency}) {
    if (c == 1 && o.concurrency == 1 && !decode.empty()) break;
    const int64_t P = std::min(o.decode_prompt, ctx - o.decode_tokens - 1);
    std::fprintf(stderr, "2. decode at %lld sequences (prompt %lld, %lld new tokens) ...\n", static_cast<long long>(c),
                 static_cast<long long>(P), static_cast<long long>(o.decode_tokens));
    // Engine: tokens after the moment every sequence has its first token, over the time since.
    int64_t first_seen = 0, tokens_after = 0;
    Clock::time_point t_all_first;
    std::vector<char> seen(static_cast<size_t>(c), 0);
    for (int64_t k = 0; k < c; ++k)
      submit(random_tokens(extra, P, V), o.decode_tokens, [&, k](const S::TokenEvent& e) {
        if (e.token < 0) return;
        if (!seen[static_cast<size_t>(k)]) {
          seen[static_cast<size_t>(k)] = 1;
          if (++first_seen == c) t_all_first = Clock::now();
        } else if (first_seen == c) {
          ++tokens_after;
        }
      });
    stepper.run("decode", 0, nullptr, nullptr);
    const double engine_tps = static_cast<double>(tokens_after) / since(t_all_first);
    double static_tps = 0;
    if (!o.skip_static) {
      std::vector<std::vector<int64_t>> prompts;
      for (int64_t k = 0; k < c; ++k) prompts.push_back(random_tokens(extra, P, V));
      const M::GenerationResult r =
          static_generate(prompts, std::vector<int64_t>(static_cast<size_t>(c), o.decode_tokens));
      static_tps = static_cast<double>(c * r.decode_steps) / r.decode_seconds;
    }
    decode.push_back({c, engine_tps, static_tps});
  }

  // 3. Time to first token with the system prompt cached vs cold.
  double ttft_cold = 0, ttft_warm = 0, hit_rate = 0;
  int64_t sys_len = std::min(o.system_prompt, ctx - o.ttft_suffix - 2);
  if (o.system_prompt > 0 && sys_len > 0) {
    std::fprintf(stderr, "3. time to first token, %lld-token system prompt + %lld tokens, cold vs cached ...\n",
                 static_cast<long long>(sys_len), static_cast<long long>(o.ttft_suffix));
    std::vector<double> cold, warm;
    auto ttft = [&](std::vector<int64_t> prompt) {
      const Clock::time_point t0 = Clock::now();
      double first = -1;
      submit(std::move(prompt), 1, [&](const S::TokenEvent& e) {
        if (e.token >= 0 && first < 0) first = since(t0);
      });
      stepper.run("ttft", 0, nullptr, nullptr);
      return first;
    };
    int64_t warm_prompt = 0, warm_computed = 0;
    for (int64_t rep = 0; rep < o.ttft_repeats; ++rep) {
      const std::vector<int64_t> sys = random_tokens(extra, sys_len, V);  // fresh: not in the cache
      std::vector<int64_t> a = sys, b = sys;
      const std::vector<int64_t> sa = random_tokens(extra, o.ttft_suffix, V),
                                 sb = random_tokens(extra, o.ttft_suffix, V);
      a.insert(a.end(), sa.begin(), sa.end());
      b.insert(b.end(), sb.begin(), sb.end());
      cold.push_back(ttft(a));
      const int64_t computed_before = engine.stats().computed_tokens;
      warm.push_back(ttft(b));
      warm_computed += engine.stats().computed_tokens - computed_before;  // one new token: nothing decoded
      warm_prompt += static_cast<int64_t>(b.size());
    }
    ttft_cold = median(cold);
    ttft_warm = median(warm);
    hit_rate = 1.0 - static_cast<double>(warm_computed) / static_cast<double>(warm_prompt);
  }

  // 4. Peak KV use and device memory.
  const uint64_t peak_device = genesis::max_memory_allocated(dev);

  // 5. Memory-flat check.
  int64_t flat_blocks_before = engine.stats().blocks_used, flat_blocks_after = 0, flat_tracked_after = 0;
  int64_t rss_before = 0, rss_after = 0, rss_mid = 0;
  uint64_t dev_before = 0, dev_after = 0, reserved_before = 0, reserved_after = 0;
  if (o.flat_requests > 0) {
    std::fprintf(stderr, "5. memory-flat check: %lld short requests in waves of %lld ...\n",
                 static_cast<long long>(o.flat_requests), static_cast<long long>(o.max_running));
    auto wave = [&](int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t p = 16 + extra.below(49), out = 4 + extra.below(29);
        submit(random_tokens(extra, std::min(p, ctx - 40), V), out, [](const S::TokenEvent&) {});
      }
      stepper.run("flat", 0, nullptr, nullptr);
    };
    wave(std::min(o.flat_requests, o.max_running));  // a first wave: allocator caches reach their working size
    rss_before = host_rss();
    dev_before = genesis::memory_allocated(dev);
    reserved_before = genesis::memory_reserved(dev);
    int64_t left = o.flat_requests;
    const Clock::time_point t0 = Clock::now();
    double next_report = 5;
    while (left > 0) {
      const int64_t n = std::min(left, o.max_running);
      wave(n);
      left -= n;
      if (left <= o.flat_requests / 2 && rss_mid == 0) rss_mid = host_rss();
      const int64_t finished = o.flat_requests - left;
      if (left == 0 || since(t0) > next_report) {
        next_report = since(t0) + 5;
        std::fprintf(stderr, "  [flat] %lld/%lld requests, RSS %.1f MiB, blocks in use %lld (%.1f s)\n",
                     static_cast<long long>(finished), static_cast<long long>(o.flat_requests),
                     static_cast<double>(host_rss()) / (1 << 20), static_cast<long long>(engine.stats().blocks_used),
                     since(t0));
      }
    }
    rss_after = host_rss();
    dev_after = genesis::memory_allocated(dev);
    reserved_after = genesis::memory_reserved(dev);
    flat_blocks_after = engine.stats().blocks_used;
    flat_tracked_after = engine.stats().tracked_requests;
  }

  // The table.
  const double engine_tps = static_cast<double>(output_tokens) / engine_s;
  const double static_tps = o.skip_static ? 0 : static_cast<double>(output_tokens) / static_s;
  const double mib = 1 << 20;
  std::fprintf(table, "\n1. offline throughput, %lld requests (output tokens %lld)\n",
               static_cast<long long>(n_requests), static_cast<long long>(output_tokens));
  std::fprintf(table, "   %-52s %10s %12s %10s\n", "path", "total s", "output tok/s", "tok/s all");
  std::fprintf(table, "   %-52s %10.2f %12.1f %10.1f\n", "engine (serving::LLM, continuous batching)", engine_s,
               engine_tps, static_cast<double>(output_tokens + prompt_tokens) / engine_s);
  if (!o.skip_static) {
    const std::string name =
        "generate(), static batches of " + std::to_string(o.batch) + (o.sorted ? " (sorted)" : " (arrival order)");
    std::fprintf(table, "   %-52s %10.2f %12.1f %10.1f\n", name.c_str(), static_s, static_tps,
                 static_cast<double>(output_tokens + prompt_tokens) / static_s);
    std::fprintf(table, "   engine / static: %.2fx output tok/s (static rows decoded, useful or not: %lld)\n",
                 engine_tps / static_tps, static_cast<long long>(static_computed));
  }
  std::fprintf(table, "   engine: %lld steps, %lld preemptions; step time: packing %.2f s, forward %.2f s, sampling %.2f s\n",
               static_cast<long long>(after_throughput.steps), static_cast<long long>(after_throughput.preemptions),
               after_throughput.pack_seconds, after_throughput.forward_seconds, after_throughput.sample_seconds);
  std::fprintf(table, "\n2. decode tok/s (prompt %lld, %lld new tokens)\n", static_cast<long long>(o.decode_prompt),
               static_cast<long long>(o.decode_tokens));
  std::fprintf(table, "   %-12s %12s %14s %8s\n", "sequences", "engine", "generate()", "ratio");
  for (const DecodeFig& f : decode)
    std::fprintf(table, "   %-12lld %12.1f %14.1f %8.2f\n", static_cast<long long>(f.batch), f.engine_tps, f.static_tps,
                 f.static_tps > 0 ? f.engine_tps / f.static_tps : 0.0);
  if (o.system_prompt > 0 && sys_len > 0)
    std::fprintf(table,
                 "\n3. time to first token, %lld-token system prompt + %lld tokens (median of %lld)\n"
                 "   cold %.2f ms, prefix cached %.2f ms: %.2fx faster (%.1f%% of the cached requests' prompt tokens "
                 "came from the cache)\n",
                 static_cast<long long>(sys_len), static_cast<long long>(o.ttft_suffix),
                 static_cast<long long>(o.ttft_repeats), ttft_cold * 1e3, ttft_warm * 1e3, ttft_cold / ttft_warm,
                 100 * hit_rate);
  std::fprintf(table,
               "\n4. KV pool: peak %lld of %lld blocks in use during part 1 (%.1f%%), %.1f of %.1f MiB\n"
               "   device memory: model %.1f MiB, peak allocated %.1f MiB%s\n",
               static_cast<long long>(engine_peak_blocks), static_cast<long long>(pool_blocks),
               100.0 * static_cast<double>(engine_peak_blocks) / static_cast<double>(pool_blocks),
               block_bytes * static_cast<double>(engine_peak_blocks) / mib,
               block_bytes * static_cast<double>(pool_blocks) / mib, static_cast<double>(model_bytes) / mib,
               static_cast<double>(peak_device) / mib, peak_device == 0 ? " (not reported by this device)" : "");
  if (o.flat_requests > 0)
    std::fprintf(table,
                 "\n5. memory-flat over %lld requests: blocks in use %lld -> %lld, requests tracked after %lld\n"
                 "   host RSS %.1f -> %.1f MiB (half-way %.1f), device allocated %.1f -> %.1f MiB, reserved %.1f -> "
                 "%.1f MiB\n",
                 static_cast<long long>(o.flat_requests), static_cast<long long>(flat_blocks_before),
                 static_cast<long long>(flat_blocks_after), static_cast<long long>(flat_tracked_after),
                 static_cast<double>(rss_before) / mib, static_cast<double>(rss_after) / mib,
                 static_cast<double>(rss_mid) / mib, static_cast<double>(dev_before) / mib,
                 static_cast<double>(dev_after) / mib, static_cast<double>(reserved_before) / mib,
                 static_cast<double>(reserved_after) / mib);
  std::fflush(table);

  if (o.json) {
    std::ostringstream j;
    j << "{\"model\": \"" << json_escape(o.config) << "\", \"device\": \"" << dev.str() << "\", \"dtype\": \""
      << genesis::dtype_name(dt) << "\", \"seed\": " << o.seed << ", \"requests\": " << n_requests
      << ", \"prompt_tokens\": " << prompt_tokens << ", \"output_tokens\": " << output_tokens
      << ", \"batch\": " << o.batch << ", \"static_order\": \"" << (o.sorted ? "sorted" : "arrival") << "\""
      << ", \"engine_seconds\": " << engine_s << ", \"engine_output_tok_s\": " << engine_tps
      << ", \"static_seconds\": " << static_s << ", \"static_output_tok_s\": " << static_tps
      << ", \"throughput_ratio\": " << (static_tps > 0 ? engine_tps / static_tps : 0.0)
      << ", \"engine_steps\": " << after_throughput.steps << ", \"engine_pack_s\": " << after_throughput.pack_seconds
      << ", \"engine_forward_s\": " << after_throughput.forward_seconds
      << ", \"engine_sample_s\": " << after_throughput.sample_seconds << ", \"decode\": [";
    for (size_t i = 0; i < decode.size(); ++i)
      j << (i ? ", " : "") << "{\"sequences\": " << decode[i].batch << ", \"engine_tok_s\": " << decode[i].engine_tps
        << ", \"static_tok_s\": " << decode[i].static_tps << "}";
    j << "], \"ttft_cold_ms\": " << ttft_cold * 1e3 << ", \"ttft_cached_ms\": " << ttft_warm * 1e3
      << ", \"ttft_ratio\": " << (ttft_warm > 0 ? ttft_cold / ttft_warm : 0.0) << ", \"system_prompt\": " << sys_len
      << ", \"kv_blocks_total\": " << pool_blocks << ", \"kv_block_size\": " << block_size
      << ", \"kv_peak_blocks\": " << engine_peak_blocks
      << ", \"kv_peak_share\": " << static_cast<double>(engine_peak_blocks) / static_cast<double>(pool_blocks)
      << ", \"kv_peak_mib\": " << block_bytes * static_cast<double>(engine_peak_blocks) / mib
      << ", \"peak_device_mib\": " << static_cast<double>(peak_device) / mib
      << ", \"flat_requests\": " << o.flat_requests << ", \"flat_blocks_before\": " << flat_blocks_before
      << ", \"flat_blocks_after\": " << flat_blocks_after << ", \"flat_rss_before_mib\": " << rss_before / mib
      << ", \"flat_rss_after_mib\": " << rss_after / mib << ", \"flat_device_before_mib\": " << dev_before / mib
      << ", \"flat_device_after_mib\": " << dev_after / mib
      << ", \"flat_reserved_before_mib\": " << reserved_before / mib
      << ", \"flat_reserved_after_mib\": " << reserved_after / mib << "}";
    std::printf("%s\n", j.str().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_serving_offline: %s\n", e.what());
    return 1;
  }
}
