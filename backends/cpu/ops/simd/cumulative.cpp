// backends/cpu/ops/simd/cumulative.cpp - cumsum, cumprod, logcumsumexp, cummax and cummin in
// C++.
//
// x dense (GN_KERNEL_CONTIGUOUS), seen as (outer, L, inner): each of the outer*inner lines is
// walked in order on one thread (lines in parallel).  The arithmetic is the reference's
// (backends/reference/cumulative.cpp): floating sums and products accumulate in double and each
// output is rounded once, integers wrap in int64, logcumsumexp uses torch's log-add-exp step,
// cummax/cummin keep the later index on ties and let a NaN win, so results are bit-identical.
#include <cmath>

#include "loops.h"

namespace gn::cpu::simd {
namespace {

// The (outer, L, inner) split of a dense view around dim.
struct Lines {
  int64_t outer = 1, L = 1, inner = 1;
  Lines(const gn_tensor_view& x, int64_t dim) {
    if (x.ndim == 0) return;
    for (int32_t d = 0; d < x.ndim; ++d) {
      if (d < dim) outer *= x.shape[d];
      if (d > dim) inner *= x.shape[d];
    }
    L = x.shape[dim];
  }
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t r) const { return (r / inner) * L * inner + r % inner; }
};

// dim attribute wrapped against x's rank (a 0-d x takes 0 and -1); -1 when out of range.
int64_t wrap(int64_t d, int32_t ndim) {
  const int64_t n = std::max<int32_t>(ndim, 1);
  if (d < -n || d >= n) return -1;
  return d < 0 ? d + n : d;
}

bool same_shape(const gn_tensor_view& a, const gn_tensor_view& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

double log_add_exp(double x, double y) {  // torch's _log_add_exp_helper
  const double lo = std::isnan(y) ? y : std::min(x, y), hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;
}

enum class Scan { sum, prod, logsumexp };

template <Scan S>
void scan(const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out, size_t n_out,
          const gn_attr_value* attrs, size_t n_attrs) {
  if (n_in != 1 || n_out != 1) GN_UNSUPPORTED(std::string("[") + op + "] arity");
  const gn_tensor_view &x = in[0], &o = out[0];
  const int64_t dim = wrap(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  const bool reverse = attr_i(attrs, n_attrs, 2, 0) != 0;
  if (dim < 0 || o.dtype != x.dtype || !same_shape(o, x)) GN_UNSUPPORTED(std::string("[") + op + "] these arguments");
  const Lines ln(x, dim);
  if (gn_view_numel(&x) == 0) return;
  if (!dispatch_dtype(x.dtype, [&](auto tag) {
        using T = typename Storage<decltype(tag)::value>::T;
        const T* px = (const T*)data_of(x);
        T* po = (T*)data_of(o);
        parallel_for(ln.count(), ln.L * 4, [&](int64_t r) {
          const int64_t b = ln.base(r);
          if constexpr (std::is_integral_v<T>) {
            uint64_t acc = S == Scan::prod ? 1 : 0;  // two's complement wrapping, as int64
            for (int64_t s = 0; s < ln.L; ++s) {
              const int64_t i = b + (reverse ? ln.L - 1 - s : s) * ln.inner;
              const uint64_t v = (uint64_t)(int64_t)px[i];
              acc = S == Scan::prod ? acc * v : acc + v;
              po[i] = (T)(int64_t)acc;
            }
          } else {
            double acc = S == Scan::prod ? 1.0 : S == Scan::sum ? 0.0 : -INFINITY;
            for (int64_t s = 0; s < ln.L; ++s) {
              const int64_t i = b + (reverse ? ln.L - 1 - s : s) * ln.inner;
              const double v = ld(px + i);
              acc = S == Scan::prod ? acc * v : S == Scan::sum ? acc + v : log_add_exp(v, acc);
              st(po + i, acc);
            }
          }
        });
      }))
    GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

GN_SDK_KERNEL(cumsum_kernel) { scan<Scan::sum>("cumsum", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cumprod_kernel) { scan<Scan::prod>("cumprod", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(logcumsumexp_kernel) { scan<Scan::logsumexp>("logcumsumexp", in, n_in, out, n_out, attrs, n_attrs); }

// cummax (MAX) / cummin: running extreme and the index where it was last reached.
template <bool MAX>
void extreme(const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out, size_t n_out,
             const gn_attr_value* attrs, size_t n_attrs) {
  if (n_in != 1 || n_out != 2) GN_UNSUPPORTED(std::string("[") + op + "] arity");
  const gn_tensor_view &x = in[0], &v = out[0], &ix = out[1];
  const int64_t dim = wrap(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  if (dim < 0 || v.dtype != x.dtype || ix.dtype != GN_I64 || !same_shape(v, x) || !same_shape(ix, x))
    GN_UNSUPPORTED(std::string("[") + op + "] these arguments");
  const Lines ln(x, dim);
  if (gn_view_numel(&x) == 0) return;
  if (!dispatch_dtype(x.dtype, [&](auto tag) {
        using T = typename Storage<decltype(tag)::value>::T;
        using K = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
        const T* px = (const T*)data_of(x);
        T* pv = (T*)data_of(v);
        int64_t* pi = (int64_t*)data_of(ix);
        parallel_for(ln.count(), ln.L * 2, [&](int64_t r) {
          const int64_t b = ln.base(r);
          int64_t best_i = 0;
          K best = 0;
          for (int64_t s = 0; s < ln.L; ++s) {
            const int64_t i = b + s * ln.inner;
            K cur;
            if constexpr (std::is_integral_v<T>)
              cur = (K)px[i];
            else
              cur = ld(px + i);
            bool take = s == 0;
            if constexpr (std::is_integral_v<T>)
              take = take || (MAX ? cur >= best : cur <= best);
            else
              take = take || std::isnan(cur) || (!std::isnan(best) && (MAX ? cur >= best : cur <= best));
            if (take) best = cur, best_i = s;
            pv[i] = px[b + best_i * ln.inner];
            pi[i] = best_i;
          }
        });
      }))
    GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

GN_SDK_KERNEL(cummax_kernel) { extreme<true>("cummax", in, n_in, out, n_out, attrs, n_attrs); }
GN_SDK_KERNEL(cummin_kernel) { extreme<false>("cummin", in, n_in, out, n_out, attrs, n_attrs); }

}  // namespace

void register_cumulative(const gn::sdk::Registrar& r) {
  const int32_t numeric[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64};
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  const int32_t floats[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("cumsum", numeric, cumsum_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cumprod", numeric, cumprod_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("logcumsumexp", floats, logcumsumexp_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cummax", all, cummax_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("cummin", all, cummin_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
