// tensor_print.cpp - PyTorch-style printing: tensor([[1., 2.],\n        [3., 4.]]).
//
// Mirrors torch/_tensor_str.py: one formatter for all elements (integer-valued
// floats as "1.", else 4 decimals, scientific when the range is wide), rows
// wrapped at 80 columns, tensors over 1000 elements summarised with "...".
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "internal.h"

namespace genesis {

namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

struct Formatter {
  enum Kind { kFloatInt, kFloatFixed, kFloatSci, kInt, kBool } kind = kFloatFixed;
  size_t width = 1;

  std::string raw(double v) const {
    char buf[64];
    if (kind == kBool) return v != 0 ? "True" : "False";
    if (kind == kInt) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
      return buf;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (kind == kFloatSci)
      std::snprintf(buf, sizeof buf, "%.*e", kPrecision, v);
    else if (kind == kFloatInt)
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    else
      std::snprintf(buf, sizeof buf, "%.*f", kPrecision, v);
    return buf;
  }
  std::string format(double v) const {
    std::string s = raw(v);
    return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
  }
};

Formatter make_formatter(DType dt, const std::vector<double>& v) {
  Formatter f;
  if (dt == DType::boolean)
    f.kind = Formatter::kBool;
  else if (!is_floating(dt))
    f.kind = Formatter::kInt;
  else {
    double lo = INFINITY, hi = 0;
    bool ints = true;
    for (double x : v) {
      if (!std::isfinite(x) || x == 0) continue;
      lo = std::min(lo, std::fabs(x));
      hi = std::max(hi, std::fabs(x));
      ints = ints && std::ceil(x) == x;
    }
    const bool any = hi > 0;
    if (ints)
      f.kind = any && (hi / lo > 1000 || hi > 1e8) ? Formatter::kFloatSci : Formatter::kFloatInt;
    else
      f.kind = any && (hi / lo > 1000 || hi > 1e8 || lo < 1e-4) ? Formatter::kFloatSci : Formatter::kFloatFixed;
  }
  for (double x : v) f.width = std::max(f.width, f.raw(x).size());
  return f;
}

struct Printer {
  const std::vector<double>& v;
  const Shape& shape;
  const Formatter& fmt;
  bool summarize;

  // Row-major stride of dim d.
  int64_t stride(size_t d) const {
    int64_t s = 1;
    for (size_t i = d + 1; i < shape.size(); ++i) s *= shape[i];
    return s;
  }
  // Indices shown along a dim of size n.
  std::vector<int64_t> shown(int64_t n) const {
    std::vector<int64_t> idx;
    const bool cut = summarize && n > 2 * kEdgeItems;
    for (int64_t i = 0; i < n; ++i)
      if (!cut || i < kEdgeItems || i >= n - kEdgeItems)
        idx.push_back(i);
      else if (i == kEdgeItems)
        idx.push_back(-1);  // "..."
    return idx;
  }
  std::string vector_str(int64_t off, size_t indent) const {
    const int64_t n = shape.back();
    const int64_t per_line =
        std::max<int64_t>(1, (kLineWidth - static_cast<int64_t>(indent)) / static_cast<int64_t>(fmt.width + 2));
    std::string out = "[";
    int64_t k = 0;
    for (int64_t i : shown(n)) {
      if (k > 0) out += (k % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += i < 0 ? " ..." : fmt.format(v[static_cast<size_t>(off + i)]);
      ++k;
    }
    return out + "]";
  }
  std::string str(size_t d, int64_t off, size_t indent) const {
    if (d + 1 == shape.size()) return vector_str(off, indent);
    std::string sep(1, ',');  // ",\n...\n" then the indent (built by appends: GCC 12 warns on "," + temp)
    sep.append(shape.size() - d - 1, '\n').append(indent + 1, ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t i : shown(shape[d])) {
      if (!first) out += sep;
      first = false;
      out += i < 0 ? "..." : str(d + 1, off + i * stride(d), indent + 1);
    }
    return out + "]";
  }
};

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const Shape shape = t.shape();
  const std::vector<double> v = t.tolist();
  const Formatter fmt = make_formatter(t.dtype(), v);
  const size_t indent = 7;  // strlen("tensor(")
  std::string body;
  if (shape.empty())
    body = fmt.raw(v[0]);
  else if (t.numel() == 0)
    body = "[]";
  else
    body = Printer{v, shape, fmt, t.numel() > kThreshold}.str(0, 0, indent);

  std::vector<std::string> suffix;
  if (t.numel() == 0 && shape.size() != 1) {
    std::string s = "size=(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    suffix.push_back(s + (shape.size() == 1 ? ",)" : ")"));
  }
  const Device dev = t.device();
  if (dev.type() != "cpu") suffix.push_back("device='" + dev.str() + "'");
  const DType dt = t.dtype();
  if (dt != DType::f32 && dt != DType::i64 && dt != DType::boolean)
    suffix.push_back(std::string("dtype=genesis.") + dtype_name(dt));
  if (auto fn = t.grad_fn())
    suffix.push_back("grad_fn=<" + autograd::node_display_name(*fn) + ">");
  else if (t.requires_grad())
    suffix.push_back("requires_grad=True");

  std::string out = "tensor(" + body;
  for (const std::string& s : suffix) out += ", " + s;
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace genesis
