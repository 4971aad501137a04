// generate.cpp - batched prefill, KV-cached decode (eager or a replayed CUDA graph) and the
// token loop with stop conditions and streaming.
#include <algorithm>
#include <chrono>

#include "genesis/autograd.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/nn/functional.hpp"

namespace genesis::models {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Deterministic uniforms in [0, 1) for sampling (splitmix64: same seed, same numbers everywhere).
struct Uniform {
  uint64_t s;
  double next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

std::vector<int64_t> ints_to_host(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  check(gn_tensor_to_host(t.handle(), out.data(), out.size() * sizeof(int64_t)), "generate");
  return out;
}

std::vector<float> floats_to_host(const Tensor& t) {
  Tensor f = t.dtype() == DType::f32 ? t.contiguous() : t.to(DType::f32);
  std::vector<float> out(static_cast<size_t>(f.numel()));
  check(gn_tensor_to_host(f.handle(), out.data(), out.size() * sizeof(float)), "generate");
  return out;
}

// Makes a fresh stream current on a CUDA device for the generation (graph capture needs a
// non-default stream) and restores the previous one afterwards.
class StreamScope {
 public:
  explicit StreamScope(const Device& d) : dev_(d) {
    if (d.type() != "cuda") return;
    prev_ = gn_stream_get_current(runtime(), d.c());
    check(gn_stream_create(runtime(), d.c(), &s_), "generate");
    check(gn_stream_set_current(runtime(), d.c(), s_), "generate");
  }
  ~StreamScope() {
    if (!s_) return;
    gn_status_free(gn_stream_synchronize(s_));
    gn_status_free(gn_stream_set_current(runtime(), dev_.c(), prev_));
    gn_status_free(gn_stream_destroy(s_));
  }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  bool active() const { return s_ != nullptr; }

