// genesis/sdk/convert.h - scalar conversions for every gn_dtype: f16/bf16
// bit conversions (round to nearest even) and load/store through double.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "genesis/dtype.h"

#if defined(__CUDACC__)
#define GN_HD __host__ __device__ __forceinline__
#else
#define GN_HD inline
#endif

namespace gn::sdk {

// 2^63 as a double: the bound of the int64 range (INT64_MAX rounds up to it),
// used by every float -> int64 conversion and saturation.
inline constexpr double kInt64Bound = 9.2233720368547758e18;

GN_HD float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
GN_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

// bfloat16 <-> float (round to nearest even; NaN stays NaN).
GN_HD float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }
GN_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE half <-> float (round to nearest even; handles subnormals, inf, NaN).
GN_HD float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400u));
      u = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  return bits_to_float(u);
}
GN_HD uint16_t float_to_half(float f) {
  uint32_t u = float_to_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (absu >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow (>= 65520) -> inf
  if (absu < 0x38800000u) {                                  // subnormal or zero in half
    if (absu < 0x33000000u) return uint16_t(sign);           // < 2^-25 rounds to 0
    uint32_t e = absu >> 23, man = (absu & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14..24
    uint32_t half_man = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_man & 1u))) ++half_man;
    return uint16_t(sign | half_man);
  }
  uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u);  // round mantissa to 10 bits
  return uint16_t(sign | ((r - 0x38000000u) >> 13));
}

// Read element at p (of dtype) as double.
GN_HD double load(const void* p, int32_t dtype) {
  switch (dtype) {
    case GN_F32: return *(const float*)p;
    case GN_F64: return *(const double*)p;
    case GN_F16: return half_to_float(*(const uint16_t*)p);
    case GN_BF16: return bf16_to_float(*(const uint16_t*)p);
    case GN_I8: return *(const int8_t*)p;
    case GN_U8: return *(const uint8_t*)p;
    case GN_I32: return *(const int32_t*)p;
    case GN_I64: return (double)*(const int64_t*)p;
    case GN_BOOL: return *(const uint8_t*)p ? 1.0 : 0.0;
    default: return 0.0;
  }
}

// Read an integer element exactly (int64 beyond 2^53 stays exact).
GN_HD int64_t load_int(const void* p, int32_t dtype) {
  switch (dtype) {
    case GN_I64: return *(const int64_t*)p;
    case GN_I32: return *(const int32_t*)p;
    case GN_I8: return *(const int8_t*)p;
    case GN_U8:
    case GN_BOOL: return *(const uint8_t*)p;
    default: return (int64_t)load(p, dtype);
  }
}

// Saturating-free float->int as C++/PyTorch do (truncation toward zero);
// NaN/out-of-range give an unspecified but defined value (0 here).
GN_HD int64_t to_int64(double v) {
  if (!(v == v) || v >= kInt64Bound || v < -kInt64Bound) return 0;
  return (int64_t)v;
}

// Store v converted to dtype at p (float->int truncates, ->bool is v != 0).
GN_HD void store(void* p, int32_t dtype, double v) {
  switch (dtype) {
    case GN_F32: *(float*)p = (float)v; break;
    case GN_F64: *(double*)p = v; break;
    case GN_F16: *(uint16_t*)p = float_to_half((float)v); break;
    case GN_BF16: *(uint16_t*)p = float_to_bf16((float)v); break;
    case GN_I8: *(int8_t*)p = (int8_t)to_int64(v); break;
    case GN_U8: *(uint8_t*)p = (uint8_t)to_int64(v); break;
    case GN_I32: *(int32_t*)p = (int32_t)to_int64(v); break;
    case GN_I64: *(int64_t*)p = to_int64(v); break;
    case GN_BOOL: *(uint8_t*)p = (v != 0.0) ? 1 : 0; break;
    default: break;
  }
}

// Store an integer exactly.
GN_HD void store_int(void* p, int32_t dtype, int64_t v) {
  switch (dtype) {
    case GN_I64: *(int64_t*)p = v; break;
    case GN_I32: *(int32_t*)p = (int32_t)v; break;
    case GN_I8: *(int8_t*)p = (int8_t)v; break;
    case GN_U8: *(uint8_t*)p = (uint8_t)v; break;
    case GN_BOOL: *(uint8_t*)p = v != 0; break;
    default: store(p, dtype, (double)v); break;
  }
}

}  // namespace gn::sdk
