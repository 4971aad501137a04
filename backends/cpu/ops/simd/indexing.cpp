// backends/cpu/ops/simd/indexing.cpp - embedding / embedding_backward,
// gather, scatter, scatter_add, index_select, index_add, masked_fill and
// one_hot in C++.
//
//  * embedding: rows of weight copied (memcpy) per id, ids in parallel;
//    f32/f64/bf16/f16 weights, int32/int64 ids.  Any id out of range answers
//    "unsupported" before writing, so the reference reports GN_ERR_INDEX.
//  * embedding_backward: deterministic without atomics: ids are bucketed by
//    value (counting sort, stable), then each weight row sums its gradient
//    rows in increasing position order in double, exactly the reference's
//    order: bit-identical results; rows in parallel.
//  * the others: registered GN_KERNEL_CONTIGUOUS (dense row-major views).
//    Most are byte copies, so every dtype works; the accumulating ones
//    (scatter_add, index_add) take every dtype but bool (as the reference).
//    Inputs of another dtype than the output (promotion), 0-d inputs of the
//    gather/scatter family, and any index out of range answer "unsupported"
//    before anything is written, so the reference kernel runs and reports the
//    error (GN_ERR_INDEX, GN_ERR_SHAPE) itself.
//
// Order of accumulation (scatter_add, index_add): the reference visits the
// index (or src) in row-major order and rounds after every addition.  Here the
// work is split into independent "fibers" (all positions that differ only
// along `dim`; two fibers never touch the same output element) and each fiber
// is walked in increasing order along dim, so every output element receives
// its terms in the reference's order: bit-identical results.
#include "data_movement.h"

namespace gn::cpu::simd {
namespace {

// ----------------------------------------------------------------------------
// embedding

// Index values (i64/i32/i8/u8) of a dense view, all checked against [0, size).
bool load_indices(const gn_tensor_view& ix, int64_t size, std::vector<int64_t>& out) {
  const int64_t n = gn_view_numel(&ix);
  out.resize((size_t)n);
  if (ix.dtype == GN_I64)
    copy_bytes(out.data(), data_of(ix), (size_t)n * 8);
  else if (ix.dtype == GN_I32)
    for (int64_t i = 0; i < n; ++i) out[(size_t)i] = ((const int32_t*)data_of(ix))[i];
  else if (ix.dtype == GN_I8)
    for (int64_t i = 0; i < n; ++i) out[(size_t)i] = ((const int8_t*)data_of(ix))[i];
  else if (ix.dtype == GN_U8)
    for (int64_t i = 0; i < n; ++i) out[(size_t)i] = ((const uint8_t*)data_of(ix))[i];
  else
    return false;
  bool ok = true;
  for (int64_t v : out) ok &= v >= 0 && v < size;
  return ok;
}

// embedding's ids: int64 or int32 only, checked against [0, V).
bool load_ids(const gn_tensor_view& ids, int64_t V, std::vector<int64_t>& out) {
  return (ids.dtype == GN_I64 || ids.dtype == GN_I32) && load_indices(ids, V, out);
}

GN_SDK_KERNEL(embedding_kernel) {
  if (n_in < 2 || n_out < 1) GN_UNSUPPORTED("[embedding] arity");
  const gn_tensor_view &w = in[0], &o = out[0];
  std::vector<int64_t> ids;
  if (w.ndim != 2 || o.dtype != w.dtype || !load_ids(in[1], w.shape[0], ids) ||
      gn_view_numel(&o) != (int64_t)ids.size() * w.shape[1])
    GN_UNSUPPORTED("[embedding] these arguments");
  const int64_t D = w.shape[1];
  const size_t row = (size_t)D * gn_dtype_size(w.dtype);
  const char* pw = (const char*)data_of(w);
  char* po = (char*)data_of(o);
  parallel_for((int64_t)ids.size(), D, [&](int64_t r) { copy_bytes(po + r * row, pw + ids[(size_t)r] * row, row); });
}

GN_SDK_KERNEL(embedding_backward_kernel) {
  if (n_in < 2 || n_out < 1) GN_UNSUPPORTED("[embedding_backward] arity");
  const gn_tensor_view &g = in[0], &o = out[0];
  const int64_t V = attr_i(attrs, n_attrs, 0, -1);
  std::vector<int64_t> ids;
  if (o.ndim != 2 || o.shape[0] != V || o.dtype != g.dtype || !load_ids(in[1], V, ids) ||
      gn_view_numel(&g) != (int64_t)ids.size() * o.shape[1])
    GN_UNSUPPORTED("[embedding_backward] these arguments");
  const int64_t D = o.shape[1], n = (int64_t)ids.size();
  std::vector<int64_t> start((size_t)V + 1, 0), pos((size_t)n);
  for (int64_t id : ids) ++start[(size_t)id + 1];
  for (int64_t v = 0; v < V; ++v) start[(size_t)v + 1] += start[(size_t)v];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < n; ++r) pos[(size_t)fill[(size_t)ids[(size_t)r]]++] = r;
  if (!dispatch_float_h(g.dtype, [&](auto z) {
        using T = decltype(z);
        const T* pg = (const T*)data_of(g);
        T* po = (T*)data_of(o);
        parallel_for(V, D * (1 + n / std::max<int64_t>(V, 1)), [&](int64_t v) {
          std::vector<double> acc((size_t)D, 0.0);
          for (int64_t k = start[(size_t)v]; k < start[(size_t)v + 1]; ++k) {
            const T* gr = pg + pos[(size_t)k] * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) acc[(size_t)d] += (double)gr[d];
          }
          for (int64_t d = 0; d < D; ++d) po[v * D + d] = to_t<T>(acc[(size_t)d]);
        });
      }))
    GN_UNSUPPORTED("[embedding_backward] dtype");
}

