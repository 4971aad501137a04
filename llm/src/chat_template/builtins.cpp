// chat_template/builtins.cpp - the filters and tests chat templates use, with jinja2's semantics
// (tojson is transformers' own: json.dumps without HTML escaping), and the globals of
// transformers' environment.
#include "builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "genesis/tensor.hpp"

namespace genesis::chat {

namespace {

// Binds positional and keyword arguments to a signature (Python call rules).
class Args {
 public:
  Args(const std::string& fn, const std::vector<std::string>& params, List& args, KwArgs& kwargs, int line)
      : vals_(params.size()), set_(params.size(), false) {
    if (args.size() > params.size())
      fail(fn + "() takes at most " + std::to_string(params.size()) + " arguments (" + std::to_string(args.size()) +
               " given)",
           line);
    for (size_t k = 0; k < args.size(); ++k) {
      vals_[k] = args[k];
      set_[k] = true;
    }
    for (auto& [key, v] : kwargs) {
      auto it = std::find(params.begin(), params.end(), key);
      if (it == params.end()) fail(fn + "() got an unexpected keyword argument '" + key + "'", line);
      size_t k = static_cast<size_t>(it - params.begin());
      if (set_[k]) fail(fn + "() got multiple values for argument '" + key + "'", line);
      vals_[k] = v;
      set_[k] = true;
    }
  }
  bool has(size_t k) const { return set_[k]; }
  const Value& get(size_t k) const { return vals_[k]; }
  Value get(size_t k, Value dflt) const { return set_[k] ? vals_[k] : dflt; }

 private:
  List vals_;
  std::vector<bool> set_;
};

// jinja2's make_attrgetter: dotted path, each part through getitem (digits as indices).
Value attr_path(Value item, const Value& attribute, int line) {
  if (!attribute.is_string()) return get_item(item, attribute, line);
  std::string path = attribute.s;
  size_t k = 0;
  while (true) {
    size_t dot = path.find('.', k);
    std::string part = path.substr(k, dot == std::string::npos ? std::string::npos : dot - k);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    item = get_item(item, digits ? Value::integer(std::stoll(part)) : Value::string(part), line);
    if (dot == std::string::npos) return item;
    k = dot + 1;
  }
}

std::optional<int64_t> parse_int(std::string s, int64_t base) {
  s = py_strip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used, static_cast<int>(base));
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Value filter_tojson(const Value& v, List& args, KwArgs& kwargs, int line) {
  Args a("tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}, args, kwargs, line);
  JsonStyle st;
  st.ensure_ascii = truthy(a.get(0, Value::boolean(false)));
  Value indent = a.get(1, Value::none());
  if (indent.is_integral()) {
    st.indent = true;
    st.indent_unit = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_int())), ' ');
  } else if (indent.is_string()) {
    st.indent = true;
    st.indent_unit = indent.s;
  } else if (!indent.is_none()) {
    fail("tojson: indent must be an integer, a string or None", line);
  }
  if (st.indent) st.item_sep = ",";
  Value seps = a.get(2, Value::none());
  if (seps.is_list() && seps.list->size() == 2 && (*seps.list)[0].is_string() && (*seps.list)[1].is_string()) {
    st.item_sep = (*seps.list)[0].s;
    st.key_sep = (*seps.list)[1].s;
  } else if (!seps.is_none()) {
    fail("tojson: separators must be a pair of strings", line);
  }
  st.sort_keys = truthy(a.get(3, Value::boolean(false)));
  return Value::string(to_json(v, st, line));
}

List sorted(List items, bool reverse, bool case_sensitive, const Value& attribute, int line) {
  auto key = [&](const Value& v) {
    Value k = attribute.is_none() ? v : attr_path(v, attribute, line);
    if (!case_sensitive && k.is_string()) k = Value::string(py_case(k.s, false));
    return k;
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first, line) : less(x.first, y.first, line);
  });
  List out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return out;
}

