// llm/src/tokenizer/bpe.cpp - the BPE model: merge table, merging one pre-tokenized piece by
// rank (lowest rank first, leftmost first among equal ranks, as HF tokenizers does) and the word cache.
#include <algorithm>
#include <cstring>
#include <queue>

#include "tokenizer_impl.h"

namespace genesis::tokenizer_detail {

// ---- merge table

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  shift_ = 60;
  while (cap < 2 * n + 16) {
    cap *= 2;
    --shift_;
  }
  slots_.assign(cap, Entry{});
  mask_ = cap - 1;
}

bool MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  for (size_t i = slot(key);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.key == key) return false;
    if (e.key == kEmpty) {
      e = Entry{key, rank, merged};
      return true;
    }
  }
}

// ---- merging

namespace {

// Words up to this many symbols are merged by rescanning an array of pair ranks (one lookup per new
// pair, no allocation); longer ones use a heap of candidate merges over a linked list, O(n log n).
constexpr size_t kScanMaxSymbols = 256;

void merge_by_scan(const MergeTable& merges, std::vector<int32_t>& sym) {
  size_t n = sym.size();
  if (n < 2) return;
  int32_t rank[kScanMaxSymbols], merged[kScanMaxSymbols];  // of the pair (sym[i], sym[i + 1])
  auto fill = [&](size_t i) {
    const MergeTable::Entry* e = merges.find(sym[i], sym[i + 1]);
    rank[i] = e ? e->rank : INT32_MAX;
    merged[i] = e ? e->merged : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) fill(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (rank[i] < rank[best]) best = i;  // strict: the leftmost of equal ranks wins
    if (rank[best] == INT32_MAX) break;
    sym[best] = merged[best];
    for (size_t i = best + 1; i + 1 < n; ++i) {
      sym[i] = sym[i + 1];
      if (i + 2 < n) {
        rank[i] = rank[i + 1];
        merged[i] = merged[i + 1];
      }
    }
    --n;
    if (best + 1 < n) fill(best);
    if (best > 0) fill(best - 1);
  }
  sym.resize(n);
}

void merge_by_heap(const MergeTable& merges, std::vector<int32_t>& sym) {
  const int32_t n = int32_t(sym.size());
  const size_t count = sym.size();
  std::vector<int32_t> prev(count), next(count);
  for (int32_t i = 0; i < n; ++i) {
    prev[size_t(i)] = i - 1;
    next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<bool> dead(count, false);
  struct Candidate {
    int32_t rank, pos, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int32_t pos) {
    const int32_t right = next[size_t(pos)];
    if (right < 0) return;
    if (const MergeTable::Entry* e = merges.find(sym[size_t(pos)], sym[size_t(right)]))
      heap.push({e->rank, pos, e->merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t right = next[size_t(c.pos)];
    if (dead[size_t(c.pos)] || right < 0) continue;
    // Stale when either side changed since it was queued: the pair must still merge at this rank.
    const MergeTable::Entry* e = merges.find(sym[size_t(c.pos)], sym[size_t(right)]);
    if (!e || e->rank != c.rank) continue;
    sym[size_t(c.pos)] = e->merged;
    dead[size_t(right)] = true;
    next[size_t(c.pos)] = next[size_t(right)];
    if (next[size_t(right)] >= 0) prev[size_t(next[size_t(right)])] = c.pos;
    if (prev[size_t(c.pos)] >= 0) push(prev[size_t(c.pos)]);
    push(c.pos);
  }
  size_t w = 0;
  for (int32_t i = 0; i >= 0; i = next[size_t(i)]) sym[w++] = sym[size_t(i)];
  sym.resize(w);
}

}  // namespace

void Impl::bpe(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<int32_t> sym;
  if (!byte_level) {
    if (ignore_merges)
      if (auto it = token_to_id.find(piece); it != token_to_id.end() && (id_flags[size_t(it->second)] & kModelFlag)) {
        out.push_back(int32_t(it->second));
        return;
      }
    sym.reserve(piece.size());
    bpe_chars(piece, sym);
  } else if (ignore_merges) {
    std::string word;
    const ByteLevelTable& t = byte_level_table();
    for (char ch : piece) word += t.byte_to_utf8[uint8_t(ch)];
    if (auto it = token_to_id.find(word); it != token_to_id.end()) {
      out.push_back(int32_t(it->second));
      return;
    }
  }
  if (byte_level) {
    sym.reserve(piece.size());
    for (char ch : piece) {
      const int32_t id = byte_id[uint8_t(ch)];
      if (id >= 0)
        sym.push_back(id);
      else if (unk_id >= 0)
        sym.push_back(int32_t(unk_id));
      // else: HF drops a character that is neither in the vocabulary nor covered by an unk token
    }
  }
  if (sym.size() <= kScanMaxSymbols)
    merge_by_scan(merges, sym);
  else
    merge_by_heap(merges, sym);
  out.insert(out.end(), sym.begin(), sym.end());
}

// ---- word cache

bool WordCache::find(std::string_view piece, uint64_t hash, std::vector<int64_t>& out) const {
  if (slots_.empty()) return false;
  const size_t mask = slots_.size() - 1;
  for (size_t i = size_t(hash) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.hash == 0) return false;
    if (s.hash == hash && s.key_len == piece.size() &&
        std::memcmp(keys_.data() + s.key_off, piece.data(), piece.size()) == 0) {
      out.insert(out.end(), ids_.begin() + s.ids_off, ids_.begin() + s.ids_off + s.ids_len);
      return true;
    }
  }
}

void WordCache::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 4096 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.hash == 0) continue;
    size_t i = size_t(s.hash) & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void WordCache::insert(std::string_view piece, uint64_t hash, const std::vector<int32_t>& ids) {
  if (keys_.size() + piece.size() + (ids_.size() + ids.size()) * sizeof(int32_t) > kMaxBytes) {
    slots_.clear();
    used_ = 0;
    keys_.clear();
    ids_.clear();
  }
  if ((used_ + 1) * 2 > slots_.size()) grow();  // load factor <= 1/2
  const size_t mask = slots_.size() - 1;
  size_t i = size_t(hash) & mask;
  while (slots_[i].hash != 0) i = (i + 1) & mask;
  slots_[i] = Slot{hash, uint32_t(keys_.size()), uint32_t(piece.size()), uint32_t(ids_.size()), uint32_t(ids.size())};
  keys_.append(piece);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++used_;
}

// ---- one piece

void Impl::encode_word(std::string_view piece, std::vector<int64_t>& out, bool cache_held) const {
  if (piece.size() == 1 && byte_id[uint8_t(piece[0])] >= 0) {
    out.push_back(byte_id[uint8_t(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= WordCache::kMaxWordBytes;
  const uint64_t hash = cacheable ? (std::hash<std::string_view>{}(piece) | 1) : 0;
  std::unique_lock<std::mutex> lock(cache_mutex, std::defer_lock);
  const bool use_cache = cacheable && (cache_held || lock.try_lock());
  if (use_cache && cache.find(piece, hash, out)) return;
  std::vector<int32_t> ids;
  bpe(piece, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (use_cache) cache.insert(piece, hash, ids);
}

}  // namespace genesis::tokenizer_detail
