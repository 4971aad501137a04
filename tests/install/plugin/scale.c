/* scale.c - a third-party op plugin in C99: the op "thirdparty_scale"(x) ->
 * factor * x (float attribute factor, default 2) with a cpu float32 kernel.
 * It includes only the ABI headers and links nothing of Genesis. */
#include <string.h>

#include "genesis/plugin.h"

#define SCALE_OP "thirdparty_scale"

static gn_status* scale_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in,
                              const gn_attr_value* attrs, size_t n_attrs, gn_infer_result* result) {
  (void)attrs;
  (void)n_attrs;
  if (n_in != 1 || in[0].dtype != GN_F32 || result->n_out < 1)
    return ctx->host->status_new(GN_ERR_INVALID_ARGUMENT, "[" SCALE_OP "] one float32 input");
  result->n_out = 1;
  result->out[0] = in[0];
  result->out[0].flags = 0;
  result->kernel_dtype = GN_F32;
  return NULL;
}

static gn_status* scale_f32(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in, const gn_tensor_view* out,
                            size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  const float* x = (const float*)gn_view_ptr(&in[0]);
  float* y = (float*)gn_view_ptr(&out[0]);
  const int64_t n = gn_view_numel(&out[0]);
  const double factor = n_attrs > 0 ? attrs[0].u.f : 2.0;
  int64_t i;
  (void)ctx;
  (void)n_in;
  (void)n_out;
  for (i = 0; i < n; ++i) y[i] = (float)(factor * (double)x[i]);
  return NULL;
}

static const gn_attr_spec k_attrs[1] = {
    {sizeof(gn_attr_spec), "factor", GN_ATTR_FLOAT, 1, {GN_ATTR_FLOAT, 0, {.f = 2.0}}},
};

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_op_schema schema;
  gn_kernel_desc kernel;
  gn_status* st;
  info->abi_major = GN_ABI_VERSION_MAJOR;
  info->abi_minor = GN_ABI_VERSION_MINOR;
  info->name = "thirdparty_scale";
  info->version = "1.0.0";
  info->description = "third-party C op plugin: thirdparty_scale = factor * x on cpu";
  if (host->abi_major != GN_ABI_VERSION_MAJOR)
    return host->status_new(GN_ERR_VERSION, "[" SCALE_OP "] built for another ABI major");

  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.name = SCALE_OP;
  schema.min_inputs = 1;
  schema.max_inputs = 1;
  schema.max_outputs = 1;
  schema.attrs = k_attrs;
  schema.n_attrs = 1;
  schema.infer = scale_infer;
  schema.doc = SCALE_OP "(x) -> factor * x (float32)";
  if ((st = host->register_op(host->host_ctx, &schema)) != NULL) return st;

  memset(&kernel, 0, sizeof kernel);
  kernel.struct_size = sizeof kernel;
  kernel.op = SCALE_OP;
  kernel.device_type = "cpu";
  kernel.flags = GN_KERNEL_CONTIGUOUS;
  kernel.dtype = GN_F32;
  kernel.fn = scale_f32;
  return host->register_kernel(host->host_ctx, &kernel);
}