// ----------------------------------------------------------------------------
// gather / scatter / scatter_add: index has x's rank; fibers along dim.

// Element offsets of fiber f's first element in index-shaped coordinates:
// f enumerates all positions of index with coordinate dim = 0 (row-major);
// returns the offsets under each stride set in `st` (one per array).
template <size_t K>
void fiber_offsets(int64_t f, const Dims& shape, int32_t dim, const Dims* const (&st)[K], int64_t (&off)[K]) {
  for (size_t k = 0; k < K; ++k) off[k] = 0;
  for (int32_t d = (int32_t)shape.size() - 1; d >= 0; --d) {
    if (d == dim) continue;
    const int64_t c = f % shape[(size_t)d];
    f /= shape[(size_t)d];
    for (size_t k = 0; k < K; ++k) off[k] += c * (*st[k])[(size_t)d];
  }
}

GN_SDK_KERNEL(gather_kernel) {
  const gn_tensor_view &x = in[0], &ix = in[1], &o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  bool ok = n_in == 2 && x.ndim > 0 && dim >= 0 && ix.ndim == x.ndim && o.dtype == x.dtype && dims_of(o) == dims_of(ix);
  for (int32_t d = 0; ok && d < x.ndim; ++d) ok = d == dim || ix.shape[d] <= x.shape[d];
  std::vector<int64_t> ids;
  if (!ok || !load_indices(ix, ok ? x.shape[dim] : 0, ids)) GN_UNSUPPORTED("[gather] these arguments");
  const Dims shape = dims_of(ix), xs = dense_strides(dims_of(x)), is = dense_strides(shape);
  const int64_t K = shape[(size_t)dim], fibers = K ? (int64_t)ids.size() / K : 0;
  const size_t es = gn_dtype_size(x.dtype);
  const char* px = (const char*)data_of(x);
  char* po = (char*)data_of(o);
  const Dims* st[2] = {&xs, &is};
  parallel_for(fibers, K, [&](int64_t f) {
    int64_t off[2];
    fiber_offsets(f, shape, dim, st, off);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t i = off[1] + k * is[(size_t)dim];
      copy_elem(po + i * es, px + (off[0] + ids[(size_t)i] * xs[(size_t)dim]) * es, es);
    }
  });
}

