// backends/cpu/ops/indexing.cpp - embedding / embedding_backward, where, the
// compare ops (eq ne lt le gt ge -> bool), rope / rope_backward, in C++.
//
//  * embedding: rows of weight copied (memcpy) per id, ids in parallel;
//    f32/f64/bf16/f16 weights, int32/int64 ids.  Any id out of range answers
//    "unsupported" before writing, so the reference reports GN_ERR_INDEX.
//  * embedding_backward: deterministic without atomics: ids are bucketed by
//    value (counting sort, stable), then each weight row sums its gradient
//    rows in increasing position order in double, exactly the reference's
//    order: bit-identical results; rows in parallel.
//  * where(cond bool, a, b) and compares: any strides and broadcasting, rows
//    of the output's last dim in parallel; a and b of one dtype (f32, f64,
//    i32, i64) - mixed dtypes go to the reference.
//  * rope: x (..., D) dense, cos/sin broadcast to x; computed in double like
//    the reference (one rounding).
#include "loops.h"

namespace gn::cpu {
namespace {

bool load_ids(const gn_tensor_view& ids, int64_t V, std::vector<int64_t>& out) {
  const int64_t n = gn_view_numel(&ids);
  out.resize((size_t)n);
  if (ids.dtype == GN_I64) copy_bytes(out.data(), data_of(ids), (size_t)n * 8);
  else if (ids.dtype == GN_I32)
    for (int64_t i = 0; i < n; ++i) out[(size_t)i] = ((const int32_t*)data_of(ids))[i];
  else return false;
  for (int64_t v : out)
    if (v < 0 || v >= V) return false;
  return true;
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

// ---------------------------------------------------------------- where / compare

enum class Cmp { eq, ne, lt, le, gt, ge };
struct CmpDef {
  const char* name;
  Cmp op;
};
const CmpDef kCmp[] = {{"eq", Cmp::eq}, {"ne", Cmp::ne}, {"lt", Cmp::lt}, {"le", Cmp::le}, {"gt", Cmp::gt}, {"ge", Cmp::ge}};

template <class T>
inline uint8_t cmp(Cmp op, T a, T b) {
  switch (op) {
    case Cmp::eq: return a == b;
    case Cmp::ne: return a != b;
    case Cmp::lt: return a < b;
    case Cmp::le: return a <= b;
    case Cmp::gt: return a > b;
    case Cmp::ge: return a >= b;
  }
  return 0;
}

// Walk out's rows: f(row_offsets of each input and the output, inner strides, inner length).
template <size_t N, class F>
bool walk_rows(const gn_tensor_view& o, const gn_tensor_view* const (&ins)[N], F&& f) {
  const int32_t R = o.ndim;
  if (R == 0) {
    int64_t offs[N + 1] = {}, inner[N + 1] = {};
    f(offs, inner, int64_t(1));
    return true;
  }
  std::vector<int64_t> st[N];
  for (size_t k = 0; k < N; ++k)
    if (!bcast_strides(*ins[k], R, o.shape, st[k])) return false;
  for (int32_t d = 0; d < R; ++d)
    if (o.shape[d] > 1 && o.strides[d] <= 0) return false;
  const int64_t len = o.shape[R - 1], n = gn_view_numel(&o);
  if (n == 0) return true;
  parallel_for(n / len, len, [&](int64_t r) {
    int64_t offs[N + 1], inner[N + 1];
    for (size_t k = 0; k < N; ++k) {
      offs[k] = row_offset(r, R, o.shape, st[k].data());
      inner[k] = st[k][(size_t)R - 1];
    }
    offs[N] = row_offset(r, R, o.shape, o.strides);
    inner[N] = o.strides[R - 1];
    f(offs, inner, len);
  });
  return true;
}

template <class T>
bool compare_run(Cmp op, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& o) {
  const T* pa = (const T*)data_of(a);
  const T* pb = (const T*)data_of(b);
  uint8_t* po = (uint8_t*)data_of(o);
  const gn_tensor_view* ins[] = {&a, &b};
  return walk_rows(o, ins, [&](const int64_t* off, const int64_t* in, int64_t len) {
    const T* x = pa + off[0];
    const T* y = pb + off[1];
    uint8_t* z = po + off[2];
    if (in[0] == 1 && in[1] == 1 && in[2] == 1) {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) z[j] = cmp(op, x[j], y[j]);
    } else {
      for (int64_t j = 0; j < len; ++j) z[j * in[2]] = cmp(op, x[j * in[0]], y[j * in[1]]);
    }
  });
}

GN_SDK_KERNEL(compare_kernel) {
  const CmpDef& def = *(const CmpDef*)ctx->kernel_data;
  if (n_in != 2 || n_out != 1) GN_UNSUPPORTED(std::string("[") + def.name + "] arity");
  const gn_tensor_view &a = in[0], &b = in[1], &o = out[0];
  if (a.dtype != b.dtype || o.dtype != GN_BOOL) return binary_generic(def.name, a, b, o, attrs, n_attrs);
  bool ok = false;
  switch (a.dtype) {
    case GN_F32: ok = compare_run<float>(def.op, a, b, o); break;
    case GN_F64: ok = compare_run<double>(def.op, a, b, o); break;
    case GN_I32: ok = compare_run<int32_t>(def.op, a, b, o); break;
    case GN_I64: ok = compare_run<int64_t>(def.op, a, b, o); break;
    default: break;
  }
  if (!ok) return binary_generic(def.name, a, b, o, attrs, n_attrs);
}

template <class T>
bool where_run(const gn_tensor_view& c, const gn_tensor_view& a, const gn_tensor_view& b, const gn_tensor_view& o) {
  const uint8_t* pc = (const uint8_t*)data_of(c);
  const T* pa = (const T*)data_of(a);
  const T* pb = (const T*)data_of(b);
  T* po = (T*)data_of(o);
  const gn_tensor_view* ins[] = {&c, &a, &b};
  return walk_rows(o, ins, [&](const int64_t* off, const int64_t* in, int64_t len) {
    const uint8_t* k = pc + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    T* z = po + off[3];
    if (in[0] == 1 && in[1] == 1 && in[2] == 1 && in[3] == 1) {
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) z[j] = k[j] ? x[j] : y[j];
    } else {
      for (int64_t j = 0; j < len; ++j) z[j * in[3]] = k[j * in[0]] ? x[j * in[1]] : y[j * in[2]];
    }
  });
}

GN_SDK_KERNEL(where_kernel) {
  if (n_in != 3 || n_out != 1) GN_UNSUPPORTED("[where] arity");
  const gn_tensor_view &c = in[0], &a = in[1], &b = in[2], &o = out[0];
  if (c.dtype != GN_BOOL || a.dtype != o.dtype || b.dtype != o.dtype) GN_UNSUPPORTED("[where] mixed dtypes");
  bool ok = false;
  switch (o.dtype) {
    case GN_F32: case GN_I32: ok = where_run<uint32_t>(c, a, b, o); break;
    case GN_F64: case GN_I64: ok = where_run<uint64_t>(c, a, b, o); break;
    case GN_BF16: case GN_F16: ok = where_run<uint16_t>(c, a, b, o); break;
    case GN_BOOL: case GN_U8: case GN_I8: ok = where_run<uint8_t>(c, a, b, o); break;
    default: break;
  }
  if (!ok) GN_UNSUPPORTED("[where] this case");
}

// ---------------------------------------------------------------- rope

template <class T>
void rope_run(const gn_tensor_view& x, const gn_tensor_view& cs, const gn_tensor_view& sn, const gn_tensor_view& y,
              bool backward) {
  const int32_t R = x.ndim;
  const int64_t D = x.shape[R - 1], h = D / 2, rows = D ? gn_view_numel(&x) / D : 0;
  std::vector<int64_t> sc, ss;
  bcast_strides(cs, R, x.shape, sc);
  bcast_strides(sn, R, x.shape, ss);
  const T *px = (const T*)data_of(x), *pc = (const T*)data_of(cs), *ps = (const T*)data_of(sn);
  T* py = (T*)data_of(y);
  const int64_t ic = sc[(size_t)R - 1], is = ss[(size_t)R - 1];
  parallel_for(rows, D, [&](int64_t r) {
    const T* xr = px + r * D;
    const T* cr = pc + row_offset(r, R, x.shape, sc.data());
    const T* sr = ps + row_offset(r, R, x.shape, ss.data());
    T* yr = py + r * D;
    for (int64_t d = 0; d < D; ++d) {
      double rot;
      if (!backward) rot = (d < h ? -(double)xr[d + h] : (double)xr[d - h]) * (double)sr[d * is];
      else rot = d < h ? (double)xr[d + h] * (double)sr[(d + h) * is] : -((double)xr[d - h] * (double)sr[(d - h) * is]);
      yr[d] = to_t<T>((double)xr[d] * (double)cr[d * ic] + rot);
    }
  });
}

GN_SDK_KERNEL(rope_kernel) {
  const bool backward = ctx->op_name && std::string(ctx->op_name) == "rope_backward";
  if (n_in < 3 || n_out < 1) GN_UNSUPPORTED("[rope] arity");
  const gn_tensor_view &x = in[0], &o = out[0];
  std::vector<int64_t> tmp;
  if (x.ndim < 1 || x.shape[x.ndim - 1] % 2 || in[1].dtype != x.dtype || in[2].dtype != x.dtype ||
      o.dtype != x.dtype || gn_view_numel(&o) != gn_view_numel(&x) || !bcast_strides(in[1], x.ndim, x.shape, tmp) ||
      !bcast_strides(in[2], x.ndim, x.shape, tmp))
    GN_UNSUPPORTED("[rope] these arguments");
  if (gn_view_numel(&x) == 0) return;
  if (!dispatch_float_h(x.dtype, [&](auto z) { rope_run<decltype(z)>(x, in[1], in[2], o, backward); }))
    GN_UNSUPPORTED("[rope] dtype");
}

}  // namespace

void register_indexing(const gn::sdk::Registrar& r) {
  // embedding copies rows: every dtype
  const int32_t every[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  r.kernel("embedding", every, embedding_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t f2[] = {GN_F32, GN_F64, GN_F16, GN_BF16};
  r.kernel("embedding_backward", f2, embedding_backward_kernel, GN_KERNEL_CONTIGUOUS);
  const int32_t cd[] = {GN_F32, GN_F64, GN_I32, GN_I64};
  for (const CmpDef& d : kCmp) r.kernel(d.name, cd, compare_kernel, 0, (void*)&d);
  const int32_t all[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I32, GN_I64, GN_BOOL, GN_U8, GN_I8};
  r.kernel("where", all, where_kernel);
  r.kernel("rope", f2, rope_kernel, GN_KERNEL_CONTIGUOUS);
  r.kernel("rope_backward", f2, rope_kernel, GN_KERNEL_CONTIGUOUS);
}

}  // namespace gn::cpu
