/* wrong_major.c - claims ABI major 2 (or WRONG_MAJOR, with the name
 * WRONG_MAJOR_NAME) and registers a device type and kernel anyway: the host
 * must reject it and keep none of it ("majordev"). */
#include "hostdev.h"

#ifndef WRONG_MAJOR
#define WRONG_MAJOR 2
#endif
#ifndef WRONG_MAJOR_NAME
#define WRONG_MAJOR_NAME "loadertest_wrong_major"
#endif

HOSTDEV_UNARY_F32(major_neg, -x)

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_device_vtable vt;
  gn_status* st;
  g_host = host;
  hostdev_info(info, WRONG_MAJOR_NAME, "2.0.0");
  info->abi_major = WRONG_MAJOR;
  info->abi_minor = 0;
  vt = hostdev_vtable("majordev", 10);
  if ((st = host->register_device_type(host->host_ctx, &vt)) != NULL) return st;
  return hostdev_kernel("neg", "majordev", major_neg);
}
