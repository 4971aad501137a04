// plugins/reference/binary.cpp - elementwise binary ops and where.
//
// a, b (each broadcast to out's shape) -> out.  The core has promoted a and b
// to one dtype (compare/logical ops: bool out).  Float values are computed in
// double; when a, b (and out, for arithmetic) are integer-like the int64 path
// is used: exact, wrapping like torch's integer kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "families.h"
#include "util.h"

namespace ref {
namespace {

using gn::sdk::load;
using gn::sdk::load_int;
using gn::sdk::store;
using gn::sdk::store_int;

enum class BinOp { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, logical_and, logical_or };

struct BinaryDef {
  const char* name;
  BinOp op;
};

const BinaryDef kBinary[] = {
    {"add", BinOp::add},         {"sub", BinOp::sub},         {"mul", BinOp::mul},
    {"div", BinOp::div},         {"pow", BinOp::pow},         {"maximum", BinOp::maximum},
    {"minimum", BinOp::minimum}, {"eq", BinOp::eq},           {"ne", BinOp::ne},
    {"lt", BinOp::lt},           {"le", BinOp::le},           {"gt", BinOp::gt},
    {"ge", BinOp::ge},           {"logical_and", BinOp::logical_and}, {"logical_or", BinOp::logical_or},
};

const BinaryDef* find_binary(const char* name) {
  for (const BinaryDef& d : kBinary)
    if (std::string(d.name) == name) return &d;
  return nullptr;
}

bool is_compare(BinOp op) { return op >= BinOp::eq; }

// ----------------------------------------------------------------------------
// scalar rules

// torch's div_floor_floating: floor(a/b) computed through fmod so that the
// result is the exact floor of the real quotient.
double div_floor(double a, double b) {
  if (b == 0.0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && (b < 0.0) != (mod < 0.0)) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

// Integer division; b != 0 (checked by the caller).  INT64_MIN / -1 wraps.
int64_t idiv(int64_t a, int64_t b, int64_t mode) {
  if (b == -1) return wrap_sub(0, a);
  int64_t q = a / b;
  if (mode == 2 && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

// a**b for integers, b >= 0, by squaring with wrapping.
int64_t ipow(int64_t a, int64_t b) {
  int64_t r = 1;
  while (b > 0) {
    if (b & 1) r = wrap_mul(r, a);
    a = wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}

double fcompare(BinOp op, double a, double b) {
  switch (op) {
    case BinOp::eq: return a == b;
    case BinOp::ne: return a != b;
    case BinOp::lt: return a < b;
    case BinOp::le: return a <= b;
    case BinOp::gt: return a > b;
    case BinOp::ge: return a >= b;
    case BinOp::logical_and: return a != 0.0 && b != 0.0;
    case BinOp::logical_or: return a != 0.0 || b != 0.0;
    default: return 0.0;
  }
}

int64_t icompare(BinOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinOp::eq: return a == b;
    case BinOp::ne: return a != b;
    case BinOp::lt: return a < b;
    case BinOp::le: return a <= b;
    case BinOp::gt: return a > b;
    case BinOp::ge: return a >= b;
    case BinOp::logical_and: return a != 0 && b != 0;
    case BinOp::logical_or: return a != 0 || b != 0;
    default: return 0;
  }
}

// ----------------------------------------------------------------------------
// kernel

// a, b -> out; attrs: add/sub alpha, div rounding_mode (0 true, 1 trunc, 2 floor).
GN_SDK_KERNEL(binary_kernel) {
  const BinaryDef& def = *(const BinaryDef*)ctx->kernel_data;
  const char* op = def.name;
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &a = in[0], &b = in[1], &o = out[0];
  const double alpha = (def.op == BinOp::add || def.op == BinOp::sub) ? attr_float(op, attrs, n_attrs, 0) : 1.0;
  const int64_t mode = def.op == BinOp::div ? attr_int(op, attrs, n_attrs, 0) : 0;
  if (mode < 0 || mode > 2) fail_op(GN_ERR_INVALID_ARGUMENT, op, "rounding_mode must be 0, 1 or 2, got " + std::to_string(mode));
  const gn_tensor_view* ins[] = {&a, &b};

  const bool int_in = is_intlike(a.dtype) && is_intlike(b.dtype);
  if (is_compare(def.op)) {
    for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
      if (int_in) store_int(po, o.dtype, icompare(def.op, load_int(p[0], a.dtype), load_int(p[1], b.dtype)));
      else store(po, o.dtype, fcompare(def.op, load(p[0], a.dtype), load(p[1], b.dtype)));
    });
    return;
  }

  // True division always produces floats; everything else on integers is exact.
  const bool int_path = int_in && is_intlike(o.dtype) && !(def.op == BinOp::div && mode == 0);
  if (int_path) {
    int64_t ialpha = 1;
    if (def.op == BinOp::add || def.op == BinOp::sub) {
      if (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18)
        fail_op(GN_ERR_INVALID_ARGUMENT, op, "alpha must be an integer for integer tensors, got " + std::to_string(alpha));
      ialpha = (int64_t)alpha;
    }
    for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
      int64_t x = load_int(p[0], a.dtype), y = load_int(p[1], b.dtype), r = 0;
      switch (def.op) {
        case BinOp::add: r = wrap_add(x, wrap_mul(ialpha, y)); break;
        case BinOp::sub: r = wrap_sub(x, wrap_mul(ialpha, y)); break;
        case BinOp::mul: r = wrap_mul(x, y); break;
        case BinOp::div:
          if (y == 0) fail_op(GN_ERR_INVALID_ARGUMENT, op, "ZeroDivisionError: integer division by zero");
          r = idiv(x, y, mode);
          break;
        case BinOp::pow:
          if (y < 0) fail_op(GN_ERR_INVALID_ARGUMENT, op, "integers to negative integer powers are not allowed (exponent " + std::to_string(y) + ")");
          r = ipow(x, y);
          break;
        case BinOp::maximum: r = x > y ? x : y; break;
        case BinOp::minimum: r = x < y ? x : y; break;
        default: break;
      }
      store_int(po, o.dtype, r);
    });
    return;
  }