// select / reject / selectattr / rejectattr.
Value select(const Value& seq, List& args, KwArgs& kwargs, bool keep, bool by_attr, const char* fn, int line) {
  if (by_attr && args.empty()) fail(std::string(fn) + ": missing parameter for attribute name", line);
  List out;
  if (!truthy(seq)) return Value::make_lazy(out, Value::Lazy::Generator);
  size_t off = by_attr ? 1 : 0;
  for (const Value& item : iterate(seq, line)) {
    Value x = by_attr ? attr_path(item, args[0], line) : item;
    bool ok;
    if (args.size() > off) {
      if (!args[off].is_string()) fail(std::string(fn) + ": the test name must be a string", line);
      if (!has_test(args[off].s)) fail("unsupported test '" + args[off].s + "'", line);
      List rest(args.begin() + static_cast<long>(off) + 1, args.end());
      ok = call_test(args[off].s, x, rest, kwargs, line);
    } else {
      ok = truthy(x);
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::make_lazy(std::move(out), Value::Lazy::Generator);
}

Value filter_map(const Value& seq, List& args, KwArgs& kwargs, int line) {
  List out;
  if (!truthy(seq)) return Value::make_lazy(out, Value::Lazy::Generator);
  const Value* attribute = nullptr;
  Value dflt = Value::none();
  for (auto& [k, v] : kwargs) {
    if (k == "attribute")
      attribute = &v;
    else if (k == "default")
      dflt = v;
  }
  if (args.empty() && attribute) {
    for (const Value& item : iterate(seq, line)) {
      Value v = attr_path(item, *attribute, line);
      out.push_back(v.is_undefined() && !dflt.is_none() ? dflt : v);
    }
    return Value::make_lazy(std::move(out), Value::Lazy::Generator);
  }
  if (args.empty() || !args[0].is_string()) fail("map: requires a filter name or attribute=", line);
  std::string name = args[0].s;
  if (!has_filter(name)) fail("unsupported filter '" + name + "'", line);
  List rest(args.begin() + 1, args.end());
  for (const Value& item : iterate(seq, line)) {
    List a = rest;
    KwArgs kw = kwargs;
    out.push_back(call_filter(name, item, a, kw, line));
  }
  return Value::make_lazy(std::move(out), Value::Lazy::Generator);
}

const std::set<std::string> kTests = {"boolean", "callable", "defined",  "divisibleby", "eq",   "equalto",
                                      "escaped", "even",     "false",    "float",       "ge",   "greaterthan",
                                      "gt",      "in",       "integer",  "iterable",    "le",   "lessthan",
                                      "lower",   "lt",       "mapping",  "ne",          "none", "number",
                                      "odd",     "sameas",   "sequence", "string",      "true", "undefined",
                                      "upper",   "==",       "!=",       "<",           "<=",   ">",
                                      ">="};

// jinja2's map, select, reject, selectattr, rejectattr, unique and items are generators:
// an error inside one surfaces only when the result is consumed, so it waits in the result.
Value deferred(const std::function<Value()>& compute) {
  try {
    return compute();
  } catch (const Error& e) {
    Value g = Value::make_lazy({}, Value::Lazy::Generator);
    g.s = e.what();
    return g;
  }
}

const std::set<std::string> kLazyFilters = {"items", "map", "reject", "rejectattr", "select", "selectattr", "unique"};

Value eager_filter(const std::string& name, const Value& v, List& args, KwArgs& kwargs, int line);
bool filter_exists(const std::string& name);

}  // namespace

bool has_filter(const std::string& name) { return filter_exists(name); }
bool has_test(const std::string& name) { return kTests.count(name) > 0; }

Value call_filter(const std::string& name, const Value& v, List& args, KwArgs& kwargs, int line) {
  if (kLazyFilters.count(name)) return deferred([&] { return eager_filter(name, v, args, kwargs, line); });
  return eager_filter(name, v, args, kwargs, line);
}

namespace {

// One filter call: the filter's name (a filter may serve several), its input and arguments.
struct FilterCall {
  const std::string& name;
  const Value& v;
  List& args;
  KwArgs& kwargs;
  int line;
  void no_args() const {
    if (!args.empty() || !kwargs.empty()) fail("filter '" + name + "' takes no arguments", line);
  }
};

Value filter_length_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  return Value::integer(length(v, line));
}

Value filter_tojson_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  return filter_tojson(v, args, kwargs, line);
}

