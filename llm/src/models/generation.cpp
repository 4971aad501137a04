// generation.cpp - genesis/models/generation.hpp: batched prefill, KV-cached decode (eager or a
// replayed CUDA graph), the token loop with stop conditions and streaming, and sampling.
//
// This file manages the batch, the cache, the graph and the tokens; what a forward needs at given
// positions (rotary rows, cache offsets, the mask) comes from the model (attention_context).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "genesis/autograd.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/random.hpp"

namespace genesis::models {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

// The state of one batched decode: the cache, the step's input buffers and (on CUDA) the graph.
class Decoder {
 public:
  Decoder(QwenForCausalLM& m, int64_t batch, int64_t capacity)
      : m_(m), B_(batch), cap_(capacity), dev_(m.model.embed_tokens.weight.device()) {
    cache_ = KVCache::allocate(m.config, batch, capacity, dev_, m.model.embed_tokens.weight.dtype());
    ids_ = zeros({B_, 1}, {.dtype = DType::i64, .device = dev_});
    pos_ = zeros({B_}, {.dtype = DType::i64, .device = dev_});
    ones_ = ones({B_}, {.dtype = DType::i64, .device = dev_});
  }
  ~Decoder() {
    if (graph_) gn_graph_destroy(graph_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Prompts right-padded to T; returns logits (B, V) at each row's last prompt position.  Its
  // context sizes the model's tables to the cache, before any step is captured.
  Tensor prefill(const std::vector<std::vector<int64_t>>& prompts, int64_t T) {
    std::vector<int64_t> flat(static_cast<size_t>(B_ * T), 0), last(static_cast<size_t>(B_));
    for (int64_t b = 0; b < B_; ++b) {
      const auto& p = prompts[static_cast<size_t>(b)];
      std::copy(p.begin(), p.end(), flat.begin() + b * T);
      last[static_cast<size_t>(b)] = b * T + static_cast<int64_t>(p.size()) - 1;
    }
    Tensor ids = tensor(flat, {B_, T}, {.device = dev_});
    Tensor h = m_.hidden_states(ids, m_.attention_context(T, &cache_));  // (B, T, hidden)
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
    // Dynamic rope scaling rebuilds the rotary table as sequences grow: a captured step would keep the old one.
    if (dev_.type() != "cuda" || m_.config.rope_scaling.rope_type == "dynamic") return false;
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
    ctx_ = m_.attention_context(pos_, &cache_, kv_len);  // kept: a captured step reads its tensors and tables
    Tensor h = m_.hidden_states(ids_, ctx_);             // (B, 1, hidden)
    return m_.logits(h.view({B_, h.size(-1)}));
  }

  QwenForCausalLM& m_;
  int64_t B_, cap_;
  Device dev_;
  KVCache cache_;
  AttentionContext ctx_;
  Tensor ids_, pos_, ones_;
  Tensor logits_, next_;
  gn_graph* graph_ = nullptr;
  bool greedy_graph_ = false;
};

}  // namespace

GenerationResult generate(QwenForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                          const GenerationConfig& cfg, const TokenCallback& on_token) {
  if (prompts.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] no prompts given");
  if (cfg.max_new_tokens < 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] max_new_tokens must be >= 0");
  if (cfg.temperature < 0 || !(cfg.top_p > 0 && cfg.top_p <= 1) || cfg.min_p < 0 || cfg.min_p > 1 || cfg.top_k < 0 ||
      !(cfg.repetition_penalty > 0))
    throw Error(
        GN_ERR_INVALID_ARGUMENT,
        "[generate] need temperature >= 0, 0 < top_p <= 1, 0 <= min_p <= 1, top_k >= 0, repetition_penalty > 0");
  if (!cfg.stop_strings.empty() && !cfg.decode)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] stop_strings need a decode function (a tokenizer)");
  const int64_t V = model.config.vocab_size;
  int64_t T = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty())
      throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] prompt " + std::to_string(b) + " is empty");
    for (int64_t id : prompts[b])
      if (id < 0 || id >= V)
        throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] prompt " + std::to_string(b) + " holds id " +
                                                 std::to_string(id) + " outside the vocabulary [0, " +
                                                 std::to_string(V) + ")");
    T = std::max<int64_t>(T, static_cast<int64_t>(prompts[b].size()));
  }
  // Positions past max_position_embeddings were never trained: a longer prompt is refused, and each row stops
  // ("length") once prompt + output fill the model's context.
  const int64_t max_pos = model.config.context_length();  // unbounded under dynamic rope scaling
  for (size_t b = 0; b < prompts.size(); ++b)
    if (static_cast<int64_t>(prompts[b].size()) >= max_pos)
      throw Error(GN_ERR_INVALID_ARGUMENT,
                  "[generate] prompt " + std::to_string(b) + " has " + std::to_string(prompts[b].size()) +
                      " tokens; the model's context (max_position_embeddings) is " + std::to_string(max_pos) +
                      " positions, which leaves no room for a new token");
  std::vector<int64_t> row_max(prompts.size());
  for (size_t b = 0; b < prompts.size(); ++b)
    row_max[b] = std::min<int64_t>(cfg.max_new_tokens, max_pos - static_cast<int64_t>(prompts[b].size()));
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
  HostRng rng(cfg.seed);
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
      next[b] = sample_token(row, history[b], cfg, rng.uniform());
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
      if (!done[b] && static_cast<int64_t>(r.tokens[b].size()) >= row_max[b]) done[b] = 1;
      all_done = all_done && done[b];
    }
    return all_done;
  };

  // Capacity: the longest prompt plus every new token, rounded up to 16 positions.
  const int64_t capacity = (T + std::min<int64_t>(cfg.max_new_tokens, max_pos - T) + 15) / 16 * 16;
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

