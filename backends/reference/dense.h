// backends/reference/dense.h - helpers of the reference kernels in linalg,
// norm, rope, activation, loss, attention, conv, pool, optim and llm: move
// strided views of any dtype to and from dense row-major std::vector<double>
// (llm.c style: load, compute in double, store), read attributes, check shapes.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "genesis/sdk/sdk.h"

namespace gn::reference::dense {

using Vec = std::vector<double>;
using Shape = std::vector<int64_t>;

// ---------------------------------------------------------------- shapes

inline Shape shape_of(const gn_tensor_view& v) { return Shape(v.shape, v.shape + v.ndim); }

inline int64_t numel(const gn_tensor_view& v) { return gn_view_numel(&v); }

inline int64_t prod(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t n = 1;
  for (size_t i = from; i < s.size() && i < to; ++i) n *= s[i];
  return n;
}

inline std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// Fail with GN_ERR_SHAPE unless v has exactly `want`.
inline void expect_shape(const char* op, const char* what, const gn_tensor_view& v, const Shape& want) {
  if (shape_of(v) != want)
    gn::sdk::fail(GN_ERR_SHAPE, std::string("[") + op + "] " + what + " has shape " + shape_str(shape_of(v)) +
                                    ", expected " + shape_str(want));
}

inline void expect_ndim(const char* op, const char* what, const gn_tensor_view& v, int32_t nd) {
  if (v.ndim != nd)
    gn::sdk::fail(GN_ERR_SHAPE, std::string("[") + op + "] " + what + " must be " + std::to_string(nd) + "-D, got " +
                                    shape_str(shape_of(v)));
}

inline void expect_numel(const char* op, const char* what, const gn_tensor_view& v, int64_t n) {
  if (numel(v) != n)
    gn::sdk::fail(GN_ERR_SHAPE, std::string("[") + op + "] " + what + " has " + std::to_string(numel(v)) +
                                    " elements, expected " + std::to_string(n));
}

inline void expect_float(const char* op, const char* what, const gn_tensor_view& v) {
  if (!gn_dtype_is_float(v.dtype))
    gn::sdk::fail(GN_ERR_DTYPE,
                  std::string("[") + op + "] " + what + " must be floating point, got " + gn_dtype_name(v.dtype));
}

inline void expect_io(const char* op, size_t n_in, size_t min_in, size_t n_out, size_t min_out) {
  if (n_in < min_in || n_out < min_out)
    gn::sdk::fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] needs " + std::to_string(min_in) +
                                               " inputs and " + std::to_string(min_out) + " outputs");
}

// ---------------------------------------------------------------- load / store

// All elements of v in row-major order, converted to double.
inline Vec load_all(const gn_tensor_view& v) {
  int64_t n = numel(v);
  Vec r((size_t)n);
  if (n == 0) return r;
  std::vector<int64_t> idx((size_t)v.ndim, 0);
  for (int64_t i = 0; i < n; ++i) {
    r[(size_t)i] = gn::sdk::load(gn::sdk::elem_ptr_at(v, idx.data()), v.dtype);
    gn::sdk::next_index(idx.data(), v.shape, v.ndim);
  }
  return r;
}

// All elements of an integer view in row-major order (exact).
inline std::vector<int64_t> load_ints(const gn_tensor_view& v) {
  int64_t n = numel(v);
  std::vector<int64_t> r((size_t)n);
  if (n == 0) return r;
  std::vector<int64_t> idx((size_t)v.ndim, 0);
  for (int64_t i = 0; i < n; ++i) {
    r[(size_t)i] = gn::sdk::load_int(gn::sdk::elem_ptr_at(v, idx.data()), v.dtype);
    gn::sdk::next_index(idx.data(), v.shape, v.ndim);
  }
  return r;
}

// v broadcast (NumPy, right-aligned) to `shape`, row-major; fails when it cannot be.
inline Vec load_broadcast(const char* op, const char* what, const gn_tensor_view& v, const Shape& shape) {
  int32_t nd = (int32_t)shape.size();
  bool ok = v.ndim <= nd;
  for (int32_t d = 0; ok && d < v.ndim; ++d) {
    int64_t s = v.shape[d], t = shape[(size_t)(d + nd - v.ndim)];
    ok = s == t || s == 1;
  }
  if (!ok)
    gn::sdk::fail(GN_ERR_SHAPE, std::string("[") + op + "] " + what + " of shape " + shape_str(shape_of(v)) +
                                    " does not broadcast to " + shape_str(shape));
  std::vector<int64_t> st((size_t)nd + 1, 0), idx((size_t)nd + 1, 0);
  gn::sdk::broadcast_strides(v, nd, shape.data(), st.data());
  int64_t n = prod(shape);
  Vec r((size_t)n);
  const char* base = (const char*)v.data + v.byte_offset;
  int64_t es = (int64_t)gn_dtype_size(v.dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int32_t d = 0; d < nd; ++d) off += idx[(size_t)d] * st[(size_t)d];
    r[(size_t)i] = gn::sdk::load(base + off * es, v.dtype);
    gn::sdk::next_index(idx.data(), shape.data(), nd);
  }
  return r;
}

// Write data (row-major, numel(v) entries) into v, converting to v's dtype.
inline void store_all(const gn_tensor_view& v, const Vec& data) {
  int64_t n = numel(v);
  if ((int64_t)data.size() != n)
    gn::sdk::fail(GN_ERR_INTERNAL,
                  "store_all: " + std::to_string(data.size()) + " values for " + std::to_string(n) + " elements");
  if (n == 0) return;
  std::vector<int64_t> idx((size_t)v.ndim, 0);
  for (int64_t i = 0; i < n; ++i) {
    gn::sdk::store(gn::sdk::elem_ptr_at(v, idx.data()), v.dtype, data[(size_t)i]);
    gn::sdk::next_index(idx.data(), v.shape, v.ndim);
  }
}

// ---------------------------------------------------------------- attributes

inline const gn_attr_value& attr(const char* op, const gn_attr_value* attrs, size_t n_attrs, size_t i, int32_t kind) {
  if (i >= n_attrs || attrs[i].kind != kind)
    gn::sdk::fail(GN_ERR_INVALID_ARGUMENT,
                  std::string("[") + op + "] attribute " + std::to_string(i) + " missing or of the wrong kind");
  return attrs[i];
}
inline int64_t attr_int(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr(op, a, n, i, GN_ATTR_INT).u.i;
}
inline double attr_float(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr(op, a, n, i, GN_ATTR_FLOAT).u.f;
}
inline Shape attr_ints(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  const gn_attr_value& v = attr(op, a, n, i, GN_ATTR_INTS);
  if (v.u.ints.size && !v.u.ints.data)
    gn::sdk::fail(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] attribute " + std::to_string(i) + " has no data");
  return Shape(v.u.ints.data, v.u.ints.data + v.u.ints.size);
}

// An (h, w) pair from an ints attribute of length 1 (both dims) or 2; an
// empty list gives `fallback` (pooling's stride [] = kernel).
struct Pair {
  int64_t h = 0, w = 0;
};
inline Pair attr_pair(const char* op, const char* name, const gn_attr_value* a, size_t n, size_t i,
                      Pair fallback = {-1, -1}) {
  Shape v = attr_ints(op, a, n, i);
  if (v.empty() && fallback.h >= 0) return fallback;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  gn::sdk::fail(GN_ERR_INVALID_ARGUMENT,
                std::string("[") + op + "] " + name + " must have 1 or 2 values, got " + std::to_string(v.size()));
}

// The float dtypes every family here registers.
inline constexpr int32_t kFloatDtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16};

}  // namespace gn::reference::dense
