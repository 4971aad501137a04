// chat_template/methods.cpp - attribute and item access as jinja2's sandboxed environment does them:
// the str, dict and list methods templates call (message.content.startswith(...),
// tool.items()), key and index lookup falling back to Undefined, slicing, `in`.
#include <algorithm>
#include <cwctype>
#include <locale>
#include <set>

#include "builtins.h"

namespace genesis::chat {

namespace {

// The Python attribute names of each type: a name that is not one of them is a missing
// attribute (Undefined), a name that is one but not implemented here fails when called.
const std::set<std::string> kStrAttrs = {
    "capitalize",   "casefold",   "center",    "count",       "encode",    "endswith",     "expandtabs",   "find",
    "format",       "format_map", "index",     "isalnum",     "isalpha",   "isascii",      "isdecimal",    "isdigit",
    "isidentifier", "islower",    "isnumeric", "isprintable", "isspace",   "istitle",      "isupper",      "join",
    "ljust",        "lower",      "lstrip",    "maketrans",   "partition", "removeprefix", "removesuffix", "replace",
    "rfind",        "rindex",     "rjust",     "rpartition",  "rsplit",    "rstrip",       "split",        "splitlines",
    "startswith",   "strip",      "swapcase",  "title",       "translate", "upper",        "zfill"};
const std::set<std::string> kDictAttrs = {"clear", "copy",    "fromkeys",   "get",    "items", "keys",
                                          "pop",   "popitem", "setdefault", "update", "values"};
const std::set<std::string> kListAttrs = {"append", "clear", "copy",   "count",   "extend", "index",
                                          "insert", "pop",   "remove", "reverse", "sort"};
// ImmutableSandboxedEnvironment refuses these: templates cannot change their inputs.
const std::set<std::string> kMutating = {"clear",  "pop",    "popitem", "setdefault", "update", "append",
                                         "extend", "insert", "remove",  "reverse",    "sort"};

std::string obj_repr(const Value& v) {
  if (v.is_none()) return "None";
  std::string out = "'";  // built in steps: GCC 12 misreports "'" + std::string as -Wrestrict
  out += type_name(v);
  out += " object'";
  return out;
}

Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined(obj_repr(obj) + " has no attribute '" + name + "'");
}

const Value& arg(const List& args, size_t k, const char* method, int line) {
  if (k >= args.size()) fail(std::string(method) + "() missing argument " + std::to_string(k + 1), line);
  return args[k];
}

const std::string& str_arg(const List& args, size_t k, const char* method, int line) {
  const Value& v = arg(args, k, method, line);
  if (!v.is_string()) fail(std::string(method) + "() argument must be str, not " + type_name(v), line);
  return v.s;
}

std::optional<std::string> opt_chars(const List& args, const char* method, int line) {
  if (args.empty() || args[0].is_none()) return std::nullopt;
  return str_arg(args, 0, method, line);
}

int64_t int_arg(const List& args, size_t k, int64_t dflt, int line) {
  if (k >= args.size() || args[k].is_none()) return dflt;
  if (!args[k].is_integral()) fail("expected an integer argument, got " + type_name(args[k]), line);
  return args[k].as_int();
}

// Python str.split / str.rsplit.
List py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit, bool from_right) {
  List out;
  if (!sep) {
    std::u32string u = utf8_decode(s);
    std::vector<std::u32string> words;
    if (!from_right) {
      size_t k = 0;
      while (k < u.size()) {
        while (k < u.size() && is_space(u[k])) ++k;
        if (k >= u.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t e = u.size();
          while (e > k && is_space(u[e - 1])) --e;
          words.push_back(u.substr(k, e - k));
          break;
        }
        size_t e = k;
        while (e < u.size() && !is_space(u[e])) ++e;
        words.push_back(u.substr(k, e - k));
        k = e;
      }
    } else {
      size_t k = u.size();
      while (k > 0) {
        while (k > 0 && is_space(u[k - 1])) --k;
        if (k == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < k && is_space(u[b])) ++b;
          words.push_back(u.substr(b, k - b));
          break;
        }
        size_t b = k;
        while (b > 0 && !is_space(u[b - 1])) --b;
        words.push_back(u.substr(b, k - b));
        k = b;
      }
      std::reverse(words.begin(), words.end());
    }
    for (auto& w : words) out.push_back(Value::string(utf8_encode(w)));
    return out;
  }
  if (sep->empty()) fail("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t k = 0;
    while (true) {
      size_t f = s.find(*sep, k);
      if (f == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
        parts.push_back(s.substr(k));
        break;
      }
      parts.push_back(s.substr(k, f - k));
      k = f + sep->size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      size_t f = end >= sep->size() ? s.rfind(*sep, end - sep->size()) : std::string::npos;
      if (f == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
        parts.push_back(s.substr(0, end));
        break;
      }
      parts.push_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    std::reverse(parts.begin(), parts.end());
  }
  for (auto& p : parts) out.push_back(Value::string(p));
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts repl between every character (and at both ends)
    std::u32string u = utf8_decode(s);
    int64_t n = 0;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (k < u.size()) utf8_append(out, u[k]);
      check_string_size(out.size());
    }
    return out;
  }
  size_t k = 0;
  int64_t n = 0;
  while (true) {
    size_t f = s.find(old, k);
    if (f == std::string::npos || (count >= 0 && n == count)) break;
    out += s.substr(k, f - k) + repl;
    check_string_size(out.size());
    k = f + old.size();
    ++n;
  }
  return out + s.substr(k);
}