// The arguments scatter, scatter_add and scatter_reduce serve: x, index and src (0-d: a
// scalar) of one rank, index no larger than x (but along dim) nor than src, o shaped as x.
bool scatter_args_ok(const gn_tensor_view& x, const gn_tensor_view& ix, const gn_tensor_view& src,
                     const gn_tensor_view& o, int32_t dim) {
  const bool scalar = src.ndim == 0;
  bool ok = x.ndim > 0 && dim >= 0 && ix.ndim == x.ndim && o.dtype == x.dtype && src.dtype == x.dtype &&
            dims_of(o) == dims_of(x) && (scalar || src.ndim == ix.ndim);
  for (int32_t d = 0; ok && d < x.ndim; ++d)
    ok = (d == dim || ix.shape[d] <= x.shape[d]) && (scalar || ix.shape[d] <= src.shape[d]);
  return ok;
}

// The walk of scatter, scatter_add and scatter_reduce: o = x, then fiber by fiber along dim
// (in index's order within a fiber) f(tag, e, d, s): tag the dtype's, e the element of o
// written, d its bytes, s src's bytes for it.
template <class F>
void scatter_walk(const gn_tensor_view& x, const gn_tensor_view& ix, const gn_tensor_view& src, const gn_tensor_view& o,
                  int32_t dim, const std::vector<int64_t>& ids, F f) {
  const size_t es = gn_dtype_size(x.dtype);
  const int64_t n = gn_view_numel(&x);
  if (data_of(o) != data_of(x)) copy_bytes(data_of(o), data_of(x), (size_t)n * es);
  const Dims shape = dims_of(ix), os = dense_strides(dims_of(o)), is = dense_strides(shape);
  const Dims ss = src.ndim == 0 ? Dims(shape.size(), 0) : dense_strides(dims_of(src));
  const int64_t K = shape[(size_t)dim], fibers = K ? (int64_t)ids.size() / K : 0;
  const Dims* strides[3] = {&os, &is, &ss};
  char* po = (char*)data_of(o);
  const char* ps = (const char*)data_of(src);
  dispatch_dtype(x.dtype, [&](auto tag) {
    parallel_for(fibers, K, [&](int64_t fiber) {
      int64_t off[3];
      fiber_offsets(fiber, shape, dim, strides, off);
      for (int64_t k = 0; k < K; ++k) {
        const int64_t i = off[1] + k * is[(size_t)dim], e = off[0] + ids[(size_t)i] * os[(size_t)dim];
        f(tag, e, po + e * es, ps + (off[2] + k * ss[(size_t)dim]) * es);
      }
    });
  });
}

// out = x; out[p with p[dim] = index[p]] (+)= src[p].
template <bool ADD>
void scatter_impl(const char* op, const gn_tensor_view* in, size_t n_in, const gn_tensor_view& o, int64_t dim_attr) {
  if (n_in != 3) GN_UNSUPPORTED(std::string("[") + op + "] arity");
  const gn_tensor_view &x = in[0], &ix = in[1], &src = in[2];
  const int32_t dim = wrap_dim(dim_attr, x.ndim);
  bool ok = scatter_args_ok(x, ix, src, o, dim);
  if (ADD) ok &= x.dtype != GN_BOOL;
  std::vector<int64_t> ids;
  if (!ok || !load_indices(ix, x.shape[dim], ids)) GN_UNSUPPORTED(std::string("[") + op + "] these arguments");
  const size_t es = gn_dtype_size(x.dtype);
  scatter_walk(x, ix, src, o, dim, ids, [&](auto tag, int64_t, char* d, const char* s) {
    using T = typename Storage<decltype(tag)::value>::T;
    if constexpr (!ADD) {
      copy_elem(d, s, es);
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      *(T*)d = (T)((double)*(T*)d + (double)*(const T*)s);  // one rounding, as the reference
    } else if constexpr (std::is_integral_v<T>) {
      *(T*)d = (T)(uint64_t)((uint64_t)(int64_t) * (T*)d + (uint64_t)(int64_t) * (const T*)s);  // wraps
    } else {  // f16/bf16: through double, one rounding (the SDK's, as the reference)
      gn::sdk::store(d, x.dtype, gn::sdk::load(d, x.dtype) + gn::sdk::load(s, x.dtype));
    }
  });
}

