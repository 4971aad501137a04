// chat_template/value.cpp - Python semantics of template values: truth, str(), repr(), float repr,
// ==, <, len(), iteration, json.dumps, and UTF-8 <-> code points.
#include "value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "genesis/tensor.hpp"

namespace genesis::chat {

void fail(const std::string& msg, int line) {
  std::string m = "[chat_template] " + msg;
  if (line > 0) m += " at line " + std::to_string(line);
  throw Error(GN_ERR_INVALID_ARGUMENT, m);
}

RenderBudget*& active_budget() {
  thread_local RenderBudget* budget = nullptr;
  return budget;
}

void check_string_size(size_t n, int line) {
  const RenderBudget* b = active_budget();
  if (b && static_cast<int64_t>(std::min<size_t>(n, INT64_MAX)) > b->max_string_bytes)
    fail("string size limit exceeded: a string of " + std::to_string(n) + " bytes is over max_string_bytes (" +
             std::to_string(b->max_string_bytes) + ")",
         line);
}

void check_list_size(size_t n, int line) {
  const RenderBudget* b = active_budget();
  if (b && static_cast<int64_t>(std::min<size_t>(n, INT64_MAX)) > b->max_list_items)
    fail("list size limit exceeded: " + std::to_string(n) + " items is over max_list_items (" +
             std::to_string(b->max_list_items) + ")",
         line);
}

void note_string(size_t n) {
  RenderBudget* b = active_budget();
  if (!b) return;
  check_string_size(n);
  b->total_bytes += static_cast<int64_t>(n);
  if (b->total_bytes > b->max_total_bytes)
    fail("total string size limit exceeded: the template built over max_total_bytes (" +
         std::to_string(b->max_total_bytes) + ") of strings");
}

ValueDepthGuard::ValueDepthGuard(int line) {
  RenderBudget* b = active_budget();
  if (!b) return;
  if (++b->value_depth > b->max_value_depth) {
    --b->value_depth;
    fail("value nesting limit exceeded: values nested deeper than max_value_depth (" +
             std::to_string(b->max_value_depth) + "), or a namespace that contains itself",
         line);
  }
}

ValueDepthGuard::~ValueDepthGuard() {
  if (RenderBudget* b = active_budget()) --b->value_depth;
}

namespace {

// depth = 1 + the deepest item (failing past max_value_depth while rendering), has_ns when an item is or holds a
// namespace.
template <typename Items, typename Get>
void set_nesting(Value& v, const Items& items, Get get) {
  size_t d = 0;
  for (const auto& x : items) {
    const Value& item = get(x);
    d = std::max<size_t>(d, item.depth);
    v.has_ns = v.has_ns || item.has_ns || item.kind == Value::Kind::Namespace;
  }
  const RenderBudget* b = active_budget();
  if (b && static_cast<int64_t>(d) + 1 > b->max_value_depth)
    fail("value nesting limit exceeded: values nested deeper than max_value_depth (" +
         std::to_string(b->max_value_depth) + ")");
  v.depth = static_cast<uint16_t>(std::min<size_t>(d + 1, UINT16_MAX));
}

const Value& list_item(const Value& x) { return x; }
const Value& dict_item(const std::pair<std::string, Value>& kv) { return kv.second; }

}  // namespace

Value Value::make_list(List items, bool as_tuple) {
  check_list_size(items.size());
  Value v;
  v.kind = Kind::List;
  v.tuple = as_tuple;
  set_nesting(v, items, list_item);
  v.list = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::make_lazy(List items, Lazy lazy) {
  Value v = make_list(std::move(items));
  v.lazy = lazy;
  return v;
}

Value Value::make_dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind = Kind::Dict;
  if (d) set_nesting(v, d->items, dict_item);
  v.dict = std::move(d);
  return v;
}

Value Value::make_namespace(std::shared_ptr<Dict> d) {
  Value v;
  v.kind = Kind::Namespace;
  if (d) set_nesting(v, d->items, dict_item);
  v.dict = std::move(d);
  return v;
}

Value Value::function(std::string name, std::function<Value(List&, KwArgs&, int)> call) {
  Value v;
  v.kind = Kind::Function;
  v.fn = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
  return v;
}

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List:
      switch (v.lazy) {
        case Value::Lazy::Generator: return "generator";
        case Value::Lazy::Iterator: return "list_reverseiterator";
        case Value::Lazy::Keys: return "dict_keys";
        case Value::Lazy::Values: return "dict_values";
        case Value::Lazy::Items: return "dict_items";
        default: return v.tuple ? "tuple" : "list";
      }
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Namespace: return "Namespace";
    case Value::Kind::Function: return "builtin_function_or_method";
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s.empty();
    case Value::Kind::List:
      return v.lazy == Value::Lazy::Generator || v.lazy == Value::Lazy::Iterator || !v.list->empty();
    case Value::Kind::Dict: return !v.dict->items.empty();
    default: return true;
  }
}

// ---- float repr: Python's shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  int exp10 = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // position of the decimal point relative to the digits
  std::string out;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out = "0." + std::string(-decpt, '0') + digits;
    } else if (decpt >= static_cast<int>(digits.size())) {
      out = digits + std::string(decpt - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  }
  return sign + out;
}

