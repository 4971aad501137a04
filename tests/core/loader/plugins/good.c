/* good.c - a well-behaved plugin: device types "testdev" (host memory, one
 * device, score 10) and "testdev_absent" (no devices, with a reason), kernels
 * neg (f32) and abs (f32, always declines with GN_ERR_UNSUPPORTED so the
 * dispatcher must fall through to another plugin's kernel).
 *
 * Also built as the "shadow" case (GOOD_VERSION "shadow": same file name in
 * another directory) and the "dup_name" case (another file name, same plugin
 * name). */
#include <string.h>

#include "hostdev.h"

#ifndef GOOD_VERSION
#define GOOD_VERSION "1.0.0"
#endif

HOSTDEV_UNARY_F32(good_neg, -x)

static gn_status* good_abs_declines(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in,
                                    const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs,
                                    size_t n_attrs) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)attrs;
  (void)n_attrs;
  return ctx->host->status_new(GN_ERR_UNSUPPORTED, "loadertest_good: abs declined on purpose");
}

/* Called after init: the kept host table must still work (statuses), and a
 * late registration must be refused with a status, not crash. */
static gn_status* absent_count(void* ctx, int32_t* count) {
  gn_device_vtable vt = hostdev_vtable("testdev_late", 1);
  gn_status* late = g_host->register_device_type(g_host->host_ctx, &vt);
  int refused = late != NULL && strstr(g_host->status_message(late), "only allowed inside gn_plugin_init") != NULL;
  (void)ctx;
  if (late) g_host->status_free(late);
  *count = 0;
  return g_host->status_new(GN_ERR_DEVICE,
                            refused ? "no testdev_absent hardware (deliberate)" : "late registration was not refused");
}

static void good_shutdown(void* ctx) { (void)ctx; }

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_device_vtable vt;
  gn_status* st;
  g_host = host;
  hostdev_info(info, "loadertest_good", GOOD_VERSION);
  info->description = "loader test: good plugin";
  info->shutdown = good_shutdown;

  vt = hostdev_vtable("testdev", 10);
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  vt = hostdev_vtable("testdev_absent", 1);
  vt.device_count = absent_count;
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  if ((st = hostdev_kernel("neg", "testdev", good_neg)) != NULL) return st;
  return hostdev_kernel("abs", "testdev", good_abs_declines);
}
