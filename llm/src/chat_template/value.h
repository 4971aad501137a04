// chat_template/value.h - the values a chat template computes with, modelled on the Python objects
// jinja2 sees (str, int, float, bool, None, list, tuple, dict, Undefined, namespace,
// callables), and the Python semantics the renderer needs: truth, str(), repr(), ==, <.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace genesis::chat {

struct Value;
struct Dict;
struct Function;
using List = std::vector<Value>;
using KwArgs = std::vector<std::pair<std::string, Value>>;

/** Throws genesis::Error(GN_ERR_INVALID_ARGUMENT, "[chat_template] " + msg [+ " at line N"]). */
[[noreturn]] void fail(const std::string& msg, int line = 0);

/** What one render may use (ChatTemplateLimits), active for the rendering thread while it renders; every string,
 * list and nested value the template builds is checked against it, so a hostile template ends with an error naming
 * the limit instead of exhausting memory or the stack. */
struct RenderBudget {
  int64_t max_string_bytes = 0;
  int64_t max_list_items = 0;
  int64_t max_value_depth = 0;
  int64_t max_total_bytes = 0;
  int64_t total_bytes = 0;  // bytes of every string built so far
  int64_t value_depth = 0;  // current recursion of repr/tojson/== over nested values
};
/** The budget of the render running on this thread (nullptr outside a render). */
RenderBudget*& active_budget();
/** Fails when a string of n bytes would exceed max_string_bytes (no-op outside a render). */
void check_string_size(size_t n, int line = 0);
/** Fails when a list of n items would exceed max_list_items (no-op outside a render). */
void check_list_size(size_t n, int line = 0);
/** Counts a new string of n bytes against the render's limits. */
void note_string(size_t n);
/** Guards one level of recursion over a nested value (repr, tojson, ==, <): fails past max_value_depth. */
struct ValueDepthGuard {
  explicit ValueDepthGuard(int line = 0);
  ~ValueDepthGuard();
  ValueDepthGuard(const ValueDepthGuard&) = delete;
  ValueDepthGuard& operator=(const ValueDepthGuard&) = delete;
};

struct Value {
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };
  Kind kind = Kind::Undefined;
  uint16_t depth = 0;   // nesting of lists/dicts inside this value (0 for scalars), bounded while rendering
  bool has_ns = false;  // a list/dict/namespace holding a namespace somewhere inside
  bool tuple = false;   // a List that Python would hold as a tuple (printed "(a, b)")
  // A List standing for a lazy Python object: generators (map, select, ...) are always true
  // and have no len(); dict views (keys(), items()) print as dict_keys([...]).
  enum class Lazy : uint8_t { None, Generator, Iterator, Keys, Values, Items };
  Lazy lazy = Lazy::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  // String: the UTF-8 text; Undefined: the hint used in error messages; a Generator: the
  // error it raises once consumed (jinja2's map, select, ... run lazily).
  std::string s;
  std::shared_ptr<const List> list;
  std::shared_ptr<Dict> dict;  // Dict (shared, never mutated) or Namespace (mutable)
  std::shared_ptr<const Function> fn;

  static Value undefined(std::string hint = {}) {
    Value v;
    v.s = std::move(hint);
    return v;
  }
  static Value none() {
    Value v;
    v.kind = Kind::None;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.kind = Kind::Bool;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.kind = Kind::Int;
    v.i = x;
    return v;
  }
  static Value real(double x) {
    Value v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v;
    v.kind = Kind::String;
    v.s = std::move(x);
    note_string(v.s.size());
    return v;
  }
  static Value make_list(List items, bool as_tuple = false);
  static Value make_lazy(List items, Lazy lazy);
  static Value make_dict(std::shared_ptr<Dict> d);
  static Value make_namespace(std::shared_ptr<Dict> d);
  static Value function(std::string name, std::function<Value(List&, KwArgs&, int)> call);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  /** A real list or tuple (subscriptable, with len()), not a generator or dict view. */
  bool is_sequence() const { return kind == Kind::List && lazy == Lazy::None; }
  bool is_dict() const { return kind == Kind::Dict; }
  /** Python numbers (bool counts, as in Python). */
  bool is_number() const { return kind == Kind::Bool || kind == Kind::Int || kind == Kind::Float; }
  bool is_integral() const { return kind == Kind::Bool || kind == Kind::Int; }
  int64_t as_int() const { return kind == Kind::Bool ? (b ? 1 : 0) : i; }
  double as_double() const { return kind == Kind::Float ? f : static_cast<double>(as_int()); }
};

/** An insertion-ordered str-keyed mapping (a Python dict from JSON, or a namespace). */
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

/** A callable: a global (namespace, range, raise_exception, ...) or a bound method. */
struct Function {
  std::string name;
  std::function<Value(List& args, KwArgs& kwargs, int line)> call;
};

/** The Python type name jinja2 would report ("str", "dict", "NoneType", ...). */
std::string type_name(const Value& v);
/** Python truth value (Undefined is false). */
bool truthy(const Value& v);
/** Python str(): what {{ v }} prints (Undefined prints ""). */
std::string to_str(const Value& v);
/** Python repr(). */
std::string repr(const Value& v);
/** Python repr() of a float ("1.0", "1e-05", "inf"). */
std::string float_repr(double x);
/** Python ==, including 1 == 1.0 == True and deep list/dict equality. */
bool equal(const Value& a, const Value& b);
/** Python a < b for numbers, strings and lists; fails for other types. */
bool less(const Value& a, const Value& b, int line);
/** Python len(): code points of a str, items of a list or dict. */
int64_t length(const Value& v, int line);
/** The items a for loop visits: list items, dict keys, the characters of a str; Undefined is empty. */
List iterate(const Value& v, int line);
/** transformers' tojson: json.dumps(x, ensure_ascii, indent, separators, sort_keys). */
struct JsonStyle {
  bool ensure_ascii = false;
  bool indent = false;      // indent=None when false
  std::string indent_unit;  // indent=2 -> "  "
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style, int line);

// ---- UTF-8 text as code points (Python str semantics)

std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);
void utf8_append(std::string& out, char32_t c);
/** Python str.isspace() for one code point. */
bool is_space(char32_t c);

}  // namespace genesis::chat
