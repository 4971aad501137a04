// tokenize.cpp - `genesis tokenize`: text -> token ids and ids -> text with a model folder's
// tokenizer.json (genesis::Tokenizer from the C++ frontend library).
//
//   genesis tokenize --model DIR --text "Hello"     ->  9707
//   genesis tokenize --model DIR --file notes.txt   ->  ids of the whole file, one line
//   genesis tokenize --model DIR --decode "9707 11" ->  Hello,   (commas also separate ids)
//   echo Hello | genesis tokenize --model DIR --file - --show-pieces  ->  9707<TAB>Hello, 198<TAB>\n
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
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
  bool show_pieces = false;   // one line per token: id, tab, its text
  CLI::Option *text_opt = nullptr, *file_opt = nullptr, *decode_opt = nullptr;
};

// The bytes of a token for one line of --show-pieces: control bytes, backslashes and bytes that
// are not part of a whole UTF-8 character are escaped (\n, \t, \xNN).
std::string printable_piece(const std::string& b) {
  std::string out;
  char hex[8];
  for (size_t i = 0; i < b.size();) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c == '\n' || c == '\t' || c == '\r' || c == '\\') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : "\\\\";
      ++i;
      continue;
    }
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    for (size_t k = 1; len > 1 && k < len; ++k)
      if (i + k >= b.size() || (static_cast<unsigned char>(b[i + k]) & 0xC0) != 0x80) len = 0;
    if (len == 0 || c < 0x20 || c == 0x7F) {
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
      continue;
    }
    out.append(b, i, len);
    i += len;
  }
  return out;
}

void print_pieces(const Tokenizer& tok, const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += std::to_string(id) + "\t" + printable_piece(tok.token_bytes(id)) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

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
  const size_t given = opts.text_opt->count() + opts.file_opt->count() + opts.decode_opt->count();
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
      for (int64_t id : ids)
        if (id < 0 || id >= tok.vocab_size()) {
          std::fprintf(stderr,
                       "genesis tokenize: --decode: token id %lld is out of range: the vocabulary has ids 0 to %lld\n",
                       static_cast<long long>(id), static_cast<long long>(tok.vocab_size() - 1));
          return 2;
        }
      if (opts.show_pieces) {
        print_pieces(tok, ids);
        return 0;
      }
      const std::string text = tok.decode(ids, opts.skip_special);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
      return 0;
    }
    std::string text = opts.text;
    if (opts.file == "-") {  // standard input
      std::stringstream ss;
      ss << std::cin.rdbuf();
      text = ss.str();
    } else if (!opts.file.empty()) {
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
    if (opts.show_pieces) {
      print_pieces(tok, ids);
      return 0;
    }
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
  existing_folder(
      cmd.add_option("--model", opts->model, "model folder holding tokenizer.json (and tokenizer_config.json)"))
      ->required();
  CLI::Option* text = opts->text_opt =
      cmd.add_option("--text", opts->text, "text to encode (one of --text, --file and --decode)");
  CLI::Option* file = opts->file_opt = cmd.add_option(
      "--file", opts->file,
      "file whose whole content is encoded, '-' for standard input (one of --text, --file and --decode)");
  CLI::Option* decode = opts->decode_opt = cmd.add_option(
      "--decode", opts->decode, "ids to decode, separated by spaces or commas (one of --text, --file and --decode)");
  text->excludes(file)->excludes(decode);
  file->excludes(decode);
  cmd.add_flag("--no-special", opts->no_special, "encode without the post-processor's special tokens");
  cmd.add_flag("--skip-special", opts->skip_special, "decode without special tokens");
  cmd.add_flag("--show-pieces", opts->show_pieces,
               "print one line per token: its id, a tab and its text (escaped: \\n, \\t, \\xNN)");
  return bind_command(opts, run_tokenize);
}

}  // namespace genesis::cli
