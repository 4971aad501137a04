// core/ops/infer_common.h - helpers shared by the infer_*.cpp files (internal).
//
// Inference bodies are written as plain functions that throw InferError on bad
// input; run_infer() turns that into a gn_status whose message starts with
// "[<op>] ", and turns any other exception into GN_ERR_INTERNAL, so nothing
// ever escapes an infer function.  The happy path throws nothing.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "genesis/plugin.h"
#include "infer.h"

namespace genesis::core::infer_detail {

// An inference failure: a gn_code and a message without the "[op] " prefix.
struct InferError {
  int32_t code;
  std::string msg;
};

// Throw InferError{code, msg}.
[[noreturn]] void fail(int32_t code, std::string msg);

// A shape under construction; counts dims past GN_MAX_DIMS so that the final
// rank check can say how large the output would have been.
struct Dims {
  int32_t n = 0;
  int64_t d[GN_MAX_DIMS] = {};
  // Append one dim (stored only while n < GN_MAX_DIMS).
  void push(int64_t v) {
    if (n < GN_MAX_DIMS) d[n] = v;
    ++n;
  }
  // Append dims [lo, hi) of m.
  void append(const gn_tensor_meta& m, int lo, int hi) {
    for (int i = lo; i < hi; ++i) push(m.shape[i]);
  }
};

// Dims of m in [lo, hi) (e.g. m.shape[:-n] with lo 0, hi ndim-n).
Dims dims_of(const gn_tensor_meta& m, int lo, int hi);
Dims dims_of(const gn_tensor_meta& m);
Dims dims_of(std::initializer_list<int64_t> sizes);

// An output meta with `dtype` and shape `d`; throws GN_ERR_SHAPE past GN_MAX_DIMS.
gn_tensor_meta make_meta(int32_t dtype, const Dims& d);
// Same shape as m, another dtype (flags cleared).
gn_tensor_meta like(const gn_tensor_meta& m, int32_t dtype);

// Number of elements (1 for 0-d).
int64_t numel(const gn_tensor_meta& m);
// True if ndim and every size agree.
bool same_shape(const gn_tensor_meta& a, const gn_tensor_meta& b);
bool same_shape(const gn_tensor_meta& a, const Dims& d);
// "(2, 3)" for Dims.
std::string dims_str(const Dims& d);
// "[1, 2]" for an int list.
std::string ints_str(std::span<const int64_t> v);
// Short dtype name for messages: "float32", "int64", ...
const char* dtype_str(int32_t dtype);
// Whether dtype is a valid gn_dtype.
inline bool valid_dtype(int64_t dtype) { return dtype >= 0 && dtype < GN_DTYPE_COUNT; }
inline bool is_float(int32_t dtype) { return gn_dtype_is_float(dtype) != 0; }
inline bool is_int(int32_t dtype) { return gn_dtype_is_int(dtype) != 0; }

// Wrap a possibly negative dim into [0, ndim).  A 0-d tensor accepts 0 and -1
// (as PyTorch does) and yields 0.  Throws GN_ERR_INDEX naming `what`.
int wrap_dim(int64_t dim, int ndim, const char* what = "dim");

// `what` = "dim -3" style label for a dim attribute value (none shown as "none").
std::string dim_label(int64_t dim);

// Everything an inference body sees, with checked accessors.
struct Args {
  const gn_infer_ctx* ctx;
  const gn_tensor_meta* in;
  size_t n_in;
  const gn_attr_value* attrs;
  size_t n_attrs;
  gn_infer_result* r;

  // The op name ("" when the ctx has none).
  std::string_view op() const { return ctx && ctx->op_name ? ctx->op_name : ""; }
  // Throw GN_ERR_INVALID_ARGUMENT unless lo <= n_in <= hi (hi -1: no upper bound).
  void need_inputs(size_t lo, long hi) const;
  // Input i (caller checked the count).
  const gn_tensor_meta& at(size_t i) const { return in[i]; }

  // Attribute i of the given kind; GN_ERR_INVALID_ARGUMENT if absent or of another kind.
  int64_t attr_int(size_t i) const;
  double attr_float(size_t i) const;
  std::span<const int64_t> attr_ints(size_t i) const;
  // Attribute i as a dtype (GN_ERR_INVALID_ARGUMENT unless a valid gn_dtype);
  // GN_DIM_NONE is returned as -1 when allow_none.
  int32_t attr_dtype(size_t i, bool allow_none) const;

  // Output bookkeeping: capacity is checked.
  size_t capacity() const { return cap; }
  void set_n_out(size_t n) const;
  void set_out(size_t k, const gn_tensor_meta& m) const;
  // Ask the core to cast input i to dtype before the kernel.
  void cast_input(size_t i, int32_t dtype) const { r->in_dtypes[i] = dtype; }
  // Ask the core to cast inputs [first, first+n) to dtype.
  void cast_inputs(size_t first, size_t n, int32_t dtype) const {
    for (size_t i = first; i < first + n; ++i) cast_input(i, dtype);
  }
  void set_kernel(int32_t dtype) const { r->kernel_dtype = dtype; }
  // The usual ending: outputs `outs` (in order) and the kernel dtype.
  void set_outputs(int32_t kernel, std::initializer_list<gn_tensor_meta> outs) const;

  size_t cap = 0;  // result->n_out on entry
};

// The common wrapper: validates the result arrays and the input metas, runs
// `body` and converts exceptions into statuses.  Never throws.  ctx and
// ctx->host must be valid (the core always passes them): errors need status_new.
gn_status* run_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs,
                     size_t n_attrs, gn_infer_result* result, void (*body)(const Args&)) noexcept;

// Build a status "[op] msg" (falls back to a fixed message if allocation fails).
gn_status* make_status(const gn_infer_ctx* ctx, int32_t code, const std::string& msg) noexcept;

// result_type over inputs [first, first+n) of `a`.
int32_t result_type_of(const Args& a, size_t first, size_t n);

// Broadcast a and b or throw GN_ERR_SHAPE "shapes (..) and (..) cannot be broadcast".
gn_tensor_meta broadcast_or_fail(const gn_tensor_meta& x, const gn_tensor_meta& y);

// Throw GN_ERR_DTYPE "<role> must be a floating-point tensor, got <dtype>" unless m is float.
void need_float(const gn_tensor_meta& m, const char* role);

// A double for messages: "1.5", "inf", "nan" (shortest %g form).
std::string num_str(double v);

}  // namespace genesis::core::infer_detail

// Defines infer_<fn> as run_infer over a body `void body(const Args& a)`.
#define GN_DEFINE_INFER(fn)                                                                                         \
  static void infer_body_##fn(const ::genesis::core::infer_detail::Args& a);                                        \
  gn_status* infer_##fn(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs, \
                        size_t n_attrs, gn_infer_result* result) {                                                  \
    return ::genesis::core::infer_detail::run_infer(ctx, in, n_in, attrs, n_attrs, result, &infer_body_##fn);       \
  }                                                                                                                 \
  static void infer_body_##fn(const ::genesis::core::infer_detail::Args& a)
