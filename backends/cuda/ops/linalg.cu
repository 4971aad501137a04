// backends/cuda/ops/linalg.cu - matmul (torch.matmul semantics) and bmm
// through cuBLASLt.  The same path (matmul.cuh) serves linear (x @ W^T + bias)
// and linear_swiglu (a SwiGLU MLP's gate/up projection and activation) in
// llm.cu.
//
// out (batch..., M, N) = a (batch..., M, K) @ b (batch..., K, N); a 1-D a is
// (1, K) and its M dim is absent from out, a 1-D b is (K, 1); batch dims
// broadcast; trans_a / trans_b swap the last two dims (two strides swap, no
// data moves).  Dtypes:
//   bf16, f16: 16-bit operands, f32 accumulation (CUBLAS_COMPUTE_32F);
//   f32: exact f32 (TF32 off) unless GENESIS_ALLOW_TF32=1 in the environment;
//   f64: CUBLAS_COMPUTE_64F;  i32/i64 (and anything cuBLASLt refuses): a plain
//   kernel accumulating in f64 / wrapping int64 like torch.
// Layout mapping (row-major tensors, column-major cuBLAS): every matrix with a
// unit stride on either axis maps to a cuBLASLt layout plus an op (N or T);
// a row-major C (unit column stride) is computed as C^T = B^T A^T.  Operands
// with no unit stride are first packed densely into workspace; so is an output
// with no unit stride (computed in workspace, then scattered).  Batch dims are
// collapsed where their strides allow, broadcast ones get batch stride 0, and a
// batch that only `a` has (weights shared) folds into M: one large GEMM.
// Plans (descriptors, layouts, heuristic algorithm) are cached per shape,
// strides, alignment and device.  Workspace comes from the kernel context.
// Few rows against a row-major weight (bf16/f16 decode: a (..., K) with at
// most 4 rows in all, b (N, K) with trans_b or any b whose K dim is
// contiguous, b shared over the batch, 16-byte aligned rows, K % 8 == 0,
// out rows contiguous) skip cuBLASLt for kernels/gemv.cuh, a weight-streaming
// kernel that beats cuBLASLt's few-row choices on decode (backends/cuda/README.md;
// GENESIS_NO_GEMV=1 in the environment turns it off, for comparisons).
#include <cublasLt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "common.cuh"
#include "kernels/gemv.cuh"
#include "matmul.cuh"

namespace gn::cuda {
namespace {

using matmul::Batch;
using matmul::Mat;

constexpr size_t kLtWorkspace = 32u << 20;  // cuBLASLt's recommendation for Hopper

[[noreturn]] void lt_fail(cublasStatus_t st, const char* what) {
  fail(st == CUBLAS_STATUS_ALLOC_FAILED ? GN_ERR_OUT_OF_MEMORY : GN_ERR_DEVICE,
       std::string("[matmul] cuBLASLt ") + what + " failed (status " + std::to_string((int)st) + ")");
}
#define LT_CHECK(expr)                                     \
  do {                                                     \
    cublasStatus_t st_ = (expr);                           \
    if (st_ != CUBLAS_STATUS_SUCCESS) lt_fail(st_, #expr); \
  } while (0)

// ----------------------------------------------------------------------------
// operand description (Mat: matmul.cuh)

// A cuBLASLt operand: stored (col-major) rows x cols with leading dim ld, op.
struct LtOperand {
  uint64_t rows, cols;
  int64_t ld;
  cublasOperation_t op;
};

// X logical (R x C, strides rs, cs) as a column-major cuBLAS operand, or false.
bool as_lt(int64_t R, int64_t C, int64_t rs, int64_t cs, LtOperand& o) {
  const bool unit_r = rs == 1 || R == 1, unit_c = cs == 1 || C == 1;
  if (unit_r && (cs >= R || C == 1)) {
    o = {(uint64_t)R, (uint64_t)C, std::max<int64_t>(C == 1 ? R : cs, R), CUBLAS_OP_N};
    return true;
  }
  if (unit_c && (rs >= C || R == 1)) {
    o = {(uint64_t)C, (uint64_t)R, std::max<int64_t>(R == 1 ? C : rs, C), CUBLAS_OP_T};
    return true;
  }
  return false;
}

int align_of(const void* p, int64_t stride_bytes) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p) | (uintptr_t)stride_bytes;
  int al = 16;
  while (al > 1 && (a & (al - 1))) al >>= 1;
  return al;
}

// ----------------------------------------------------------------------------
// plain kernels: strided pack / scatter and the fallback GEMM (Batch: matmul.cuh)

__device__ __forceinline__ void batch_offsets(const Batch& b, int64_t i, int64_t& oa, int64_t& ob, int64_t& oo) {
  oa = ob = oo = 0;
  for (int d = b.nb - 1; d >= 0; --d) {
    const int64_t k = i % b.shape[d];
    i /= b.shape[d];
    oa += k * b.sa[d];
    ob += k * b.sb[d];
    oo += k * b.so[d];
  }
}

// out[b][m][n] = sum_k a[b][m][k] * b[b][k][n]; one thread per output element.
// Integer accumulation wraps in uint64 like torch; floats accumulate in double.
template <class T>
__global__ void gemm_naive(const T* a, const T* bm, T* o, Batch bt, int64_t nbatch, int64_t M, int64_t N, int64_t K,
                           int64_t ars, int64_t acs, int64_t brs, int64_t bcs, int64_t ors, int64_t ocs) {
  const int64_t total = nbatch * M * N;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t n = i % N, m = (i / N) % M, bi = i / (M * N);
    int64_t oa, ob, oo;
    batch_offsets(bt, bi, oa, ob, oo);
    const T* pa = a + oa + m * ars;
    const T* pb = bm + ob + n * bcs;
    if constexpr (std::is_integral_v<T>) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (uint64_t)(int64_t)pa[k * acs] * (uint64_t)(int64_t)pb[k * brs];
      o[oo + m * ors + n * ocs] = (T)(int64_t)acc;
    } else {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += convert<double>(pa[k * acs]) * convert<double>(pb[k * brs]);
      o[oo + m * ors + n * ocs] = convert<T>(acc);
    }
  }
}

