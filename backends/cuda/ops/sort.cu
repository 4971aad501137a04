// backends/cuda/ops/sort.cu - sort, argsort and topk along one dim.
//
// x dense (GN_KERNEL_CONTIGUOUS) seen as (outer, L, inner): S = outer*inner
// lines of length L.  Each element becomes an unsigned key of its dtype's
// width whose unsigned order is the reference's order (backends/reference/
// sort.cpp): floats map sign-magnitude to biased (-0 folded onto +0 so they
// tie, every NaN onto the largest key, so NaN sorts as the largest value);
// signed integers flip the sign bit; descending inverts the key.  Lines are
// then sorted with CUB's stable segmented radix sort (equal keys keep their
// position order: ties give the lower index first, in both directions), keys
// with their position in the line as value.  A last pass writes the first k
// of each line: values (raw copy from x) and int64 indices, back in
// (outer, k, inner) layout.  topk sorts whole lines and keeps k.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda {
namespace {

using nn::wrap_dim_checked;

// Scratch of one sort pass in one workspace block: keys and positions in and
// out (n each), S+1 segment offsets, and cub's temporary storage.
template <class K>
struct SortScratch {
  K *kin, *kout;
  int32_t *pin, *pout;
  int64_t* off;
  void* tmp;
};
template <class K>
SortScratch<K> sort_scratch(const gn_kernel_ctx* ctx, int64_t n, int64_t S, size_t temp) {
  nn::Carver cv;
  const size_t o_kin = cv.add(n * sizeof(K)), o_kout = cv.add(n * sizeof(K)), o_pin = cv.add(n * 4),
               o_pout = cv.add(n * 4), o_off = cv.add((S + 1) * 8), o_tmp = cv.add(temp);
  char* ws = static_cast<char*>(workspace(ctx, cv.total));
  return {(K*)(ws + o_kin),        (K*)(ws + o_kout),      (int32_t*)(ws + o_pin),
          (int32_t*)(ws + o_pout), (int64_t*)(ws + o_off), ws + o_tmp};
}

// topk with k <= kSelectMaxK and k <= L/8 selects instead of sorting whole lines.
constexpr int64_t kSelectMaxK = 1024;

// Lines at least this long are sorted one by one with the device-wide radix sort.
constexpr int64_t kLongLine = int64_t{1} << 16;

template <class T>
struct KeyOf {
  using type = typename nn::RawOf<sizeof(T)>::type;
};

// Order-preserving unsigned key of v (ascending).
template <class T>
__device__ __forceinline__ typename KeyOf<T>::type encode(T v) {
  using K = typename KeyOf<T>::type;
  constexpr int kBits = 8 * sizeof(K);
  constexpr K kSign = K(K(1) << (kBits - 1));
  K b;
  memcpy(&b, &v, sizeof(K));
  if constexpr (is_float_v<T>) {
    // exponent all ones and mantissa non-zero: NaN
    constexpr int kMan = std::is_same_v<T, float>    ? 23
                         : std::is_same_v<T, double> ? 52
                         : std::is_same_v<T, __half> ? 10
                                                     : 7;
    constexpr K kExpMask = K(K(~K(0)) >> 1) & K(~K((K(1) << kMan) - 1));
    constexpr K kManMask = K((K(1) << kMan) - 1);
    if ((b & kExpMask) == kExpMask && (b & kManMask) != 0) return K(~K(0));
    if ((b & K(~kSign)) == 0) b = 0;  // -0 -> +0
    return (b & kSign) ? K(~b) : K(b | kSign);
  } else if constexpr (std::is_signed_v<T>) {
    return K(b ^ kSign);
  } else {
    return b;
  }
}

template <class T>
__global__ void sort_keys_kernel(const T* __restrict__ x, typename KeyOf<T>::type* __restrict__ keys,
                                 int32_t* __restrict__ pos, int64_t L, int64_t inner, int64_t n, bool descending) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    // i = (s, j) with s = o*inner + in; source x[(o*L + j)*inner + in]
    const int64_t s = i / L, j = i - s * L;
    const int64_t o = s / inner, in = s - o * inner;
    auto k = encode<T>(x[(o * L + j) * inner + in]);
    keys[i] = descending ? decltype(k)(~k) : k;
    pos[i] = (int32_t)j;
  }
}

__global__ void seg_offsets_kernel(int64_t* __restrict__ off, int64_t S, int64_t L) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= S; i += (int64_t)gridDim.x * blockDim.x)
    off[i] = i * L;
}

