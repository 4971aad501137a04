// make_model.cpp - writes the model folder the server tests run: a one-layer Qwen3 with Qwen3's
// vocabulary and random weights (seeded), saved with the real Qwen3 tokenizer files.
//   serve_test_model OUT_DIR
#include <cstdio>
#include <filesystem>

#include "genesis/tensor.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/random.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: serve_test_model OUT_DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  namespace M = genesis::models;
  try {
    genesis::init({.plugin_path = GENESIS_TEST_PLUGIN_DIR, .plugins = "", .backends = "", .no_default_paths = true});
    const fs::path out = argv[1];
    fs::create_directories(out);
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
    c.initializer_range =
        0.5;  // spread-out logits: varied text (multi-byte characters, special tokens) rather than one repeated token
    genesis::manual_seed(3);
    M::QwenForCausalLM m(c);
    m.save_pretrained(out.string());
    const fs::path tok = fs::path(GENESIS_SOURCE_DIR) / "tests/fixtures/tokenizer/qwen3";
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(tok / f, out / f, fs::copy_options::overwrite_existing);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_test_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
