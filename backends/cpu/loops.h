// backends/cpu/loops.h - the C++ kernels' loop helpers: element storage types
// per gn_dtype, f16/bf16 conversions, and parallel loops that stay on the
// calling thread for small work (waking a pool thread costs a few us; the
// framework budget is 1 us per op, so small tensors never reach the pool).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "threads.h"

namespace gn::cpu {

// Below this many element-operations a loop runs on the calling thread.
constexpr int64_t kSerialWork = 32768;

// f(i) for i in [0, n); `cost` = element-operations per item.
template <class F>
inline void parallel_for(int64_t n, int64_t cost, F&& f) {
  const int threads = num_threads();
  if (n <= 1 || threads == 1 || n * (cost > 0 ? cost : 1) <= kSerialWork) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  // A few chunks per thread: a thread the OS keeps off a core leaves its share
  // to the others instead of holding the loop up.
  const int64_t chunks = std::min<int64_t>(n, 4 * (int64_t)threads);
  parallel_chunks(chunks, [&](int64_t c) {
    const int64_t end = (c + 1) * n / chunks;
    for (int64_t i = c * n / chunks; i < end; ++i) f(i);
  });
}

// f(begin, end) over [0, n) in chunks (elementwise kernels: the chunk body is
// the vectorised loop).
template <class F>
inline void parallel_range(int64_t n, F&& f) {
  if (n <= kSerialWork) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_chunks(chunks, [&](int64_t c) { f(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// Half-precision storage tags (distinct from uint16_t so templates can tell).
// (widening to double is exact, so templates may read them as numbers)
struct bf16_t {
  uint16_t bits;
  operator double() const { return gn::sdk::bf16_to_float(bits); }
};
struct f16_t {
  uint16_t bits;
  operator double() const { return gn::sdk::half_to_float(bits); }
};

inline float to_f32(bf16_t v) { return gn::sdk::bf16_to_float(v.bits); }
inline float to_f32(f16_t v) { return gn::sdk::half_to_float(v.bits); }

// Element loads/stores through double for the C++ paths: f16/bf16 are widened
// exactly and rounded once on the way back (the SDK's rounding, the
// reference's), f32/f64/integers convert as C++ does.
template <class T>
inline double ld(const T* p) {
  if constexpr (std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>)
    return (double)to_f32(*p);
  else
    return (double)*p;
}
template <class T>
inline void st(T* p, double v) {
  // gn::sdk::store's conversions, without its switch on the dtype (not always inlined)
  if constexpr (std::is_same_v<T, bf16_t>)
    p->bits = gn::sdk::float_to_bf16((float)v);
  else if constexpr (std::is_same_v<T, f16_t>)
    p->bits = gn::sdk::float_to_half((float)v);
  else
    *p = (T)v;
}

// double -> T with the reference's rounding (the cast for f32/f64/ints).
template <class T>
inline T to_t(double v) {
  T r;
  st(&r, v);
  return r;
}

template <int32_t DT>
struct Storage;
template <>
struct Storage<GN_F32> {
  using T = float;
};
template <>
struct Storage<GN_F64> {
  using T = double;
};
template <>
struct Storage<GN_F16> {
  using T = f16_t;
};
template <>
struct Storage<GN_BF16> {
  using T = bf16_t;
};
template <>
struct Storage<GN_I8> {
  using T = int8_t;
};
template <>
struct Storage<GN_U8> {
  using T = uint8_t;
};
template <>
struct Storage<GN_I32> {
  using T = int32_t;
};
template <>
struct Storage<GN_I64> {
  using T = int64_t;
};
template <>
struct Storage<GN_BOOL> {
  using T = uint8_t;
};

// Call f(std::integral_constant<int32_t, DT>) for a runtime dtype; false if unknown.
template <class F>
inline bool dispatch_dtype(int32_t dt, F&& f) {
  switch (dt) {
    case GN_F32: f(std::integral_constant<int32_t, GN_F32>{}); return true;
    case GN_F64: f(std::integral_constant<int32_t, GN_F64>{}); return true;
    case GN_F16: f(std::integral_constant<int32_t, GN_F16>{}); return true;
    case GN_BF16: f(std::integral_constant<int32_t, GN_BF16>{}); return true;
    case GN_I8: f(std::integral_constant<int32_t, GN_I8>{}); return true;
    case GN_U8: f(std::integral_constant<int32_t, GN_U8>{}); return true;
    case GN_I32: f(std::integral_constant<int32_t, GN_I32>{}); return true;
    case GN_I64: f(std::integral_constant<int32_t, GN_I64>{}); return true;
    case GN_BOOL: f(std::integral_constant<int32_t, GN_BOOL>{}); return true;
    default: return false;
  }
}

// f32/f64 only.
template <class F>
inline bool dispatch_float(int32_t dt, F&& f) {
  if (dt == GN_F32) {
    f(float{});
    return true;
  }
  if (dt == GN_F64) {
    f(double{});
    return true;
  }
  return false;
}

constexpr bool is_float_dt(int32_t dt) { return dt == GN_F32 || dt == GN_F64 || dt == GN_F16 || dt == GN_BF16; }

// f32/f64/f16/bf16 (kernels whose element code is written with to_t/ld).
template <class F>
inline bool dispatch_float_h(int32_t dt, F&& f) {
  switch (dt) {
    case GN_F32: f(float{}); return true;
    case GN_F64: f(double{}); return true;
    case GN_F16: f(f16_t{}); return true;
    case GN_BF16: f(bf16_t{}); return true;
    default: return false;
  }
}

// Attribute readers (defaults when absent or of another kind).
inline int64_t attr_i(const gn_attr_value* a, size_t n, size_t i, int64_t d) {
  return i < n && a[i].kind == GN_ATTR_INT ? a[i].u.i : d;
}
inline double attr_d(const gn_attr_value* a, size_t n, size_t i, double d) {
  return i < n && a[i].kind == GN_ATTR_FLOAT ? a[i].u.f : d;
}
inline std::vector<int64_t> attr_v(const gn_attr_value* a, size_t n, size_t i) {
  if (i >= n || a[i].kind != GN_ATTR_INTS || !a[i].u.ints.size || !a[i].u.ints.data) return {};
  return {a[i].u.ints.data, a[i].u.ints.data + a[i].u.ints.size};
}

inline bool is_dense(const gn_tensor_view& v) {
  int64_t s = 1;
  for (int32_t d = v.ndim; d-- > 0;) {
    if (v.shape[d] != 1 && v.strides[d] != s) return false;
    s *= v.shape[d];
  }
  return true;
}

// v's element strides broadcast to an output of rank R and shape `shape`
// (0 where v has size 1 or lacks the dim); false if v does not broadcast.
inline bool bcast_strides(const gn_tensor_view& v, int32_t R, const int64_t* shape, std::vector<int64_t>& st) {
  st.assign((size_t)R, 0);
  if (v.ndim > R) return false;
  for (int32_t d = 0; d < R; ++d) {
    const int32_t vd = d - (R - v.ndim);
    if (vd < 0) continue;
    if (v.shape[vd] != shape[d] && v.shape[vd] != 1) return false;
    if (v.shape[vd] != 1) st[(size_t)d] = v.strides[vd];
  }
  return true;
}

// Offset (elements) of row r (row-major over shape[0..R-2]) under strides st.
inline int64_t row_offset(int64_t r, int32_t R, const int64_t* shape, const int64_t* st) {
  int64_t off = 0;
  for (int32_t d = R - 2; d >= 0; --d) {
    off += (r % shape[d]) * st[d];
    r /= shape[d];
  }
  return off;
}

}  // namespace gn::cpu
