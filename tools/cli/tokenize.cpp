// tokenize.cpp - `genesis tokenize`: text -> token ids and ids -> text with a model folder's
// tokenizer.json (genesis::Tokenizer from the C++ frontend library).
//
//   genesis tokenize --model DIR --text "Hello"     ->  9707
//   genesis tokenize --model DIR --file notes.txt   ->  ids of the whole file, one line
//   genesis tokenize --model DIR --decode "9707 11" ->  Hello,   (commas also separate ids)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli.h"
#include "genesis/tokenizer.hpp"

namespace genesis::cli {
namespace {

// Options of `genesis tokenize` (exactly one of text, file, decode).
struct TokenizeOptions {
  std::string model;          // folder with tokenizer.json
  std::string text, file;     // what to encode
  std::string decode;         // ids to decode: "1 2 3" or "1,2,3"
  bool no_special = false;    // encode without the post-processor's special tokens
  bool skip_special = false;  // decode without special tokens
};

// "1 2 3", "1,2,3" or "[1, 2, 3]" -> ids; false (with `bad` set) on anything else.
bool parse_ids(const std::string& s, std::vector<int64_t>& ids, std::string& bad) {
  std::string token;
  auto flush = [&]() {
    if (token.empty()) return true;
    size_t used = 0;
    try {
      ids.push_back(std::stoll(token, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != token.size()) {
      bad = token;
      return false;
    }
    token.clear();
    return true;
  };
  for (char c : s) {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '[' || c == ']') {
      if (!flush()) return false;
    } else {
      token += c;
    }
  }
  return flush();
}

int run_tokenize(const GlobalOptions&, TokenizeOptions& opts) {
  const int given = !opts.text.empty() + !opts.file.empty() + !opts.decode.empty();
  if (given != 1) {
    std::fprintf(stderr, "genesis tokenize: give one of --text, --file or --decode\n");
    return 2;
  }
  try {
    const Tokenizer tok = Tokenizer::from_pretrained(opts.model);
    if (!opts.decode.empty()) {
      std::vector<int64_t> ids;
      std::string bad;
      if (!parse_ids(opts.decode, ids, bad)) {
        std::fprintf(stderr, "genesis tokenize: --decode: '%s' is not an integer token id\n", bad.c_str());
        return 2;
      }
      const std::string text = tok.decode(ids, opts.skip_special);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
      return 0;
    }
    std::string text = opts.text;
    if (!opts.file.empty()) {
      std::ifstream f(opts.file, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "genesis tokenize: --file: cannot open %s\n", opts.file.c_str());
        return 1;
      }
      std::stringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    }
    const std::vector<int64_t> ids = tok.encode(text, !opts.no_special);
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ' ';
      line += std::to_string(ids[i]);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "genesis tokenize: %s\n", e.what());
    return 1;
  }
}

}  // namespace

CommandRun setup_tokenize(CLI::App& cmd) {
  auto opts = std::make_shared<TokenizeOptions>();
  cmd.add_option("--model", opts->model, "model folder holding tokenizer.json (and tokenizer_config.json)")->required();
  CLI::Option* text = cmd.add_option("--text", opts->text, "text to encode");
  CLI::Option* file = cmd.add_option("--file", opts->file, "file whose whole content is encoded");
  CLI::Option* decode = cmd.add_option("--decode", opts->decode, "ids to decode, separated by spaces or commas");
  text->excludes(file)->excludes(decode);
  file->excludes(decode);
  cmd.add_flag("--no-special", opts->no_special, "encode without the post-processor's special tokens");
  cmd.add_flag("--skip-special", opts->skip_special, "decode without special tokens");
  return bind_command(opts, run_tokenize);
}

}  // namespace genesis::cli
