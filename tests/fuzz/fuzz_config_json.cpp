// fuzz_config_json.cpp - any text as a Hugging Face config.json and
// generation_config.json: parsed into a QwenConfig / QwenGenerationDefaults
// or refused with a genesis::Error naming the field.
#include "fuzz_common.h"
#include "genesis/models/qwen.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::bytes(data, size);
  try {
    const genesis::models::QwenConfig c = genesis::models::QwenConfig::from_json(text);
    (void)c.to_json();
  } catch (const genesis::Error&) {
  }
  try {
    (void)genesis::models::QwenGenerationDefaults::from_json(text, "generation_config.json");
  } catch (const genesis::Error&) {
  }
  return 0;
}
