// backends/cuda/ops/conv.cu - conv2d (NCHW, stride / padding / dilation /
// groups, optional bias) and conv2d_backward.
//
// Two paths:
//  * groups <= 8 (the common case): im2col + cuBLAS (tensor cores for
//    bf16/f16 with f32 accumulation; f32/f64 in full precision, TF32 off), see
//    "im2col + cuBLAS path" below;
//  * many groups (depthwise): a tiled implicit GEMM in plain CUDA (64x64
//    output tile, k-step 16, 256 threads with 4x4 outputs each, operands
//    staged in shared memory in acc_t: f32, f64 for f64); a problem struct
//    maps (group, m, k) / (group, k, n) to input elements (zero outside the
//    image: no im2col matrix) and stores (group, m, n):
//   forward  y[nb,o,oh,ow]:  m = (nb,oh,ow), n = o in group, k = (c,i,j)
//            A = x[nb, g*Cg+c, oh*sh-ph+i*dh, ow*sw-pw+j*dw],  B = w[o,c,i,j]
//   grad_x   dx[nb,c,ih,iw]: m = (nb,ih,iw), n = c in group, k = (o,i,j)
//            A = dy[nb, g*Og+o, oh, ow] where oh*sh = ih+ph-i*dh (exact,
//            in range; else 0),  B = w[g*Og+o, c, i, j]
//   grad_w   dw[o,c,i,j]:    m = o in group, n = (c,i,j), k = (nb,oh,ow)
//            A = dy[nb, g*Og+o, oh, ow],  B = x[nb, g*Cg+c, ih(oh,i), iw(ow,j)]
//   grad_w has few output tiles and a long k: it is split over k into slices
//   whose partial tiles go to a workspace and are added in slice order.
// grad_bias: one block per channel, a block sum in fixed order.  No atomics
// anywhere: results are reproducible run to run.
#include <cublas_v2.h>

#include <map>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kGemmThreads = 256;

struct Geom {
  int N, C, H, W;  // input
  int O, Cg, Og, KH, KW, G;
  int sh, sw, ph, pw, dh, dw;
  int Ho, Wo;
};

// ----------------------------------------------------------------------------
// problems

template <class T>
struct ConvFwd {
  using A = acc_t<T>;
  const T* x;
  const T* w;
  const T* bias;
  T* y;
  Geom g;
  __device__ __forceinline__ A a(int grp, int m, int k) const {
    const int ow = m % g.Wo, t = m / g.Wo, oh = t % g.Ho, nb = t / g.Ho;
    const int j = k % g.KW, t2 = k / g.KW, i = t2 % g.KH, c = t2 / g.KH;
    const int ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
    if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) return A(0);
    return convert<A>(x[(((int64_t)nb * g.C + grp * g.Cg + c) * g.H + ih) * g.W + iw]);
  }
  __device__ __forceinline__ A b(int grp, int k, int n) const {
    const int64_t K = (int64_t)g.Cg * g.KH * g.KW;
    return convert<A>(w[((int64_t)grp * g.Og + n) * K + k]);
  }
  __device__ __forceinline__ void store(int grp, int m, int n, A v) const {
    const int ow = m % g.Wo, t = m / g.Wo, oh = t % g.Ho, nb = t / g.Ho;
    const int o = grp * g.Og + n;
    if (bias) v += convert<A>(bias[o]);
    y[(((int64_t)nb * g.O + o) * g.Ho + oh) * g.Wo + ow] = convert<T>(v);
  }
};

template <class T>
struct ConvBwdX {
  using A = acc_t<T>;
  const T* dy;
  const T* w;
  T* dx;
  Geom g;
  __device__ __forceinline__ A a(int grp, int m, int k) const {
    const int iw = m % g.W, t = m / g.W, ih = t % g.H, nb = t / g.H;
    const int j = k % g.KW, t2 = k / g.KW, i = t2 % g.KH, o = t2 / g.KH;
    const int nh = ih + g.ph - i * g.dh, nw = iw + g.pw - j * g.dw;
    if (nh < 0 || nw < 0 || nh % g.sh != 0 || nw % g.sw != 0) return A(0);
    const int oh = nh / g.sh, ow = nw / g.sw;
    if (oh >= g.Ho || ow >= g.Wo) return A(0);
    return convert<A>(dy[(((int64_t)nb * g.O + grp * g.Og + o) * g.Ho + oh) * g.Wo + ow]);
  }
  __device__ __forceinline__ A b(int grp, int k, int n) const {
    const int j = k % g.KW, t2 = k / g.KW, i = t2 % g.KH, o = t2 / g.KH;
    return convert<A>(w[((((int64_t)grp * g.Og + o) * g.Cg + n) * g.KH + i) * g.KW + j]);
  }
  __device__ __forceinline__ void store(int grp, int m, int n, A v) const {
    const int iw = m % g.W, t = m / g.W, ih = t % g.H, nb = t / g.H;
    dx[(((int64_t)nb * g.C + grp * g.Cg + n) * g.H + ih) * g.W + iw] = convert<T>(v);
  }
};

