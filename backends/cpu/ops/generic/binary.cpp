// backends/cpu/ops/generic/binary.cpp - the generic C++ path of the
// elementwise binary ops: add sub mul div pow maximum minimum, the compares
// and logical_and/or, for every dtype and layout the fast paths (oneDNN
// binary and the f32/f64 loops in onednn/binary.cpp, the compares in simd/binary.cpp)
// do not take: bf16/f16 with broadcasting, integers and bool, div rounding
// modes, pow.  The ops and their bool operands come from the SDK's lists
// (GN_SCALAR_BINARY_OPS, GN_SCALAR_COMPARE_OPS), so a new binary op is served
// here with no edit.
//
// a, b (any strides, broadcast to out) -> out (any non-aliasing strides).
// Rows of out's last dim in parallel.  Values follow the reference exactly
// (backends/reference/binary.cpp): floats are loaded as double, computed in
// double and stored once through the SDK's conversions; integer operands
// (and an integer out for arithmetic) take the int64 path, wrapping like
// torch; the formulas are the shared ones (genesis/sdk/scalar_ops.h);
// compiled with -ffp-contract=off so x + alpha*y is not fused.
// Errors the reference raises (integer division by zero, negative integer
// powers, a fractional alpha on integers) are raised with the same code.
#include <atomic>
#include <cmath>
#include <string>
#include <type_traits>

#include "genesis/sdk/scalar_tables.h"
#include "loops.h"
#include "tiers.h"
#include "scalar_access.h"

