// backends/cpu/tiers.h - the kernel tiers of the cpu backend: one folder and
// one namespace per tier, tried in this order for an (op, dtype) (plugin.cpp,
// kTiers):
//   ops/onednn/   gn::cpu::onednn    oneDNN primitives (with their own C++
//                                    fallbacks for what oneDNN refuses)
//   ops/simd/     gn::cpu::simd      OpenMP C++ loops, vectorised for f32/f64
//   ops/generic/  gn::cpu::generic   every other dtype and layout, with the
//                                    reference's formulas (bit-identical)
// Each tier's op files are named after the sections of core/ops/ops.def:
// ops/<tier>/<stem>.cpp defines <tier>::register_<stem>, which registers that
// tier's kernels of the section's ops.
#pragma once

#include <cstdint>

#include "genesis/sdk/sdk.h"

namespace gn::cpu {

// Whether a family registered before this call already has a "cpu" kernel for (op, dtype).
bool tier_serves(const char* op, int32_t dtype);

namespace onednn {
void register_unary(const gn::sdk::Registrar& r);
void register_binary(const gn::sdk::Registrar& r);
void register_softmax(const gn::sdk::Registrar& r);
void register_linalg(const gn::sdk::Registrar& r);
void register_norm(const gn::sdk::Registrar& r);
void register_conv(const gn::sdk::Registrar& r);
void register_llm(const gn::sdk::Registrar& r);
}  // namespace onednn

namespace simd {
void register_unary(const gn::sdk::Registrar& r);
void register_binary(const gn::sdk::Registrar& r);
void register_creation(const gn::sdk::Registrar& r);
void register_reduce(const gn::sdk::Registrar& r);
void register_norm(const gn::sdk::Registrar& r);
void register_rope(const gn::sdk::Registrar& r);
void register_activation(const gn::sdk::Registrar& r);
void register_loss(const gn::sdk::Registrar& r);
void register_attention(const gn::sdk::Registrar& r);
void register_indexing(const gn::sdk::Registrar& r);
void register_shape(const gn::sdk::Registrar& r);
void register_sort(const gn::sdk::Registrar& r);
void register_pool(const gn::sdk::Registrar& r);
void register_optim(const gn::sdk::Registrar& r);
void register_llm(const gn::sdk::Registrar& r);
void register_cumulative(const gn::sdk::Registrar& r);
void register_linalg_decomp(const gn::sdk::Registrar& r);
void register_paged(const gn::sdk::Registrar& r);
}  // namespace simd

namespace generic {
// Registered last: each takes the (op, dtype) pairs no faster tier serves.
void register_unary(const gn::sdk::Registrar& r);
void register_binary(const gn::sdk::Registrar& r);

// The generic elementwise unary path (generic/unary.cpp): any dtypes, the
// reference's formulas in double; GN_ERR_UNSUPPORTED for ops it does not know.
// The faster tiers' unary kernels hand it the calls they decline.
void unary(const char* name, const gn_tensor_view& x, const gn_tensor_view& y, const gn_attr_value* attrs,
           size_t n_attrs);
// The generic binary path (generic/binary.cpp): any dtypes and strides, the
// reference's arithmetic; GN_ERR_UNSUPPORTED for ops it does not know.
void binary(const char* name, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& o,
            const gn_attr_value* attrs, size_t n_attrs);
}  // namespace generic

}  // namespace gn::cpu
