// backends/cpu/ops/simd/sort.cpp - sort, argsort and topk along one dim, in C++; searchsorted.
//
// x dense (GN_KERNEL_CONTIGUOUS), seen as (outer, L, inner); every line along
// dim is ordered on its own thread (lines in parallel).  The order is the
// reference's: stable (equal values keep their index order, in both
// directions) with NaN as the largest value; integers compare as integers.
// Stability comes from breaking ties by position, which makes the comparison
// a strict total order, so std::sort gives the stable result and topk can use
// std::partial_sort (O(L log k)) and still return exactly the stable prefix.
// Values are copied bytes (same dtype); indices are int64.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

// Key type of the comparison: double for floats (f16/bf16 widened exactly),
// int64 for integers and bool.
template <class T>
using KeyT = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

template <class T>
void sort_lines(const gn_tensor_view& x, int64_t dim, bool descending, int64_t k, const gn_tensor_view* values,
                const gn_tensor_view* indices) {
  using K = KeyT<T>;
  int64_t outer = 1, inner = 1, L = 1;
  if (x.ndim > 0) {
    for (int32_t d = 0; d < x.ndim; ++d) {
      if (d < dim) outer *= x.shape[d];
      if (d > dim) inner *= x.shape[d];
    }
    L = x.shape[dim];
  }
  const T* px = (const T*)data_of(x);
  T* pv = values ? (T*)data_of(*values) : nullptr;
  int64_t* pi = indices ? (int64_t*)data_of(*indices) : nullptr;
  parallel_for(outer * inner, L * 8, [&](int64_t r) {
    const int64_t o = r / inner, i = r % inner, base = o * L * inner + i, obase = o * k * inner + i;
    thread_local std::vector<K> v;
    thread_local std::vector<int64_t> order;
    v.resize((size_t)L);
    order.resize((size_t)L);
    for (int64_t j = 0; j < L; ++j) {
      if constexpr (std::is_integral_v<T>)
        v[(size_t)j] = (K)px[base + j * inner];
      else
        v[(size_t)j] = ld(px + base + j * inner);
    }
    std::iota(order.begin(), order.end(), int64_t(0));
    auto before = [&](int64_t a, int64_t b) {  // a strictly before b, ties by position
      const K va = v[(size_t)a], vb = v[(size_t)b];
      bool lt, gt;
      if constexpr (std::is_integral_v<T>) {
        lt = va < vb;
        gt = vb < va;
      } else {  // NaN is the largest
        lt = !std::isnan(va) && (std::isnan(vb) || va < vb);
        gt = !std::isnan(vb) && (std::isnan(va) || vb < va);
      }
      if (descending) std::swap(lt, gt);
      return lt || (!gt && a < b);
    };
    if (k < L)
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    else
      std::sort(order.begin(), order.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t src = order[(size_t)j];
      if (pv) pv[obase + j * inner] = px[base + src * inner];
      if (pi) pi[obase + j * inner] = src;
    }
  });
}

// Output o must have x's shape with `len` along dim.
bool fits(const gn_tensor_view& o, const gn_tensor_view& x, int64_t dim, int64_t len) {
  if (o.ndim != x.ndim) return false;
  for (int32_t d = 0; d < x.ndim; ++d)
    if (o.shape[d] != (d == dim ? len : x.shape[d])) return false;
  return true;
}