template <class T>
struct ConvBwdW {
  using A = acc_t<T>;
  const T* dy;
  const T* x;
  T* dw;
  Geom g;
  __device__ __forceinline__ A a(int grp, int m, int k) const {
    const int ow = k % g.Wo, t = k / g.Wo, oh = t % g.Ho, nb = t / g.Ho;
    return convert<A>(dy[(((int64_t)nb * g.O + grp * g.Og + m) * g.Ho + oh) * g.Wo + ow]);
  }
  __device__ __forceinline__ A b(int grp, int k, int n) const {
    const int ow = k % g.Wo, t = k / g.Wo, oh = t % g.Ho, nb = t / g.Ho;
    const int j = n % g.KW, t2 = n / g.KW, i = t2 % g.KH, c = t2 / g.KH;
    const int ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
    if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) return A(0);
    return convert<A>(x[(((int64_t)nb * g.C + grp * g.Cg + c) * g.H + ih) * g.W + iw]);
  }
  __device__ __forceinline__ void store(int grp, int m, int n, A v) const {
    const int64_t K = (int64_t)g.Cg * g.KH * g.KW;
    dw[((int64_t)grp * g.Og + m) * K + n] = convert<T>(v);
  }
};

// ----------------------------------------------------------------------------
// the GEMM: C[grp](M x N) = A[grp](M x K) * B[grp](K x N)
// blockIdx.x: m tile, blockIdx.y: n tile, blockIdx.z: grp * splits + slice.
// Thread (tx = tid % 16, ty = tid / 16) owns m = m0 + tx + 16*i, n = n0 + ty + 16*j
// (i, j < 4): consecutive threads store consecutive m (coalesced for y, dx).
// splits > 1: slice s covers k in [s*k_per, (s+1)*k_per) and writes its tile
// to part[(grp*splits + s)][m][n] instead of storing.
template <class P>
__global__ void __launch_bounds__(kGemmThreads)
    igemm_kernel(P p, int M, int N, int K, int splits, int k_per, typename P::A* __restrict__ part) {
  using A = typename P::A;
  __shared__ A As[kBK][kBM + 1];
  __shared__ A Bs[kBK][kBN + 1];
  const int grp = blockIdx.z / splits, slice = blockIdx.z % splits;
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const int k_begin = slice * k_per, k_end = min(K, k_begin + k_per);
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  A acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = A(0);
  for (int kb = k_begin; kb < k_end; kb += kBK) {
#pragma unroll
    for (int r = 0; r < (kBM * kBK) / kGemmThreads; ++r) {
      const int e = tid + r * kGemmThreads;
      const int mm = e % kBM, kk = e / kBM;
      const int m = m0 + mm, k = kb + kk;
      As[kk][mm] = (m < M && k < k_end) ? p.a(grp, m, k) : A(0);
    }
#pragma unroll
    for (int r = 0; r < (kBN * kBK) / kGemmThreads; ++r) {
      const int e = tid + r * kGemmThreads;
      const int nn = e % kBN, kk = e / kBN;
      const int n = n0 + nn, k = kb + kk;
      Bs[kk][nn] = (n < N && k < k_end) ? p.b(grp, k, n) : A(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      A av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = As[kk][tx + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][ty + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + tx + 16 * i, n = n0 + ty + 16 * j;
      if (m >= M || n >= N) continue;
      if (splits == 1)
        p.store(grp, m, n, acc[i][j]);
      else
        part[((int64_t)blockIdx.z * M + m) * N + n] = acc[i][j];
    }
}

// Add the k slices of each (grp, m, n) in slice order and store.
template <class P>
__global__ void igemm_reduce_kernel(P p, int M, int N, int G, int splits, const typename P::A* __restrict__ part) {
  using A = typename P::A;
  const int64_t total = (int64_t)G * M * N;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int n = (int)(e % N);
    const int64_t t = e / N;
    const int m = (int)(t % M), grp = (int)(t / M);
    A s = A(0);
    for (int sl = 0; sl < splits; ++sl) s += part[(((int64_t)grp * splits + sl) * M + m) * N + n];
    p.store(grp, m, n, s);
  }
}

template <class P>
void run_gemm(const gn_kernel_ctx* ctx, const P& p, int64_t M, int64_t N, int64_t K, int G, bool allow_split) {
  using A = typename P::A;
  if (M == 0 || N == 0) return;
  const int64_t mt = (M + kBM - 1) / kBM, nt = (N + kBN - 1) / kBN;
  if (mt > INT32_MAX || nt > 65535) fail(GN_ERR_UNSUPPORTED, "[conv2d] problem too large for the cuda conv kernel");
  // Split k when the tiles alone leave the device mostly idle.
  int splits = 1;
  const int64_t tiles = mt * nt * G, want = (int64_t)sm_count(ctx) * 2;
  if (allow_split && tiles < want && K > 8 * kBK) {
    splits = (int)std::min<int64_t>((want + tiles - 1) / tiles, (K + 4 * kBK - 1) / (4 * kBK));
    splits = std::min(splits, 64);
    if ((int64_t)G * splits > 65535) splits = std::max<int>(1, (int)(65535 / G));
  }
  int k_per = (int)(((K + splits - 1) / splits + kBK - 1) / kBK * kBK);
  if (k_per == 0) k_per = kBK;
  splits = (int)std::max<int64_t>(1, (K + k_per - 1) / k_per);
  A* part = nullptr;
  if (splits > 1) part = static_cast<A*>(workspace(ctx, (size_t)G * splits * M * N * sizeof(A)));
  dim3 grid((unsigned)mt, (unsigned)nt, (unsigned)(G * splits));
  igemm_kernel<P><<<grid, kGemmThreads, 0, stream(ctx)>>>(p, (int)M, (int)N, (int)K, splits, k_per, part);
  GN_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    igemm_reduce_kernel<P>
        <<<nn::grid_for(ctx, (int64_t)G * M * N), kThreads, 0, stream(ctx)>>>(p, (int)M, (int)N, G, splits, part);
    GN_CUDA_CHECK_LAUNCH();
  }
}

// grad_bias[o] = sum over (nb, oh, ow) of dy[nb, o, oh, ow]: one block per o.
template <class T>
__global__ void bias_grad_kernel(const T* __restrict__ dy, T* __restrict__ db, int N, int O, int64_t HW) {
  using A = acc_t<T>;
  __shared__ A red[32];
  const int o = blockIdx.x;
  A s = A(0);
  for (int nb = 0; nb < N; ++nb) {
    const T* p = dy + ((int64_t)nb * O + o) * HW;
    for (int64_t i = threadIdx.x; i < HW; i += blockDim.x) s += convert<A>(p[i]);
  }
  s = nn::block_sum(s, red);
  if (threadIdx.x == 0) db[o] = convert<T>(s);
}

// ----------------------------------------------------------------------------
// im2col + cuBLAS path (groups <= kMaxBlasGroups): the matrix products on the
// tensor cores (bf16/f16 with f32 accumulation; f32 and f64 in full
// precision, TF32 off), the gathers in plain kernels.  Per group g and image n
// (P = Ho*Wo, K = Cg*KH*KW, row-major):
//   forward  Y_n[g] (Og x P) = W[g] (Og x K) . col_n[g] (K x P)       strided-batched over n
//   grad_x   stride 1, dilation 1: the forward path on dY with the flipped,
//            transposed weight (transposed_dx_ok); otherwise
//            dcol_n[g] (K x P) = W[g]^T . dY_n[g] (Og x P)             strided-batched over n,
//            then col2im as a gather (dx = sum over kernel taps; no atomics)
//   grad_w   dW[g] (Og x K) += dY_n[g] . col_n[g]^T                     strided-batched over n
//            into per-image partials (f32, f64 for f64), then summed in image order
//            (deterministic; one GEMM per image left most SMs idle: Og x K is a few tiles)
// col holds all C*KH*KW rows of a chunk of images (chunked to bound the
// workspace); a 1x1 stride-1 unpadded conv uses x itself as col.

constexpr int kMaxBlasGroups = 8;
constexpr size_t kColBudget = size_t{512} << 20;  // bytes of col (+ dcol) per chunk

#define GN_CUBLAS_CHECK(expr) \
  check_library<cublasStatus_t>((expr), CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_ALLOC_FAILED, "[conv2d] cuBLAS", #expr)

// A cuBLAS handle per (thread, device), bound to the call's stream and a
// workspace from the call (capture-safe: no allocation inside cuBLAS).
cublasHandle_t blas(const gn_kernel_ctx* ctx) {
  thread_local std::map<int, cublasHandle_t> handles;  // lives to the end of the thread
  cublasHandle_t& h = handles[ctx->device.index];
  if (!h) GN_CUBLAS_CHECK(cublasCreate(&h));
  GN_CUBLAS_CHECK(cublasSetStream(h, stream(ctx)));
  constexpr size_t kWs = size_t{4} << 20;
  GN_CUBLAS_CHECK(cublasSetWorkspace(h, workspace(ctx, kWs), kWs));
  GN_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  return h;
}

template <class T>
constexpr cudaDataType_t cuda_type();
template <>
constexpr cudaDataType_t cuda_type<float>() {
  return CUDA_R_32F;
}
template <>
constexpr cudaDataType_t cuda_type<double>() {
  return CUDA_R_64F;
}
template <>
constexpr cudaDataType_t cuda_type<__half>() {
  return CUDA_R_16F;
}
template <>
constexpr cudaDataType_t cuda_type<__nv_bfloat16>() {
  return CUDA_R_16BF;
}

// col[nl][(c,i,j)][p] for images n0 + nl (zero outside the image).  One block
// per row (nl, c, i, j): the divisions happen once per row, the threads walk
// p with an incremental (oh, ow) (per-element integer division made this
// memory-bound kernel compute-bound).
template <class T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, Geom g, int n0, int nb) {
  const int P = g.Ho * g.Wo, KT = g.C * g.KH * g.KW;
  const int64_t rows = (int64_t)nb * KT;
  const int step_h = (int)blockDim.x / g.Wo, step_w = (int)blockDim.x % g.Wo;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int k = (int)(r % KT), nl = (int)(r / KT);
    const int j = k % g.KW, t2 = k / g.KW, i = t2 % g.KH, c = t2 / g.KH;
    const T* xp = x + ((int64_t)(n0 + nl) * g.C + c) * g.H * g.W;
    T* cp = col + r * P;
    int oh = (int)threadIdx.x / g.Wo, ow = (int)threadIdx.x % g.Wo;
    const int h_off = i * g.dh - g.ph, w_off = j * g.dw - g.pw;
    for (int p = threadIdx.x; p < P; p += blockDim.x) {
      const int ih = oh * g.sh + h_off, iw = ow * g.sw + w_off;
      cp[p] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? xp[ih * g.W + iw] : convert<T>(0.0f);
      ow += step_w;
      oh += step_h;
      if (ow >= g.Wo) {
        ow -= g.Wo;
        ++oh;
      }
    }
  }
}

