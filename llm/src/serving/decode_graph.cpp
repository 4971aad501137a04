// decode_graph.cpp - decode_graph.h: capture and replay of the engine's decode steps.
#include "decode_graph.h"

#include <algorithm>

#include "genesis/autograd.hpp"

namespace genesis::serving {

namespace {

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

struct DecodeGraphs::Graph {
  int64_t rows = 0, width = 0;
  // (5 * rows + 1 + rows * width) int64: ids | positions | slots | seq_lens | query_start (rows + 1) | block tables
  // (rows, width); one host-to-device copy a step. The graph itself converts the tables into `tables`.
  Tensor packed;
  Tensor tables;  // (rows, width) int32
  models::PagedBatch batch;
  Tensor ids, positions, sample_rows;
  Tensor logits, argmax;  // the captured outputs: (rows, V) and (rows) int64
  gn_graph* graph = nullptr;
  std::vector<int64_t> host;
  ~Graph() {
    if (graph) gn_graph_destroy(graph);
  }
};

DecodeGraphs::DecodeGraphs(models::QwenForCausalLM& model, models::PagedKVCache& cache, int64_t scratch_block,
                           int64_t max_rows)
    : model_(model), cache_(cache), scratch_(scratch_block), max_rows_(max_rows) {
  const Device dev = model.model.embed_tokens.weight.device();
  // Dynamic rope rebuilds its table as sequences grow: a captured step would keep the old one.
  usable_ = dev.type() == "cuda" && model.config.rope_scaling.rope_type != "dynamic";
}

DecodeGraphs::~DecodeGraphs() = default;

DecodeGraphs::Graph* DecodeGraphs::graph_for(int64_t bucket, int64_t width) {
  auto it = graphs_.find(bucket);
  if (it != graphs_.end() && it->second->width >= width) return it->second.get();
  if (it != graphs_.end()) graphs_.erase(it);  // too narrow: recaptured wider below
  const Device dev = model_.model.embed_tokens.weight.device();
  const Options i64{.dtype = DType::i64, .device = dev};
  auto g = std::make_unique<Graph>();
  g->rows = bucket;
  g->width = width;
  const int64_t R = bucket;
  const int64_t n = 5 * R + 1 + R * width;
  g->packed = zeros({n}, i64);
  g->tables = zeros({R, width}, {.dtype = DType::i32, .device = dev});
  g->ids = g->packed.slice(0, 0, R);
  g->positions = g->packed.slice(0, R, 2 * R);
  g->batch.cache = &cache_;
  g->batch.slots = g->packed.slice(0, 2 * R, 3 * R);
  g->batch.seq_lens = g->packed.slice(0, 3 * R, 4 * R);
  g->batch.query_start = g->packed.slice(0, 4 * R, 5 * R + 1);
  g->batch.block_tables = g->tables;
  g->sample_rows = arange(static_cast<double>(R), i64);
  // Valid inputs for the capture itself: every row a padding row (no write, one key of block scratch_).
  g->host.assign(static_cast<size_t>(n), scratch_);
  for (int64_t r = 0; r < R; ++r) {
    g->host[static_cast<size_t>(r)] = 0;
    g->host[static_cast<size_t>(R + r)] = 0;
    g->host[static_cast<size_t>(2 * R + r)] = -1;
    g->host[static_cast<size_t>(3 * R + r)] = 1;
    g->host[static_cast<size_t>(4 * R + r + 1)] = r + 1;
  }
  g->host[static_cast<size_t>(4 * R)] = 0;
  g->packed.copy_(tensor(g->host, {n}, i64));
  const Tensor tables_i64 = g->packed.slice(0, 5 * R + 1, n).view({R, width});
  g->tables.copy_(tables_i64);

  // The rotary table must already span every position a replay may use: sized to the model's context here.
  const int64_t max_pos = model_.config.max_position_embeddings;
  NoGradGuard no_grad;
  model_.forward_paged(g->ids, g->positions, g->batch, g->sample_rows, max_pos);  // warm: tables, workspaces
  gn_status* st = gn_graph_begin(runtime(), dev.c());
  if (st) {
    gn_status_free(st);
    broken_ = true;
    return nullptr;
  }
  try {
    g->tables.copy_(tables_i64);
    g->logits = model_.forward_paged(g->ids, g->positions, g->batch, g->sample_rows, max_pos);
    g->argmax = g->logits.argmax(-1);
  } catch (const Error&) {
    gn_graph* dead = nullptr;
    gn_status_free(gn_graph_end(runtime(), dev.c(), &dead));
    if (dead) gn_graph_destroy(dead);
    broken_ = true;
    return nullptr;
  }
  st = gn_graph_end(runtime(), dev.c(), &g->graph);
  if (st) {
    gn_status_free(st);
    g->graph = nullptr;
    broken_ = true;
    return nullptr;
  }
  ++captures_;
  Graph* out = g.get();
  graphs_[bucket] = std::move(g);
  return out;
}

bool DecodeGraphs::run(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions,
                       const std::vector<int64_t>& slots, const std::vector<const std::vector<int32_t>*>& tables,
                       const std::vector<int64_t>& seq_lens, Tensor* logits, Tensor* argmax) {
  const int64_t B = static_cast<int64_t>(ids.size());
  if (!usable_ || broken_ || B < 1 || B > max_rows_) return false;
  size_t need = 1;
  for (const auto* t : tables) need = std::max(need, t->size());
  const int64_t bucket = std::min(next_pow2(B), next_pow2(max_rows_));
  Graph* g = graph_for(bucket, std::max<int64_t>(16, next_pow2(static_cast<int64_t>(need))));
  if (!g) return false;
  const int64_t R = g->rows, W = g->width;
  const auto tab0 = static_cast<int64_t>(5 * R + 1);
  std::fill(g->host.begin() + tab0, g->host.end(), scratch_);
  for (int64_t r = 0; r < R; ++r) {
    const bool real = r < B;
    g->host[static_cast<size_t>(r)] = real ? ids[static_cast<size_t>(r)] : 0;
    g->host[static_cast<size_t>(R + r)] = real ? positions[static_cast<size_t>(r)] : 0;
    g->host[static_cast<size_t>(2 * R + r)] = real ? slots[static_cast<size_t>(r)] : -1;
    g->host[static_cast<size_t>(3 * R + r)] = real ? seq_lens[static_cast<size_t>(r)] : 1;
    g->host[static_cast<size_t>(4 * R + r + 1)] = r + 1;
    if (real) {
      const std::vector<int32_t>& t = *tables[static_cast<size_t>(r)];
      std::copy(t.begin(), t.end(), g->host.begin() + tab0 + r * W);
    }
  }
  const Device dev = model_.model.embed_tokens.weight.device();
  g->packed.copy_(tensor(g->host, {static_cast<int64_t>(g->host.size())}, {.dtype = DType::i64, .device = dev}));
  check(gn_graph_launch(g->graph), "serving engine");
  *logits = g->logits;
  *argmax = g->argmax;
  return true;
}

}  // namespace genesis::serving
