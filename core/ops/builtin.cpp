// core/ops/builtin.cpp - the built-in schemas: ops.def expanded once, its
// attribute strings parsed into gn_attr_spec arrays that live forever.
#include "builtin.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attr_spec.h"
#include "infer.h"

namespace genesis::core {

namespace {

// Owner of every string and default array a parsed spec points to.  Never
// destroyed (schemas may be read during static destruction of other objects);
// deques keep element addresses stable as they grow.
struct Arena {
  std::mutex mu;
  std::deque<std::string> strings;
  std::deque<std::vector<int64_t>> arrays;
};

Arena& arena() {
  static Arena* a = new Arena;
  return *a;
}

const char* keep_string(std::string_view s) {
  Arena& a = arena();
  std::lock_guard lock(a.mu);
  return a.strings.emplace_back(s).c_str();
}

// Default int arrays; an empty list points at a static sentinel, never NULL.
const int64_t* keep_array(std::vector<int64_t> v) {
  static const int64_t kEmpty[1] = {0};
  if (v.empty()) return kEmpty;
  Arena& a = arena();
  std::lock_guard lock(a.mu);
  return a.arrays.emplace_back(std::move(v)).data();
}

[[noreturn]] void malformed(const char* op, std::string_view token, const std::string& why) {
  throw std::logic_error("ops.def: op '" + std::string(op) + "': attribute '" + std::string(token) + "': " + why);
}

bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* first = s.data();
  if (*first == '+' && s.size() > 1 && s[1] != '-') ++first;
  auto [p, ec] = std::from_chars(first, s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_float(std::string_view s, double* out) {
  if (s == "inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s.empty()) return false;
  const std::string str(s);
  char* end = nullptr;
  *out = std::strtod(str.c_str(), &end);
  // Only plain numbers: strtod alone would also take "infinity", hex, ...
  return end == str.c_str() + str.size() && str.find_first_not_of("0123456789+-.eE") == std::string::npos;
}

// Dtype names usable as defaults of dtype-valued int attributes.
bool parse_dtype(std::string_view s, int64_t* out) {
  static constexpr std::pair<std::string_view, gn_dtype> kNames[] = {
      {"f32", GN_F32}, {"f16", GN_F16}, {"bf16", GN_BF16}, {"f64", GN_F64},  {"i8", GN_I8},
      {"u8", GN_U8},   {"i32", GN_I32}, {"i64", GN_I64},   {"bool", GN_BOOL}};
  for (const auto& [name, dt] : kNames)
    if (s == name) {
      *out = dt;
      return true;
    }
  return false;
}

bool valid_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// One "name:kind[=default]" token.
gn_attr_spec parse_one(const char* op, std::string_view token) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) malformed(op, token, "expected name:kind[=default]");
  const std::string_view name = token.substr(0, colon);
  if (!valid_name(name)) malformed(op, token, "invalid attribute name");
  std::string_view kind = token.substr(colon + 1);
  std::string_view def;
  const size_t eq = kind.find('=');
  const bool has_default = eq != std::string_view::npos;
  if (has_default) {
    def = kind.substr(eq + 1);
    kind = kind.substr(0, eq);
  }

  gn_attr_spec spec{};
  spec.struct_size = sizeof(gn_attr_spec);
  spec.name = keep_string(name);
  spec.has_default = has_default ? 1 : 0;
  gn_attr_value& v = spec.default_value;
  if (kind == "int") {
    spec.kind = GN_ATTR_INT;
    if (has_default) {
      if (def == "none")
        v.u.i = GN_DIM_NONE;
      else if (!parse_int(def, &v.u.i) && !parse_dtype(def, &v.u.i))
        malformed(op, token, "default '" + std::string(def) + "' is not an integer, none or a dtype name");
    }
  } else if (kind == "float") {
    spec.kind = GN_ATTR_FLOAT;
    if (has_default && !parse_float(def, &v.u.f))
      malformed(op, token, "default '" + std::string(def) + "' is not a number, inf, -inf or nan");
  } else if (kind == "ints") {
    spec.kind = GN_ATTR_INTS;
    v.u.ints.data = keep_array({});
    if (has_default) {
      if (def.size() < 2 || def.front() != '[' || def.back() != ']')
        malformed(op, token, "default '" + std::string(def) + "' is not a list like [1,2] or []");
      std::vector<int64_t> values;
      std::string_view body = def.substr(1, def.size() - 2);
      while (!body.empty()) {
        const size_t comma = body.find(',');
        const std::string_view item = body.substr(0, comma);
        int64_t x = 0;
        if (!parse_int(item, &x)) malformed(op, token, "list item '" + std::string(item) + "' is not an integer");
        values.push_back(x);
        if (comma == std::string_view::npos) break;
        body = body.substr(comma + 1);
        if (body.empty()) malformed(op, token, "trailing comma in the default list");
      }
      v.u.ints.size = values.size();
      v.u.ints.data = keep_array(std::move(values));
    }
  } else if (kind == "str") {
    spec.kind = GN_ATTR_STRING;
    if (has_default) v.u.s = keep_string(def);
  } else if (kind == "device") {
    spec.kind = GN_ATTR_DEVICE;
    if (has_default) {
      if (def != "default") malformed(op, token, "a device default can only be 'default'");
      v.u.device = gn_device{-1, 0};  // the runtime's cpu:0
    }
  } else {
    malformed(op, token, "unknown kind '" + std::string(kind) + "' (expected int, float, ints, str or device)");
  }
  v.kind = spec.kind;
  return spec;
}

}  // namespace

std::vector<gn_attr_spec> parse_attr_specs(const char* op, const char* spec) {
  std::vector<gn_attr_spec> out;
  const std::string_view s = spec ? spec : "";
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    const std::string_view token = s.substr(i, j - i);
    gn_attr_spec a = parse_one(op, token);
    for (const gn_attr_spec& prev : out)
      if (std::string_view(prev.name) == a.name) malformed(op, token, "duplicate attribute name");
    out.push_back(a);
    i = j;
  }
  return out;
}

const std::vector<gn_op_schema>& builtin_schemas() {
  static const std::vector<gn_op_schema> schemas = [] {
    // Attribute arrays, one per op, owned here for the program's lifetime.
    static std::deque<std::vector<gn_attr_spec>> attr_arrays;
    std::vector<gn_op_schema> v;
    v.reserve(kNumBuiltinOps);
    auto add = [&](const char* name, int32_t min_in, int32_t max_in, int32_t max_out, uint32_t flags, gn_infer_fn infer,
                   const char* attrs, const char* doc) {
      const std::vector<gn_attr_spec>& specs = attr_arrays.emplace_back(parse_attr_specs(name, attrs));
      v.push_back(gn_op_schema{.struct_size = sizeof(gn_op_schema),
                               .name = name,
                               .min_inputs = min_in,
                               .max_inputs = max_in,
                               .max_outputs = max_out,
                               .flags = flags,
                               .attrs = specs.empty() ? nullptr : specs.data(),
                               .n_attrs = specs.size(),
                               .infer = infer,
                               .user_data = nullptr,
                               .doc = doc});
    };
#define GN_OP(name, min_in, max_in, max_out, flags, infer, attrs, doc) \
  add(#name, min_in, max_in, max_out, static_cast<uint32_t>(flags), &infer_##infer, attrs, doc);
#include "ops.def"
#undef GN_OP
    return v;
  }();
  return schemas;
}

}  // namespace genesis::core
