// backends/cuda/ops/matmul.cuh - the matmul path of linalg.cu (cuBLASLt, the
// few-rows gemv, the fallback kernel), shared with linear and linear_swiglu
// (llm.cu).  Instantiated in linalg.cu for the float dtypes.
#pragma once

#include "common.cuh"

namespace gn::cuda::matmul {

// One matrix (rows x cols) with element strides, plus its collapsed batch.
struct Mat {
  int64_t rows = 1, cols = 1, rs = 0, cs = 0;
  char* base = nullptr;
  // batch dims right-aligned to the output batch (stride 0 = broadcast)
  int64_t bstride[GN_MAX_DIMS] = {};
};

struct Batch {  // output batch shape and per-operand strides (elements)
  int nb = 0;
  int64_t shape[GN_MAX_DIMS] = {};
  int64_t sa[GN_MAX_DIMS] = {}, sb[GN_MAX_DIMS] = {}, so[GN_MAX_DIMS] = {};
};

// The few-rows path (kernels/gemv.cuh) when the operands allow it, else false
// (bias: added in the epilogue; swiglu: b holds the gate and up halves, out
// gets silu(gate) * up).  T = __half, __nv_bfloat16.
template <class T>
bool try_gemv(const gn_kernel_ctx* ctx, const Mat& a, const Mat& b, T* o, const Batch& bt, int64_t nbatch, int64_t M,
              int64_t N, int64_t K, int64_t ors, int64_t ocs, const T* bias, bool swiglu = false);

// ov = op(av) @ op(bv) (torch.matmul semantics, ta/tb transpose the last two
// dims), any strides; with bias the few-rows path adds it in its epilogue and
// sets *bias_done.  T = float, __half, __nv_bfloat16, double.
template <class T>
void matmul_typed(const char* op, const gn_kernel_ctx* ctx, const gn_tensor_view& av, const gn_tensor_view& bv,
                  const gn_tensor_view& ov, bool ta, bool tb, const T* bias = nullptr, bool* bias_done = nullptr);

}  // namespace gn::cuda::matmul
