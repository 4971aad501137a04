/* genesis/op.h - ops are open: a schema (inputs, outputs, positional
 * attributes, shape/dtype inference) plus kernels per (op, device type, dtype).
 *
 * Built-in schemas live in the core (core/ops/ops.def); a plugin may register
 * new schemas with gn_host_api.register_op and kernels for any op with
 * gn_host_api.register_kernel.  The core validates inputs, runs inference,
 * casts inputs where inference asks, allocates outputs and then calls exactly
 * one kernel: kernels only compute.
 */
#ifndef GENESIS_OP_H
#define GENESIS_OP_H

#include "genesis/view.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gn_host_api;

/* ---------------------------------------------------------------- attributes */

typedef enum gn_attr_kind {
  GN_ATTR_INT = 0,    /* int64: also bools, dtypes (gn_dtype) and dims */
  GN_ATTR_FLOAT = 1,  /* double */
  GN_ATTR_INTS = 2,   /* int64 array */
  GN_ATTR_STRING = 3, /* NUL-terminated UTF-8 */
  GN_ATTR_DEVICE = 4  /* gn_device */
} gn_attr_kind;

/* "No dim given" for optional int attributes such as argmax's dim. */
#define GN_DIM_NONE INT64_MIN

/* One attribute value; positional in schema order.  Value type, frozen. */
typedef struct gn_attr_value {
  int32_t kind; /* gn_attr_kind */
  int32_t reserved;
  union {
    int64_t i;
    double f;
    struct {
      const int64_t* data;
      size_t size;
    } ints;
    const char* s;
    gn_device device;
  } u;
} gn_attr_value;

/* Schema entry for one attribute. */
typedef struct gn_attr_spec {
  size_t struct_size;
  const char* name;
  int32_t kind;        /* gn_attr_kind */
  int32_t has_default; /* 0: required */
  gn_attr_value default_value;
} gn_attr_spec;

/* --------------------------------------------------------------- inference */

/* What shape inference gets besides the inputs. */
typedef struct gn_infer_ctx {
  size_t struct_size;
  const struct gn_host_api* host; /* for host->status_new */
  const char* op_name;
  void* user_data; /* gn_op_schema.user_data */
} gn_infer_ctx;

/* What shape inference produces.  The core presets every field. */
typedef struct gn_infer_result {
  size_t struct_size;
  size_t n_out;         /* in: capacity of `out`; out: number of outputs */
  gn_tensor_meta* out;  /* output shapes and dtypes */
  int32_t* in_dtypes;   /* n_in entries preset to each input's dtype; set one
                           to ask the core to cast that input first */
  int32_t kernel_dtype; /* dtype used to pick the kernel; preset to input 0's
                           dtype as given (output 0's when no inputs).  Left
                           unchanged, it follows a cast of input 0 asked for
                           in in_dtypes; set it to pick another dtype. */
} gn_infer_result;

/* Infer outputs from input metadata and the attributes (all present, defaults
 * filled).  Return NULL or a status naming the problem. */
typedef gn_status* (*gn_infer_fn)(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in,
                                  const gn_attr_value* attrs, size_t n_attrs, gn_infer_result* result);

/* gn_op_schema.flags */
#define GN_OP_INPLACE 0x1u      /* mutates some inputs; usually has no outputs */
#define GN_OP_RANDOM 0x2u       /* consumes Philox numbers: ctx->seed/offset are set */
#define GN_OP_VIEW 0x4u         /* core-implemented view op: no kernel is called */
#define GN_OP_NEEDS_DEVICE 0x8u /* no tensor inputs: the device comes from attribute "device" */

/* An op's contract. */
typedef struct gn_op_schema {
  size_t struct_size;
  const char* name; /* unique; copied by the host */
  int32_t min_inputs;
  int32_t max_inputs;  /* -1 = variadic */
  int32_t max_outputs; /* -1 = decided by inference */
  uint32_t flags;      /* GN_OP_* */
  const gn_attr_spec* attrs;
  size_t n_attrs;
  gn_infer_fn infer;
  void* user_data;
  const char* doc; /* one line, shown by `genesis info` */
} gn_op_schema;

/* ------------------------------------------------------------------ kernels */

/* Everything a kernel may need besides tensors and attributes. */
typedef struct gn_kernel_ctx {
  size_t struct_size;
  const struct gn_host_api* host;
  gn_device device;
  void* stream;      /* native stream of the device type; NULL = default/host */
  void* kernel_data; /* gn_kernel_desc.user_data */
  void* device_ctx;  /* the serving gn_device_vtable.ctx */
  uint64_t seed;     /* Philox key for GN_OP_RANDOM ops */
  uint64_t offset;   /* first Philox counter for this call */
  const char* op_name;
  /* Scratch memory on the device, valid until the kernel returns (stream-
   * ordered on `stream`); NULL when it cannot be had. */
  void* (*workspace)(const struct gn_kernel_ctx* self, size_t bytes);
  void* host_private;
} gn_kernel_ctx;

/* A kernel: compute outputs from inputs; attrs are complete (defaults filled).
 * Return host->status_new(GN_ERR_UNSUPPORTED, ...) before touching outputs to
 * let the dispatcher try the next kernel. */
typedef gn_status* (*gn_kernel_fn)(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in,
                                   const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs);

/* gn_kernel_desc.flags */
#define GN_KERNEL_CONTIGUOUS 0x1u /* core passes contiguous inputs and outputs */

/* One kernel registration. */
typedef struct gn_kernel_desc {
  size_t struct_size;
  const char* op;          /* op name (built-in or registered earlier) */
  const char* device_type; /* e.g. "cpu" */
  int32_t dtype;           /* kernel dtype it serves, or GN_DTYPE_ANY */
  uint32_t flags;          /* GN_KERNEL_* */
  gn_kernel_fn fn;
  void* user_data; /* passed as ctx->kernel_data */
} gn_kernel_desc;

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_OP_H */
