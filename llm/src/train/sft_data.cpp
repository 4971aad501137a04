// sft_data.cpp - the data half of genesis/train/sft.hpp: chat JSONL reading, tokenization with
// assistant-only labels, and the deterministic batcher (length-bucketed padding or packing) of
// supervised fine-tuning.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "genesis/random.hpp"
#include "genesis/train/sft.hpp"

namespace genesis::train {

// ---------------------------------------------------------------- reading

std::vector<std::vector<ChatMessage>> read_chat_jsonl(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(GN_ERR_NOT_FOUND, path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw Error(GN_ERR_INVALID_ARGUMENT, path + ": not a regular file");
  std::ifstream in(path);
  if (!in) throw Error(GN_ERR_IO, path + ": cannot open");
  std::vector<std::vector<ChatMessage>> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = path + ":" + std::to_string(n);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(GN_ERR_INVALID_ARGUMENT, where + ": not JSON (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array())
      throw Error(GN_ERR_INVALID_ARGUMENT, where + ": expected {\"messages\": [...]}");
    std::vector<ChatMessage> conv;
    for (const auto& m : j["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string())
        throw Error(GN_ERR_INVALID_ARGUMENT, where + ": each message needs string \"role\" and \"content\"");
      conv.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    if (conv.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, where + ": \"messages\" is empty");
    out.push_back(std::move(conv));
  }
  if (in.bad()) throw Error(GN_ERR_IO, path + ": read error");
  return out;
}

// ---------------------------------------------------------------- tokenization

ChatExample tokenize_chat(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& msgs,
                          int64_t max_len) {
  // The text is cut into pieces that alternate between "context" and "assistant": an assistant
  // turn is what rendering msgs[0..a] adds to rendering msgs[0..a) with a generation prompt.
  // Each piece is tokenized on its own; the pieces meet at special tokens or line breaks, where
  // the pre-tokenizer splits anyway, so the ids equal those of the whole text.
  ChatExample ex;
  size_t covered = 0;  // bytes of the final text already tokenized
  auto add = [&](const std::string& piece, bool learn) {
    if (piece.empty()) return;
    for (int64_t id : tok.encode(piece, false)) {
      ex.ids.push_back(id);
      ex.labels.push_back(learn ? id : kIgnoreIndex);
    }
  };
  auto prefix_error = [&](size_t turn) {
    return Error(GN_ERR_INVALID_ARGUMENT, "[sft] the chat template renders turn " + std::to_string(turn) +
                                              " differently once later turns follow; cannot tell which tokens "
                                              "belong to the assistant");
  };
  std::vector<ChatMessage> head;
  std::string prev;  // rendering of head so far (covered bytes of it are tokenized)
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i].role == "assistant") {
      const std::string prompt = tmpl.apply(head, true, false);
      head.push_back(msgs[i]);
      const std::string full = tmpl.apply(head, false, false);
      if (prompt.compare(0, covered, prev, 0, covered) != 0 || full.compare(0, prompt.size(), prompt) != 0)
        throw prefix_error(i);
      add(prompt.substr(covered), false);
      add(full.substr(prompt.size()), true);
      covered = full.size();
      prev = full;
    } else {
      head.push_back(msgs[i]);
    }
  }
  const std::string all = tmpl.apply(msgs, false, false);
  if (all.compare(0, covered, prev, 0, covered) != 0) throw prefix_error(msgs.size() - 1);
  add(all.substr(covered), false);
  if (max_len > 0 && static_cast<int64_t>(ex.ids.size()) > max_len) {
    ex.ids.resize(static_cast<size_t>(max_len));
    ex.labels.resize(static_cast<size_t>(max_len));
  }
  return ex;
}

// ---------------------------------------------------------------- batches

namespace {

// Fisher-Yates with the host stream: the same order on every platform (std::shuffle's is not).
void shuffle(std::vector<int64_t>& v, uint64_t seed) {
  HostRng g(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(g.below(static_cast<int64_t>(i)))]);
}

// The seed of one epoch's shuffle; `what` keeps the conversation order (1) and the batch order (2)
// apart.
uint64_t epoch_seed(uint64_t seed, int64_t epoch, uint64_t what) {
  return derive_seed(derive_seed(seed, what), static_cast<uint64_t>(epoch));
}

}  // namespace

SftBatcher::SftBatcher(std::vector<ChatExample> examples, BatchOptions o) : examples_(std::move(examples)), o_(o) {
  if (o_.batch_size < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] batch_size must be >= 1");
  if (o_.max_length < 2) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] max_length must be >= 2");
  if (o_.bucket_factor < 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] bucket_factor must be >= 1");
  for (ChatExample& e : examples_) {
    if (static_cast<int64_t>(e.ids.size()) > o_.max_length) {
      e.ids.resize(static_cast<size_t>(o_.max_length));
      e.labels.resize(static_cast<size_t>(o_.max_length));
    }
  }
  std::erase_if(examples_, [](const ChatExample& e) { return e.ids.size() < 2; });
  if (examples_.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] no conversation has 2 tokens or more");
}

