// backends/reference/families.h - one registration function per op family,
// the sections of core/ops/ops.def: register_<stem> lives in <stem>.cpp and
// registers that section's kernels for device type "cpu".
#pragma once

#include "genesis/sdk/sdk.h"

namespace gn::reference {

void register_unary(const gn::sdk::Registrar& r);       // neg..isfinite, cast, copy, fill, clamp, expm1
void register_binary(const gn::sdk::Registrar& r);      // add..logical_or, where
void register_creation(const gn::sdk::Registrar& r);    // arange, full, rand, randn, randint, bernoulli
void register_reduce(const gn::sdk::Registrar& r);      // sum..norm
void register_softmax(const gn::sdk::Registrar& r);     // softmax, log_softmax and backward
void register_linalg(const gn::sdk::Registrar& r);      // matmul, bmm
void register_norm(const gn::sdk::Registrar& r);        // layer_norm, rms_norm and backward
void register_rope(const gn::sdk::Registrar& r);        // rope and backward
void register_activation(const gn::sdk::Registrar& r);  // swiglu and backward
void register_loss(const gn::sdk::Registrar& r);        // cross_entropy and backward
void register_attention(const gn::sdk::Registrar& r);   // scaled_dot_product_attention and backward
void register_indexing(const gn::sdk::Registrar& r);    // embedding*, gather, scatter*, index_*, masked_fill, one_hot, scatter_reduce
void register_shape(const gn::sdk::Registrar& r);       // cat, stack, triu, tril (split is a view: no kernel)
void register_sort(const gn::sdk::Registrar& r);        // topk, sort, argsort, searchsorted
void register_conv(const gn::sdk::Registrar& r);        // conv2d and backward
void register_pool(const gn::sdk::Registrar& r);        // max_pool2d, avg_pool2d and backward
void register_optim(const gn::sdk::Registrar& r);       // sgd_step, adamw_step, multi_* helpers
void register_llm(const gn::sdk::Registrar& r);         // kv_cache_write_, add_rms_norm, linear, linear_swiglu
void register_cumulative(const gn::sdk::Registrar& r);     // cumsum, cumprod, logcumsumexp, cummax, cummin
void register_linalg_decomp(const gn::sdk::Registrar& r);  // lu_factor, lu_solve, solve_triangular, cholesky, qr, svd, eigh
void register_paged(const gn::sdk::Registrar& r);           // paged_kv_write_, paged_attention

}  // namespace gn::reference
