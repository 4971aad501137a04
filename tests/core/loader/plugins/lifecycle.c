/* lifecycle.c - a plugin that writes each lifecycle event to the file named by
 * the runtime option "lifecycle_log" ("init <name>", "init-failed",
 * "shutdown"), so a test can check that shutdown runs exactly once for every
 * init that succeeded, however the host decides afterwards.
 *
 * Built with LIFECYCLE_NAME (the name it reports) and LIFECYCLE_MODE:
 *   0  a good plugin: device type "lifedev", kernel neg;
 *   1  init succeeds although a registration was refused (unknown op): the
 *      host rejects the plugin after init;
 *   2  init fails with GN_ERR_DEVICE: the host must keep that code;
 *   3  registers a gn_comm_vtable with struct_size 0 and returns the status. */
#include <stdio.h>
#include <string.h>

#include "hostdev.h"

#ifndef LIFECYCLE_NAME
#define LIFECYCLE_NAME "loadertest_lifecycle"
#endif
#ifndef LIFECYCLE_MODE
#define LIFECYCLE_MODE 0
#endif

#if LIFECYCLE_MODE != 2
HOSTDEV_UNARY_F32(life_neg, -x)
#endif

static char g_log[1024];

static void log_event(const char* event) {
  FILE* f;
  if (!g_log[0]) return;
  f = fopen(g_log, "a");
  if (!f) return;
  fprintf(f, "%s\n", event);
  fclose(f);
}

static void life_shutdown(void* ctx) {
  (void)ctx;
  log_event("shutdown");
}

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  const char* log = host->option_get(host->host_ctx, "lifecycle_log");
  g_host = host;
  g_log[0] = '\0';
  if (log && strlen(log) < sizeof g_log) strcpy(g_log, log);
  hostdev_info(info, LIFECYCLE_NAME, "1.0.0");
  info->shutdown = life_shutdown;
#if LIFECYCLE_MODE == 2
  log_event("init-failed");
  return host->status_new(GN_ERR_DEVICE, "lifedev hardware is missing (deliberate)");
#else
  gn_device_vtable vt = hostdev_vtable("lifedev", 10);
  gn_status* st;
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  if ((st = hostdev_kernel("neg", "lifedev", life_neg)) != NULL) return st;
#if LIFECYCLE_MODE == 1
  st = hostdev_kernel("loadertest_no_such_op", "lifedev", life_neg);
  if (st) host->status_free(st); /* ignored on purpose: the host must still reject */
#elif LIFECYCLE_MODE == 3
  {
    gn_comm_vtable comm;
    memset(&comm, 0, sizeof comm);
    comm.struct_size = 0;
    comm.name = "lifecomm";
    comm.device_type = "lifedev";
    if ((st = host->register_comm(host->host_ctx, &comm)) != NULL) return st;
  }
#endif
  log_event("init " LIFECYCLE_NAME);
  return NULL;
#endif
}
