// genesis/sdk/iter.h - walking strided views in row-major order.
#pragma once

#include <cstdint>

#include "genesis/view.h"

namespace gn::sdk {

// Byte address of the element with row-major linear index `linear` in v.
inline char* elem_ptr(const gn_tensor_view& v, int64_t linear) {
  int64_t off = 0;
  for (int32_t d = v.ndim - 1; d >= 0; --d) {
    int64_t s = v.shape[d];
    int64_t i = linear % s;
    linear /= s;
    off += i * v.strides[d];
  }
  return (char*)v.data + v.byte_offset + off * (int64_t)gn_dtype_size(v.dtype);
}

// Byte address of the element at multi-index idx (ndim entries).
inline char* elem_ptr_at(const gn_tensor_view& v, const int64_t* idx) {
  int64_t off = 0;
  for (int32_t d = 0; d < v.ndim; ++d) off += idx[d] * v.strides[d];
  return (char*)v.data + v.byte_offset + off * (int64_t)gn_dtype_size(v.dtype);
}

// Increment a row-major multi-index over `shape`; false after the last one.
inline bool next_index(int64_t* idx, const int64_t* shape, int32_t ndim) {
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Strides of `v` broadcast to an output of rank `ndim` and `shape` (right-
// aligned; size-1 or missing dims get stride 0).  out_strides has ndim entries.
inline void broadcast_strides(const gn_tensor_view& v, int32_t ndim, const int64_t* shape, int64_t* out_strides) {
  for (int32_t d = 0; d < ndim; ++d) {
    int32_t vd = d - (ndim - v.ndim);
    out_strides[d] = (vd < 0 || v.shape[vd] == 1) ? 0 : v.strides[vd];
    (void)shape;
  }
}

// Normalise a possibly negative dim against rank ndim (no range check).
inline int32_t wrap_dim(int64_t dim, int32_t ndim) { return (int32_t)(dim < 0 ? dim + ndim : dim); }

}  // namespace gn::sdk