Value filter_default_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"default_value", "boolean"}, args, kwargs, line);
  bool use_default = v.is_undefined() || (truthy(a.get(1, Value::boolean(false))) && !truthy(v));
  return use_default ? a.get(0, Value::string("")) : v;
}

Value filter_trim_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"chars"}, args, kwargs, line);
  Value chars = a.get(0, Value::none());
  return Value::string(
      py_strip(to_str(v), chars.is_string() ? std::optional<std::string>(chars.s) : std::nullopt, true, true));
}

Value filter_upper_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  return Value::string(py_case(to_str(v), name == "upper"));
}

Value filter_capitalize_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  List none;
  return get_attr(Value::string(to_str(v)), name, line).fn->call(none, kwargs, line);
}

Value filter_title_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  // jinja2's do_title: split at runs of [-\s({[<], then upper the first character of
  // every piece and lower the rest (not str.title()).
  c.no_args();
  std::u32string u = utf8_decode(to_str(v));
  auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_space(c); };
  std::string out;
  for (size_t k = 0; k < u.size();) {
    size_t e = k;
    bool is_sep = sep(u[k]);
    while (e < u.size() && sep(u[e]) == is_sep) ++e;
    out += py_case(utf8_encode(u.substr(k, 1)), true) + py_case(utf8_encode(u.substr(k + 1, e - k - 1)), false);
    k = e;
  }
  return Value::string(out);
}

Value filter_string_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  return Value::string(to_str(v));
}

Value filter_join_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"d", "attribute"}, args, kwargs, line);
  std::string sep = to_str(a.get(0, Value::string(""))), out;
  bool first = true;
  for (const Value& item : iterate(v, line)) {
    if (!first) out += sep;
    first = false;
    out += to_str(a.has(1) && !a.get(1).is_none() ? attr_path(item, a.get(1), line) : item);
    check_string_size(out.size(), line);
  }
  return Value::string(out);
}

Value filter_first_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  if (name == "last" && (v.lazy == Value::Lazy::Generator || v.lazy == Value::Lazy::Iterator))
    fail("'" + type_name(v) + "' object is not reversible", line);
  List items = iterate(v, line);
  if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
  return name == "first" ? items.front() : items.back();
}

Value filter_list_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  return Value::make_list(iterate(v, line));
}

Value filter_items_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  if (v.is_undefined()) return Value::make_lazy({}, Value::Lazy::Generator);
  if (!v.is_dict()) fail("items: can only get item pairs from a mapping", line);
  List none;
  Value view = get_attr(v, "items", line).fn->call(none, kwargs, line);
  return Value::make_lazy(*view.list, Value::Lazy::Generator);
}

Value filter_int_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"default", "base"}, args, kwargs, line);
  Value dflt = a.get(0, Value::integer(0));
  require_defined(v, line);  // int(Undefined) raises instead of falling back to the default
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.kind == Value::Kind::Float)
    return std::isfinite(v.f) ? Value::integer(static_cast<int64_t>(std::trunc(v.f))) : dflt;
  if (v.is_string()) {
    if (auto i = parse_int(v.s, a.get(1, Value::integer(10)).as_int())) return Value::integer(*i);
    if (auto f = parse_float(v.s); f && std::isfinite(*f)) return Value::integer(static_cast<int64_t>(std::trunc(*f)));
  }
  return dflt;
}

Value filter_float_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"default"}, args, kwargs, line);
  require_defined(v, line);
  if (v.is_number()) return Value::real(v.as_double());
  if (v.is_string())
    if (auto f = parse_float(v.s)) return Value::real(*f);
  return a.get(0, Value::real(0.0));
}

