// chat_template/lexer.h - splits a template into text and tag tokens the way jinja2's lexer does
// with trim_blocks and lstrip_blocks on (transformers' settings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace genesis::chat {

struct Token {
  enum class Type : uint8_t { Data, BlockBegin, BlockEnd, VarBegin, VarEnd, Name, String, Int, Float, Op, End };
  Type type = Type::End;
  std::string text;  // Data: the text; Name/Op: the spelling; String: the decoded value
  int64_t i = 0;
  double f = 0;
  int line = 1;
};

/** Tokens of a template (comments dropped, raw blocks as data), ending with an End token. */
std::vector<Token> tokenize(const std::string& source);

}  // namespace genesis::chat