// dst (nbatch, R, C) dense  <->  src strided (batch per `which` of bt, rows rs, cols cs).
// to_dense: dst dense = src strided; else dst strided = src dense.
template <class T>
__global__ void pack_kernel(const T* src, T* dst, Batch bt, int which, int64_t nbatch, int64_t R, int64_t C, int64_t rs,
                            int64_t cs, bool to_dense) {
  const int64_t total = nbatch * R * C;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % C, r = (i / C) % R, bi = i / (R * C);
    int64_t oa, ob, oo;
    batch_offsets(bt, bi, oa, ob, oo);
    const int64_t off = (which == 0 ? oa : which == 1 ? ob : oo) + r * rs + c * cs;
    if (to_dense)
      dst[i] = src[off];
    else
      dst[off] = src[i];
  }
}

template <class T>
__global__ void zero_kernel(T* o, Batch bt, int64_t nbatch, int64_t M, int64_t N, int64_t ors, int64_t ocs) {
  const int64_t total = nbatch * M * N;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t n = i % N, m = (i / N) % M, bi = i / (M * N);
    int64_t oa, ob, oo;
    batch_offsets(bt, bi, oa, ob, oo);
    o[oo + m * ors + n * ocs] = convert<T>(0.0f);
  }
}

// ----------------------------------------------------------------------------
// cuBLASLt plans

struct PlanKey {
  int device, dtype, compute;
  uint64_t m, n, k, r1, c1, r2, c2;
  int64_t ld1, ld2, ldc, batch, bs1, bs2, bsc;
  int op1, op2, al1, al2, alc;
  size_t ws;
  auto tie() const {
    return std::tie(device, dtype, compute, m, n, k, r1, c1, r2, c2, ld1, ld2, ldc, batch, bs1, bs2, bsc, op1, op2, al1,
                    al2, alc, ws);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t l1 = nullptr, l2 = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;  // false: no algorithm, use the fallback kernel
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (l1) cublasLtMatrixLayoutDestroy(l1);
    if (l2) cublasLtMatrixLayoutDestroy(l2);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
  }
};

struct LtState {
  std::mutex mu;
  std::map<int, cublasLtHandle_t> handles;  // per device
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
};
LtState& lt_state() {
  static LtState* s = new LtState();  // never destroyed: may outlive the CUDA context at exit
  return *s;
}

bool allow_tf32() {
  static const bool v = [] {
    const char* e = std::getenv("GENESIS_ALLOW_TF32");
    return e && e[0] == '1';
  }();
  return v;
}

