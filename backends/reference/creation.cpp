// backends/reference/creation.cpp - arange, full and the random ops.
//
// No tensor inputs (bernoulli: p); the output has the shape and dtype that
// inference gave it.  Random ops follow gn/sdk/philox.h exactly: element i is
// the row-major linear index of the output, with (ctx->seed, ctx->offset).
#include <cmath>
#include <cstdint>
#include <string>

#include "families.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::elem_ptr;
using gn::sdk::store;

// arange(start, end, step, dtype, device) -> (n,): out[i] = start + i*step.
GN_SDK_KERNEL(arange_kernel) {
  need_io("arange", n_in, 0, n_out, 1);
  const double start = attr_float("arange", attrs, n_attrs, 0);
  const double end = attr_float("arange", attrs, n_attrs, 1);
  const double step = attr_float("arange", attrs, n_attrs, 2);
  const gn_tensor_view& o = out[0];
  if (step == 0.0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    fail_op(GN_ERR_INVALID_ARGUMENT, "arange", "start, end and step must be finite and step nonzero");
  const int64_t n = numel(o);
  // Integral start/step into an integer dtype: exact int64 arithmetic.
  const bool exact = is_intlike(o.dtype) && start == std::trunc(start) && step == std::trunc(step) &&
                     std::fabs(start) < 9.2e18 && std::fabs(step) < 9.2e18;
  for (int64_t i = 0; i < n; ++i) {
    if (exact)
      gn::sdk::store_int(elem_ptr(o, i), o.dtype, wrap_add((int64_t)start, wrap_mul(i, (int64_t)step)));
    else
      store(elem_ptr(o, i), o.dtype, start + (double)i * step);
  }
}

// full(shape, value, dtype, device) -> shape filled with value.
GN_SDK_KERNEL(full_kernel) {
  need_io("full", n_in, 0, n_out, 1);
  const double value = attr_float("full", attrs, n_attrs, 1);
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  for (int64_t i = 0; i < n; ++i) store(elem_ptr(o, i), o.dtype, value);
}

// rand(shape, dtype, device) -> uniform [0, 1): (word(i) >> 8) * 2^-24.
GN_SDK_KERNEL(rand_kernel) {
  need_io("rand", n_in, 0, n_out, 1);
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  for (int64_t i = 0; i < n; ++i)
    store(elem_ptr(o, i), o.dtype, gn::sdk::philox_uniform_for(o.dtype, ctx->seed, ctx->offset, i));
}

// randn(shape, dtype, device) -> standard normal (Box-Muller on Philox pairs).
GN_SDK_KERNEL(randn_kernel) {
  need_io("randn", n_in, 0, n_out, 1);
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  for (int64_t i = 0; i < n; ++i) store(elem_ptr(o, i), o.dtype, gn::sdk::philox_normal(ctx->seed, ctx->offset, i));
}

// randint(low, high, shape, dtype, device) -> integers in [low, high).
GN_SDK_KERNEL(randint_kernel) {
  need_io("randint", n_in, 0, n_out, 1);
  const int64_t low = attr_int("randint", attrs, n_attrs, 0);
  const int64_t high = attr_int("randint", attrs, n_attrs, 1);
  if (high <= low || (uint64_t)high - (uint64_t)low > (uint64_t(1) << 32))
    fail_op(
        GN_ERR_INVALID_ARGUMENT, "randint",
        "needs low < high and high - low <= 2^32, got low " + std::to_string(low) + ", high " + std::to_string(high));
  const gn_tensor_view& o = out[0];
  const int64_t n = numel(o);
  for (int64_t i = 0; i < n; ++i)
    gn::sdk::store_int(elem_ptr(o, i), o.dtype, gn::sdk::philox_randint(ctx->seed, ctx->offset, i, low, high));
}

// bernoulli(p) -> out (p's shape): 1 where u(i) < p(i), else 0; p in [0, 1].
GN_SDK_KERNEL(bernoulli_kernel) {
  need_io("bernoulli", n_in, 1, n_out, 1);
  const gn_tensor_view &p = in[0], &o = out[0];
  const gn_tensor_view* ins[] = {&p};
  int64_t i = 0;  // row-major linear index of out
  for_each_bcast("bernoulli", o, ins, [&](char* po, const char* const* pp) {
    double prob = gn::sdk::load(pp[0], p.dtype);
    if (!(prob >= 0.0 && prob <= 1.0))
      fail_op(GN_ERR_INVALID_ARGUMENT, "bernoulli", "p must be in [0, 1], got " + std::to_string(prob));
    store(po, o.dtype, gn::sdk::philox_uniform(ctx->seed, ctx->offset, i) < prob ? 1.0 : 0.0);
    ++i;
  });
}

}  // namespace

void register_creation(const gn::sdk::Registrar& r) {
  r.kernel("arange", kNumericDtypes, arange_kernel);
  r.kernel("full", kAllDtypes, full_kernel);
  r.kernel("rand", kFloatingDtypes, rand_kernel);
  r.kernel("randn", kFloatingDtypes, randn_kernel);
  r.kernel("randint", kNumericDtypes, randint_kernel);
  r.kernel("bernoulli", kFloatingDtypes, bernoulli_kernel);
}

}  // namespace gn::reference
