/* duplicate_kernel.c - registers (neg, dupkdev, f32) twice. */
#include "hostdev.h"

HOSTDEV_UNARY_F32(dupk_neg, -x)

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  gn_status* st;
  if ((st = hostdev_init(host, info, "loadertest_duplicate_kernel", "1.0.0", "dupkdev", 10)) != NULL) return st;
  if ((st = hostdev_kernel("neg", "dupkdev", dupk_neg)) != NULL) return st;
  return hostdev_kernel("neg", "dupkdev", dupk_neg);
}
