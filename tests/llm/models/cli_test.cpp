// cli_test.cpp - `genesis generate`, `genesis chat` and `genesis convert` end to end on a tiny
// random Qwen3 model that uses Qwen3's real tokenizer files: the command's output is compared
// with the library called directly (tokenizer + chat template + generate) on the same folder.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
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

// Runs the tool with stdin from `input`; returns stdout (stderr goes to the test log).
std::string run_cli(const std::string& args, const std::string& input = "") {
  const std::string in = tmp("genesis_cli_stdin.txt");
  std::ofstream(in, std::ios::binary | std::ios::trunc) << input;
  const std::string cmd = std::string(GENESIS_CLI_PATH) + " --plugin-path " + GENESIS_TEST_PLUGIN_DIR +
                          " --plugins reference --no-default-paths " + args + " < " + in;
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  return out;
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
}

}  // namespace
