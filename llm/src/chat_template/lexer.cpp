// chat_template/lexer.cpp - jinja2's lexer with trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False: newlines normalised to "\n", `-` strips all whitespace
// beside a tag, `+` keeps it, a block or comment tag eats one newline after it and the
// spaces before it on its own line.
#include "lexer.h"

#include <cstdlib>
#include <cstring>

#include "value.h"

namespace genesis::chat {

namespace {

// Length of the whitespace run (Python's \s, so Unicode spaces too) starting at pos.
size_t space_run(const std::string& s, size_t pos) {
  size_t k = pos;
  while (k < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    if (c < 0x80) {
      if (!is_space(c)) break;
      ++k;
      continue;
    }
    size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (k + n > s.size()) break;
    std::u32string cp = utf8_decode(s.substr(k, n));
    if (cp.size() != 1 || !is_space(cp[0])) break;
    k += n;
  }
  return k - pos;
}

// Python str.rstrip() (Unicode whitespace).
std::string rstrip_space(const std::string& s) {
  std::u32string u = utf8_decode(s);
  while (!u.empty() && is_space(u.back())) u.pop_back();
  return utf8_encode(u);
}

bool all_space(const std::string& s) { return !s.empty() && space_run(s, 0) == s.size(); }

int count_lines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t k = from; k < to && k < s.size(); ++k) n += s[k] == '\n';
  return n;
}

