// make_model.cpp - writes the model folders the server tests run, saved with the real Qwen3 tokenizer files:
//   serve_test_model OUT_DIR             a one-layer Qwen3 with Qwen3's vocabulary and random weights (seeded)
//   serve_test_model --scripted OUT_DIR  a one-layer Qwen3 whose greedy answer to every chat prompt is a fixed text
//                                        (a tool call, see kScript), by construction of its weights
//   serve_test_model --adapter BASE_DIR OUT_DIR
//                                        a PEFT LoRA adapter folder for the model in BASE_DIR (r 4 on every linear
//                                        projection, B random rather than zero: it changes the answers)
//
// The scripted model is a bigram table: attention and MLP write nothing (o_proj and down_proj are zero), so
// the last hidden state is the embedding of the last token; the embeddings of the script's tokens are
// distinct unit vectors and the head maps each one to the script's next token. The chat template ends a
// prompt with "<|im_start|>assistant\n", so the answer starts after "\n" and ends with <|im_end|>. The
// script is cut into tokens that occur once each (a bigram table cannot repeat one).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/models/lora.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/random.hpp"
#include "genesis/tensor.hpp"
#include "genesis/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
namespace M = genesis::models;

// What the scripted model answers (the serve tests expect this call), in pieces: the tags are their own
// tokens. Few texts can be cut into distinct tokens (each '"' needs a token of its own): this one can.
const std::vector<std::string> kScript = {
    "Let me check.", "<tool_call>", "{\"name\":\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", "</tool_call>"};

M::QwenConfig tiny_config() {
  M::QwenConfig c = M::QwenConfig::preset("qwen3-0.6b");
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 151936;
  c.max_position_embeddings = 512;
  c.dtype = "float32";
  return c;
}

// `text` cut into tokens none of which is in `used` or occurs twice (longest first, backtracking).
std::vector<int64_t> distinct_tokens(const genesis::Tokenizer& tok, const std::string& text,
                                     std::unordered_set<int64_t>& used) {
  std::unordered_map<std::string, int64_t> by_bytes;
  size_t longest = 1;
  for (int64_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string& b = tok.token_bytes(id);
    if (!b.empty() && by_bytes.emplace(b, id).second) longest = std::max(longest, b.size());
  }
  std::vector<int64_t> out;
  int64_t budget = 1000000;
  std::function<bool(size_t)> cut = [&](size_t at) {
    if (at == text.size()) return true;
    if (--budget < 0) return false;
    for (size_t n = std::min(longest, text.size() - at); n > 0; --n) {
      auto it = by_bytes.find(text.substr(at, n));
      if (it == by_bytes.end() || used.count(it->second)) continue;
      used.insert(it->second);
      out.push_back(it->second);
      if (cut(at + n)) return true;
      out.pop_back();
      used.erase(it->second);
    }
    return false;
  };
  if (!cut(0)) throw std::runtime_error("the script's '" + text + "' cannot be cut into distinct tokens");
  return out;
}

void write_scripted(const fs::path& out, const genesis::Tokenizer& tok) {
  const int64_t newline = tok.encode("\n", false).at(0), im_end = tok.token_to_id("<|im_end|>");
  std::vector<int64_t> chain = {newline};
  std::unordered_set<int64_t> used = {newline, im_end};
  for (const std::string& piece : kScript) {
    const int64_t tag = tok.token_to_id(piece);
    if (tag >= 0 && used.insert(tag).second)
      chain.push_back(tag);
    else
      for (int64_t id : distinct_tokens(tok, piece, used)) chain.push_back(id);
  }
  const int64_t L = static_cast<int64_t>(chain.size());
  M::QwenConfig c = tiny_config();
  c.hidden_size = (L + 15) / 16 * 16;
  c.tie_word_embeddings = false;
  genesis::manual_seed(5);
  genesis::NoGradGuard no_grad;
  M::QwenForCausalLM m(c);
  const int64_t V = c.vocab_size, H = c.hidden_size;
  std::vector<float> embed(static_cast<size_t>(V * H), 0.f), head(static_cast<size_t>(V * H), 0.f);
  for (int64_t k = 0; k < L; ++k) {
    const int64_t next = k + 1 < L ? chain[static_cast<size_t>(k + 1)] : im_end;
    embed[static_cast<size_t>(chain[static_cast<size_t>(k)] * H + k)] = 1.f;
    head[static_cast<size_t>(next * H + k)] = 10.f;  // logit 10 sqrt(H) for the next token, 0 for every other one
  }
  m.model.embed_tokens.weight.copy_(genesis::tensor(embed, {V, H}));
  m.lm_head->weight.copy_(genesis::tensor(head, {V, H}));
  for (auto& layer : m.model.layers) {
    layer->self_attn.o_proj.weight.zero_();
    layer->mlp.down_proj.weight.zero_();
  }
  m.save_pretrained(out.string());
}

void write_adapter(const fs::path& base, const fs::path& out) {
  auto m = M::QwenForCausalLM::from_pretrained(base.string());
  M::LoraConfig c;
  c.r = 4;
  c.lora_alpha = 8;
  c.base_model_name_or_path = base.filename().string();
  genesis::manual_seed(11);
  genesis::NoGradGuard no_grad;
  auto lora = M::LoraModel::attach(*m, c);
  for (auto& [name, adapter] : lora->adapters)
    adapter->lora_B.weight.copy_(genesis::randn_like(adapter->lora_B.weight));
  lora->save_pretrained(out.string());
}

}  // namespace

int main(int argc, char** argv) {
  const bool scripted = argc == 3 && std::strcmp(argv[1], "--scripted") == 0;
  const bool adapter = argc == 4 && std::strcmp(argv[1], "--adapter") == 0;
  if (argc != 2 && !scripted && !adapter) {
    std::fprintf(stderr, "usage: serve_test_model [--scripted] OUT_DIR | --adapter BASE_DIR OUT_DIR\n");
    return 2;
  }
  try {
    genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "", .backends = "", .no_default_paths = true});
    const fs::path out = argv[argc - 1];
    fs::create_directories(out);
    if (adapter) {
      write_adapter(argv[2], out);
      return 0;
    }
    const fs::path tok_dir = fs::path(GENESIS_SOURCE_DIR) / "tests/fixtures/tokenizer/qwen3";
    if (scripted) {
      write_scripted(out, genesis::Tokenizer::from_pretrained(tok_dir.string()));
    } else {
      M::QwenConfig c = tiny_config();
      // Spread-out logits: varied text (multi-byte characters, special tokens) rather than one repeated token.
      c.initializer_range = 0.5;
      genesis::manual_seed(3);
      M::QwenForCausalLM m(c);
      m.save_pretrained(out.string());
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(tok_dir / f, out / f, fs::copy_options::overwrite_existing);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_test_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