// ---------------------------------------------------------------- sampling
// One token from a row of logits, in transformers' order: repetition penalty, temperature, top-k,
// top-p, min-p, then one draw.

int64_t sample_token(std::vector<float>& logits, const std::vector<int64_t>& history, const GenerationConfig& cfg,
                     double u) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (V == 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[generate] empty logits");
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  if (cfg.repetition_penalty != 1.0) {
    // Each id seen once: negative scores are multiplied, positive ones divided (CTRL's rule).
    std::vector<int64_t> seen(history);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    const float p = static_cast<float>(cfg.repetition_penalty);
    for (int64_t id : seen)
      if (id >= 0 && id < V)
        logits[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)] < 0 ? logits[static_cast<size_t>(id)] * p
                                                                              : logits[static_cast<size_t>(id)] / p;
  }
  if (cfg.temperature == 0)
    return std::max_element(logits.begin(), logits.end()) - logits.begin();  // first max on ties, as argmax

  const float inv_t = static_cast<float>(1.0 / cfg.temperature);
  for (float& x : logits) x *= inv_t;
  // Candidates sorted by descending score (ties by id); top-k trims the list first.
  std::vector<int32_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  auto by_score = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] != logits[static_cast<size_t>(b)]
               ? logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]
               : a < b;
  };
  size_t n = idx.size();
  if (cfg.top_k > 0 && static_cast<size_t>(cfg.top_k) < n) {
    std::nth_element(idx.begin(), idx.begin() + cfg.top_k - 1, idx.end(), by_score);
    // Keep every score equal to the k-th one (transformers compares against the k-th value).
    const float kth = logits[static_cast<size_t>(idx[static_cast<size_t>(cfg.top_k - 1)])];
    n = static_cast<size_t>(
        std::partition(idx.begin(), idx.end(), [&](int32_t i) { return logits[static_cast<size_t>(i)] >= kth; }) -
        idx.begin());
  }
  std::sort(idx.begin(), idx.begin() + static_cast<int64_t>(n), by_score);
  // Probabilities of the candidates (softmax over them; tokens cut by top-k have probability 0).
  const float top = logits[static_cast<size_t>(idx[0])];
  if (top == kOff) return idx[0];
  std::vector<double> prob(n);
  double z = 0;
  for (size_t i = 0; i < n; ++i)
    z += prob[i] = std::exp(static_cast<double>(logits[static_cast<size_t>(idx[i])]) - top);
  for (double& p : prob) p /= z;
  if (cfg.top_p < 1.0) {
    // Keep the most likely tokens until their mass reaches top_p (at least one).
    double mass = 0;
    size_t keep = 0;
    while (keep < n && (keep == 0 || mass < cfg.top_p)) mass += prob[keep++];
    n = keep;
  }
  if (cfg.min_p > 0) {
    const double floor = cfg.min_p * prob[0];
    size_t keep = 1;
    while (keep < n && prob[keep] >= floor) ++keep;
    n = keep;
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += prob[i];
  double target = u * total, acc = 0;
  for (size_t i = 0; i < n; ++i) {
    acc += prob[i];
    if (target < acc) return idx[i];
  }
  return idx[n - 1];
}

}  // namespace genesis::models
