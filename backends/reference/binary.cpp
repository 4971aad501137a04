// backends/reference/binary.cpp - elementwise binary ops and where.
//
// a, b (each broadcast to out's shape) -> out.  The core has promoted a and b
// to one dtype (compare/logical ops: bool out).  Float values are computed in
// double; when a, b (and out, for arithmetic) are integer-like the int64 path
// is used: exact, wrapping like torch's integer kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "families.h"
#include "genesis/sdk/scalar_tables.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::load;
using gn::sdk::load_int;
using gn::sdk::store;
using gn::sdk::store_int;

namespace sc = gn::sdk::scalar;

// A row of gn::sdk::scalar::kBinaryOps: the op's name and code.
using BinaryDef = sc::BinaryOpName;

// ----------------------------------------------------------------------------
// kernel

// a, b -> out; attrs: add/sub alpha, div rounding_mode (0 true, 1 trunc, 2 floor).
GN_SDK_KERNEL(binary_kernel) {
  const BinaryDef& def = *(const BinaryDef*)ctx->kernel_data;
  const char* op = def.name;
  need_io(op, n_in, 2, n_out, 1);
  const gn_tensor_view &a = in[0], &b = in[1], &o = out[0];
  const bool add_sub = def.op == sc::kBin_add || def.op == sc::kBin_sub;
  const double alpha = add_sub ? attr_float(op, attrs, n_attrs, 0) : 1.0;
  const int64_t mode = def.op == sc::kBin_div ? attr_int(op, attrs, n_attrs, 0) : 0;
  if (mode < 0 || mode > 2)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "rounding_mode must be 0, 1 or 2, got " + std::to_string(mode));
  const gn_tensor_view* ins[] = {&a, &b};

  const bool int_in = is_intlike(a.dtype) && is_intlike(b.dtype);
  if (sc::is_compare(def.op)) {
    for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
      const bool r = int_in ? sc::compare(def.op, load_int(p[0], a.dtype), load_int(p[1], b.dtype))
                            : sc::compare(def.op, load(p[0], a.dtype), load(p[1], b.dtype));
      store_int(po, o.dtype, r);
    });
    return;
  }

  // True division always produces floats; everything else on integers is exact.
  const bool int_path = int_in && is_intlike(o.dtype) && !(def.op == sc::kBin_div && mode == 0);
  if (int_path) {
    int64_t ialpha = 1;
    if (add_sub) {
      if (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18)
        fail_op(GN_ERR_INVALID_ARGUMENT, op,
                "alpha must be an integer for integer tensors, got " + std::to_string(alpha));
      ialpha = (int64_t)alpha;
    }
    for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
      const int64_t x = load_int(p[0], a.dtype), y = load_int(p[1], b.dtype);
      if (def.op == sc::kBin_div && y == 0)
        fail_op(GN_ERR_INVALID_ARGUMENT, op, "ZeroDivisionError: integer division by zero");
      if (def.op == sc::kBin_pow && y < 0)
        fail_op(GN_ERR_INVALID_ARGUMENT, op,
                "integers to negative integer powers are not allowed (exponent " + std::to_string(y) + ")");
      store_int(po, o.dtype, sc::binary_exact(def.op, x, y, ialpha, (int)mode));
    });
    return;
  }

  for_each_bcast(op, o, ins, [&](char* po, const char* const* p) {
    store(po, o.dtype, sc::binary(def.op, load(p[0], a.dtype), load(p[1], b.dtype), alpha, (int)mode));
  });
}

// where(cond, a, b) -> out = cond ? a : b (all three broadcast to out).
GN_SDK_KERNEL(where_kernel) {
  need_io("where", n_in, 3, n_out, 1);
  const gn_tensor_view &c = in[0], &a = in[1], &b = in[2], &o = out[0];
  const gn_tensor_view* ins[] = {&c, &a, &b};
  for_each_bcast("where", o, ins, [&](char* po, const char* const* p) {
    bool take_a = load(p[0], c.dtype) != 0.0;
    if (take_a)
      convert_elem(po, o.dtype, p[1], a.dtype);
    else
      convert_elem(po, o.dtype, p[2], b.dtype);
  });
}

}  // namespace

// ----------------------------------------------------------------------------
// registration

void register_binary(const gn::sdk::Registrar& r) {
  // Every op of the shared list; its row travels as the kernel's user data.
  for (const BinaryDef& b : sc::kBinaryOps) {
    if (b.takes_bool)
      r.kernel(b.name, kAllDtypes, binary_kernel, 0, (void*)&b);
    else
      r.kernel(b.name, kNumericDtypes, binary_kernel, 0, (void*)&b);
  }
  r.kernel("where", kAllDtypes, where_kernel);
}

}  // namespace gn::reference