  for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
    double x = load(p[0], a.dtype), y = load(p[1], b.dtype), r = 0.0;
    switch (def.op) {
      case BinOp::add: r = x + alpha * y; break;
      case BinOp::sub: r = x - alpha * y; break;
      case BinOp::mul: r = x * y; break;
      case BinOp::div:
        if (mode == 0) r = x / y;
        else if (mode == 1) r = std::trunc(x / y);
        else r = div_floor(x, y);
        break;
      case BinOp::pow: r = std::pow(x, y); break;
      case BinOp::maximum: r = (std::isnan(x) || std::isnan(y)) ? NAN : (x > y ? x : y); break;
      case BinOp::minimum: r = (std::isnan(x) || std::isnan(y)) ? NAN : (x < y ? x : y); break;
      default: break;
    }
    store(po, o.dtype, r);
  });
}

// where(cond, a, b) -> out = cond ? a : b (all three broadcast to out).
GN_SDK_KERNEL(where_kernel) {
  need_io("where", n_in, 3, n_out, 1);
  const gn_tensor_view &c = in[0], &a = in[1], &b = in[2], &o = out[0];
  const gn_tensor_view* ins[] = {&c, &a, &b};
  for_each_bcast("where", o, ins, [&](char* po, const char* const* p) {
    bool take_a = load(p[0], c.dtype) != 0.0;
    if (take_a) convert_elem(po, o.dtype, p[1], a.dtype);
    else convert_elem(po, o.dtype, p[2], b.dtype);
  });
}

}  // namespace

// ----------------------------------------------------------------------------
// registration

void register_binary(const gn::sdk::Registrar& r) {
  auto reg = [&](const char* name, auto& dtypes) {
    r.kernel(name, dtypes, binary_kernel, 0, (void*)find_binary(name));
  };
  reg("add", kAllDtypes);  // bool: logical or
  reg("sub", kNumericDtypes);  // torch refuses bool subtraction
  reg("mul", kAllDtypes);  // bool: logical and
  reg("div", kAllDtypes);
  reg("pow", kNumericDtypes);
  reg("maximum", kAllDtypes);
  reg("minimum", kAllDtypes);
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}) reg(name, kAllDtypes);
  r.kernel("where", kAllDtypes, where_kernel);
}

}  // namespace ref