// The same with 16-byte stores.  Each warp takes chunks of 32*V consecutive
// elements of a row (V = vec_width<T>()): lane l gathers elements l, l+32, ...
// (the coalesced reads of im2col_kernel, incremental (oh, ow)), parks them in
// shared memory, and writes elements V*l .. V*l+V-1 back with one 16-byte
// store.  Needs P % V == 0 (rows of whole 16-byte groups).  bf16 im2col went
// from 2-byte stores at about 40% of the bandwidth to 16-byte ones.
template <class T>
__global__ void __launch_bounds__(kThreads)
    im2col_vec_kernel(const T* __restrict__ x, T* __restrict__ col, Geom g, int n0, int nb) {
  constexpr int V = vec_width<T>(), W = kThreads / 32, CH = 32 * V;
  __shared__ __align__(16) T stage[W][CH];
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  T* st = stage[warp];
  const int P = g.Ho * g.Wo, KT = g.C * g.KH * g.KW;
  const int64_t rows = (int64_t)nb * KT;
  const int step_h = 32 / g.Wo, step_w = 32 % g.Wo;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int k = (int)(r % KT), nl = (int)(r / KT);
    const int j = k % g.KW, t2 = k / g.KW, i = t2 % g.KH, c = t2 / g.KH;
    const T* xp = x + ((int64_t)(n0 + nl) * g.C + c) * g.H * g.W;
    T* cp = col + r * P;
    const int h_off = i * g.dh - g.ph, w_off = j * g.dw - g.pw;
    for (int base = warp * CH; base < P; base += W * CH) {
      const int q0 = base + lane;
      int oh = q0 / g.Wo, ow = q0 - oh * g.Wo;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int ih = oh * g.sh + h_off, iw = ow * g.sw + w_off;
        const bool in = q0 + 32 * e < P && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
        st[lane + 32 * e] = in ? xp[ih * g.W + iw] : convert<T>(0.0f);
        ow += step_w;
        oh += step_h;
        if (ow >= g.Wo) ow -= g.Wo, ++oh;
      }
      __syncwarp();
      const int p0 = base + lane * V;
      if (p0 < P) store_vec<T, V>(cp + p0, *reinterpret_cast<const Vec<T, V>*>(st + lane * V));
      __syncwarp();
    }
  }
}

