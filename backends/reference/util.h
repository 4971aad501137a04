// backends/reference/util.h - helpers of the reference kernels in unary, binary,
// creation, reduce, softmax, indexing, shape and sort: attributes, "[op] ..." errors,
// exact integer loads, broadcast walks over strided views, sub-views, and the
// (kept dims) x (reduced dims) layout every reduction and dim-wise op uses.
//
// Everything walks views through their own strides in row-major order of the
// output: no kernel assumes contiguity, and 0-d and empty views just work.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "genesis/sdk/sdk.h"

namespace gn::reference {

using Dims = std::vector<int64_t>;

// ----------------------------------------------------------------------------
// dtypes

inline constexpr int32_t kAllDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
inline constexpr int32_t kNumericDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64};
inline constexpr int32_t kFloatingDtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64};
inline constexpr int32_t kIntDtypes[] = {GN_I8, GN_U8, GN_I32, GN_I64};

// Integer or bool: values that the int64 paths handle exactly.
inline bool is_intlike(int32_t dtype) { return gn_dtype_is_int(dtype) || dtype == GN_BOOL; }

// ----------------------------------------------------------------------------
// errors and attributes

[[noreturn]] inline void fail_op(int32_t code, const char* op, const std::string& msg) {
  gn::sdk::fail(code, std::string("[") + op + "] " + msg);
}

inline const gn_attr_value& attr_at(const char* op, const gn_attr_value* attrs, size_t n, size_t i, int32_t kind) {
  if (i >= n || !attrs || attrs[i].kind != kind)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "attribute " + std::to_string(i) + " is missing or of the wrong kind");
  return attrs[i];
}
inline int64_t attr_int(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr_at(op, a, n, i, GN_ATTR_INT).u.i;
}
inline double attr_float(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr_at(op, a, n, i, GN_ATTR_FLOAT).u.f;
}
inline Dims attr_ints(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  const gn_attr_value& v = attr_at(op, a, n, i, GN_ATTR_INTS);
  if (v.u.ints.size == 0) return {};
  if (!v.u.ints.data) fail_op(GN_ERR_INVALID_ARGUMENT, op, "attribute " + std::to_string(i) + " has no data");
  return Dims(v.u.ints.data, v.u.ints.data + v.u.ints.size);
}

// Fail unless the kernel got at least n_in inputs and n_out outputs.
inline void need_io(const char* op, size_t n_in, size_t want_in, size_t n_out, size_t want_out) {
  if (n_in < want_in || n_out < want_out)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "needs " + std::to_string(want_in) + " inputs and " + std::to_string(want_out) + " outputs, got " +
                std::to_string(n_in) + " and " + std::to_string(n_out));
}

inline std::string shape_str(const gn_tensor_view& v) {
  std::string s = "(";
  for (int32_t d = 0; d < v.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.shape[d]);
  return s + ")";
}

// Wrap dim against rank ndim; a 0-d tensor accepts 0 and -1 (torch's rule).
inline int32_t wrap_dim_checked(const char* op, int64_t dim, int32_t ndim) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim == GN_DIM_NONE || dim < -n || dim >= n)
    fail_op(GN_ERR_INDEX, op,
            "dim " + (dim == GN_DIM_NONE ? std::string("none") : std::to_string(dim)) +
                " is out of range for a tensor of rank " + std::to_string(ndim));
  return ndim > 0 ? (int32_t)(dim < 0 ? dim + n : dim) : 0;
}

// ----------------------------------------------------------------------------
// exact scalar access

// Element as int64: exact for integer/bool dtypes, truncated for floats
// (NaN/out of range -> 0, never UB).
inline int64_t load_i64(const void* p, int32_t dtype) {
  return is_intlike(dtype) ? gn::sdk::load_int(p, dtype) : gn::sdk::to_int64(gn::sdk::load(p, dtype));
}

// Copy one element between dtypes: exact when both are integer-like.
inline void convert_elem(void* dst, int32_t dst_dtype, const void* src, int32_t src_dtype) {
  if (is_intlike(dst_dtype) && is_intlike(src_dtype))
    gn::sdk::store_int(dst, dst_dtype, gn::sdk::load_int(src, src_dtype));
  else
    gn::sdk::store(dst, dst_dtype, gn::sdk::load(src, src_dtype));
}

// Wrapping int64 arithmetic (two's complement, as torch's integer kernels).
using gn::sdk::wrap_add;
using gn::sdk::wrap_mul;
using gn::sdk::wrap_sub;

// ----------------------------------------------------------------------------
// views

inline int64_t numel(const gn_tensor_view& v) { return gn_view_numel(&v); }
inline char* base_ptr(const gn_tensor_view& v) { return (char*)v.data + v.byte_offset; }
inline int64_t elem_size(const gn_tensor_view& v) { return (int64_t)gn_dtype_size(v.dtype); }

// A view whose shape/stride arrays live in the object (sub-views, reshapes).
struct OwnedView {
  Dims shape, strides;
  gn_tensor_view v{};

  OwnedView(const gn_tensor_view& base, Dims shp, Dims str, int64_t extra_elems)
      : shape(std::move(shp)), strides(std::move(str)) {
    v = base;
    v.ndim = (int32_t)shape.size();
    v.shape = shape.data();
    v.strides = strides.data();
    v.byte_offset = base.byte_offset + (uint64_t)(extra_elems * elem_size(base));
  }
  OwnedView(const OwnedView&) = delete;
  OwnedView& operator=(const OwnedView&) = delete;
};