Value filter_abs_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  if (v.is_integral()) return Value::integer(std::llabs(v.as_int()));
  if (v.kind == Value::Kind::Float) return Value::real(std::fabs(v.f));
  fail("bad operand type for abs(): '" + type_name(v) + "'", line);
}

Value filter_replace_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"old", "new", "count"}, args, kwargs, line);
  List m{a.get(0), a.get(1)};
  if (a.has(2) && !a.get(2).is_none()) m.push_back(a.get(2));
  KwArgs none;
  return get_attr(Value::string(to_str(v)), "replace", line).fn->call(m, none, line);
}

Value filter_reverse_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  c.no_args();
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.s);
    std::reverse(u.begin(), u.end());
    return Value::string(utf8_encode(u));
  }
  // reversed() where Python has it (an iterator), else a reversed list.
  bool reversible =
      v.is_sequence() || v.is_dict() || v.is_undefined() || (v.is_list() && v.lazy != Value::Lazy::Generator);
  List items = iterate(v, line);
  std::reverse(items.begin(), items.end());
  return reversible ? Value::make_lazy(std::move(items), Value::Lazy::Iterator) : Value::make_list(std::move(items));
}

Value filter_sort_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"reverse", "case_sensitive", "attribute"}, args, kwargs, line);
  return Value::make_list(sorted(iterate(v, line), truthy(a.get(0, Value::boolean(false))),
                                 truthy(a.get(1, Value::boolean(false))), a.get(2, Value::none()), line));
}

Value filter_unique_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"case_sensitive", "attribute"}, args, kwargs, line);
  bool cs = truthy(a.get(0, Value::boolean(false)));
  Value attribute = a.get(1, Value::none());
  List out, seen;
  for (const Value& item : iterate(v, line)) {
    Value k = attribute.is_none() ? item : attr_path(item, attribute, line);
    if (!cs && k.is_string()) k = Value::string(py_case(k.s, false));
    if ((k.is_list() && !k.tuple) || k.is_dict()) fail("unique: unhashable type: '" + type_name(k) + "'", line);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return Value::make_lazy(std::move(out), Value::Lazy::Generator);
}

Value filter_min_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"case_sensitive", "attribute"}, args, kwargs, line);
  // A stable sort, descending for max: the first of equal extremes wins, as in Python.
  List items =
      sorted(iterate(v, line), name == "max", truthy(a.get(0, Value::boolean(false))), a.get(1, Value::none()), line);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  return items.front();
}

Value filter_sum_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"attribute", "start"}, args, kwargs, line);
  Value total = a.get(1, Value::integer(0));
  for (const Value& item : iterate(v, line)) {
    Value x = a.has(0) && !a.get(0).is_none() ? attr_path(item, a.get(0), line) : item;
    if (!x.is_number() || !total.is_number()) fail("sum: unsupported operand types", line);
    if (x.is_integral() && total.is_integral())
      total = Value::integer(total.as_int() + x.as_int());
    else
      total = Value::real(total.as_double() + x.as_double());
  }
  return total;
}

Value filter_dictsort_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"case_sensitive", "by", "reverse"}, args, kwargs, line);
  if (!v.is_dict()) fail("dictsort: expected a mapping, got " + type_name(v), line);
  Value by = a.get(1, Value::string("key"));
  if (!by.is_string() || (by.s != "key" && by.s != "value")) fail("dictsort: 'by' must be 'key' or 'value'", line);
  List pairs;
  for (const auto& [k, item] : v.dict->items) pairs.push_back(Value::make_list({Value::string(k), item}, true));
  return Value::make_list(sorted(std::move(pairs), truthy(a.get(2, Value::boolean(false))),
                                 truthy(a.get(0, Value::boolean(false))), Value::integer(by.s == "key" ? 0 : 1), line));
}

