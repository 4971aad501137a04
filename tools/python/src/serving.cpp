// tools/python/src/serving.cpp - genesis._C.serving: the offline LLM over the serving engine (continuous
// batching on a paged KV cache). genesis/serving.py gives it vLLM's shape (LLM, SamplingParams, RequestOutput).
//
// generate() and chat() run without the GIL; their results come back as plain dicts and lists.
#include <fstream>

#include "bind.h"
#include "genesis/serving/llm.hpp"

namespace genesis::python {
namespace {

using serving::CompletionOutput;
using serving::LLM;
using serving::RequestOutput;
using serving::SamplingParams;

SamplingParams params_of(int64_t n, int64_t max_new_tokens, double temperature, int64_t top_k, double top_p,
                         double min_p, double repetition_penalty, const std::vector<std::string>& stop,
                         const std::vector<int64_t>& stop_token_ids, bool ignore_eos, uint64_t seed, int64_t logprobs,
                         bool skip_special_tokens) {
  SamplingParams p;
  p.n = n;
  p.max_new_tokens = max_new_tokens;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repetition_penalty;
  p.stop_strings = stop;
  p.stop_ids = stop_token_ids;
  p.ignore_eos = ignore_eos;
  p.seed = seed;
  p.logprobs = logprobs;
  p.skip_special_tokens = skip_special_tokens;
  p.cuda_graph = false;
  return p;
}

py::list to_python(const std::vector<RequestOutput>& outs) {
  py::list res;
  for (const RequestOutput& o : outs) {
    py::list samples;
    for (const CompletionOutput& c : o.outputs) {
      py::list top;
      for (const auto& step : c.top_logprobs) {
        py::list row;
        for (const auto& t : step) row.append(py::make_tuple(t.token, t.logprob));
        top.append(row);
      }
      py::dict d;
      d["index"] = c.index;
      d["text"] = c.text;
      d["token_ids"] = c.token_ids;
      d["finish_reason"] = c.finish_reason;
      d["token_logprobs"] = c.token_logprobs;
      d["top_logprobs"] = top;
      samples.append(d);
    }
    py::dict d;
    d["prompt"] = o.prompt;
    d["prompt_token_ids"] = o.prompt_token_ids;
    d["outputs"] = samples;
    res.append(d);
  }
  return res;
}

// The sampling keywords every generating method takes (genesis/serving.py fills them from SamplingParams).
#define GN_SAMPLING_ARGS                                                                                               \
  py::kw_only(), py::arg("n") = 1, py::arg("max_new_tokens") = 16, py::arg("temperature") = 1.0, py::arg("top_k") = 0, \
                 py::arg("top_p") = 1.0, py::arg("min_p") = 0.0, py::arg("repetition_penalty") = 1.0,                  \
                 py::arg("stop") = std::vector<std::string>{}, py::arg("stop_token_ids") = std::vector<int64_t>{},     \
                 py::arg("ignore_eos") = false, py::arg("seed") = 0, py::arg("logprobs") = 0,                          \
                 py::arg("skip_special_tokens") = true

}  // namespace

void bind_serving(py::module_& m) {
  py::module_ sm = m.def_submodule("serving", "genesis._C.serving: the offline LLM over the serving engine");
  py::class_<LLM>(sm, "LLM")
      .def(py::init([](const std::string& dir, py::handle device, py::handle dtype, int64_t block_size,
                       int64_t num_blocks, int64_t kv_cache_bytes, double kv_cache_memory_fraction, int64_t max_running,
                       int64_t max_tokens_per_step, int64_t max_waiting, bool prefix_caching) {
             serving::EngineConfig e;
             e.block_size = block_size;
             e.num_blocks = num_blocks;
             e.kv_cache_bytes = kv_cache_bytes;
             e.kv_cache_memory_fraction = kv_cache_memory_fraction;
             e.max_running = max_running;
             e.max_tokens_per_step = max_tokens_per_step;
             e.max_waiting = max_waiting;
             e.prefix_caching = prefix_caching;
             models::LoadOptions o;
             if (!device.is_none()) o.device = to_device(device);
             std::optional<DType> dt;
             if (!dtype.is_none()) dt = dtype.cast<DType>();
             // float64 is read as float32 (exact for float32/bf16/fp16 checkpoints), then widened.
             if (dt) o.dtype = *dt == DType::f64 ? DType::f32 : *dt;
             py::gil_scoped_release nogil;
             auto model = models::QwenForCausalLM::from_pretrained(dir, o);
             if (dt == DType::f64) model->to(DType::f64);
             std::optional<Tokenizer> tok;
             if (std::ifstream(dir + "/tokenizer.json").good()) tok = Tokenizer::from_pretrained(dir);
             return std::make_unique<LLM>(std::move(model), std::move(tok), e);
           }),
           py::arg("model_dir"), py::kw_only(), py::arg("device") = py::none(), py::arg("dtype") = py::none(),
           py::arg("block_size") = 16, py::arg("num_blocks") = 0, py::arg("kv_cache_bytes") = 0,
           py::arg("kv_cache_memory_fraction") = 0.9, py::arg("max_running") = 256,
           py::arg("max_tokens_per_step") = 2048, py::arg("max_waiting") = 4096, py::arg("prefix_caching") = true)
      .def(
          "generate_text",
          [](LLM& llm, const std::vector<std::string>& prompts, int64_t n, int64_t max_new_tokens, double temperature,
             int64_t top_k, double top_p, double min_p, double repetition_penalty, const std::vector<std::string>& stop,
             const std::vector<int64_t>& stop_token_ids, bool ignore_eos, uint64_t seed, int64_t logprobs,
             bool skip_special_tokens) {
            const SamplingParams p = params_of(n, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
                                               stop, stop_token_ids, ignore_eos, seed, logprobs, skip_special_tokens);
            std::vector<RequestOutput> outs;
            {
              py::gil_scoped_release nogil;
              outs = llm.generate(prompts, p);
            }
            return to_python(outs);
          },
          py::arg("prompts"), GN_SAMPLING_ARGS)
      .def(
          "generate_ids",
          [](LLM& llm, const std::vector<std::vector<int64_t>>& prompts, int64_t n, int64_t max_new_tokens,
             double temperature, int64_t top_k, double top_p, double min_p, double repetition_penalty,
             const std::vector<std::string>& stop, const std::vector<int64_t>& stop_token_ids, bool ignore_eos,
             uint64_t seed, int64_t logprobs, bool skip_special_tokens) {
            const SamplingParams p = params_of(n, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
                                               stop, stop_token_ids, ignore_eos, seed, logprobs, skip_special_tokens);
            std::vector<RequestOutput> outs;
            {
              py::gil_scoped_release nogil;
              outs = llm.generate(prompts, p);
            }
            return to_python(outs);
          },
          py::arg("prompts"), GN_SAMPLING_ARGS)
      .def(
          "chat",
          [](LLM& llm, const std::vector<std::vector<std::pair<std::string, std::string>>>& conversations,
             std::optional<bool> enable_thinking, int64_t n, int64_t max_new_tokens, double temperature, int64_t top_k,
             double top_p, double min_p, double repetition_penalty, const std::vector<std::string>& stop,
             const std::vector<int64_t>& stop_token_ids, bool ignore_eos, uint64_t seed, int64_t logprobs,
             bool skip_special_tokens) {
            const SamplingParams p = params_of(n, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
                                               stop, stop_token_ids, ignore_eos, seed, logprobs, skip_special_tokens);
            std::vector<std::vector<ChatMessage>> convs;
            for (const auto& c : conversations) {
              std::vector<ChatMessage> msgs;
              for (const auto& [role, content] : c) msgs.push_back({role, content});
              convs.push_back(std::move(msgs));
            }
            std::vector<RequestOutput> outs;
            {
              py::gil_scoped_release nogil;
              outs = llm.chat(convs, p, enable_thinking);
            }
            return to_python(outs);
          },
          py::arg("conversations"), py::arg("enable_thinking") = py::none(), GN_SAMPLING_ARGS)
      .def_property_readonly("has_tokenizer", [](LLM& llm) { return llm.tokenizer() != nullptr; })
      .def_property_readonly("has_chat_template",
                             [](LLM& llm) { return llm.tokenizer() && !llm.tokenizer()->chat_template().empty(); })
      .def_property_readonly("vocab_size", [](LLM& llm) { return llm.model().config.vocab_size; })
      .def_property_readonly("max_model_len", [](LLM& llm) { return llm.model().config.max_position_embeddings; })
      .def("engine_config",
           [](LLM& llm) {
             const serving::EngineConfig& c = llm.engine().config();
             py::dict d;
             d["block_size"] = c.block_size;
             d["num_blocks"] = c.num_blocks;
             d["max_running"] = c.max_running;
             d["max_tokens_per_step"] = c.max_tokens_per_step;
             d["max_waiting"] = c.max_waiting;
             d["prefix_caching"] = c.prefix_caching;
             return d;
           })
      .def("engine_stats", [](LLM& llm) {
        const serving::EngineStats s = llm.engine().stats();
        py::dict d;
        d["running"] = s.running;
        d["waiting"] = s.waiting;
        d["blocks_total"] = s.blocks_total;
        d["blocks_used"] = s.blocks_used;
        d["blocks_free"] = s.blocks_free;
        d["blocks_cached"] = s.blocks_cached;
        d["prefix_hit_rate"] = s.prefix_hit_rate;
        d["preemptions"] = s.preemptions;
        d["steps"] = s.steps;
        d["prompt_tokens"] = s.prompt_tokens;
        d["computed_tokens"] = s.computed_tokens;
        d["generated_tokens"] = s.generated_tokens;
        d["requests_finished"] = s.requests_finished;
        return d;
      });
}

}  // namespace genesis::python
