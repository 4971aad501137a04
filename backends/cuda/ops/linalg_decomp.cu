// backends/cuda/ops/linalg_decomp.cu - the matrix factorizations and solves through cuSOLVER
// (getrf, getrs, potrf, geqrf + orgqr, gesvdj, syevd) and cuBLAS (trsm), one call per matrix
// of the batch, float32 and float64.
//
// Tensors are dense row-major (GN_KERNEL_CONTIGUOUS); cuSOLVER is column-major, and a row-major
// buffer read column-major is the transpose.  So: lu_factor, lu_solve and qr transpose their
// operands into workspace and back; cholesky and eigh read the symmetric input in place (its
// lower triangle row-major is the upper one column-major); trsm solves the transposed system
// X^T op(A)^T = B^T, which needs no copy; svd factors A^T = U' S V'^T, whose U' buffer read
// row-major already is A's Vh.  Results follow the reference's conventions: 1-based pivots and
// info as LAPACK, geqrf's Householder signs, singular vectors and eigenvectors signed so that
// the largest |entry| of each column of U (of V for eigh) is positive.  A full svd's columns of
// U (rows of Vh) past min(m, n) are cuSOLVER's orthonormal basis of the complement, signed so
// too: the same span as the reference's, not always the same vectors.  info outputs stay on
// the device (no synchronisation); a factor whose info is non-zero is unspecified.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <map>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

#define GN_SOLVER_CHECK(expr)                                                                                         \
  check_library<cusolverStatus_t>((expr), CUSOLVER_STATUS_SUCCESS, CUSOLVER_STATUS_ALLOC_FAILED, "[linalg] cuSOLVER", \
                                  #expr)
#define GN_BLAS_CHECK(expr) \
  check_library<cublasStatus_t>((expr), CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_ALLOC_FAILED, "[linalg] cuBLAS", #expr)

// Handles per (thread, device), bound to the call's stream.
cusolverDnHandle_t solver(const gn_kernel_ctx* ctx) {
  thread_local std::map<int, cusolverDnHandle_t> handles;
  cusolverDnHandle_t& h = handles[ctx->device.index];
  if (!h) GN_SOLVER_CHECK(cusolverDnCreate(&h));
  GN_SOLVER_CHECK(cusolverDnSetStream(h, stream(ctx)));
  return h;
}
cublasHandle_t blas(const gn_kernel_ctx* ctx) {
  thread_local std::map<int, cublasHandle_t> handles;
  cublasHandle_t& h = handles[ctx->device.index];
  if (!h) GN_BLAS_CHECK(cublasCreate(&h));
  GN_BLAS_CHECK(cublasSetStream(h, stream(ctx)));
  return h;
}

// ----------------------------------------------------------------------------
// small kernels

// out[b][j][i] = in[b][i][j] for in (B, r, c).
template <class T>
__global__ void transpose_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t B, int64_t r, int64_t c) {
  const int64_t n = B * r * c;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / (r * c), i = (e / c) % r, j = e % c;
    out[(b * c + j) * r + i] = in[e];
  }
}
template <class T>
void transpose(const gn_kernel_ctx* ctx, const T* in, T* out, int64_t B, int64_t r, int64_t c) {
  if (B * r * c == 0) return;
  transpose_kernel<T><<<nn::grid_for(ctx, B * r * c), kThreads, 0, stream(ctx)>>>(in, out, B, r, c);
  GN_CUDA_CHECK_LAUNCH();
}

// Zero the strict upper (upper_zero) or strict lower triangle of every (n, n) matrix.
template <class T>
__global__ void zero_triangle_kernel(T* __restrict__ a, int64_t B, int64_t n, int upper_zero) {
  const int64_t total = B * n * n;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = (e / n) % n, j = e % n;
    if (upper_zero ? j > i : j < i) a[e] = T(0);
  }
}

// Every (r, c) matrix = the identity (rectangular: ones on the main diagonal).
template <class T>
__global__ void identity_kernel(T* __restrict__ a, int64_t B, int64_t r, int64_t c) {
  const int64_t total = B * r * c;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x)
    a[e] = (e / c) % r == e % c ? T(1) : T(0);
}
template <class T>
void identity(const gn_kernel_ctx* ctx, T* a, int64_t B, int64_t r, int64_t c) {
  if (B * r * c == 0) return;
  identity_kernel<T><<<nn::grid_for(ctx, B * r * c), kThreads, 0, stream(ctx)>>>(a, B, r, c);
  GN_CUDA_CHECK_LAUNCH();
}

