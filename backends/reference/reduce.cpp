// backends/reference/reduce.cpp - reductions over dims: sum mean prod max min
// argmax argmin var std logsumexp norm.
//
// x (any shape) is split into kept dims (outer, row-major = y's linear index,
// keepdim or not) and reduced dims (inner, row-major).  Floats accumulate in
// double; sum/prod into an integer dtype and max/min/argmax of integers use
// exact int64 arithmetic (sums wrap like torch).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "genesis/sdk/scalar_tables.h"
#include "util.h"

namespace gn::reference {
namespace {

using gn::sdk::load;

using Red = gn::sdk::scalar::Reduction;
using ReduceDef = gn::sdk::scalar::ReductionDef;
constexpr const auto& kReduce = gn::sdk::scalar::kReductions;

// ----------------------------------------------------------------------------
// one group -> one value

// Index of the max (or min) of the group: first occurrence; a NaN counts as
// the extreme (torch), so the first NaN wins.
int64_t arg_extreme(const std::vector<const char*>& p, int32_t dtype, bool is_max) {
  int64_t best = 0;
  if (is_intlike(dtype)) {
    int64_t bv = gn::sdk::load_int(p[0], dtype);
    for (size_t j = 1; j < p.size(); ++j) {
      int64_t v = gn::sdk::load_int(p[j], dtype);
      if (gn::sdk::scalar::beats(v, bv, is_max)) {
        bv = v;
        best = (int64_t)j;
      }
    }
    return best;
  }
  double bv = load(p[0], dtype);
  for (size_t j = 1; j < p.size(); ++j) {
    double v = load(p[j], dtype);
    if (gn::sdk::scalar::beats(v, bv, is_max)) {
      bv = v;
      best = (int64_t)j;
    }
  }
  return best;
}

// sum, mean, var, std, logsumexp, norm of one group in double.
double float_reduce(Red kind, const std::vector<const char*>& p, int32_t dtype, double param) {
  const double n = (double)p.size();
  switch (kind) {
    case Red::sum:
    case Red::mean: {
      double s = 0.0;
      for (const char* e : p) s += load(e, dtype);
      return kind == Red::sum ? s : s / n;  // mean of nothing: 0/0 = NaN (torch)
    }
    case Red::prod: {
      double s = 1.0;
      for (const char* e : p) s *= load(e, dtype);
      return s;
    }
    case Red::var:
    case Red::std: {
      double mean = 0.0, ss = 0.0;
      for (const char* e : p) mean += load(e, dtype);
      mean /= n;
      for (const char* e : p) {
        double d = load(e, dtype) - mean;
        ss += d * d;
      }
      double v = gn::sdk::scalar::var_finish(ss, n, param);  // param = correction
      return kind == Red::var ? v : std::sqrt(v);
    }
    case Red::logsumexp: {
      double m = -INFINITY;
      for (const char* e : p) {
        double v = load(e, dtype);
        if (std::isnan(v)) return NAN;
        if (v > m) m = v;
      }
      if (std::isinf(m)) return m;  // all -inf (or empty): -inf; any +inf: +inf
      double s = 0.0;
      for (const char* e : p) s += std::exp(load(e, dtype) - m);
      return m + std::log(s);
    }
    case Red::norm: {
      const double pw = param;
      double acc = 0.0;
      if (std::isinf(pw)) {
        acc = pw > 0 ? 0.0 : INFINITY;
        for (const char* e : p) {
          double a = std::fabs(load(e, dtype));
          if (std::isnan(a)) return NAN;
          acc = pw > 0 ? std::fmax(acc, a) : std::fmin(acc, a);
        }
        return acc;
      }
      for (const char* e : p) acc += gn::sdk::scalar::norm_term(std::fabs(load(e, dtype)), pw);
      return gn::sdk::scalar::norm_finish(acc, pw);
    }
    default: return 0.0;
  }
}

// ----------------------------------------------------------------------------
// kernel

// x -> y; attrs per ops.def (dims first, except argmax/argmin's dim and norm's p).
GN_SDK_KERNEL(reduce_kernel) {
  const ReduceDef& def = *(const ReduceDef*)ctx->kernel_data;
  const char* op = def.name;
  need_io(op, n_in, 1, n_out, 1);
  const gn_tensor_view &x = in[0], &y = out[0];

  Dims dims;
  double param = 0.0;
  switch (def.op) {
    case Red::argmax:
    case Red::argmin: {
      int64_t dim = attr_int(op, attrs, n_attrs, 0);
      if (dim != GN_DIM_NONE) dims = {dim};
      break;
    }
    case Red::norm:
      param = attr_float(op, attrs, n_attrs, 0);
      dims = attr_ints(op, attrs, n_attrs, 1);
      break;
    case Red::var:
    case Red::std:
      dims = attr_ints(op, attrs, n_attrs, 0);
      param = attr_float(op, attrs, n_attrs, 1);
      break;
    default: dims = attr_ints(op, attrs, n_attrs, 0); break;
  }
  const Groups g = make_groups(x, reduced_mask(op, dims, x.ndim));
  if (numel(y) != g.outer_n)
    fail_op(GN_ERR_SHAPE, op, "output " + shape_str(y) + " does not match the reduction of " + shape_str(x));

  const bool needs_elems = def.op == Red::max || def.op == Red::min || def.op == Red::argmax || def.op == Red::argmin;
  if (needs_elems && g.inner_n == 0 && g.outer_n > 0)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "cannot reduce over an empty dimension of input " + shape_str(x));

  std::vector<const char*> p;
  for (int64_t o = 0; o < g.outer_n; ++o) {
    g.pointers(o, p);
    char* dst = gn::sdk::elem_ptr(y, o);
    switch (def.op) {
      case Red::argmax:
      case Red::argmin: gn::sdk::store_int(dst, y.dtype, arg_extreme(p, x.dtype, def.op == Red::argmax)); break;
      case Red::max:
      case Red::min: {
        int64_t j = arg_extreme(p, x.dtype, def.op == Red::max);
        convert_elem(dst, y.dtype, p[(size_t)j], x.dtype);
        break;
      }
      case Red::sum:
      case Red::prod:
        if (is_intlike(y.dtype)) {
          // Each element converted to an integer first (torch casts x to dtype).
          int64_t acc = def.op == Red::sum ? 0 : 1;
          for (const char* e : p) {
            int64_t v = load_i64(e, x.dtype);
            acc = def.op == Red::sum ? wrap_add(acc, v) : wrap_mul(acc, v);
          }
          gn::sdk::store_int(dst, y.dtype, acc);
        } else {
          gn::sdk::store(dst, y.dtype, float_reduce(def.op, p, x.dtype, param));
        }
        break;
      default: gn::sdk::store(dst, y.dtype, float_reduce(def.op, p, x.dtype, param)); break;
    }
  }
}

}  // namespace

void register_reduce(const gn::sdk::Registrar& r) {
  // Every reduction of the shared list (GN_SCALAR_REDUCE_OPS) with the dtypes it lists.
  for (const ReduceDef& d : kReduce)
    for (int32_t dt : kAllDtypes)
      if (gn::sdk::scalar::reduce_takes(d.inputs, dt)) r.kernel(d.name, dt, reduce_kernel, 0, (void*)&d);
}

}  // namespace gn::reference
