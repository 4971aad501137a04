// core/ops/infer_elementwise.cpp - inference of the elementwise ops: unary
// (same/float/bool), cast, copy, binary arithmetic with PyTorch promotion,
// comparisons, logical ops and where.  Outputs have the (broadcast) input shape.
#include <cmath>

#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// One output shaped like x with `dtype`; kernel picked by `kernel`.
void one_out(const Args& a, const gn_tensor_meta& shape, int32_t dtype, int32_t kernel) {
  a.set_outputs(kernel, {like(shape, dtype)});
}

}  // namespace

// neg abs sign relu square floor ceil round clamp: y has x's dtype, except
// square of bool which is computed in int64 (as torch).
GN_DEFINE_INFER(unary_same) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const std::string_view op = a.op();
  int32_t dt = x.dtype;
  if (dt == GN_BOOL) {
    if (op == "neg") fail(GN_ERR_DTYPE, "negation of a bool tensor is not supported; use logical_not");
    if (op == "relu") fail(GN_ERR_DTYPE, "bool inputs are not supported");
    if (op == "square") {
      dt = GN_I64;
      a.cast_input(0, GN_I64);
    }
  }
  one_out(a, x, dt, dt);
}

// exp log sqrt ... gelu silu: floating point math; int/bool x computed in float32.
GN_DEFINE_INFER(unary_float) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  if (a.op() == "gelu") {
    const int64_t approx = a.attr_int(0);
    if (approx != 0 && approx != 1)
      fail(GN_ERR_INVALID_ARGUMENT, "approximate must be 0 (erf) or 1 (tanh), got " + std::to_string(approx));
  }
  int32_t dt = x.dtype;
  if (!is_float(dt)) {
    dt = GN_F32;
    a.cast_input(0, GN_F32);
  }
  one_out(a, x, dt, dt);
}

// logical_not isnan isinf isfinite: bool y, x read in its own dtype.
GN_DEFINE_INFER(unary_bool) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  one_out(a, x, GN_BOOL, x.dtype);
}

// bernoulli: float x only, y like x.
GN_DEFINE_INFER(unary_same_float) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  need_float(x, "input");
  one_out(a, x, x.dtype, x.dtype);
}

// triu/tril: any dtype, the last two dims are the matrix.
GN_DEFINE_INFER(unary_same_any) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  if (x.ndim < 2) fail(GN_ERR_SHAPE, "input must have at least 2 dims (..., M, N), got shape " + shape_str(x));
  one_out(a, x, x.dtype, x.dtype);
}

// cast: y = x converted to the dtype attribute; the kernel is chosen by x's dtype.
GN_DEFINE_INFER(cast) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  const int32_t dt = a.attr_dtype(0, false);
  one_out(a, x, dt, x.dtype);
}

// copy: dense copy of x (a preallocated output may differ; the core checks that).
GN_DEFINE_INFER(copy) {
  a.need_inputs(1, 1);
  const gn_tensor_meta& x = a.at(0);
  one_out(a, x, x.dtype, x.dtype);
}

// add sub mul pow maximum minimum: both inputs cast to result_type(a, b).
GN_DEFINE_INFER(binary_arith) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& y = a.at(1);
  const gn_tensor_meta shape = broadcast_or_fail(x, y);
  const int32_t common = result_type_of(a, 0, 2);
  const std::string_view op = a.op();
  const bool add_like = op == "add" || op == "sub";
  // torch: bool + bool is logical or; bool - bool is an error.
  if (op == "sub" && common == GN_BOOL)
    fail(GN_ERR_DTYPE, "subtraction of two bool tensors is not supported; use logical_xor or ne instead");
  if (add_like && !is_float(common) && a.n_attrs > 0) {
    // torch: "For integral input tensors, argument alpha must not be a floating point number".
    const double alpha = a.attr_float(0);
    if (alpha != std::trunc(alpha))
      fail(GN_ERR_INVALID_ARGUMENT,
           "alpha " + num_str(alpha) + " must be integral for " + dtype_str(common) + " inputs");
  }
  a.cast_input(0, common);
  a.cast_input(1, common);
  one_out(a, shape, common, common);
}

// div: rounding_mode 0 = true division (int/bool promoted to float32),
// 1 = trunc, 2 = floor (not for bool).
GN_DEFINE_INFER(binary_div) {
  a.need_inputs(2, 2);
  const gn_tensor_meta& x = a.at(0);
  const gn_tensor_meta& y = a.at(1);
  const int64_t mode = a.attr_int(0);
  if (mode < 0 || mode > 2)
    fail(GN_ERR_INVALID_ARGUMENT,
         "rounding_mode must be 0 (true), 1 (trunc) or 2 (floor), got " + std::to_string(mode));
  const gn_tensor_meta shape = broadcast_or_fail(x, y);
  int32_t common = result_type_of(a, 0, 2);
  if (mode == 0 && !is_float(common)) common = GN_F32;
  if (mode != 0 && common == GN_BOOL)
    fail(GN_ERR_DTYPE, std::string(mode == 1 ? "trunc" : "floor") + " division of bool tensors is not supported");
  a.cast_input(0, common);
  a.cast_input(1, common);
  one_out(a, shape, common, common);
}

// eq ne lt le gt ge: compared in result_type(a, b), bool out.
GN_DEFINE_INFER(binary_compare) {
  a.need_inputs(2, 2);
  const gn_tensor_meta shape = broadcast_or_fail(a.at(0), a.at(1));
  const int32_t common = result_type_of(a, 0, 2);
  a.cast_input(0, common);
  a.cast_input(1, common);
  one_out(a, shape, GN_BOOL, common);
}

// logical_and logical_or: both read as bool.
GN_DEFINE_INFER(binary_logical) {
  a.need_inputs(2, 2);
  const gn_tensor_meta shape = broadcast_or_fail(a.at(0), a.at(1));
  a.cast_input(0, GN_BOOL);
  a.cast_input(1, GN_BOOL);
  one_out(a, shape, GN_BOOL, GN_BOOL);
}

// where(cond bool, a, b): out = bcast of all three, dtype result_type(a, b).
GN_DEFINE_INFER(where) {
  a.need_inputs(3, 3);
  const gn_tensor_meta& cond = a.at(0);
  if (cond.dtype != GN_BOOL)
    fail(GN_ERR_DTYPE, std::string("condition must be a bool tensor, got ") + dtype_str(cond.dtype));
  const gn_tensor_meta ab = broadcast_or_fail(a.at(1), a.at(2));
  gn_tensor_meta shape{};
  if (!broadcast_shapes(cond, ab, &shape))
    fail(GN_ERR_SHAPE, "condition shape " + shape_str(cond) + " and value shapes " + shape_str(a.at(1)) + ", " +
                           shape_str(a.at(2)) + " cannot be broadcast");
  const int32_t common = result_type_of(a, 1, 2);
  a.cast_input(1, common);
  a.cast_input(2, common);
  one_out(a, shape, common, common);
}

}  // namespace genesis::core