GN_SDK_KERNEL(scatter_kernel) { scatter_impl<false>("scatter", in, n_in, out[0], attr_i(attrs, n_attrs, 0, 0)); }
GN_SDK_KERNEL(scatter_add_kernel) { scatter_impl<true>("scatter_add", in, n_in, out[0], attr_i(attrs, n_attrs, 0, 0)); }

// scatter_reduce(x, index, src; dim, reduce, include_self): the reference's rule (in index's
// row-major order, rounded to the dtype after every step, integers exact and wrapping, mean
// divided at the end, integer mean with floor), fiber by fiber: bit-identical.
GN_SDK_KERNEL(scatter_reduce_kernel) {
  if (n_in != 3 || n_out != 1) GN_UNSUPPORTED("[scatter_reduce] arity");
  const gn_tensor_view &x = in[0], &ix = in[1], &src = in[2], &o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  const int64_t reduce = attr_i(attrs, n_attrs, 1, -1);
  const bool include_self = attr_i(attrs, n_attrs, 2, 1) != 0;
  const bool ok = reduce >= 0 && reduce <= 4 && x.dtype != GN_BOOL && scatter_args_ok(x, ix, src, o, dim);
  std::vector<int64_t> ids;
  if (!ok || !load_indices(ix, x.shape[dim], ids)) GN_UNSUPPORTED("[scatter_reduce] these arguments");
  const int64_t n = gn_view_numel(&x);
  std::vector<int64_t> count((size_t)n, include_self ? 1 : 0);  // per output element (fibers are disjoint)
  scatter_walk(x, ix, src, o, dim, ids, [&](auto tag, int64_t e, char* dp, const char* sp) {
    using T = typename Storage<decltype(tag)::value>::T;
    T* d = (T*)dp;
    const T* s = (const T*)sp;
    const bool first = !include_self && count[(size_t)e] == 0;
    ++count[(size_t)e];
    if constexpr (std::is_integral_v<T>) {
      const int64_t b = (int64_t)*s, a = first ? (reduce == 1 ? 1 : 0) : (int64_t)*d;
      int64_t r;
      if (reduce == 0 || reduce == 2)
        r = (int64_t)((uint64_t)a + (uint64_t)b);
      else if (reduce == 1)
        r = (int64_t)((uint64_t)a * (uint64_t)b);
      else if (reduce == 3)
        r = first ? b : std::max(a, b);
      else
        r = first ? b : std::min(a, b);
      *d = (T)r;
    } else {
      const double b = ld(s);
      const double a = first ? (reduce == 1 ? 1.0 : reduce == 3 ? -INFINITY : reduce == 4 ? INFINITY : 0.0) : ld(d);
      double r;
      if (reduce == 0 || reduce == 2)
        r = a + b;
      else if (reduce == 1)
        r = a * b;
      else if (reduce == 3)
        r = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
      else
        r = std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
      st(d, r);
    }
  });
  if (reduce != 2) return;
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename Storage<decltype(tag)::value>::T;
    T* p = (T*)data_of(o);
    parallel_for(n, 1, [&](int64_t e) {
      const int64_t c = count[(size_t)e];
      if (c <= 1) return;
      if constexpr (std::is_integral_v<T>) {
        const int64_t a = (int64_t)p[e];
        int64_t r = a / c;
        if (a % c != 0 && a < 0) --r;
        p[e] = (T)r;
      } else {
        st(p + e, ld(p + e) / (double)c);
      }
    });
  });
}

// ----------------------------------------------------------------------------
// index_select / index_add: x seen as (outer, size, inner) around dim.

