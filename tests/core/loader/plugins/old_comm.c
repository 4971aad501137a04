/* old_comm.c - a communicator plugin built against ABI 1.1: claims minor 1 and
 * hands in a gn_comm_vtable whose struct_size ends at barrier.  The slots of
 * minor 2 in the memory behind it hold poison functions: a host that reads
 * past struct_size calls them and gets GN_ERR_INTERNAL instead of the
 * expected GN_ERR_UNSUPPORTED.  Its "collectives" serve one rank: all_reduce
 * copies send into recv. */
#include <string.h>

#include "genesis/plugin.h"

static const gn_host_api* g_host;
static int g_comm; /* the one communicator handle */

static gn_status* poison(const char* slot) {
  char m[96] = "oldcomm: host read ";
  strncat(m, slot, sizeof m - strlen(m) - 1);
  strncat(m, " beyond struct_size", sizeof m - strlen(m) - 1);
  return g_host->status_new(GN_ERR_INTERNAL, m);
}
static gn_status* poison_init(void* c, const gn_comm_config* cfg, void** comm) {
  (void)c, (void)cfg, (void)comm;
  return poison("init");
}
static gn_status* poison_a2a(void* c, void* comm, const gn_tensor_view* s, const gn_tensor_view* r, void* st) {
  (void)c, (void)comm, (void)s, (void)r, (void)st;
  return poison("all_to_all");
}
static gn_status* poison_abort(void* c, void* comm) {
  (void)c, (void)comm;
  return poison("abort");
}

static gn_status* create(void* c, const gn_comm_id* id, int32_t rank, int32_t size, int32_t dev, void** comm) {
  (void)c, (void)rank, (void)size, (void)dev;
  if (strcmp(id->bytes, "oldcomm-id") != 0) return g_host->status_new(GN_ERR_INVALID_ARGUMENT, "oldcomm: bad id");
  *comm = &g_comm;
  return NULL;
}
static gn_status* destroy(void* c, void* comm) {
  (void)c, (void)comm;
  return NULL;
}
static gn_status* all_reduce(void* c, void* comm, const gn_tensor_view* s, const gn_tensor_view* r, int32_t op,
                             void* st) {
  (void)c, (void)comm, (void)op, (void)st;
  memcpy((char*)r->data + r->byte_offset, (const char*)s->data + s->byte_offset,
         (size_t)gn_view_numel(r) * gn_dtype_size(r->dtype));
  return NULL;
}
static gn_status* broadcast(void* c, void* comm, const gn_tensor_view* b, int32_t root, void* st) {
  (void)c, (void)comm, (void)b, (void)root, (void)st;
  return NULL;
}
static gn_status* barrier(void* c, void* comm, void* st) {
  (void)c, (void)comm, (void)st;
  return NULL;
}

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  static gn_comm_vtable vt;
  g_host = host;
  info->abi_major = GN_ABI_VERSION_MAJOR;
  info->abi_minor = 1;
  info->name = "loadertest_old_comm";
  info->version = "1.1.0";
  info->description = "a minor-1 communicator";
  memset(&vt, 0, sizeof vt);
  vt.struct_size = GN_COMM_VTABLE_SIZE_V1_1;
  vt.name = "oldcomm";
  vt.device_type = "cpu";
  vt.create = create;
  vt.destroy = destroy;
  vt.all_reduce = all_reduce;
  vt.broadcast = broadcast;
  vt.barrier = barrier;
  vt.init = poison_init;
  vt.all_to_all = poison_a2a;
  vt.abort = poison_abort;
  return host->register_comm(host->host_ctx, &vt);
}
