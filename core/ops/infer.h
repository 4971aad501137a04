// core/ops/infer.h - shape/dtype inference of the built-in ops, one function
// per `infer` column of ops.def, plus the shared rules (broadcasting, PyTorch
// type promotion) the dispatcher and the C API use too.
#pragma once

#include <string>

#include "genesis/op.h"

namespace genesis::core {

#define GN_INFER_DECL(fn)                                                                                           \
  gn_status* infer_##fn(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs, \
                        size_t n_attrs, gn_infer_result* result);
GN_INFER_DECL(unary_same)
GN_INFER_DECL(unary_float)
GN_INFER_DECL(unary_bool)
GN_INFER_DECL(unary_same_float)
GN_INFER_DECL(unary_same_any)
GN_INFER_DECL(cast)
GN_INFER_DECL(copy)
GN_INFER_DECL(inplace)
GN_INFER_DECL(binary_arith)
GN_INFER_DECL(binary_div)
GN_INFER_DECL(binary_compare)
GN_INFER_DECL(binary_logical)
GN_INFER_DECL(where)
GN_INFER_DECL(arange)
GN_INFER_DECL(creation)
GN_INFER_DECL(reduce_sum)
GN_INFER_DECL(reduce_float)
GN_INFER_DECL(reduce_same)
GN_INFER_DECL(reduce_arg)
GN_INFER_DECL(softmax)
GN_INFER_DECL(softmax_backward)
GN_INFER_DECL(matmul)
GN_INFER_DECL(bmm)
GN_INFER_DECL(layer_norm)
GN_INFER_DECL(layer_norm_backward)
GN_INFER_DECL(rms_norm)
GN_INFER_DECL(rms_norm_backward)
GN_INFER_DECL(rope)
GN_INFER_DECL(swiglu)
GN_INFER_DECL(swiglu_backward)
GN_INFER_DECL(cross_entropy)
GN_INFER_DECL(cross_entropy_backward)
GN_INFER_DECL(sdpa)
GN_INFER_DECL(sdpa_backward)
GN_INFER_DECL(embedding)
GN_INFER_DECL(embedding_backward)
GN_INFER_DECL(gather)
GN_INFER_DECL(scatter)
GN_INFER_DECL(index_select)
GN_INFER_DECL(index_add)
GN_INFER_DECL(masked_fill)
GN_INFER_DECL(cat)
GN_INFER_DECL(stack)
GN_INFER_DECL(split)
GN_INFER_DECL(topk)
GN_INFER_DECL(sort)
GN_INFER_DECL(one_hot)
GN_INFER_DECL(conv2d)
GN_INFER_DECL(conv2d_backward)
GN_INFER_DECL(pool2d)
GN_INFER_DECL(pool2d_backward)
GN_INFER_DECL(multi_sum_sq)
GN_INFER_DECL(kv_cache_write)
GN_INFER_DECL(add_rms_norm)
GN_INFER_DECL(linear)
GN_INFER_DECL(linear_swiglu)
GN_INFER_DECL(cumulative)
GN_INFER_DECL(cummax)
GN_INFER_DECL(searchsorted)
GN_INFER_DECL(lu_factor)
GN_INFER_DECL(lu_solve)
GN_INFER_DECL(solve_triangular)
GN_INFER_DECL(cholesky)
GN_INFER_DECL(qr)
GN_INFER_DECL(svd)
GN_INFER_DECL(eigh)
GN_INFER_DECL(paged_kv_write)
GN_INFER_DECL(paged_attention)
#undef GN_INFER_DECL

// PyTorch's promote_types for two dtypes (u8+i8 -> i32 since i16 is absent;
// f16+bf16 -> f32).
int32_t promote_types(int32_t a, int32_t b);

// PyTorch's result_type over tensors: dimensioned tensors outrank 0-d tensors,
// which outrank wrapped scalars (GN_META_WRAPPED_SCALAR), within a category
// (bool < integer < float).
int32_t result_type(const gn_tensor_meta* const* metas, size_t n);

// NumPy broadcast of a and b into out; false if incompatible.
bool broadcast_shapes(const gn_tensor_meta& a, const gn_tensor_meta& b, gn_tensor_meta* out);

// "(2, 3)" for messages.
std::string shape_str(const gn_tensor_meta& m);

}  // namespace genesis::core
