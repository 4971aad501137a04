// chat_template/ast.h - the parsed template: expression and statement nodes, and the Program
// (the body plus the source) that ChatTemplate shares between renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.h"

namespace genesis::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Const,    // value
    Name,     // name
    List,     // args
    Tuple,    // args
    Dict,     // kwargs-like pairs in items
    Getattr,  // args[0].name
    Getitem,  // args[0][args[1]]
    Slice,    // args[0..2] = start, stop, step (null when absent)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs); args[0] null inside {% set x | f %}
    Test,     // args[0] is name(args[1..], kwargs)
    Neg,      // -args[0]
    Pos,      // +args[0]
    Not,      // not args[0]
    Binary,   // args[0] <name> args[1] for + - * / // % **
    Compare,  // args[0] ops[0] args[1] ops[1] args[2] ...
    And,      // args[0] and args[1]
    Or,       // args[0] or args[1]
    Cond,     // args[1] if args[0] else args[2] (args[2] null: Undefined)
    Concat,   // args joined with ~
  };
  Kind kind;
  int line = 0;
  int depth = 1;  // 1 + the deepest operand (bounded at parse time, so evaluating and freeing it stays shallow)
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  std::vector<std::string> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches (cond, body) then else_body
    For,       // for targets in expr [if cond]: body else else_body
    Set,       // set targets = expr, or set ns_name.attr = expr
    SetBlock,  // set target [| filter] %}body{% endset
    Break,
    Continue,
    Generation,  // {% generation %}body{% endgeneration %}: body rendered as is
    Macro,       // {% macro targets[0](params) %}body{% endmacro %} (top level only)
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;                      // Output, For (iterable), Set (value), SetBlock (filter, may be null)
  ExprPtr cond;                      // For: loop filter
  std::vector<std::string> targets;  // For/Set names (several: tuple unpacking)
  std::string ns_attr;               // Set: "ns.attr" assignment when not empty (targets[0] = ns)
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: names and defaults (null: none)
  Body body, else_body;
};

struct Program {
  Body body;
};

/** Parses a template; throws genesis::Error naming the construct and line on anything unsupported. */
std::shared_ptr<const Program> parse(const std::string& source);

}  // namespace genesis::chat
