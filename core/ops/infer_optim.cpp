// core/ops/infer_optim.cpp - inference of the in-place ops (fill, optimizer
// steps, AMP multi-tensor helpers) and multi_sum_sq.  In-place ops have no
// outputs: inference only validates, and the kernel is picked by input 0.
#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// Input i must be a float tensor shaped like input 0 (the parameter).
void need_like_param(const Args& a, size_t i, const char* role) {
  const gn_tensor_meta& p = a.at(0);
  const gn_tensor_meta& t = a.at(i);
  need_float(t, role);
  if (!same_shape(p, t))
    fail(GN_ERR_SHAPE, std::string(role) + " shape " + shape_str(t) + " must equal the param shape " + shape_str(p));
}

// Input i must hold exactly one element.
void need_single(const Args& a, size_t i, const char* role) {
  if (numel(a.at(i)) != 1)
    fail(GN_ERR_SHAPE, std::string(role) + " must have exactly one element, got shape " + shape_str(a.at(i)));
}

}  // namespace

// fill(x) | sgd_step(param, grad, [buf]) | adamw_step(param, grad, m, v) |
// multi_scale_(scale, t...) | multi_unscale_check_(inv_scale, found_inf f32, t...).
// The gradient is read-only, so it is cast to the param dtype; the mutated
// state buffers cannot be cast and only need to be float.
GN_DEFINE_INFER(inplace) {
  const std::string_view op = a.op();
  if (op == "fill") {
    a.need_inputs(1, 1);
  } else if (op == "sgd_step" || op == "adamw_step") {
    const bool adam = op == "adamw_step";
    if (adam)
      a.need_inputs(4, 4);
    else
      a.need_inputs(2, 3);
    need_float(a.at(0), "param");
    need_like_param(a, 1, "grad");
    if (adam) {
      need_like_param(a, 2, "exp_avg");
      need_like_param(a, 3, "exp_avg_sq");
    } else if (a.n_in == 3) {
      need_like_param(a, 2, "momentum_buf");
    }
    a.cast_input(1, a.at(0).dtype);
  } else if (op == "multi_scale_") {
    a.need_inputs(2, -1);
    need_single(a, 0, "scale");
  } else if (op == "multi_unscale_check_") {
    a.need_inputs(3, -1);
    need_single(a, 0, "inv_scale");
    need_single(a, 1, "found_inf");
    if (a.at(1).dtype != GN_F32)
      fail(GN_ERR_DTYPE, std::string("found_inf must be float32, got ") + dtype_str(a.at(1).dtype));
  } else {
    a.need_inputs(1, -1);
  }
  a.set_outputs(a.at(0).dtype, {});
}

// multi_sum_sq(t0, t1, ...) -> 0-d float32 (float64 if any input is f64); inputs not cast.
GN_DEFINE_INFER(multi_sum_sq) {
  a.need_inputs(1, -1);
  int32_t dt = GN_F32;
  for (size_t i = 0; i < a.n_in; ++i) {
    const int32_t t = a.at(i).dtype;
    if (!is_float(t))
      fail(GN_ERR_DTYPE, "input " + std::to_string(i) + " must be a floating-point tensor, got " + dtype_str(t));
    if (t == GN_F64) dt = GN_F64;
  }
  a.set_outputs(dt, {make_meta(dt, Dims{})});
}

}  // namespace genesis::core