void run(const char* op, const gn_tensor_view& x, int64_t dim_attr, bool descending, int64_t k, bool has_k,
         const gn_tensor_view* values, const gn_tensor_view* indices) {
  int64_t dim = dim_attr < 0 ? dim_attr + std::max<int32_t>(x.ndim, 1) : dim_attr;
  if (dim < 0 || dim >= std::max<int32_t>(x.ndim, 1))
    GN_UNSUPPORTED(std::string("[") + op + "] dim");  // reference: error
  const int64_t L = x.ndim == 0 ? 1 : x.shape[dim];
  if (!has_k) k = L;
  if (k < 0 || k > L) GN_UNSUPPORTED(std::string("[") + op + "] k out of range");  // reference: error
  if ((values && (values->dtype != x.dtype || !fits(*values, x, dim, k))) ||
      (indices && (indices->dtype != GN_I64 || !fits(*indices, x, dim, k))))
    GN_UNSUPPORTED(std::string("[") + op + "] outputs");
  if (gn_view_numel(&x) == 0 || k == 0) return;
  if (!dispatch_dtype(x.dtype, [&](auto tag) {
        using T = typename Storage<decltype(tag)::value>::T;
        sort_lines<T>(x, x.ndim == 0 ? 0 : dim, descending, k, values, indices);
      }))
    GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

GN_SDK_KERNEL(sort_kernel) {
  if (n_in != 1 || n_out != 2) GN_UNSUPPORTED("[sort] arity");
  run("sort", in[0], attr_i(attrs, n_attrs, 0, -1), attr_i(attrs, n_attrs, 1, 0) != 0, 0, false, &out[0], &out[1]);
}

GN_SDK_KERNEL(argsort_kernel) {
  if (n_in != 1 || n_out != 1) GN_UNSUPPORTED("[argsort] arity");
  run("argsort", in[0], attr_i(attrs, n_attrs, 0, -1), attr_i(attrs, n_attrs, 1, 0) != 0, 0, false, nullptr, &out[0]);
}

GN_SDK_KERNEL(topk_kernel) {
  if (n_in != 1 || n_out != 2) GN_UNSUPPORTED("[topk] arity");
  run("topk", in[0], attr_i(attrs, n_attrs, 1, -1), attr_i(attrs, n_attrs, 2, 1) != 0, attr_i(attrs, n_attrs, 0, -1),
      true, &out[0], &out[1]);
}

// ----------------------------------------------------------------------------
// searchsorted: one binary search per value (values in parallel), torch's comparisons.

template <class K>
int64_t search_line(const K* line, int64_t M, K v, bool right) {
  int64_t lo = 0, hi = M;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    if (right ? !(line[mid] > v) : !(line[mid] >= v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

GN_SDK_KERNEL(searchsorted_kernel) {
  if (n_in != 2 || n_out != 1) GN_UNSUPPORTED("[searchsorted] arity");
  const gn_tensor_view &s = in[0], &v = in[1], &o = out[0];
  const bool right = attr_i(attrs, n_attrs, 0, 0) != 0;
  const int64_t nv = gn_view_numel(&v);
  if (s.ndim < 1 || s.dtype != v.dtype || (o.dtype != GN_I64 && o.dtype != GN_I32) || gn_view_numel(&o) != nv)
    GN_UNSUPPORTED("[searchsorted] these arguments");
  const int64_t M = s.shape[s.ndim - 1], lines = M ? gn_view_numel(&s) / M : 0;
  const int64_t per = s.ndim == 1 ? nv : (v.ndim ? v.shape[v.ndim - 1] : 1);
  if (s.ndim > 1 && (v.ndim != s.ndim || lines * per != nv)) GN_UNSUPPORTED("[searchsorted] shapes");
  if (nv == 0) return;
  if (!dispatch_dtype(s.dtype, [&](auto tag) {
        using T = typename Storage<decltype(tag)::value>::T;
        using K = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
        const T *ps = (const T*)data_of(s), *pv = (const T*)data_of(v);
        std::vector<K> keys((size_t)gn_view_numel(&s));
        for (size_t i = 0; i < keys.size(); ++i) {
          if constexpr (std::is_integral_v<T>)
            keys[i] = (K)ps[i];
          else
            keys[i] = ld(ps + i);
        }
        parallel_for(nv, 16, [&](int64_t i) {
          const int64_t line = s.ndim == 1 ? 0 : i / per;
          K val;
          if constexpr (std::is_integral_v<T>)
            val = (K)pv[i];
          else
            val = ld(pv + i);
          const int64_t pos = search_line(keys.data() + line * M, M, val, right);
          if (o.dtype == GN_I64)
            ((int64_t*)data_of(o))[i] = pos;
          else
            ((int32_t*)data_of(o))[i] = (int32_t)pos;
        });
      }))
    GN_UNSUPPORTED("[searchsorted] dtype");
}

}  // namespace

void register_sort(const gn::sdk::Registrar& r) {
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  const int32_t numeric[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64};
  r.kernel("sort", all, sort_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("argsort", all, argsort_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("topk", numeric, topk_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("searchsorted", numeric, searchsorted_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
