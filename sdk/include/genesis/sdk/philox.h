// genesis/sdk/philox.h - the one definition of Genesis random numbers
// (docs/rng.md).  Every backend uses these functions so one seed gives the
// same numbers on every device.
//
// Element i of a random op called with (seed, offset):
//   counter c = offset + i / 4, ctr = {lo32(c), hi32(c), 0, 0}, key = {lo32(seed), hi32(seed)}
//   word(i)   = Philox4x32-10(ctr, key)[i % 4]
//   rand      : u(i) = (word(i) >> 8) * 2^-24                         in [0, 1)
//               (float16: (word >> 21) * 2^-11, bfloat16: (word >> 24) * 2^-8, so the
//               stored value is exact and never rounds up to 1.0)
//   randn     : c = offset + i/2, words a = 2*(i%2), b = a+1 of that block;
//               u1 = ((w_a >> 8) + 1) * 2^-24, u2 = (w_b >> 8) * 2^-24,
//               z = sqrt(-2 ln u1) * cos(2 pi u2), computed in double
//   randint   : low + ((uint64)word(i) * (high - low)) >> 32           (high-low <= 2^32)
//   bernoulli : u(i) < p(i) ? 1 : 0
// The core advances the generator offset by the output's numel per call.
#pragma once

#include <cmath>
#include <cstdint>

#include "genesis/sdk/convert.h"

namespace gn::sdk {

struct PhiloxBlock {
  uint32_t w[4];
};

// Philox4x32-10 (Salmon et al., SC'11; the constants of Random123 and cuRAND).
GN_HD PhiloxBlock philox4x32_10(uint64_t counter, uint64_t seed) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (uint32_t)p1;
    c2 = n2;
    c3 = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  PhiloxBlock b;
  b.w[0] = c0;
  b.w[1] = c1;
  b.w[2] = c2;
  b.w[3] = c3;
  return b;
}

// Raw 32-bit word for element i.
GN_HD uint32_t philox_word(uint64_t seed, uint64_t offset, int64_t i) {
  return philox4x32_10(offset + (uint64_t)(i >> 2), seed).w[i & 3];
}

// Uniform [0, 1) for element i (24-bit resolution, exact in float32).
GN_HD double philox_uniform(uint64_t seed, uint64_t offset, int64_t i) {
  return (double)(philox_word(seed, offset, i) >> 8) * (1.0 / 16777216.0);
}

// Uniform [0, 1) for element i stored as `dtype`: as many bits as the dtype
// holds exactly, so rounding on store can never produce 1.0.
GN_HD double philox_uniform_for(int32_t dtype, uint64_t seed, uint64_t offset, int64_t i) {
  uint32_t w = philox_word(seed, offset, i);
  if (dtype == GN_F16) return (double)(w >> 21) * (1.0 / 2048.0);
  if (dtype == GN_BF16) return (double)(w >> 24) * (1.0 / 256.0);
  return (double)(w >> 8) * (1.0 / 16777216.0);
}

// Standard normal for element i.
GN_HD double philox_normal(uint64_t seed, uint64_t offset, int64_t i) {
  PhiloxBlock b = philox4x32_10(offset + (uint64_t)(i >> 1), seed);
  int a = (int)(i & 1) * 2;
  double u1 = (double)((b.w[a] >> 8) + 1) * (1.0 / 16777216.0);
  double u2 = (double)(b.w[a + 1] >> 8) * (1.0 / 16777216.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Integer in [low, high) for element i (requires 0 < high-low <= 2^32).
GN_HD int64_t philox_randint(uint64_t seed, uint64_t offset, int64_t i, int64_t low, int64_t high) {
  uint64_t range = (uint64_t)(high - low);
  return low + (int64_t)(((uint64_t)philox_word(seed, offset, i) * range) >> 32);
}

}  // namespace gn::sdk
