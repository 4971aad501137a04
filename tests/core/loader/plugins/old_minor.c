/* old_minor.c - a plugin built against ABI 1.0: claims minor 0 and hands in a
 * vtable whose struct_size ends before the graph slots.  The graph slots of
 * the memory behind it hold poison functions: a host that reads past
 * struct_size calls them and gets GN_ERR_INTERNAL instead of the expected
 * GN_ERR_UNSUPPORTED. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(old_neg, -x)

static gn_status* poison_begin(void* ctx, int32_t index, void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  return g_host->status_new(GN_ERR_INTERNAL, "olddev: host read graph_begin beyond struct_size");
}
static gn_status* poison_end(void* ctx, int32_t index, void* stream, void** graph) {
  (void)ctx;
  (void)index;
  (void)stream;
  *graph = NULL;
  return g_host->status_new(GN_ERR_INTERNAL, "olddev: host read graph_end beyond struct_size");
}

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_device_vtable vt;
  gn_status* st;
  g_host = host;
  hostdev_info(info, "loadertest_old_minor", "1.0.0");
  info->abi_minor = 0;
  vt = hostdev_vtable("olddev", 10);
  vt.struct_size = GN_DEVICE_VTABLE_SIZE_V1_0;
  vt.graph_begin = poison_begin;
  vt.graph_end = poison_end;
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  return hostdev_kernel("neg", "olddev", old_neg);
}