GN_SDK_KERNEL(index_select_kernel) {
  const gn_tensor_view &x = in[0], &o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  std::vector<int64_t> ids;
  bool ok = n_in == 2 && x.ndim > 0 && dim >= 0 && in[1].ndim <= 1 && o.dtype == x.dtype && o.ndim == x.ndim;
  if (!ok || !load_indices(in[1], x.shape[dim], ids)) GN_UNSUPPORTED("[index_select] these arguments");
  Dims want = dims_of(x);
  want[(size_t)dim] = (int64_t)ids.size();
  if (dims_of(o) != want) GN_UNSUPPORTED("[index_select] output shape");
  const Dims xd = dims_of(x);
  const int64_t outer = prod(xd, 0, (size_t)dim), S = xd[(size_t)dim], inner = prod(xd, (size_t)dim + 1, xd.size());
  const int64_t k = (int64_t)ids.size();
  const size_t row = (size_t)inner * gn_dtype_size(x.dtype);
  const char* px = (const char*)data_of(x);
  char* po = (char*)data_of(o);
  parallel_for(outer * k, inner, [&](int64_t r) {
    const int64_t a = r / k, i = r % k;
    copy_bytes(po + (size_t)r * row, px + (size_t)(a * S + ids[(size_t)i]) * row, row);
  });
}

GN_SDK_KERNEL(index_add_kernel) {
  const gn_tensor_view &x = in[0], &o = out[0];
  const int32_t dim = wrap_dim(attr_i(attrs, n_attrs, 0, 0), x.ndim);
  const double alpha = attr_d(attrs, n_attrs, 1, 1.0);
  const bool ints = x.dtype == GN_I8 || x.dtype == GN_U8 || x.dtype == GN_I32 || x.dtype == GN_I64;
  std::vector<int64_t> ids;
  bool ok = n_in == 3 && x.ndim > 0 && dim >= 0 && in[1].ndim <= 1 && o.dtype == x.dtype && in[2].dtype == x.dtype &&
            dims_of(o) == dims_of(x) && in[2].ndim == x.ndim && x.dtype != GN_BOOL &&
            (!ints || (alpha == std::trunc(alpha) && std::fabs(alpha) < 9.2e18));
  if (!ok || !load_indices(in[1], x.shape[dim], ids)) GN_UNSUPPORTED("[index_add] these arguments");
  const gn_tensor_view& src = in[2];
  Dims want = dims_of(x);
  want[(size_t)dim] = (int64_t)ids.size();
  if (dims_of(src) != want) GN_UNSUPPORTED("[index_add] src shape");
  const Dims xd = dims_of(x);
  const int64_t outer = prod(xd, 0, (size_t)dim), S = xd[(size_t)dim], inner = prod(xd, (size_t)dim + 1, xd.size());
  const int64_t k = (int64_t)ids.size();
  if (data_of(o) != data_of(x)) copy_bytes(data_of(o), data_of(x), (size_t)gn_view_numel(&x) * gn_dtype_size(x.dtype));
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename Storage<decltype(tag)::value>::T;
    if constexpr (std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>) {
      // through double, one rounding per addition (the SDK's, as the reference)
      char* po = (char*)data_of(o);
      const char* ps = (const char*)data_of(src);
      const int32_t dt = x.dtype;
      parallel_for(outer, k * inner, [&](int64_t a) {
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < inner; ++j) {
            char* d = po + ((a * S + ids[(size_t)i]) * inner + j) * 2;
            gn::sdk::store(d, dt, gn::sdk::load(d, dt) + alpha * gn::sdk::load(ps + ((a * k + i) * inner + j) * 2, dt));
          }
      });
    } else if constexpr (!std::is_same_v<decltype(tag), std::integral_constant<int32_t, GN_BOOL>>) {
      T* po = (T*)data_of(o);
      const T* ps = (const T*)data_of(src);
      const int64_t ia = (int64_t)alpha;
      // each outer slab is independent; within it, rows in index order
      parallel_for(outer, k * inner, [&](int64_t a) {
        for (int64_t i = 0; i < k; ++i) {
          T* d = po + (a * S + ids[(size_t)i]) * inner;
          const T* s = ps + (a * k + i) * inner;
          if constexpr (std::is_floating_point_v<T>) {
#pragma omp simd
            for (int64_t j = 0; j < inner; ++j) d[j] = (T)((double)d[j] + alpha * (double)s[j]);
          } else {
            for (int64_t j = 0; j < inner; ++j)
              d[j] = (T)(uint64_t)((uint64_t)(int64_t)d[j] + (uint64_t)ia * (uint64_t)(int64_t)s[j]);
          }
        }
      });
    }
  });
}

