// cli_test.cpp - `genesis generate`, `genesis chat` and `genesis convert` end to end on a tiny
// random Qwen3 model that uses Qwen3's real tokenizer files: the command's output is compared
// with the library called directly (tokenizer + chat template + generate) on the same folder.
// Also: the chat commands (/system, /save, /load, ...), and --help showing every default.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "genesis/chat_template.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/tokenizer.hpp"

namespace {

namespace M = genesis::models;

const bool g_init = [] {
  genesis::init(
      {.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "reference", .backends = "", .no_default_paths = true});
  return true;
}();

std::string src(const std::string& rel) { return std::string(GENESIS_SOURCE_DIR) + "/" + rel; }

// A path in the temporary folder of this process alone: the tests of this file run as parallel
// processes (and other build trees' copies may run beside them), each writing its own stdin file.
std::string tmp(const std::string& name) { return testing::TempDir() + name + "_" + std::to_string(::getpid()); }

void copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
}

// A one-layer Qwen3 with Qwen3's vocabulary, saved with the real tokenizer files.
const std::string& model_dir() {
  static const std::string dir = [] {
    const std::string d = tmp("genesis_cli_qwen3");
    ::mkdir(d.c_str(), 0755);
    M::QwenConfig c = M::QwenConfig::preset("qwen3-0.6b");
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.vocab_size = 151936;
    c.dtype = "float32";
    genesis::manual_seed(3);
    M::QwenForCausalLM m(c);
    m.save_pretrained(d);
    copy_file(src("tests/fixtures/tokenizer/qwen3/tokenizer.json"), d + "/tokenizer.json");
    copy_file(src("tests/fixtures/tokenizer/qwen3/tokenizer_config.json"), d + "/tokenizer_config.json");
    return d;
  }();
  return dir;
}

