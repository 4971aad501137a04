/* duplicate_op.c - registers a device type, then an op schema named "add",
 * which the core already has.  A well-behaved plugin passes the refusal on;
 * the host must reject the plugin either way and keep "dupopdev" out. */
#include "hostdev.h"

static gn_status* dup_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs,
                            size_t n_attrs, gn_infer_result* result) {
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
  hostdev_info(info, "loadertest_duplicate_op", "1.0.0");
  vt = hostdev_vtable("dupopdev", 10);
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.name = "add";
  op.min_inputs = 2;
  op.max_inputs = 2;
  op.max_outputs = 1;
  op.infer = dup_infer;
  op.doc = "an impostor";
  return host->register_op(host->host_ctx, &op);
}
