// genesis/models/decoder.hpp - family-neutral names for the causal-LM decoder.
//
// One implementation serves Qwen2/2.5/3 dense, Llama 3.x, Mistral, Gemma 2 and Gemma 3 text; what differs between
// the families is a set of config switches mapped from each family's config.json (see docs/models.md):
//
//   auto model = genesis::models::CausalLM::from_pretrained("gemma-2-2b", {.dtype = genesis::bfloat16});
//   genesis::models::DecoderConfig c = model->config;   // c.sliding_window, c.norm_offset, c.rope_scaling, ...
//
// The Qwen* names in qwen.hpp are the same types.
#pragma once

#include "genesis/models/qwen.hpp"

namespace genesis::models {

using DecoderConfig = QwenConfig;                          ///< config.json of any supported family
using DecoderGenerationDefaults = QwenGenerationDefaults;  ///< generation_config.json
using DecoderKernels = QwenKernels;                        ///< the kernel set of one forward
using DecoderAttention = QwenAttention;                    ///< self-attention with the family switches
using DecoderMLP = QwenMLP;                                ///< gated feed-forward (SwiGLU or GeGLU)
using DecoderLayer = QwenDecoderLayer;                     ///< one block (pre-norm or sandwich norms)
using DecoderModel = QwenModel;                            ///< embedding, blocks, final norm ("model.")
using CausalLM = QwenForCausalLM;                          ///< the model with its head

}  // namespace genesis::models