const SftBatcher::Plan& SftBatcher::plan(int64_t epoch) const {
  if (epoch == cached_epoch_) return cached_;
  const int64_t n = static_cast<int64_t>(examples_.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (o_.shuffle) shuffle(order, epoch_seed(o_.seed, epoch, 1));
  auto len = [&](int64_t i) { return static_cast<int64_t>(examples_[static_cast<size_t>(i)].ids.size()); };

  std::vector<std::vector<int64_t>> rows;
  if (o_.packing) {
    // Next fit in shuffled order: a row closes when the next conversation does not fit.
    std::vector<int64_t> row;
    int64_t used = 0;
    for (int64_t i : order) {
      if (used + len(i) > o_.max_length && !row.empty()) {
        rows.push_back(std::move(row));
        row.clear();
        used = 0;
      }
      row.push_back(i);
      used += len(i);
    }
    if (!row.empty()) rows.push_back(std::move(row));
  } else {
    // Length buckets: within each window of bucket_factor batches, longest first, so a batch
    // pads to a length close to its rows'.
    const int64_t window = o_.bucket_factor * o_.batch_size;
    for (int64_t w = 0; w < n; w += window) {
      auto b = order.begin() + w, e = order.begin() + std::min(n, w + window);
      std::stable_sort(b, e, [&](int64_t x, int64_t y) { return len(x) > len(y); });
    }
    for (int64_t i : order) rows.push_back({i});
  }
  std::vector<std::vector<std::vector<int64_t>>> batches;
  for (size_t r = 0; r < rows.size(); r += static_cast<size_t>(o_.batch_size)) {
    const size_t end = std::min(rows.size(), r + static_cast<size_t>(o_.batch_size));
    batches.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(r),
                         rows.begin() + static_cast<std::ptrdiff_t>(end));
  }
  if (o_.shuffle && !o_.packing) {  // bucketed batches would otherwise come longest first
    std::vector<int64_t> idx(batches.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    shuffle(idx, epoch_seed(o_.seed, epoch, 2));
    std::vector<std::vector<std::vector<int64_t>>> out(batches.size());
    for (size_t i = 0; i < idx.size(); ++i) out[i] = std::move(batches[static_cast<size_t>(idx[i])]);
    batches = std::move(out);
  }
  cached_ = std::move(batches);
  cached_epoch_ = epoch;
  return cached_;
}

SftBatch SftBatcher::batch(int64_t epoch, int64_t i) const {
  const Plan& p = plan(epoch);
  if (i < 0 || i >= static_cast<int64_t>(p.size()))
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[sft] batch " + std::to_string(i) + " out of range (epoch has " + std::to_string(p.size()) + ")");
  const auto& rows = p[static_cast<size_t>(i)];
  SftBatch b;
  b.rows = static_cast<int64_t>(rows.size());
  for (const auto& row : rows) {
    int64_t l = 0;
    for (int64_t e : row) l += static_cast<int64_t>(examples_[static_cast<size_t>(e)].ids.size());
    b.length = std::max(b.length, l);
  }
  const size_t cells = static_cast<size_t>(b.rows * b.length);
  b.ids.assign(cells, std::max<int64_t>(o_.pad_id, 0));
  b.labels.assign(cells, kIgnoreIndex);
  b.positions.assign(cells, 0);
  if (o_.packing) b.segments.assign(cells, -1);
  for (size_t r = 0; r < rows.size(); ++r) {
    size_t at = r * static_cast<size_t>(b.length);
    const size_t row_end = at + static_cast<size_t>(b.length);
    int32_t seg = 0;
    for (int64_t e : rows[r]) {
      const ChatExample& ex = examples_[static_cast<size_t>(e)];
      for (size_t t = 0; t < ex.ids.size(); ++t, ++at) {
        b.ids[at] = ex.ids[t];
        // The first label of a conversation is never a target: it would be predicted from the
        // previous conversation's last token.
        b.labels[at] = t == 0 ? kIgnoreIndex : ex.labels[t];
        b.positions[at] = static_cast<int64_t>(t);
        if (o_.packing) b.segments[at] = seg;
        if (t > 0 && ex.labels[t] != kIgnoreIndex) ++b.target_tokens;
      }
      b.tokens += static_cast<int64_t>(ex.ids.size());
      ++seg;
    }
    for (int64_t pos = 0; at < row_end; ++at, ++pos) b.positions[at] = pos;  // padding: any position
  }
  return b;
}

DeviceBatch to_device(const SftBatch& b, const Device& device) {
  DeviceBatch d;
  const Options i64{.dtype = DType::i64, .device = device};
  d.ids = tensor(b.ids, {b.rows, b.length}, i64);
  d.labels = tensor(b.labels, {b.rows, b.length}, i64);
  if (!b.segments.empty()) {
    d.positions = tensor(b.positions, {b.rows, b.length}, i64);
    std::vector<int64_t> seg(b.segments.begin(), b.segments.end());
    Tensor s = tensor(seg, {b.rows, 1, b.length, 1}, i64);
    // keep[b, 0, i, j] = same conversation and j <= i (padding attends to padding: no empty row)
    d.mask = s.eq(s.view({b.rows, 1, 1, b.length})).tril();
  }
  // Position t of row r predicts label t + 1: only those with a target go through lm_head.
  std::vector<int64_t> rows, targets;
  for (int64_t r = 0; r < b.rows; ++r)
    for (int64_t t = 0; t + 1 < b.length; ++t) {
      const int64_t y = b.labels[static_cast<size_t>(r * b.length + t + 1)];
      if (y == kIgnoreIndex) continue;
      rows.push_back(r * (b.length - 1) + t);
      targets.push_back(y);
    }
  d.n_targets = static_cast<int64_t>(rows.size());
  if (d.n_targets > 0) {
    d.rows = tensor(rows, {d.n_targets}, i64);
    d.targets = tensor(targets, {d.n_targets}, i64);
  }
  return d;
}

}  // namespace genesis::train
