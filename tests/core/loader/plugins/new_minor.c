/* new_minor.c - a plugin built against a future ABI minor: claims the host's
 * minor + 1 and hands in a vtable with an extra trailing slot (bigger
 * struct_size).  The host must accept it, negotiate its own minor and use the
 * graph slots. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(new_neg, -x)

/* What a future header would declare: today's table plus one appended slot. */
typedef struct new_device_vtable {
  gn_device_vtable v1_1;
  gn_status* (*future_slot)(void* ctx, int32_t index);
} new_device_vtable;

static int g_token; /* its address is the "graph" handle */
static int g_capturing;

static gn_status* new_graph_begin(void* ctx, int32_t index, void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  g_capturing = 1;
  return NULL;
}
static gn_status* new_graph_end(void* ctx, int32_t index, void* stream, void** graph) {
  (void)ctx;
  (void)index;
  (void)stream;
  if (!g_capturing) return g_host->status_new(GN_ERR_INVALID_ARGUMENT, "newdev: not capturing");
  g_capturing = 0;
  *graph = &g_token;
  return NULL;
}
static gn_status* new_graph_launch(void* ctx, int32_t index, void* graph, void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  if (graph != &g_token) return g_host->status_new(GN_ERR_INVALID_ARGUMENT, "newdev: unknown graph");
  return NULL;
}
static gn_status* new_graph_destroy(void* ctx, int32_t index, void* graph) {
  (void)ctx;
  (void)index;
  if (graph != &g_token) return g_host->status_new(GN_ERR_INVALID_ARGUMENT, "newdev: unknown graph");
  return NULL;
}
static gn_status* new_future(void* ctx, int32_t index) {
  (void)ctx;
  (void)index;
  return g_host->status_new(GN_ERR_INTERNAL, "newdev: an older host must never call this");
}

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  static new_device_vtable vt; /* static: the host may keep pointing at it */
  gn_status* st;
  g_host = host;
  hostdev_info(info, "loadertest_new_minor", "1.9.0");
  info->abi_minor = GN_ABI_VERSION_MINOR + 1;
  vt.v1_1 = hostdev_vtable("newdev", 10);
  vt.v1_1.struct_size = sizeof vt;
  vt.v1_1.graph_begin = new_graph_begin;
  vt.v1_1.graph_end = new_graph_end;
  vt.v1_1.graph_launch = new_graph_launch;
  vt.v1_1.graph_destroy = new_graph_destroy;
  vt.future_slot = new_future;
  if ((st = host->register_device_type(host->host_ctx, &vt.v1_1)) != NULL) return st;
  return hostdev_kernel("neg", "newdev", new_neg);
}
