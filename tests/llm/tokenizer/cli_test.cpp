// tests/llm/tokenizer/cli_test.cpp - `genesis tokenize` end to end: --file and --text print the
// oracle's ids, --decode prints the oracle's text, bad input exits non-zero with a message.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common.h"

using namespace toktest;

namespace {

#ifdef GENESIS_CLI_PATH
// Runs the tool with `args` (shell words, already quoted); returns stdout+stderr and sets rc.
std::string run_cli(const std::string& args, int& rc) {
  const std::string cmd =
      std::string("'") + GENESIS_CLI_PATH + "' tokenize --model '" + kQwen3Dir + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string ids_line(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s + "\n";
}
#endif

struct TokenizerCli : ::testing::Test {
  void SetUp() override {
#ifndef GENESIS_CLI_PATH
    GTEST_SKIP() << "the genesis tool is not built";
#endif
  }
};

TEST_F(TokenizerCli, FileAndDecodeMatchTheOracle) {
#ifdef GENESIS_CLI_PATH
  // A few kinds of case (each run loads the 11 MB tokenizer.json): the first one holding each of these.
  const auto& cases = oracle();
  const std::string tmp =
      (std::filesystem::temp_directory_path() / ("genesis_tok_cli_" + std::to_string(::getpid()))).string();
  size_t checked = 0;
  for (const char* needle : {"Hello", "\r\n", "<|im_start|>", "<think>", "\xE4\xBD\xA0", "\xF0\x9F\x91\xA8", "\xCC\x81",
                             "\xFF", "\xF0\x9F\x98 ", "xxxxxxxxxxxxxxxx"}) {
    size_t i = 0;
    while (i < cases.size() && cases[i].input.find(needle) == std::string::npos) ++i;
    ASSERT_LT(i, cases.size()) << "no case holds " << show(needle);
    write_file(tmp, cases[i].input);
    int rc = 0;
    EXPECT_EQ(run_cli("--file '" + tmp + "'", rc), ids_line(cases[i].ids))
        << "case " << i << " \"" << show(cases[i].input) << "\"";
    EXPECT_EQ(rc, 0);
    if (checked++ % 2 == 0) {
      std::string list;  // mixes both separators
      for (size_t k = 0; k < cases[i].ids.size(); ++k)
        list.append(k ? (k % 2 ? "," : " ") : "").append(std::to_string(cases[i].ids[k]));
      EXPECT_EQ(run_cli("--decode '" + list + "'", rc), cases[i].decoded + "\n") << "case " << i;
      EXPECT_EQ(rc, 0);
    }
  }
  std::filesystem::remove(tmp);
#endif
}

TEST_F(TokenizerCli, TextOptionAndBadInput) {
#ifdef GENESIS_CLI_PATH
  int rc = 0;
  EXPECT_EQ(run_cli("--text 'Hello world'", rc), ids_line(oracle()[1].ids));  // case 1 is "Hello world"
  EXPECT_EQ(rc, 0);
  EXPECT_NE(run_cli("--decode '1 two 3'", rc).find("'two' is not an integer token id"), std::string::npos);
  EXPECT_NE(rc, 0);
  EXPECT_NE(run_cli("", rc).find("one of --text, --file or --decode"), std::string::npos);
  EXPECT_NE(rc, 0);
#endif
}

// --decode refuses ids outside the vocabulary (it printed nothing and succeeded before).
TEST_F(TokenizerCli, DecodeRefusesIdsOutsideTheVocabulary) {
#ifdef GENESIS_CLI_PATH
  int rc = 0;
  const std::string last = std::to_string(qwen3().vocab_size() - 1);
  EXPECT_EQ(run_cli("--decode " + last, rc), qwen3().decode({qwen3().vocab_size() - 1}) + "\n");
  EXPECT_EQ(rc, 0);
  for (const std::string& bad : {std::to_string(qwen3().vocab_size()), std::string("99999999"), std::string("-7")}) {
    const std::string out = run_cli("--decode '9707 " + bad + "'", rc);
    EXPECT_NE(out.find("token id " + bad + " is out of range: the vocabulary has ids 0 to " + last), std::string::npos)
        << out;
    EXPECT_EQ(rc, 2);
  }
#endif
}

// --file - reads standard input; --show-pieces prints one line per token: the oracle's id, a
// tab, and the token's bytes (printable ones as they are).
TEST_F(TokenizerCli, StdinAndShowPieces) {
#ifdef GENESIS_CLI_PATH
  const auto& cases = oracle();
  size_t i = 0;
  while (i < cases.size() && cases[i].input.find("\xE4\xBD\xA0") == std::string::npos) ++i;
  ASSERT_LT(i, cases.size());
  const std::string tmp =
      (std::filesystem::temp_directory_path() / ("genesis_tok_cli_stdin_" + std::to_string(::getpid()))).string();
  write_file(tmp, cases[i].input);
  int rc = 0;
  EXPECT_EQ(run_cli("--file - < '" + tmp + "'", rc), ids_line(cases[i].ids));
  EXPECT_EQ(rc, 0);
  std::istringstream lines(run_cli("--file - --show-pieces < '" + tmp + "'", rc));
  EXPECT_EQ(rc, 0);
  size_t k = 0;
  for (std::string line; std::getline(lines, line); ++k) {
    ASSERT_LT(k, cases[i].ids.size()) << line;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    EXPECT_EQ(line.substr(0, tab), std::to_string(cases[i].ids[k]));
    const std::string& bytes = qwen3().token_bytes(cases[i].ids[k]);
    if (std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= 0x20 && c < 0x7F && c != '\\'; })) {
      EXPECT_EQ(line.substr(tab + 1), bytes);
    }
  }
  EXPECT_EQ(k, cases[i].ids.size());
  std::filesystem::remove(tmp);
#endif
}

}  // namespace
