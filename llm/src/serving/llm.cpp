// llm.cpp - genesis/serving/llm.hpp: loading a model folder, turning prompts and conversations into engine
// requests and gathering their events into outputs in the prompts' order.
#include "genesis/serving/llm.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>

namespace genesis::serving {

namespace {

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The engine's sizes: where neither a block count nor a byte budget is given and the device reports no free
// memory, 1 GiB (at least one full context).
EngineConfig resolve(const models::QwenForCausalLM& m, EngineConfig cfg) {
  if (cfg.num_blocks > 0 || cfg.kv_cache_bytes > 0) return cfg;
  const Tensor& w = m.model.embed_tokens.weight;
  try {
    cfg.num_blocks = models::PagedKVCache::blocks_for_free_memory(m.config, cfg.block_size, w.dtype(), w.device(),
                                                                  cfg.kv_cache_memory_fraction);
  } catch (const Error&) {
    cfg.num_blocks = 0;
  }
  if (cfg.num_blocks < 1) {
    const int64_t per = models::PagedKVCache::block_bytes(m.config, cfg.block_size, w.dtype());
    const int64_t context = (m.config.max_position_embeddings + cfg.block_size - 1) / cfg.block_size;
    cfg.num_blocks = std::max<int64_t>((int64_t{1} << 30) / per, context);
  }
  return cfg;
}

// Text of ids; ids past the tokenizer's vocabulary (a model's padded embedding rows) have no text.
std::string decode_text(const Tokenizer& tok, const std::vector<int64_t>& ids, bool skip_special) {
  std::vector<int64_t> known;
  known.reserve(ids.size());
  for (int64_t id : ids)
    if (id >= 0 && id < tok.vocab_size()) known.push_back(id);
  return tok.decode(known, skip_special);
}

}  // namespace

LLM::LLM(const std::string& model_dir, const LLMOptions& opts) {
  model_ = models::QwenForCausalLM::from_pretrained(model_dir, {.device = opts.device, .dtype = opts.dtype});
  if (file_exists(model_dir + "/tokenizer.json")) tok_ = Tokenizer::from_pretrained(model_dir);
  engine_ = std::make_unique<Engine>(*model_, resolve(*model_, opts.engine));
}

LLM::LLM(std::unique_ptr<models::QwenForCausalLM> model, std::optional<Tokenizer> tokenizer, const EngineConfig& engine)
    : model_(std::move(model)), tok_(std::move(tokenizer)) {
  if (!model_) throw Error(GN_ERR_INVALID_ARGUMENT, "[LLM] no model given");
  engine_ = std::make_unique<Engine>(*model_, resolve(*model_, engine));
}

LLM::~LLM() = default;

models::QwenForCausalLM& LLM::model() { return *model_; }
const Tokenizer* LLM::tokenizer() const { return tok_ ? &*tok_ : nullptr; }
Engine& LLM::engine() { return *engine_; }

std::vector<RequestOutput> LLM::generate(const std::vector<std::string>& prompts, const SamplingParams& params) {
  if (!tok_)
    throw Error(GN_ERR_NOT_FOUND, "[LLM] text prompts need a tokenizer (the model folder has no tokenizer.json)");
  std::vector<RequestOutput> outs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    outs[i].prompt = prompts[i];
    outs[i].prompt_token_ids = tok_->encode(prompts[i], false);
  }
  return run(std::move(outs), params);
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::vector<int64_t>>& prompts,
                                         const SamplingParams& params) {
  std::vector<RequestOutput> outs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) outs[i].prompt_token_ids = prompts[i];
  return run(std::move(outs), params);
}

std::vector<RequestOutput> LLM::chat(const std::vector<std::vector<ChatMessage>>& conversations,
                                     const SamplingParams& params, std::optional<bool> enable_thinking) {
  if (!tok_ || tok_->chat_template().empty())
    throw Error(GN_ERR_NOT_FOUND, "[LLM] chat needs a tokenizer with a chat_template");
  const ChatTemplate tmpl(tok_->chat_template());
  std::vector<RequestOutput> outs(conversations.size());
  for (size_t i = 0; i < conversations.size(); ++i) {
    outs[i].prompt = tmpl.apply(conversations[i], true, enable_thinking);
    outs[i].prompt_token_ids = tok_->encode(outs[i].prompt, false);
  }
  return run(std::move(outs), params);
}

std::vector<RequestOutput> LLM::run(std::vector<RequestOutput> outs, const SamplingParams& params) {
  Request base;
  base.sampling = params;
  base.n = params.n;
  base.logprobs = params.logprobs;
  if (tok_) {
    // The tokenizer's end-of-turn tokens end a reply too (as the chat command does), unless ignore_eos.
    if (!params.ignore_eos) {
      if (tok_->eos_token_id >= 0) base.sampling.stop_ids.push_back(tok_->eos_token_id);
      for (const char* t : {"<|im_end|>", "<|endoftext|>"})
        if (int64_t id = tok_->token_to_id(t); id >= 0) base.sampling.stop_ids.push_back(id);
    }
    if (!base.sampling.decode) {
      const Tokenizer tok = *tok_;
      const bool skip = params.skip_special_tokens;
      base.sampling.decode = [tok, skip](const std::vector<int64_t>& ids) { return decode_text(tok, ids, skip); };
    }
  }
  for (RequestOutput& o : outs) {
    o.outputs.resize(static_cast<size_t>(std::max<int64_t>(params.n, 1)));
    for (size_t k = 0; k < o.outputs.size(); ++k) o.outputs[k].index = static_cast<int64_t>(k);
  }
  std::map<int64_t, size_t> where;  // request id -> prompt index
  auto on_event = [&](const TokenEvent& e) {
    CompletionOutput& c = outs[where.at(e.request)].outputs[static_cast<size_t>(e.sample)];
    if (e.token >= 0) {
      c.token_ids.push_back(e.token);
      if (params.logprobs > 0) {
        c.token_logprobs.push_back(e.logprob);
        c.top_logprobs.push_back(e.top);
      }
    }
    if (e.finished) c.finish_reason = e.finish_reason;
  };
  size_t next = 0;
  try {
    while (next < outs.size() || engine_->has_work()) {
      // Submit while the queue has room; the rest wait for the running ones.
      while (next < outs.size()) {
        Request r = base;
        r.prompt = outs[next].prompt_token_ids;
        const EngineStats s = engine_->stats();
        if (next > 0 && s.waiting + r.n > engine_->config().max_waiting) break;
        where[engine_->submit(std::move(r), on_event)] = next;
        ++next;
      }
      engine_->step();
    }
  } catch (...) {  // a refused prompt (genesis::Error) ends the call: what it had started is cancelled
    for (const auto& [id, i] : where) engine_->cancel(id);
    engine_->run_until_idle();
    throw;
  }
  if (tok_)
    for (RequestOutput& o : outs)
      for (CompletionOutput& c : o.outputs) c.text = decode_text(*tok_, c.token_ids, params.skip_special_tokens);
  return outs;
}

}  // namespace genesis::serving