// o = n / s when n >= 0, s divides n and the quotient is < lim.
__device__ __forceinline__ bool tap_index(int n, int s, int lim, int& o) {
  if (n < 0) return false;
  if (s == 1) {
    o = n;
  } else {
    if (n % s) return false;
    o = n / s;
  }
  return o < lim;
}

// dx[n0+nl][c][h][w] = sum over taps (i, j) with oh*sh = h+ph-i*dh, ow*sw = w+pw-j*dw
// (exact, in range) of dcol[nl][(c,i,j)][oh*Wo+ow]; fixed tap order.  One block
// per (nl, c) plane, incremental (h, w) as im2col.
template <class T>
__global__ void col2im_kernel(const acc_t<T>* __restrict__ dcol, T* __restrict__ dx, Geom g, int n0, int nb) {
  using A = acc_t<T>;
  const int HW = g.H * g.W;
  const int64_t P = (int64_t)g.Ho * g.Wo, planes = (int64_t)nb * g.C;
  const int step_h = (int)blockDim.x / g.W, step_w = (int)blockDim.x % g.W;
  for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
    const int c = (int)(pl % g.C), nl = (int)(pl / g.C);
    const A* base = dcol + ((int64_t)nl * g.C + c) * g.KH * g.KW * P;
    T* dp = dx + ((int64_t)(n0 + nl) * g.C + c) * HW;
    int h = (int)threadIdx.x / g.W, w = (int)threadIdx.x % g.W;
    for (int hw = threadIdx.x; hw < HW; hw += blockDim.x) {
      A s = A(0);
      for (int i = 0; i < g.KH; ++i) {
        int oh;
        if (!tap_index(h + g.ph - i * g.dh, g.sh, g.Ho, oh)) continue;
        for (int j = 0; j < g.KW; ++j) {
          int ow;
          if (!tap_index(w + g.pw - j * g.dw, g.sw, g.Wo, ow)) continue;
          s += base[((int64_t)i * g.KW + j) * P + oh * g.Wo + ow];
        }
      }
      dp[hw] = convert<T>(s);
      w += step_w;
      h += step_h;
      if (w >= g.W) {
        w -= g.W;
        ++h;
      }
    }
  }
}