 private:
  Device dev_;
  gn_stream* s_ = nullptr;
  gn_stream* prev_ = nullptr;
};

// The state of one batched decode: the cache, the position buffers and (on CUDA) the graph.
class Decoder {
 public:
  Decoder(QwenForCausalLM& m, int64_t batch, int64_t capacity)
      : m_(m), B_(batch), cap_(capacity), dev_(m.model.embed_tokens.weight.device()) {
    const Tensor& w = m.model.embed_tokens.weight;
    cache_ = KVCache::allocate(m.config, batch, capacity, dev_, w.dtype());
    auto tables = m.rope_tables(capacity);
    cos_ = tables.first;
    sin_ = tables.second;
    positions_ = arange(static_cast<double>(capacity), {.dtype = DType::i64, .device = dev_}).view({1, capacity});
    ids_ = zeros({B_, 1}, {.dtype = DType::i64, .device = dev_});
    pos_ = zeros({B_}, {.dtype = DType::i64, .device = dev_});
    ones_ = ones({B_}, {.dtype = DType::i64, .device = dev_});
    rope_all_tables(1);  // the decode steps' (made before any graph capture)
    step_table(capacity);
  }
  ~Decoder() {
    if (graph_) gn_graph_destroy(graph_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Prompts right-padded to T; returns logits (B, V) at each row's last prompt position.
  Tensor prefill(const std::vector<std::vector<int64_t>>& prompts, int64_t T) {
    std::vector<int64_t> flat(static_cast<size_t>(B_ * T), 0), last(static_cast<size_t>(B_));
    for (int64_t b = 0; b < B_; ++b) {
      const auto& p = prompts[static_cast<size_t>(b)];
      std::copy(p.begin(), p.end(), flat.begin() + b * T);
      last[static_cast<size_t>(b)] = b * T + static_cast<int64_t>(p.size()) - 1;
    }
    Tensor ids = tensor(flat, {B_, T}, {.device = dev_});
    AttentionContext ctx;
    const int64_t D = m_.config.head_dim;
    ctx.cos = cos_.slice(0, 0, T).view({1, 1, T, D});
    ctx.sin = sin_.slice(0, 0, T).view({1, 1, T, D});
    rope_all(ctx, cos_.slice(0, 0, T).view({1, T, 1, D}), sin_.slice(0, 0, T).view({1, T, 1, D}));
    ctx.cache = &cache_;
    ctx.write_pos = zeros({B_}, {.dtype = DType::i64, .device = dev_});
    ctx.prefill_from_zero = true;
    Tensor h = m_.hidden_states(ids, ctx);  // (B, T, hidden)
    Tensor rows = h.reshape({B_ * T, h.size(-1)}).index_select(0, tensor(last, {B_}, {.device = dev_}));
    return m_.logits(rows);  // (B, V)
  }

  // One decode step in eager mode: ids (B) at positions pos (B) -> logits (B, V).
  Tensor step_eager(const std::vector<int64_t>& ids, const std::vector<int64_t>& pos) {
    set_graph_inputs(ids, pos);
    const int64_t kv_len = *std::max_element(pos.begin(), pos.end()) + 1;
    return step(kv_len);
  }

  // Captures the step (kv_len = capacity, so one graph serves every position) with, inside the
  // graph, pos += 1 and (greedy) ids = argmax(logits).  Returns false when the device has no
  // graphs or the capture failed (the caller stays eager).
  bool capture(bool greedy) {
    if (dev_.type() != "cuda") return false;
    gn_status* st = gn_graph_begin(runtime(), dev_.c());
    if (st) {
      gn_status_free(st);
      return false;
    }
    try {
      logits_ = step(cap_);
      if (greedy) {
        next_ = logits_.argmax(-1);  // (B) int64
        ids_.copy_(next_.view({B_, 1}));
      }
      pos_.add_(ones_);  // a tensor operand: a scalar would be copied from the host mid-capture
    } catch (const Error&) {
      gn_graph* g = nullptr;
      gn_status_free(gn_graph_end(runtime(), dev_.c(), &g));
      if (g) gn_graph_destroy(g);
      logits_ = next_ = Tensor();
      return false;
    }
    st = gn_graph_end(runtime(), dev_.c(), &graph_);
    if (st) {
      gn_status_free(st);
      graph_ = nullptr;
      return false;
    }
    greedy_graph_ = greedy;
    return true;
  }

  // Inputs of the next step written into the fixed device buffers that the graph (or the eager
  // step) reads.
  void set_graph_inputs(const std::vector<int64_t>& ids, const std::vector<int64_t>& pos) {
    set_graph_ids(ids);
    pos_.copy_(tensor(pos, {B_}, {.device = dev_}));  // into the same storage: the graph reads it there
  }
  void set_graph_ids(const std::vector<int64_t>& ids) { ids_.copy_(tensor(ids, {B_, 1}, {.device = dev_})); }
  // Replays the graph: afterwards graph_next() (greedy) or graph_logits() hold the step's result.
  void replay() { check(gn_graph_launch(graph_), "generate"); }
  const Tensor& graph_next() const { return next_; }
  const Tensor& graph_logits() const { return logits_; }
  bool has_graph() const { return graph_ != nullptr; }
  bool greedy_graph() const { return greedy_graph_; }

 private:
  // Logits (B, V) for ids_ (B, 1) at positions pos_ (B), attending cache positions [0, kv_len).
  Tensor step(int64_t kv_len) {
    const int64_t D = m_.config.head_dim;
    AttentionContext ctx;
    if (step_table_.defined()) {  // one gather: (B, 2, H, D)
      const Tensor t = step_table_.index_select(0, pos_);
      ctx.cos_all = t.slice(1, 0, 1);  // (B, T=1, H, D)
      ctx.sin_all = t.slice(1, 1, 2);
      ctx.cos = ctx.cos_all.slice(2, 0, 1);  // (B, 1, 1, D): a query head's row is cos[pos]
      ctx.sin = ctx.sin_all.slice(2, 0, 1);
    } else {
      ctx.cos = cos_.index_select(0, pos_).view({B_, 1, 1, D});
      ctx.sin = sin_.index_select(0, pos_).view({B_, 1, 1, D});
      rope_all(ctx, ctx.cos, ctx.sin);  // (B, 1, 1, D) is also (B, T=1, 1, D)
    }
    ctx.cache = &cache_;
    ctx.write_pos = pos_;
    ctx.kv_len = kv_len;
    // Row b attends cache positions j <= pos[b] (right padding leaves stale entries beyond it).
    ctx.mask = positions_.slice(1, 0, kv_len).le(pos_.view({B_, 1})).view({B_, 1, 1, kv_len});
    Tensor h = m_.hidden_states(ids_, ctx);  // (B, 1, hidden)
    return m_.logits(h.view({B_, h.size(-1)}));
  }

  // The decode steps' rope tables for every position, (capacity, 2, H, D) with H = Hq + 2 Hkv:
  // cos over the query and key heads then 1 over the value heads, and sin then 0.  A step then
  // gathers its rows with one index_select instead of two gathers and two concatenations.  Only
  // for the fused projection (no q/k norm) and up to 64 MiB; otherwise steps build them as prefill does.
  void step_table(int64_t capacity) {
    const QwenConfig& c = m_.config;
    const int64_t hkv = c.num_key_value_heads, hqk = c.num_attention_heads + hkv, D = c.head_dim;
    const int64_t bytes = capacity * 2 * (hqk + hkv) * D * static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(cos_.dtype())));
    if (c.qk_norm || bytes > (int64_t{64} << 20)) return;
    const Options o{.dtype = cos_.dtype(), .device = dev_};
    const Tensor cs = cos_.slice(0, 0, capacity).view({capacity, 1, 1, D}).expand({capacity, 1, hqk, D});
    const Tensor sn = sin_.slice(0, 0, capacity).view({capacity, 1, 1, D}).expand({capacity, 1, hqk, D});
    namespace F = nn::functional;
    step_table_ = F::cat({F::cat({cs, ones({capacity, 1, hkv, D}, o)}, 2), F::cat({sn, zeros({capacity, 1, hkv, D}, o)}, 2)},
                         1)
                      .contiguous();
  }