// First k of each sorted line -> values (raw) and int64 indices, (outer, k, inner).
template <class T>
__global__ void sort_out_kernel(const T* __restrict__ x, const int32_t* __restrict__ pos, T* __restrict__ vals,
                                int64_t* __restrict__ idx, int64_t L, int64_t k, int64_t inner, int64_t n_out,
                                int64_t pos_stride) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_out; i += (int64_t)gridDim.x * blockDim.x) {
    // i = (o, j, in) in the output
    const int64_t in = i % inner, j = (i / inner) % k, o = i / (inner * k);
    const int64_t s = o * inner + in;
    const int64_t p = pos[s * pos_stride + j];
    if (vals) vals[i] = x[(o * L + p) * inner + in];
    if (idx) idx[i] = p;
  }
}

// ----------------------------------------------------------------------------
// topk with small k: radix select per line instead of a full sort.
//
// One block per line finds the k-th smallest key with 8-bit digit passes
// (shared-memory histograms of the keys that match the digits found so far),
// then writes, in index order (block scans over chunks), every key below that
// threshold and the first `remaining` keys equal to it: exactly k keys with
// their positions, in position order.  A stable segmented sort of those k per
// line then gives (key, position) order: the same result as sorting the line.

constexpr int kSelThreads = 512;

template <class T>
__global__ void __launch_bounds__(kSelThreads)
    topk_select_kernel(const T* __restrict__ x, int64_t L, int64_t inner, int64_t k, bool descending,
                       typename KeyOf<T>::type* __restrict__ sel_keys, int32_t* __restrict__ sel_pos) {
  using K = typename KeyOf<T>::type;
  using Scan = cub::BlockScan<int, kSelThreads>;
  __shared__ unsigned int hist[256];
  __shared__ K s_prefix;
  __shared__ long long s_remaining;
  __shared__ typename Scan::TempStorage scan_tmp;
  const int64_t seg = blockIdx.x, o = seg / inner, in = seg - o * inner;
  const T* base = x + o * L * inner + in;  // element j of the line at base[j * inner]
  auto key_at = [&](int64_t j) {
    const K kk = encode<T>(base[j * inner]);
    return descending ? K(~kk) : kk;
  };
  K prefix = 0, mask = 0;
  long long remaining = k;
  for (int shift = 8 * (int)sizeof(K) - 8; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
      const K kk = key_at(j);
      if ((kk & mask) == prefix) atomicAdd(&hist[(kk >> shift) & 0xffu], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long cum = 0;
      int b = 0;
      for (; b < 255; ++b) {
        if (cum + hist[b] >= remaining) break;
        cum += hist[b];
      }
      s_remaining = remaining - cum;
      s_prefix = K(prefix | (K(b) << shift));
    }
    __syncthreads();
    remaining = s_remaining;
    prefix = s_prefix;
    mask = K(mask | (K(0xff) << shift));
    __syncthreads();
  }
  // prefix is the k-th smallest key; take keys < prefix and the first `remaining` == prefix.
  long long taken = 0, eq_taken = 0;
  for (int64_t j0 = 0; j0 < L && taken < k; j0 += blockDim.x) {
    const int64_t j = j0 + threadIdx.x;
    K kk = 0;
    bool lt = false, eq = false;
    if (j < L) {
      kk = key_at(j);
      lt = kk < prefix;
      eq = kk == prefix;
    }
    int eq_rank, eq_total;
    Scan(scan_tmp).ExclusiveSum(eq ? 1 : 0, eq_rank, eq_total);
    __syncthreads();
    const bool take = lt || (eq && eq_taken + eq_rank < remaining);
    int rank, total;
    Scan(scan_tmp).ExclusiveSum(take ? 1 : 0, rank, total);
    __syncthreads();
    if (take) {
      sel_keys[seg * k + taken + rank] = kk;
      sel_pos[seg * k + taken + rank] = (int32_t)j;
    }
    taken += total;
    eq_taken += eq_total;
  }
}

// Temporary bytes of CUB's stable segmented sort of n (K, position) pairs in S segments.
template <class K>
size_t segmented_sort_temp(const gn_kernel_ctx* ctx, int64_t n, int64_t S) {
  size_t temp = 0;
  GN_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(
      nullptr, temp, (const K*)nullptr, (K*)nullptr, (const int32_t*)nullptr, (int32_t*)nullptr, n, S,
      (const int64_t*)nullptr, (const int64_t*)nullptr, stream(ctx)));
  return temp;
}

// Stable sort of sc's n (key, position) pairs (kin, pin -> kout, pout) in S segments of seg
// pairs each; temp: segmented_sort_temp's bytes.
template <class K>
void segmented_sort(const gn_kernel_ctx* ctx, const SortScratch<K>& sc, size_t temp, int64_t n, int64_t S,
                    int64_t seg) {
  seg_offsets_kernel<<<nn::grid_for(ctx, S + 1), kThreads, 0, stream(ctx)>>>(sc.off, S, seg);
  GN_CUDA_CHECK_LAUNCH();
  GN_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(sc.tmp, temp, sc.kin, sc.kout, sc.pin, sc.pout, n, S, sc.off,
                                                          sc.off + 1, stream(ctx)));
}