int64_t cp_index(const std::string& s, size_t byte_pos) { return length(Value::string(s.substr(0, byte_pos)), 0); }

bool prefix_match(const std::string& s, const Value& what, bool suffix, const char* method, int line) {
  auto one = [&](const Value& p) {
    if (!p.is_string())
      fail(std::string(method) + " first arg must be str or a tuple of str, not " + type_name(p), line);
    if (p.s.size() > s.size()) return false;
    return suffix ? s.compare(s.size() - p.s.size(), p.s.size(), p.s) == 0 : s.compare(0, p.s.size(), p.s) == 0;
  };
  if (what.is_sequence()) {
    for (const Value& p : *what.list)
      if (one(p)) return true;
    return false;
  }
  return one(what);
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  std::u32string u = utf8_decode(s);
  if (u.empty()) return false;
  for (char32_t c : u)
    if (!pred(c)) return false;
  return true;
}

Value str_method(const std::string& s, const std::string& name, List& args, int line) {
  const char* m = name.c_str();
  if (name == "startswith" || name == "endswith") {
    if (args.size() > 1) fail(name + "() with start/end positions is not supported", line);
    return Value::boolean(prefix_match(s, arg(args, 0, m, line), name == "endswith", m, line));
  }
  if (name == "strip") return Value::string(py_strip(s, opt_chars(args, m, line), true, true));
  if (name == "lstrip") return Value::string(py_strip(s, opt_chars(args, m, line), true, false));
  if (name == "rstrip") return Value::string(py_strip(s, opt_chars(args, m, line), false, true));
  if (name == "split" || name == "rsplit")
    return Value::make_list(py_split(s, opt_chars(args, m, line), int_arg(args, 1, -1, line), name == "rsplit"));
  if (name == "replace")
    return Value::string(
        py_replace(s, str_arg(args, 0, m, line), str_arg(args, 1, m, line), int_arg(args, 2, -1, line)));
  if (name == "upper" || name == "lower") return Value::string(py_case(s, name == "upper"));
  if (name == "capitalize") {
    std::u32string u = utf8_decode(py_case(s, false));
    std::string first = py_case(utf8_encode(u.substr(0, 1)), true);
    return Value::string(first + utf8_encode(u.empty() ? u : u.substr(1)));
  }
  if (name == "title") {
    std::u32string u = utf8_decode(s);
    std::string out;
    bool prev_cased = false;
    for (char32_t c : u) {
      std::string ch = utf8_encode(std::u32string(1, c));
      std::string up = py_case(ch, true), low = py_case(ch, false);
      bool cased = up != low;
      out += cased ? (prev_cased ? low : up) : ch;
      prev_cased = cased;
    }
    return Value::string(out);
  }
  if (name == "count") {
    const std::string& sub = str_arg(args, 0, m, line);
    if (sub.empty()) return Value::integer(length(Value::string(s), line) + 1);
    int64_t n = 0;
    for (size_t k = s.find(sub); k != std::string::npos; k = s.find(sub, k + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    if (args.size() > 1) fail(name + "() with start/end positions is not supported", line);
    const std::string& sub = str_arg(args, 0, m, line);
    size_t f = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (f == std::string::npos) {
      if (name == "index" || name == "rindex") fail("substring not found", line);
      return Value::integer(-1);
    }
    return Value::integer(cp_index(s, f));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& p = str_arg(args, 0, m, line);
    if (name == "removeprefix" && s.compare(0, p.size(), p) == 0) return Value::string(s.substr(p.size()));
    if (name == "removesuffix" && !p.empty() && p.size() <= s.size() &&
        s.compare(s.size() - p.size(), p.size(), p) == 0)
      return Value::string(s.substr(0, s.size() - p.size()));
    return Value::string(s);
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : iterate(arg(args, 0, m, line), line)) {
      if (!v.is_string()) fail("join() expected str instance, " + type_name(v) + " found", line);
      if (!first) out += s;
      first = false;
      out += v.s;
      check_string_size(out.size(), line);
    }
    return Value::string(out);
  }
  if (name == "splitlines") return Value::make_list(py_splitlines(s));
  if (name == "isdigit") return Value::boolean(all_chars(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isspace") return Value::boolean(all_chars(s, is_space));
  if (name == "isalpha")
    return Value::boolean(all_chars(s, [](char32_t c) { return std::iswalpha(static_cast<wint_t>(c)) || c > 0x7f; }));
  if (name == "isalnum")
    return Value::boolean(all_chars(s, [](char32_t c) { return std::iswalnum(static_cast<wint_t>(c)) || c > 0x7f; }));
  if (name == "islower" || name == "isupper") {
    bool want_upper = name == "isupper", any_cased = false;
    for (char32_t c : utf8_decode(s)) {
      std::string ch = utf8_encode(std::u32string(1, c));
      std::string up = py_case(ch, true), low = py_case(ch, false);
      if (up == low) continue;
      any_cased = true;
      if ((want_upper ? up : low) != ch) return Value::boolean(false);
    }
    return Value::boolean(any_cased);
  }
  fail("unsupported str method '" + name + "'", line);
}

Value dict_method(const Value& obj, const std::string& name, List& args, int line) {
  const Dict& d = *obj.dict;
  if (name == "items" || name == "keys" || name == "values") {
    // Views: printed as dict_items([...]), not subscriptable.
    List out;
    for (const auto& [k, v] : d.items) {
      if (name == "items")
        out.push_back(Value::make_list({Value::string(k), v}, true));
      else
        out.push_back(name == "keys" ? Value::string(k) : v);
    }
    return Value::make_lazy(std::move(out), name == "items"  ? Value::Lazy::Items
                                            : name == "keys" ? Value::Lazy::Keys
                                                             : Value::Lazy::Values);
  }
  if (name == "get") {
    const Value& key = arg(args, 0, "get", line);
    const Value* found = key.is_string() ? d.find(key.s) : nullptr;
    if (found) return *found;
    return args.size() > 1 ? args[1] : Value::none();
  }
  if (name == "copy") return Value::make_dict(std::make_shared<Dict>(d));
  fail("unsupported dict method '" + name + "'", line);
}

Value list_method(const Value& obj, const std::string& name, List& args, int line) {
  const List& l = *obj.list;
  if (name == "count") {
    int64_t n = 0;
    for (const Value& v : l) n += equal(v, arg(args, 0, "count", line));
    return Value::integer(n);
  }
  if (name == "index") {
    for (size_t k = 0; k < l.size(); ++k)
      if (equal(l[k], arg(args, 0, "index", line))) return Value::integer(static_cast<int64_t>(k));
    fail(repr(args[0]) + " is not in list", line);
  }
  if (name == "copy") return Value::make_list(l);
  fail("unsupported list method '" + name + "'", line);
}

Value bound(const Value& obj, const std::string& name, Value (*method)(const Value&, const std::string&, List&, int)) {
  return Value::function(name, [obj, name, method](List& args, KwArgs& kwargs, int line) {
    if (!kwargs.empty()) fail(name + "() takes no keyword arguments", line);
    return method(obj, name, args, line);
  });
}

}  // namespace

// ---- Python str helpers

List py_splitlines(const std::string& s) {
  // The line boundaries of Python's str.splitlines, not only "\n" and "\r".
  auto boundary = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85 || c == 0x2028 ||
           c == 0x2029;
  };
  std::u32string u = utf8_decode(s), cur;
  List out;
  for (size_t k = 0; k < u.size(); ++k) {
    if (!boundary(u[k])) {
      cur += u[k];
      continue;
    }
    out.push_back(Value::string(utf8_encode(cur)));
    cur.clear();
    if (u[k] == '\r' && k + 1 < u.size() && u[k + 1] == '\n') ++k;
  }
  if (!cur.empty()) out.push_back(Value::string(utf8_encode(cur)));
  return out;
}

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_me = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_me(u[b])) ++b;
  if (right)
    while (e > b && strip_me(u[e - 1])) --e;
  return utf8_encode(u.substr(b, e - b));
}