// R (B, kr, n) row-major from geqrf's column-major result w (B, m x n, ld m): the upper
// triangle of its first k rows, zeros elsewhere.
template <class T>
__global__ void extract_r_kernel(const T* __restrict__ w, T* __restrict__ r, int64_t B, int64_t m, int64_t n,
                                 int64_t kr, int64_t k) {
  const int64_t total = B * kr * n;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / (kr * n), i = (e / n) % kr, j = e % n;
    r[e] = i < k && i <= j ? w[b * m * n + j * m + i] : T(0);
  }
}

// Signs: for every matrix b and column c of u (B, m, uc): when its entry of largest magnitude
// (the first on ties) is negative, negate the column, and row c of vh (B, vr, n) with it when
// c < k.  Rows of vh from k on are signed on their own (largest |entry| positive).
template <class T>
__global__ void sign_kernel(T* __restrict__ u, T* __restrict__ vh, int64_t B, int64_t m, int64_t uc, int64_t vr,
                            int64_t n, int64_t k) {
  const int64_t per = uc + (vh ? vr - k : 0), total = B * per;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / per, c = e % per;
    if (c < uc) {
      T* col = u + b * m * uc + c;
      int64_t best = 0;
      for (int64_t i = 1; i < m; ++i)
        if (fabs((double)col[i * uc]) > fabs((double)col[best * uc])) best = i;
      if (m == 0 || !(col[best * uc] < T(0))) continue;
      for (int64_t i = 0; i < m; ++i) col[i * uc] = -col[i * uc];
      if (vh && c < k)
        for (int64_t j = 0; j < n; ++j) vh[(b * vr + c) * n + j] = -vh[(b * vr + c) * n + j];
    } else {
      T* row = vh + (b * vr + k + (c - uc)) * n;
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (fabs((double)row[j]) > fabs((double)row[best])) best = j;
      if (n > 0 && row[best] < T(0))
        for (int64_t j = 0; j < n; ++j) row[j] = -row[j];
    }
  }
}

// ----------------------------------------------------------------------------
// float / double entry points of cuSOLVER and cuBLAS

template <class T>
constexpr bool kF32 = std::is_same_v<T, float>;

