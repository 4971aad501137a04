/* duplicate_op.c - registers a device type, then an op schema named "add",
 * which the core already has.  A well-behaved plugin passes the refusal on;
 * the host must reject the plugin either way and keep "dupopdev" out. */
#include "hostdev.h"

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_status* st;
  if ((st = hostdev_init(host, info, "loadertest_duplicate_op", "1.0.0", "dupopdev", 10)) != NULL) return st;
  return hostdev_op("add", 2, "an impostor");
}