std::string py_case(const std::string& s, bool upper) {
  // Unicode case mapping through the C.UTF-8 locale when the system has it (ASCII otherwise).
  static const std::locale* loc = [] {
    try {
      return new std::locale("C.UTF-8");
    } catch (const std::exception&) {
      return static_cast<std::locale*>(nullptr);
    }
  }();
  std::string out;
  out.reserve(s.size());
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii || !loc) {
    for (char c : s)
      out += static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                     : std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  for (char32_t c : utf8_decode(s)) {
    if (upper && c == 0xdf) {  // Python's full case mapping: "ß".upper() == "SS"
      out += "SS";
      continue;
    }
    wchar_t w = static_cast<wchar_t>(c);
    w = upper ? std::toupper(w, *loc) : std::tolower(w, *loc);
    utf8_append(out, static_cast<char32_t>(w));
  }
  return out;
}

void require_defined(const Value& v, int line) {
  if (v.is_undefined()) fail(v.s.empty() ? "value is undefined" : v.s, line);
}

Value get_attr(const Value& obj, const std::string& name, int line) {
  switch (obj.kind) {
    case Value::Kind::Undefined: require_defined(obj, line); break;
    case Value::Kind::String:
      if (kStrAttrs.count(name))
        return bound(obj, name,
                     [](const Value& o, const std::string& n, List& a, int l) { return str_method(o.s, n, a, l); });
      break;
    case Value::Kind::Dict:
      if (kDictAttrs.count(name)) {
        if (kMutating.count(name))
          return Value::undefined("access to attribute '" + name + "' of 'dict' object is unsafe");
        return bound(obj, name, dict_method);
      }
      if (const Value* v = obj.dict->find(name)) return *v;
      break;
    case Value::Kind::List:
      if (obj.is_sequence() && kListAttrs.count(name)) {
        if (kMutating.count(name))
          return Value::undefined("access to attribute '" + name + "' of 'list' object is unsafe");
        return bound(obj, name, list_method);
      }
      break;
    case Value::Kind::Namespace:
      if (const Value* v = obj.dict->find(name)) return *v;
      break;
    default: break;
  }
  return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key, int line) {
  switch (obj.kind) {
    case Value::Kind::Undefined: require_defined(obj, line); break;
    case Value::Kind::Dict:
      if (key.is_string())
        if (const Value* v = obj.dict->find(key.s)) return *v;
      break;
    case Value::Kind::List:
    case Value::Kind::String:
      if (key.is_integral() && (obj.is_string() || obj.is_sequence())) {
        int64_t n = length(obj, line), k = key.as_int();
        if (k < 0) k += n;
        if (k >= 0 && k < n) {
          if (obj.is_list()) return (*obj.list)[k];
          return Value::string(utf8_encode(utf8_decode(obj.s).substr(k, 1)));
        }
      }
      break;
    default: break;
  }
  if (key.is_string()) {
    Value attr = get_attr(obj, key.s, line);
    if (!attr.is_undefined()) return attr;
  }
  if (key.is_string()) return missing_attr(obj, key.s);
  return Value::undefined(obj_repr(obj) + " has no element " + repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line) {
  auto index = [&](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_integral()) fail(std::string("slice ") + what + " must be an integer or None, got " + type_name(v), line);
    return v.as_int();
  };
  require_defined(obj, line);
  if (!obj.is_sequence() && !obj.is_string()) return Value::undefined(obj_repr(obj) + " cannot be sliced");
  int64_t n = length(obj, line);
  int64_t st = index(step, "step").value_or(1);
  if (st == 0) fail("slice step cannot be zero", line);
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t b = adjust(index(start, "start"), st < 0 ? n - 1 : 0);
  int64_t e = adjust(index(stop, "stop"), st < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) picks.push_back(k);
  if (obj.is_list()) {
    List out;
    for (int64_t k : picks) out.push_back((*obj.list)[k]);
    return Value::make_list(std::move(out), obj.tuple);
  }
  std::u32string u = utf8_decode(obj.s), out;
  for (int64_t k : picks) out += u[k];
  return Value::string(utf8_encode(out));
}

bool contains(const Value& container, const Value& item, int line) {
  switch (container.kind) {
    case Value::Kind::Undefined: return false;  // Undefined iterates as empty
    case Value::Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(item), line);
      return container.s.find(item.s) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : iterate(container, line))
        if (equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if ((item.is_list() && !item.tuple) || item.is_dict() || item.kind == Value::Kind::Namespace)
        fail("unhashable type: '" + type_name(item) + "'", line);
      return item.is_string() && container.dict->find(item.s) != nullptr;
    default: fail("argument of type '" + type_name(container) + "' is not iterable", line);
  }
}

}  // namespace genesis::chat
