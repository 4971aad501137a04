// bench_tokenizer.cpp - encodes a corpus with genesis::Tokenizer and reports MB/s.
//
//   bench_tokenizer MODEL_DIR CORPUS [IDS_OUT] [PASSES]
//
// CORPUS is UTF-8 text whose documents are separated by form feeds ('\f'); each document is one
// encode() call.  Prints the load time, the first (cold cache) pass and the best of PASSES passes in
// MB/s (10^6 bytes of input per second).  IDS_OUT receives the ids of the first pass as little-endian
// int32, each document followed by -1, for run.sh to compare with transformers.js.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "genesis/tokenizer.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR CORPUS [IDS_OUT] [PASSES]\n", argv[0]);
    return 2;
  }
  const int passes = argc > 4 ? std::atoi(argv[4]) : 3;
  std::ifstream f(argv[2], std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", argv[2]);
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string corpus = ss.str();
  std::vector<std::string_view> docs;
  for (size_t start = 0; start <= corpus.size();) {
    size_t end = corpus.find('\f', start);
    if (end == std::string::npos) end = corpus.size();
    docs.emplace_back(corpus.data() + start, end - start);
    start = end + 1;
  }

  try {
    auto t0 = std::chrono::steady_clock::now();
    const genesis::Tokenizer tok = genesis::Tokenizer::from_pretrained(argv[1]);
    const double load_s = seconds_since(t0);

    std::vector<int32_t> first;
    double cold_s = 0, best_s = 1e30;
    size_t n_ids = 0;
    for (int p = 0; p < passes; ++p) {
      t0 = std::chrono::steady_clock::now();
      size_t count = 0;
      for (std::string_view d : docs) {
        const std::vector<int64_t> ids = tok.encode(d);
        count += ids.size();
        if (p == 0) {
          first.insert(first.end(), ids.begin(), ids.end());
          first.push_back(-1);
        }
      }
      const double s = seconds_since(t0);
      if (p == 0) {
        cold_s = s;
        n_ids = count;
      }
      best_s = std::min(best_s, s);
    }
    const double mb = double(corpus.size()) / 1e6;
    std::printf("genesis: %zu documents, %.2f MB, %zu ids; load %.2f s\n", docs.size(), mb, n_ids, load_s);
    std::printf("genesis: first pass %.2f s = %.2f MB/s; best of %d passes %.2f s = %.2f MB/s\n", cold_s, mb / cold_s,
                passes, best_s, mb / best_s);
    if (argc > 3) {
      std::ofstream out(argv[3], std::ios::binary);
      out.write(reinterpret_cast<const char*>(first.data()), std::streamsize(first.size() * sizeof(int32_t)));
    }
  } catch (const genesis::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