cudaDataType_t cuda_type(int32_t dt) {
  switch (dt) {
    case GN_F32: return CUDA_R_32F;
    case GN_F16: return CUDA_R_16F;
    case GN_BF16: return CUDA_R_16BF;
    default: return CUDA_R_64F;
  }
}

// Plan for D (col-major m x n) = op1(X1) op2(X2), batched with strides.
Plan* get_plan(const PlanKey& key) {
  LtState& s = lt_state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.plans.find(key);
  if (it != s.plans.end()) return it->second.get();
  cublasLtHandle_t& h = s.handles[key.device];
  if (!h) LT_CHECK(cublasLtCreate(&h));
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = cuda_type(key.dtype);
  const cudaDataType_t scale_t = key.dtype == GN_F64 ? CUDA_R_64F : CUDA_R_32F;
  LT_CHECK(cublasLtMatmulDescCreate(&p->desc, (cublasComputeType_t)key.compute, scale_t));
  cublasOperation_t o1 = (cublasOperation_t)key.op1, o2 = (cublasOperation_t)key.op2;
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &o1, sizeof(o1)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &o2, sizeof(o2)));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->l1, t, key.r1, key.c1, key.ld1));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->l2, t, key.r2, key.c2, key.ld2));
  LT_CHECK(cublasLtMatrixLayoutCreate(&p->lc, t, key.m, key.n, key.ldc));
  if (key.batch > 1) {
    int32_t bc = (int32_t)key.batch;
    for (auto [l, bs] : {std::pair{p->l1, key.bs1}, std::pair{p->l2, key.bs2}, std::pair{p->lc, key.bsc}}) {
      LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
      int64_t st = bs;
      LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof(st)));
    }
  }
  cublasLtMatmulPreference_t pref;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = key.ws;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  uint32_t a1 = key.al1, a2 = key.al2, ac = key.alc;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a1, sizeof(a1));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &a2, sizeof(a2));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof(ac));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof(ac));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, p->desc, p->l1, p->l2, p->lc, p->lc, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p->ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (p->ok) p->algo = res.algo;
  Plan* raw = p.get();
  s.plans.emplace(key, std::move(p));
  return raw;
}

cublasLtHandle_t handle_of(int device) {
  LtState& s = lt_state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.handles[device];
}

// ----------------------------------------------------------------------------
// the op

void* try_workspace(const gn_kernel_ctx* ctx, size_t bytes) {
  return ctx->workspace && bytes ? ctx->workspace(ctx, bytes) : nullptr;
}