unsigned row_blocks(int64_t rows) { return (unsigned)std::min<int64_t>(std::max<int64_t>(rows, 1), INT32_MAX); }

template <class T>
void launch_im2col(const gn_kernel_ctx* ctx, const T* x, T* col, const Geom& g, int n0, int nb) {
  const unsigned blocks = row_blocks((int64_t)nb * g.C * g.KH * g.KW);
  const bool vec = ((int64_t)g.Ho * g.Wo) % vec_width<T>() == 0 && reinterpret_cast<uintptr_t>(col) % 16 == 0;
  if (vec)
    im2col_vec_kernel<T><<<blocks, kThreads, 0, stream(ctx)>>>(x, col, g, n0, nb);
  else
    im2col_kernel<T><<<blocks, kThreads, 0, stream(ctx)>>>(x, col, g, n0, nb);
  GN_CUDA_CHECK_LAUNCH();
}
template <class T>
void launch_col2im(const gn_kernel_ctx* ctx, const acc_t<T>* dcol, T* dx, const Geom& g, int n0, int nb) {
  col2im_kernel<T><<<row_blocks((int64_t)nb * g.C), kThreads, 0, stream(ctx)>>>(dcol, dx, g, n0, nb);
  GN_CUDA_CHECK_LAUNCH();
}

template <class T>
__global__ void add_bias_kernel(T* __restrict__ y, const T* __restrict__ b, int64_t total, int64_t P, int O) {
  using A = acc_t<T>;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x)
    y[e] = convert<T>(convert<A>(y[e]) + convert<A>(b[(e / P) % O]));
}

template <class S, class T>
__global__ void convert_kernel(const S* __restrict__ src, T* __restrict__ dst, int64_t n) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
    dst[e] = convert<T>(src[e]);
}

bool blas_path(const Geom& g) { return g.G <= kMaxBlasGroups; }
bool is_pointwise(const Geom& g) { return g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0; }

// Images per chunk so that col (and dcol) stay within kColBudget.
int chunk_images(const Geom& g, size_t bytes_per_elem) {
  const size_t per = (size_t)g.C * g.KH * g.KW * g.Ho * g.Wo * bytes_per_elem;
  return (int)std::max<size_t>(1, std::min<size_t>((size_t)g.N, kColBudget / std::max<size_t>(per, 1)));
}

template <class T>
void blas_forward(const gn_kernel_ctx* ctx, const T* x, const T* w, const T* bias, T* y, const Geom& g) {
  using A = acc_t<T>;
  cublasHandle_t h = blas(ctx);
  const int64_t P = (int64_t)g.Ho * g.Wo, K = (int64_t)g.Cg * g.KH * g.KW, KT = (int64_t)g.C * g.KH * g.KW;
  const A one = A(1), zero = A(0);
  const cublasComputeType_t ct = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const bool pw = is_pointwise(g);
  const int nb_max = pw ? g.N : chunk_images(g, sizeof(T));
  T* col = pw ? nullptr : static_cast<T*>(workspace(ctx, (size_t)nb_max * KT * P * sizeof(T)));
  for (int n0 = 0; n0 < g.N; n0 += nb_max) {
    const int nb = std::min(nb_max, g.N - n0);
    const T* cb = x + (int64_t)n0 * g.C * P;  // pointwise: x is col (P = H*W)
    if (!pw) {
      launch_im2col<T>(ctx, x, col, g, n0, nb);
      cb = col;
    }
    for (int grp = 0; grp < g.G; ++grp)
      GN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)P, g.Og, (int)K, &one,
                                                 cb + (int64_t)grp * K * P, cuda_type<T>(), (int)P, KT * P,
                                                 w + (int64_t)grp * g.Og * K, cuda_type<T>(), (int)K, 0, &zero,
                                                 y + ((int64_t)n0 * g.O + (int64_t)grp * g.Og) * P, cuda_type<T>(),
                                                 (int)P, (int64_t)g.O * P, nb, ct, CUBLAS_GEMM_DEFAULT));
  }
  if (bias) {
    const int64_t total = (int64_t)g.N * g.O * P;
    add_bias_kernel<T><<<nn::grid_for(ctx, total), kThreads, 0, stream(ctx)>>>(y, bias, total, P, g.O);
    GN_CUDA_CHECK_LAUNCH();
  }
}

