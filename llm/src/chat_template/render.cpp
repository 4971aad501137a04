// chat_template/render.cpp - runs a parsed template: statements with jinja2's scoping (a for
// loop's body, including its `set`s, is a fresh scope each iteration; if-blocks are not
// scopes; namespaces are shared objects), and expressions with Python operator semantics.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ast.h"
#include "builtins.h"
#include "render.h"

namespace genesis::chat {

namespace {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  const Scope* parent = nullptr;
};

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(const Dict& context, std::string& out, const ChatTemplateLimits& limits)
      : context_(context), out_(&out), limits_(limits) {}

  void run(const Body& body) {
    Scope root;
    scope_ = root_ = &root;
    exec(body);
  }

 private:
  const Dict& context_;
  std::string* out_;
  const ChatTemplateLimits& limits_;
  int64_t call_depth_ = 0;  // macro calls in progress
  int64_t calls_ = 0;       // macro calls so far
  int64_t iterations_ = 0;  // loop iterations so far
  int64_t nesting_ = 0;     // statements and expressions being evaluated (the interpreter's recursion)

  // One level of the interpreter's recursion (statements, expressions), bounded so a deep template cannot
  // overflow the stack.
  struct Nest {
    Renderer& r;
    Nest(Renderer& r, int line) : r(r) {
      if (++r.nesting_ > r.limits_.max_nesting) {
        --r.nesting_;
        fail("nesting limit exceeded: statements and expressions nested deeper than max_nesting (" +
                 std::to_string(r.limits_.max_nesting) + ")",
             line);
      }
    }
    ~Nest() { --r.nesting_; }
  };

  void emit(const std::string& text, int line) {
    if (static_cast<int64_t>(out_->size() + text.size()) > limits_.max_output_bytes)
      fail("output size limit exceeded: the rendered text is over max_output_bytes (" +
               std::to_string(limits_.max_output_bytes) + ")",
           line);
    *out_ += text;
  }

  Scope* scope_ = nullptr;
  Scope* root_ = nullptr;               // the template's top level, where macros are defined
  const Value* block_input_ = nullptr;  // the captured body inside {% set x | filter %}

  Value lookup(const std::string& name) const {
    for (const Scope* s = scope_; s; s = s->parent) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    if (const Value* v = context_.find(name)) return *v;
    return global(name);
  }