Value filter_indent_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  Args a(name, {"width", "first", "blank"}, args, kwargs, line);
  Value width = a.get(0, Value::integer(4));
  if (!width.is_string()) check_string_size(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), line);
  std::string pad =
      width.is_string() ? width.s : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  // jinja2 appends "\n" before splitting (so a trailing newline is kept), which fails
  // for anything but a string.
  if (!v.is_string()) fail("indent: expected a string, got " + type_name(v), line);
  List lines = py_splitlines(v.s + "\n");
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string& l = lines[k].s;
    if (k == 0) {
      out = l;
      continue;
    }
    out += "\n";
    if (truthy(a.get(2, Value::boolean(false))) || !l.empty()) out += pad;
    out += l;
    check_string_size(out.size(), line);
  }
  if (truthy(a.get(1, Value::boolean(false)))) out = pad + out;
  return Value::string(out);
}

Value filter_select_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  return select(v, args, kwargs, name == "select", false, name.c_str(), line);
}

Value filter_selectattr_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;

  return select(v, args, kwargs, name == "selectattr", true, name.c_str(), line);
}

Value filter_map_(const FilterCall& c) {
  [[maybe_unused]] auto& [name, v, args, kwargs, line] = c;
  return filter_map(v, args, kwargs, line);
}

using FilterFn = Value (*)(const FilterCall&);

// Every supported filter, by the name templates call it by (jinja2's names and aliases).
const std::map<std::string, FilterFn>& filter_table() {
  static const std::map<std::string, FilterFn> table = {{"abs", filter_abs_},
                                                        {"capitalize", filter_capitalize_},
                                                        {"count", filter_length_},
                                                        {"d", filter_default_},
                                                        {"default", filter_default_},
                                                        {"dictsort", filter_dictsort_},
                                                        {"first", filter_first_},
                                                        {"float", filter_float_},
                                                        {"indent", filter_indent_},
                                                        {"int", filter_int_},
                                                        {"items", filter_items_},
                                                        {"join", filter_join_},
                                                        {"last", filter_first_},
                                                        {"length", filter_length_},
                                                        {"list", filter_list_},
                                                        {"lower", filter_upper_},
                                                        {"map", filter_map_},
                                                        {"max", filter_min_},
                                                        {"min", filter_min_},
                                                        {"reject", filter_select_},
                                                        {"rejectattr", filter_selectattr_},
                                                        {"replace", filter_replace_},
                                                        {"reverse", filter_reverse_},
                                                        {"safe", filter_string_},
                                                        {"select", filter_select_},
                                                        {"selectattr", filter_selectattr_},
                                                        {"sort", filter_sort_},
                                                        {"string", filter_string_},
                                                        {"sum", filter_sum_},
                                                        {"title", filter_title_},
                                                        {"tojson", filter_tojson_},
                                                        {"trim", filter_trim_},
                                                        {"unique", filter_unique_},
                                                        {"upper", filter_upper_}};
  return table;
}

bool filter_exists(const std::string& name) { return filter_table().count(name) > 0; }

Value eager_filter(const std::string& name, const Value& v, List& args, KwArgs& kwargs, int line) {
  const auto& table = filter_table();
  auto it = table.find(name);
  if (it == table.end()) fail("unsupported filter '" + name + "'", line);
  return it->second(FilterCall{name, v, args, kwargs, line});
}

}  // namespace

