/* fallback.c - a second provider of "testdev" (score 5, below good's 10) with
 * a working abs kernel (reached when good's abs declines) and a deliberately
 * wrong neg kernel (writes 42) so a test can tell whose kernel ran. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(fallback_abs, x < 0 ? -x : x)
HOSTDEV_UNARY_F32(fallback_neg_marker, 42.0f + 0.0f * x)

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_status* st;
  if ((st = hostdev_init(host, info, "loadertest_fallback", "1.0.0", "testdev", 5)) != NULL) return st;
  if ((st = hostdev_kernel("abs", "testdev", fallback_abs)) != NULL) return st;
  return hostdev_kernel("neg", "testdev", fallback_neg_marker);
}