// Walk every element of `out` in row-major order; `ins` are broadcast to out's
// shape (NumPy rules, checked).  f(char* out_elem, const char* const* in_elems).
template <size_t N, class F>
void for_each_bcast(const char* op, const gn_tensor_view& out, const gn_tensor_view* const (&ins)[N], F&& f) {
  const int32_t nd = out.ndim;
  for (size_t k = 0; k < N; ++k) {
    const gn_tensor_view& v = *ins[k];
    bool ok = v.ndim <= nd;
    for (int32_t d = 0; ok && d < v.ndim; ++d) {
      int64_t s = v.shape[d], t = out.shape[d + nd - v.ndim];
      ok = s == t || s == 1;
    }
    if (!ok) fail_op(GN_ERR_SHAPE, op, "input of shape " + shape_str(v) + " does not broadcast to " + shape_str(out));
  }
  const int64_t n = numel(out);
  if (n == 0) return;
  std::vector<int64_t> st(N * (size_t)nd + 1, 0), idx((size_t)nd + 1, 0);
  for (size_t k = 0; k < N; ++k) gn::sdk::broadcast_strides(*ins[k], nd, out.shape, st.data() + k * nd);
  const char* p[N > 0 ? N : 1];
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < N; ++k) {
      int64_t off = 0;
      for (int32_t d = 0; d < nd; ++d) off += idx[(size_t)d] * st[k * nd + d];
      p[k] = base_ptr(*ins[k]) + off * elem_size(*ins[k]);
    }
    f(gn::sdk::elem_ptr_at(out, idx.data()), (const char* const*)p);
    gn::sdk::next_index(idx.data(), out.shape, nd);
  }
}

// dst = src broadcast to dst's shape, converted to dst's dtype (exact for ints).
inline void copy_convert(const char* op, const gn_tensor_view& dst, const gn_tensor_view& src) {
  const gn_tensor_view* ins[] = {&src};
  for_each_bcast(op, dst, ins, [&](char* o, const char* const* p) { convert_elem(o, dst.dtype, p[0], src.dtype); });
}

// ----------------------------------------------------------------------------
// reductions: a view split into kept (outer) and reduced (inner) dims

// Element pointers of x grouped by the kept dims: group o (row-major over the
// kept dims) holds the elements of the reduced dims in row-major order.
struct Groups {
  Dims outer_shape, outer_strides, inner_shape, inner_strides;
  int64_t outer_n = 1, inner_n = 1;
  const char* base = nullptr;
  int64_t esize = 1;

  // Pointers of group o into ptrs (resized to inner_n).
  void pointers(int64_t o, std::vector<const char*>& ptrs) const {
    int64_t off = 0;
    for (int64_t d = (int64_t)outer_shape.size() - 1; d >= 0; --d) {
      off += (o % outer_shape[(size_t)d]) * outer_strides[(size_t)d];
      o /= outer_shape[(size_t)d];
    }
    ptrs.resize((size_t)inner_n);
    if (inner_n == 0) return;
    Dims idx(inner_shape.size() + 1, 0);
    for (int64_t j = 0; j < inner_n; ++j) {
      int64_t io = 0;
      for (size_t d = 0; d < inner_shape.size(); ++d) io += idx[d] * inner_strides[d];
      ptrs[(size_t)j] = base + (off + io) * esize;
      gn::sdk::next_index(idx.data(), inner_shape.data(), (int32_t)inner_shape.size());
    }
  }
};

// Which dims of a rank-ndim view are reduced: `dims` (negative allowed; [] =
// all) wrapped and checked for range and repeats.
inline std::vector<bool> reduced_mask(const char* op, const Dims& dims, int32_t ndim) {
  std::vector<bool> mask((size_t)ndim, dims.empty());
  std::vector<bool> seen((size_t)(ndim > 0 ? ndim : 1), false);
  for (int64_t d : dims) {
    int32_t w = wrap_dim_checked(op, d, ndim);
    if (seen[(size_t)w]) fail_op(GN_ERR_INVALID_ARGUMENT, op, "dim " + std::to_string(d) + " appears more than once");
    seen[(size_t)w] = true;
    if (ndim > 0) mask[(size_t)w] = true;
  }
  return mask;
}

inline Groups make_groups(const gn_tensor_view& x, const std::vector<bool>& reduced) {
  Groups g;
  g.base = base_ptr(x);
  g.esize = elem_size(x);
  for (int32_t d = 0; d < x.ndim; ++d) {
    if (reduced[(size_t)d]) {
      g.inner_shape.push_back(x.shape[d]);
      g.inner_strides.push_back(x.strides[d]);
      g.inner_n *= x.shape[d];
    } else {
      g.outer_shape.push_back(x.shape[d]);
      g.outer_strides.push_back(x.strides[d]);
      g.outer_n *= x.shape[d];
    }
  }
  return g;
}

// Groups of x along one dim (softmax, sort): lines of length x.shape[dim].
inline Groups line_groups(const gn_tensor_view& x, int32_t dim) {
  std::vector<bool> mask((size_t)x.ndim, false);
  if (x.ndim > 0) mask[(size_t)dim] = true;
  return make_groups(x, mask);
}

}  // namespace gn::reference
