// genesis/models/lora.hpp - LoRA adapters for Qwen models, in Hugging Face PEFT's format.
//
//   genesis::models::LoraConfig c;                    // r 8, alpha 16, the seven linear projections
//   auto lora = genesis::models::LoraModel::attach(*model, c);   // base frozen, A kaiming, B zero
//   ... train lora->parameters() ...
//   lora->save_pretrained("adapter/");                 // adapter_config.json + adapter_model.safetensors
//   auto back = genesis::models::LoraModel::from_pretrained(*other, "adapter/");
//   lora->merge_and_unload();                          // W += B A * scale; the model runs without adapters
//
// Each adapted projection y = x W^T (+ b) gains dropout(x) A^T B^T * scale with A (r, in), B (out, r) and
// scale = alpha / r (alpha / sqrt(r) with use_rslora).  The adapters sit beside the model's projections, also
// beside the fused inference ones (one q/k/v projection, gate/up): their outputs are added to the matching row
// blocks, so generation and serving run the adapted model.  The adapters are not part of the model's module tree:
// the model's state_dict and save_pretrained stay the base model's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "genesis/io.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::models {

/** The fields of PEFT's adapter_config.json that Genesis reads and writes (LoRA only). */
struct LoraConfig {
  int64_t r = 8;                                           ///< rank
  double lora_alpha = 16;                                  ///< scale = lora_alpha / r (or / sqrt(r) with use_rslora)
  double lora_dropout = 0;                                 ///< dropout on the adapter's input while training
  bool use_rslora = false;                                 ///< rank-stabilised scale alpha / sqrt(r)
  std::vector<std::string> target_modules = all_linear();  ///< projection names (q_proj ... down_proj)
  std::string base_model_name_or_path;                     ///< written to the config, not checked
  std::string source_json;                                 ///< the file as read: unknown fields are kept on save

  /** The adapter's scale. */
  double scale() const;
  /** Parses adapter_config.json text; an unsupported value (peft_type, task_type, bias, lora_bias, fan_in_fan_out,
   * use_dora, an unknown target, layers_to_transform, layer_replication, rank/alpha patterns, modules_to_save) is a
   * genesis::Error naming the field. */
  static LoraConfig from_json(const std::string& text, const std::string& where = "adapter_config.json");
  /** adapter_config.json text in PEFT's layout. */
  std::string to_json() const;
  /** Checks r, alpha, dropout and the targets; throws genesis::Error naming the field. */
  void validate(const std::string& where = "LoRA") const;
  /** Parses "all-linear" or a comma-separated list of projection names. */
  static std::vector<std::string> parse_targets(const std::string& s);
  /** q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (PEFT's all-linear for Qwen: no lm_head). */
  static std::vector<std::string> all_linear();
};

/** One adapter: lora_A (in -> r) and lora_B (r -> out), bias-free. */
class LoraLayer : public nn::Module {
 public:
  /** An adapter for a projection in -> out with parameters per factory; A kaiming_uniform(a = sqrt(5)), B zero. */
  LoraLayer(int64_t in_features, int64_t out_features, const LoraConfig& c, const Options& factory);
  /** dropout(x) A^T B^T * scale (x (*, in) -> (*, out)), in x's dtype; dropout only while training with grad on. */
  Tensor delta(const Tensor& x);
  /** B A * scale (out, in). */
  Tensor weight_delta() const;
  /** The adapter's input -> output; use delta(). */
  Tensor forward(const Tensor& x) override { return delta(x); }
  /** "LoraLayer". */
  std::string name() const override { return "LoraLayer"; }
  nn::Linear lora_A, lora_B;
  double scale, dropout;
};

/** y + adapter(x) where an adapter is set, else y. */
Tensor lora_add(const Tensor& y, const std::shared_ptr<LoraLayer>& adapter, const Tensor& x);
/** y (*, sum of sizes) + the adapters' outputs placed in their row blocks (zero where an adapter is unset): the
 * fused projections' form.  y when none is set. */
Tensor lora_add_fused(const Tensor& y, const std::vector<const std::shared_ptr<LoraLayer>*>& adapters,
                      const std::vector<int64_t>& sizes, const Tensor& x);
/** True when a projection of the layer has an adapter with a parameter requiring grad. */
bool lora_requires_grad(const QwenDecoderLayer& layer);

/** The adapters of one model, registered under their projections' names (dots as underscores).  The model must
 * outlive it while adapters are attached (merge_and_unload() and unload() reach into the model). */
class LoraModel : public nn::Module {
 public:
  /** Adds fresh adapters of config c to the targeted projections of model (whose parameters are frozen:
   * requires_grad false); throws when the model already has adapters.  Adapter parameters require grad and live on
   * the base's device, in its dtype (float32 over a bfloat16/float16 base, as PEFT keeps them).  They are not moved
   * by the model's to(): attach after moving the model. */
  static std::shared_ptr<LoraModel> attach(QwenForCausalLM& model, const LoraConfig& c);
  /** attach() with the config and weights of a PEFT adapter folder (adapter_config.json,
   * adapter_model.safetensors or adapter_model.bin is refused); trainable: whether the adapters require grad. */
  static std::shared_ptr<LoraModel> from_pretrained(QwenForCausalLM& model, const std::string& dir,
                                                    bool trainable = false);
  /** Writes adapter_config.json and adapter_model.safetensors (PEFT's key names), each atomically. */
  void save_pretrained(const std::string& dir) const;
  /** The adapter weights under PEFT's names: base_model.model.<module>.lora_A.weight (r, in), lora_B (out, r). */
  TensorMap peft_state_dict() const;
  /** Loads PEFT-named weights (converted to the adapters' dtype and device); a missing, unexpected or wrongly
   * shaped tensor is a genesis::Error naming it (and both shapes).  `where` names the source. */
  void load_peft_state_dict(const TensorMap& tensors, const std::string& where = "adapter");
  /** Folds every adapter into its base weight (W += B A * scale, computed in float32 or float64 and rounded once)
   * and removes the adapters from the model. */
  void merge_and_unload();
  /** Removes the adapters from the model without changing its weights. */
  void unload();
  /** "LoraModel". */
  std::string name() const override { return "LoraModel"; }

  LoraConfig config;
  QwenForCausalLM* model = nullptr;
  /** (module path as HF names it, e.g. "model.layers.0.self_attn.q_proj", adapter) in model order. */
  std::vector<std::pair<std::string, std::shared_ptr<LoraLayer>>> adapters;

 private:
  struct Slot {
    std::shared_ptr<LoraLayer>* hook;  // the model's pointer for this projection
    nn::Linear* base;
  };
  std::vector<Slot> slots_;
};

}  // namespace genesis::models