// GN_SOLVER_CALL(T, getrf, args...) calls cusolverDnSgetrf(args...) for float and
// cusolverDnDgetrf(args...) for double, checked.
#define GN_SOLVER_CALL(T, fn, ...)                   \
  do {                                               \
    if constexpr (kF32<T>)                           \
      GN_SOLVER_CHECK(cusolverDnS##fn(__VA_ARGS__)); \
    else                                             \
      GN_SOLVER_CHECK(cusolverDnD##fn(__VA_ARGS__)); \
  } while (0)

template <class T>
int getrf_lwork(cusolverDnHandle_t h, int m, int n, T* a) {
  int lw = 0;
  GN_SOLVER_CALL(T, getrf_bufferSize, h, m, n, a, m, &lw);
  return lw;
}
template <class T>
void getrf(cusolverDnHandle_t h, int m, int n, T* a, T* work, int* piv, int* info) {
  GN_SOLVER_CALL(T, getrf, h, m, n, a, m, work, piv, info);
}
template <class T>
void getrs(cusolverDnHandle_t h, bool trans, int n, int k, const T* a, const int* piv, T* b, int* info) {
  const cublasOperation_t op = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  GN_SOLVER_CALL(T, getrs, h, op, n, k, a, n, piv, b, n, info);
}
template <class T>
int potrf_lwork(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* a) {
  int lw = 0;
  GN_SOLVER_CALL(T, potrf_bufferSize, h, uplo, n, a, n, &lw);
  return lw;
}
template <class T>
void potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* a, T* work, int lw, int* info) {
  GN_SOLVER_CALL(T, potrf, h, uplo, n, a, n, work, lw, info);
}
template <class T>
int geqrf_lwork(cusolverDnHandle_t h, int m, int n, T* a) {
  int lw = 0;
  GN_SOLVER_CALL(T, geqrf_bufferSize, h, m, n, a, m, &lw);
  return lw;
}
template <class T>
void geqrf(cusolverDnHandle_t h, int m, int n, T* a, T* tau, T* work, int lw, int* info) {
  GN_SOLVER_CALL(T, geqrf, h, m, n, a, m, tau, work, lw, info);
}
template <class T>
int orgqr_lwork(cusolverDnHandle_t h, int m, int n, int k, T* a, T* tau) {
  int lw = 0;
  GN_SOLVER_CALL(T, orgqr_bufferSize, h, m, n, k, a, m, tau, &lw);
  return lw;
}
template <class T>
void orgqr(cusolverDnHandle_t h, int m, int n, int k, T* a, T* tau, T* work, int lw, int* info) {
  GN_SOLVER_CALL(T, orgqr, h, m, n, k, a, m, tau, work, lw, info);
}
template <class T>
int gesvdj_lwork(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n, T* a, T* s, T* u, int ldu, T* v,
                 int ldv, gesvdjInfo_t p) {
  int lw = 0;
  GN_SOLVER_CALL(T, gesvdj_bufferSize, h, jobz, econ, m, n, a, m, s, u, ldu, v, ldv, &lw, p);
  return lw;
}
template <class T>
void gesvdj(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, int n, T* a, T* s, T* u, int ldu, T* v,
            int ldv, T* work, int lw, int* info, gesvdjInfo_t p) {
  GN_SOLVER_CALL(T, gesvdj, h, jobz, econ, m, n, a, m, s, u, ldu, v, ldv, work, lw, info, p);
}
template <class T>
int syevd_lwork(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* a, T* w) {
  int lw = 0;
  GN_SOLVER_CALL(T, syevd_bufferSize, h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, n, w, &lw);
  return lw;
}
template <class T>
void syevd(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T* a, T* w, T* work, int lw, int* info) {
  GN_SOLVER_CALL(T, syevd, h, CUSOLVER_EIG_MODE_VECTOR, uplo, n, a, n, w, work, lw, info);
}

// The work buffer of lw elements a cuSOLVER call asked for (at least one).
template <class T>
T* solver_work(const gn_kernel_ctx* ctx, int lw) {
  return static_cast<T*>(workspace(ctx, (size_t)std::max(lw, 1) * sizeof(T)));
}

// ----------------------------------------------------------------------------
// helpers of the kernels

int64_t batch_of(const gn_tensor_view& v, int32_t tail) {
  int64_t n = 1;
  for (int32_t d = 0; d < v.ndim - tail; ++d) n *= v.shape[d];
  return n;
}
int64_t from_end(const gn_tensor_view& v, int32_t k) { return v.shape[v.ndim - k]; }

// f(T-tag) for float32 / float64.
template <class F>
void floats(const char* op, int32_t dt, F&& f) {
  if (dt == GN_F32)
    f(Tag<float>{});
  else if (dt == GN_F64)
    f(Tag<double>{});
  else
    fail_op(GN_ERR_DTYPE, op, std::string("dtype ") + gn_dtype_name(dt) + " is not supported (float32 or float64)");
}

void need_int_dims(const char* op, int64_t a, int64_t b) {
  if (a > INT32_MAX || b > INT32_MAX) fail_op(GN_ERR_UNSUPPORTED, op, "matrices larger than 2^31 rows or columns");
}

template <class T>
T* carve(char* base, size_t off) {
  return reinterpret_cast<T*>(base + off);
}

// ----------------------------------------------------------------------------
// the kernels

GN_SDK_KERNEL(lu_factor_fn) {
  const char* op = "lu_factor";
  need_io(op, n_in, 1, n_out, 3);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &LU = out[0], &P = out[1], &I = out[2];
  const int64_t m = from_end(A, 2), n = from_end(A, 1), k = std::min(m, n), B = batch_of(A, 2);
  need_int_dims(op, m, n);
  int32_t* info = data_ptr<int32_t>(I);
  if (B && (k == 0)) GN_CUDA_CHECK(cudaMemsetAsync(info, 0, (size_t)B * 4, stream(ctx)));
  if (B == 0 || k == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cusolverDnHandle_t h = solver(ctx);
    T* w = static_cast<T*>(workspace(ctx, (size_t)(B * m * n) * sizeof(T)));
    transpose(ctx, data_ptr<const T>(A), w, B, m, n);  // column-major copies
    const int lw = getrf_lwork<T>(h, (int)m, (int)n, w);
    T* work = solver_work<T>(ctx, lw);
    for (int64_t b = 0; b < B; ++b)
      getrf<T>(h, (int)m, (int)n, w + b * m * n, work, data_ptr<int>(P) + b * k, info + b);
    transpose(ctx, (const T*)w, data_ptr<T>(LU), B, n, m);
  });
}

