/* init_error.c - registers a device type, an op and a kernel, then fails:
 * nothing of it may stay registered. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(initerr_neg, -x)

static gn_status* initerr_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in,
                                const gn_attr_value* attrs, size_t n_attrs, gn_infer_result* result) {
  (void)ctx;
  (void)n_in;
  (void)attrs;
  (void)n_attrs;
  result->n_out = 1;
  result->out[0] = in[0];
  return NULL;
}

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_device_vtable vt;
  gn_op_schema op;
  gn_status* st;
  g_host = host;
  hostdev_info(info, "loadertest_init_error", "1.0.0");
  vt = hostdev_vtable("initerrdev", 10);
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.name = "loadertest_initerr_op";
  op.min_inputs = 1;
  op.max_inputs = 1;
  op.max_outputs = 1;
  op.infer = initerr_infer;
  op.doc = "never registered";
  if ((st = host->register_op(host->host_ctx, &op)) != NULL) return st;
  if ((st = hostdev_kernel("loadertest_initerr_op", "initerrdev", initerr_neg)) != NULL) return st;
  if ((st = hostdev_kernel("neg", "cpu", initerr_neg)) != NULL) return st;
  return host->status_new(GN_ERR_INTERNAL, "deliberate init failure");
}
