/* genesis/ops.h - public C API: find and call ops, list schemas and kernels. */
#ifndef GENESIS_OPS_H
#define GENESIS_OPS_H

#include "genesis/op.h"
#include "genesis/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gn_op gn_op; /* an op of one runtime; lives as long as the runtime */

/* Look an op up by name once; keep the handle for the hot path. */
GN_API gn_status* gn_op_find(gn_runtime* rt, const char* name, const gn_op** out);

/* Call an op.  inputs: n_in tensors.  attrs: positional, may stop early
 * (defaults fill the rest).  outputs: n_out slots; a NULL slot receives a new
 * tensor, a non-NULL slot is written in place (shape and dtype must match the
 * inferred ones).  On error no slot is changed. */
GN_API gn_status* gn_op_call(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                             const gn_attr_value* attrs, size_t n_attrs, gn_tensor** outputs, size_t n_out);

/* Extra per-call choices. */
typedef struct gn_call_options {
  size_t struct_size;
  gn_generator* generator; /* random ops draw from it instead of the device default */
} gn_call_options;

/* gn_op_call with options (NULL = defaults). */
GN_API gn_status* gn_op_call_ex(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                                const gn_attr_value* attrs, size_t n_attrs, gn_tensor** outputs, size_t n_out,
                                const gn_call_options* options);

/* Number of outputs a call with these inputs/attrs produces (e.g. split). */
GN_API gn_status* gn_op_output_count(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                                     const gn_attr_value* attrs, size_t n_attrs, size_t* n_out);

/* ---------------------------------------------------------- introspection */

/* Number of ops (built-in and plugin). */
GN_API size_t gn_op_count(const gn_runtime* rt);
/* Op by index. */
GN_API const gn_op* gn_op_at(const gn_runtime* rt, size_t i);
/* Name. */
GN_API const char* gn_op_name(const gn_op* op);
/* Schema (attrs, arity, flags, doc); valid while the runtime lives. */
GN_API const gn_op_schema* gn_op_get_schema(const gn_op* op);
/* Where the schema came from: "core" or a plugin name. */
GN_API const char* gn_op_origin(const gn_op* op);

/* One kernel registered for an op. */
typedef struct gn_kernel_record {
  size_t struct_size;
  const char* backend; /* plugin name */
  const char* device_type;
  int32_t dtype; /* or GN_DTYPE_ANY */
  uint32_t flags;
} gn_kernel_record;

/* Number of kernels of an op. */
GN_API size_t gn_op_kernel_count(const gn_op* op);
/* Kernel i of an op. */
GN_API gn_status* gn_op_kernel_get(const gn_op* op, size_t i, gn_kernel_record* out);

/* Convenience constructors for attribute values. */
static inline gn_attr_value gn_attr_int(int64_t v) {
  gn_attr_value a;
  a.kind = GN_ATTR_INT;
  a.reserved = 0;
  a.u.i = v;
  return a;
}
static inline gn_attr_value gn_attr_float(double v) {
  gn_attr_value a;
  a.kind = GN_ATTR_FLOAT;
  a.reserved = 0;
  a.u.f = v;
  return a;
}
static inline gn_attr_value gn_attr_ints(const int64_t* v, size_t n) {
  gn_attr_value a;
  a.kind = GN_ATTR_INTS;
  a.reserved = 0;
  a.u.ints.data = v;
  a.u.ints.size = n;
  return a;
}
static inline gn_attr_value gn_attr_string(const char* s) {
  gn_attr_value a;
  a.kind = GN_ATTR_STRING;
  a.reserved = 0;
  a.u.s = s;
  return a;
}
static inline gn_attr_value gn_attr_device(gn_device d) {
  gn_attr_value a;
  a.kind = GN_ATTR_DEVICE;
  a.reserved = 0;
  a.u.device = d;
  return a;
}

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_OPS_H */
