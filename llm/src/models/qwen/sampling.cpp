// sampling.cpp - choosing one token from a row of logits, in transformers' order: repetition
// penalty, temperature, top-k, top-p, min-p, then one draw.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "genesis/models/generation.hpp"

namespace genesis::models {

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
      if (id >= 0 && id < V) logits[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)] < 0 ? logits[static_cast<size_t>(id)] * p : logits[static_cast<size_t>(id)] / p;
  }
  if (cfg.temperature == 0)
    return std::max_element(logits.begin(), logits.end()) - logits.begin();  // first max on ties, as argmax

  const float inv_t = static_cast<float>(1.0 / cfg.temperature);
  for (float& x : logits) x *= inv_t;
  // Candidates sorted by descending score (ties by id); top-k trims the list first.
  std::vector<int32_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  auto by_score = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] != logits[static_cast<size_t>(b)] ? logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] : a < b;
  };
  size_t n = idx.size();
  if (cfg.top_k > 0 && static_cast<size_t>(cfg.top_k) < n) {
    std::nth_element(idx.begin(), idx.begin() + cfg.top_k - 1, idx.end(), by_score);
    // Keep every score equal to the k-th one (transformers compares against the k-th value).
    const float kth = logits[static_cast<size_t>(idx[static_cast<size_t>(cfg.top_k - 1)])];
    n = static_cast<size_t>(std::partition(idx.begin(), idx.end(), [&](int32_t i) { return logits[static_cast<size_t>(i)] >= kth; }) - idx.begin());
  }
  std::sort(idx.begin(), idx.begin() + static_cast<int64_t>(n), by_score);
  // Probabilities of the candidates (softmax over them; tokens cut by top-k have probability 0).
  const float top = logits[static_cast<size_t>(idx[0])];
  if (top == kOff) return idx[0];
  std::vector<double> prob(n);
  double z = 0;
  for (size_t i = 0; i < n; ++i) z += prob[i] = std::exp(static_cast<double>(logits[static_cast<size_t>(idx[i])]) - top);
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