  void assign(const std::vector<std::string>& targets, const Value& v, Scope& scope, int line) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = v;
      return;
    }
    List items = iterate(v, line);
    if (items.size() != targets.size())
      fail(
          "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names",
          line);
    for (size_t k = 0; k < targets.size(); ++k) scope.vars[targets[k]] = items[k];
  }

  // ---- statements

  Flow exec(const Body& body) {
    for (const NodePtr& n : body) {
      Flow f = exec(*n);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Node& n) {
    Nest nest(*this, n.line);
    switch (n.kind) {
      case Node::Kind::Text: emit(n.text, n.line); return Flow::Normal;
      case Node::Kind::Output: emit(to_str(eval(*n.expr)), n.line); return Flow::Normal;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (truthy(eval(*cond))) return exec(body);
        return exec(n.else_body);
      case Node::Kind::For: return exec_for(n);
      case Node::Kind::Set: {
        Value v = eval(*n.expr);
        if (n.ns_attr.empty()) {
          assign(n.targets, v, *scope_, n.line);
          return Flow::Normal;
        }
        Value ns = lookup(n.targets[0]);
        if (ns.kind != Value::Kind::Namespace)
          fail("cannot assign attribute on non-namespace object '" + n.targets[0] + "'", n.line);
        // A namespace inside a namespace could make a cycle (never printed, never freed): refused.
        if (v.kind == Value::Kind::Namespace || v.has_ns)
          fail("cannot store a namespace in a namespace attribute ('" + n.targets[0] + "." + n.ns_attr + "')", n.line);
        ns.dict->set(n.ns_attr, v);
        return Flow::Normal;
      }
      case Node::Kind::SetBlock: {
        std::string captured;
        std::string* saved = out_;
        out_ = &captured;
        exec(n.body);
        out_ = saved;
        Value v = Value::string(captured);
        if (n.expr) {
          const Value* saved_input = block_input_;
          block_input_ = &v;
          v = eval(*n.expr);
          block_input_ = saved_input;
        }
        scope_->vars[n.targets[0]] = v;
        return Flow::Normal;
      }
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
      case Node::Kind::Generation: return exec(n.body);
      case Node::Kind::Macro: {
        const Node* node = &n;
        scope_->vars[n.targets[0]] = Value::function(n.targets[0], [this, node](List& args, KwArgs& kwargs, int line) {
          return call_macro(*node, args, kwargs, line);
        });
        return Flow::Normal;
      }
    }
    return Flow::Normal;
  }

  Flow exec_for(const Node& n) {
    Value seq = eval(*n.expr);
    if (seq.is_none()) fail("'NoneType' object is not iterable", n.line);
    List items = iterate(seq, n.line);
    if (n.cond) {
      List kept;
      for (const Value& item : items) {
        count_iteration(n.line);
        Scope s;
        s.parent = scope_;
        assign(n.targets, item, s, n.line);
        Scope* saved = scope_;
        scope_ = &s;
        bool keep = truthy(eval(*n.cond));
        scope_ = saved;
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    Scope* saved = scope_;
    if (items.empty()) {
      Scope s;
      s.parent = saved;
      scope_ = &s;
      exec(n.else_body);
      scope_ = saved;
      return Flow::Normal;
    }
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      count_iteration(n.line);
      Scope s;
      s.parent = saved;
      assign(n.targets, items[k], s, n.line);
      auto loop = std::make_shared<Dict>();
      loop->set("index", Value::integer(k + 1));
      loop->set("index0", Value::integer(k));
      loop->set("revindex", Value::integer(len - k));
      loop->set("revindex0", Value::integer(len - k - 1));
      loop->set("first", Value::boolean(k == 0));
      loop->set("last", Value::boolean(k == len - 1));
      loop->set("length", Value::integer(len));
      loop->set("depth", Value::integer(1));
      loop->set("depth0", Value::integer(0));
      if (k > 0) loop->set("previtem", items[k - 1]);
      if (k + 1 < len) loop->set("nextitem", items[k + 1]);
      loop->set("cycle", Value::function("cycle", [k](List& args, KwArgs&, int line) {
                  if (args.empty()) fail("no items for cycling given", line);
                  return args[static_cast<size_t>(k) % args.size()];
                }));
      s.vars["loop"] = Value::make_dict(loop);
      scope_ = &s;
      Flow f = exec(n.body);
      scope_ = saved;
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  void count_iteration(int line) {
    if (++iterations_ > limits_.max_loop_iterations)
      fail("loop iteration limit exceeded: over max_loop_iterations (" + std::to_string(limits_.max_loop_iterations) +
               ") loop iterations in one render",
           line);
  }

  // A macro call renders its body in a fresh scope over the top level, with the parameters
  // bound (a missing one without a default is Undefined, as in jinja2) and returns the text.
  Value call_macro(const Node& m, List& args, KwArgs& kwargs, int line) {
    const std::string& name = m.targets[0];
    if (call_depth_ >= limits_.max_call_depth)
      fail("call depth limit exceeded: macro '" + name + "' called with over max_call_depth (" +
               std::to_string(limits_.max_call_depth) + ") calls in progress (unbounded recursion?)",
           line);
    if (++calls_ > limits_.max_calls)
      fail("call count limit exceeded: over max_calls (" + std::to_string(limits_.max_calls) +
               ") macro calls in one render",
           line);
    struct Depth {
      int64_t& d;
      explicit Depth(int64_t& d) : d(d) { ++d; }
      ~Depth() { --d; }
    } depth(call_depth_);
    if (args.size() > m.params.size())
      fail("macro '" + name + "' takes not more than " + std::to_string(m.params.size()) + " argument(s)", line);
    Scope s;
    s.parent = root_;
    Scope* saved_scope = scope_;
    scope_ = &s;
    for (size_t k = 0; k < m.params.size(); ++k) {
      const std::string& param = m.params[k].first;
      const auto& dflt = m.params[k].second;
      auto kw = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& p) { return p.first == param; });
      if (k < args.size()) {
        if (kw != kwargs.end()) fail("macro '" + name + "' got multiple values for argument '" + param + "'", line);
        s.vars[param] = args[k];
      } else if (kw != kwargs.end()) {
        s.vars[param] = kw->second;
      } else if (dflt) {
        s.vars[param] = eval(*dflt);
      } else {
        s.vars[param] = Value::undefined("parameter '" + param + "' was not provided");
      }
    }
    for (const auto& kwarg : kwargs) {
      const std::string& key = kwarg.first;
      if (std::none_of(m.params.begin(), m.params.end(), [&](const auto& p) { return p.first == key; }))
        fail("macro '" + name + "' takes no keyword argument '" + key + "'", line);
    }
    std::string text;
    std::string* saved_out = out_;
    out_ = &text;
    exec(m.body);
    out_ = saved_out;
    scope_ = saved_scope;
    return Value::string(text);
  }

  // ---- expressions

  Value eval(const Expr& e) {
    Nest nest(*this, e.line);
    using K = Expr::Kind;
    switch (e.kind) {
      case K::Const: return e.value;
      case K::Name: {
        Value v = lookup(e.name);
        if (v.is_undefined() && v.s.empty()) v.s = "'" + e.name + "' is undefined";
        return v;
      }
      case K::List:
      case K::Tuple: {
        List items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a));
        return Value::make_list(std::move(items), e.kind == K::Tuple);
      }
      case K::Dict: {
        auto d = std::make_shared<Dict>();
        for (const auto& [k, v] : e.items) {
          Value key = eval(*k);
          if (!key.is_string()) fail("dict keys must be strings, got " + type_name(key), e.line);
          d->set(key.s, eval(*v));
        }
        return Value::make_dict(d);
      }
      case K::Getattr: return get_attr(eval(*e.args[0]), e.name, e.line);
      case K::Getitem: {
        Value obj = eval(*e.args[0]);
        const Expr& key = *e.args[1];
        if (key.kind == K::Slice) {
          auto part = [&](size_t k) { return key.args[k] ? eval(*key.args[k]) : Value::none(); };
          return slice(obj, part(0), part(1), part(2), e.line);
        }
        return get_item(obj, eval(key), e.line);
      }
      case K::Slice: fail("a slice outside a subscript", e.line);
      case K::Call: {
        Value callee = eval(*e.args[0]);
        List args;
        KwArgs kwargs;
        eval_args(e, args, kwargs);
        if (callee.is_undefined()) require_defined(callee, e.line);
        if (callee.kind != Value::Kind::Function) fail("'" + type_name(callee) + "' object is not callable", e.line);
        return callee.fn->call(args, kwargs, e.line);
      }
      case K::Filter: {
        Value input = e.args[0] ? eval(*e.args[0]) : *block_input_;
        List args;
        KwArgs kwargs;
        eval_args(e, args, kwargs);
        return call_filter(e.name, input, args, kwargs, e.line);
      }
      case K::Test: {
        Value v = eval(*e.args[0]);
        List args;
        KwArgs kwargs;
        eval_args(e, args, kwargs);
        return Value::boolean(call_test(e.name, v, args, kwargs, e.line));
      }
      case K::Neg:
      case K::Pos: {
        Value v = eval(*e.args[0]);
        require_defined(v, e.line);
        if (!v.is_number())
          fail("bad operand type for unary " + std::string(e.kind == K::Neg ? "-" : "+") + ": '" + type_name(v) + "'",
               e.line);
        if (e.kind == K::Pos) return v.is_integral() ? Value::integer(v.as_int()) : v;
        return v.is_integral() ? Value::integer(-v.as_int()) : Value::real(-v.f);
      }
      case K::Not: return Value::boolean(!truthy(eval(*e.args[0])));
      case K::And: {
        Value l = eval(*e.args[0]);
        return truthy(l) ? eval(*e.args[1]) : l;
      }
      case K::Or: {
        Value l = eval(*e.args[0]);
        return truthy(l) ? l : eval(*e.args[1]);
      }
      case K::Cond:
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        if (e.args[2]) return eval(*e.args[2]);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined");
      case K::Concat: {
        std::string s;
        for (const ExprPtr& a : e.args) {
          s += to_str(eval(*a));
          check_string_size(s.size(), e.line);
        }
        return Value::string(s);
      }
      case K::Compare: {
        Value left = eval(*e.args[0]);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.args[k + 1]);
          if (!compare(e.ops[k], left, right, e.line)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case K::Binary: return arith(e.name, eval(*e.args[0]), eval(*e.args[1]), e.line);
    }
    return Value();
  }

  void eval_args(const Expr& e, List& args, KwArgs& kwargs) {
    for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
    for (const auto& [key, v] : e.kwargs) kwargs.emplace_back(key, eval(*v));
  }

  static bool compare(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "==") return equal(a, b);
    if (op == "!=") return !equal(a, b);
    if (op == "in") return contains(b, a, line);
    if (op == "notin") return !contains(b, a, line);
    require_defined(a, line);
    require_defined(b, line);
    if (op == "<") return less(a, b, line);
    if (op == ">") return less(b, a, line);
    if (op == "<=") return !less(b, a, line);
    return !less(a, b, line);  // >=
  }

  // Python's str % args for %s, %r, %d, %i and %%.
  static Value percent_format(const std::string& fmt, const Value& args, int line) {
    bool tuple = args.is_sequence() && args.tuple;
    // Python treats any non-tuple, non-str object with __getitem__ as a mapping of names.
    bool mapping = !tuple && (args.is_dict() || args.is_sequence() || args.is_undefined());
    List values = tuple ? *args.list : List{args};
    size_t next = 0;
    std::string out;
    for (size_t k = 0; k < fmt.size(); ++k) {
      if (fmt[k] != '%') {
        out += fmt[k];
        continue;
      }
      if (k + 1 >= fmt.size()) fail("incomplete format", line);
      char c = fmt[++k];
      if (c == '%') {
        out += '%';
        continue;
      }
      if (c != 's' && c != 'r' && c != 'd' && c != 'i')
        fail(std::string("unsupported format character '") + c + "' in a '%' format", line);
      if (next >= values.size()) fail("not enough arguments for format string", line);
      const Value& v = values[next++];
      if (c == 's') {
        out += to_str(v);
      } else if (c == 'r') {
        out += repr(v);
      } else {
        if (!v.is_number()) fail("%d format: a real number is required, not " + type_name(v), line);
        out += std::to_string(v.is_integral() ? v.as_int() : static_cast<int64_t>(std::trunc(v.f)));
      }
    }
    if (next < values.size() && !(mapping && next == 0))
      fail("not all arguments converted during string formatting", line);
    return Value::string(out);
  }

  static Value arith(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "%" && a.is_string()) return percent_format(a.s, b, line);
    require_defined(a, line);
    require_defined(b, line);
    auto unsupported = [&]() -> Value {
      fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'", line);
    };
    if (a.is_number() && b.is_number()) {
      bool ints = a.is_integral() && b.is_integral();
      int64_t x = a.as_int(), y = b.as_int();
      double p = a.as_double(), q = b.as_double();
      int64_t r = 0;
      auto overflow = [&]() -> Value { fail("integer result of " + op + " does not fit in 64 bits", line); };
      if (op == "+")
        return ints ? (__builtin_add_overflow(x, y, &r) ? overflow() : Value::integer(r)) : Value::real(p + q);
      if (op == "-")
        return ints ? (__builtin_sub_overflow(x, y, &r) ? overflow() : Value::integer(r)) : Value::real(p - q);
      if (op == "*")
        return ints ? (__builtin_mul_overflow(x, y, &r) ? overflow() : Value::integer(r)) : Value::real(p * q);
      if (op == "/") {
        if (q == 0) fail("division by zero", line);
        return Value::real(p / q);
      }
      if (op == "//" || op == "%") {
        if (q == 0) fail("integer division or modulo by zero", line);
        if (ints) {
          int64_t d = x / y, r = x % y;
          if (r != 0 && ((r < 0) != (y < 0))) {
            --d;
            r += y;
          }
          return Value::integer(op == "//" ? d : r);
        }
        // CPython's float_divmod, signed zeros included.
        double mod = std::fmod(p, q);
        double div = (p - mod) / q;
        if (mod != 0) {
          if ((q < 0) != (mod < 0)) {
            mod += q;
            div -= 1.0;
          }
        } else {
          mod = std::copysign(0.0, q);
        }
        double floordiv;
        if (div != 0) {
          floordiv = std::floor(div);
          if (div - floordiv > 0.5) floordiv += 1.0;
        } else {
          floordiv = std::copysign(0.0, p / q);
        }
        return Value::real(op == "//" ? floordiv : mod);
      }
      if (op == "**") {
        if (ints && y >= 0) {
          r = 1;
          for (int64_t k = 0; k < y; ++k)
            if (__builtin_mul_overflow(r, x, &r)) return overflow();
          return Value::integer(r);
        }
        if (p == 0 && q < 0) fail("0.0 cannot be raised to a negative power", line);
        double v = std::pow(p, q);
        if (std::isinf(v) && std::isfinite(p) && std::isfinite(q)) fail("numerical result out of range", line);
        if (std::isnan(v) && !std::isnan(p) && !std::isnan(q))
          fail("complex results (a negative number to a fractional power) are not supported", line);
        return Value::real(v);
      }
      return unsupported();
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        check_string_size(a.s.size() + b.s.size(), line);
        return Value::string(a.s + b.s);
      }
      if (a.is_sequence() && b.is_sequence() && a.tuple == b.tuple) {
        check_list_size(a.list->size() + b.list->size(), line);
        List items = *a.list;
        items.insert(items.end(), b.list->begin(), b.list->end());
        return Value::make_list(std::move(items), a.tuple);
      }
      return unsupported();
    }
    if (op == "*") {
      const Value& seq = a.is_integral() ? b : a;
      const Value& count = a.is_integral() ? a : b;
      if (!count.is_integral()) return unsupported();
      int64_t n = std::max<int64_t>(0, count.as_int());
      auto times = [&](size_t unit) {  // n * unit, saturated
        return unit == 0 ? 0 : (static_cast<uint64_t>(n) > SIZE_MAX / unit ? SIZE_MAX : static_cast<size_t>(n) * unit);
      };
      if (seq.is_string()) check_string_size(times(seq.s.size()), line);
      if (seq.is_sequence()) check_list_size(times(seq.list->size()), line);
      if (seq.is_string()) {
        std::string s;
        s.reserve(times(seq.s.size()));
        for (int64_t k = 0; k < n; ++k) s += seq.s;
        return Value::string(s);
      }
      if (seq.is_sequence()) {
        List items;
        for (int64_t k = 0; k < n; ++k) items.insert(items.end(), seq.list->begin(), seq.list->end());
        return Value::make_list(std::move(items), seq.tuple);
      }
    }
    return unsupported();
  }
};

}  // namespace

std::string render_program(const Program& program, const Dict& context, const ChatTemplateLimits& limits) {
  RenderBudget budget;
  budget.max_string_bytes = limits.max_string_bytes;
  budget.max_list_items = limits.max_list_items;
  budget.max_value_depth = limits.max_value_depth;
  budget.max_total_bytes = limits.max_total_bytes;
  struct Activate {  // nested renders (none today) keep the outer budget on return
    RenderBudget* saved;
    explicit Activate(RenderBudget* b) : saved(active_budget()) { active_budget() = b; }
    ~Activate() { active_budget() = saved; }
  } activate(&budget);
  std::string out;
  Renderer(context, out, limits).run(program.body);
  return out;
}

}  // namespace genesis::chat