// acc[e] += part[0][e] + part[1][e] + ... in that order (reproducible).
template <class A>
__global__ void sum_partials_kernel(const A* __restrict__ part, A* __restrict__ acc, int64_t n, int nb) {
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    A s = acc[e];
    for (int k = 0; k < nb; ++k) s += part[(int64_t)k * n + e];
    acc[e] = s;
  }
}

// wt[grp*Cg + c][o][i][j] = w[grp*Og + o][c][KH-1-i][KW-1-j]: the weight of the
// transposed convolution that gives grad_x (see transposed_geom).
template <class T>
__global__ void flip_transpose_kernel(const T* __restrict__ w, T* __restrict__ wt, Geom g) {
  const int64_t n = (int64_t)g.O * g.Cg * g.KH * g.KW;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    const int j = (int)(e % g.KW), i = (int)(e / g.KW % g.KH);
    const int64_t t = e / ((int64_t)g.KW * g.KH);
    const int o = (int)(t % g.Og), cc = (int)(t / g.Og);  // cc = grp*Cg + c
    const int grp = cc / g.Cg, c = cc % g.Cg;
    wt[e] = w[(((int64_t)(grp * g.Og + o) * g.Cg + c) * g.KH + (g.KH - 1 - i)) * g.KW + (g.KW - 1 - j)];
  }
}

// With stride 1 and dilation 1, grad_x is the forward convolution of grad_y
// (channels O, image Ho x Wo) with the flipped, transposed weight and padding
// k-1-p, which gives back an H x W image.  Going through blas_forward keeps
// the gathered matrix in T (im2col of grad_y) instead of an f32 dcol plus a
// col2im pass: half the memory traffic of grad_x.
bool transposed_dx_ok(const Geom& g) {
  return g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.ph <= g.KH - 1 && g.pw <= g.KW - 1 && !is_pointwise(g);
}
Geom transposed_geom(const Geom& g) {
  Geom t = g;
  t.C = g.O;
  t.H = g.Ho;
  t.W = g.Wo;
  t.O = g.C;
  t.Cg = g.Og;
  t.Og = g.Cg;
  t.ph = g.KH - 1 - g.ph;
  t.pw = g.KW - 1 - g.pw;
  t.Ho = g.H;
  t.Wo = g.W;
  return t;
}