namespace gn::cpu::generic {
namespace {

// fn(std::integral_constant<int, op>) for a run-time op code.
template <class Fn>
void with_op_code(int op, Fn&& fn) {
  switch (op) {
#define GN_CPU_OP_CASE(name, F) \
  case sc::kBin_##name: fn(std::integral_constant<int, sc::kBin_##name>{}); break;
    GN_SCALAR_BINARY_OPS(GN_CPU_OP_CASE)
    GN_SCALAR_COMPARE_OPS(GN_CPU_OP_CASE)
#undef GN_CPU_OP_CASE
    default: break;
  }
}

// An integer or bool element of dtype DT, exactly (gn::sdk::load_int / store_int for one dtype).
template <int32_t DT>
inline int64_t load_exact(const char* p) {
  return (int64_t) * (const typename Storage<DT>::T*)p;
}
template <int32_t DT>
inline void store_exact(char* p, int64_t v) {
  using T = typename Storage<DT>::T;
  if constexpr (DT == GN_BOOL)
    *(T*)p = v != 0;
  else
    *(T*)p = (T)v;
}

// v's element strides broadcast to out (0 where broadcast).
std::vector<int64_t> bstrides(const gn_tensor_view& v, const gn_tensor_view& out) {
  std::vector<int64_t> st((size_t)out.ndim, 0);
  for (int32_t d = 0; d < out.ndim; ++d) {
    const int32_t vd = d - (out.ndim - v.ndim);
    if (vd >= 0 && v.shape[vd] != 1) st[(size_t)d] = v.strides[vd];
  }
  return st;
}

}  // namespace

void binary(const char* name, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& o,
            const gn_attr_value* attrs, size_t n_attrs) {
  const sc::BinaryOpName* def = sc::find_binary_op(name);
  if (!def) GN_UNSUPPORTED(std::string("[") + name + "] in the generic binary path");
  const int op = def->op;
  if (a.ndim > o.ndim || b.ndim > o.ndim) fail_op(GN_ERR_SHAPE, name, "operand rank exceeds the output's");
  for (int32_t d = 0; d < o.ndim; ++d)
    if (o.shape[d] > 1 && o.strides[d] <= 0) GN_UNSUPPORTED(std::string("[") + name + "] output layout");
  const double alpha = (op == sc::kBin_add || op == sc::kBin_sub) ? attr_d(attrs, n_attrs, 0, 1.0) : 1.0;
  const int64_t mode = op == sc::kBin_div ? attr_i(attrs, n_attrs, 0, 0) : 0;
  if (mode < 0 || mode > 2)
    fail_op(GN_ERR_INVALID_ARGUMENT, name, "rounding_mode must be 0, 1 or 2, got " + std::to_string(mode));
  const bool int_in = intlike(a.dtype) && intlike(b.dtype);
  const bool int_path = !sc::is_compare(op) && int_in && intlike(o.dtype) && !(op == sc::kBin_div && mode == 0);
  int64_t ialpha = 1;
  if (int_path && (op == sc::kBin_add || op == sc::kBin_sub)) {
    if (alpha != std::trunc(alpha) || std::fabs(alpha) > 9.2e18)
      fail_op(GN_ERR_INVALID_ARGUMENT, name,
              "alpha must be an integer for integer tensors, got " + std::to_string(alpha));
    ialpha = (int64_t)alpha;
  }
  const int32_t R = o.ndim;
  const int64_t n = gn_view_numel(&o);
  if (n == 0) return;
  const std::vector<int64_t> as = bstrides(a, o), bs = bstrides(b, o);
  const int64_t N = R ? o.shape[R - 1] : 1, rows = n / N;
  const int64_t la = R ? as[(size_t)R - 1] : 0, lb = R ? bs[(size_t)R - 1] : 0, lo = R ? o.strides[R - 1] : 0;
  const size_t ea = gn_dtype_size(a.dtype), eb = gn_dtype_size(b.dtype), eo = gn_dtype_size(o.dtype);
  const char* pa = (const char*)data_of(a);
  const char* pb = (const char*)data_of(b);
  char* po = (char*)data_of(o);
  std::atomic<int> err{0};  // 1: integer division by zero, 2: negative integer power
  // Walk out's rows, calling elem(x, y, z) on each element's addresses.
  auto walk = [&](auto&& elem) {
    parallel_for(rows, N, [&](int64_t r) {
      int64_t oa = 0, ob = 0, oo = 0, rem = r;
      for (int32_t d = R - 2; d >= 0; --d) {
        const int64_t i = rem % o.shape[d];
        rem /= o.shape[d];
        oa += i * as[(size_t)d];
        ob += i * bs[(size_t)d];
        oo += i * o.strides[d];
      }
      for (int64_t j = 0; j < N; ++j)
        elem(pa + (oa + j * la) * (int64_t)ea, pb + (ob + j * lb) * (int64_t)eb, po + (oo + j * lo) * (int64_t)eo);
    });
  };
  // Float operands of one dtype (the core promotes them to one): the op is a
  // constant of the row loop (one formula inlined) and loads and stores are
  // typed.  The SDK's load/store switch on the dtype, and in this many loops
  // the compiler keeps them out of line: a call per element.
  const bool compare = sc::is_compare(op);
  if (a.dtype == b.dtype && is_float_dt(a.dtype) && o.dtype == (compare ? GN_BOOL : a.dtype)) {
    dispatch_float_h(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      with_op_code(op, [&](auto code) {
        constexpr int kOp = decltype(code)::value;
        if constexpr (kOp >= sc::kBin_eq)
          walk([&](const char* x, const char* y, char* z) {
            *(uint8_t*)z = sc::compare(kOp, ld((const T*)x), ld((const T*)y));
          });
        else
          walk([&](const char* x, const char* y, char* z) {
            st((T*)z, sc::binary(kOp, ld((const T*)x), ld((const T*)y), alpha, (int)mode));
          });
      });
    });
    return;
  }
  // Integers (and bool) through exact int64, typed the same way.
  if (int_in && a.dtype == b.dtype && (compare ? o.dtype == GN_BOOL : int_path && o.dtype == a.dtype)) {
    dispatch_dtype(a.dtype, [&](auto dt) {
      constexpr int32_t DT = decltype(dt)::value;
      if constexpr (!is_float_dt(DT)) {
        with_op_code(op, [&](auto code) {
          constexpr int kOp = decltype(code)::value;
          if constexpr (kOp >= sc::kBin_eq)
            walk([&](const char* x, const char* y, char* z) {
              *(uint8_t*)z = sc::compare(kOp, load_exact<DT>(x), load_exact<DT>(y));
            });
          else
            walk([&](const char* x, const char* y, char* z) {
              const int64_t u = load_exact<DT>(x), v = load_exact<DT>(y);
              if (kOp == sc::kBin_div && v == 0) {
                err = 1;
                return;
              }
              if (kOp == sc::kBin_pow && v < 0) {
                err = 2;
                return;
              }
              store_exact<DT>(z, sc::binary_exact(kOp, u, v, ialpha, (int)mode));
            });
        });
      }
    });
  } else if (int_in && (compare || int_path)) {
    // Mixed integer dtypes (rare: the core promotes operands to one): the op a run-time code.
    walk([&](const char* x, const char* y, char* z) {
      const int64_t u = load_int(x, a.dtype), v = load_int(y, b.dtype);
      if (compare) {
        store_int(z, o.dtype, sc::compare(op, u, v));
        return;
      }
      if (op == sc::kBin_div && v == 0) {
        err = 1;
        return;
      }
      if (op == sc::kBin_pow && v < 0) {
        err = 2;
        return;
      }
      store_int(z, o.dtype, sc::binary_exact(op, u, v, ialpha, (int)mode));
    });
  } else if (compare) {
    // Mixed dtypes (rare: the core promotes operands to one): double, the op a run-time code.
    walk([&](const char* x, const char* y, char* z) {
      store_int(z, o.dtype, sc::compare(op, load(x, a.dtype), load(y, b.dtype)));
    });
  } else {
    walk([&](const char* x, const char* y, char* z) {
      store(z, o.dtype, sc::binary(op, load(x, a.dtype), load(y, b.dtype), alpha, (int)mode));
    });
  }
  if (err == 1) fail_op(GN_ERR_INVALID_ARGUMENT, name, "ZeroDivisionError: integer division by zero");
  if (err == 2) fail_op(GN_ERR_INVALID_ARGUMENT, name, "integers to negative integer powers are not allowed");
}

namespace {

GN_SDK_KERNEL(binary_generic_kernel) {
  const char* name = ctx->op_name ? ctx->op_name : "binary";
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, name, "expects 2 inputs and 1 output");
  binary(name, in[0], in[1], out[0], attrs, n_attrs);
}

}  // namespace

void register_binary(const gn::sdk::Registrar& r) {
  // The last tier (plugin.cpp, kTiers): every dtype of every op of the shared
  // lists (GN_SCALAR_BINARY_OPS, GN_SCALAR_COMPARE_OPS; bool where the functor
  // takes it) that the oneDNN (onednn/binary.cpp) and SIMD (simd/binary.cpp: compares)
  // tiers left.
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  for (const sc::BinaryOpName& op : sc::kBinaryOps)
    for (int32_t dt : all)
      if ((op.takes_bool || dt != GN_BOOL) && !tier_serves(op.name, dt)) r.kernel(op.name, dt, binary_generic_kernel);
}

}  // namespace gn::cpu::generic
