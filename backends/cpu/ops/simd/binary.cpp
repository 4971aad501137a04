// backends/cpu/ops/simd/binary.cpp - where and the compare ops (eq ne lt le gt
// ge -> bool) in C++: any strides and broadcasting, rows of the output's last
// dim in parallel; a and b of one dtype (f32, f64, i32, i64 for the compares;
// every dtype for where).  Compares of other dtypes or of mixed ones go to the
// generic path (generic/binary.cpp); where with mixed dtypes to the reference.
// The arithmetic binary ops are in onednn/binary.cpp.
#include <string>

#include "loops.h"
#include "tiers.h"

namespace gn::cpu::simd {
namespace {

enum class Cmp { eq, ne, lt, le, gt, ge };
struct CmpDef {
  const char* name;
  Cmp op;
};
const CmpDef kCmp[] = {{"eq", Cmp::eq}, {"ne", Cmp::ne}, {"lt", Cmp::lt},
                       {"le", Cmp::le}, {"gt", Cmp::gt}, {"ge", Cmp::ge}};

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
  if (a.dtype != b.dtype || o.dtype != GN_BOOL) return generic::binary(def.name, a, b, o, attrs, n_attrs);
  bool ok = false;
  switch (a.dtype) {
    case GN_F32: ok = compare_run<float>(def.op, a, b, o); break;
    case GN_F64: ok = compare_run<double>(def.op, a, b, o); break;
    case GN_I32: ok = compare_run<int32_t>(def.op, a, b, o); break;
    case GN_I64: ok = compare_run<int64_t>(def.op, a, b, o); break;
    default: break;
  }
  if (!ok) return generic::binary(def.name, a, b, o, attrs, n_attrs);
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
    case GN_F32:
    case GN_I32: ok = where_run<uint32_t>(c, a, b, o); break;
    case GN_F64:
    case GN_I64: ok = where_run<uint64_t>(c, a, b, o); break;
    case GN_BF16:
    case GN_F16: ok = where_run<uint16_t>(c, a, b, o); break;
    case GN_BOOL:
    case GN_U8:
    case GN_I8: ok = where_run<uint8_t>(c, a, b, o); break;
    default: break;
  }
  if (!ok) GN_UNSUPPORTED("[where] this case");
}

}  // namespace

void register_binary(const gn::sdk::Registrar& r) {
  const int32_t cd[] = {GN_F32, GN_F64, GN_I32, GN_I64};
  for (const CmpDef& d : kCmp) r.kernel(d.name, cd, compare_kernel, 0, (void*)&d);
  const int32_t all[] = {GN_F32, GN_F64, GN_BF16, GN_F16, GN_I32, GN_I64, GN_BOOL, GN_U8, GN_I8};
  r.kernel("where", all, where_kernel);
}

}  // namespace gn::cpu::simd