// ----------------------------------------------------------------------------
// masked_fill, one_hot

GN_SDK_KERNEL(masked_fill_kernel) {
  const gn_tensor_view &x = in[0], &o = out[0];
  std::vector<int64_t> xs, ms;
  if (n_in != 2 || o.dtype != x.dtype || in[1].dtype != GN_BOOL || !bcast_strides(x, o.ndim, o.shape, xs) ||
      !bcast_strides(in[1], o.ndim, o.shape, ms))
    GN_UNSUPPORTED("[masked_fill] these arguments");
  const size_t es = gn_dtype_size(o.dtype);
  char value[8];
  gn::sdk::store(value, o.dtype, attr_d(attrs, n_attrs, 0, 0.0));  // the reference's conversion
  const int32_t R = o.ndim;
  const int64_t N = R ? o.shape[R - 1] : 1, rows = N ? gn_view_numel(&o) / N : 0;
  const int64_t xl = R ? xs[(size_t)R - 1] : 0, ml = R ? ms[(size_t)R - 1] : 0;
  const char* px = (const char*)data_of(x);
  const uint8_t* pm = (const uint8_t*)data_of(in[1]);
  char* po = (char*)data_of(o);
  parallel_for(rows, N, [&](int64_t r) {
    const int64_t xo = R > 1 ? row_offset(r, R, o.shape, xs.data()) : 0;
    const int64_t mo = R > 1 ? row_offset(r, R, o.shape, ms.data()) : 0;
    char* d = po + (size_t)(r * N) * es;
    for (int64_t j = 0; j < N; ++j) copy_elem(d + j * es, pm[mo + j * ml] ? value : px + (xo + j * xl) * es, es);
  });
}

GN_SDK_KERNEL(one_hot_kernel) {
  const gn_tensor_view &ids = in[0], &o = out[0];
  int64_t C = attr_i(attrs, n_attrs, 0, -1);
  if (C < 0 && o.ndim > 0) C = o.shape[o.ndim - 1];
  const int64_t n = gn_view_numel(&ids);
  std::vector<int64_t> v;
  if (n_in != 1 || o.dtype != GN_I64 || o.ndim != ids.ndim + 1 || o.shape[o.ndim - 1] != C ||
      gn_view_numel(&o) != n * C || !load_indices(ids, C, v))
    GN_UNSUPPORTED("[one_hot] these arguments");
  int64_t* po = (int64_t*)data_of(o);
  parallel_for(n, C, [&](int64_t r) {
    set_bytes(po + r * C, 0, (size_t)C * 8);
    po[r * C + v[(size_t)r]] = 1;
  });
}

}  // namespace

void register_indexing(const gn::sdk::Registrar& r) {
  // embedding copies rows: every dtype
  const int32_t every[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("embedding", every, embedding_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t f2[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("embedding_backward", f2, embedding_backward_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  const int32_t acc[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64};
  const int32_t ids[] = {GN_I32, GN_I64, GN_I8, GN_U8};
  r.kernel("gather", all, gather_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter", all, scatter_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter_add", acc, scatter_add_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("scatter_reduce", acc, scatter_reduce_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_select", all, index_select_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("index_add", acc, index_add_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("masked_fill", all, masked_fill_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("one_hot", ids, one_hot_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu::simd