// ---- UTF-8

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t k = 0; k < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || k + n > s.size()) fail("invalid UTF-8 in a string");
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (int j = 1; j < n; ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[k + j]) & 0x3f);
    out += cp;
    k += n;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// ---- repr

// Python's str.isprintable for one code point, approximated by the non-printable
// categories that show up in text: controls, format characters, separators, private use.
static bool printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return false;
  if ((c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff) return false;
  if ((c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff9 && c <= 0xfffb)) return false;
  return true;
}

static std::string repr_str(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8_decode(s)) {
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == ' ' || printable(c)) {
      utf8_append(out, c);
    } else {
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string repr(const Value& v) {
  ValueDepthGuard guard;
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::String: return repr_str(v.s);
    case Value::Kind::List: {
      if (v.lazy == Value::Lazy::Generator || v.lazy == Value::Lazy::Iterator) return "<" + type_name(v) + " object>";
      if (v.lazy != Value::Lazy::None) {
        Value plain = Value::make_list(*v.list);
        return type_name(v) + "(" + repr(plain) + ")";
      }
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        out += repr((*v.list)[k]);
        check_string_size(out.size());
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr_str(k) + ": " + repr(item);
        check_string_size(out.size());
      }
      out += "}";
      return v.kind == Value::Kind::Namespace ? "<Namespace " + out + ">" : out;
    }
    case Value::Kind::Function: return "<built-in function " + v.fn->name + ">";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return float_repr(v.f);
    case Value::Kind::String: return v.s;
    default: return repr(v);
  }
}

// ---- comparisons

bool equal(const Value& a, const Value& b) {
  ValueDepthGuard guard;
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.s == b.s;
    case K::List: {
      if (a.lazy == Value::Lazy::Generator || a.lazy == Value::Lazy::Iterator) return a.list == b.list;
      if (a.tuple != b.tuple || a.lazy != b.lazy || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    }
    case K::Dict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, item] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !equal(item, *other)) return false;
      }
      return true;
    }
    case K::Namespace: return a.dict == b.dict;
    case K::Function: return a.fn == b.fn;
    default: return false;
  }
}

bool less(const Value& a, const Value& b, int line) {
  ValueDepthGuard guard(line);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.s < b.s;  // UTF-8 byte order is code point order
  if (a.is_sequence() && b.is_sequence() && a.tuple == b.tuple) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      const Value &x = (*a.list)[k], &y = (*b.list)[k];
      if (!equal(x, y)) return less(x, y, line);
    }
    return a.list->size() < b.list->size();
  }
  fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'", line);
}

int64_t length(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: {
      int64_t n = 0;
      for (char c : v.s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
      return n;
    }
    case Value::Kind::List:
      if (v.lazy == Value::Lazy::Generator || v.lazy == Value::Lazy::Iterator) break;
      return static_cast<int64_t>(v.list->size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict->items.size());
    default: break;
  }
  fail("object of type '" + type_name(v) + "' has no len()", line);
}

List iterate(const Value& v, int line) {
  switch (v.kind) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List:
      if (v.lazy == Value::Lazy::Generator && !v.s.empty()) throw Error(GN_ERR_INVALID_ARGUMENT, v.s);
      return *v.list;
    case Value::Kind::Dict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::String: {
      std::u32string u = utf8_decode(v.s);
      check_list_size(u.size(), line);
      List chars;
      for (char32_t c : u) chars.push_back(Value::string(utf8_encode(std::u32string(1, c))));
      return chars;
    }
    default: fail("'" + type_name(v) + "' object is not iterable", line);
  }
}

// ---- json.dumps

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : utf8_decode(s)) {
    char buf[16];
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
      if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        char32_t u = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 | (u >> 10)),
                      static_cast<unsigned>(0xdc00 | (u & 0x3ff)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out += '"';
}

static void json_value(std::string& out, const Value& v, const JsonStyle& st, int level, int line) {
  ValueDepthGuard guard(line);
  check_string_size(out.size(), line);
  auto newline = [&](int lvl) {
    out += '\n';
    for (int k = 0; k < lvl; ++k) out += st.indent_unit;
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f > 0 ? "Infinity" : "-Infinity";
      else
        out += float_repr(v.f);
      return;
    case Value::Kind::String: json_string(out, v.s, st.ensure_ascii); return;
    case Value::Kind::List: {
      if (v.lazy != Value::Lazy::None) break;
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      if (st.indent) newline(level + 1);
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) {
          out += st.item_sep;
          if (st.indent) newline(level + 1);
        }
        json_value(out, (*v.list)[k], st, level + 1, line);
      }
      if (st.indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      if (st.indent) newline(level + 1);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) {
          out += st.item_sep;
          if (st.indent) newline(level + 1);
        }
        json_string(out, items[k]->first, st.ensure_ascii);
        out += st.key_sep;
        json_value(out, items[k]->second, st, level + 1, line);
      }
      if (st.indent) newline(level);
      out += '}';
      return;
    }
    default: break;
  }
  fail("tojson: Object of type " + type_name(v) + " is not JSON serializable", line);
}

std::string to_json(const Value& v, const JsonStyle& style, int line) {
  std::string out;
  json_value(out, v, style, 0, line);
  return out;
}

}  // namespace genesis::chat