GN_SDK_KERNEL(lu_solve_fn) {
  const char* op = "lu_solve";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &LU = in[0], &P = in[1], &Bm = in[2], &X = out[0];
  const int64_t n = from_end(LU, 1), k = from_end(Bm, 1), B = batch_of(LU, 2);
  need_int_dims(op, n, k);
  const bool adjoint = attr_int(op, attrs, n_attrs, 0) != 0;
  if (B == 0 || n == 0 || k == 0) return;
  floats(op, LU.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cusolverDnHandle_t h = solver(ctx);
    nn::Carver cv;
    const size_t o_a = cv.add((size_t)(B * n * n) * sizeof(T)), o_x = cv.add((size_t)(B * n * k) * sizeof(T)),
                 o_i = cv.add(sizeof(int));
    char* ws = static_cast<char*>(workspace(ctx, cv.total));
    T *a = carve<T>(ws, o_a), *x = carve<T>(ws, o_x);
    transpose(ctx, data_ptr<const T>(LU), a, B, n, n);
    transpose(ctx, data_ptr<const T>(Bm), x, B, n, k);
    for (int64_t b = 0; b < B; ++b)
      getrs<T>(h, adjoint, (int)n, (int)k, a + b * n * n, data_ptr<const int>(P) + b * n, x + b * n * k,
               carve<int>(ws, o_i));
    transpose(ctx, (const T*)x, data_ptr<T>(X), B, k, n);
  });
}

GN_SDK_KERNEL(solve_triangular_fn) {
  const char* op = "solve_triangular";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &Bm = in[1], &X = out[0];
  const int64_t n = from_end(A, 1), k = from_end(Bm, 1), B = batch_of(A, 2);
  need_int_dims(op, n, k);
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0, trans = attr_int(op, attrs, n_attrs, 1) != 0,
             unit = attr_int(op, attrs, n_attrs, 2) != 0;
  if (B == 0 || n == 0 || k == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GN_CUDA_CHECK(cudaMemcpyAsync(data_ptr<T>(X), data_ptr<const T>(Bm), (size_t)(B * n * k) * sizeof(T),
                                  cudaMemcpyDeviceToDevice, stream(ctx)));
    // X^T op(A)^T = B^T: X's buffer is X^T column-major (k x n, ld k), A's is A^T (lower when A
    // is upper); op(A)^T is A^T (no transpose of the buffer) or A (transpose it).
    cublasHandle_t h = blas(ctx);
    const cublasFillMode_t fill = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    const cublasOperation_t opa = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasDiagType_t diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    const T one = 1;
    for (int64_t b = 0; b < B; ++b) {
      const T* a = data_ptr<const T>(A) + b * n * n;
      T* x = data_ptr<T>(X) + b * n * k;
      if constexpr (kF32<T>)
        GN_BLAS_CHECK(cublasStrsm(h, CUBLAS_SIDE_RIGHT, fill, opa, diag, (int)k, (int)n, &one, a, (int)n, x, (int)k));
      else
        GN_BLAS_CHECK(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, fill, opa, diag, (int)k, (int)n, &one, a, (int)n, x, (int)k));
    }
  });
}

GN_SDK_KERNEL(cholesky_fn) {
  const char* op = "cholesky";
  need_io(op, n_in, 1, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &L = out[0], &I = out[1];
  const int64_t n = from_end(A, 1), B = batch_of(A, 2);
  need_int_dims(op, n, n);
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0;
  int32_t* info = data_ptr<int32_t>(I);
  if (B && n == 0) GN_CUDA_CHECK(cudaMemsetAsync(info, 0, (size_t)B * 4, stream(ctx)));
  if (B == 0 || n == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* l = data_ptr<T>(L);
    GN_CUDA_CHECK(cudaMemcpyAsync(l, data_ptr<const T>(A), (size_t)(B * n * n) * sizeof(T), cudaMemcpyDeviceToDevice,
                                  stream(ctx)));
    // The row-major lower triangle is the column-major upper one: potrf(UPPER) gives U with
    // A = U^T U column-major, that is L = U^T row-major.  Symmetrically for upper.
    const cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    cusolverDnHandle_t h = solver(ctx);
    const int lw = potrf_lwork<T>(h, uplo, (int)n, l);
    T* work = solver_work<T>(ctx, lw);
    for (int64_t b = 0; b < B; ++b) potrf<T>(h, uplo, (int)n, l + b * n * n, work, lw, info + b);
    zero_triangle_kernel<T><<<nn::grid_for(ctx, B * n * n), kThreads, 0, stream(ctx)>>>(l, B, n, upper ? 0 : 1);
    GN_CUDA_CHECK_LAUNCH();
  });
}

