// convert.cpp - `genesis convert`: a model folder rewritten (dtype, shards, a LoRA adapter merged in).
#include "llm_common.h"

namespace genesis::cli {

using namespace llm;  // the LLM commands' shared helpers (llm_common.h)

namespace {

// "5GB", "500MB", "64KB", "1000" (bytes): decimal units, as transformers' max_shard_size.
int64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double mult = unit.empty() || unit == "B" ? 1
                      : unit == "KB"              ? 1e3
                      : unit == "MB"              ? 1e6
                      : unit == "GB"              ? 1e9
                                                  : -1;
  if (used == 0 || mult < 0 || !(v * mult >= 1) || v * mult > 9e18)
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "--max-shard-size must be a size such as 5GB, 500MB or 64KB, got '" + text + "'");
  return static_cast<int64_t>(v * mult);
}

// What a model folder holds beside the weights and config.json that a converted copy keeps as
// they are: the tokenizer (every format transformers reads), the chat template, the generation
// defaults (all their fields, also those genesis does not use) and the licence and model card.
constexpr const char* kCopiedFiles[] = {"tokenizer.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json",
                                        "added_tokens.json",
                                        "vocab.json",
                                        "merges.txt",
                                        "tokenizer.model",
                                        "chat_template.jinja",
                                        "chat_template.json",
                                        "generation_config.json",
                                        "LICENSE",
                                        "README.md"};

int run_convert(const GlobalOptions& go, LlmState& s) {
  namespace fs = std::filesystem;
  const int64_t shard = parse_size(s.max_shard_size);
  init_frontend(go);
  const Device d = pick_device(s.dev, "cpu");
  auto model = load_model(s, d, true);
  model->save_pretrained(s.out_dir, shard);
  std::error_code ec;
  std::string copied;
  if (!fs::equivalent(s.model_dir, s.out_dir, ec)) {
    for (const char* name : kCopiedFiles) {
      const fs::path from = fs::path(s.model_dir) / name;
      if (!fs::is_regular_file(from, ec)) continue;
      fs::copy_file(from, fs::path(s.out_dir) / name, fs::copy_options::overwrite_existing);
      copied += std::string(copied.empty() ? "" : ", ") + name;
    }
  }
  std::fprintf(stderr, "wrote %s (weights and config.json%s%s)\n", s.out_dir.c_str(), copied.empty() ? "" : "; copied ",
               copied.c_str());
  if (!fs::exists(fs::path(s.out_dir) / "tokenizer.json", ec))
    std::fprintf(stderr, "note: %s has no tokenizer.json, so neither has the copy (generate needs --prompt-ids)\n",
                 s.model_dir.c_str());
  return 0;
}

}  // namespace

CommandRun setup_convert(CLI::App& c) {
  auto s = std::make_shared<LlmState>();
  existing_folder(c.add_option("--model", s->model_dir, "Hugging Face model folder"))->required();
  c.add_option("--out", s->out_dir, "output folder (created when missing)")->required();
  c.add_option("--max-shard-size", s->max_shard_size, "shard the weights above this size (5GB, 500MB, 64KB)");
  existing_folder(
      c.add_option("--adapter", s->adapter_dir, "PEFT LoRA adapter folder merged into the weights (default: none)"));
  c.footer("The copy keeps the tokenizer files, the chat template, generation_config.json, LICENSE and README.md.");
  add_device_options(c, s->dev, "device used while converting (default: cpu)",
                     "float32, bfloat16 or float16 (default: the config's)");
  c.fallthrough();
  return bind_command(s, run_convert);
}
}  // namespace genesis::cli