template <class T>
void launch_naive(const gn_kernel_ctx* ctx, const Mat& a, const Mat& b, T* o, const Batch& bt, int64_t nbatch,
                  int64_t M, int64_t N, int64_t K, int64_t ors, int64_t ocs) {
  const int64_t total = nbatch * M * N;
  gemm_naive<T><<<std::min<unsigned>(blocks_for(total), 65535u), kThreads, 0, stream(ctx)>>>(
      reinterpret_cast<const T*>(a.base), reinterpret_cast<const T*>(b.base), o, bt, nbatch, M, N, K, a.rs, a.cs, b.rs,
      b.cs, ors, ocs);
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace matmul {

// The few-rows path (kernels/gemv.cuh) when the operands allow it, else
// false.  Rows of x and out are listed one by one (batch offsets resolved
// here), so any batch layout, a strided-row view and trans_a all qualify as
// long as each row of a is contiguous along K and 16-byte aligned.
template <class T>
bool try_gemv(const gn_kernel_ctx* ctx, const Mat& a, const Mat& b, T* o, const Batch& bt, int64_t nbatch, int64_t M,
              int64_t N, int64_t K, int64_t ors, int64_t ocs, const T* bias, bool swiglu) {
  static const bool off = [] {  // GENESIS_NO_GEMV=1: cuBLASLt for these too (comparisons)
    const char* e = std::getenv("GENESIS_NO_GEMV");
    return e && e[0] == '1';
  }();
  const int64_t R = nbatch * M;
  if (off || R > kGemvMaxRows || K % kGemvVec != 0) return false;
  if (a.cs != 1 || b.rs != 1 || (ocs != 1 && N != 1)) return false;
  for (int d = 0; d < bt.nb; ++d)
    if (bt.sb[d] != 0 && bt.shape[d] > 1) return false;  // one weight for every row
  const int64_t ldw = N > 1 ? b.cs : K;
  if (ldw < 0 || align_of(b.base, ldw * (int64_t)sizeof(T)) < 16) return false;
  GemvRows<T> rows{};
  const T* xa = reinterpret_cast<const T*>(a.base);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    int64_t rem = bi, oa = 0, oo = 0;
    for (int d = bt.nb - 1; d >= 0; --d) {
      const int64_t i = rem % bt.shape[d];
      rem /= bt.shape[d];
      oa += i * bt.sa[d];
      oo += i * bt.so[d];
    }
    for (int64_t m = 0; m < M; ++m) {
      const T* x = xa + oa + m * a.rs;
      if (align_of(x, 0) < 16) return false;
      rows.x[bi * M + m] = x;
      rows.out[bi * M + m] = o + oo + m * ors;
    }
  }
  launch_gemv_rows<T>(reinterpret_cast<const T*>(b.base), ldw, rows, bias, (int)R, swiglu ? N / 2 : N, K, sm_count(ctx),
                      stream(ctx), swiglu);
  GN_CUDA_CHECK_LAUNCH();
  return true;
}

// m's rows, cols and strides from the last two dims of v (at least 2-D), swapped when transposed.
static void set_matrix(Mat& m, const gn_tensor_view& v, bool transposed) {
  m.rows = v.shape[v.ndim - 2];
  m.cols = v.shape[v.ndim - 1];
  m.rs = v.strides[v.ndim - 2];
  m.cs = v.strides[v.ndim - 1];
  if (transposed) {
    std::swap(m.rows, m.cols);
    std::swap(m.rs, m.cs);
  }
}

template <class T>
void matmul_typed(const char* op, const gn_kernel_ctx* ctx, const gn_tensor_view& av, const gn_tensor_view& bv,
                  const gn_tensor_view& ov, bool ta, bool tb, const T* bias, bool* bias_done) {
  const int32_t dt = ov.dtype;
  if (av.ndim < 1 || bv.ndim < 1) fail_op(GN_ERR_SHAPE, op, "operands must be at least 1-D");
  if (av.dtype != dt || bv.dtype != dt)
    fail_op(GN_ERR_DTYPE, op,
            std::string("operands ") + gn_dtype_name(av.dtype) + "/" + gn_dtype_name(bv.dtype) +
                " must match the output dtype " + gn_dtype_name(dt));
  // matrices
  Mat a, b;
  a.base = data_ptr<char>(av);
  b.base = data_ptr<char>(bv);
  if (av.ndim == 1) {
    a.rows = 1;
    a.cols = av.shape[0];
    a.cs = av.strides[0];
    a.rs = a.cols * a.cs;
  } else {
    set_matrix(a, av, ta);
  }
  if (bv.ndim == 1) {
    b.rows = bv.shape[0];
    b.cols = 1;
    b.rs = bv.strides[0];
    b.cs = 1;
  } else {
    set_matrix(b, bv, tb);
  }
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  if (b.rows != K)
    fail_op(GN_ERR_SHAPE, op,
            "inner dims differ: " + shape_str(av) + (ta ? "^T" : "") + " @ " + shape_str(bv) + (tb ? "^T" : ""));
  // output batch: out (ob..., [M], [N])
  const int out_mat = (av.ndim > 1) + (bv.ndim > 1);
  const int nb = ov.ndim - out_mat;
  if (nb < 0) fail_op(GN_ERR_SHAPE, op, "output rank " + std::to_string(ov.ndim) + " is too small");
  Batch bt;
  bt.nb = nb;
  const int na = std::max(av.ndim - 2, 0), nbb = std::max(bv.ndim - 2, 0);
  if (na > nb || nbb > nb) fail_op(GN_ERR_SHAPE, op, "output " + shape_str(ov) + " lacks batch dims");
  int64_t nbatch = 1;
  for (int d = 0; d < nb; ++d) {
    bt.shape[d] = ov.shape[d];
    bt.so[d] = ov.strides[d];
    nbatch *= ov.shape[d];
    const int da = d - (nb - na), db = d - (nb - nbb);
    if (da >= 0) {
      if (av.shape[da] != 1 && av.shape[da] != ov.shape[d]) fail_op(GN_ERR_SHAPE, op, "batch dims do not broadcast");
      bt.sa[d] = av.shape[da] == 1 ? 0 : av.strides[da];
    }
    if (db >= 0) {
      if (bv.shape[db] != 1 && bv.shape[db] != ov.shape[d]) fail_op(GN_ERR_SHAPE, op, "batch dims do not broadcast");
      bt.sb[d] = bv.shape[db] == 1 ? 0 : bv.strides[db];
    }
  }
  // output matrix strides (an absent dim gets a harmless stride)
  int64_t ors = 0, ocs = 0;
  {
    const int64_t on = bv.ndim > 1 ? ov.strides[ov.ndim - 1] : 1;
    const int64_t om = av.ndim > 1 ? ov.strides[ov.ndim - (bv.ndim > 1 ? 2 : 1)] : N * on;
    ors = om;
    ocs = on;
    if (av.ndim > 1 && ov.shape[ov.ndim - (bv.ndim > 1 ? 2 : 1)] != M) fail_op(GN_ERR_SHAPE, op, "output rows differ");
    if (bv.ndim > 1 && ov.shape[ov.ndim - 1] != N) fail_op(GN_ERR_SHAPE, op, "output cols differ");
  }
  T* o = data_ptr<T>(ov);
  if (nbatch == 0 || M == 0 || N == 0) return;
  cudaStream_t st = stream(ctx);
  if (K == 0) {  // empty sum
    zero_kernel<T>
        <<<std::min<unsigned>(blocks_for(nbatch * M * N), 65535u), kThreads, 0, st>>>(o, bt, nbatch, M, N, ors, ocs);
    GN_CUDA_CHECK_LAUNCH();
    return;
  }
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    if (try_gemv<T>(ctx, a, b, o, bt, nbatch, M, N, K, ors, ocs, bias)) {
      if (bias_done) *bias_done = bias != nullptr;
      return;
    }
  }
  constexpr bool lt_type = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                           std::is_same_v<T, __nv_bfloat16>;
  if constexpr (!lt_type) {
    launch_naive<T>(ctx, a, b, o, bt, nbatch, M, N, K, ors, ocs);
    return;
  } else {
    const int64_t es = sizeof(T);
    const Batch orig = bt;  // the caller's strides (the final scatter of a packed output uses them)
    // dense strides over the output batch for a packed (nbatch, R, C) buffer
    auto dense_batch = [&](int64_t* strides, int64_t mat) {
      int64_t acc = mat;
      for (int d = nb - 1; d >= 0; --d) {
        strides[d] = acc;
        acc *= bt.shape[d];
      }
    };
    // operands with no unit stride are packed densely into workspace
    auto pack = [&](Mat& m, int which, int64_t* strides) {
      LtOperand tmp;
      if (as_lt(m.rows, m.cols, m.rs, m.cs, tmp)) return;
      T* dst = static_cast<T*>(workspace(ctx, (size_t)(nbatch * m.rows * m.cols) * es));
      pack_kernel<T><<<std::min<unsigned>(blocks_for(nbatch * m.rows * m.cols), 65535u), kThreads, 0, st>>>(
          reinterpret_cast<const T*>(m.base), dst, orig, which, nbatch, m.rows, m.cols, m.rs, m.cs, true);
      GN_CUDA_CHECK_LAUNCH();
      m.base = reinterpret_cast<char*>(dst);
      m.rs = m.cols;
      m.cs = 1;
      dense_batch(strides, m.rows * m.cols);
    };
    pack(a, 0, bt.sa);
    pack(b, 1, bt.sb);
    // an output with no unit stride: computed into dense workspace, scattered after
    T* obuf = o;
    int64_t o_rs = ors, o_cs = ocs;
    const bool po = !(ocs == 1 || N == 1 || ors == 1 || M == 1);
    if (po) {
      obuf = static_cast<T*>(workspace(ctx, (size_t)(nbatch * M * N) * es));
      o_rs = N;
      o_cs = 1;
      dense_batch(bt.so, M * N);
    }
    // collapse batch dims: d merges into the previous kept dim when all three nest
    int64_t cshape[GN_MAX_DIMS], csa[GN_MAX_DIMS], csb[GN_MAX_DIMS], cso[GN_MAX_DIMS];
    int cn = 0;
    for (int d = 0; d < nb; ++d) {
      if (bt.shape[d] == 1) continue;
      if (cn > 0 && csa[cn - 1] == bt.sa[d] * bt.shape[d] && csb[cn - 1] == bt.sb[d] * bt.shape[d] &&
          cso[cn - 1] == bt.so[d] * bt.shape[d]) {
        cshape[cn - 1] *= bt.shape[d];
        csa[cn - 1] = bt.sa[d];
        csb[cn - 1] = bt.sb[d];
        cso[cn - 1] = bt.so[d];
        continue;
      }
      cshape[cn] = bt.shape[d];
      csa[cn] = bt.sa[d];
      csb[cn] = bt.sb[d];
      cso[cn] = bt.so[d];
      ++cn;
    }
    const Batch& full = bt;
    // innermost collapsed dim -> cuBLASLt batch; outer ones loop on the host
    int64_t inner = cn > 0 ? cshape[cn - 1] : 1;
    int64_t ia = cn > 0 ? csa[cn - 1] : 0, ib = cn > 0 ? csb[cn - 1] : 0, io = cn > 0 ? cso[cn - 1] : 0;
    int64_t Mx = M;
    // weights shared over the batch (ib == 0), a and out dense over it: fold into M
    if (cn == 1 && ib == 0 && inner > 1 && a.cs == 1 && ia == M * a.rs && o_cs == 1 && io == M * o_rs) {
      Mx = M * inner;
      inner = 1;
    }
    // map to cuBLASLt: row-major C -> C^T = B^T A^T; col-major C -> C = A B
    LtOperand x1, x2, xc;
    const T *p1, *p2;
    int64_t bs1, bs2;
    const bool c_row = o_cs == 1 || N == 1;
    bool ok;
    if (c_row) {
      ok = as_lt(N, K, b.cs, b.rs, x1) && as_lt(K, Mx, a.cs, a.rs, x2) && as_lt(N, Mx, 1, o_rs, xc);
      p1 = reinterpret_cast<const T*>(b.base);
      p2 = reinterpret_cast<const T*>(a.base);
      bs1 = ib;
      bs2 = ia;
    } else {
      ok = as_lt(Mx, K, a.rs, a.cs, x1) && as_lt(K, N, b.rs, b.cs, x2) && as_lt(Mx, N, 1, o_cs, xc);
      p1 = reinterpret_cast<const T*>(a.base);
      p2 = reinterpret_cast<const T*>(b.base);
      bs1 = ia;
      bs2 = ib;
    }
    if (!ok || xc.op != CUBLAS_OP_N) fail_op(GN_ERR_INTERNAL, op, "layout mapping failed");
    void* ws = try_workspace(ctx, kLtWorkspace);
    PlanKey key{};
    key.device = ctx->device.index;
    key.dtype = dt;
    key.compute = std::is_same_v<T, double>                    ? CUBLAS_COMPUTE_64F
                  : (std::is_same_v<T, float> && allow_tf32()) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                               : CUBLAS_COMPUTE_32F;
    key.m = xc.rows;
    key.n = xc.cols;
    key.k = (uint64_t)K;
    key.r1 = x1.rows;
    key.c1 = x1.cols;
    key.ld1 = x1.ld;
    key.op1 = x1.op;
    key.r2 = x2.rows;
    key.c2 = x2.cols;
    key.ld2 = x2.ld;
    key.op2 = x2.op;
    key.ldc = xc.ld;
    key.batch = inner;
    key.bs1 = inner > 1 ? bs1 : 0;
    key.bs2 = inner > 1 ? bs2 : 0;
    key.bsc = inner > 1 ? io : 0;
    key.al1 = align_of(p1, key.bs1 * es);
    key.al2 = align_of(p2, key.bs2 * es);
    key.alc = align_of(obuf, key.bsc * es);
    key.ws = ws ? kLtWorkspace : 0;
    // outer batch dims: offsets for every combination of dims 0..cn-2
    int64_t outer = 1;
    for (int d = 0; d + 1 < cn; ++d) outer *= cshape[d];
    Plan* plan = get_plan(key);
    if (!plan->ok) {  // no cuBLASLt algorithm: plain kernel on the original operands
      launch_naive<T>(ctx, a, b, obuf, full, nbatch, M, N, K, o_rs, o_cs);
    } else {
      cublasLtHandle_t h = handle_of(key.device);
      using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const S one = 1, zero = 0;
      for (int64_t ob = 0; ob < outer; ++ob) {
        int64_t rem = ob, oa1 = 0, ob1 = 0, oo = 0;
        for (int d = cn - 2; d >= 0; --d) {
          const int64_t i = rem % cshape[d];
          rem /= cshape[d];
          oa1 += i * csa[d];
          ob1 += i * csb[d];
          oo += i * cso[d];
        }
        const T* q1 = p1 + (c_row ? ob1 : oa1);
        const T* q2 = p2 + (c_row ? oa1 : ob1);
        T* qc = obuf + oo;
        LT_CHECK(cublasLtMatmul(h, plan->desc, &one, q1, plan->l1, q2, plan->l2, &zero, qc, plan->lc, qc, plan->lc,
                                &plan->algo, ws, key.ws, st));
      }
    }
    if (po)
      pack_kernel<T><<<std::min<unsigned>(blocks_for(nbatch * M * N), 65535u), kThreads, 0, st>>>(
          obuf, o, orig, 2, nbatch, M, N, ors, ocs, false);
    GN_CUDA_CHECK_LAUNCH();
  }
}

