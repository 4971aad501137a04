// core/ops/infer_creation.cpp - inference of the ops without tensor inputs:
// arange, full, rand, randn, randint.  The kernel dtype is the output dtype.
#include <cmath>

#include "infer_common.h"

namespace genesis::core {

using namespace infer_detail;

namespace {

// The single output of a creation op.
void creation_out(const Args& a, int32_t dtype, const Dims& d) { a.set_outputs(dtype, {make_meta(dtype, d)}); }

// [lo, hi] of the values a dtype holds exactly (floats: the integers
// representable without rounding, torch's check for random_ bounds).
void dtype_int_range(int32_t dt, double* lo, double* hi) {
  switch (dt) {
    case GN_I8:
      *lo = -128;
      *hi = 127;
      return;
    case GN_U8:
      *lo = 0;
      *hi = 255;
      return;
    case GN_I32:
      *lo = -2147483648.0;
      *hi = 2147483647.0;
      return;
    case GN_I64:
      *lo = -9223372036854775808.0;
      *hi = 9223372036854775807.0;
      return;
    case GN_BOOL:
      *lo = 0;
      *hi = 1;
      return;
    case GN_F16:
      *lo = -2048;
      *hi = 2048;
      return;  // 2^11
    case GN_BF16:
      *lo = -256;
      *hi = 256;
      return;  // 2^8
    case GN_F32:
      *lo = -16777216.0;
      *hi = 16777216.0;
      return;  // 2^24
    default:
      *lo = -9007199254740992.0;
      *hi = 9007199254740992.0;
      return;  // f64: 2^53
  }
}

}  // namespace

// arange(start, end, step, dtype, device) -> (n): n = ceil((end-start)/step).
// As torch: integer dtypes check the step and its sign on truncated values,
// and int64 also counts on them (arange(0, 2.5, int64) has 2 elements).
GN_DEFINE_INFER(arange) {
  a.need_inputs(0, 0);
  const double start = a.attr_float(0), end = a.attr_float(1), step = a.attr_float(2);
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    fail(GN_ERR_INVALID_ARGUMENT, "start, end and step must be finite, got start=" + num_str(start) +
                                      ", end=" + num_str(end) + ", step=" + num_str(step));
  int32_t dt = a.attr_dtype(3, true);
  if (dt < 0) {
    const bool integral = start == std::trunc(start) && end == std::trunc(end) && step == std::trunc(step);
    dt = integral ? GN_I64 : GN_F32;
  }
  if (dt == GN_BOOL) fail(GN_ERR_DTYPE, "dtype bool is not supported");
  double xs = start, xe = end, xst = step;
  if (is_int(dt)) {
    constexpr double kLimit = 9.2e18;  // values must fit in int64 before truncation
    if (std::fabs(start) > kLimit || std::fabs(end) > kLimit || std::fabs(step) > kLimit)
      fail(GN_ERR_INVALID_ARGUMENT, "start, end and step must fit in int64");
    xs = std::trunc(start);
    xe = std::trunc(end);
    xst = std::trunc(step);
  }
  if (xst == 0)
    fail(GN_ERR_INVALID_ARGUMENT, "step must be nonzero, got " + num_str(step) +
                                      (step != 0 ? std::string(" (0 as ") + dtype_str(dt) + ")" : ""));
  if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
    fail(GN_ERR_INVALID_ARGUMENT, "end " + num_str(end) + " and start " + num_str(start) +
                                      " are inconsistent with the sign of step " + num_str(step));
  const double len = dt == GN_I64 ? std::ceil((xe - xs) / xst) : std::ceil((end - start) / step);
  if (!(len >= 0) || len > 4.6e18)
    fail(GN_ERR_INVALID_ARGUMENT, "arange from " + num_str(start) + " to " + num_str(end) + " by " + num_str(step) +
                                      " has an invalid length " + num_str(len));
  Dims d;
  d.push(static_cast<int64_t>(len));
  creation_out(a, dt, d);
}

// full(shape, value, dtype) / rand / randn (float dtypes) / randint(low, high, shape, dtype).
GN_DEFINE_INFER(creation) {
  a.need_inputs(0, 0);
  const std::string_view op = a.op();
  const bool randint = op == "randint";
  const size_t shape_i = randint ? 2 : 0;
  const size_t dtype_i = randint ? 3 : op == "full" ? 2 : 1;
  const std::span<const int64_t> shape = a.attr_ints(shape_i);
  if (shape.size() > GN_MAX_DIMS)
    fail(GN_ERR_SHAPE, "shape " + ints_str(shape) + " has " + std::to_string(shape.size()) + " dims but at most " +
                           std::to_string(GN_MAX_DIMS) + " are supported");
  Dims d;
  int64_t elems = 1;
  bool overflow = false, empty = false;
  for (int64_t s : shape) {
    if (s < 0) fail(GN_ERR_INVALID_ARGUMENT, "shape " + ints_str(shape) + " has a negative size");
    empty = empty || s == 0;
    overflow = overflow || __builtin_mul_overflow(elems, s, &elems);
    d.push(s);
  }
  if (overflow && !empty)
    fail(GN_ERR_INVALID_ARGUMENT, "shape " + ints_str(shape) + " has more elements than int64 can count");
  const int32_t dt = a.attr_dtype(dtype_i, false);
  if ((op == "rand" || op == "randn") && !is_float(dt))
    fail(GN_ERR_DTYPE, std::string("dtype must be floating point, got ") + dtype_str(dt));
  if (randint) {
    const int64_t low = a.attr_int(0), high = a.attr_int(1);
    if (low >= high)
      fail(GN_ERR_INVALID_ARGUMENT, "low " + std::to_string(low) + " must be less than high " + std::to_string(high));
    // The kernel draws 32 random bits per value: the range must fit.
    const __int128 range = static_cast<__int128>(high) - static_cast<__int128>(low);
    if (range > (static_cast<__int128>(1) << 32))
      fail(GN_ERR_INVALID_ARGUMENT,
           "range [" + std::to_string(low) + ", " + std::to_string(high) + ") is wider than 2^32");
    double lo = 0, hi = 0;
    dtype_int_range(dt, &lo, &hi);
    if (static_cast<double>(low) < lo || static_cast<double>(high - 1) > hi)
      fail(GN_ERR_INVALID_ARGUMENT,
           "range [" + std::to_string(low) + ", " + std::to_string(high) + ") does not fit in " + dtype_str(dt));
  }
  creation_out(a, dt, d);
}

}  // namespace genesis::core
