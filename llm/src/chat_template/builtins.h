// chat_template/builtins.h - what templates reach by name: filters, tests, globals, attribute and
// item access (with the str/dict/list methods jinja2 exposes through them), slicing, `in`.
#pragma once

#include <optional>
#include <string>

#include "value.h"

namespace genesis::chat {

/** Whether `x | name` is supported (checked at parse time). */
bool has_filter(const std::string& name);
/** Whether `x is name` is supported (checked at parse time). */
bool has_test(const std::string& name);
/** Applies filter `name` to input. */
Value call_filter(const std::string& name, const Value& input, List& args, KwArgs& kwargs, int line);
/** Applies test `name` to v. */
bool call_test(const std::string& name, const Value& v, List& args, KwArgs& kwargs, int line);
/** The globals transformers' environment provides (namespace, range, dict, raise_exception, strftime_now); Undefined
 * otherwise. */
Value global(const std::string& name);

/** jinja2's environment.getattr: Python attribute (bound method) first, then the mapping key. */
Value get_attr(const Value& obj, const std::string& name, int line);
/** jinja2's environment.getitem: obj[key], falling back to the attribute, else Undefined. */
Value get_item(const Value& obj, const Value& key, int line);
/** obj[start:stop:step] with Python's slice rules (negative steps included). */
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, int line);
/** Python `item in container`. */
bool contains(const Value& container, const Value& item, int line);
/** Fails with the Undefined's message ("'x' is undefined") when v is Undefined. */
void require_defined(const Value& v, int line);

// ---- Python str helpers shared by filters and methods

/** str.strip / lstrip / rstrip; chars empty (nullopt) means whitespace. */
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
/** str.splitlines(). */
List py_splitlines(const std::string& s);
/** str.upper() / str.lower(). */
std::string py_case(const std::string& s, bool upper);

}  // namespace genesis::chat
