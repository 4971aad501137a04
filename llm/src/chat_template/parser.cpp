// chat_template/parser.cpp - recursive-descent parser over the lexer's tokens, following jinja2's
// grammar and operator precedence (or < and < not < compare < +,- < ~ < *,/,//,% < ** <
// unary, with filters and tests binding to the unary operand).
#include <algorithm>
#include <set>

#include "ast.h"
#include "builtins.h"
#include "lexer.h"

namespace genesis::chat {

namespace {

using T = Token::Type;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_template() {
    std::string end;
    return parse_body({}, "", 0, &end);
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;  // statements nested in if/for/set/macro blocks
  int nest_ = 0;   // the parser's own recursion (parentheses, literals, call arguments, unary operators)

  // Limits on what one template may nest (far above what chat templates use): deeper input is refused with an
  // error instead of overflowing the stack while parsing, rendering or freeing it.
  static constexpr int kMaxBlockDepth = 64;
  static constexpr int kMaxNest = 128;
  static constexpr int kMaxExprDepth = 256;

  struct NestGuard {
    Parser& p;
    explicit NestGuard(Parser& p) : p(p) {
      if (++p.nest_ > kMaxNest)
        fail("parse depth limit exceeded: expressions nested deeper than " + std::to_string(kMaxNest) + " levels",
             p.cur().line);
    }
    ~NestGuard() { --p.nest_; }
  };

  // Sets e's depth from its operands; fails past kMaxExprDepth.
  static ExprPtr deepen(ExprPtr e) {
    int d = 0;
    for (const ExprPtr& a : e->args)
      if (a) d = std::max(d, a->depth);
    for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
    for (const auto& kv : e->items) d = std::max({d, kv.first->depth, kv.second->depth});
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth)
      fail("expression depth limit exceeded: an expression nested deeper than " + std::to_string(kMaxExprDepth) +
               " operations",
           e->line);
    return e;
  }

  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().type == T::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == T::Name && cur().text == name; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::End: return "end of template";
      case T::BlockEnd: return "end of statement block";
      case T::VarEnd: return "end of print statement";
      case T::String: return "string";
      case T::Int:
      case T::Float: return "number " + t.text;
      default: return "'" + t.text + "'";
    }
  }
  [[noreturn]] void unexpected(const std::string& expected = "") const {
    fail("unexpected " + describe(cur()) + (expected.empty() ? "" : ", expected " + expected), cur().line);
  }
  void expect_op(const char* op) {
    if (!is_op(op)) unexpected(std::string("'") + op + "'");
    next();
  }
  std::string expect_name() {
    if (cur().type != T::Name) unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd) unexpected("'%}'");
    next();
  }
  static ExprPtr make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // ---- statements

  // Parses until a block tag named in `ends` (left as the current token) or the end.
  Body parse_body(const std::set<std::string>& ends, const std::string& opener, int open_line, std::string* found) {
    if (depth_ > kMaxBlockDepth)
      fail("block depth limit exceeded: statements nested deeper than " + std::to_string(kMaxBlockDepth) + " blocks",
           open_line);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::End) {
        if (!ends.empty()) fail("missing '{% end" + opener + " %}' for '{% " + opener + " %}' opened", open_line);
        return body;
      }
      if (t.type == T::Data) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Text;
        n->line = t.line;
        n->text = t.text;
        body.push_back(std::move(n));
        next();
      } else if (t.type == T::VarBegin) {
        next();
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Output;
        n->line = t.line;
        n->expr = parse_tuple(true, false);
        if (cur().type != T::VarEnd) unexpected("'}}'");
        next();
        body.push_back(std::move(n));
      } else if (t.type == T::BlockBegin) {
        next();
        if (cur().type != T::Name) unexpected("a statement name");
        if (ends.count(cur().text)) {
          *found = cur().text;
          return body;
        }
        body.push_back(parse_statement());
      } else {
        unexpected();
      }
    }
  }

  NodePtr parse_statement() {
    const Token& t = cur();
    int line = t.line;
    std::string name = t.text;
    auto n = std::make_unique<Node>();
    n->line = line;
    if (name == "if") {
      n->kind = Node::Kind::If;
      next();
      while (true) {
        ExprPtr cond = parse_tuple(false, false);
        expect_block_end();
        std::string end;
        ++depth_;
        Body b = parse_body({"elif", "else", "endif"}, "if", line, &end);
        --depth_;
        n->branches.emplace_back(std::move(cond), std::move(b));
        next();
        if (end == "elif") continue;
        if (end == "else") {
          expect_block_end();
          ++depth_;
          n->else_body = parse_body({"endif"}, "if", line, &end);
          --depth_;
          next();
        }
        expect_block_end();
        return n;
      }
    }
    if (name == "for") {
      n->kind = Node::Kind::For;
      next();
      n->targets = parse_targets();
      if (!is_name("in")) unexpected("'in'");
      next();
      n->expr = parse_tuple(false, false);
      if (is_name("if")) {
        next();
        n->cond = parse_expression(true);
      }
      if (is_name("recursive")) fail("unsupported recursive for loop", cur().line);
      expect_block_end();
      std::string end;
      ++loop_depth_;
      ++depth_;
      n->body = parse_body({"else", "endfor"}, "for", line, &end);
      --loop_depth_;
      next();
      if (end == "else") {
        expect_block_end();
        n->else_body = parse_body({"endfor"}, "for", line, &end);
        next();
      }
      --depth_;
      expect_block_end();
      return n;
    }
    if (name == "set") {
      next();
      if (peek().type == T::Op && peek().text == ".") {
        n->kind = Node::Kind::Set;
        n->targets.push_back(expect_name());
        next();
        n->ns_attr = expect_name();
        expect_op("=");
        n->expr = parse_tuple(true, false);
        expect_block_end();
        return n;
      }
      n->targets = parse_targets();
      if (is_op("=")) {
        n->kind = Node::Kind::Set;
        next();
        n->expr = parse_tuple(true, false);
        expect_block_end();
        return n;
      }
      n->kind = Node::Kind::SetBlock;
      if (n->targets.size() != 1) fail("a block set takes one name", line);
      if (is_op("|")) n->expr = parse_filters(nullptr);
      expect_block_end();
      std::string end;
      ++depth_;
      n->body = parse_body({"endset"}, "set", line, &end);
      --depth_;
      next();
      expect_block_end();
      return n;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail("'" + name + "' outside a for loop", line);
      n->kind = name == "break" ? Node::Kind::Break : Node::Kind::Continue;
      next();
      expect_block_end();
      return n;
    }
    if (name == "generation") {
      n->kind = Node::Kind::Generation;
      next();
      expect_block_end();
      std::string end;
      ++depth_;
      n->body = parse_body({"endgeneration"}, "generation", line, &end);
      --depth_;
      next();
      expect_block_end();
      return n;
    }
    if (name == "macro") {
      // Macros close over the top-level scope, so they may only be defined there.
      if (depth_ > 0) fail("macros must be defined at the top level of the template", line);
      n->kind = Node::Kind::Macro;
      next();
      n->targets.push_back(expect_name());
      expect_op("(");
      while (!is_op(")")) {
        if (!n->params.empty()) expect_op(",");
        if (is_op(")")) break;
        std::string param = expect_name();
        ExprPtr dflt;
        if (is_op("=")) {
          next();
          dflt = parse_expression(true);
        } else if (!n->params.empty() && n->params.back().second) {
          fail("non-default argument '" + param + "' follows default argument", cur().line);
        }
        n->params.emplace_back(param, std::move(dflt));
      }
      next();
      expect_block_end();
      std::string end;
      ++depth_;
      n->body = parse_body({"endmacro"}, "macro", line, &end);
      --depth_;
      next();
      expect_block_end();
      return n;
    }
    if (name == "print") {
      n->kind = Node::Kind::Output;
      next();
      n->expr = parse_tuple(true, false);
      expect_block_end();
      return n;
    }
    static const std::set<std::string> kJinjaTags = {"call",   "filter",    "block",  "extends",    "include",
                                                     "import", "from",      "with",   "autoescape", "do",
                                                     "trans",  "pluralize", "endcall"};
    if (kJinjaTags.count(name)) fail("unsupported tag '" + name + "'", line);
    fail("unknown tag '" + name + "'", line);
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = is_op("(");
    if (paren) next();
    names.push_back(expect_name());
    while (is_op(",")) {
      next();
      if (cur().type != T::Name || is_name("in")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  // ---- expressions

  bool tuple_end() const {
    return cur().type == T::VarEnd || cur().type == T::BlockEnd || cur().type == T::End || is_op(")");
  }

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens) {
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (tuple_end()) break;
      args.push_back(parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) unexpected();
    }
    auto e = make(Expr::Kind::Tuple, line);
    e->args = std::move(args);
    return deepen(std::move(e));
  }

  ExprPtr parse_expression(bool with_condexpr) {
    NestGuard guard(*this);
    if (!with_condexpr) return parse_or();
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (is_name("if")) {
      next();
      auto e = make(Expr::Kind::Cond, line);
      e->args.push_back(parse_or());
      e->args.push_back(std::move(expr1));
      if (is_name("else")) {
        next();
        e->args.push_back(parse_expression(true));
      } else {
        e->args.push_back(nullptr);
      }
      expr1 = deepen(std::move(e));
    }
    return expr1;
  }

  ExprPtr binary(Expr::Kind k, ExprPtr a, ExprPtr b, int line, const std::string& op = "") {
    auto e = make(k, line);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return deepen(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      int line = cur().line;
      next();
      left = binary(Expr::Kind::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      int line = cur().line;
      next();
      left = binary(Expr::Kind::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      NestGuard guard(*this);
      auto e = make(Expr::Kind::Not, cur().line);
      next();
      e->args.push_back(parse_not());
      return deepen(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == T::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
                                  cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().type == T::Name && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::Compare, line);
        cmp->args.push_back(std::move(expr));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? deepen(std::move(cmp)) : std::move(expr);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      left = binary(Expr::Kind::Binary, std::move(left), parse_concat(), line, op);
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(Expr::Kind::Concat, line);
    e->args.push_back(std::move(first));
    while (is_op("~")) {
      next();
      e->args.push_back(parse_math2());
    }
    return deepen(std::move(e));
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      left = binary(Expr::Kind::Binary, std::move(left), parse_pow(), line, op);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      int line = cur().line;
      next();
      left = binary(Expr::Kind::Binary, std::move(left), parse_unary(true), line, "**");
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      NestGuard guard(*this);
      node = make(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, cur().line);
      next();
      node->args.push_back(parse_unary(false));
      node = deepen(std::move(node));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    int line = t.line;
    if (t.type == T::Name) {
      auto e = make(Expr::Kind::Const, line);
      if (t.text == "true" || t.text == "True")
        e->value = Value::boolean(true);
      else if (t.text == "false" || t.text == "False")
        e->value = Value::boolean(false);
      else if (t.text == "none" || t.text == "None")
        e->value = Value::none();
      else {
        e->kind = Expr::Kind::Name;
        e->name = t.text;
      }
      next();
      return e;
    }
    if (t.type == T::String) {
      std::string s;
      while (cur().type == T::String) {
        s += cur().text;
        next();
      }
      auto e = make(Expr::Kind::Const, line);
      e->value = Value::string(s);
      return e;
    }
    if (t.type == T::Int || t.type == T::Float) {
      auto e = make(Expr::Kind::Const, line);
      e->value = t.type == T::Int ? Value::integer(t.i) : Value::real(t.f);
      next();
      return e;
    }
    if (is_op("(")) {
      next();
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      next();
      auto e = make(Expr::Kind::List, line);
      while (!is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("]")) break;
        e->args.push_back(parse_expression(true));
      }
      next();
      return deepen(std::move(e));
    }
    if (is_op("{")) {
      next();
      auto e = make(Expr::Kind::Dict, line);
      while (!is_op("}")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("}")) break;
        ExprPtr key = parse_expression(true);
        expect_op(":");
        e->items.emplace_back(std::move(key), parse_expression(true));
      }
      next();
      return deepen(std::move(e));
    }
    unexpected();
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node), Expr::Kind::Call, "");
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filters(std::move(node));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node), Expr::Kind::Call, "");
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    int line = cur().line;
    if (is_op(".")) {
      next();
      if (cur().type == T::Name) {
        auto e = make(Expr::Kind::Getattr, line);
        e->name = cur().text;
        e->args.push_back(std::move(node));
        next();
        return deepen(std::move(e));
      }
      if (cur().type != T::Int) unexpected("a name or number");
      auto e = make(Expr::Kind::Getitem, line);
      auto k = make(Expr::Kind::Const, line);
      k->value = Value::integer(cur().i);
      next();
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(k));
      return deepen(std::move(e));
    }
    next();  // [
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    next();
    auto e = make(Expr::Kind::Getitem, line);
    e->args.push_back(std::move(node));
    if (args.size() == 1) {
      e->args.push_back(std::move(args[0]));
    } else {
      auto tup = make(Expr::Kind::Tuple, line);
      tup->args = std::move(args);
      e->args.push_back(deepen(std::move(tup)));
    }
    return deepen(std::move(e));
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    auto slice = make(Expr::Kind::Slice, line);
    if (is_op(":")) {
      next();
      slice->args.push_back(nullptr);
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      slice->args.push_back(std::move(node));
    }
    auto at_end = [&] { return is_op("]") || is_op(","); };
    if (is_op(":"))
      slice->args.push_back(nullptr);
    else
      slice->args.push_back(at_end() ? nullptr : parse_expression(true));
    if (is_op(":")) {
      next();
      slice->args.push_back(at_end() ? nullptr : parse_expression(true));
    } else {
      slice->args.push_back(nullptr);
    }
    return deepen(std::move(slice));
  }

  // Call arguments "(a, b, key=value)" into e->args (after any already there) and e->kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("unsupported *args / **kwargs in a call", cur().line);
      if (cur().type == T::Name && peek().type == T::Op && peek().text == "=") {
        std::string key = cur().text;
        next();
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument after keyword argument", cur().line);
        e.args.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr node, Expr::Kind kind, const std::string& name) {
    auto e = make(kind, cur().line);
    e->name = name;
    e->args.push_back(std::move(node));
    parse_call_args(*e);
    return deepen(std::move(e));
  }

  ExprPtr parse_filters(ExprPtr node) {
    while (is_op("|")) {
      next();
      int line = cur().line;
      std::string name = expect_name();
      if (!has_filter(name)) fail("unsupported filter '" + name + "'", line);
      auto e = make(Expr::Kind::Filter, line);
      e->name = name;
      e->args.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*e);
      node = deepen(std::move(e));
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = cur().line;
    next();  // is
    bool negated = false;
    if (is_name("not")) {
      negated = true;
      next();
    }
    std::string name = expect_name();
    if (!has_test(name)) fail("unsupported test '" + name + "'", line);
    auto e = make(Expr::Kind::Test, line);
    e->name = name;
    e->args.push_back(std::move(node));
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((cur().type == T::Name || cur().type == T::String || cur().type == T::Int || cur().type == T::Float ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("cannot chain tests with 'is'", cur().line);
      e->args.push_back(parse_postfix(parse_primary()));
    }
    e = deepen(std::move(e));
    if (!negated) return e;
    auto n = make(Expr::Kind::Not, line);
    n->args.push_back(std::move(e));
    return deepen(std::move(n));
  }
};

}  // namespace

std::shared_ptr<const Program> parse(const std::string& source) {
  auto program = std::make_shared<Program>();
  program->body = Parser(tokenize(source)).parse_template();
  return program;
}

}  // namespace genesis::chat