void topk_select(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& x, int64_t outer, int64_t L,
                 int64_t inner, int64_t k, bool largest, const gn_tensor_view& values, const gn_tensor_view& indices) {
  const int64_t S = outer * inner, n = S * k;
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = typename KeyOf<T>::type;
    const size_t temp = segmented_sort_temp<K>(ctx, n, S);
    const SortScratch<K> sc = sort_scratch<K>(ctx, n, S, temp);
    topk_select_kernel<T>
        <<<(unsigned)S, kSelThreads, 0, stream(ctx)>>>(data_ptr<const T>(x), L, inner, k, largest, sc.kin, sc.pin);
    GN_CUDA_CHECK_LAUNCH();
    segmented_sort(ctx, sc, temp, n, S, k);
    sort_out_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(
        data_ptr<const T>(x), sc.pout, data_ptr<T>(values), data_ptr<int64_t>(indices), L, k, inner, n, k);
    GN_CUDA_CHECK_LAUNCH();
  });
}

// Sort every line of x along dim; write the first k: values (optional) and
// indices (optional).
void sort_lines(const gn_kernel_ctx* ctx, const char* op, const gn_tensor_view& x, int32_t dim, bool descending,
                int64_t k, const gn_tensor_view* values, const gn_tensor_view* indices) {
  DeviceGuard dg(ctx);
  int64_t outer = 1, L = 1, inner = 1;
  if (x.ndim > 0) {
    for (int32_t d = 0; d < dim; ++d) outer *= x.shape[d];
    L = x.shape[dim];
    for (int32_t d = dim + 1; d < x.ndim; ++d) inner *= x.shape[d];
  }
  if (k < 0 || k > L)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "k " + std::to_string(k) + " is out of range for a dim of size " + std::to_string(L));
  const int64_t n_out = outer * k * inner;
  if (values && (numel(*values) != n_out || values->dtype != x.dtype))
    fail_op(GN_ERR_SHAPE, op, "values " + shape_str(*values) + " do not match input " + shape_str(x));
  if (indices && (numel(*indices) != n_out || indices->dtype != GN_I64))
    fail_op(GN_ERR_SHAPE, op, "indices " + shape_str(*indices) + " must be int64 matching " + shape_str(x));
  const int64_t n = outer * L * inner, S = outer * inner;
  if (n_out == 0) return;
  if (n >= INT32_MAX) fail_op(GN_ERR_UNSUPPORTED, op, "more than 2^31-1 elements is not supported on cuda");
  if (values && indices && k <= kSelectMaxK && k * 8 <= L && S < INT32_MAX) {
    topk_select(ctx, op, x, outer, L, inner, k, descending, *values, *indices);
    return;
  }
  dispatch_all(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = typename KeyOf<T>::type;
    // Long lines: one device-wide radix sort (onesweep) per line; CUB's
    // segmented sort handles a long segment with a single block (16M f32
    // keys: 99 ms instead of 1 ms).  Short lines: one segmented sort.
    const bool per_line = L >= kLongLine;
    size_t temp = 0;
    if (per_line)
      GN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, (const K*)nullptr, (K*)nullptr,
                                                    (const int32_t*)nullptr, (int32_t*)nullptr, L, 0,
                                                    (int)(8 * sizeof(K)), stream(ctx)));
    else
      temp = segmented_sort_temp<K>(ctx, n, S);
    const SortScratch<K> sc = sort_scratch<K>(ctx, n, S, temp);
    sort_keys_kernel<T><<<nn::grid_for(ctx, n), kThreads, 0, stream(ctx)>>>(data_ptr<const T>(x), sc.kin, sc.pin, L,
                                                                            inner, n, descending);
    GN_CUDA_CHECK_LAUNCH();
    if (per_line) {
      for (int64_t sg = 0; sg < S; ++sg) {
        size_t t = temp;
        GN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sc.tmp, t, sc.kin + sg * L, sc.kout + sg * L, sc.pin + sg * L,
                                                      sc.pout + sg * L, L, 0, (int)(8 * sizeof(K)), stream(ctx)));
      }
    } else {
      segmented_sort(ctx, sc, temp, n, S, L);
    }
    sort_out_kernel<T><<<nn::grid_for(ctx, n_out), kThreads, 0, stream(ctx)>>>(
        data_ptr<const T>(x), sc.pout, values ? data_ptr<T>(*values) : nullptr,
        indices ? data_ptr<int64_t>(*indices) : nullptr, L, k, inner, n_out, L);
    GN_CUDA_CHECK_LAUNCH();
  });
}

