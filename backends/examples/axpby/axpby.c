/* axpby.c - an example third-party Genesis op plugin in plain C99.
 *
 * It adds a NEW op, "example_axpby"(x, y) -> a*x + b*y, with float
 * attributes a and b (both default 1), its own shape/dtype inference, and cpu
 * kernels for float32 and float64.  It includes only the ABI headers and never
 * links libgenesis: everything it needs from the host arrives in the
 * gn_host_api table handed to gn_plugin_init.
 *
 * Build: see README.md next to this file.
 */
#include <stdio.h>
#include <string.h>

#include "genesis/plugin.h"

#define AXPBY_OP "example_axpby"

/* Build an error status whose message starts with "[example_axpby] ".  Statuses
 * are always made by the host (ctx->host), which owns their memory. */
static gn_status* axpby_error(const gn_host_api* host, int32_t code, const char* msg) {
  char buf[320];
  snprintf(buf, sizeof buf, "[" AXPBY_OP "] %s", msg);
  return host->status_new(code, buf);
}

/* Write "[2, 3]" for a shape into buf. */
static void format_shape(const gn_tensor_meta* m, char* buf, size_t cap) {
  size_t used = 0;
  int32_t i;
  used += (size_t)snprintf(buf, cap, "[");
  for (i = 0; i < m->ndim && used < cap; ++i)
    used += (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld", (long long)m->shape[i]);
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* Shape/dtype inference: x and y must agree exactly (no broadcasting, no type
 * promotion: this op is deliberately strict), and be float32 or float64. */
static gn_status* axpby_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in,
                              const gn_attr_value* attrs, size_t n_attrs, gn_infer_result* result) {
  const gn_host_api* host = ctx->host;
  char msg[256];
  char sx[80], sy[80];
  int32_t i;
  (void)attrs;
  (void)n_attrs;
  if (n_in != 2) return axpby_error(host, GN_ERR_INVALID_ARGUMENT, "expects 2 inputs (x, y)");
  if (in[0].dtype != in[1].dtype) {
    snprintf(msg, sizeof msg, "x and y must have the same dtype, got %s and %s", gn_dtype_name(in[0].dtype),
             gn_dtype_name(in[1].dtype));
    return axpby_error(host, GN_ERR_DTYPE, msg);
  }
  if (in[0].dtype != GN_F32 && in[0].dtype != GN_F64) {
    snprintf(msg, sizeof msg, "supports float32 and float64 only, got %s", gn_dtype_name(in[0].dtype));
    return axpby_error(host, GN_ERR_DTYPE, msg);
  }
  if (in[0].ndim != in[1].ndim || memcmp(in[0].shape, in[1].shape, (size_t)in[0].ndim * sizeof(int64_t)) != 0) {
    format_shape(&in[0], sx, sizeof sx);
    format_shape(&in[1], sy, sizeof sy);
    snprintf(msg, sizeof msg, "x and y must have the same shape, got %s and %s", sx, sy);
    return axpby_error(host, GN_ERR_SHAPE, msg);
  }
  if (result->n_out < 1) return axpby_error(host, GN_ERR_INTERNAL, "no room for the output");
  result->n_out = 1;
  result->out[0].dtype = in[0].dtype;
  result->out[0].ndim = in[0].ndim;
  for (i = 0; i < in[0].ndim; ++i) result->out[0].shape[i] = in[0].shape[i];
  result->out[0].flags = 0;
  result->out[0].reserved = 0;
  result->kernel_dtype = in[0].dtype;
  return NULL;
}

/* The attributes arrive complete (defaults filled), in schema order: a, b. */
static gn_status* read_coefficients(const gn_kernel_ctx* ctx, const gn_attr_value* attrs, size_t n_attrs, double* a,
                                    double* b) {
  if (n_attrs < 2 || attrs[0].kind != GN_ATTR_FLOAT || attrs[1].kind != GN_ATTR_FLOAT)
    return axpby_error(ctx->host, GN_ERR_INVALID_ARGUMENT, "attributes a and b must be floats");
  *a = attrs[0].u.f;
  *b = attrs[1].u.f;
  return NULL;
}

/* The kernels are registered with GN_KERNEL_CONTIGUOUS, so the core hands
 * them dense row-major views and a flat loop is enough. */
static gn_status* axpby_f32(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                            size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  double a = 1.0, b = 1.0;
  gn_status* st = read_coefficients(ctx, attrs, n_attrs, &a, &b);
  const float* x;
  const float* y;
  float* z;
  int64_t i, n;
  if (st) return st;
  if (n_in != 2 || n_out != 1) return axpby_error(ctx->host, GN_ERR_INTERNAL, "bad arity");
  x = (const float*)gn_view_ptr(&in[0]);
  y = (const float*)gn_view_ptr(&in[1]);
  z = (float*)gn_view_ptr(&out[0]);
  n = gn_view_numel(&out[0]);
  /* Computed in double and rounded once, like the reference backend. */
  for (i = 0; i < n; ++i) z[i] = (float)(a * (double)x[i] + b * (double)y[i]);
  return NULL;
}

static gn_status* axpby_f64(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                            size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  double a = 1.0, b = 1.0;
  gn_status* st = read_coefficients(ctx, attrs, n_attrs, &a, &b);
  const double* x;
  const double* y;
  double* z;
  int64_t i, n;
  if (st) return st;
  if (n_in != 2 || n_out != 1) return axpby_error(ctx->host, GN_ERR_INTERNAL, "bad arity");
  x = (const double*)gn_view_ptr(&in[0]);
  y = (const double*)gn_view_ptr(&in[1]);
  z = (double*)gn_view_ptr(&out[0]);
  n = gn_view_numel(&out[0]);
  for (i = 0; i < n; ++i) z[i] = a * x[i] + b * y[i];
  return NULL;
}

/* Schema data lives in static storage: it must outlive registration. */
static const gn_attr_spec k_attrs[2] = {
    {sizeof(gn_attr_spec), "a", GN_ATTR_FLOAT, 1, {GN_ATTR_FLOAT, 0, {.f = 1.0}}},
    {sizeof(gn_attr_spec), "b", GN_ATTR_FLOAT, 1, {GN_ATTR_FLOAT, 0, {.f = 1.0}}},
};

/* The one exported symbol. */
GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_op_schema schema;
  gn_kernel_desc kernel;
  gn_status* st;

  /* Fill the info first so the host can report us even if we bail out. */
  info->abi_major = GN_ABI_VERSION_MAJOR;
  info->abi_minor = GN_ABI_VERSION_MINOR;
  info->name = "example_axpby";
  info->version = "1.0.0";
  info->description = "example third-party op plugin (C99): example_axpby = a*x + b*y on cpu";
  if (host->abi_major != GN_ABI_VERSION_MAJOR)
    return host->status_new(GN_ERR_VERSION, "[" AXPBY_OP "] built for another ABI major");

  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.name = AXPBY_OP;
  schema.min_inputs = 2;
  schema.max_inputs = 2;
  schema.max_outputs = 1;
  schema.flags = 0;
  schema.attrs = k_attrs;
  schema.n_attrs = 2;
  schema.infer = axpby_infer;
  schema.user_data = NULL;
  schema.doc = "example_axpby(x, y) -> out: a*x + b*y (same shape and dtype, float32/float64)";
  if ((st = host->register_op(host->host_ctx, &schema)) != NULL) return st;

  /* Kernels for device type "cpu": whichever backend serves cpu allocates the
   * (host) memory; this plugin only computes. */
  memset(&kernel, 0, sizeof kernel);
  kernel.struct_size = sizeof kernel;
  kernel.op = AXPBY_OP;
  kernel.device_type = "cpu";
  kernel.flags = GN_KERNEL_CONTIGUOUS;
  kernel.dtype = GN_F32;
  kernel.fn = axpby_f32;
  if ((st = host->register_kernel(host->host_ctx, &kernel)) != NULL) return st;
  kernel.dtype = GN_F64;
  kernel.fn = axpby_f64;
  return host->register_kernel(host->host_ctx, &kernel);
}