GN_SDK_KERNEL(qr_fn) {
  const char* op = "qr";
  need_io(op, n_in, 1, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &Q = out[0], &R = out[1];
  const bool complete = attr_int(op, attrs, n_attrs, 0) != 0;
  const int64_t m = from_end(A, 2), n = from_end(A, 1), B = batch_of(A, 2), k = std::min(m, n);
  const int64_t qc = complete ? m : k;  // columns of Q = rows of R
  need_int_dims(op, m, n);
  if (B == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (k == 0) {  // Q: the identity (complete) or empty; R: zeros
      identity(ctx, data_ptr<T>(Q), B, m, qc);
      if (qc != 0 && n != 0)
        GN_CUDA_CHECK(cudaMemsetAsync(data_ptr<T>(R), 0, (size_t)(B * qc * n) * sizeof(T), stream(ctx)));
      return;
    }
    cusolverDnHandle_t h = solver(ctx);
    nn::Carver cv;
    const size_t o_w = cv.add((size_t)(B * m * n) * sizeof(T)), o_q = cv.add((size_t)(B * m * qc) * sizeof(T)),
                 o_t = cv.add((size_t)(B * k) * sizeof(T)), o_i = cv.add(sizeof(int));
    char* ws = static_cast<char*>(workspace(ctx, cv.total));
    T *w = carve<T>(ws, o_w), *q = carve<T>(ws, o_q), *tau = carve<T>(ws, o_t);
    int* dinfo = carve<int>(ws, o_i);
    transpose(ctx, data_ptr<const T>(A), w, B, m, n);  // column-major (m x n, ld m)
    const int lw = std::max(geqrf_lwork<T>(h, (int)m, (int)n, w), orgqr_lwork<T>(h, (int)m, (int)qc, (int)k, q, tau));
    T* work = solver_work<T>(ctx, lw);
    for (int64_t b = 0; b < B; ++b) geqrf<T>(h, (int)m, (int)n, w + b * m * n, tau + b * k, work, lw, dinfo);
    extract_r_kernel<T><<<nn::grid_for(ctx, B * qc * n), kThreads, 0, stream(ctx)>>>(w, data_ptr<T>(R), B, m, n, qc, k);
    GN_CUDA_CHECK_LAUNCH();
    for (int64_t b = 0; b < B; ++b) {  // the first k reflectors (columns) into an (m x qc) buffer
      GN_CUDA_CHECK(cudaMemcpyAsync(q + b * m * qc, w + b * m * n, (size_t)(m * k) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, stream(ctx)));
      orgqr<T>(h, (int)m, (int)qc, (int)k, q + b * m * qc, tau + b * k, work, lw, dinfo);
    }
    transpose(ctx, (const T*)q, data_ptr<T>(Q), B, qc, m);
  });
}

