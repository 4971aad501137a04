// genesis/train/bpe_trainer.hpp - learns a byte-level BPE tokenizer from text files and writes it
// as a Hugging Face folder (tokenizer.json, tokenizer_config.json) that genesis::Tokenizer and
// transformers' AutoTokenizer both load.
//
//   genesis::train::BpeTrainerOptions o;
//   o.vocab_size = 1024;
//   genesis::train::train_bpe_tokenizer({"corpus.txt", "chat.jsonl"}, "out/tokenizer", o);
//
// Text is normalized (NFC) and split by Qwen2's pre-tokenizer regex (digits one by one), each
// piece mapped to GPT-2's byte characters; merges are learned from piece counts, most frequent
// pair first (ties: the pair whose strings sort first).  See docs/tokenizer.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace genesis::train {

/** How the tokenizer is learned and what its config says. */
struct BpeTrainerOptions {
  int64_t vocab_size = 8192;  ///< total ids: 256 bytes + merges + special tokens
  int64_t min_frequency = 2;  ///< a pair seen fewer times is never merged
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>",
                                             "<|im_end|>"};  ///< ids after the vocabulary
  std::string eos_token = "<|im_end|>";                      ///< tokenizer_config.json eos_token
  std::string pad_token = "<|endoftext|>";                   ///< tokenizer_config.json pad_token
  std::string chat_template;                                 ///< "" = ChatML (<|im_start|>role\ncontent<|im_end|>\n)
  std::function<void(const std::string&)> log;               ///< progress lines (null = silent)
};

/** What was learned. */
struct BpeTrainingResult {
  int64_t vocab_size = 0;  ///< ids written, special tokens included
  int64_t merges = 0;
  int64_t words = 0;  ///< distinct pre-tokenized pieces in the corpus
  int64_t bytes = 0;  ///< corpus size read
};

/** The ChatML template written when BpeTrainerOptions::chat_template is empty. */
const std::string& chatml_template();

/** Learns from files (plain text; .jsonl chat files contribute their messages' contents) and
 * writes out_dir/tokenizer.json and out_dir/tokenizer_config.json atomically.  Throws
 * genesis::Error naming a missing file or a bad option. */
BpeTrainingResult train_bpe_tokenizer(const std::vector<std::string>& files, const std::string& out_dir,
                                      const BpeTrainerOptions& o = {});

}  // namespace genesis::train
