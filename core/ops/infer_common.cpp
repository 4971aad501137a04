// core/ops/infer_common.cpp - the shared inference rules (PyTorch type
// promotion, NumPy broadcasting) and the helpers behind infer_common.h.
#include "infer_common.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

namespace genesis::core {

namespace {

// torch.promote_types over our dtypes, indexed [a][b] in gn_dtype order
// (f32 f16 bf16 f64 i8 u8 i32 i64 bool).  Differences from torch: u8+i8 gives
// i32 (torch: int16, which we lack).  f16+bf16 -> f32 as in torch.
constexpr int8_t kF32 = GN_F32, kF16 = GN_F16, kBF16 = GN_BF16, kF64 = GN_F64, kI8 = GN_I8, kU8 = GN_U8, kI32 = GN_I32,
                 kI64 = GN_I64, kB = GN_BOOL;
constexpr int8_t kPromote[GN_DTYPE_COUNT][GN_DTYPE_COUNT] = {
    /* f32  */ {kF32, kF32, kF32, kF64, kF32, kF32, kF32, kF32, kF32},
    /* f16  */ {kF32, kF16, kF32, kF64, kF16, kF16, kF16, kF16, kF16},
    /* bf16 */ {kF32, kF32, kBF16, kF64, kBF16, kBF16, kBF16, kBF16, kBF16},
    /* f64  */ {kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64},
    /* i8   */ {kF32, kF16, kBF16, kF64, kI8, kI32, kI32, kI64, kI8},
    /* u8   */ {kF32, kF16, kBF16, kF64, kI32, kU8, kI32, kI64, kU8},
    /* i32  */ {kF32, kF16, kBF16, kF64, kI32, kI32, kI32, kI64, kI32},
    /* i64  */ {kF32, kF16, kBF16, kF64, kI64, kI64, kI64, kI64, kI64},
    /* bool */ {kF32, kF16, kBF16, kF64, kI8, kU8, kI32, kI64, kB},
};

// promote_types where -1 means "nothing yet" (torch's promote_skip_undefined).
int32_t promote_skip(int32_t a, int32_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return promote_types(a, b);
}

// torch's combine_categories: the higher-priority result wins unless the
// lower one is of a higher category (bool < int < float).
int32_t combine_categories(int32_t higher, int32_t lower) {
  if (higher >= 0 && gn_dtype_is_float(higher)) return higher;
  if (higher == GN_BOOL || (lower >= 0 && gn_dtype_is_float(lower))) return promote_skip(higher, lower);
  if (higher >= 0) return higher;
  return lower;
}

}  // namespace

int32_t promote_types(int32_t a, int32_t b) {
  if (a < 0 || a >= GN_DTYPE_COUNT || b < 0 || b >= GN_DTYPE_COUNT) return -1;
  return kPromote[a][b];
}

int32_t result_type(const gn_tensor_meta* const* metas, size_t n) {
  // Three priority classes, as torch's ResultTypeState.
  int32_t dim_result = -1, zero_result = -1, wrapped_result = -1;
  for (size_t i = 0; i < n; ++i) {
    const gn_tensor_meta& m = *metas[i];
    int32_t t = m.dtype;
    if (m.ndim > 0) {
      dim_result = promote_skip(dim_result, t);
    } else if (m.flags & GN_META_WRAPPED_SCALAR) {
      // A caller's number contributes its category's default dtype.
      if (gn_dtype_is_float(t))
        t = GN_F32;
      else if (gn_dtype_is_int(t))
        t = GN_I64;
      wrapped_result = promote_skip(wrapped_result, t);
    } else {
      zero_result = promote_skip(zero_result, t);
    }
  }
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

bool broadcast_shapes(const gn_tensor_meta& a, const gn_tensor_meta& b, gn_tensor_meta* out) {
  // Right-aligned: sizes agree, or one of them is 1.  Computed into a local
  // so that `out` may alias a or b.
  const int32_t nd = std::max(a.ndim, b.ndim);
  int64_t shape[GN_MAX_DIMS];
  for (int32_t i = 0; i < nd; ++i) {
    const int32_t ia = a.ndim - nd + i, ib = b.ndim - nd + i;
    const int64_t sa = ia >= 0 ? a.shape[ia] : 1;
    const int64_t sb = ib >= 0 ? b.shape[ib] : 1;
    if (sa == sb || sb == 1)
      shape[i] = sa;
    else if (sa == 1)
      shape[i] = sb;
    else
      return false;
  }
  out->ndim = nd;
  std::copy(shape, shape + nd, out->shape);
  return true;
}

namespace {

// "(2, 3)" or "[2, 3]": the first n of v, comma separated, between open and close.
std::string joined(const int64_t* v, int32_t n, const char* open, const char* close) {
  std::string s = open;
  for (int32_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + close;
}

}  // namespace

std::string shape_str(const gn_tensor_meta& m) { return joined(m.shape, std::min(m.ndim, GN_MAX_DIMS), "(", ")"); }

namespace infer_detail {

void fail(int32_t code, std::string msg) { throw InferError{code, std::move(msg)}; }

Dims dims_of(const gn_tensor_meta& m, int lo, int hi) {
  Dims d;
  d.append(m, lo, hi);
  return d;
}

Dims dims_of(const gn_tensor_meta& m) { return dims_of(m, 0, m.ndim); }

Dims dims_of(std::initializer_list<int64_t> sizes) {
  Dims d;
  for (int64_t v : sizes) d.push(v);
  return d;
}

gn_tensor_meta make_meta(int32_t dtype, const Dims& d) {
  if (d.n > GN_MAX_DIMS)
    fail(GN_ERR_SHAPE, "the output would have rank " + std::to_string(d.n) + " but at most " +
                           std::to_string(GN_MAX_DIMS) + " dims are supported");
  gn_tensor_meta m{};
  m.dtype = dtype;
  m.ndim = d.n;
  std::copy(d.d, d.d + d.n, m.shape);
  return m;
}

gn_tensor_meta like(const gn_tensor_meta& m, int32_t dtype) {
  gn_tensor_meta o{};
  o.dtype = dtype;
  o.ndim = m.ndim;
  std::copy(m.shape, m.shape + m.ndim, o.shape);
  return o;
}

int64_t numel(const gn_tensor_meta& m) {
  // Saturates at INT64_MAX instead of overflowing (sizes come from callers).
  int64_t n = 1;
  bool saturated = false;
  for (int32_t i = 0; i < m.ndim; ++i) {
    if (m.shape[i] == 0) return 0;
    if (!saturated && __builtin_mul_overflow(n, m.shape[i], &n)) saturated = true;
  }
  return saturated ? INT64_MAX : n;
}

bool same_shape(const gn_tensor_meta& a, const gn_tensor_meta& b) {
  return a.ndim == b.ndim && std::equal(a.shape, a.shape + a.ndim, b.shape);
}

bool same_shape(const gn_tensor_meta& a, const Dims& d) {
  return a.ndim == d.n && std::equal(a.shape, a.shape + a.ndim, d.d);
}

std::string dims_str(const Dims& d) { return joined(d.d, std::min(d.n, GN_MAX_DIMS), "(", ")"); }

std::string ints_str(std::span<const int64_t> v) { return joined(v.data(), (int32_t)v.size(), "[", "]"); }

const char* dtype_str(int32_t dtype) { return gn_dtype_name(dtype); }

std::string dim_label(int64_t dim) { return dim == GN_DIM_NONE ? "none" : std::to_string(dim); }

int wrap_dim(int64_t dim, int ndim, const char* what) {
  // A 0-d tensor behaves like rank 1 for the range check (torch's rule).
  const int64_t n = ndim > 0 ? ndim : 1;
  if (dim == GN_DIM_NONE || dim < -n || dim >= n)
    fail(GN_ERR_INDEX,
         std::string(what) + " " + dim_label(dim) + " is out of range for a tensor of rank " + std::to_string(ndim));
  const int64_t w = dim < 0 ? dim + n : dim;
  return ndim > 0 ? static_cast<int>(w) : 0;
}

void Args::need_inputs(size_t lo, long hi) const {
  if (n_in < lo || (hi >= 0 && n_in > static_cast<size_t>(hi))) {
    std::string want = hi < 0                          ? "at least " + std::to_string(lo)
                       : lo == static_cast<size_t>(hi) ? std::to_string(lo)
                                                       : std::to_string(lo) + " to " + std::to_string(hi);
    fail(GN_ERR_INVALID_ARGUMENT, "expects " + want + " inputs, got " + std::to_string(n_in));
  }
}

namespace {
const gn_attr_value& attr_checked(const Args& a, size_t i, int32_t kind) {
  static const char* const kKinds[] = {"int", "float", "ints", "str", "device"};
  if (i >= a.n_attrs || a.attrs == nullptr)
    fail(GN_ERR_INVALID_ARGUMENT,
         "attribute " + std::to_string(i) + " is missing (got " + std::to_string(a.n_attrs) + " attributes)");
  const gn_attr_value& v = a.attrs[i];
  if (v.kind != kind) {
    const char* got = v.kind >= 0 && v.kind <= GN_ATTR_DEVICE ? kKinds[v.kind] : "unknown";
    fail(GN_ERR_INVALID_ARGUMENT,
         "attribute " + std::to_string(i) + " should be of kind " + kKinds[kind] + " but is " + got);
  }
  return v;
}
}  // namespace

int64_t Args::attr_int(size_t i) const { return attr_checked(*this, i, GN_ATTR_INT).u.i; }

double Args::attr_float(size_t i) const { return attr_checked(*this, i, GN_ATTR_FLOAT).u.f; }

std::span<const int64_t> Args::attr_ints(size_t i) const {
  const gn_attr_value& v = attr_checked(*this, i, GN_ATTR_INTS);
  if (v.u.ints.size == 0) return {};
  if (v.u.ints.data == nullptr) fail(GN_ERR_INVALID_ARGUMENT, "attribute " + std::to_string(i) + " has no data");
  return {v.u.ints.data, v.u.ints.size};
}

int32_t Args::attr_dtype(size_t i, bool allow_none) const {
  const int64_t v = attr_int(i);
  if (allow_none && v == GN_DIM_NONE) return -1;
  if (!valid_dtype(v))
    fail(GN_ERR_INVALID_ARGUMENT,
         "dtype " + dim_label(v) + " is not a valid dtype (expected 0.." + std::to_string(GN_DTYPE_COUNT - 1) + ")");
  return static_cast<int32_t>(v);
}

void Args::set_n_out(size_t n) const {
  if (n > cap)
    fail(GN_ERR_INVALID_ARGUMENT,
         "produces " + std::to_string(n) + " outputs but only " + std::to_string(cap) + " can be returned");
  r->n_out = n;
}

void Args::set_out(size_t k, const gn_tensor_meta& m) const {
  if (k >= cap)
    fail(GN_ERR_INVALID_ARGUMENT,
         "output " + std::to_string(k) + " exceeds the capacity of " + std::to_string(cap) + " outputs");
  r->out[k] = m;
  r->out[k].flags = 0;
  r->out[k].reserved = 0;
}

void Args::set_outputs(int32_t kernel, std::initializer_list<gn_tensor_meta> outs) const {
  set_n_out(outs.size());
  size_t k = 0;
  for (const gn_tensor_meta& m : outs) set_out(k++, m);
  set_kernel(kernel);
}

gn_status* make_status(const gn_infer_ctx* ctx, int32_t code, const std::string& msg) noexcept {
  const char* op = ctx && ctx->op_name ? ctx->op_name : "?";
  try {
    std::string full = std::string("[") + op + "] " + msg;
    return ctx->host->status_new(code, full.c_str());
  } catch (...) {
    return ctx->host->status_new(code, "[infer] out of memory while formatting an error");
  }
}

gn_status* run_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs,
                     size_t n_attrs, gn_infer_result* result, void (*body)(const Args&)) noexcept {
  try {
    if (result == nullptr || (result->n_out > 0 && result->out == nullptr) ||
        (n_in > 0 && (in == nullptr || result->in_dtypes == nullptr)))
      fail(GN_ERR_INVALID_ARGUMENT, "inference called with missing input or result arrays");
    // Inputs must be well-formed metas; later code indexes shape[] by ndim.
    for (size_t i = 0; i < n_in; ++i) {
      const gn_tensor_meta& m = in[i];
      if (!valid_dtype(m.dtype))
        fail(GN_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + " has invalid dtype " + std::to_string(m.dtype));
      if (m.ndim < 0 || m.ndim > GN_MAX_DIMS)
        fail(GN_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + " has rank " + std::to_string(m.ndim) +
                                          " (at most " + std::to_string(GN_MAX_DIMS) + " supported)");
      for (int32_t d = 0; d < m.ndim; ++d)
        if (m.shape[d] < 0)
          fail(GN_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + " has a negative size: " + shape_str(m));
    }
    Args a{ctx, in, n_in, attrs, n_attrs, result, result->n_out};
    body(a);
    return nullptr;
  } catch (const InferError& e) {
    return make_status(ctx, e.code, e.msg);
  } catch (const std::exception& e) {
    return make_status(ctx, GN_ERR_INTERNAL, std::string("internal error in shape inference: ") + e.what());
  } catch (...) {
    return make_status(ctx, GN_ERR_INTERNAL, "internal error in shape inference");
  }
}

int32_t result_type_of(const Args& a, size_t first, size_t n) {
  const gn_tensor_meta* ptrs[64];
  if (n <= 64) {
    for (size_t i = 0; i < n; ++i) ptrs[i] = &a.in[first + i];
    return result_type(ptrs, n);
  }
  // Many inputs (cat of a long list): a heap array.
  std::vector<const gn_tensor_meta*> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = &a.in[first + i];
  return result_type(v.data(), n);
}

gn_tensor_meta broadcast_or_fail(const gn_tensor_meta& x, const gn_tensor_meta& y) {
  gn_tensor_meta o{};
  if (!broadcast_shapes(x, y, &o))
    fail(GN_ERR_SHAPE, "shapes " + shape_str(x) + " and " + shape_str(y) + " cannot be broadcast");
  return o;
}

std::string num_str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the short form when it round-trips (1e-05 rather than 1.0000000000000001e-05).
  char shortbuf[32];
  std::snprintf(shortbuf, sizeof shortbuf, "%g", v);
  return std::strtod(shortbuf, nullptr) == v ? std::string(shortbuf) : std::string(buf);
}

void need_float(const gn_tensor_meta& m, const char* role) {
  if (!is_float(m.dtype))
    fail(GN_ERR_DTYPE, std::string(role) + " must be a floating-point tensor, got " + dtype_str(m.dtype));
}

}  // namespace infer_detail
}  // namespace genesis::core