template bool try_gemv<__half>(const gn_kernel_ctx*, const Mat&, const Mat&, __half*, const Batch&, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t, const __half*, bool);
template bool try_gemv<__nv_bfloat16>(const gn_kernel_ctx*, const Mat&, const Mat&, __nv_bfloat16*, const Batch&,
                                      int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const __nv_bfloat16*, bool);
template void matmul_typed<float>(const char*, const gn_kernel_ctx*, const gn_tensor_view&, const gn_tensor_view&,
                                  const gn_tensor_view&, bool, bool, const float*, bool*);
template void matmul_typed<__half>(const char*, const gn_kernel_ctx*, const gn_tensor_view&, const gn_tensor_view&,
                                   const gn_tensor_view&, bool, bool, const __half*, bool*);
template void matmul_typed<__nv_bfloat16>(const char*, const gn_kernel_ctx*, const gn_tensor_view&,
                                          const gn_tensor_view&, const gn_tensor_view&, bool, bool,
                                          const __nv_bfloat16*, bool*);
template void matmul_typed<double>(const char*, const gn_kernel_ctx*, const gn_tensor_view&, const gn_tensor_view&,
                                   const gn_tensor_view&, bool, bool, const double*, bool*);

}  // namespace matmul

namespace {

using matmul::matmul_typed;

bool flag(const gn_attr_value* attrs, size_t n_attrs, size_t i) {
  return i < n_attrs && attrs[i].kind == GN_ATTR_INT && attrs[i].u.i != 0;
}

void matmul_run(const char* op, const gn_kernel_ctx* ctx, const gn_tensor_view& a, const gn_tensor_view& b,
                const gn_tensor_view& o, bool ta, bool tb) {
  DeviceGuard guard(ctx);
  switch (o.dtype) {
    case GN_F32: matmul_typed<float>(op, ctx, a, b, o, ta, tb); break;
    case GN_F16: matmul_typed<__half>(op, ctx, a, b, o, ta, tb); break;
    case GN_BF16: matmul_typed<__nv_bfloat16>(op, ctx, a, b, o, ta, tb); break;
    case GN_F64: matmul_typed<double>(op, ctx, a, b, o, ta, tb); break;
    case GN_I32: matmul_typed<int32_t>(op, ctx, a, b, o, ta, tb); break;
    case GN_I64: matmul_typed<int64_t>(op, ctx, a, b, o, ta, tb); break;
    default: fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(o.dtype) + " is not supported on cuda");
  }
}

GN_SDK_KERNEL(matmul_kernel) {
  need_io("matmul", n_in, 2, n_out, 1);
  matmul_run("matmul", ctx, in[0], in[1], out[0], flag(attrs, n_attrs, 0), flag(attrs, n_attrs, 1));
}

GN_SDK_KERNEL(bmm_kernel) {
  need_io("bmm", n_in, 2, n_out, 1);
  if (in[0].ndim != 3 || in[1].ndim != 3) fail_op(GN_ERR_SHAPE, "bmm", "operands must be 3-D");
  if (in[0].shape[0] != in[1].shape[0])
    fail_op(GN_ERR_SHAPE, "bmm", "batch sizes differ: " + shape_str(in[0]) + " vs " + shape_str(in[1]));
  matmul_run("bmm", ctx, in[0], in[1], out[0], flag(attrs, n_attrs, 0), flag(attrs, n_attrs, 1));
}

}  // namespace

GN_CUDA_FAMILY(linalg) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I32, GN_I64};
  r.kernel("matmul", dtypes, matmul_kernel);
  r.kernel("bmm", dtypes, bmm_kernel);
}

}  // namespace gn::cuda