  void rope_all_tables(int64_t T) {
    const QwenConfig& c = m_.config;
    const Options o{.dtype = cos_.dtype(), .device = dev_};
    one_v_ = ones({B_, T, c.num_key_value_heads, c.head_dim}, o);
    zero_v_ = zeros({B_, T, c.num_key_value_heads, c.head_dim}, o);
  }

  // Tables for one rope over every head of the fused projection: cos/sin (N, T, 1, D) repeated over
  // the query and key heads, then 1 and 0 over the value heads (rotation by angle 0).
  void rope_all(AttentionContext& ctx, const Tensor& cos, const Tensor& sin) {
    const QwenConfig& c = m_.config;
    const int64_t N = cos.size(0), T = cos.size(1), D = c.head_dim, hqk = c.num_attention_heads + c.num_key_value_heads;
    const Options o{.dtype = cos.dtype(), .device = dev_};
    const bool decode = N == B_ && T == 1;  // the preallocated identity part fits
    const Tensor one = decode ? one_v_ : ones({N, T, c.num_key_value_heads, D}, o);
    const Tensor zero = decode ? zero_v_ : zeros({N, T, c.num_key_value_heads, D}, o);
    ctx.cos_all = nn::functional::cat({cos.expand({N, T, hqk, D}), one}, 2);
    ctx.sin_all = nn::functional::cat({sin.expand({N, T, hqk, D}), zero}, 2);
  }

