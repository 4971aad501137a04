// backends/cpu/ops/simd/norm.h - the rms_norm row of simd/norm.cpp, shared
// with add_rms_norm (simd/llm.cpp) so that add_rms_norm's y equals rms_norm of
// its h bit for bit.
#pragma once

#include "loops.h"

namespace gn::cpu::simd {

// x (N), w (N) or nullptr -> y (N) = x * s * w in T (computed in double, one
// rounding); returns s = 1/sqrt(mean(x^2) + eps).  Instantiated for float,
// double, f16_t and bf16_t in norm.cpp.
template <class T>
double rms_norm_row(const T* xr, const T* w, T* yr, int64_t N, double eps);

}  // namespace gn::cpu::simd