// Runs the tool with stdin from `input`; returns stdout (with stderr too when `merge`, else
// stderr goes to the test log) and sets rc to the exit status.
std::string run_cli_rc(const std::string& args, int& rc, const std::string& input = "", bool merge = false) {
  const std::string in = tmp("genesis_cli_stdin.txt");
  std::ofstream(in, std::ios::binary | std::ios::trunc) << input;
  const std::string cmd = std::string(GENESIS_CLI_PATH) + " --plugin-path " + GENESIS_TEST_PLUGIN_DIR +
                          " --plugins reference --no-default-paths " + args + " < " + in + (merge ? " 2>&1" : "");
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// As run_cli_rc, expecting success.
std::string run_cli(const std::string& args, const std::string& input = "", bool merge = false) {
  int rc = 0;
  std::string out = run_cli_rc(args, rc, input, merge);
  EXPECT_EQ(rc, 0) << args;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int64_t> reference_generate(const std::vector<int64_t>& prompt, int64_t n, const genesis::Tokenizer& tok) {
  auto model = M::QwenForCausalLM::from_pretrained(model_dir());
  M::GenerationConfig g;
  g.max_new_tokens = n;
  g.stop_ids = {tok.eos_token_id, tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")};
  return M::generate(*model, {prompt}, g).tokens[0];
}

std::string joined(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

TEST(GenesisCli, GeneratePrintsWhatTheLibraryGenerates) {
  auto tok = genesis::Tokenizer::from_pretrained(model_dir());
  const auto want = reference_generate(tok.encode("Hello there, model", false), 6, tok);
  const std::string out =
      run_cli("generate --model " + model_dir() +
              " --device cpu --prompt 'Hello there, model' --max-new-tokens 6 --temperature 0 --print-ids");
  EXPECT_EQ(out, joined(want) + "\n");
  // --prompt-ids is the same prompt given as ids; text output is the decoded ids.
  const std::string ids = joined(tok.encode("Hello there, model", false));
  std::string comma = ids;
  for (char& c : comma)
    if (c == ' ') c = ',';
  EXPECT_EQ(run_cli("generate --model " + model_dir() + " --device cpu --prompt-ids " + comma +
                    " --max-new-tokens 6 --temperature 0 --print-ids"),
            joined(want) + "\n");
  EXPECT_EQ(run_cli("generate --model " + model_dir() +
                    " --device cpu --prompt 'Hello there, model' --max-new-tokens 6 "
                    "--temperature 0"),
            tok.decode(want, true) + "\n");
}

TEST(GenesisCli, ChatRendersTheTemplateKeepsHistoryAndResets) {
  auto tok = genesis::Tokenizer::from_pretrained(model_dir());
  genesis::ChatTemplate tmpl(tok.chat_template());
  // Turn 1 and, after /reset, turn 1 again: the same reply; turn 2 sees turn 1 in its prompt.
  std::vector<genesis::ChatMessage> msgs = {{"system", "Be brief."}, {"user", "hi"}};
  const auto r1 = reference_generate(tok.encode(tmpl.apply(msgs, true, false), false), 5, tok);
  msgs.push_back({"assistant", tok.decode(r1, true)});
  msgs.push_back({"user", "and then?"});
  const auto r2 = reference_generate(tok.encode(tmpl.apply(msgs, true, false), false), 5, tok);
  const std::string out =
      run_cli("chat --model " + model_dir() +
                  " --device cpu --system 'Be brief.' --no-thinking --max-new-tokens 5 --temperature 0",
              "hi\nand then?\n/reset\nhi\n/exit\n");
  const std::string t1 = tok.decode(r1, true), t2 = tok.decode(r2, true);
  // Piped input is echoed after each prompt, so the transcript reads as a conversation.
  const std::string want = "\n>>> hi\n" + t1 + "\n" + "\n>>> and then?\n" + t2 + "\n" +
                           "\n>>> /reset\n(conversation cleared)\n" + "\n>>> hi\n" + t1 + "\n" + "\n>>> /exit\n";
  EXPECT_EQ(out, want);
}

TEST(GenesisCli, ConvertWritesALoadableShardedCopy) {
  const std::string out = tmp("genesis_cli_converted");
  run_cli("convert --model " + model_dir() + " --out " + out + " --dtype bfloat16 --max-shard-size 2MB");
  struct stat s {};
  EXPECT_EQ(::stat((out + "/model.safetensors.index.json").c_str(), &s), 0);
  auto m = M::QwenForCausalLM::from_pretrained(out);
  EXPECT_EQ(m->model.embed_tokens.weight.dtype(), genesis::DType::bf16);
  EXPECT_EQ(m->config.dtype, "bfloat16");
  // The tokenizer files and the chat template come along, byte for byte: the copy can chat.
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    EXPECT_EQ(read_file(out + "/" + f), read_file(model_dir() + "/" + f)) << f;
  EXPECT_EQ(genesis::Tokenizer::from_pretrained(out).chat_template(),
            genesis::Tokenizer::from_pretrained(model_dir()).chat_template());
  EXPECT_NE(run_cli("chat --model " + out + " --device cpu --max-new-tokens 2 --temperature 0", "hi\n/exit\n")
                .find("\n>>> hi\n"),
            std::string::npos);
}

// A chat template file (chat_template.jinja) and the tokenizer's other files are copied too.
TEST(GenesisCli, ConvertCopiesTheChatTemplateFile) {
  const std::string from = tmp("genesis_cli_jinja_model"), out = tmp("genesis_cli_jinja_converted");
  ::mkdir(from.c_str(), 0755);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"})
    copy_file(model_dir() + "/" + f, from + "/" + f);
  std::ofstream(from + "/chat_template.jinja") << "{% for m in messages %}[{{ m.content }}]{% endfor %}";
  std::ofstream(from + "/special_tokens_map.json") << "{}";
  run_cli("convert --model " + from + " --out " + out);
  for (const char* f : {"chat_template.jinja", "special_tokens_map.json", "tokenizer.json"})
    EXPECT_EQ(read_file(out + "/" + f), read_file(from + "/" + f)) << f;
  EXPECT_EQ(genesis::Tokenizer::from_pretrained(out).chat_template(),
            "{% for m in messages %}[{{ m.content }}]{% endfor %}");
}

TEST(GenesisCli, ChatCommandsSystemSaveLoadClear) {
  auto tok = genesis::Tokenizer::from_pretrained(model_dir());
  genesis::ChatTemplate tmpl(tok.chat_template());
  std::vector<genesis::ChatMessage> msgs = {{"system", "Be brief."}, {"user", "hi"}};
  const auto r1 = reference_generate(tok.encode(tmpl.apply(msgs, true, false), false), 5, tok);
  msgs.push_back({"assistant", tok.decode(r1, true)});
  msgs.push_back({"user", "and then?"});
  const auto r2 = reference_generate(tok.encode(tmpl.apply(msgs, true, false), false), 5, tok);
  const std::string t1 = tok.decode(r1, true), t2 = tok.decode(r2, true);
  const std::string saved = tmp("genesis_cli_chat.json");
  // /system sets the system prompt; /save writes the conversation; /clear forgets it; /load
  // brings it back, so the next turn sees turn 1 (the same reply as without the detour).
  const std::string out =
      run_cli("chat --model " + model_dir() +
                  " --device cpu --no-thinking --max-new-tokens 5 "
                  "--temperature 0",
              "/system Be brief.\nhi\n/save " + saved + "\n/clear\n/load " + saved + "\nand then?\n/nope\n/exit\n");
  const std::string want = "\n>>> /system Be brief.\n(system prompt set; conversation cleared)\n" +
                           std::string("\n>>> hi\n") + t1 + "\n" + "\n>>> /save " + saved + "\n(saved 3 messages to " +
                           saved + ")\n" + "\n>>> /clear\n(conversation cleared)\n" + "\n>>> /load " + saved +
                           "\n(loaded 3 messages from " + saved + ")\n" + "\n>>> and then?\n" + t2 + "\n" +
                           "\n>>> /nope\n(unknown command /nope: /help lists them; //TEXT sends a line starting "
                           "with '/')\n" +
                           "\n>>> /exit\n";
  EXPECT_EQ(out, want);
  const nlohmann::json j = nlohmann::json::parse(read_file(saved));
  EXPECT_EQ(j, nlohmann::json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "hi"}, {"role": "assistant", "content": )" +
                                     nlohmann::json(t1).dump() + "}]}"));
  // /help lists every command; a file that is not a conversation is refused and the chat goes on.
  std::ofstream(saved, std::ios::trunc) << R"({"messages": [{"role": "wizard", "content": "x"}]})";
  const std::string help = run_cli("chat --model " + model_dir() + " --device cpu --max-new-tokens 1",
                                   "/help\n/load " + saved + "\n/exit\n");
  for (const char* c : {"/help", "/system TEXT", "/save FILE", "/load FILE", "/clear", "/exit"})
    EXPECT_NE(help.find(c), std::string::npos) << c;
  EXPECT_NE(help.find("(/load failed: " + saved + ": message 0 has role 'wizard' (system, user or assistant))"),
            std::string::npos)
      << help;
}

// The stats of a turn go to stderr on a line of their own, after the whole reply.
TEST(GenesisCli, ChatStatsOnTheirOwnLine) {
  const std::string out =
      run_cli("chat --model " + model_dir() + " --device cpu --max-new-tokens 3 --temperature 0", "hi\n/exit\n", true);
  const std::regex stats(R"(\n\[[0-9]+ tokens, [0-9.]+ tok/s, prompt [0-9]+ tokens\]\n)");
  EXPECT_TRUE(std::regex_search(out, stats)) << out;
  const std::string gen =
      run_cli("generate --model " + model_dir() + " --device cpu --prompt 'Hello' --max-new-tokens 3 --temperature 0",
              "", true);
  EXPECT_TRUE(std::regex_search(gen, std::regex(R"(\nprefill [0-9]+ tokens in [^\n]*\)\n$)"))) << gen;
}

// generate --chat --prompt '' sends an empty user message through the template (as the library
// does); without --chat on a model with a chat template, a note says what --chat does.
TEST(GenesisCli, GenerateEmptyChatPromptAndTemplateNote) {
  auto tok = genesis::Tokenizer::from_pretrained(model_dir());
  genesis::ChatTemplate tmpl(tok.chat_template());
  const auto want = reference_generate(tok.encode(tmpl.apply({{"user", ""}}, true), false), 4, tok);
  EXPECT_EQ(run_cli("generate --model " + model_dir() +
                    " --device cpu --chat --prompt '' --max-new-tokens 4 --temperature 0 --print-ids"),
            joined(want) + "\n");
  const std::string note = "has a chat template (an instruct model): --chat sends the prompt through it";
  EXPECT_NE(
      run_cli("generate --model " + model_dir() + " --device cpu --prompt hi --max-new-tokens 1", "", true).find(note),
      std::string::npos);
  EXPECT_EQ(run_cli("generate --model " + model_dir() + " --device cpu --chat --prompt hi --max-new-tokens 1", "", true)
                .find(note),
            std::string::npos);
}

// --help of every command shows every option's default: either CLI11's "=VALUE" or the help
// text's own "default: ..." (flags are off unless given; alternatives say "one of").
TEST(GenesisCli, HelpShowsEveryDefault) {
  size_t options = 0;
  for (const char* cmd : {"", "info", "generate", "chat", "convert", "bench llm", "bench train", "train-tokenizer",
                          "train-sft", "eval-chat", "tokenize", "test-ops", "launch"}) {
    const std::string help = run_cli(std::string(cmd) + " --help");
    std::istringstream in(help);
    std::vector<std::string> entries;  // an option line and its continuation lines
    bool in_entry = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  -", 0) == 0) {
        entries.push_back(line);
        in_entry = true;
      } else if (in_entry && line.size() > 10 && line.find_first_not_of(' ') >= 10) {
        entries.back().append(" ").append(line, line.find_first_not_of(' '));
      } else {
        in_entry = false;
      }
    }
    for (const std::string& e : entries) {
      std::smatch m;  // "  --name TYPE[:CHECK][=DEFAULT] [REQUIRED]   help"
      if (!std::regex_search(e, m, std::regex(R"(^  (-\S+(, ?-\S+)*) ([A-Z]+\S*( [^ ][^ ]*)*)(  +|$))"))) continue;
      ++options;
      const std::string head = m[3];
      const bool shown = head.find('=') != std::string::npos || head.find("REQUIRED") != std::string::npos ||
                         e.find("default") != std::string::npos || e.find("one of") != std::string::npos;
      EXPECT_TRUE(shown) << "genesis " << cmd << ": " << e;
    }
  }
  EXPECT_GT(options, 60u);
}

}  // namespace