  QwenForCausalLM& m_;
  int64_t B_, cap_;
  Device dev_;
  KVCache cache_;
  Tensor cos_, sin_, positions_, ids_, pos_, ones_, one_v_, zero_v_, step_table_;
  Tensor logits_, next_;
  gn_graph* graph_ = nullptr;
  bool greedy_graph_ = false;
};

}  // namespace

GenerationResult generate(QwenForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                          const GenerationConfig& cfg, const TokenCallback& on_token) {
  if (prompts.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] no prompts given");
  if (cfg.max_new_tokens < 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] max_new_tokens must be >= 0");
  if (cfg.temperature < 0 || !(cfg.top_p > 0 && cfg.top_p <= 1) || cfg.min_p < 0 || cfg.min_p > 1 ||
      cfg.top_k < 0 || !(cfg.repetition_penalty > 0))
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[generate] need temperature >= 0, 0 < top_p <= 1, 0 <= min_p <= 1, top_k >= 0, repetition_penalty > 0");
  if (!cfg.stop_strings.empty() && !cfg.decode)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] stop_strings need a decode function (a tokenizer)");
  const int64_t V = model.config.vocab_size;
  int64_t T = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] prompt " + std::to_string(b) + " is empty");
    for (int64_t id : prompts[b])
      if (id < 0 || id >= V)
        throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] prompt " + std::to_string(b) + " holds id " +
                                                 std::to_string(id) + " outside the vocabulary [0, " + std::to_string(V) + ")");
    T = std::max<int64_t>(T, static_cast<int64_t>(prompts[b].size()));
  }
  const int64_t B = static_cast<int64_t>(prompts.size());
  GenerationResult r;
  r.tokens.resize(prompts.size());
  r.finish_reasons.assign(prompts.size(), "length");
  for (const auto& p : prompts) r.prompt_tokens += static_cast<int64_t>(p.size());
  if (cfg.max_new_tokens == 0) return r;

  std::vector<int64_t> stop = cfg.stop_ids;
  if (!cfg.ignore_eos) {
    for (int64_t e : model.generation_defaults.eos_token_ids) stop.push_back(e);
    for (int64_t e : model.config.eos_token_ids) stop.push_back(e);
  }
  const bool greedy = cfg.temperature == 0 && cfg.repetition_penalty == 1.0;

  NoGradGuard no_grad;
  struct EvalScope {  // eval mode for the call, the caller's mode restored even on an error
    nn::Module& m;
    bool was_training;
    ~EvalScope() { m.train(was_training); }
  } eval_scope{model, model.is_training()};
  model.eval();
  const Device dev = model.model.embed_tokens.weight.device();
  StreamScope stream(dev);
  Uniform rng{cfg.seed};
  std::vector<std::vector<int64_t>> history(prompts);  // prompt + output, for the repetition penalty
  std::vector<char> done(prompts.size(), 0);
  std::vector<int64_t> pos(prompts.size());
  for (size_t b = 0; b < prompts.size(); ++b) pos[b] = static_cast<int64_t>(prompts[b].size());

  // Picks each row's next token from logits (B, V) on the host, or takes device argmax ids.
  auto choose = [&](const Tensor& logits) {
    std::vector<int64_t> next(prompts.size(), 0);
    if (greedy) return ints_to_host(logits.argmax(-1));
    std::vector<float> all = floats_to_host(logits);
    for (size_t b = 0; b < prompts.size(); ++b) {
      std::vector<float> row(all.begin() + static_cast<int64_t>(b) * V, all.begin() + static_cast<int64_t>(b + 1) * V);
      next[b] = sample_token(row, history[b], cfg, rng.next());
    }
    return next;
  };
  // Records each live row's token, applies the stop rules; returns true when every row is done.
  auto accept = [&](const std::vector<int64_t>& next) {
    bool all_done = true;
    for (size_t b = 0; b < prompts.size(); ++b) {
      if (done[b]) continue;
      const int64_t id = next[b];
      r.tokens[b].push_back(id);
      history[b].push_back(id);
      ++r.generated_tokens;
      if (on_token && !on_token(b, id)) {
        done[b] = 1;
        r.finish_reasons[b] = "callback";
      } else if (std::find(stop.begin(), stop.end(), id) != stop.end()) {
        done[b] = 1;
        r.finish_reasons[b] = "stop";
      } else if (!cfg.stop_strings.empty()) {
        const std::string text = cfg.decode(r.tokens[b]);
        for (const std::string& s : cfg.stop_strings)
          if (!s.empty() && text.find(s) != std::string::npos) {
            done[b] = 1;
            r.finish_reasons[b] = "stop";
          }
      }
      if (!done[b] && static_cast<int64_t>(r.tokens[b].size()) >= cfg.max_new_tokens) done[b] = 1;
      all_done = all_done && done[b];
    }
    return all_done;
  };

  // Capacity: the longest prompt plus every new token, rounded up to 16 positions.
  const int64_t capacity = (T + cfg.max_new_tokens + 15) / 16 * 16;
  Decoder dec(model, B, capacity);
  auto t0 = Clock::now();
  std::vector<int64_t> next = choose(dec.prefill(prompts, T));
  bool finished = accept(next);
  r.prefill_seconds = seconds_since(t0);

  t0 = Clock::now();
  bool tried_graph = false;
  while (!finished) {
    // Rows that are done keep stepping (the batch is fixed) with their last token.
    if (!dec.has_graph() && !tried_graph && cfg.cuda_graph && stream.active() && r.decode_steps >= 1) {
      tried_graph = true;
      dec.capture(greedy);
      if (dec.has_graph()) dec.set_graph_inputs(next, pos);
    }
    if (dec.has_graph()) {
      if (!dec.greedy_graph()) dec.set_graph_ids(next);
      dec.replay();
      next = dec.greedy_graph() ? ints_to_host(dec.graph_next()) : choose(dec.graph_logits());
      r.used_cuda_graph = true;
    } else {
      next = choose(dec.step_eager(next, pos));
    }
    for (auto& p : pos) ++p;
    ++r.decode_steps;
    finished = accept(next);
  }
  r.decode_seconds = seconds_since(t0);
  return r;
}

}  // namespace genesis::models
