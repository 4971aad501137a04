// tools/python/src/models.cpp - genesis.models: the Qwen causal LM (config,
// from_pretrained, forward, loss, save_pretrained), the tokenizer and chat
// templates, generation with a KV cache, and the SFT trainer.
//
// Generation and training are long calls: they run without the GIL, and their
// per-token / per-step callbacks take it back to check for Ctrl-C (raising
// KeyboardInterrupt through the C++ loop) and to call the Python callback.
#include "bind.h"
#include "genesis/chat_template.hpp"
#include "genesis/models/generation.hpp"
#include "genesis/models/qwen.hpp"
#include "genesis/tokenizer.hpp"
#include "genesis/train/bpe_trainer.hpp"
#include "genesis/train/sft.hpp"

namespace genesis::python {
namespace {

using models::QwenConfig;
using models::QwenForCausalLM;

// Raises KeyboardInterrupt (or whatever a signal handler raised) in the calling C++ loop.
void check_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

std::vector<ChatMessage> messages_of(py::handle msgs) {
  std::vector<ChatMessage> out;
  for (py::handle m : msgs) out.push_back({m["role"].cast<std::string>(), m["content"].cast<std::string>()});
  return out;
}

// Sets SftOptions fields from keywords (the names of the struct's fields; batch_size etc. for BatchOptions).
void set_sft_option(train::SftOptions& o, const std::string& k, py::handle v) {
#define GN_F(name)                       \
  if (k == #name) {                      \
    o.name = v.cast<decltype(o.name)>(); \
    return;                              \
  }
  // clang-format off
  GN_F(train_file) GN_F(eval_file) GN_F(eval_fraction) GN_F(output_dir) GN_F(grad_accum) GN_F(epochs)
  GN_F(max_steps) GN_F(lr) GN_F(weight_decay) GN_F(beta1) GN_F(beta2) GN_F(adam_eps) GN_F(warmup_ratio)
  GN_F(warmup_steps) GN_F(max_grad_norm) GN_F(autocast) GN_F(activation_checkpointing) GN_F(eval_every)
  GN_F(save_every) GN_F(log_every) GN_F(resume) GN_F(stop_after) GN_F(progress) GN_F(save_final) GN_F(tokenizer_dir)
  // clang-format on
#undef GN_F
#define GN_B(name)                                       \
  if (k == #name) {                                      \
    o.batches.name = v.cast<decltype(o.batches.name)>(); \
    return;                                              \
  }
                  GN_B(batch_size) GN_B(max_length) GN_B(packing) GN_B(bucket_factor) GN_B(pad_id) GN_B(shuffle)
                      GN_B(seed)
#undef GN_B
                          throw py::type_error("train_sft: unknown option '" + k + "'");
}

}  // namespace

void bind_models(py::module_& m) {
  py::module_ mm = m.def_submodule("models", "genesis.models: Qwen, tokenizer, generation, SFT");
  // ---- config
  py::class_<models::RopeParameters>(mm, "RopeParameters",
                                     "A rotary embedding as transformers defines it (rope_parameters / rope_scaling)")
      .def(py::init<>())
      .def_readwrite("rope_type", &models::RopeParameters::rope_type,
                     "\"default\", \"linear\", \"dynamic\", \"yarn\" or \"llama3\"")
      .def_readwrite("factor", &models::RopeParameters::factor, "Scaling factor (linear, dynamic, yarn, llama3)")
      .def_readwrite("low_freq_factor", &models::RopeParameters::low_freq_factor, "llama3's low-frequency factor")
      .def_readwrite("high_freq_factor", &models::RopeParameters::high_freq_factor, "llama3's high-frequency factor")
      .def_readwrite("original_max_position_embeddings", &models::RopeParameters::original_max_position_embeddings,
                     "Pre-scaling context length (llama3, yarn; 0: max_position_embeddings)")
      .def_readwrite("attention_factor", &models::RopeParameters::attention_factor,
                     "yarn's attention factor (None: 0.1 ln(factor) + 1, or from mscale)")
      .def_readwrite("beta_fast", &models::RopeParameters::beta_fast, "yarn's fast boundary")
      .def_readwrite("beta_slow", &models::RopeParameters::beta_slow, "yarn's slow boundary")
      .def_readwrite("mscale", &models::RopeParameters::mscale, "yarn's mscale (None: unset)")
      .def_readwrite("mscale_all_dim", &models::RopeParameters::mscale_all_dim, "yarn's mscale_all_dim (None: unset)")
      .def_readwrite("truncate", &models::RopeParameters::truncate, "yarn: floor/ceil the correction range")
      .def("__repr__", [](const models::RopeParameters& r) {
        return "RopeParameters(rope_type='" + r.rope_type +
               "', factor=" + py::repr(py::float_(r.factor)).cast<std::string>() + ")";
      });

  py::class_<QwenConfig>(mm, "QwenConfig")
      .def(py::init([](const py::kwargs& kw) {
        QwenConfig c;
        py::object self = py::cast(c);
        for (auto kv : kw) py::setattr(self, kv.first, kv.second);
        return self.cast<QwenConfig>();
      }))
      .def_static("from_json", &QwenConfig::from_json, py::arg("text"), py::arg("where") = "config.json")
      .def_static("from_file", &QwenConfig::from_file, py::arg("path"))
      .def_static("preset", &QwenConfig::preset, py::arg("name"))
      .def_static("preset_names", &QwenConfig::preset_names)
      .def("to_json", &QwenConfig::to_json)
      .def("num_parameters", &QwenConfig::num_parameters)
      .def_readwrite("model_type", &QwenConfig::model_type)
      .def_readwrite("vocab_size", &QwenConfig::vocab_size)
      .def_readwrite("hidden_size", &QwenConfig::hidden_size)
      .def_readwrite("intermediate_size", &QwenConfig::intermediate_size)
      .def_readwrite("num_hidden_layers", &QwenConfig::num_hidden_layers)
      .def_readwrite("num_attention_heads", &QwenConfig::num_attention_heads)
      .def_readwrite("num_key_value_heads", &QwenConfig::num_key_value_heads)
      .def_readwrite("head_dim", &QwenConfig::head_dim)
      .def_readwrite("max_position_embeddings", &QwenConfig::max_position_embeddings)
      .def_readwrite("rms_norm_eps", &QwenConfig::rms_norm_eps)
      .def_readwrite("rope_theta", &QwenConfig::rope_theta)
      .def_readwrite("initializer_range", &QwenConfig::initializer_range)
      .def_readwrite("tie_word_embeddings", &QwenConfig::tie_word_embeddings)
      .def_readwrite("attention_bias", &QwenConfig::attention_bias)
      .def_readwrite("qk_norm", &QwenConfig::qk_norm)
      .def_readwrite("dtype", &QwenConfig::dtype)
      .def_readwrite("bos_token_id", &QwenConfig::bos_token_id)
      .def_readwrite("eos_token_ids", &QwenConfig::eos_token_ids)
      .def_readwrite("rope_scaling", &QwenConfig::rope_scaling,
                     "The rope of full-attention layers (a RopeParameters; its theta is rope_theta)")
      .def_readwrite("rope_local_theta", &QwenConfig::rope_local_theta,
                     "Sliding layers' own rope theta (Gemma 3); 0: the rope of rope_scaling")
      .def_readwrite("norm_offset", &QwenConfig::norm_offset,
                     "RMSNorm scales by (1 + weight), computed in float32 (Gemma)")
      .def_readwrite("sandwich_norms", &QwenConfig::sandwich_norms,
                     "Norms after attention and around the MLP (Gemma 2 / 3)")
      .def_readwrite("hidden_act", &QwenConfig::hidden_act,
                     "The MLP's activation: \"silu\" (SwiGLU) or \"gelu_pytorch_tanh\" (GeGLU)")
      .def_readwrite("scale_embeddings", &QwenConfig::scale_embeddings,
                     "Embeddings times sqrt(hidden_size) in their dtype (Gemma)")
      .def_readwrite("query_pre_attn_scalar", &QwenConfig::query_pre_attn_scalar,
                     "Attention scale query_pre_attn_scalar^-0.5 (Gemma); 0: head_dim^-0.5")
      .def_readwrite("attn_logit_softcapping", &QwenConfig::attn_logit_softcapping,
                     "Attention scores become tanh(s / c) * c before the mask; 0: off")
      .def_readwrite("final_logit_softcapping", &QwenConfig::final_logit_softcapping,
                     "Logits become tanh(x / c) * c; 0: off")
      .def_readwrite("sliding_window", &QwenConfig::sliding_window,
                     "Window of the sliding layers (query i sees key j when i - j < window); 0: none")
      .def_readwrite("layer_types", &QwenConfig::layer_types,
                     "Per layer \"full_attention\" or \"sliding_attention\" (empty: all full)")
      .def_readwrite("num_experts", &QwenConfig::num_experts, "Experts per sparse layer (Qwen3-MoE); 0: dense")
      .def_readwrite("num_experts_per_tok", &QwenConfig::num_experts_per_tok, "Experts each token is routed to")
      .def_readwrite("moe_intermediate_size", &QwenConfig::moe_intermediate_size, "Each expert's SwiGLU width")
      .def_readwrite("decoder_sparse_step", &QwenConfig::decoder_sparse_step,
                     "Layer l is sparse when (l + 1) % decoder_sparse_step == 0 and l is not in mlp_only_layers")
      .def_readwrite("mlp_only_layers", &QwenConfig::mlp_only_layers, "Layers that run the dense MLP (Qwen3-MoE)")
      .def_readwrite("norm_topk_prob", &QwenConfig::norm_topk_prob, "Renormalise the top-k routing weights to sum 1")
      .def_readwrite("router_aux_loss_coef", &QwenConfig::router_aux_loss_coef,
                     "Weight of the load-balancing loss added to the loss")
      .def_readwrite("output_router_logits", &QwenConfig::output_router_logits,
                     "The loss includes router_aux_loss_coef * the load-balancing loss")
      .def("is_sparse_layer", &QwenConfig::is_sparse_layer, py::arg("layer"),
           "True when the layer's feed-forward is a mixture of experts")
      .def("is_sliding", &QwenConfig::is_sliding, py::arg("layer"),
           "True when the layer attends within sliding_window");

  // ---- the model (a C++ module; genesis.models.QwenForCausalLM wraps it as an nn.Module)
  py::class_<QwenForCausalLM, nn::Module>(mm, "QwenForCausalLM")
      .def(py::init([](const QwenConfig& c, py::handle device, py::handle dtype) {
             return std::make_unique<QwenForCausalLM>(c, make_options(dtype, device, false));
           }),
           py::arg("config"), py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_static(
          "from_pretrained",
          [](const std::string& dir, py::handle device, py::handle dtype) {
            models::LoadOptions o;
            if (!device.is_none()) o.device = to_device(device);
            if (!dtype.is_none()) o.dtype = dtype.cast<DType>();
            py::gil_scoped_release nogil;
            return QwenForCausalLM::from_pretrained(dir, o);
          },
          py::arg("path"), py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def(
          "save_pretrained",
          [](const QwenForCausalLM& model, const std::string& dir) {
            py::gil_scoped_release nogil;
            model.save_pretrained(dir);
          },
          py::arg("save_directory"))
      .def(
          "forward",
          [](QwenForCausalLM& model, const Tensor& ids) {
            py::gil_scoped_release nogil;
            return model.forward(ids);
          },
          py::arg("input_ids"))
      .def(
          "forward_masked",
          [](QwenForCausalLM& model, const Tensor& ids, const Tensor& mask) {
            if (ids.dim() != 2)
              throw Error(GN_ERR_SHAPE, "forward expects input_ids (B, T), got rank " + std::to_string(ids.dim()));
            py::gil_scoped_release nogil;
            return model.logits(model.hidden_states(ids, model.attention_context(ids.size(1), nullptr, mask)));
          },
          py::arg("input_ids"), py::arg("mask"),
          "Logits of ids (B, T) under a (B, 1, T, T) bool keep-mask that holds the causal rule")
      .def_property_readonly(
          "generation_defaults",
          [](const QwenForCausalLM& model) {
            const models::QwenGenerationDefaults& g = model.generation_defaults;
            auto opt = [](const auto& v) { return v ? py::cast(*v) : py::none(); };
            py::dict d;
            d["eos_token_id"] = g.eos_token_ids;
            d["bos_token_id"] = g.bos_token_id < 0 ? py::none() : py::cast(g.bos_token_id);
            d["pad_token_id"] = g.pad_token_id < 0 ? py::none() : py::cast(g.pad_token_id);
            d["do_sample"] = opt(g.do_sample);
            d["temperature"] = opt(g.temperature);
            d["top_p"] = opt(g.top_p);
            d["top_k"] = opt(g.top_k);
            d["min_p"] = opt(g.min_p);
            d["repetition_penalty"] = opt(g.repetition_penalty);
            d["max_new_tokens"] = opt(g.max_new_tokens);
            return d;
          },
          "generation_config.json's fields (None where the file does not set them)")
      .def(
          "loss",
          [](QwenForCausalLM& model, const Tensor& ids, const Tensor& labels) {
            py::gil_scoped_release nogil;
            return model.loss(ids, labels);
          },
          py::arg("input_ids"), py::arg("labels"))
      .def(
          "router_aux_loss",
          [](const QwenForCausalLM& model) {
            py::gil_scoped_release nogil;
            return model.router_aux_loss();
          },
          "The load-balancing loss of the last forward's routers (before router_aux_loss_coef; Qwen3-MoE)")
      .def("init_weights", &QwenForCausalLM::init_weights)
      .def_readonly("config", &QwenForCausalLM::config)
      .def_property(
          "gradient_checkpointing", [](const QwenForCausalLM& model) { return model.model.gradient_checkpointing; },
          [](QwenForCausalLM& model, bool on) { model.model.gradient_checkpointing = on; });

  // ---- generation: prompts are lists of token ids; returns (tokens per prompt, finish reasons)
  mm.def(
      "generate",
      [](QwenForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens,
         double temperature, int64_t top_k, double top_p, double min_p, double repetition_penalty,
         const std::vector<int64_t>& stop_ids, bool ignore_eos, uint64_t seed, py::handle on_token) {
        models::GenerationConfig cfg;
        cfg.max_new_tokens = max_new_tokens;
        cfg.temperature = temperature;
        cfg.top_k = top_k;
        cfg.top_p = top_p;
        cfg.min_p = min_p;
        cfg.repetition_penalty = repetition_penalty;
        cfg.stop_ids = stop_ids;
        cfg.ignore_eos = ignore_eos;
        cfg.seed = seed;
        std::shared_ptr<py::function> cb;
        if (!on_token.is_none()) cb = keep_callable(py::reinterpret_borrow<py::function>(on_token));
        models::GenerationResult r;
        {
          py::gil_scoped_release nogil;
          r = models::generate(model, prompts, cfg, [cb](size_t row, int64_t token) {
            check_signals();
            if (!cb) return true;
            py::gil_scoped_acquire gil;
            py::object keep = (*cb)(row, token);
            return keep.is_none() || keep.cast<bool>();
          });
        }
        py::dict out;
        out["tokens"] = r.tokens;
        out["finish_reasons"] = r.finish_reasons;
        out["prompt_tokens"] = r.prompt_tokens;
        out["generated_tokens"] = r.generated_tokens;
        out["prefill_seconds"] = r.prefill_seconds;
        out["decode_seconds"] = r.decode_seconds;
        return out;
      },
      py::arg("model"), py::arg("prompts"), py::kw_only(), py::arg("max_new_tokens") = 128,
      py::arg("temperature") = 0.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0, py::arg("min_p") = 0.0,
      py::arg("repetition_penalty") = 1.0, py::arg("stop_ids") = std::vector<int64_t>{}, py::arg("ignore_eos") = false,
      py::arg("seed") = 0, py::arg("on_token") = py::none());

  // ---- tokenizer and chat templates
  py::class_<Tokenizer>(mm, "Tokenizer")
      .def_static("from_pretrained", &Tokenizer::from_pretrained, py::arg("path"))
      .def_static("from_files", &Tokenizer::from_files, py::arg("tokenizer_json"),
                  py::arg("tokenizer_config_json") = "")
      .def(
          "encode", [](const Tokenizer& t, const std::string& s, bool special) { return t.encode(s, special); },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def("decode", &Tokenizer::decode, py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def(
          "token_to_id", [](const Tokenizer& t, const std::string& s) { return t.token_to_id(s); }, py::arg("token"))
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("chat_template", &Tokenizer::chat_template)
      .def_readonly("eos_token_id", &Tokenizer::eos_token_id)
      .def_readonly("bos_token_id", &Tokenizer::bos_token_id)
      .def_readonly("pad_token_id", &Tokenizer::pad_token_id)
      .def_readonly("eos_token", &Tokenizer::eos_token)
      .def_readonly("bos_token", &Tokenizer::bos_token)
      .def_readonly("pad_token", &Tokenizer::pad_token)
      .def("is_special", &Tokenizer::is_special, py::arg("id"))
      .def("is_added", &Tokenizer::is_added, py::arg("id"))
      .def(
          "apply_chat_template",
          [](const Tokenizer& t, py::handle messages, bool add_generation_prompt, bool tokenize,
             std::optional<bool> enable_thinking) -> py::object {
            ChatTemplate tmpl(t.chat_template());
            std::string text = tmpl.apply(messages_of(messages), add_generation_prompt, enable_thinking);
            if (tokenize) return py::cast(t.encode(text, false));
            return py::str(text);
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true, py::arg("tokenize") = false,
          py::arg("enable_thinking") = py::none());

  mm.def(
      "render_chat_template",
      [](const std::string& source, const std::string& context_json) {
        ChatTemplate tmpl(source);
        py::gil_scoped_release nogil;
        return tmpl.render(context_json);
      },
      py::arg("source"), py::arg("context_json"), "Renders a chat template with a JSON object as its context");

  py::class_<StreamDecoder>(mm, "StreamDecoder", "Incremental decoding for streaming: put(id) returns whole characters")
      .def(py::init<const Tokenizer&, bool>(), py::arg("tokenizer"), py::arg("skip_special_tokens") = false,
           py::keep_alive<1, 2>())
      .def("put", &StreamDecoder::put, py::arg("id"))
      .def("flush", &StreamDecoder::flush);

  mm.def(
      "train_tokenizer",
      [](const std::vector<std::string>& files, const std::string& out_dir, int64_t vocab_size, int64_t min_frequency) {
        train::BpeTrainerOptions o;
        o.vocab_size = vocab_size;
        o.min_frequency = min_frequency;
        train::BpeTrainingResult r;
        {
          py::gil_scoped_release nogil;
          r = train::train_bpe_tokenizer(files, out_dir, o);
        }
        py::dict out;
        out["vocab_size"] = r.vocab_size;
        out["merges"] = r.merges;
        out["words"] = r.words;
        out["bytes"] = r.bytes;
        return out;
      },
      py::arg("files"), py::arg("out_dir"), py::kw_only(), py::arg("vocab_size") = 8192, py::arg("min_frequency") = 2,
      "Learns a byte-level BPE tokenizer (ChatML template) from text or chat JSONL files into out_dir");

  // ---- SFT: train_sft(model, tokenizer, train_file=..., output_dir=..., **SftOptions fields)
  mm.def(
      "train_sft",
      [](QwenForCausalLM& model, const Tokenizer& tok, py::handle on_step, const py::kwargs& kw) {
        train::SftOptions o;
        o.progress = "none";
        for (auto kv : kw) set_sft_option(o, kv.first.cast<std::string>(), kv.second);
        std::shared_ptr<py::function> cb;
        if (!on_step.is_none()) cb = keep_callable(py::reinterpret_borrow<py::function>(on_step));
        o.on_step = [cb](int64_t step) {
          check_signals();
          if (cb) {
            py::gil_scoped_acquire gil;
            (*cb)(step);
          }
        };
        train::SftResult r;
        {
          py::gil_scoped_release nogil;
          r = train::train_sft(model, tok, o);
        }
        py::dict out;
        out["steps"] = r.steps;
        out["total_steps"] = r.total_steps;
        out["losses"] = r.losses;
        out["eval_loss"] = r.eval_loss;
        out["seconds"] = r.seconds;
        out["tokens_per_second"] = r.tokens_per_second;
        out["peak_memory"] = r.peak_memory;
        out["final_dir"] = r.final_dir;
        return out;
      },
      py::arg("model"), py::arg("tokenizer"), py::kw_only(), py::arg("on_step") = py::none());
  mm.def(
      "read_chat_jsonl",
      [](const std::string& path) {
        py::list out;
        for (const auto& conv : train::read_chat_jsonl(path)) {
          py::list msgs;
          for (const auto& msg : conv) {
            py::dict d;
            d["role"] = msg.role;
            d["content"] = msg.content;
            msgs.append(d);
          }
          out.append(msgs);
        }
        return out;
      },
      py::arg("path"));
}

}  // namespace genesis::python