GN_SDK_KERNEL(svd_fn) {
  const char* op = "svd";
  need_io(op, n_in, 1, n_out, 3);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &U = out[0], &S = out[1], &Vh = out[2];
  const bool full = attr_int(op, attrs, n_attrs, 0) != 0, uv = attr_int(op, attrs, n_attrs, 1) != 0;
  const int64_t m = from_end(A, 2), n = from_end(A, 1), B = batch_of(A, 2), k = std::min(m, n);
  const int64_t uc = full ? m : k, vr = full ? n : k;
  need_int_dims(op, m, n);
  if (B == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (k == 0) {  // full: identities; else everything is empty
      if (uv) identity(ctx, data_ptr<T>(U), B, m, uc), identity(ctx, data_ptr<T>(Vh), B, vr, n);
      return;
    }
    // A^T (column-major n x m: A's own buffer) = U' S V'^T, so A = V' S U'^T: U' (n x vr, ld n)
    // read row-major is Vh, V' (m x uc, ld m) read row-major is U^T.
    cusolverDnHandle_t h = solver(ctx);
    const cusolverEigMode_t jobz = uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    const int econ = full ? 0 : 1;
    gesvdjInfo_t params = nullptr;
    GN_SOLVER_CHECK(cusolverDnCreateGesvdjInfo(&params));
    struct Guard {
      gesvdjInfo_t p;
      ~Guard() { cusolverDnDestroyGesvdjInfo(p); }
    } guard{params};
    nn::Carver cv;
    const size_t o_a = cv.add((size_t)(B * m * n) * sizeof(T)), o_v = cv.add((size_t)(B * m * uc) * sizeof(T)),
                 o_u = cv.add(uv ? 0 : (size_t)(n * vr) * sizeof(T)), o_i = cv.add(sizeof(int));
    char* ws = static_cast<char*>(workspace(ctx, cv.total));
    T *a = carve<T>(ws, o_a), *v = carve<T>(ws, o_v);
    T* up = uv ? data_ptr<T>(Vh) : carve<T>(ws, o_u);  // U' (not referenced without vectors)
    int* dinfo = carve<int>(ws, o_i);
    GN_CUDA_CHECK(cudaMemcpyAsync(a, data_ptr<const T>(A), (size_t)(B * m * n) * sizeof(T), cudaMemcpyDeviceToDevice,
                                  stream(ctx)));
    const int lw = gesvdj_lwork<T>(h, jobz, econ, (int)n, (int)m, a, data_ptr<T>(S), up, (int)n, v, (int)m, params);
    T* work = solver_work<T>(ctx, lw);
    for (int64_t b = 0; b < B; ++b)
      gesvdj<T>(h, jobz, econ, (int)n, (int)m, a + b * m * n, data_ptr<T>(S) + b * k, uv ? up + b * vr * n : up, (int)n,
                v + b * m * uc, (int)m, work, lw, dinfo, params);
    if (!uv) return;
    transpose(ctx, (const T*)v, data_ptr<T>(U), B, uc, m);
    const int64_t per = uc + vr - k;
    sign_kernel<T>
        <<<nn::grid_for(ctx, B * per), kThreads, 0, stream(ctx)>>>(data_ptr<T>(U), data_ptr<T>(Vh), B, m, uc, vr, n, k);
    GN_CUDA_CHECK_LAUNCH();
  });
}

GN_SDK_KERNEL(eigh_fn) {
  const char* op = "eigh";
  need_io(op, n_in, 1, n_out, 2);
  DeviceGuard dg(ctx);
  const gn_tensor_view &A = in[0], &W = out[0], &V = out[1];
  const int64_t n = from_end(A, 1), B = batch_of(A, 2);
  need_int_dims(op, n, n);
  const bool upper = attr_int(op, attrs, n_attrs, 0) != 0;
  if (B == 0 || n == 0) return;
  floats(op, A.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cusolverDnHandle_t h = solver(ctx);
    const cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    nn::Carver cv;
    const size_t o_a = cv.add((size_t)(B * n * n) * sizeof(T)), o_i = cv.add((size_t)B * sizeof(int));
    char* ws = static_cast<char*>(workspace(ctx, cv.total));
    T* a = carve<T>(ws, o_a);
    GN_CUDA_CHECK(cudaMemcpyAsync(a, data_ptr<const T>(A), (size_t)(B * n * n) * sizeof(T), cudaMemcpyDeviceToDevice,
                                  stream(ctx)));
    const int lw = syevd_lwork<T>(h, uplo, (int)n, a, data_ptr<T>(W));
    T* work = solver_work<T>(ctx, lw);
    for (int64_t b = 0; b < B; ++b)
      syevd<T>(h, uplo, (int)n, a + b * n * n, data_ptr<T>(W) + b * n, work, lw, carve<int>(ws, o_i) + b);
    transpose(ctx, (const T*)a, data_ptr<T>(V), B, n, n);  // column j (column-major) is eigenvector j
    sign_kernel<T>
        <<<nn::grid_for(ctx, B * n), kThreads, 0, stream(ctx)>>>(data_ptr<T>(V), (T*)nullptr, B, n, n, 0, 0, n);
    GN_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

GN_CUDA_FAMILY(linalg_decomp) {
  const int32_t fl[] = {GN_F32, GN_F64};
  r.kernel("lu_factor", fl, lu_factor_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("lu_solve", fl, lu_solve_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("solve_triangular", fl, solve_triangular_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("cholesky", fl, cholesky_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("qr", fl, qr_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("svd", fl, svd_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("eigh", fl, eigh_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
