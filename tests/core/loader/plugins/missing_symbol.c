/* missing_symbol.c - exports a near miss but no gn_plugin_init. */
#include "hostdev.h"

GN_PLUGIN_EXPORT gn_status* gn_plugin_initialize(const gn_host_api* host, gn_plugin_info* info) {
  (void)host;
  hostdev_info(info, "loadertest_missing_symbol", "1.0.0");
  return NULL;
}
