// backends/cpu/ops/simd/data_movement.h - small helpers of the data-movement
// kernels (simd/indexing.cpp, simd/shape.cpp, simd/creation.cpp): dims of a
// view, products of dims, dim attributes, one element copied by its size.
#pragma once

#include <cstdint>
#include <vector>

#include "loops.h"

namespace gn::cpu::simd {

using Dims = std::vector<int64_t>;

inline Dims dims_of(const gn_tensor_view& v) { return {v.shape, v.shape + v.ndim}; }

inline int64_t prod(const Dims& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= d[i];
  return p;
}

// dim attribute wrapped into [0, ndim); -1 when out of range.
inline int32_t wrap_dim(int64_t d, int32_t ndim) {
  if (d < 0) d += ndim;
  return d >= 0 && d < ndim ? (int32_t)d : -1;
}

// Copy one element of es bytes.
inline void copy_elem(char* d, const char* s, size_t es) {
  switch (es) {
    case 1: *d = *s; break;
    case 2: copy_bytes(d, s, 2); break;
    case 4: copy_bytes(d, s, 4); break;
    default: copy_bytes(d, s, 8); break;
  }
}

}  // namespace gn::cpu::simd
