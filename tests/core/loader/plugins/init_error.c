/* init_error.c - registers a device type, an op and a kernel, then fails:
 * nothing of it may stay registered. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(initerr_neg, -x)

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_status* st;
  if ((st = hostdev_init(host, info, "loadertest_init_error", "1.0.0", "initerrdev", 10)) != NULL) return st;
  if ((st = hostdev_op("loadertest_initerr_op", 1, "never registered")) != NULL) return st;
  if ((st = hostdev_kernel("loadertest_initerr_op", "initerrdev", initerr_neg)) != NULL) return st;
  if ((st = hostdev_kernel("neg", "cpu", initerr_neg)) != NULL) return st;
  return host->status_new(GN_ERR_INTERNAL, "deliberate init failure");
}
