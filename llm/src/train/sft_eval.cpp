// sft_eval.cpp - exact_match of genesis/train/sft.hpp, a held-out skill check: greedy answers to
// the last assistant turn of each conversation, compared with the reference text.
#include "genesis/models/generation.hpp"
#include "genesis/train/sft.hpp"

namespace genesis::train {

namespace {
std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}
}  // namespace

double exact_match(models::QwenForCausalLM& model, const Tokenizer& tok, const ChatTemplate& tmpl,
                   const std::vector<std::vector<ChatMessage>>& conversations, int64_t max_new_tokens,
                   const std::function<void(size_t, const std::string&, bool)>& on_result) {
  models::GenerationConfig g;
  g.max_new_tokens = max_new_tokens;
  for (int64_t id : {tok.eos_token_id, tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")})
    if (id >= 0) g.stop_ids.push_back(id);
  // Prompts and references, then greedy generation in batches of up to 64 prompts.
  std::vector<std::vector<int64_t>> prompts;
  std::vector<std::string> refs;
  std::vector<size_t> which;
  for (size_t i = 0; i < conversations.size(); ++i) {
    const auto& c = conversations[i];
    size_t a = c.size();
    while (a > 0 && c[a - 1].role != "assistant") --a;
    if (a == 0) continue;  // nothing to answer
    std::vector<ChatMessage> head(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(a - 1));
    prompts.push_back(tok.encode(tmpl.apply(head, true, false), false));
    refs.push_back(trim(c[a - 1].content));
    which.push_back(i);
  }
  if (prompts.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, "[sft] exact match: no conversation has an assistant turn");
  const bool was_training = model.is_training();
  model.eval();
  int64_t hits = 0;
  const size_t chunk = 64;
  for (size_t at = 0; at < prompts.size(); at += chunk) {
    const size_t end = std::min(prompts.size(), at + chunk);
    std::vector<std::vector<int64_t>> part(prompts.begin() + static_cast<std::ptrdiff_t>(at),
                                           prompts.begin() + static_cast<std::ptrdiff_t>(end));
    models::GenerationResult r = models::generate(model, part, g);
    for (size_t k = 0; k < part.size(); ++k) {
      const std::string answer = trim(tok.decode(r.tokens[k], true));
      const bool ok = answer == refs[at + k];
      hits += ok;
      if (on_result) on_result(which[at + k], answer, ok);
    }
  }
  model.train(was_training);
  return static_cast<double>(hits) / static_cast<double>(prompts.size());
}

}  // namespace genesis::train