template <class T>
void blas_backward(const gn_kernel_ctx* ctx, const T* dy, const T* x, const T* w, T* dx, T* dw, const Geom& g) {
  using A = acc_t<T>;
  const bool transposed = transposed_dx_ok(g);
  if (transposed) {
    T* wt = static_cast<T*>(workspace(ctx, (size_t)g.O * g.Cg * g.KH * g.KW * sizeof(T)));
    const int64_t n = (int64_t)g.O * g.Cg * g.KH * g.KW;
    flip_transpose_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(w, wt, g);
    GN_CUDA_CHECK_LAUNCH();
    blas_forward<T>(ctx, dy, wt, nullptr, dx, transposed_geom(g));
    if (!dw) return;
  }
  cublasHandle_t h = blas(ctx);
  const int64_t P = (int64_t)g.Ho * g.Wo, K = (int64_t)g.Cg * g.KH * g.KW, KT = (int64_t)g.C * g.KH * g.KW;
  const A one = A(1), zero = A(0);
  const cublasComputeType_t ct = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const bool pw = is_pointwise(g);
  const int nb_max = chunk_images(g, sizeof(T) + sizeof(A));
  T* col = (pw || !dw) ? nullptr : static_cast<T*>(workspace(ctx, (size_t)nb_max * KT * P * sizeof(T)));
  A* dcol = transposed ? nullptr : static_cast<A*>(workspace(ctx, (size_t)nb_max * KT * P * sizeof(A)));
  A* dw_acc = nullptr;
  A* dw_part = nullptr;  // nb_max per-image partials of dW
  if (dw) {
    dw_part = static_cast<A*>(workspace(ctx, (size_t)nb_max * g.O * K * sizeof(A)));
    dw_acc = static_cast<A*>(workspace(ctx, (size_t)g.O * K * sizeof(A)));
    GN_CUDA_CHECK(cudaMemsetAsync(dw_acc, 0, (size_t)g.O * K * sizeof(A), stream(ctx)));
  }
  for (int n0 = 0; n0 < g.N; n0 += nb_max) {
    const int nb = std::min(nb_max, g.N - n0);
    if (!transposed) {
      // grad_x: dcol = W^T . dY, then the gather
      for (int grp = 0; grp < g.G; ++grp)
        GN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_T, (int)P, (int)K, g.Og, &one, dy + ((int64_t)n0 * g.O + (int64_t)grp * g.Og) * P,
            cuda_type<T>(), (int)P, (int64_t)g.O * P, w + (int64_t)grp * g.Og * K, cuda_type<T>(), (int)K, 0, &zero,
            dcol + (int64_t)grp * K * P, cuda_type<A>(), (int)P, KT * P, nb, ct, CUBLAS_GEMM_DEFAULT));
      launch_col2im<T>(ctx, dcol, dx, g, n0, nb);
    }
    if (!dw) continue;
    // grad_w: dW += dY_n . col_n^T, image by image (fixed order)
    const T* cb = x + (int64_t)n0 * g.C * P;
    if (!pw) {
      launch_im2col<T>(ctx, x, col, g, n0, nb);
      cb = col;
    }
    for (int grp = 0; grp < g.G; ++grp)
      GN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          h, CUBLAS_OP_T, CUBLAS_OP_N, (int)K, g.Og, (int)P, &one, cb + (int64_t)grp * K * P, cuda_type<T>(), (int)P,
          KT * P, dy + ((int64_t)n0 * g.O + (int64_t)grp * g.Og) * P, cuda_type<T>(), (int)P, (int64_t)g.O * P, &zero,
          dw_part + (int64_t)grp * g.Og * K, cuda_type<A>(), (int)K, (int64_t)g.O * K, nb, ct, CUBLAS_GEMM_DEFAULT));
    const int64_t n = (int64_t)g.O * K;
    sum_partials_kernel<A><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(dw_part, dw_acc, n, nb);
    GN_CUDA_CHECK_LAUNCH();
  }
  if (dw) {
    const int64_t n = (int64_t)g.O * K;
    convert_kernel<A, T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(dw_acc, dw, n);
    GN_CUDA_CHECK_LAUNCH();
  }
}

// ----------------------------------------------------------------------------
// host side

std::pair<int64_t, int64_t> pair_attr(const char* op, const char* name, const gn_attr_value* a, size_t n, size_t i) {
  const Dims v = attr_ints(op, a, n, i);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  fail_op(GN_ERR_INVALID_ARGUMENT, op, std::string(name) + " must have 1 or 2 values");
}

Geom conv_geom(const char* op, const gn_tensor_view& x, const gn_tensor_view& w, const gn_attr_value* attrs,
               size_t n_attrs) {
  if (x.ndim != 4 || w.ndim != 4) fail_op(GN_ERR_SHAPE, op, "x and weight must be 4-D");
  const auto st = pair_attr(op, "stride", attrs, n_attrs, 0), pd = pair_attr(op, "padding", attrs, n_attrs, 1),
             dl = pair_attr(op, "dilation", attrs, n_attrs, 2);
  const int64_t G = attr_int(op, attrs, n_attrs, 3);
  if (st.first < 1 || st.second < 1 || dl.first < 1 || dl.second < 1 || pd.first < 0 || pd.second < 0)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "stride and dilation must be >= 1, padding >= 0");
  const int64_t C = x.shape[1], O = w.shape[0];
  if (G < 1 || C % G != 0 || O % G != 0 || w.shape[1] != C / G)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "groups " + std::to_string(G) + " do not fit x " + shape_str(x) + " and weight " + shape_str(w));
  for (int d = 0; d < 4; ++d)
    if (x.shape[d] >= INT32_MAX || w.shape[d] >= INT32_MAX) fail_op(GN_ERR_UNSUPPORTED, op, "dims >= 2^31");
  Geom g{};
  g.N = (int)x.shape[0];
  g.C = (int)C;
  g.H = (int)x.shape[2];
  g.W = (int)x.shape[3];
  g.O = (int)O;
  g.Cg = (int)w.shape[1];
  g.KH = (int)w.shape[2];
  g.KW = (int)w.shape[3];
  g.G = (int)G;
  g.Og = (int)(O / G);
  g.sh = (int)st.first;
  g.sw = (int)st.second;
  g.ph = (int)pd.first;
  g.pw = (int)pd.second;
  g.dh = (int)dl.first;
  g.dw = (int)dl.second;
  const int64_t hs = (int64_t)g.H + 2 * g.ph - (int64_t)g.dh * (g.KH - 1) - 1;
  const int64_t ws = (int64_t)g.W + 2 * g.pw - (int64_t)g.dw * (g.KW - 1) - 1;
  if (hs < 0 || ws < 0) fail_op(GN_ERR_SHAPE, op, "kernel is larger than the padded input");
  g.Ho = (int)(hs / g.sh + 1);
  g.Wo = (int)(ws / g.sw + 1);
  const int64_t big = std::max<int64_t>(
      {(int64_t)g.N * g.Ho * g.Wo, (int64_t)g.N * g.H * g.W, (int64_t)g.Cg * g.KH * g.KW, (int64_t)g.Og * g.KH * g.KW});
  if (big >= INT32_MAX) fail_op(GN_ERR_UNSUPPORTED, op, "GEMM dims >= 2^31");
  return g;
}

