// backends/reference/families.h - one registration function per op family;
// each lives in <family>.cpp and registers its kernels for device type "cpu".
#pragma once

#include "genesis/sdk/sdk.h"

namespace ref {

void register_unary(const gn::sdk::Registrar& r);      // unary.cpp: neg..isfinite, cast, copy, fill, clamp
void register_binary(const gn::sdk::Registrar& r);     // binary.cpp: add..logical_or, where
void register_creation(const gn::sdk::Registrar& r);   // creation.cpp: arange, full, rand, randn, randint, bernoulli
void register_reduce(const gn::sdk::Registrar& r);     // reduce.cpp: sum..norm
void register_softmax(const gn::sdk::Registrar& r);    // softmax.cpp: softmax, log_softmax and backward
void register_indexing(const gn::sdk::Registrar& r);  // indexing.cpp: embedding*, gather, scatter*, index_*, masked_fill, cat, stack, triu, tril, one_hot
void register_sort(const gn::sdk::Registrar& r);       // sort.cpp: topk, sort, argsort
void register_linalg(const gn::sdk::Registrar& r);     // linalg.cpp: matmul, bmm
void register_norm(const gn::sdk::Registrar& r);       // norm.cpp: layer_norm, rms_norm and backward
void register_activation(const gn::sdk::Registrar& r); // activation.cpp: rope, swiglu and backward
void register_loss(const gn::sdk::Registrar& r);       // loss.cpp: cross_entropy and backward
void register_attention(const gn::sdk::Registrar& r);  // attention.cpp: scaled_dot_product_attention and backward
void register_conv(const gn::sdk::Registrar& r);       // conv.cpp: conv2d, pooling and backward
void register_optim(const gn::sdk::Registrar& r);      // optim.cpp: sgd_step, adamw_step, multi_* helpers
void register_llm(const gn::sdk::Registrar& r);        // llm.cpp: kv_cache_write_, add_rms_norm, linear, linear_swiglu

}  // namespace ref