bool call_test(const std::string& name, const Value& v, List& args, KwArgs& kwargs, int line) {
  using K = Value::Kind;
  auto other = [&]() -> const Value& {
    if (args.empty()) {
      if (!kwargs.empty()) return kwargs[0].second;
      fail("test '" + name + "' needs an argument", line);
    }
    return args[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "mapping") return v.is_dict();
  // Undefined has __iter__, __len__ and __getitem__, so jinja2 counts it as both.
  if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
  if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
  if (name == "callable") return v.kind == K::Function || v.is_undefined();
  if (name == "escaped") return false;
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, other());
  if (name == "ne" || name == "!=") return !equal(v, other());
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, other(), line);
  if (name == "gt" || name == "greaterthan" || name == ">") return less(other(), v, line);
  if (name == "le" || name == "<=") return !less(other(), v, line);
  if (name == "ge" || name == ">=") return !less(v, other(), line);
  if (name == "in") return contains(other(), v, line);
  if (name == "odd" || name == "even" || name == "divisibleby") {
    // value % 2 == 1 (or == 0), with Python's % on ints and floats.
    Value d = name == "divisibleby" ? other() : Value::integer(2);
    if (!v.is_number() || !d.is_number())
      fail("unsupported operand type(s) for %: '" + type_name(v) + "' and '" + type_name(d) + "'", line);
    if (d.as_double() == 0) fail("integer division or modulo by zero", line);
    double r;
    if (v.is_integral() && d.is_integral()) {
      int64_t m = v.as_int() % d.as_int();
      if (m != 0 && ((m < 0) != (d.as_int() < 0))) m += d.as_int();
      r = static_cast<double>(m);
    } else {
      r = std::fmod(v.as_double(), d.as_double());
      if (r != 0 && ((r < 0) != (d.as_double() < 0))) r += d.as_double();
    }
    return name == "odd" ? r == 1 : r == 0;
  }
  if (name == "lower" || name == "upper") {
    List none;
    KwArgs nokw;
    return truthy(
        get_attr(Value::string(to_str(v)), name == "lower" ? "islower" : "isupper", line).fn->call(none, nokw, line));
  }
  if (name == "sameas") {
    const Value& o = other();
    if (v.kind != o.kind) return false;
    switch (v.kind) {
      case K::None:
      case K::Undefined: return true;
      case K::Bool: return v.b == o.b;
      case K::List: return v.list == o.list;
      case K::Dict:
      case K::Namespace: return v.dict == o.dict;
      default: return equal(v, o);
    }
  }
  fail("unsupported test '" + name + "'", line);
}

// ---- globals

Value global(const std::string& name) {
  if (name == "namespace" || name == "dict") {
    bool ns = name == "namespace";
    return Value::function(name, [ns](List& args, KwArgs& kwargs, int line) {
      auto d = std::make_shared<Dict>();
      if (args.size() > 1) fail("namespace() takes at most one positional argument", line);
      if (!args.empty()) {
        if (!args[0].is_dict()) fail("namespace() positional argument must be a mapping", line);
        *d = *args[0].dict;
      }
      for (auto& [k, v] : kwargs) d->set(k, v);
      return ns ? Value::make_namespace(d) : Value::make_dict(d);
    });
  }
  if (name == "range") {
    return Value::function(name, [](List& args, KwArgs& kwargs, int line) {
      if (!kwargs.empty() || args.empty() || args.size() > 3) fail("range() takes 1 to 3 integer arguments", line);
      for (const Value& a : args)
        if (!a.is_integral()) fail("range() arguments must be integers, got " + type_name(a), line);
      int64_t start = args.size() > 1 ? args[0].as_int() : 0;
      int64_t stop = args.size() > 1 ? args[1].as_int() : args[0].as_int();
      int64_t step = args.size() > 2 ? args[2].as_int() : 1;
      if (step == 0) fail("range() arg 3 must not be zero", line);
      List out;
      for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        if (out.size() >= 100000) fail("range() too big (over 100000 items, the sandbox's limit)", line);
        out.push_back(Value::integer(k));
      }
      return Value::make_list(std::move(out));
    });
  }
  if (name == "raise_exception") {
    return Value::function(name, [](List& args, KwArgs&, int line) -> Value {
      fail("raise_exception: " + (args.empty() ? std::string() : to_str(args[0])), line);
    });
  }
  if (name == "strftime_now") {
    return Value::function(name, [](List& args, KwArgs&, int line) {
      if (args.size() != 1 || !args[0].is_string()) fail("strftime_now() takes one format string", line);
      std::time_t t = std::time(nullptr);
      std::tm tm{};
      localtime_r(&t, &tm);
      char buf[512];
      size_t n = std::strftime(buf, sizeof buf, args[0].s.c_str(), &tm);
      return Value::string(std::string(buf, n));
    });
  }
  return Value::undefined("'" + name + "' is undefined");
}

}  // namespace genesis::chat