void expect_numel(const char* op, const char* what, const gn_tensor_view& v, int64_t n, int32_t dtype) {
  if (numel(v) != n || v.dtype != dtype)
    fail_op(GN_ERR_SHAPE, op, std::string(what) + " " + shape_str(v) + " has the wrong size or dtype");
}

// in: x, weight, [bias]; out: y; attrs: stride, padding, dilation, groups
GN_SDK_KERNEL(conv2d_fn) {
  const char* op = "conv2d";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &x = in[0], &w = in[1];
  const Geom g = conv_geom(op, x, w, attrs, n_attrs);
  expect_numel(op, "weight", w, numel(w), x.dtype);
  if (n_in > 2) expect_numel(op, "bias", in[2], g.O, x.dtype);
  expect_numel(op, "y", out[0], (int64_t)g.N * g.O * g.Ho * g.Wo, x.dtype);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* bias = n_in > 2 ? data_ptr<const T>(in[2]) : nullptr;
    if (blas_path(g) && g.Cg > 0) {
      if ((int64_t)g.N * g.O * g.Ho * g.Wo > 0)
        blas_forward<T>(ctx, data_ptr<const T>(x), data_ptr<const T>(w), bias, data_ptr<T>(out[0]), g);
      return;
    }
    ConvFwd<T> p{data_ptr<const T>(x), data_ptr<const T>(w), bias, data_ptr<T>(out[0]), g};
    run_gemm(ctx, p, (int64_t)g.N * g.Ho * g.Wo, g.Og, (int64_t)g.Cg * g.KH * g.KW, g.G, false);
  });
}

// in: grad_y, x, weight; out: grad_x, grad_weight, grad_bias; attrs as conv2d
GN_SDK_KERNEL(conv2d_backward_fn) {
  const char* op = "conv2d_backward";
  need_io(op, n_in, 3, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &dy = in[0], &x = in[1], &w = in[2];
  const Geom g = conv_geom(op, x, w, attrs, n_attrs);
  expect_numel(op, "grad_y", dy, (int64_t)g.N * g.O * g.Ho * g.Wo, x.dtype);
  expect_numel(op, "weight", w, numel(w), x.dtype);
  expect_numel(op, "grad_x", out[0], numel(x), x.dtype);
  if (n_out > 1) expect_numel(op, "grad_weight", out[1], numel(w), x.dtype);
  if (n_out > 2) expect_numel(op, "grad_bias", out[2], g.O, x.dtype);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *pdy = data_ptr<const T>(dy), *px = data_ptr<const T>(x), *pw = data_ptr<const T>(w);
    const bool empty = (int64_t)g.N * g.C * g.H * g.W == 0 || (int64_t)g.O * g.Ho * g.Wo == 0 || g.Cg == 0;
    if (blas_path(g) && !empty) {
      blas_backward<T>(ctx, pdy, px, pw, data_ptr<T>(out[0]), n_out > 1 ? data_ptr<T>(out[1]) : nullptr, g);
    } else {
      ConvBwdX<T> bx{pdy, pw, data_ptr<T>(out[0]), g};
      run_gemm(ctx, bx, (int64_t)g.N * g.H * g.W, g.Cg, (int64_t)g.Og * g.KH * g.KW, g.G, false);
    }
    if (n_out > 1 && !(blas_path(g) && !empty)) {
      ConvBwdW<T> bw{pdy, px, data_ptr<T>(out[1]), g};
      const int64_t K = (int64_t)g.N * g.Ho * g.Wo;
      if (K == 0)
        GN_CUDA_CHECK(cudaMemsetAsync(data_ptr<T>(out[1]), 0, (size_t)numel(w) * sizeof(T), stream(ctx)));
      else
        run_gemm(ctx, bw, g.Og, (int64_t)g.Cg * g.KH * g.KW, K, g.G, true);
    }
    if (n_out > 2 && g.O > 0) {
      bias_grad_kernel<T><<<g.O, kThreads, 0, stream(ctx)>>>(pdy, data_ptr<T>(out[2]), g.N, g.O, (int64_t)g.Ho * g.Wo);
      GN_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace

GN_CUDA_FAMILY(conv) {
  r.kernel("conv2d", kFloatDtypes, conv2d_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("conv2d_backward", kFloatDtypes, conv2d_backward_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