// sort(x; dim, descending, stable) -> (values, indices)
GN_SDK_KERNEL(sort_fn) {
  need_io("sort", n_in, 1, n_out, 2);
  const gn_tensor_view& x = in[0];
  const int32_t dim = wrap_dim_checked("sort", attr_int("sort", attrs, n_attrs, 0), x.ndim);
  const bool desc = attr_int("sort", attrs, n_attrs, 1) != 0;
  sort_lines(ctx, "sort", x, dim, desc, x.ndim == 0 ? 1 : x.shape[dim], &out[0], &out[1]);
}

// argsort(x; dim, descending, stable) -> indices
GN_SDK_KERNEL(argsort_fn) {
  need_io("argsort", n_in, 1, n_out, 1);
  const gn_tensor_view& x = in[0];
  const int32_t dim = wrap_dim_checked("argsort", attr_int("argsort", attrs, n_attrs, 0), x.ndim);
  const bool desc = attr_int("argsort", attrs, n_attrs, 1) != 0;
  sort_lines(ctx, "argsort", x, dim, desc, x.ndim == 0 ? 1 : x.shape[dim], nullptr, &out[0]);
}

// topk(x; k, dim, largest, sorted) -> (values, indices), always sorted
GN_SDK_KERNEL(topk_fn) {
  need_io("topk", n_in, 1, n_out, 2);
  const gn_tensor_view& x = in[0];
  const int64_t k = attr_int("topk", attrs, n_attrs, 0);
  const int32_t dim = wrap_dim_checked("topk", attr_int("topk", attrs, n_attrs, 1), x.ndim);
  const bool largest = attr_int("topk", attrs, n_attrs, 2) != 0;
  sort_lines(ctx, "topk", x, dim, largest, k, &out[0], &out[1]);
}

// ----------------------------------------------------------------------------
// searchsorted: one thread per value, torch's binary search (a NaN compares false).

template <class T>
__global__ void searchsorted_kernel(const T* __restrict__ s, const T* __restrict__ v, void* __restrict__ out,
                                    int64_t nv, int64_t M, int64_t per, int one, int right, int out32) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nv; i += (int64_t)gridDim.x * blockDim.x) {
    const T* line = s + (one ? 0 : (i / per) * M);
    const T val = v[i];
    int64_t lo = 0, hi = M;
    while (lo < hi) {
      const int64_t mid = lo + ((hi - lo) >> 1);
      const T x = line[mid];
      if (right ? !(x > val) : !(x >= val))
        lo = mid + 1;
      else
        hi = mid;
    }
    if (out32)
      static_cast<int32_t*>(out)[i] = (int32_t)lo;
    else
      static_cast<int64_t*>(out)[i] = lo;
  }
}

// searchsorted(sorted (M) or (*, M), values; right, out_int32) -> positions.
GN_SDK_KERNEL(searchsorted_fn) {
  const char* op = "searchsorted";
  need_io(op, n_in, 2, n_out, 1);
  DeviceGuard dg(ctx);
  const gn_tensor_view &s = in[0], &v = in[1], &o = out[0];
  const bool right = attr_int(op, attrs, n_attrs, 0) != 0;
  const int64_t nv = numel(v);
  if (s.ndim < 1 || s.dtype != v.dtype || numel(o) != nv || (o.dtype != GN_I64 && o.dtype != GN_I32))
    fail_op(GN_ERR_SHAPE, op, "sorted sequence, values and output do not fit");
  const int64_t M = s.shape[s.ndim - 1];
  const int64_t per = s.ndim == 1 ? nv : (v.ndim ? v.shape[v.ndim - 1] : 1);
  if (s.ndim > 1 && (v.ndim != s.ndim || (M ? numel(s) / M : 0) * per != nv))
    fail_op(GN_ERR_SHAPE, op, "values " + shape_str(v) + " do not match the sorted sequence " + shape_str(s));
  if (nv == 0) return;
  dispatch_all(s.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      fail_op(GN_ERR_DTYPE, op, "16-bit floats are compared through float32 first (inference casts them)");
    } else {
      searchsorted_kernel<T><<<blocks_for(nv), kThreads, 0, stream(ctx)>>>(data_ptr<const T>(s), data_ptr<const T>(v),
                                                                           gn_view_ptr(&o), nv, M, per, s.ndim == 1,
                                                                           right, o.dtype == GN_I32);
    }
  });
  GN_CUDA_CHECK_LAUNCH();
}

}  // namespace

GN_CUDA_FAMILY(sort) {
  r.kernel("sort", kAllDtypes, sort_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("argsort", kAllDtypes, argsort_fn, GN_KERNEL_CONTIGUOUS);
  r.kernel("topk", kNumericDtypes, topk_fn, GN_KERNEL_CONTIGUOUS);
  const int32_t searchable[] = {GN_F32, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64};
  r.kernel("searchsorted", searchable, searchsorted_fn, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cuda