// jinja2 decodes string literals with Python's "unicode-escape".
std::string decode_string(const std::string& body, int line) {
  std::string out;
  for (size_t k = 0; k < body.size(); ++k) {
    char c = body[k];
    if (c != '\\' || k + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++k];
    auto hex = [&](int digits) {
      char32_t cp = 0;
      for (int j = 1; j <= digits; ++j) {
        if (k + j >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[k + j])))
          fail("truncated \\" + std::string(1, e) + " escape in string literal", line);
        char h = body[k + j];
        cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      k += digits;
      utf8_append(out, cp);
    };
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      case 'N': fail("unsupported \\N{...} escape in string literal", line);
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = e - '0';
          for (int j = 0; j < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7'; ++j)
            cp = cp * 8 + (body[++k] - '0');
          utf8_append(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) {
    // Newlines normalised and one trailing newline dropped, as jinja2's tokeniter does.
    for (size_t k = 0; k < source.size(); ++k) {
      if (source[k] == '\r') {
        src_ += '\n';
        if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
      } else {
        src_ += source[k];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) root_step();
    push(Token::Type::End, "", line_);
    return std::move(out_);
  }

 private:
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last match ended with "\n"
  std::vector<Token> out_;

  void push(Token::Type t, std::string text, int line) {
    Token tok;
    tok.type = t;
    tok.text = std::move(text);
    tok.line = line;
    out_.push_back(std::move(tok));
  }

  // Text before a tag, with the tag's left whitespace control applied.
  void emit_text(std::string text, char sign, bool block_or_comment) {
    int text_lines = count_lines(text, 0, text.size());
    if (sign == '-') {
      text = rstrip_space(text);
    } else if (sign != '+' && block_or_comment) {
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos))) text.resize(l_pos);
    }
    if (!text.empty()) push(Token::Type::Data, text, line_);
    line_ += text_lines;
  }

  // Matches a tag end at pos_: "+%}", "-%}" + whitespace, or "%}" + one "\n" when trimming.
  bool tag_end(const char* end, bool trim_newline) {
    size_t n = std::strlen(end);
    size_t p = pos_;
    if (src_.compare(p, 1, "+") == 0 && src_.compare(p + 1, n, end) == 0 && trim_newline) {
      pos_ = p + 1 + n;
    } else if (src_.compare(p, 1, "-") == 0 && src_.compare(p + 1, n, end) == 0) {
      pos_ = p + 1 + n;
      pos_ += space_run(src_, pos_);
    } else if (src_.compare(p, n, end) == 0) {
      pos_ = p + n;
      if (trim_newline && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    } else {
      return false;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    line_ += count_lines(src_, p, pos_);
    return true;
  }

  void root_step() {
    size_t found = std::string::npos;
    for (size_t k = pos_; k + 1 < src_.size(); ++k)
      if (src_[k] == '{' && (src_[k + 1] == '%' || src_[k + 1] == '{' || src_[k + 1] == '#')) {
        found = k;
        break;
      }
    if (found == std::string::npos) {
      std::string text = src_.substr(pos_);
      if (!text.empty()) push(Token::Type::Data, text, line_);
      line_ += count_lines(text, 0, text.size());
      pos_ = src_.size();
      return;
    }
    std::string text = src_.substr(pos_, found - pos_);
    char kind = src_[found + 1];
    size_t after = found + 2;
    char sign = after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
    if (kind == '%' && raw_begin(found, text, sign)) return;
    emit_text(text, sign, kind != '{');
    pos_ = after + (sign ? 1 : 0);
    int open_line = line_;
    if (kind == '#') {
      comment(open_line);
    } else {
      push(kind == '%' ? Token::Type::BlockBegin : Token::Type::VarBegin, kind == '%' ? "{%" : "{{", line_);
      tag(kind == '%', open_line);
    }
  }

  void comment(int open_line) {
    while (pos_ < src_.size()) {
      size_t p = pos_;
      if (tag_end("#}", true)) return;
      line_ += src_[p] == '\n';
      pos_ = p + 1;
    }
    fail("unclosed comment opened", open_line);
  }

  // {% raw %}...{% endraw %}: the body is data, untouched.
  bool raw_begin(size_t found, const std::string& text, char sign) {
    size_t p = found + 2 + (sign ? 1 : 0);
    p += space_run(src_, p);
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    size_t q = p + space_run(src_, p);
    if (q == p && q < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_'))
      return false;
    p = q;
    bool strip_after = false;
    if (src_.compare(p, 3, "-%}") == 0) {
      strip_after = true;
      p += 3;
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    emit_text(text, sign, true);
    int open_line = line_;
    line_ += count_lines(src_, found, p);
    if (strip_after) p += space_run(src_, p);
    // Find "{%[-+]? endraw [-+]?%}".
    for (size_t k = p; k + 1 < src_.size(); ++k) {
      if (src_[k] != '{' || src_[k + 1] != '%') continue;
      size_t e = k + 2;
      char esign = e < src_.size() && (src_[e] == '-' || src_[e] == '+') ? src_[e] : 0;
      if (esign) ++e;
      e += space_run(src_, e);
      if (src_.compare(e, 6, "endraw") != 0) continue;
      e += 6;
      e += space_run(src_, e);
      std::string body = src_.substr(p, k - p);
      line_starting_ = src_[p - 1] == '\n';
      emit_text(body, esign, true);
      line_ = open_line + count_lines(src_, found, e);
      pos_ = e;
      if (!tag_end("%}", true)) fail("malformed {% endraw %}", line_);
      return true;
    }
    fail("missing {% endraw %} for {% raw %} opened", open_line);
  }

  void tag(bool block, int open_line) {
    std::vector<char> balance;
    static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                 "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};
    while (true) {
      if (pos_ >= src_.size()) fail(std::string("unclosed '") + (block ? "{%" : "{{") + "' tag opened", open_line);
      if (balance.empty()) {
        int l = line_;
        if (block ? tag_end("%}", true) : tag_end("}}", false)) {
          push(block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", l);
          return;
        }
      }
      char c = src_[pos_];
      size_t ws = space_run(src_, pos_);
      if (ws) {
        line_ += count_lines(src_, pos_, pos_ + ws);
        pos_ += ws;
        line_starting_ = src_[pos_ - 1] == '\n';
        continue;
      }
      line_starting_ = false;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        number();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        push(Token::Type::Name, src_.substr(pos_, e - pos_), line_);
        pos_ = e;
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        const char* op = nullptr;
        for (const char* o : kOps)
          if (src_.compare(pos_, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        if (!op) fail(std::string("unexpected character '") + c + "'", line_);
        std::string o(op);
        if (o == "(" || o == "[" || o == "{") {
          balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
        } else if (o == ")" || o == "]" || o == "}") {
          if (balance.empty()) fail("unexpected '" + o + "'", line_);
          if (balance.back() != o[0])
            fail("unexpected '" + o + "', expected '" + std::string(1, balance.back()) + "'", line_);
          balance.pop_back();
        }
        push(Token::Type::Op, o, line_);
        pos_ += o.size();
      }
    }
  }

  void number() {
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::strchr("xXoObB", src_[pos_ + 1])) {
      int base = std::tolower(src_[pos_ + 1]) == 'x' ? 16 : std::tolower(src_[pos_ + 1]) == 'o' ? 8 : 2;
      size_t e = pos_ + 2;
      std::string digits;
      while (e < src_.size() && (std::isxdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
      Token tok;
      tok.type = Token::Type::Int;
      tok.line = line_;
      tok.text = src_.substr(pos_, e - pos_);
      try {
        size_t used = 0;
        tok.i = std::stoll(digits, &used, base);
        if (used != digits.size()) throw std::invalid_argument(digits);
      } catch (const std::exception&) {
        fail("invalid integer literal " + tok.text, line_);
      }
      out_.push_back(tok);
      pos_ = e;
      return;
    }
    size_t e = pos_;
    auto digits = [&](size_t& k) {
      size_t start = k;
      while (k < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[k])) ||
                                 (src_[k] == '_' && k > start && k + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[k + 1])))))
        ++k;
      return k > start;
    };
    digits(e);
    bool is_float = false;
    size_t k = e;
    if (k + 1 < src_.size() && src_[k] == '.' && std::isdigit(static_cast<unsigned char>(src_[k + 1])) &&
        !(pos_ > 0 && src_[pos_ - 1] == '.')) {  // "x.0.1" is two attribute lookups
      ++k;
      digits(k);
      e = k;
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        digits(x);
        e = x;
        is_float = true;
      }
    }
    std::string text;
    for (size_t j = pos_; j < e; ++j)
      if (src_[j] != '_') text += src_[j];
    Token tok;
    tok.line = line_;
    tok.text = text;
    if (is_float) {
      tok.type = Token::Type::Float;
      tok.f = std::strtod(text.c_str(), nullptr);  // as Python's float(): inf past the range, 0 below it
    } else {
      tok.type = Token::Type::Int;
      try {
        tok.i = std::stoll(text);
      } catch (const std::exception&) {
        fail("integer literal " + text + " out of range", line_);
      }
    }
    out_.push_back(tok);
    pos_ = e;
  }

  void string_literal(char quote) {
    size_t k = pos_ + 1;
    while (k < src_.size() && src_[k] != quote) k += src_[k] == '\\' ? 2 : 1;
    if (k >= src_.size()) fail("unterminated string literal", line_);
    Token tok;
    tok.type = Token::Type::String;
    tok.line = line_;
    tok.text = decode_string(src_.substr(pos_ + 1, k - pos_ - 1), line_);
    out_.push_back(tok);
    line_ += count_lines(src_, pos_, k);
    pos_ = k + 1;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace genesis::chat
